// Checking predictions against published measurements (data/validation/measurements.json).
//
// Each measurement names a model file, its dims, a device, a precision, a mode, an
// implementation profile and one metric with its published value. capcalc predicts the same
// metric the same way for every case; nothing is tuned per case.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capcalc/error.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/model.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/ranges.hpp"
#include "capcalc/runtime.hpp"

namespace capcalc {

/// What a published figure measures.
enum class Metric {
  kThroughput,       ///< Samples per second ("per": total over devices, or per device).
  kLatency,          ///< Seconds for one batch.
  kTokensPerSecond,  ///< Training tokens per second.
  kMfu,              ///< Model FLOPs utilisation: model FLOP/s / dense matrix peak.
  kTflopsPerDevice,  ///< Model TFLOP/s per device.
  kGpuHours,         ///< Device-hours for `tokens` training tokens.
  // LLM serving of `batch` sequences of prompt_tokens + output_tokens (estimate_serving):
  kTtft,                   ///< Time to first token: the prefill, seconds.
  kInterTokenLatency,      ///< Seconds per generated token after the first (a decode step).
  kRequestLatency,         ///< Seconds from the request to its last token.
  kOutputTokensPerSecond,  ///< Generated tokens per second over the requests' whole time
                           ///< (prefill included), all sequences ("per": total or per device).
};

/// Whether the metric is a duration (smaller is faster).
bool is_time_metric(Metric metric);

/// One published measurement.
struct Measurement {
  std::string id;
  std::string model;                         ///< File name in the models directory.
  std::map<std::string, std::int64_t> dims;  ///< Per-device batch and other dims.
  std::string device;                        ///< Id in the hardware table.
  /// How it ran: precision, training or inference, profile and the parallel layout, as
  /// estimate() takes them (the batch is one replica's micro-batch, in dims). The profile is
  /// always set (eager when the case names none).
  Workload workload;
  std::string runtime;  ///< Id or alias in the runtime table; empty: the profile alone.
  Metric metric = Metric::kThroughput;
  bool per_device = false;       ///< Throughput-like metrics: per device or total.
  double value = 0;              ///< As published, SI units.
  std::optional<double> tokens;  ///< kGpuHours: training tokens.
  /// LLM serving metrics: tokens per sequence; the batch (dims) is the concurrent sequences.
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
  /// Training: multi-token-prediction modules the run trained beside a Hugging Face decoder
  /// (ModelOptions::mtp_layers); 0: none.
  std::int64_t mtp_layers = 0;
  /// Added after the parameters that move it were fixed, and never used to set them: its error
  /// is an out-of-sample check.
  bool held_out = false;
  std::string source;
  /// The case in its file (`meas.json`, `/cases/3`), for errors found after parsing (an
  /// unknown device or runtime); empty for cases built in code.
  SourceLocation where{};
};

/// One case checked.
struct ValidationResult {
  const Measurement* measurement = nullptr;
  double predicted = 0;
  double ratio = 0;     ///< predicted / measured.
  PredictionClass cls;  ///< The prediction's profile, dominant bound and device type.
  /// Measured time over predicted time (predicted over measured for rate metrics).
  double time_ratio() const;
};

struct ValidationSummary {
  std::vector<ValidationResult> results;
  double median_abs_error = 0;           ///< Median of |predicted / measured - 1|.
  double worst_factor = 0;               ///< Largest max(ratio, 1 / ratio).
  std::size_t within_2x = 0;             ///< Cases with a factor of 2 or less.
  std::size_t held_out = 0;              ///< Held-out cases among them.
  double held_out_median_abs_error = 0;  ///< The median over the held-out cases alone.
};

/// The residuals of validated cases, for derive_ranges().
std::vector<Residual> residuals(const ValidationSummary& summary);

std::string_view metric_name(Metric metric);

/// Whether each case must say where its figure was published ("source"): the validation
/// set's cases must; a user's own records for `calibrate` need not.
enum class Provenance { kRequired, kOptional };

/// Parses measurements from JSON text; `file` names it in messages. Problems are
/// capcalc::Error with file and JSON pointer (line:col for a syntax error).
std::vector<Measurement> parse_measurements(std::string_view text, const std::string& file,
                                            Provenance provenance = Provenance::kRequired);

/// The case's device in `table`; an unknown name is a capcalc::Error at the case's "device"
/// key (`meas.json:/cases/3/device: unknown device "z100"; did you mean "v100"?`).
const Device& measured_device(const Measurement& m, const HardwareTable& table);

/// Reads a measurement file; problems are capcalc::Error with file and JSON pointer.
std::vector<Measurement> load_measurements(const std::string& path,
                                           Provenance provenance = Provenance::kRequired);

/// The graphs a validation loaded, by file and options: a caller that validates the same cases
/// many times over (calibrate's fit, which varies only the device's parameters) reads and
/// expands each model once. Holds every graph it loaded until it goes.
class ModelCache {
 public:
  /// The graph of `path` under `options`, loaded by `load` the first time.
  template <typename Load>
  const Graph& get(const std::string& path, const ModelOptions& options, Load&& load) {
    const std::string key = cache_key(path, options);
    auto it = graphs_.find(key);
    if (it == graphs_.end()) it = graphs_.emplace(key, load()).first;
    return it->second;
  }
  std::size_t size() const { return graphs_.size(); }

 private:
  static std::string cache_key(const std::string& path, const ModelOptions& options);
  std::map<std::string, Graph> graphs_;
};

/// Predicts every measurement with the table's global parameters and summarises the errors.
/// With a cache, models come from it and what is loaded goes into it.
ValidationSummary validate(const std::vector<Measurement>& measurements, const HardwareTable& table,
                           const std::string& models_dir, const RuntimeTable* runtimes = nullptr,
                           ModelCache* cache = nullptr);

}  // namespace capcalc
