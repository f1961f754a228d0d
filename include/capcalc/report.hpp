// Rendering results as text for people, or JSON/CSV for programs. Everything renders to a
// string, so that tests check output without running a process; the CLI only prints.
//
// JSON output carries "schema_version" and is described by data/schema/*.schema.json.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "capcalc/calibrate.hpp"
#include "capcalc/fit.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/ranges.hpp"
#include "capcalc/runtime.hpp"
#include "capcalc/validate.hpp"

namespace capcalc {

/// Version of the JSON documents capcalc writes.
inline constexpr int kOutputSchemaVersion = 1;

/// What a report is about. Device, parameters and estimate are absent for counts alone.
struct ReportInput {
  const Graph& graph;
  const GraphTotals& totals;
  Workload workload;
  const Device* device = nullptr;
  const PerformanceParams* params = nullptr;
  const Estimate* estimate = nullptr;
  const TrainingRun* run = nullptr;          ///< A whole training run, if asked for.
  const TrainingTotals* training = nullptr;  ///< Its totals.
  bool explain = false;                      ///< Show the formulas and assumptions.
  const ServingRequest* request = nullptr;   ///< An LLM serving request, if asked for.
  const ServingEstimate* serving = nullptr;  ///< Its prefill/decode prediction.
  /// The decode step's graph, for the HTML report's roofline (decode layers as points); none:
  /// only the prefill's layers are drawn.
  const Graph* decode_graph = nullptr;
  const RangeTable* ranges = nullptr;  ///< Prediction ranges; none: no ranges shown.
  /// Where the batch came from when no --batch was given, for the workload line ("the zoo's
  /// typical training batch"); empty: given. `batch_source` cites a typical batch.
  std::string batch_note{};
  std::string batch_source{};
  const FitAdvice* fit = nullptr;  ///< How a workload that does not fit would (fit.hpp).
  /// How a hint names a setting the user can change, given its key ("batch"): the CLI passes
  /// its flag names; none: the key itself.
  std::function<std::string(std::string_view key)> setting_name{};
};

/// What an estimate's communication costs, in one line without a label, for the text report
/// and the HTML page: tensor-parallel all-reduces ("1.2 ms: 64 all-reduces of 512 MB in all
/// over NVLink 4"), pipeline stage sends, the data-parallel gradient sync (`zero_stage` 2 and 3
/// add the weights).
std::string allreduce_summary(const Estimate& e);
std::string stage_sends_summary(const Estimate& e);

/// Training with pipeline stages: whether they do not split evenly, the heaviest more than
/// 0.05 % above the mean (what prints as 1.00x), and then which stage is the heaviest and by how
/// much ("the heaviest, stage 8 of 8 (the last: output layer and loss), 1.12x the mean").
bool stages_uneven(const Estimate& e);
std::string stage_imbalance_summary(const Estimate& e, std::int64_t stages);
std::string grad_sync_summary(const Estimate& e, int zero_stage);
/// Expert parallelism's token exchanges: "3.1 ms: 128 all-to-alls of 4.2 GB sent in all among 8
/// devices over NVLink 4" (all-gather + reduce-scatter pairs or all-reduces under the all-gather
/// dispatcher, among its expert x tensor-parallel group).
std::string expert_exchange_summary(const Estimate& e);
/// The row's label: "all-to-all" under an all-to-all dispatcher, else "EP comm".
std::string_view expert_exchange_label(const Estimate& e);
/// One linear layer off the tensor cores' granularity (predict.hpp), without a label, for the
/// text report and the HTML page: "lm_head: 50,257 output features not a multiple of 8 (bf16
/// tensor cores; 27.1 % of the MACs): pad to 50,304".
std::string alignment_summary(const MisalignedLayer& layer, Precision precision);

/// How the estimate times such products: "timed at 12 % of the dense matrix peak" where the
/// parameters give a misaligned efficiency, else "not timed by the estimate".
std::string alignment_timing(const PerformanceParams* params);

/// `capcalc estimate`: summary, device, estimate, the `top_layers` heaviest layers.
std::string render_estimate_text(const ReportInput& input, std::size_t top_layers);
/// `capcalc estimate --format json` (estimate-output.schema.json).
std::string render_estimate_json(const ReportInput& input);

/// `capcalc report`: one self-contained HTML5 page (inline CSS and SVG; no scripts, links,
/// fonts or images, so it opens offline): summary, the roofline with the `roofline_labels`
/// heaviest layers named (roofline.hpp), the memory breakdown, a per-layer table and the
/// device's figures with their sources as plain text. Needs device, params and estimate. With a
/// serving request the summary has its prefill and decode figures and the roofline both passes.
std::string render_report_html(const ReportInput& input, std::size_t roofline_labels = 5);

/// `capcalc layers`: one row per layer; with a device, time and bound too.
std::string render_layers_text(const ReportInput& input);
std::string render_layers_json(const ReportInput& input);
std::string render_layers_csv(const ReportInput& input);

/// `capcalc hw list`: one row per device (dense peaks in TFLOP/s, the larger of matrix and
/// vector for each precision).
std::string render_hardware_text(const std::vector<const Device*>& devices);
std::string render_hardware_json(const HardwareTable& table,
                                 const std::vector<const Device*>& devices);
std::string render_hardware_csv(const std::vector<const Device*>& devices);

/// `capcalc hw show`: every figure of one device, with its sources.
std::string render_device_text(const Device& device, const PerformanceParams& params);
std::string render_device_json(const Device& device, const PerformanceParams& params);

/// `capcalc runtimes list`: one row per runtime (id, name, profile, devices, kernel counts
/// that differ from one per layer).
std::string render_runtimes_text(const RuntimeTable& table);
std::string render_runtimes_json(const RuntimeTable& table);
/// `capcalc runtimes show`: one runtime with its kernel counts, notes and sources.
std::string render_runtime_text(const Runtime& runtime);
std::string render_runtime_json(const Runtime& runtime);

/// `capcalc validate`: each case predicted vs measured, then the median and worst error.
std::string render_validation_text(const ValidationSummary& summary);
std::string render_validation_json(const ValidationSummary& summary);

/// `capcalc calibrate`: the fitted factor per device and the error before and after.
std::string render_calibration_text(const CalibrationResult& result);

}  // namespace capcalc
