// The runtime table: parsing, lookup, kernels per layer and the host cost per kernel, checked by
// hand on small models and a device with round figures.
#include "capcalc/runtime.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "capcalc/error.hpp"
#include "capcalc/model.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/report.hpp"

#include "catch.hpp"
#include "round_device.hpp"

using namespace capcalc;

namespace {

constexpr const char* kTable = R"({"schema_version": 1, "runtimes": [
  {"id": "slow-eager", "name": "Slow eager", "aliases": ["eager"], "profile": "eager",
   "device_types": ["gpu"],
   "kernels": {"attention": 6, "rotary": 10, "cache_update": 2, "rmsnorm": 8},
   "host_overhead_us": {"gpu": 2}, "sources": ["https://example.invalid/eager"]},
  {"id": "fused", "name": "Fused", "profile": "compiled", "kernels": {"matrix": 2},
   "sources": ["https://example.invalid/fused"]},
  {"id": "per-expert", "name": "Per expert", "profile": "eager", "device_types": ["gpu"],
   "kernels": {"local_expert": 2, "expert_bias": 2},
   "fp8_expert_quantize": {"tensorwise": 3, "mxfp8": 1},
   "host_overhead_us": {"gpu": 2}, "sources": ["https://example.invalid/experts"]}]})";

Device round_gpu() {
  return test::round_device();
}

PerformanceParams round_params() {
  PerformanceParams p = test::round_params();
  p.graph_overhead_s = 1e-6;
  return p;
}

// One decoder layer as the Hugging Face importer writes it, tiny enough that every layer is
// overhead-bound on the round GPU.
Graph tiny_decoder(std::int64_t seq, std::int64_t cached) {
  ModelOptions options;
  options.dims["seq"] = seq;
  options.counting.kv_cache_length = cached;
  return parse_model(R"({"format": "capcalc-model/1", "name": "tiny", "dims": {"seq": 4},
    "inputs": [{"name": "x", "shape": [1, "seq", 64]}],
    "layers": [{"name": "norm", "op": "rmsnorm"},
               {"name": "attn", "op": "attention", "heads": 4, "causal": true, "rotary": true,
                "bias": false},
               {"name": "res", "op": "add", "inputs": ["attn", "x"]},
               {"name": "up", "op": "linear", "out_features": 64, "bias": false},
               {"name": "act", "op": "silu"}]})",
                     "tiny.json", options);
}

// One moe layer of 8 experts, 2 a token, over 4 tokens: tiny, so host-bound on the round GPU.
Graph eight_expert_moe() {
  return parse_model(R"({"format": "capcalc-model/1", "name": "moe", "dims": {},
    "inputs": [{"name": "x", "shape": [1, 4, 64]}],
    "layers": [{"name": "moe", "op": "moe", "experts": 8, "experts_per_token": 2,
                "hidden": 32}]})",
                     "moe.json");
}

// The same with a bias on each expert's products (gpt-oss).
Graph eight_biased_expert_moe() {
  return parse_model(R"({"format": "capcalc-model/1", "name": "moe", "dims": {},
    "inputs": [{"name": "x", "shape": [1, 4, 64]}],
    "layers": [{"name": "moe", "op": "moe", "experts": 8, "experts_per_token": 2,
                "hidden": 32, "expert_bias": true}]})",
                     "moe.json");
}

}  // namespace

TEST_CASE("runtime: ids and aliases are found in any case, unknown names get a suggestion",
          "[runtime]") {
  const RuntimeTable table = parse_runtimes(kTable, "rt.json");
  REQUIRE(table.runtimes.size() == 3);  // slow-eager, fused, per-expert.
  CHECK(table.get("Slow_Eager").id == "slow-eager");
  CHECK(table.get("EAGER").id == "slow-eager");
  CHECK(table.find("nope") == nullptr);
  REQUIRE_THROWS_WITH(table.get("fusd"),
                      "unknown runtime \"fusd\"; did you mean \"fused\"? (`capcalc runtimes "
                      "list` shows them)");
  CHECK(table.get("fused").runs_on(DeviceType::kCpu));  // No device_types: anywhere.
  CHECK_FALSE(table.get("slow-eager").runs_on(DeviceType::kCpu));
}

