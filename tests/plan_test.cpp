// The layout search: small cases whose layouts can be listed by hand, every constraint, the
// run's figures derived from the step, determinism and the messages of an ask nobody meets.
#include "capcalc/plan.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "capcalc/error.hpp"
#include "capcalc/model.hpp"
#include "capcalc/report_plan.hpp"
#include "capcalc/runtime.hpp"

#include "catch.hpp"
#include "round_device.hpp"
#include "test_data.hpp"

using namespace capcalc;

namespace {

// A pre-norm transformer: `blocks` blocks of attention (`heads` heads, `kv_heads` key/value
// heads) and a 4x MLP over `hidden` features, `seq` tokens per sample.
Graph tiny_transformer(std::int64_t batch, int blocks, int heads, int kv_heads, int hidden = 384,
                       int seq = 64) {
  const std::string text = R"({"format": "capcalc-model/1", "name": "tiny",
    "dims": {"batch": )" + std::to_string(batch) +
                           R"(, "seq": )" + std::to_string(seq) + R"(},
    "inputs": [{"name": "ids", "shape": ["batch", "seq"]}],
    "blocks": {"layer": {"layers": [
      {"name": "norm", "op": "rmsnorm"},
      {"name": "attn", "op": "attention", "heads": )" +
                           std::to_string(heads) + R"(, "kv_heads": )" + std::to_string(kv_heads) +
                           R"(, "causal": true},
      {"name": "add", "op": "add", "inputs": ["attn", "x"]},
      {"name": "up", "op": "linear", "out_features": )" +
                           std::to_string(4 * hidden) + R"(},
      {"name": "act", "op": "gelu"},
      {"name": "down", "op": "linear", "out_features": )" +
                           std::to_string(hidden) + R"(},
      {"name": "add2", "op": "add", "inputs": ["down", "add"]}]}},
    "layers": [
      {"name": "embed", "op": "embedding", "num_embeddings": 1000, "embedding_dim": )" +
                           std::to_string(hidden) + R"(},
      {"name": "layers", "block": "layer", "repeat": )" +
                           std::to_string(blocks) + R"(},
      {"name": "head", "op": "linear", "out_features": 1000}]})";
  return parse_model(text, "tiny.json");
}

// Two blocks of attention (2 heads) and a mixture of 4 experts (2 a token, hidden 64) over 128
// features, 64 tokens per sample.
Graph tiny_moe(std::int64_t batch) {
  return parse_model(R"({"format": "capcalc-model/1", "name": "tiny_moe",
    "dims": {"batch": )" +
                         std::to_string(batch) +
                         R"(, "seq": 64},
    "inputs": [{"name": "ids", "shape": ["batch", "seq"]}],
    "blocks": {"layer": {"layers": [
      {"name": "norm", "op": "rmsnorm"},
      {"name": "attn", "op": "attention", "heads": 2, "causal": true},
      {"name": "add", "op": "add", "inputs": ["attn", "x"]},
      {"name": "moe", "op": "moe", "experts": 4, "experts_per_token": 2, "hidden": 64},
      {"name": "add2", "op": "add", "inputs": ["moe", "add"]}]}},
    "layers": [
      {"name": "embed", "op": "embedding", "num_embeddings": 1000, "embedding_dim": 128},
      {"name": "layers", "block": "layer", "repeat": 2},
      {"name": "head", "op": "linear", "out_features": 1000}]})",
                     "tiny_moe.json");
}

// The round device with a price, a TDP and a scale-up link joining `domain` devices (100 GB/s
// per direction); `network`: 10 GB/s per direction between nodes.
Device node_device(int domain, bool network) {
  Device d = test::round_device();
  d.intra_node = Link{"Round link", 100e9, "per_direction", 0, domain};
  if (network) d.inter_node = Link{"Round network", 10e9, "per_direction"};
  d.price = Price{1.0, "2026-12", "https://example.invalid/price"};
  d.tdp_w = 500;
  return d;
}

HardwareTable table_of(const Device& device) {
  HardwareTable table;
  table.devices = {device};
  table.performance[static_cast<std::size_t>(DeviceType::kGpu)] = test::round_params();
  return table;
}

PlanRequest fp16_request(const HardwareTable& table, std::int64_t global_batch,
                         std::int64_t max_devices) {
  PlanRequest request;
  request.devices = {&table.devices.front()};
  request.precisions = {Precision::kFp16};  // The round device has no bf16.
  request.global_batch = global_batch;
  request.max_devices = max_devices;
  request.samples = 1000;
  return request;
}

// fp16 training on 16 devices: TP 2, PP 2 of 2 chunks each, 4 micro-batches, 4 replicas.
Workload interleaved_training() {
  Workload w;
  w.precision = Precision::kFp16;
  w.mode = Mode::kTraining;
  w.devices = 16;
  w.tensor_parallel = 2;
  w.pipeline_parallel = 2;
  w.virtual_stages = 2;
  w.micro_batches = 4;
  return w;
}

}  // namespace

