// Selective recomputation (Megatron-Core's recompute_modules: --recompute), derived by hand on
// the round device: what each module stops keeping, and the forward it runs again in backward.
#include <string>

#include "capcalc/error.hpp"
#include "capcalc/model.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/runtime.hpp"

#include "catch.hpp"
#include "round_device.hpp"
#include "test_graphs.hpp"

using namespace capcalc;
using capcalc::test::linked_round_device;
using capcalc::test::mlp_blocks;
using capcalc::test::one_moe_layer;
using capcalc::test::round_device;
using capcalc::test::round_params;

namespace {

// A pre-norm MLP block on 16 rows of 1,000: a norm, then a dense MLP named as Hugging Face
// names it (mlp.up, mlp.down), then the residual add.
Graph norm_and_mlp() {
  return parse_model(R"({"format": "capcalc-model/1", "name": "block",
    "dims": {"batch": 16},
    "inputs": [{"name": "x", "shape": ["batch", 1000]}],
    "layers": [
      {"name": "norm", "op": "layernorm"},
      {"name": "mlp.up", "op": "linear", "out_features": 4000, "bias": false},
      {"name": "mlp.down", "op": "linear", "out_features": 1000, "bias": false},
      {"name": "add", "op": "add", "inputs": ["mlp.down", "x"]}]})",
                     "block.json");
}

Workload training(unsigned recompute) {
  Workload w;
  w.mode = Mode::kTraining;
  w.recompute = recompute;
  return w;
}

// The same in fp16.
Workload fp16_training(unsigned recompute) {
  Workload w = training(recompute);
  w.precision = Precision::kFp16;
  return w;
}

constexpr auto kLayernorm = static_cast<unsigned>(RecomputeModule::kLayernorm);
constexpr auto kMlp = static_cast<unsigned>(RecomputeModule::kMlp);
constexpr auto kMoeAct = static_cast<unsigned>(RecomputeModule::kMoeAct);
constexpr auto kMlaUpProj = static_cast<unsigned>(RecomputeModule::kMlaUpProj);
constexpr auto kMoe = static_cast<unsigned>(RecomputeModule::kMoe);
constexpr auto kSharedExperts = static_cast<unsigned>(RecomputeModule::kSharedExperts);

// Mixtral's block (one_moe_layer) with a DeepSeek-style shared expert of hidden 1,024 beside
// the routed ones.
Graph moe_with_shared_expert() {
  return parse_model(R"({"format": "capcalc-model/1", "name": "moe",
    "dims": {"batch": 2, "seq": 256},
    "inputs": [{"name": "x", "shape": ["batch", "seq", 1024]}],
    "layers": [{"name": "moe", "op": "moe", "experts": 8, "experts_per_token": 2,
                "hidden": 512, "shared_hidden": 1024}]})",
                     "moe.json");
}

}  // namespace

TEST_CASE("recompute: mlp drops the dense MLP's outputs and runs its forward again",
          "[predict][recompute]") {
  const Graph g = norm_and_mlp();
  const Estimate none = estimate(g, round_device(), round_params(), training(0));
  // fp32: every layer's output kept, 16 x (1,000 + 4,000 + 1,000 + 1,000) x 4 B.
  CHECK(none.memory.activation_bytes == Approx(16.0 * 7000 * 4));
  CHECK(none.recompute_s == 0);
  // The forward of each layer, as inference times it.
  Workload inference;
  const Estimate forward = estimate(g, round_device(), round_params(), inference);
  const double mlp_s = forward.layers[1].time_s + forward.layers[2].time_s;
  const Estimate mlp = estimate(g, round_device(), round_params(), training(kMlp));
  CHECK(none.memory.activation_bytes - mlp.memory.activation_bytes ==
        Approx(16.0 * (4000 + 1000) * 4));
  CHECK(mlp.recompute_s == Approx(mlp_s));
  CHECK(mlp.latency_s == Approx(none.latency_s + mlp_s));
  // The norm feeds a dense linear, which Transformer Engine fuses it into in Megatron-Core:
  // there is no layernorm to recompute.
  CHECK(recompute_problem(g, kLayernorm) ==
        std::optional<std::string>(
            "--recompute layernorm: the model has no norm that Megatron-Core keeps apart from "
            "the next linear (one a moe layer or latent attention reads) to recompute"));
}