TEST_CASE("runtime: bad entries are located errors", "[runtime][errors]") {
  const auto with = [](const std::string& entry) {
    return std::string(R"({"schema_version": 1, "runtimes": [)") + entry + "]}";
  };
  REQUIRE_THROWS_WITH(
      parse_runtimes(with(R"({"id": "a", "name": "A", "profile": "eager",
        "kernels": {"rmsnrom": 8}, "sources": ["s"]})"),
                     "rt.json"),
      "rt.json:/runtimes/0/kernels/rmsnrom: unknown layer class or operator \"rmsnrom\"; did "
      "you mean \"rmsnorm\"?");
  REQUIRE_THROWS_WITH(
      parse_runtimes(with(R"({"id": "a", "name": "A", "profile": "eagr", "sources": ["s"]})"),
                     "rt.json"),
      Catch::Contains("rt.json:/runtimes/0/profile: unknown profile \"eagr\""));
  REQUIRE_THROWS_WITH(
      parse_runtimes(with(R"({"id": "a", "name": "A", "profile": "eager", "sources": []})"),
                     "rt.json"),
      "rt.json:/runtimes/0/sources: a runtime needs at least one source");
  REQUIRE_THROWS_WITH(
      parse_runtimes(with(R"({"id": "a", "name": "A", "profile": "eager", "sources": ["s"],
        "host_overhead_us": {"gpu": -1}})"),
                     "rt.json"),
      "rt.json:/runtimes/0/host_overhead_us/gpu: expected microseconds above 0 and at most 1e6, "
      "got -1");
  REQUIRE_THROWS_WITH(
      parse_runtimes(with(R"({"id": "a", "name": "A", "profile": "eager", "sources": ["s"]},
        {"id": "b", "name": "B", "aliases": ["A"], "profile": "graph", "sources": ["s"]})"),
                     "rt.json"),
      "rt.json:/runtimes/1: \"A\" already names runtime \"a\"");
  REQUIRE_THROWS_WITH(
      parse_runtimes(with(R"({"id": "Big", "name": "A", "profile": "eager", "sources": ["s"]})"),
                     "rt.json"),
      "rt.json:/runtimes/0/id: expected a kebab-case id, got \"Big\"");
  // One runtime with one more key: its error (the key's JSON pointer), or its parse.
  const auto one = [&with](const std::string& key) {
    return parse_runtimes(
               with(R"({"id": "a", "name": "A", "profile": "eager", "sources": ["s"], )" + key +
                    "}"),
               "rt.json")
        .runtimes.front();
  };
  const std::vector<std::pair<std::string, std::string>> bad_keys = {
      {R"("fp8_expert_quantize": {"tensorwize": 3})",
       "rt.json:/runtimes/0/fp8_expert_quantize/tensorwize: unknown FP8 recipe \"tensorwize\"; "
       "did you mean \"tensorwise\"?"},
      {R"("fp8_expert_quantize": {"mxfp8": -1})",
       "rt.json:/runtimes/0/fp8_expert_quantize/mxfp8: expected 0 to 1000 kernels, got -1"},
      {R"("vocab_padding": 0)",
       "rt.json:/runtimes/0/vocab_padding: expected a positive integer, got 0"},
      {R"("vocab_padding": 100000)", "rt.json:/runtimes/0/vocab_padding: expected at most 65536"},
      {R"("fp8_quantize_bytes": -1)",
       "rt.json:/runtimes/0/fp8_quantize_bytes: expected 0 to 64 bytes per element, got -1"},
      {R"("fp8_quantize_bytes": 65)",
       "rt.json:/runtimes/0/fp8_quantize_bytes: expected 0 to 64 bytes per element, got 65"},
  };
  for (const auto& [key, message] : bad_keys) {
    INFO(key);
    REQUIRE_THROWS_WITH(one(key), message);
  }
  REQUIRE_THROWS_WITH(one(R"("flash_attention": "yes")"),
                      ContainsSubstring("rt.json:/runtimes/0/flash_attention: expected"));
  CHECK(one(R"("vocab_padding": 128)").vocab_padding == 128);
  const Runtime flash = one(R"("flash_attention": true, "fp8_quantize_bytes": 4)");
  CHECK(flash.flash_attention);
  CHECK(flash.fp8_quantize_bytes == 4);
}