TEST_CASE("plan: estimate_layers + estimate_schedule is estimate()", "[plan]") {
  const Graph g = tiny_transformer(2, 4, 4, 2);
  const Device d = node_device(4, true);
  Workload w = interleaved_training();
  w.zero_stage = 1;
  w.checkpointing = true;
  const Estimate whole = estimate(g, d, test::round_params(), w);
  const Estimate split = estimate_schedule(estimate_layers(g, d, test::round_params(), w), g, d,
                                           test::round_params(), w, false);
  CHECK(split.latency_s == whole.latency_s);
  CHECK(split.memory.total_bytes == whole.memory.total_bytes);
  CHECK(split.pipeline_bubble_s == whole.pipeline_bubble_s);
  CHECK(split.data_parallel_exposed_s == whole.data_parallel_exposed_s);
  CHECK(split.layers.empty());
  CHECK(whole.layers.size() == g.layers.size());
}

// Checkpointing N of a chunk's blocks recomputes that share of the blocks (make_step): its pass
// is every block's, its recompute and the collectives recompute repeats taken that share of the
// way from the pass without checkpointing.
TEST_CASE("plan: a pass for some checkpointed blocks mixes those of none and all", "[plan]") {
  const Graph g = tiny_transformer(2, 8, 4, 2);
  const Device d = node_device(4, true);
  const Workload none = interleaved_training();
  Workload all = none;
  all.checkpointing = true;
  Workload some = all;
  some.checkpoint_layers = 1;  // 1 of each of the 4 chunks' 2 blocks: half of the 8.
  const PerformanceParams p = test::round_params();
  const LayerPass mixed =
      mix_checkpoint_passes(estimate_layers(g, d, p, none), estimate_layers(g, d, p, all), 0.5);
  const Estimate direct = estimate(g, d, p, some);
  const Estimate from_mix = estimate_schedule(mixed, g, d, p, some, false);
  CHECK(direct.recompute_s > 0);
  CHECK(from_mix.recompute_s == Approx(direct.recompute_s));
  CHECK(from_mix.communication_s == Approx(direct.communication_s));
  CHECK(from_mix.allreduces == direct.allreduces);
  CHECK(from_mix.latency_s == Approx(direct.latency_s));
  CHECK(from_mix.memory.total_bytes == Approx(direct.memory.total_bytes));
  CHECK(estimate(g, d, p, none).latency_s < direct.latency_s);
  CHECK(direct.latency_s < estimate(g, d, p, all).latency_s);
}

// A layout that fits only by recomputing recomputes the fewest blocks that fit, as estimate()
// times them with --checkpoint-layers: one device, 8 blocks, memory between the two ends.
TEST_CASE("plan: a layout that needs checkpointing checkpoints the fewest blocks", "[plan]") {
  const auto build = [](std::int64_t batch) { return tiny_transformer(batch, 8, 4, 2, 384, 256); };
  Device d = node_device(1, false);
  Workload none;
  none.precision = Precision::kFp16;
  none.mode = Mode::kTraining;
  none.micro_batches = 4;
  Workload all = none;
  all.checkpointing = true;
  const PerformanceParams p = test::round_params();
  const double unchecked = estimate(build(8), d, p, none).memory.total_bytes;
  const double checked = estimate(build(8), d, p, all).memory.total_bytes;
  REQUIRE(checked < unchecked);
  // 90 % of the device usable (the default reserve): a third of the way down from none.
  d.memory_bytes = (unchecked - (unchecked - checked) / 3) / 0.9;
  const HardwareTable table = table_of(d);
  PlanRequest request = fp16_request(table, 32, 1);
  request.micro_batch_sizes = {8};
  const PlanResult result = plan(build, table, request);
  REQUIRE_FALSE(result.rows.empty());
  const PlanRow& best = result.rows.front();
  REQUIRE(best.layout.checkpointing);
  const std::int64_t n = best.layout.checkpoint_layers;
  CHECK(n == 3);  // A third of 8 blocks, rounded up.
  Workload some = all;
  some.checkpoint_layers = n;
  const Estimate direct = estimate(build(8), d, p, some);
  CHECK(best.step_s == Approx(direct.latency_s));
  CHECK(best.memory_bytes == Approx(direct.memory.total_bytes));
  CHECK(direct.memory.total_bytes <= 0.9 * d.memory_bytes);
  some.checkpoint_layers = n - 1;
  CHECK(estimate(build(8), d, p, some).memory.total_bytes > 0.9 * d.memory_bytes);
  // Every block's row, slower, is not listed beside it.
  for (const PlanRow& row : result.rows) {
    CHECK_FALSE((row.layout.checkpointing && row.layout.checkpoint_layers == 0));
  }
  CHECK(layout_text(best.layout) == "TP 1, PP 1, DP 1, mb 8 x 4, ckpt 3 blocks");
}