TEST_CASE("recompute: layernorm drops the norm a moe layer reads and runs it again",
          "[predict][recompute]") {
  // A norm on 512 tokens of 1,024 (fp16), then Mixtral's moe layer (8 experts of 512, 2 a
  // token), then a second norm that no moe layer reads.
  const Graph g = parse_model(R"({"format": "capcalc-model/1", "name": "moe",
    "dims": {"batch": 2, "seq": 256},
    "inputs": [{"name": "x", "shape": ["batch", "seq", 1024]}],
    "layers": [
      {"name": "pre_mlp_layernorm", "op": "rmsnorm"},
      {"name": "moe", "op": "moe", "experts": 8, "experts_per_token": 2, "hidden": 512},
      {"name": "final_norm", "op": "rmsnorm"}]})",
                              "moe.json");
  Workload w = fp16_training(0);
  const Estimate none = estimate(g, round_device(), round_params(), w);
  w.recompute = kLayernorm;
  const Estimate norm = estimate(g, round_device(), round_params(), w);
  Workload inference;
  inference.precision = Precision::kFp16;
  const double norm_s = estimate(g, round_device(), round_params(), inference).layers[0].time_s;
  // The first norm's output, 512 x 1,024 x 2 B; the last norm is not recomputed.
  CHECK(none.memory.activation_bytes - norm.memory.activation_bytes == Approx(512.0 * 1024 * 2));
  CHECK(norm.recompute_s == Approx(norm_s));
}

TEST_CASE("recompute: moe_act drops each pair's gated product and redoes it in one pass",
          "[predict][recompute]") {
  // Mixtral's block: d 1,024, 8 experts of hidden 512, 2 a token; 2 x 256 = 512 tokens, so
  // 1,024 token-expert pairs. fp16.
  const Graph g = one_moe_layer();
  Workload w = fp16_training(0);
  const Estimate none = estimate(g, round_device(), round_params(), w);
  w.recompute = kMoeAct;
  const Estimate act = estimate(g, round_device(), round_params(), w);
  // 1,024 pairs x 512 hidden elements at 2 B no longer kept.
  CHECK(none.memory.activation_bytes - act.memory.activation_bytes == Approx(1024.0 * 512 * 2));
  // SiLU and the multiply again: 1,024 x 512 x 6 FLOPs at 10 TFLOP/s (half the vector peak) is
  // 0.31 us; reading the gate and up outputs and writing the product, 1,024 x 512 x 3 x 2 B at
  // 0.5 TB/s, 6.29 us: memory-bound, above the 1 us kernel floor.
  CHECK(act.recompute_s == Approx(1024.0 * 512 * 3 * 2 / 0.5e12));
  CHECK(act.latency_s == Approx(none.latency_s + act.recompute_s));
  // The busiest expert's imbalance slows the pass with the layer.
  w.moe_imbalance = 2;
  CHECK(estimate(g, round_device(), round_params(), w).recompute_s == Approx(2 * act.recompute_s));
}

TEST_CASE("recompute: shared_experts checkpoints the shared expert whole", "[predict][recompute]") {
  // 512 tokens of d 1,024; the shared expert's hidden 1,024 (gate, up and down: 3 x 1,024 x
  // 1,024 = 3,145,728 weights). fp16.
  const Graph g = moe_with_shared_expert();
  Workload w = fp16_training(0);
  const Estimate none = estimate(g, round_device(), round_params(), w);
  w.recompute = kSharedExperts;
  const Estimate shared = estimate(g, round_device(), round_params(), w);
  // Per token its gate and up outputs and their product, 3 x 1,024 elements at 2 B, no longer
  // kept.
  CHECK(none.memory.activation_bytes - shared.memory.activation_bytes ==
        Approx(512.0 * 3 * 1024 * 2));
  // Its three products again, 512 x 3 x 1,024 x 1,024 MACs at 50 TFLOP/s (half the fp16
  // matrix peak), 64.42 us, and SiLU and the multiply, 512 x 1,024 x 6 FLOPs at 10 TFLOP/s,
  // 0.31 us: compute-bound over its traffic (the weights, per token the input twice and the
  // intermediates written and read, 3,145,728 + 512 x (2 x 1,024 + 6 x 1,024) elements at 2 B
  // and 0.5 TB/s: 29.36 us) and its three kernels' 3 us.
  const double shared_s = 2.0 * 512 * 3 * 1024 * 1024 / 50e12 + 512.0 * 1024 * 6 / 10e12;
  CHECK(shared.recompute_s == Approx(shared_s));
  CHECK(shared.latency_s == Approx(none.latency_s + shared_s));
  // With moe_act the two parts add: the routed pairs' pass is one_moe_layer's (1,024 pairs x
  // 512 x 3 elements at 2 B and 0.5 TB/s) and only it waits for the busiest expert.
  w.recompute = kSharedExperts | kMoeAct;
  w.moe_imbalance = 2;
  const Estimate both = estimate(g, round_device(), round_params(), w);
  CHECK(both.recompute_s == Approx(shared_s + 2 * 1024.0 * 512 * 3 * 2 / 0.5e12));
  CHECK(none.memory.activation_bytes - both.memory.activation_bytes ==
        Approx(512.0 * 3 * 1024 * 2 + 1024.0 * 512 * 2));
}