// Kernels per layer, by hand: RMSNorm 8 (its operator's row), attention 6 + 10 for its rotary
// embedding + 2 for the cache update (prefill and decode alike; none in training), add, linear
// and SiLU one each.
TEST_CASE("runtime: kernels per layer come from class, operator and attention extras",
          "[runtime]") {
  const RuntimeTable table = parse_runtimes(kTable, "rt.json");
  const Runtime& eager = table.get("slow-eager");
  const Graph prefill = tiny_decoder(4, 0);
  REQUIRE(prefill.layers.size() == 5);
  CHECK(prefill.layers[1].traits.rotary);
  CHECK(eager.kernels(prefill.layers[0]) == 8);
  CHECK(eager.kernels(prefill.layers[1]) == 6 + 10 + 2);
  CHECK(eager.kernels(prefill.layers[2]) == 1);
  CHECK(eager.kernels(prefill.layers[4]) == 1);
  const Graph decode = tiny_decoder(1, 16);
  CHECK(eager.kernels(decode.layers[1]) == 6 + 10 + 2);
  CHECK(eager.kernels(prefill.layers[1], false, true) == 6 + 10);  // Training: no cache.
  // The generic runtime of a profile: one kernel per layer, none for views.
  CHECK(generic_runtime(Profile::kEager).kernels(prefill.layers[1]) == 1);
}

// Every layer is overhead-bound: the pass takes kernels x the runtime's 2 us host cost, not the
// hardware table's 1 us eager floor: (8 + 18 + 1 + 1 + 1) x 2 us = 58 us.
TEST_CASE("runtime: its host cost per kernel replaces the profile's floor", "[runtime][predict]") {
  const RuntimeTable table = parse_runtimes(kTable, "rt.json");
  const Runtime& eager = table.get("slow-eager");
  const Graph g = tiny_decoder(4, 0);
  Workload w;
  w.precision = Precision::kFp16;
  w.runtime = eager;
  const Estimate e = estimate(g, round_gpu(), round_params(), w);
  CHECK(e.runtime == "slow-eager");
  CHECK(e.kernels == 29);
  CHECK(e.floor_s == Approx(2e-6));
  CHECK(e.latency_s == Approx(29 * 2e-6));
  // Without a runtime: one kernel per layer at the eager floor of the hardware table.
  Workload plain;
  plain.precision = Precision::kFp16;
  const Estimate p = estimate(g, round_gpu(), round_params(), plain);
  CHECK(p.kernels == 5);
  CHECK(p.latency_s == Approx(5 * 1e-6));
}

// A compiled runtime fuses RMSNorm, add and SiLU (no kernels) and its matrix layers are two
// kernels each: attention 1 + linear 2 = 3 kernels at the compiled floor, 0.1 us.
TEST_CASE("runtime: a compiled runtime's kernels skip fused layers", "[runtime][predict]") {
  const RuntimeTable table = parse_runtimes(kTable, "rt.json");
  const Runtime& fused = table.get("fused");
  Workload w;
  w.precision = Precision::kFp16;
  w.runtime = fused;
  const Estimate e = estimate(tiny_decoder(4, 0), round_gpu(), round_params(), w);
  CHECK(e.profile == Profile::kCompiled);
  CHECK(e.kernels == 3);
  CHECK(e.latency_s ==
        Approx(3 * 1e-7 + e.layers[0].time_s + e.layers[2].time_s + e.layers[4].time_s));
}

TEST_CASE("runtime: the shipped table loads and each profile name is one runtime's alias",
          "[runtime][zoo]") {
  const RuntimeTable table = load_runtimes(std::string(CAPCALC_TEST_DATA_DIR) + "/runtimes.json");
  CHECK(table.runtimes.size() >= 14);
  for (const Runtime& r : table.runtimes) {
    INFO(r.id);
    CHECK_FALSE(r.sources.empty());
  }
  for (Profile profile :
       {Profile::kEager, Profile::kGraph, Profile::kCompiled, Profile::kInductor}) {
    const Runtime& r = table.get(profile_name(profile));
    CHECK(r.profile == profile);
  }
  // The issue's list: every runtime people ask for has a row.
  for (const char* id : {"pytorch-eager", "torch-compile", "torch-compile-cudagraphs", "tensorrt",
                         "onnxruntime-cuda", "onnxruntime-cpu", "openvino", "jax-xla", "maxtext",
                         "vllm", "sglang", "tensorrt-llm", "llama-cpp", "mlx"}) {
    CHECK(table.find(id) != nullptr);
  }
}