TEST_CASE("plan: heads, key/value heads and blocks of a model", "[plan]") {
  const PlanShape tiny = plan_shape(tiny_transformer(1, 3, 6, 2));
  CHECK(tiny.heads == 6);
  CHECK(tiny.kv_heads == 2);
  CHECK(tiny.blocks == 3);
  // Llama 3 8B: 32 layers, 32 heads, 8 key/value heads (Llama Team 2024, Table 3).
  ModelOptions options;
  const PlanShape llama = plan_shape(load_model(test::data_path("models/llama3_8b.json"), options));
  CHECK(llama.heads == 32);
  CHECK(llama.kv_heads == 8);
  CHECK(llama.blocks == 32);
}

TEST_CASE("plan: one node of two devices, every layout listed by hand", "[plan]") {
  // Two blocks of two heads, a global batch of 1 sample, micro-batches of 1, two devices in a
  // scale-up domain and no network. By hand, the valid layouts are: 1 device (TP 1, PP 1);
  // 2 devices as TP 2, as PP 2 (V 1: 2 blocks / 2 stages leave one block per stage) or as CP 2
  // (64 tokens split into 2 x 2 chunks); DP is 1 (one sample), ZeRO therefore 0; each with and
  // without checkpointing: 8 layouts.
  const HardwareTable table = table_of(node_device(2, false));
  const Device& d = table.devices.front();
  PlanRequest request = fp16_request(table, 1, 2);
  request.micro_batch_sizes = {1};
  const PlanGraphBuilder build = [](std::int64_t batch) {
    return tiny_transformer(batch, 2, 2, 2);
  };
  const PlanResult result = plan(build, table, request);
  CHECK(result.layouts_searched == 8);
  CHECK(result.layouts_fit == 8);
  REQUIRE(result.rows.size() == 8);

  // The optimum by hand: estimate() each of the eight and take the fastest.
  struct HandLayout {
    std::int64_t tp, pp, cp;
    bool checkpointing;
  };
  const HandLayout hand[] = {{1, 1, 1, false}, {1, 1, 1, true}, {2, 1, 1, false}, {2, 1, 1, true},
                             {1, 2, 1, false}, {1, 2, 1, true}, {1, 1, 2, false}, {1, 1, 2, true}};
  const Graph g = build(1);
  double fastest = HUGE_VAL;
  for (const HandLayout& h : hand) {
    Workload w;
    w.precision = Precision::kFp16;
    w.mode = Mode::kTraining;
    w.devices = h.tp * h.pp * h.cp;
    w.tensor_parallel = h.tp;
    w.pipeline_parallel = h.pp;
    w.context_parallel = h.cp;
    w.checkpointing = h.checkpointing;
    const double step = estimate(g, d, test::round_params(), w).latency_s;
    fastest = std::min(fastest, step);
    // Each hand layout is a row, with estimate()'s step time exactly.
    const auto row = std::find_if(result.rows.begin(), result.rows.end(), [&](const PlanRow& r) {
      return r.layout.tensor_parallel == h.tp && r.layout.pipeline_parallel == h.pp &&
             r.layout.context_parallel == h.cp && r.layout.checkpointing == h.checkpointing;
    });
    REQUIRE(row != result.rows.end());
    CHECK(row->step_s == step);
  }
  CHECK(result.rows.front().step_s == fastest);
  for (std::size_t i = 1; i < result.rows.size(); ++i) {
    CHECK(result.rows[i - 1].time_s <= result.rows[i].time_s);
  }
}

TEST_CASE("plan: expert parallelism is searched where it divides the experts and D x C", "[plan]") {
  // tiny_moe on one node of two devices, a global batch of 2 samples of 1. By hand, per
  // checkpointing setting: 1 device (1 layout); DP 2 with EP 1 or 2 (4 does not fit 2
  // devices), ZeRO 0 to 3 (8); PP 2 (1); TP 2 with EP 1, and with EP 2 of whole experts
  // folded over the pair (2); CP 2 with EP 1 or 2 (2): 14, so 28 in all. EP must divide
  // D x C (T x D x C for whole experts): none on one device, nor with PP 2 alone.
  const HardwareTable table = table_of(node_device(2, false));
  const Device& d = table.devices.front();
  PlanRequest request = fp16_request(table, 2, 2);
  request.micro_batch_sizes = {1};
  const PlanGraphBuilder build = [](std::int64_t batch) { return tiny_moe(batch); };
  CHECK(plan_shape(build(1)).experts == 4);
  const PlanResult result = plan(build, table, request);
  CHECK(result.layouts_searched == 28);
  REQUIRE_FALSE(result.rows.empty());
  bool expert_rows = false;
  bool whole_rows = false;
  for (const PlanRow& row : result.rows) {
    const Layout& l = row.layout;
    const std::int64_t folded = l.whole_experts ? l.tensor_parallel : 1;
    CHECK(folded * l.data_parallel * l.context_parallel % l.expert_parallel == 0);
    CHECK(l.expert_parallel <= 2);
    if (l.expert_parallel == 1) continue;
    expert_rows = true;
    CHECK(layout_text(l).find(l.whole_experts ? "EP 2 (whole experts)" : "EP 2,") !=
          std::string::npos);
    whole_rows = whole_rows || (l.whole_experts && l.tensor_parallel == 2);
    // The step is estimate()'s, its all-to-alls in the breakdown.
    const Estimate e = estimate(build(1), d, test::round_params(), plan_workload(request, l));
    CHECK(row.step_s == e.latency_s);
    CHECK(e.expert_parallel_s > 0);
    CHECK(row.breakdown.expert_parallel_s == e.expert_parallel_s);
  }
  CHECK(expert_rows);
  CHECK(whole_rows);
  // A dense model has no EP axis.
  request.global_batch = 2;
  const PlanResult dense =
      plan([](std::int64_t batch) { return tiny_transformer(batch, 2, 2, 2); }, table, request);
  for (const PlanRow& row : dense.rows)
    CHECK(row.layout.expert_parallel == 1);
}