TEST_CASE("recompute: mla_up_proj drops the queries and expanded keys and values",
          "[predict][recompute]") {
  // Latent attention without a query latent: d 1,024, 8 heads of 64 + 32 (rotary) for queries
  // and keys and 64 for values, a KV latent of 256; one sequence of 4,096 tokens, fp16.
  const Graph g = parse_model(R"({"format": "capcalc-model/1", "name": "mla",
    "dims": {"batch": 1, "seq": 4096},
    "inputs": [{"name": "x", "shape": ["batch", "seq", 1024]}],
    "layers": [{"name": "attn", "op": "mla_attention", "heads": 8, "kv_lora_rank": 256,
                "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64}]})",
                              "mla.json");
  Workload w = fp16_training(0);
  const Estimate none = estimate(g, round_device(), round_params(), w);
  w.recompute = kMlaUpProj;
  const Estimate up = estimate(g, round_device(), round_params(), w);
  // Queries 8 x 96 = 768 and expanded keys and values 8 x (64 + 64) = 1,024 per token.
  CHECK(none.memory.activation_bytes - up.memory.activation_bytes ==
        Approx(4096.0 * (768 + 1024) * 2));
  // The query projection (1,024 x 768) and kv_b_proj (256 x 1,024) per token: 4,096 x
  // 1,048,576 MACs, 8.59 GFLOP at 50 TFLOP/s = 171.8 us; they move (4,096 x (1,024 + 256) +
  // 4,096 x 1,792 + 1,048,576) x 2 B = 27.3 MB, 54.5 us at 0.5 TB/s: compute-bound.
  CHECK(up.recompute_s == Approx(2.0 * 4096 * 1048576 / 50e12));
}

TEST_CASE("recompute: a recomputed dense MLP repeats its tensor-parallel collective",
          "[predict][recompute]") {
  const Graph g = parse_model(R"({"format": "capcalc-model/1", "name": "block",
    "dims": {"batch": 4, "seq": 256},
    "inputs": [{"name": "x", "shape": ["batch", "seq", 1024]}],
    "layers": [
      {"name": "attn", "op": "attention", "heads": 16},
      {"name": "mlp.up", "op": "linear", "out_features": 4096},
      {"name": "mlp.down", "op": "linear", "out_features": 1024}]})",
                              "block.json");
  const Device d = linked_round_device("Round link", 100e9);
  Workload w = fp16_training(0);
  w.devices = 2;
  w.tensor_parallel = 2;
  const Estimate none = estimate(g, d, round_params(), w);
  w.recompute = kMlp;
  const Estimate mlp = estimate(g, d, round_params(), w);
  // Sequence parallelism (training's default): forward and backward each run the attention's
  // and the MLP's reduce-scatter + all-gather pair (4); the MLP's forward once more (5), its
  // output 4 x 256 x 1,024 x 2 B.
  CHECK(none.allreduces == 4);
  CHECK(mlp.allreduces == 5);
  CHECK(mlp.allreduce_bytes - none.allreduce_bytes == Approx(4.0 * 256 * 1024 * 2));
  CHECK(mlp.communication_s == Approx(none.communication_s * 5 / 4));
}

TEST_CASE("recompute: the modules must apply, in training, without checkpointing",
          "[predict][recompute]") {
  const Graph g = norm_and_mlp();
  CHECK(recompute_problem(g, kMlp) == std::nullopt);
  CHECK(recompute_problem(g, kMoeAct) ==
        std::optional<std::string>("--recompute moe_act: the model has no \"moe\" layer to "
                                   "recompute"));
  CHECK(recompute_problem(g, kMlaUpProj) ==
        std::optional<std::string>("--recompute mla_up_proj: the model has no latent attention "
                                   "(\"mla_attention\") to recompute"));
  Workload w;
  w.recompute = kMlp;
  CHECK_THROWS_WITH(estimate(g, round_device(), round_params(), w),
                    "--recompute is for training: add --mode training");
  w = training(kMlp);
  w.checkpointing = true;
  CHECK_THROWS_WITH(estimate(g, round_device(), round_params(), w),
                    ContainsSubstring("give one of them"));
  // Megatron-Core's names; a hyphen reads as an underscore.
  CHECK(parse_recompute_module("moe-act") == RecomputeModule::kMoeAct);
  CHECK(parse_recompute_module("core_attn") == RecomputeModule::kCoreAttn);
  CHECK(parse_recompute_module("shared-experts") == RecomputeModule::kSharedExperts);
  CHECK(parse_recompute_module("attention") == std::nullopt);
  CHECK(recompute_problem(one_moe_layer(), kSharedExperts) ==
        std::optional<std::string>("--recompute shared_experts: the model has no shared expert "
                                   "(a \"moe\" layer's shared_hidden) to recompute"));
  CHECK(recompute_problem(g, kMoe) ==
        std::optional<std::string>("--recompute moe: the model has no \"moe\" layer to "
                                   "recompute"));
  CHECK(recompute_modules_text(kMoeAct | kLayernorm) == "layernorm, moe_act");
}