// The rows that say their attention skips a causal layer's masked pairs are the ones
// docs/runtimes.md lists, and each cites a kernel's source file (where the key loop stops at the
// diagonal), not only a documentation page.
TEST_CASE("runtime: the shipped rows with FlashAttention-style kernels cite a kernel's source",
          "[runtime][zoo]") {
  const RuntimeTable table = load_runtimes(std::string(CAPCALC_TEST_DATA_DIR) + "/runtimes.json");
  const std::set<std::string> listed = {"megatron-core",
                                        "meta-training-stack",
                                        "pytorch-eager",
                                        "torch-compile",
                                        "torch-compile-cudagraphs",
                                        "maxtext",
                                        "vllm",
                                        "sglang",
                                        "tensorrt-llm",
                                        "nvidia-nim-llm"};
  std::set<std::string> flash;
  for (const Runtime& r : table.runtimes) {
    if (!r.flash_attention) continue;
    flash.insert(r.id);
    INFO(r.id);
    CHECK(std::any_of(r.sources.begin(), r.sources.end(), [](const std::string& source) {
      for (const char* ext : {".h", ".cuh", ".cu", "_kernel.py"})
        if (source.size() > std::string(ext).size() &&
            source.compare(source.size() - std::string(ext).size(), std::string::npos, ext) == 0)
          return true;
      return false;
    }));
  }
  CHECK(flash == listed);
  CHECK_FALSE(table.get("jax-xla").flash_attention);  // XLA's own attention computes every pair
}

// Mixed-precision training under a runtime that casts weights (autocast): a linear layer with a
// bias reads two weight tensors, each cast to 16 bits forward and its gradient cast back in
// backward. Forward: 1 kernel + 2 casts; backward: 2 kernels (input and weight gradients) + 2
// casts; 7 in all. At fp32 there is nothing to cast: 1 + 2 = 3.
TEST_CASE("runtime: autocast casts each weight tensor once per direction in training",
          "[runtime][predict]") {
  const RuntimeTable table = parse_runtimes(R"({"schema_version": 1, "runtimes": [
    {"id": "amp", "name": "AMP", "profile": "eager", "kernels": {"autocast_weight_casts": 1},
     "sources": ["https://example.invalid/amp"]}]})",
                                            "rt.json");
  const Graph g = parse_model(R"({"format": "capcalc-model/1", "name": "fc", "dims": {"batch": 2},
    "inputs": [{"name": "x", "shape": ["batch", 64]}],
    "layers": [{"name": "fc", "op": "linear", "out_features": 64}]})",
                              "fc.json");
  REQUIRE(g.layers[0].traits.weight_tensors == 2);
  Workload w;
  w.mode = Mode::kTraining;
  w.precision = Precision::kFp16;
  w.runtime = table.get("amp");
  CHECK(estimate(g, round_gpu(), round_params(), w).kernels == 7);
  w.precision = Precision::kFp32;
  CHECK(estimate(g, round_gpu(), round_params(), w).kernels == 3);
  // Inference casts nothing either.
  w.mode = Mode::kInference;
  w.precision = Precision::kFp16;
  CHECK(estimate(g, round_gpu(), round_params(), w).kernels == 1);
}