TEST_CASE("plan: a MoE load imbalance slows every layout's moe layers by its factor", "[plan]") {
  // The request's imbalance reaches each layout's workload, so a row's step is estimate()'s
  // with it: each moe layer takes 1.5 times as long as with balanced routing, the others the
  // same. The step is never faster; it is slower where the moe layers are not hidden under
  // communication (ZeRO-3's overlapped gathers can hide them).
  const HardwareTable table = table_of(node_device(2, false));
  const Device& d = table.devices.front();
  PlanRequest request = fp16_request(table, 2, 2);
  request.micro_batch_sizes = {1};
  const PlanGraphBuilder build = [](std::int64_t batch) { return tiny_moe(batch); };
  const Graph graph = build(1);
  const PlanResult balanced = plan(build, table, request);
  request.moe_imbalance = 1.5;
  const PlanResult skewed = plan(build, table, request);
  REQUIRE(skewed.layouts_searched == balanced.layouts_searched);
  REQUIRE_FALSE(skewed.rows.empty());
  int slower = 0;
  for (const PlanRow& row : skewed.rows) {
    INFO(layout_text(row.layout));
    const Workload w = plan_workload(request, row.layout);
    CHECK(w.moe_imbalance == 1.5);
    const Estimate e = estimate(graph, d, test::round_params(), w);
    CHECK(row.step_s == e.latency_s);
    Workload even = w;
    even.moe_imbalance = 1;
    const Estimate base = estimate(graph, d, test::round_params(), even);
    for (std::size_t i = 0; i < graph.layers.size(); ++i) {
      const double factor = graph.layers[i].op == "moe" ? 1.5 : 1;
      CHECK(e.layers[i].time_s == Approx(factor * base.layers[i].time_s));
    }
    CHECK(e.latency_s >= base.latency_s);
    if (e.latency_s > base.latency_s) ++slower;
  }
  CHECK(slower > 0);
}

TEST_CASE("plan: every layout runs under the request's runtime and FP8 recipe", "[plan]") {
  // A runtime that launches each local expert's products apart (2 kernels an expert) and, in
  // fp8, quantizes each one's two inputs with 3 kernels under tensorwise scaling: each row's
  // step is estimate()'s under that runtime and recipe, so each row launches more kernels than
  // without it. A runtime that does not run on the device's type plans nothing there and says
  // why.
  const RuntimeTable runtimes = parse_runtimes(R"({"schema_version": 1, "runtimes": [
    {"id": "per-expert", "name": "Per expert", "profile": "eager", "device_types": ["gpu"],
     "kernels": {"local_expert": 2}, "fp8_expert_quantize": {"tensorwise": 3},
     "sources": ["https://example.invalid/experts"]},
    {"id": "cpu-only", "name": "CPU only", "profile": "eager", "device_types": ["cpu"],
     "sources": ["https://example.invalid/cpu"]}]})",
                                               "rt.json");
  Device device = node_device(2, false);
  device.dense_peak[static_cast<std::size_t>(Precision::kFp8)] = {20e12, 200e12};
  const HardwareTable table = table_of(device);
  const Device& d = table.devices.front();
  PlanRequest request = fp16_request(table, 2, 2);
  request.precisions = {Precision::kFp8};
  request.micro_batch_sizes = {1};
  const PlanGraphBuilder build = [](std::int64_t batch) { return tiny_moe(batch); };
  const Graph graph = build(1);
  const PlanResult plain = plan(build, table, request);
  request.runtime = runtimes.get("per-expert");
  request.fp8_recipe = Fp8Recipe::kTensorwise;
  const PlanResult run = plan(build, table, request);
  REQUIRE(run.layouts_searched == plain.layouts_searched);
  REQUIRE_FALSE(run.rows.empty());
  for (const PlanRow& row : run.rows) {
    INFO(layout_text(row.layout));
    const Workload w = plan_workload(request, row.layout);
    REQUIRE(w.runtime);
    CHECK(w.runtime->id == "per-expert");
    CHECK(w.fp8_recipe == Fp8Recipe::kTensorwise);
    const Estimate e = estimate(graph, d, test::round_params(), w);
    CHECK(row.step_s == e.latency_s);
    Workload bare = w;
    bare.runtime.reset();
    bare.fp8_recipe = Fp8Recipe::kDelayed;
    // The moe layer holds L = 4 / EP experts: 2L GEMMs + 2 x 3L quantize kernels forward;
    // backward twice the forward's products (4L) + the two output gradients' 2 x 3L: 18L more
    // than without the runtime; every other layer the same.
    const double local = 4.0 / static_cast<double>(w.expert_parallel);
    const Estimate base = estimate(graph, d, test::round_params(), bare);
    for (std::size_t i = 0; i < graph.layers.size(); ++i) {
      const double more = graph.layers[i].op == "moe" ? 18 * local : 0;
      CHECK(e.layers[i].kernels == Approx(base.layers[i].kernels + more));
    }
  }
  request.runtime = runtimes.get("cpu-only");
  const PlanResult none = plan(build, table, request);
  CHECK(none.rows.empty());
  CHECK(std::find(none.notes.begin(), none.notes.end(),
                  std::string(d.id) + ": CPU only does not run on a gpu") != none.notes.end());
}

