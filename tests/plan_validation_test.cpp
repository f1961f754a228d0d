// The planner against published training layouts (issue 24, section 4): every training case of
// data/validation/measurements.json that publishes its multi-device layout and measured tokens/s
// (NeMo and Megatron-Bridge performance tables). Two checks: the published layout's predicted
// throughput (the validation set's error, gated just above what it is today), and the planner's
// fastest layout at the same device count, global batch and precision, never predicted slower
// than the published one, since the search includes it. docs/planning.md lists the figures.
#include <algorithm>
#include <string>
#include <vector>

#include "capcalc/hardware.hpp"
#include "capcalc/model.hpp"
#include "capcalc/plan.hpp"
#include "capcalc/runtime.hpp"
#include "capcalc/validate.hpp"

#include "catch.hpp"
#include "test_data.hpp"

using namespace capcalc;

namespace {

// A published layout: training throughput in tokens/s over several devices, with the
// micro-batch size (dims.batch) and so the global batch. The planner searches full training:
// LoRA fine-tuning runs are not its layouts.
bool published_layout(const Measurement& m) {
  return m.workload.mode == Mode::kTraining && m.metric == Metric::kTokensPerSecond &&
         m.workload.devices > 1 && m.dims.count("batch") == 1 && m.workload.lora_rank == 0;
}

Graph case_graph(const Measurement& m, std::int64_t batch) {
  ModelOptions options;
  options.dims = m.dims;
  options.dims["batch"] = batch;
  options.mtp_layers = m.mtp_layers;
  return load_model(test::data_path("models/" + m.model), options);
}

// The planner's fastest layout for the case's device type, count, global batch and precision;
// tokens/s over all devices (0: none fits).
double planner_best_tokens_per_s(const Measurement& m, const HardwareTable& table,
                                 const RuntimeTable& runtimes) {
  const PlanGraphBuilder build = [&m](std::int64_t batch) { return case_graph(m, batch); };
  const Workload& w = m.workload;
  const std::int64_t replicas = w.devices / (w.tensor_parallel * w.pipeline_parallel);
  PlanRequest request;
  request.devices = {&measured_device(m, table)};
  request.device_counts = {w.devices};
  request.max_devices = w.devices;
  request.global_batch = m.dims.at("batch") * w.micro_batches * replicas;
  request.samples = static_cast<double>(request.global_batch) * 1000;
  request.precisions = {w.precision};
  request.profile = w.profile;
  if (!m.runtime.empty()) request.runtime = runtimes.get(m.runtime);
  request.fp8_recipe = w.fp8_recipe;
  request.moe_dispatcher = w.moe_dispatcher;
  request.recompute = w.recompute;
  request.micro_batch_sizes = {1, 2, 4, 8};
  const PlanResult result = plan(build, table, request);
  double best = 0;
  for (const PlanRow& row : result.rows)
    best = std::max(best, row.tokens_per_s);
  return best;
}

}  // namespace

TEST_CASE("plan validation: published layouts, predicted and searched", "[plan][validation]") {
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  std::vector<Measurement> cases;
  for (Measurement& m : load_measurements(test::data_path("validation/measurements.json"))) {
    if (published_layout(m)) cases.push_back(std::move(m));
  }
  // Issue 24 asks for at least 25 published layouts.
  REQUIRE(cases.size() >= 25);
  const RuntimeTable runtimes = load_runtimes(test::data_path("runtimes.json"));
  const ValidationSummary summary = validate(cases, table, test::data_path("models"), &runtimes);
  // Measured (docs/planning.md): median |error| 9.7 % (0.0967), worst 1.78x (gpt-oss-120b's
  // 25.11 layout on 64 B200s) over 48 layouts since the NeMo and Megatron-Bridge layouts name
  // the distributed optimizer their recipes set (ZeRO-1: each replica steps its shard); 9.5 %
  // (0.0946) and 1.75x (Qwen3-30B-A3B's 26.02 layout on 16 H100s, run 1.77x faster by the
  // 26.02.01 container: 0.57x) since Megatron-Core adds each biased expert's output bias apart
  // (gpt-oss-120b 1.16-1.72x, were 1.18-1.82x: its 25.11 B200 layout was the worst, 1.82x); the
  // same and 1.82x since six name the selective recomputation their recipe set
  // (gpt-oss-120b's 26.02 and 26.02.01 layouts 1.60/1.19/1.59x -> 1.57/1.18/1.56x, DeepSeek-V3's
  // 1.02/0.89/0.86x -> 1.02/0.88/0.85x); since DeepSeek-V3's three B200 layouts with their
  // multi-token-prediction module were added held out (1.02x, 0.88x, 0.84x); 9.4 % over 45, the
  // same since five name the DeepEP or HybridEP dispatcher their recipe set
  // (Qwen3-235B-A22B's 26.02.01 H100 layout 0.78x
  // -> 1.18x); since Qwen3-235B-A22B's three H100 layouts with whole experts were added held out
  // (TP 2, PP 8, V 4, EP 32, expert tensor-parallel 1: 0.77-0.79x); 9.3 % over 42 since five
  // Megatron-Bridge layouts were added held out (Qwen3-235B-A22B on 64 and 256 B200s, 1.16x and
  // 0.98x; the 26.02.01 container's gpt-oss-120b on 64 B200s, 1.56x, and Qwen3-30B-A3B on 8 B200s
  // and 16 H100s, 0.91x and 0.56x: the last is the 26.02 layout, run 1.77x faster by the newer
  // container); 9.0 % and 1.82x over 37 since Megatron-Core's attention skips causally masked tiles
  // and FP8 training pays its quantize passes (its sliding-window layers, counted whole before, now
  // take their window: 1.72x
  // -> 1.82x); 9.0 % and 1.72x since the heaviest pipeline stage sets the pace (8.6 % and 1.74x,
  // gpt-oss- 120b on 64 H100s with PP 4, before: its last stage holds a 201,088-word output
  // layer, 1.21x the mean); the four gpt-oss-120b layouts predicted faster than measured
  // (1.13-1.72x), Qwen3-30B-A3B's four 0.96-1.58x since its FP8 recipes quantize each expert's
  // inputs apart (10.9 % and 2.74x before, Qwen3-30B-A3B 1.41-2.74x; 3.3-3.4x and 1.13-1.82x before
  // the runtime's per-expert GEMM launches, 3.40x worst); 7.1 % and 1.42x (Nemotron 22B) over the
  // 29 before those eight; 6.3 % over 26 before MLPerf Training v4.0's three GPT-3 175B layouts,
  // held out; 6.5 % over 25 before Mixtral 8x7B with EP 8; 5.7 % and 1.43x before sequence
  // parallelism's reduce-scatter + all-gather pairs. The targets are 15 % and 1.5x; the
  // gates sit just above today's figures.
  CHECK(summary.median_abs_error <= 0.097);
  CHECK(summary.worst_factor <= 1.78);

  // The search holds each published layout (or a ZeRO variant) that fits its memory limit, and
  // its best is never slower. Megatron-Bridge's Llama 3.1 405B layouts (PP 8 x V 8 over 126
  // blocks) are in it only because the embedding and the loss count as blocks.
  for (const ValidationResult& r : summary.results) {
    const Measurement& m = *r.measurement;
    INFO(m.id);
    // predicted is per device; the planner's rows count every device.
    const double published = r.predicted * static_cast<double>(m.workload.devices);
    CHECK(planner_best_tokens_per_s(m, table, runtimes) >= published * (1 - 1e-9));
  }
}