// Serving defaults by device memory: the base values, then those of the last tier that applies.
// Tiers at 20 and 60 GiB, the second skipping devices named "slow": the 16 GB round GPU (14.9
// GiB) is below both and keeps the base; at 40 GiB the first tier's budget replaces the base
// one and its sequence limit, which it leaves out, stays 100; at 80 GiB the second tier's
// memory fraction joins its budget; a "Slow" 80 GiB device falls back to the first tier.
namespace {

// A runtime table of one serving runtime whose block is the minimal one plus `extra` keys: the
// parse errors below each break one of them.
RuntimeTable with_serving(const std::string& extra) {
  return parse_runtimes(R"({"schema_version": 1, "runtimes": [
        {"id": "srv", "name": "Srv", "profile": "compiled", "sources": ["s"],
         "serving": {"max_num_batched_tokens": 1, "max_num_seqs": 1, "block_size": 1,
                     "gpu_memory_utilization": 0.5, )" +
                            extra + "}}]}",
                        "rt.json");
}

}  // namespace

TEST_CASE("runtime: serving defaults take the last memory tier that applies", "[runtime][serve]") {
  const RuntimeTable table = parse_runtimes(R"({"schema_version": 1, "runtimes": [
    {"id": "srv", "name": "Srv", "profile": "compiled", "sources": ["https://example.invalid/s"],
     "serving": {"max_num_batched_tokens": 1000, "max_num_seqs": 100, "block_size": 8,
                 "gpu_memory_utilization": 0.5, "memory_fraction_of": "free",
                 "chunked_prefill": false,
                 "memory_tiers": [
                   {"min_memory_gib": 20, "max_num_batched_tokens": 2000},
                   {"min_memory_gib": 60, "except_names": ["SLOW"], "max_num_batched_tokens": 4000,
                    "gpu_memory_utilization": 0.8}]}}]})",
                                            "rt.json");
  const ServingDefaults& serving = *table.get("srv").serving;
  Device d = round_gpu();
  ServingDefaults s = serving_defaults_for(serving, d);
  CHECK(s.max_num_batched_tokens == 1000);
  CHECK(s.max_num_seqs == 100);
  CHECK(s.block_size == 8);
  CHECK(s.memory_utilization == 0.5);
  CHECK(s.fraction_of == MemoryFraction::kFree);
  CHECK_FALSE(s.chunked_prefill);
  CHECK(s.tiers.empty());
  d.memory_bytes = 40 * 1073741824.0;
  s = serving_defaults_for(serving, d);
  CHECK(s.max_num_batched_tokens == 2000);
  CHECK(s.max_num_seqs == 100);
  CHECK(s.memory_utilization == 0.5);
  d.memory_bytes = 80 * 1073741824.0;
  s = serving_defaults_for(serving, d);
  CHECK(s.max_num_batched_tokens == 4000);
  CHECK(s.memory_utilization == 0.8);
  d.name = "Slow GPU 80GB";
  s = serving_defaults_for(serving, d);
  CHECK(s.max_num_batched_tokens == 2000);
  CHECK(s.memory_utilization == 0.5);

  REQUIRE_THROWS_WITH(
      with_serving(R"("memory_tiers": [ {"min_memory_gib": 60}, {"min_memory_gib": 20}])"),
      "rt.json:/runtimes/0/serving/memory_tiers/1/min_memory_gib: expected tiers in ascending "
      "min_memory_gib");
  REQUIRE_THROWS_WITH(
      with_serving(R"("memory_fraction_of": "total")"),
      "rt.json:/runtimes/0/serving/memory_fraction_of: expected \"device\", \"free\" or "
      "\"static\", got \"total\"");
  REQUIRE_THROWS_WITH(
      with_serving(R"("reserved_memory_mib": 100)"),
      "rt.json:/runtimes/0/serving/reserved_memory_mib: give gpu_memory_utilization or "
      "reserved_memory_mib, not both");
  REQUIRE_THROWS_WITH(
      with_serving(R"("scheduler": "orca")"),
      "rt.json:/runtimes/0/serving/scheduler: expected \"vllm\" or \"sglang\", got \"orca\"");
  REQUIRE_THROWS_WITH(
      with_serving(R"("reserve_full_request": true, "scheduler": "sglang")"),
      "rt.json:/runtimes/0/serving/scheduler: SGLang's scheduler reserves by its own rule: no "
      "reserve_full_request");
}

// The shipped rows: vLLM's budget rises to 8,192 tokens and 1,024 sequences at 70 GiB except
// on an A100; TensorRT-LLM's LLM API defaults are one set for every device (2,048 sequences,
// 8,192 tokens, 32-token blocks, 0.9 of free memory, prefill not chunked).
TEST_CASE("runtime: the shipped serving defaults of vLLM and TensorRT-LLM", "[runtime][serve]") {
  const RuntimeTable table = load_runtimes(std::string(CAPCALC_TEST_DATA_DIR) + "/runtimes.json");
  Device d = round_gpu();
  d.memory_bytes = 80e9;  // 74.5 GiB.
  const ServingDefaults vllm = serving_defaults_for(*table.get("vllm").serving, d);
  CHECK(vllm.max_num_batched_tokens == 8192);
  CHECK(vllm.max_num_seqs == 1024);
  CHECK(vllm.block_size == 16);
  CHECK(vllm.memory_utilization == 0.9);
  CHECK(vllm.fraction_of == MemoryFraction::kDevice);
  CHECK(vllm.chunked_prefill);
  d.name = "NVIDIA A100 80GB";
  CHECK(serving_defaults_for(*table.get("vllm").serving, d).max_num_batched_tokens == 2048);
  const ServingDefaults trt = serving_defaults_for(*table.get("tensorrt-llm").serving, d);
  CHECK(trt.max_num_batched_tokens == 8192);
  CHECK(trt.max_num_seqs == 2048);
  CHECK(trt.block_size == 32);
  CHECK(trt.memory_utilization == 0.9);
  CHECK(trt.fraction_of == MemoryFraction::kFree);
  CHECK_FALSE(trt.chunked_prefill);
  CHECK(vllm.scheduler == Scheduler::kVllm);
  CHECK(trt.scheduler == Scheduler::kVllm);
}

