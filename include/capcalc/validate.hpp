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
#include <vector>

#include "capcalc/hardware.hpp"

namespace capcalc {

/// What a published figure measures.
enum class Metric {
  kThroughput,       ///< Samples per second ("per": total over devices, or per device).
  kLatency,          ///< Seconds for one batch.
  kTokensPerSecond,  ///< Training tokens per second.
  kMfu,              ///< Model FLOPs utilisation: model FLOP/s / dense matrix peak.
  kTflopsPerDevice,  ///< Model TFLOP/s per device.
  kGpuHours,         ///< Device-hours for `tokens` training tokens.
};

/// One published measurement.
struct Measurement {
  std::string id;
  std::string model;                         ///< File name in the models directory.
  std::map<std::string, std::int64_t> dims;  ///< Per-device batch and other dims.
  std::string device;                        ///< Id in the hardware table.
  std::int64_t devices = 1;                  ///< All devices.
  std::int64_t tensor_parallel = 1;  ///< Devices per model replica (the batch is a replica's).
  bool checkpointing = false;        ///< Activation recomputation (training).
  Precision precision = Precision::kFp32;
  bool training = false;
  Profile profile = Profile::kEager;
  Metric metric = Metric::kThroughput;
  bool per_device = false;       ///< Throughput-like metrics: per device or total.
  double value = 0;              ///< As published, SI units.
  std::optional<double> tokens;  ///< kGpuHours: training tokens.
  std::string source;
};

/// One case checked.
struct ValidationResult {
  const Measurement* measurement = nullptr;
  double predicted = 0;
  double ratio = 0;  ///< predicted / measured.
};

struct ValidationSummary {
  std::vector<ValidationResult> results;
  double median_abs_error = 0;  ///< Median of |predicted / measured - 1|.
  double worst_factor = 0;      ///< Largest max(ratio, 1 / ratio).
  std::size_t within_2x = 0;    ///< Cases with a factor of 2 or less.
};

std::string_view metric_name(Metric metric);

/// Reads a measurement file; problems are capcalc::Error with file and JSON pointer.
std::vector<Measurement> load_measurements(const std::string& path);

/// Predicts every measurement with the table's global parameters and summarises the errors.
ValidationSummary validate(const std::vector<Measurement>& measurements, const HardwareTable& table,
                           const std::string& models_dir);

}  // namespace capcalc