TEST_CASE("plan: LoRA reaches every layout, its MFU counts the work LoRA runs", "[plan]") {
  const HardwareTable table = table_of(node_device(2, false));
  const Device& d = table.devices.front();
  PlanRequest request = fp16_request(table, 2, 2);
  request.micro_batch_sizes = {1};
  const PlanGraphBuilder build = [](std::int64_t batch) {
    return tiny_transformer(batch, 2, 2, 2);
  };
  const Graph graph = build(1);
  request.lora_rank = 4;
  const PlanResult result = plan(build, table, request);
  REQUIRE_FALSE(result.rows.empty());
  const double peak = d.peak(Precision::kFp16).matrix_flops_per_s;
  for (const PlanRow& row : result.rows) {
    INFO(layout_text(row.layout));
    const Workload w = plan_workload(request, row.layout);
    CHECK(w.lora_rank == 4);
    const Estimate e = estimate(graph, d, test::round_params(), w);
    CHECK(row.step_s == e.latency_s);
    CHECK(e.lora_params > 0);
    // Global batch 2 of micro-batch 1: two micro-batches' LoRA work over the step.
    const double model = 2 * training_model_flops(graph, w);
    CHECK(row.mfu == Approx(model / (row.step_s * static_cast<double>(row.layout.devices) * peak)));
    CHECK(model < 2 * training_model_flops(graph, Workload{}));
  }
}

TEST_CASE("plan: the run's figures follow from the step", "[plan]") {
  const HardwareTable table = table_of(node_device(2, false));
  PlanRequest request = fp16_request(table, 4, 2);
  request.samples = 1001;  // 251 steps of 4 samples: the last one is whole.
  const PlanGraphBuilder build = [](std::int64_t batch) {
    return tiny_transformer(batch, 2, 2, 2);
  };
  const PlanResult result = plan(build, table, request);
  REQUIRE_FALSE(result.rows.empty());
  for (const PlanRow& row : result.rows) {
    const Layout& l = row.layout;
    CHECK(row.steps == 251);
    CHECK(row.time_s == Approx(251 * row.step_s));
    const auto devices = static_cast<double>(l.devices);
    CHECK(row.device_hours == Approx(row.time_s * devices / 3600));
    REQUIRE(row.cost_usd);
    CHECK(*row.cost_usd == Approx(row.device_hours * 1.0));  // $1 per device-hour.
    REQUIRE(row.energy_kwh);
    CHECK(*row.energy_kwh == Approx(row.device_hours * 0.5));  // 500 W.
    CHECK(row.tokens_per_s == Approx(4 * 64 / row.step_s));
    // MFU: forward + backward FLOPs of the 4 samples over the step on every device's fp16
    // matrix peak, 100 TFLOP/s.
    const GraphTotals totals = graph_totals(build(1));
    const double model_flops = static_cast<double>(totals.flops + totals.backward_flops) * 4;
    CHECK(row.mfu == Approx(model_flops / (row.step_s * devices * 100e12)));
    const StepBreakdown& b = row.breakdown;
    CHECK(b.compute_s + b.recompute_s + b.communication_s() + b.bubble_s + b.optimizer_s ==
          Approx(row.step_s));
    CHECK(row.headroom_bytes == Approx(16e9 * 0.9 - row.memory_bytes));
  }
}
TEST_CASE("plan: spot pricing lengthens each run by its interruptions and prices the wall clock",
          "[plan][pricing]") {
  const HardwareTable table = table_of(node_device(2, false));
  PlanRequest request = fp16_request(table, 4, 2);
  request.samples = 1001;
  request.pricing.kind = PricingKind::kSpot;
  request.pricing.usd_per_device_hour = 0.5;
  // 3 interruptions per device-day, each losing 1 h + 2 h / 2 = 2 h = 1/12 day: a job of N
  // devices keeps 1 - N / 4 of its wall clock.
  request.pricing.interruptions_per_device_day = 3;
  request.pricing.restart_s = 3600;
  request.pricing.checkpoint_interval_s = 7200;
  const PlanGraphBuilder build = [](std::int64_t batch) {
    return tiny_transformer(batch, 2, 2, 2);
  };
  const PlanResult result = plan(build, table, request);
  REQUIRE_FALSE(result.rows.empty());
  for (const PlanRow& row : result.rows) {
    const auto devices = static_cast<double>(row.layout.devices);
    const double wall = 251 * row.step_s / (1 - devices / 4);
    CHECK(row.time_s == Approx(wall));
    CHECK(row.interruptions == Approx(3 * devices * wall / 86400));
    CHECK(*row.cost_usd == Approx(0.5 * devices * wall / 3600));
  }
  // On a node of 8, layouts of 4 and 8 devices would never finish: none is listed, and a note
  // counts them.
  const HardwareTable node8 = table_of(node_device(8, false));
  PlanRequest wide = request;
  wide.devices = {&node8.devices.front()};
  wide.max_devices = 8;
  const PlanResult many = plan(build, node8, wide);
  REQUIRE_FALSE(many.rows.empty());
  for (const PlanRow& row : many.rows)
    CHECK(row.layout.devices < 4);
  CHECK(many.layouts_never_finish > 0);
  CHECK_THAT(many.notes.back(), Catch::Contains("spot interruptions would come faster"));
}