// SGLang (memory_hook.py at 031ed82): chunked_prefill_size by device memory, and
// mem_fraction_static = round((gpu_mem - reserved) / gpu_mem, 3) in MiB, reserved = 512 +
// 1.5 x max(chunk, 2048) + tp/8 x 1024 + 2 x max_bs (decode graphs) + 8 x the prefill graph
// sizes up to the chunk, at least 10 GiB above 60 GiB. An H100 80GB (80e9 B, 76,293.9 MiB, 74.5
// GiB): chunk 8,192, max_bs 256, 58 prefill sizes, reserved 512 + 12,288 + 128 + 512 + 464 =
// 13,904 MiB, fraction (76,293.9 - 13,904) / 76,293.9 = 0.8178 -> 0.818. The 16 GB round GPU
// (15,258.8 MiB, 14.9 GiB): chunk 2,048, max_bs 8, 42 sizes, 512 + 3,072 + 128 + 16 + 336 =
// 4,064 MiB, 11,194.8 / 15,258.8 = 0.7337 -> 0.734. A 24 GB device (22,888.2 MiB, 22.4 GiB):
// chunk 4,096, max_bs 48, 50 sizes, 512 + 6,144 + 128 + 96 + 400 = 7,280 MiB, 0.6819 -> 0.682.
// 2,048 sequences (the floor of max_num_reqs), 1-token pages, the fraction static.
TEST_CASE("runtime: the shipped serving defaults of SGLang follow its memory tiers",
          "[runtime][serve]") {
  const RuntimeTable table = load_runtimes(std::string(CAPCALC_TEST_DATA_DIR) + "/runtimes.json");
  const ServingDefaults& sglang = *table.get("sglang").serving;
  Device d = round_gpu();
  d.memory_bytes = 80e9;
  ServingDefaults s = serving_defaults_for(sglang, d);
  CHECK(s.max_num_batched_tokens == 8192);
  CHECK(s.reserved_memory_bytes == 13904 * 1048576.0);
  CHECK(s.memory_utilization == 0.818);
  CHECK(s.max_num_seqs == 2048);
  CHECK(s.block_size == 1);
  CHECK(s.fraction_of == MemoryFraction::kStatic);
  CHECK(s.chunked_prefill);
  CHECK_FALSE(s.reserve_full_request);
  CHECK(s.scheduler == Scheduler::kSglang);  // Its own scheduler, not vLLM's.
  s = serving_defaults_for(sglang, round_gpu());
  CHECK(s.max_num_batched_tokens == 2048);
  CHECK(s.memory_utilization == 0.734);
  d.memory_bytes = 24e9;
  s = serving_defaults_for(sglang, d);
  CHECK(s.max_num_batched_tokens == 4096);
  CHECK(s.memory_utilization == 0.682);
  // A 4e9-byte device is below the base reserve of 4,064 MiB (4.26e9 bytes): nothing is left.
  d.memory_bytes = 4e9;
  CHECK(serving_defaults_for(sglang, d).memory_utilization == 0);
}