TEST_CASE("recompute: checkpointing the first N blocks of each chunk keeps the others' activations",
          "[predict][recompute]") {
  // Four blocks of two linears on 16 rows (fp32): without checkpointing each keeps 16 x (4,000
  // + 1,000) elements; checkpointed, its output (16 x 1,000), one block's internals while it is
  // recomputed, and its forward again.
  const Graph g = mlp_blocks(4);
  Workload w = training(0);
  const Estimate none = estimate(g, round_device(), round_params(), w);
  w.checkpointing = true;
  const Estimate all = estimate(g, round_device(), round_params(), w);
  CHECK(none.memory.activation_bytes == Approx(4 * 16.0 * 5000 * 4));
  CHECK(all.memory.activation_bytes == Approx(16.0 * (4 * 1000 + 5000) * 4));
  // The first block of the one chunk: a quarter of the blocks, a quarter of each.
  w.checkpoint_layers = 1;
  const Estimate first = estimate(g, round_device(), round_params(), w);
  CHECK(first.recompute_s == Approx(all.recompute_s / 4));
  CHECK(first.memory.activation_bytes ==
        Approx(0.75 * none.memory.activation_bytes + 0.25 * all.memory.activation_bytes));
  // Two pipeline stages hold two blocks each: the first of each, half of them.
  w.devices = 2;
  w.pipeline_parallel = 2;
  w.micro_batches = 2;
  const Estimate staged = estimate(g, round_device(), round_params(), w);
  w.checkpoint_layers = 0;
  const Estimate staged_all = estimate(g, round_device(), round_params(), w);
  CHECK(staged.recompute_s == Approx(staged_all.recompute_s / 2));
  // More blocks than a chunk holds: all of them.
  w.checkpoint_layers = 5;
  CHECK(estimate(g, round_device(), round_params(), w).recompute_s ==
        Approx(staged_all.recompute_s));
  w.checkpointing = false;
  CHECK_THROWS_WITH(estimate(g, round_device(), round_params(), w),
                    "--checkpoint-layers picks the blocks --checkpointing recomputes: turn on "
                    "--checkpointing");
}

TEST_CASE("recompute: moe runs the whole moe layer again, its token exchange included",
          "[predict][recompute]") {
  // Mixtral's block on 512 tokens (fp16), its experts over 2 devices joined by a link.
  const Graph g = one_moe_layer();
  const Device d = linked_round_device("Round link", 100e9);
  Workload w = fp16_training(0);
  w.devices = 2;
  w.expert_parallel = 2;
  const Estimate none = estimate(g, d, round_params(), w);
  w.recompute = kMoe | kMoeAct;  // moe takes the whole layer; moe_act adds nothing to it.
  const Estimate moe = estimate(g, d, round_params(), w);
  // Nothing of the layer is kept: its output and every intermediate (the router's logits, per
  // pair the gate and up outputs, their product and the down output).
  CHECK(none.memory.activation_bytes - moe.memory.activation_bytes ==
        Approx((512.0 * 1024 + 512.0 * 8 + 1024.0 * (3 * 512 + 1024)) * 2));
  // Its forward again, as inference on the same devices times it.
  Workload inference;
  inference.precision = Precision::kFp16;
  inference.devices = 2;
  inference.expert_parallel = 2;
  CHECK(moe.recompute_s == Approx(estimate(g, d, round_params(), inference).layers[0].time_s));
  // Dispatch and combine forward and backward (4), and forward once more (6).
  CHECK(none.alltoalls == 4);
  CHECK(moe.alltoalls == 6);
  CHECK(moe.expert_parallel_s == Approx(none.expert_parallel_s * 6 / 4));
}