TEST_CASE("plan: no printed layout breaks divisibility, the domain or memory", "[plan]") {
  // 6 heads and 2 key/value heads: TP 1 or 2, never 4 although the domain holds 4; 3 blocks:
  // PP 1 or 3; a global batch of 8 samples.
  const HardwareTable table = table_of(node_device(4, true));
  PlanRequest request = fp16_request(table, 8, 64);
  const PlanGraphBuilder build = [](std::int64_t batch) {
    return tiny_transformer(batch, 3, 6, 2);
  };
  const PlanResult result = plan(build, table, request);
  REQUIRE(result.rows.size() > 10);
  bool tp2_pp3 = false;
  for (const PlanRow& row : result.rows) {
    const Layout& l = row.layout;
    CHECK(6 % l.tensor_parallel == 0);
    CHECK(2 % l.tensor_parallel == 0);
    CHECK(3 % (l.pipeline_parallel * l.virtual_stages) == 0);
    CHECK(l.data_parallel * l.micro_batches * l.micro_batch_size == 8);
    CHECK(l.devices ==
          l.tensor_parallel * l.pipeline_parallel * l.context_parallel * l.data_parallel);
    CHECK(64 % (2 * l.context_parallel) == 0);  // 64 tokens, 2 x CP chunks.
    CHECK(l.devices <= 64);
    CHECK(l.tensor_parallel <= 4);
    CHECK(row.memory_bytes <= 16e9 * 0.9);
    if (l.zero_stage > 0) CHECK(l.data_parallel > 1);
    if (l.tensor_parallel == 2 && l.pipeline_parallel == 3) tp2_pp3 = true;
  }
  CHECK(tp2_pp3);

  // Memory: a device of 4 MB holds the model only once it is split; the layouts that do not
  // fit are never printed.
  Device small = node_device(4, true);
  small.memory_bytes = 4e6;
  const HardwareTable small_table = table_of(small);
  PlanRequest small_request = fp16_request(small_table, 8, 64);
  const PlanResult split = plan(build, small_table, small_request);
  CHECK(split.layouts_fit < split.layouts_searched);
  for (const PlanRow& row : split.rows) {
    CHECK(row.memory_bytes <= 4e6 * 0.9);
    CHECK(row.layout.devices > 1);
  }
}

