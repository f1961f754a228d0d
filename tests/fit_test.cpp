// advise_fit and tensor_parallel_problem on models and a device with round figures: the memory
// a split needs is worked out by hand (Round GPU: 16 GB, tests/round_device.hpp).
#include "capcalc/fit.hpp"

#include <string>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/model.hpp"
#include "capcalc/predict.hpp"

#include "catch.hpp"
#include "round_device.hpp"

namespace {

using capcalc::FitAdvice;
using capcalc::Graph;
using capcalc::Mode;
using capcalc::Precision;
using capcalc::Workload;

// Two linear layers without biases: 20,000 x 25,000 + 25,000 x 20,000 = 1e9 parameters.
Graph two_linears() {
  return capcalc::parse_model(R"({"format": "capcalc-model/1", "name": "two",
    "dims": {"batch": 1},
    "inputs": [{"name": "x", "shape": ["batch", 20000]}],
    "layers": [{"name": "up", "op": "linear", "out_features": 25000, "bias": false},
               {"name": "down", "op": "linear", "out_features": 20000, "bias": false}]})",
                              "two.json");
}

// One linear layer of 100,000 x 100,000 = 1e10 parameters.
Graph big_linear() {
  return capcalc::parse_model(R"({"format": "capcalc-model/1", "name": "big",
    "dims": {"batch": 1},
    "inputs": [{"name": "x", "shape": ["batch", 100000]}],
    "layers": [{"name": "fc", "op": "linear", "out_features": 100000, "bias": false}]})",
                              "big.json");
}

Graph attention(int heads, int kv_heads) {
  return capcalc::parse_model(
      "{\"format\": \"capcalc-model/1\", \"name\": \"attn\", \"dims\": {\"batch\": 1},"
      " \"inputs\": [{\"name\": \"x\", \"shape\": [\"batch\", 16, 768]}],"
      " \"layers\": [{\"name\": \"attn\", \"op\": \"attention\", \"causal\": true, \"heads\": " +
          std::to_string(heads) + ", \"kv_heads\": " + std::to_string(kv_heads) + "}]}",
      "attn.json");
}

// Four blocks of two linears (1,000 -> 4,000 -> 1,000, with biases) on 262,144 rows: their
// activations, not their 32 M parameters, fill the device.
Graph four_blocks() {
  return capcalc::parse_model(R"({"format": "capcalc-model/1", "name": "blocks",
    "dims": {"batch": 262144},
    "inputs": [{"name": "x", "shape": ["batch", 1000]}],
    "blocks": {"mlp": {"layers": [
      {"name": "up", "op": "linear", "out_features": 4000},
      {"name": "down", "op": "linear", "out_features": 1000}]}},
    "layers": [{"name": "b", "block": "mlp", "repeat": 4}]})",
                              "blocks.json");
}

FitAdvice advise(const Graph& graph, const Workload& workload) {
  return capcalc::advise_fit(graph, capcalc::test::round_device(), capcalc::test::round_params(),
                             workload);
}

}  // namespace

TEST_CASE("fit: inference needs the fewest tensor-parallel devices that hold the weights",
          "[fit]") {
  Workload w;
  w.precision = Precision::kFp16;
  // 1e10 parameters x 2 bytes = 20 GB > 16 GB; over 2 devices 10 GB each (+ 400 kB of
  // activations) fits.
  const FitAdvice advice = advise(big_linear(), w);
  CHECK(advice.state_bytes == Approx(20e9));
  REQUIRE(advice.options.size() == 1);
  CHECK(advice.options[0].flags == "--tp 2");
  CHECK(advice.options[0].devices == 2);
  CHECK_FALSE(advice.replicas_do_not_split);
  CHECK(capcalc::fit_advice_text(advice, capcalc::test::round_device(), Mode::kInference) ==
        "does not fit: 20.0 GB of weights; needs at least 2 x Round GPU: try --tp 2");
}