// `runtimes show --format json` spells the serving block as the runtime table does, so that a
// user can copy it into a --runtime-file: each shipped one parses back to the same defaults.
TEST_CASE("runtime: the shown serving block reads back as the same defaults", "[runtime][serve]") {
  const RuntimeTable table = load_runtimes(std::string(CAPCALC_TEST_DATA_DIR) + "/runtimes.json");
  int serving = 0;
  for (const Runtime& r : table.runtimes) {
    if (!r.serving) continue;
    ++serving;
    nlohmann::json shown = nlohmann::json::parse(render_runtime_json(r))["runtime"];
    const nlohmann::json entry = {{"id", "copy"},
                                  {"name", "Copy"},
                                  {"profile", shown["profile"]},
                                  {"sources", {"s"}},
                                  {"serving", shown["serving"]}};
    const nlohmann::json file = {{"schema_version", 1}, {"runtimes", {entry}}};
    const ServingDefaults back = *parse_runtimes(file.dump(), "copy.json").get("copy").serving;
    const ServingDefaults& d = *r.serving;
    INFO(r.id);
    CHECK(back.max_num_batched_tokens == d.max_num_batched_tokens);
    CHECK(back.max_num_seqs == d.max_num_seqs);
    CHECK(back.block_size == d.block_size);
    CHECK(back.memory_utilization == Approx(d.memory_utilization));
    CHECK(back.reserved_memory_bytes == Approx(d.reserved_memory_bytes));
    CHECK(back.fraction_of == d.fraction_of);
    CHECK(back.chunked_prefill == d.chunked_prefill);
    CHECK(back.reserve_full_request == d.reserve_full_request);
    CHECK(back.scheduler == d.scheduler);
    REQUIRE(back.tiers.size() == d.tiers.size());
    for (std::size_t i = 0; i < d.tiers.size(); ++i) {
      CHECK(back.tiers[i].min_memory_bytes == Approx(d.tiers[i].min_memory_bytes));
      CHECK(back.tiers[i].except_names == d.tiers[i].except_names);
      CHECK(back.tiers[i].max_num_batched_tokens == d.tiers[i].max_num_batched_tokens);
      CHECK(back.tiers[i].reserved_memory_bytes == Approx(d.tiers[i].reserved_memory_bytes));
    }
  }
  CHECK(serving == 3);  // vLLM, SGLang, TensorRT-LLM.
}

// A runtime that launches each expert's two products apart (Transformer Engine's GroupedLinear
// under Megatron-Core: one cuBLAS GEMM per expert for fc1 and for fc2): a moe layer of 8
// experts is 1 + 2 x 8 = 17 kernels on one device, 1 + 2 x 2 = 5 where expert parallelism over
// 4 leaves each device 2 experts; backward twice the forward's. Tiny, so overhead-bound at the
// runtime's 2 us a kernel: 17 x 2 = 34 us.
TEST_CASE("runtime: local_expert kernels count the experts a device holds", "[runtime][predict]") {
  const RuntimeTable table = parse_runtimes(kTable, "rt.json");
  const Runtime& per_expert = table.get("per-expert");
  CHECK(per_expert.local_expert_kernels == 2);
  const Graph g = eight_expert_moe();
  Workload w;
  w.precision = Precision::kFp16;
  w.runtime = per_expert;
  const Estimate one = estimate(g, round_gpu(), round_params(), w);
  CHECK(one.kernels == 17);
  CHECK(one.latency_s == Approx(17 * 2e-6));
  Workload ep = w;
  ep.devices = 4;
  ep.expert_parallel = 4;
  CHECK(estimate(g, round_gpu(), round_params(), ep).layers[0].kernels == 5);
  Workload training = ep;
  training.mode = Mode::kTraining;
  CHECK(estimate(g, round_gpu(), round_params(), training).layers[0].kernels == 5 + 10);
  // The generic runtime: one kernel, however many experts.
  Workload plain;
  plain.precision = Precision::kFp16;
  CHECK(estimate(g, round_gpu(), round_params(), plain).kernels == 1);
}

