// Validation of `capcalc serve` against published serving benchmarks (data/validation/
// serving.json): each case is a model served on a device by a runtime at a load, with the
// throughput its source measured; the check sets the simulator's prediction beside it. The
// file format is data/schema/serving-validation.schema.json; the rules for cases are
// data/validation/README.md's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capcalc/error.hpp"
#include "capcalc/serve.hpp"

namespace capcalc {

/// One published serving measurement.
struct ServingCase {
  std::string id;
  std::string runtime;  ///< Runtime id of data/runtimes.json: its serving defaults are used.
  std::string model;    ///< A file in data/models/.
  std::string device;   ///< Device id of the hardware table.
  std::int64_t devices = 1;
  std::int64_t tensor_parallel = 1;  ///< Devices per replica; devices / tensor_parallel replicas.
  std::string precision;             ///< Of weights and activations.
  std::string kv_precision;          ///< Empty: the activations'.
  std::int64_t prompt_tokens = 1;
  std::int64_t output_tokens = 1;
  std::int64_t requests = 1;                 ///< Requests in the measured run.
  std::optional<std::int64_t> max_num_seqs;  ///< Where the source states or its tool sets it.
  /// The token budget per step, where the source states or its benchmark tool sets it.
  std::optional<std::int64_t> max_num_batched_tokens;
  /// Empty: offline throughput (every request queued at once). Otherwise an SLO such as
  /// "ttft_p99=2s,tpot_p99=200ms": the highest rate that meets it (MLPerf's Server scenario).
  std::string slo;
  std::string metric;  ///< "output_tokens_per_s", "total_tokens_per_s" or "requests_per_s".
  double value = 0;    ///< Measured, over all `devices`.
  bool held_out = false;
  SourceLocation where;  ///< The case in its file.
};

/// Reads a serving validation file; errors name the file and JSON pointer.
std::vector<ServingCase> parse_serving_cases(const std::string& text, const std::string& file);
std::vector<ServingCase> load_serving_cases(const std::string& path);

/// The case's metric as a run measured it.
double serving_metric(const ServeResult& result, const std::string& metric);

/// One case and what the simulator predicted for it.
struct ServingCheck {
  const ServingCase* measured = nullptr;
  double predicted = 0;
  double ratio() const { return predicted / measured->value; }
};

struct ServingSummary {
  std::vector<ServingCheck> checks;
  double median_abs_error = 0;  ///< Median of |predicted / measured − 1|.
  double worst_factor = 0;      ///< Largest max(ratio, 1 / ratio).
  std::size_t within_2x = 0;
  std::size_t held_out = 0;
  double held_out_median_abs_error = 0;
};

ServingSummary summarize_serving(std::vector<ServingCheck> checks);
std::string render_serving_validation_text(const ServingSummary& summary);
std::string render_serving_validation_json(const ServingSummary& summary);

}  // namespace capcalc