TEST_CASE("fit: replicas alone do not split an inference model", "[fit]") {
  Workload w;
  w.precision = Precision::kFp16;
  w.devices = 4;  // Four replicas of 20 GB each.
  const FitAdvice advice = advise(big_linear(), w);
  CHECK(advice.replicas_do_not_split);
  REQUIRE(advice.options.size() == 1);
  CHECK(advice.options[0].flags == "--tp 2 --devices 8");
  CHECK_THAT(capcalc::fit_advice_text(advice, capcalc::test::round_device(), Mode::kInference),
             ContainsSubstring("replicas (--devices) each hold the whole model and do not split "
                               "it; needs at least 2 x Round GPU per replica: try --tp 2 "
                               "--devices 8"));
}

TEST_CASE("fit: training lists each kind of split that fits, found by predicting it", "[fit]") {
  Workload w;
  w.mode = Mode::kTraining;  // fp32, Adam: 4 + 4 + 8 (two fp32 moments) = 16 bytes/parameter.
  // 1e9 parameters: 16 GB of state plus activations > 16 GB. ZeRO-1 over 2 replicas keeps half
  // the moments: 12 GB; tensor parallel 2 or 2 pipeline stages (one layer each, 5e8
  // parameters): 8 GB. Checkpointing saves only activations, which are not the problem.
  const FitAdvice advice = advise(two_linears(), w);
  CHECK(advice.state_bytes == Approx(16e9));
  REQUIRE(advice.options.size() == 3);
  CHECK(advice.options[0].flags == "--devices 2 --zero 1");
  CHECK(advice.options[1].flags == "--tp 2");
  CHECK(advice.options[2].flags == "--pp 2");
  CHECK(capcalc::fit_advice_text(advice, capcalc::test::round_device(), Mode::kTraining) ==
        "does not fit: 16.0 GB of weights, gradients and optimizer state; fits with any of: "
        "--devices 2 --zero 1 (2 devices), --tp 2 (2 devices), --pp 2 (2 devices)");
}

// Checkpointing is offered for the fewest blocks that fit: the first N of each chunk. The device
// is given the memory halfway between what checkpointing 1 and 2 of the 4 blocks needs, so 2
// is the answer; with the memory halfway between 3 blocks' and all 4's, every block.
TEST_CASE("fit: checkpointing is offered for the fewest blocks that fit", "[fit]") {
  const Graph g = four_blocks();
  Workload w;
  w.mode = Mode::kTraining;
  const auto needs = [&](std::int64_t n) {
    Workload c = w;
    c.checkpointing = true;
    c.checkpoint_layers = n;
    return capcalc::estimate(g, capcalc::test::round_device(), capcalc::test::round_params(), c)
        .memory.total_bytes;
  };
  REQUIRE(needs(1) > needs(2));
  REQUIRE(needs(3) > needs(0));  // 0: every block.
  capcalc::Device d = capcalc::test::round_device();
  d.memory_bytes = (needs(1) + needs(2)) / 2;
  FitAdvice advice = capcalc::advise_fit(g, d, capcalc::test::round_params(), w);
  REQUIRE_FALSE(advice.options.empty());
  CHECK(advice.options[0].flags == "--checkpointing --checkpoint-layers 2");
  CHECK(advice.options[0].devices == 1);
  // Asked for 1 block, 2 is what fits.
  Workload one = w;
  one.checkpointing = true;
  one.checkpoint_layers = 1;
  advice = capcalc::advise_fit(g, d, capcalc::test::round_params(), one);
  REQUIRE_FALSE(advice.options.empty());
  CHECK(advice.options[0].flags == "--checkpoint-layers 2");
  d.memory_bytes = (needs(3) + needs(0)) / 2;
  advice = capcalc::advise_fit(g, d, capcalc::test::round_params(), w);
  REQUIRE_FALSE(advice.options.empty());
  CHECK(advice.options[0].flags == "--checkpointing");
  advice = capcalc::advise_fit(g, d, capcalc::test::round_params(), one);
  REQUIRE_FALSE(advice.options.empty());
  CHECK(advice.options[0].flags == "--checkpointing of every block (no --checkpoint-layers)");
}