// Biased experts under a runtime that adds each expert's output bias apart (Megatron-Core's
// TEGroupedMLP._apply_bias: t + b * p per expert, a multiply and an add): the moe layer of 8
// experts on one device is 1 + 2 x 8 (products) + 2 x 8 (bias) = 33 kernels. Each bias kernel
// reads and writes the expert's output rows: 4 tokens x 2 experts x 64 features = 512 elements
// at 2 bytes, 2 kernels x 2 x 512 x 2 = 4,096 bytes more than the same layer without the
// runtime's bias kernels, at 0.5 TB/s after the launches: 33 x 2 us + 8.192 ns. Training over
// expert parallelism 4 (2 experts a device; each device routes its own 4 tokens): forward
// 1 + 4 + 4 = 9, backward 18, and the backward moves twice the forward's 4,096 bytes.
TEST_CASE("runtime: expert_bias kernels add each local expert's bias apart", "[runtime][predict]") {
  const RuntimeTable table = parse_runtimes(kTable, "rt.json");
  const Runtime& per_expert = table.get("per-expert");
  CHECK(per_expert.expert_bias_kernels == 2);
  CHECK_THAT(render_runtime_text(per_expert),
             Catch::Contains("kernels      local_expert 2 each, expert_bias 2 each"));
  const Graph biased = eight_biased_expert_moe();
  REQUIRE(biased.layers[0].counts.expert_bias_elements == 4 * 2 * 64);
  Workload w;
  w.precision = Precision::kFp16;
  w.runtime = per_expert;
  const Estimate one = estimate(biased, round_gpu(), round_params(), w);
  CHECK(one.kernels == 33);
  CHECK(one.latency_s == Approx(33 * 2e-6 + 4096 / 0.5e12).epsilon(1e-9));
  Workload no_bias = w;
  no_bias.runtime->expert_bias_kernels = 0;
  const Estimate epilogue = estimate(biased, round_gpu(), round_params(), no_bias);
  CHECK(epilogue.kernels == 17);
  CHECK(one.bytes - epilogue.bytes == Approx(4096));
  // Experts without biases take none of it.
  CHECK(estimate(eight_expert_moe(), round_gpu(), round_params(), w).kernels == 17);
  Workload training = w;
  training.mode = Mode::kTraining;
  training.devices = 4;
  training.expert_parallel = 4;
  Workload training_no_bias = training;
  training_no_bias.runtime->expert_bias_kernels = 0;
  const Estimate trained = estimate(biased, round_gpu(), round_params(), training);
  CHECK(trained.layers[0].kernels == 9 + 18);
  CHECK(trained.layers[0].bytes -
            estimate(biased, round_gpu(), round_params(), training_no_bias).layers[0].bytes ==
        Approx(3 * 4096));
}

// FP8 math under a runtime that quantizes each expert's inputs apart (Transformer Engine's
// GroupedLinear: tensorwise current scaling launches amax, scale and cast per expert, MXFP8 one
// cast; delayed scaling one fused cast for all, none per expert). The moe layer of 8 experts on
// one device, 1 + 2 x 8 = 17 kernels, gains 2 quantized tensors (the inputs of fc1 and fc2) x 8
// experts x 3 = 48 under tensorwise: 65 kernels, 65 x 2 us = 130 us; 2 x 8 x 1 = 16 under
// mxfp8: 33; none under delayed: 17. Training over expert parallelism 4 (2 experts a device):
// forward 5 + 2 x 2 x 3 = 17, backward 2 x 5 + the two output gradients' 2 x 2 x 3 = 22; 39.
TEST_CASE("runtime: FP8 recipes quantize each local expert's inputs", "[runtime][predict]") {
  const RuntimeTable table = parse_runtimes(kTable, "rt.json");
  const Runtime& per_expert = table.get("per-expert");
  Device gpu = round_gpu();
  gpu.dense_peak[static_cast<std::size_t>(Precision::kFp8)] = {20e12, 200e12};
  const Graph g = eight_expert_moe();
  Workload w;
  w.precision = Precision::kFp8;
  w.runtime = per_expert;
  CHECK(estimate(g, gpu, round_params(), w).kernels == 17);
  w.fp8_recipe = Fp8Recipe::kTensorwise;
  const Estimate tensorwise = estimate(g, gpu, round_params(), w);
  CHECK(tensorwise.kernels == 65);
  CHECK(tensorwise.latency_s == Approx(65 * 2e-6));
  w.fp8_recipe = Fp8Recipe::kMxfp8;
  CHECK(estimate(g, gpu, round_params(), w).kernels == 33);
  Workload training = w;
  training.fp8_recipe = Fp8Recipe::kTensorwise;
  training.mode = Mode::kTraining;
  training.devices = 4;
  training.expert_parallel = 4;
  CHECK(estimate(g, gpu, round_params(), training).layers[0].kernels == 17 + 22);
  // A recipe scales FP8 tensors only.
  Workload bf16 = w;
  bf16.precision = Precision::kFp16;
  CHECK_THROWS_WITH(estimate(g, gpu, round_params(), bf16),
                    "the FP8 recipe mxfp8 scales FP8 tensors: not with fp16 precision");
}