TEST_CASE("plan: splits of the replicas that rank alike are listed once", "[plan]") {
  // The search above: context parallelism and micro-batch sizes give one device count and
  // layout several data/context splits. No two listed rows of one family (device type, count,
  // TP, PP, EP, V, ZeRO, checkpointing) rank within 0.5 % of each other: the slower is counted
  // in variants_hidden instead; and a hidden layout always has a listed family member that
  // ranks at least as well.
  const HardwareTable table = table_of(node_device(4, true));
  const PlanRequest request = fp16_request(table, 8, 64);
  const PlanGraphBuilder build = [](std::int64_t batch) {
    return tiny_transformer(batch, 3, 6, 2);
  };
  const PlanResult result = plan(build, table, request);
  CHECK(result.variants_hidden > 0);
  const auto family = [](const Layout& l) {
    return std::make_tuple(l.devices, l.tensor_parallel, l.pipeline_parallel, l.expert_parallel,
                           l.virtual_stages, l.zero_stage, l.checkpointing);
  };
  for (std::size_t i = 0; i < result.rows.size(); ++i) {
    for (std::size_t j = i + 1; j < result.rows.size(); ++j) {
      if (family(result.rows[i].layout) != family(result.rows[j].layout)) continue;
      CHECK(result.rows[j].time_s > result.rows[i].time_s * (1 + kVariantTolerance));
    }
  }
  // Hidden layouts are fitting layouts that are not listed.
  CHECK(result.rows.size() + static_cast<std::size_t>(result.variants_hidden) <=
        static_cast<std::size_t>(result.layouts_fit));
}

TEST_CASE("plan: pipeline chunks may count the embedding and the loss as blocks", "[plan]") {
  // Megatron-Core's account_for_embedding_in_pipeline_split and
  // account_for_loss_in_pipeline_split: 6 blocks + 2 = 8 units split over P x V = 4 (2 each) or
  // 2 (4 each) besides the divisors of 6 (1, 2, 3, 6); never 8 chunks (one unit each, the
  // first chunk only the embedding) nor 5 or 7.
  const HardwareTable table = table_of(node_device(4, true));
  PlanRequest request = fp16_request(table, 8, 64);
  const PlanGraphBuilder build = [](std::int64_t batch) {
    return tiny_transformer(batch, 6, 2, 2);
  };
  const PlanResult result = plan(build, table, request);
  bool pp4 = false;
  for (const PlanRow& row : result.rows) {
    const std::int64_t chunks = row.layout.pipeline_parallel * row.layout.virtual_stages;
    CHECK((6 % chunks == 0 || chunks == 4));
    if (row.layout.pipeline_parallel == 4) pp4 = true;
  }
  CHECK(pp4);
}

TEST_CASE("plan: the same ask gives the same answer", "[plan]") {
  const HardwareTable table = table_of(node_device(4, true));
  PlanRequest request = fp16_request(table, 8, 64);
  const PlanGraphBuilder build = [](std::int64_t batch) {
    return tiny_transformer(batch, 3, 6, 2);
  };
  const auto render = [&] {
    const PlanResult result = plan(build, table, request);
    PlanReportInput input;
    input.request = &request;
    input.result = &result;
    input.model = "tiny";
    input.top = 1000;
    return render_plan_json(input);
  };
  CHECK(render() == render());
}

TEST_CASE("plan: the Pareto front is fastest first, each cheaper than every faster row", "[plan]") {
  const HardwareTable table = table_of(node_device(4, true));
  PlanRequest request = fp16_request(table, 8, 64);
  request.objective = PlanObjective::kCost;
  const PlanResult result =
      plan([](std::int64_t batch) { return tiny_transformer(batch, 3, 6, 2); }, table, request);
  REQUIRE(result.pareto.size() >= 2);
  for (std::size_t i = 1; i < result.pareto.size(); ++i) {
    CHECK(result.pareto[i - 1].time_s <= result.pareto[i].time_s);
    CHECK(*result.pareto[i - 1].cost_usd > *result.pareto[i].cost_usd);
  }
  // No row is both faster and cheaper than a front row.
  for (const PlanRow& front : result.pareto) {
    for (const PlanRow& row : result.rows) {
      CHECK_FALSE((row.time_s < front.time_s && *row.cost_usd < *front.cost_usd));
    }
  }
  // Ranked by cost: the first row is the front's cheapest.
  CHECK(*result.rows.front().cost_usd == Approx(*result.pareto.back().cost_usd));
}