TEST_CASE("fit: interleaved, the stages offered divide the micro-batches", "[fit]") {
  // Eight linear layers of 18,000 x 18,000: 2.592e9 parameters x 16 bytes (fp32, Adam) =
  // 41.5 GB of state. Over 2 stages 20.7 GB each does not fit 16 GB; over 3 stages 13.8 GB
  // does, over 4 10.4 GB. Interleaved with 4 micro-batches, 3 stages are no schedule: 4.
  std::string layers;
  for (int i = 0; i < 8; ++i) {
    layers += fmt::format(
        "{}{{\"name\": \"fc{}\", \"op\": \"linear\", \"out_features\": "
        "18000, \"bias\": false}}",
        i == 0 ? "" : ", ", i);
  }
  const Graph graph = capcalc::parse_model(
      R"({"format": "capcalc-model/1", "name": "eight", "dims": {"batch": 1},
          "inputs": [{"name": "x", "shape": ["batch", 18000]}], "layers": [)" +
          layers + "]}",
      "eight.json");
  Workload w;
  w.mode = Mode::kTraining;
  w.pipeline_parallel = 2;
  w.devices = 2;
  w.micro_batches = 4;
  const auto pipeline = [](const FitAdvice& advice) {
    for (const auto& option : advice.options) {
      if (option.flags.rfind("--pp", 0) == 0) return option.flags;
    }
    return std::string();
  };
  CHECK(pipeline(advise(graph, w)) == "--pp 3");
  w.virtual_stages = 2;
  CHECK(pipeline(advise(graph, w)) == "--pp 4");
}

TEST_CASE("fit: a mixture of experts is offered expert parallelism, and its whole state", "[fit]") {
  // One moe layer of 8 SwiGLU experts, 1,024 wide with 65,536 hidden: 3 x 1,024 x 65,536 =
  // 201,326,592 parameters an expert, and a 1,024 x 8 router: 1,610,620,928 in all; fp32 Adam,
  // 16 bytes a parameter: 25.77 GB of state.
  const Graph g = capcalc::parse_model(R"({"format": "capcalc-model/1", "name": "moe",
    "dims": {"batch": 1},
    "inputs": [{"name": "x", "shape": ["batch", 4, 1024]}],
    "layers": [{"name": "experts", "op": "moe", "experts": 8, "experts_per_token": 2,
                "hidden": 65536}]})",
                                       "moe.json");
  Workload w;
  w.mode = Mode::kTraining;
  w.devices = 2;  // Two replicas, ZeRO-1: 4 + 4 + 8 / 2 = 12 bytes a parameter, 19.3 GB.
  w.zero_stage = 1;
  const FitAdvice advice = advise(g, w);
  // The whole state, not the ZeRO-sharded share a device holds (which was 19.3 GB).
  CHECK(advice.state_bytes == Approx(1610620928.0 * 16));
  // EP 2 on the same two devices: each keeps 4 experts, 805,306,368 parameters, whose ZeRO
  // group is 2 / 2 = 1 device, so 16 bytes each: 12.9 GB. ZeRO-2 keeps 4 + 2 + 4 = 10 bytes a
  // parameter (16.1 GB, too much); ZeRO-3 8 (12.9 GB).
  REQUIRE(advice.options.size() >= 2);
  CHECK(advice.options[0].flags == "--ep 2");
  CHECK(advice.options[0].devices == 2);
  CHECK(advice.options[1].flags == "--devices 2 --zero 3");
}

// A checkpoint that keeps its routed experts in 4 bits (expert_weight_storage, as an MXFP4
// quantization_config records it): six moe layers of 8 experts of 3 x 1,024 x 65,536 weights
// and a 1,024 x 8 router, 9,663,725,568 weights: 38.7 GB at fp32 and 19.3 GB at fp16, over the
// 16 GB Round GPU; the experts at int4 (0.515625 bytes a weight) take 5.0 GB and fit.
TEST_CASE("fit: inference is offered the experts' storage its checkpoint states", "[fit]") {
  const std::string layers = R"("layers": [
      {"name": "e0", "op": "moe", "experts": 8, "experts_per_token": 2, "hidden": 65536},
      {"name": "e1", "op": "moe", "experts": 8, "experts_per_token": 2, "hidden": 65536},
      {"name": "e2", "op": "moe", "experts": 8, "experts_per_token": 2, "hidden": 65536},
      {"name": "e3", "op": "moe", "experts": 8, "experts_per_token": 2, "hidden": 65536},
      {"name": "e4", "op": "moe", "experts": 8, "experts_per_token": 2, "hidden": 65536},
      {"name": "e5", "op": "moe", "experts": 8, "experts_per_token": 2, "hidden": 65536}]})";
  const std::string head = R"({"format": "capcalc-model/1", "name": "moe",
    "dims": {"batch": 1}, "inputs": [{"name": "x", "shape": ["batch", 4, 1024]}], )";
  const Graph stored =
      capcalc::parse_model(head + R"("expert_weight_storage": "int4", )" + layers, "moe.json");
  Workload w;  // fp32 inference.
  const FitAdvice advice = advise(stored, w);
  REQUIRE(advice.checkpoint_storage);
  CHECK(advice.checkpoint_storage->flags == "--expert-weight-precision int4");
  CHECK(advice.checkpoint_storage->devices == 1);
  CHECK_THAT(capcalc::fit_advice_text(advice, capcalc::test::round_device(), Mode::kInference),
             ContainsSubstring("; or keep the routed experts as its checkpoint stores them: try "
                               "--expert-weight-precision int4"));
  // Not offered where the file states no storage, or a weight storage was given.
  CHECK_FALSE(advise(capcalc::parse_model(head + layers, "moe.json"), w).checkpoint_storage);
  Workload fp16 = w;  // A weight storage given (19.3 GB: still too much): not offered.
  fp16.weight_precision = Precision::kFp16;
  const FitAdvice given = advise(stored, fp16);
  CHECK_FALSE(given.options.empty());
  CHECK_FALSE(given.checkpoint_storage);
  // A bad storage is located.
  CHECK_THROWS_WITH(
      capcalc::parse_model(head + R"("expert_weight_storage": "int3", )" + layers, "moe.json"),
      ContainsSubstring("moe.json:/expert_weight_storage: unknown precision"));
}

TEST_CASE("fit: a workload that fits gets no advice", "[fit]") {
  Workload w;
  w.precision = Precision::kFp16;
  CHECK(advise(two_linears(), w).options.empty());  // 2 GB.
}

TEST_CASE("tensor parallel must divide the attention heads and split the KV heads", "[fit]") {
  CHECK_FALSE(capcalc::tensor_parallel_problem(attention(32, 8), 4));
  CHECK_FALSE(capcalc::tensor_parallel_problem(attention(32, 8), 16));  // KV heads replicated.
  CHECK(capcalc::tensor_parallel_problem(attention(32, 8), 3) ==
        "--tensor-parallel 3 does not divide the 32 attention heads of \"attn\"");
  CHECK(capcalc::tensor_parallel_problem(attention(24, 8), 12) ==
        "--tensor-parallel 12 and the 8 KV heads of \"attn\" do not divide each other (KV heads "
        "split evenly, or are replicated over a multiple)");
  Workload w;
  w.tensor_parallel = 3;
  w.devices = 3;
  REQUIRE_THROWS_WITH(capcalc::estimate(attention(32, 8), capcalc::test::round_device(),
                                        capcalc::test::round_params(), w),
                      "--tensor-parallel 3 does not divide the 32 attention heads of \"attn\"");
}