TEST_CASE("plan: an ask nobody meets says why and what would", "[plan]") {
  const HardwareTable table = table_of(node_device(4, true));
  const PlanGraphBuilder build = [](std::int64_t batch) {
    return tiny_transformer(batch, 3, 6, 2);
  };
  PlanRequest request = fp16_request(table, 8, 8);
  const PlanResult open = plan(build, table, request);
  REQUIRE(open.infeasible.empty());
  const PlanRow& fastest = open.rows.front();

  // Half the fastest run's time: at perfect scaling, twice its devices (16 > 8 allowed).
  request.deadline_s = fastest.time_s / 2;
  const PlanResult late = plan(build, table, request);
  CHECK(late.rows.empty());
  CHECK_THAT(late.infeasible, ContainsSubstring("no layout of ≤ 8 rounds meets"));
  CHECK_THAT(late.infeasible, ContainsSubstring("the fastest is"));
  CHECK_THAT(late.infeasible, ContainsSubstring(layout_text(fastest.layout)));
  const std::int64_t replica = fastest.layout.tensor_parallel * fastest.layout.pipeline_parallel;
  const auto needed = static_cast<std::int64_t>(
      std::ceil(static_cast<double>(fastest.layout.devices * 2) / static_cast<double>(replica)) *
      static_cast<double>(replica));
  if (needed > 8) {
    CHECK_THAT(late.infeasible, ContainsSubstring("about " + std::to_string(needed) + " would"));
  } else {
    CHECK_THAT(late.infeasible, ContainsSubstring("layouts of more devices, up to 8, were slower"));
  }
  // Allowed 4 devices, the fastest of them at twice the deadline needs more than allowed.
  PlanRequest four = request;
  four.max_devices = 4;
  four.deadline_s.reset();
  const PlanRow fastest4 = plan(build, table, four).rows.front();
  REQUIRE(fastest4.layout.devices == 4);
  four.deadline_s = fastest4.time_s / 2;
  CHECK_THAT(plan(build, table, four).infeasible,
             ContainsSubstring("about 8 would at perfect scaling"));

  // A budget below the cheapest run names the cheapest.
  request.deadline_s.reset();
  request.budget_usd = 1e-9;
  const PlanResult poor = plan(build, table, request);
  CHECK(poor.rows.empty());
  CHECK_THAT(poor.infeasible, ContainsSubstring("costs at most"));
  CHECK_THAT(poor.infeasible, ContainsSubstring("the cheapest is"));

  // Nothing fits: the closest layout and its need.
  Device tiny = node_device(4, true);
  tiny.memory_bytes = 1e3;
  const HardwareTable tiny_table = table_of(tiny);
  PlanRequest tiny_request = fp16_request(tiny_table, 8, 8);
  const PlanResult none = plan(build, tiny_table, tiny_request);
  CHECK(none.rows.empty());
  CHECK_THAT(none.infeasible, ContainsSubstring("fits in memory with a 10 % reserve"));
}

TEST_CASE("plan: devices without a scale-up domain are planned on one device", "[plan]") {
  Device pcie = node_device(4, true);
  pcie.intra_node->domain_devices = 0;
  const HardwareTable table = table_of(pcie);
  PlanRequest request = fp16_request(table, 8, 64);
  const PlanResult result =
      plan([](std::int64_t batch) { return tiny_transformer(batch, 3, 6, 2); }, table, request);
  for (const PlanRow& row : result.rows) {
    CHECK(row.layout.devices == 1);
  }
  REQUIRE(result.notes.size() == 1);
  CHECK_THAT(result.notes.front(), ContainsSubstring("no scale-up domain"));
}

TEST_CASE("plan: scaling keeps the fastest layout per count", "[plan]") {
  const HardwareTable table = table_of(node_device(4, true));
  PlanRequest request = fp16_request(table, 8, 64);
  const PlanGraphBuilder build = [](std::int64_t batch) {
    return tiny_transformer(batch, 3, 6, 2);
  };
  const ScaleResult scale = plan_scaling(build, table, request, {1, 2, 4});
  REQUIRE(scale.points.size() == 3);
  const PlanResult all = plan(build, table, request);
  for (const ScalePoint& point : scale.points) {
    REQUIRE(point.best);
    CHECK(point.best->layout.devices == point.devices);
    for (const PlanRow& row : all.rows) {
      if (row.layout.devices == point.devices) CHECK(point.best->step_s <= row.step_s);
    }
  }
  CHECK(scale.points[0].speedup == 1);
  CHECK(scale.points[2].speedup ==
        Approx(scale.points[0].best->step_s / scale.points[2].best->step_s));
  CHECK(scale.points[2].efficiency == Approx(scale.points[2].speedup / 4));
}

TEST_CASE("plan: weak scaling grows the global batch with the count", "[plan]") {
  const HardwareTable table = table_of(node_device(4, true));
  PlanRequest request = fp16_request(table, 2, 64);
  const PlanGraphBuilder build = [](std::int64_t batch) {
    return tiny_transformer(batch, 3, 6, 2);
  };
  const ScaleResult scale = plan_scaling(build, table, request, {1, 2, 4}, true);
  CHECK(scale.weak);
  REQUIRE(scale.points.size() == 3);
  // 2 samples a step on 1 device, 4 on 2, 8 on 4.
  CHECK(scale.points[0].global_batch == 2);
  CHECK(scale.points[1].global_batch == 4);
  CHECK(scale.points[2].global_batch == 8);
  for (const ScalePoint& point : scale.points) {
    REQUIRE(point.best);
    CHECK(point.best->layout.devices == point.devices);
    CHECK(point.best->tokens_per_s ==
          Approx(static_cast<double>(point.global_batch) * 64 / point.best->step_s));
  }
  // Speed-up in tokens per second over the first count; efficiency per device.
  const double base = scale.points[0].best->tokens_per_s;
  CHECK(scale.points[2].speedup == Approx(scale.points[2].best->tokens_per_s / base));
  CHECK(scale.points[2].efficiency == Approx(scale.points[2].speedup / 4));
}
