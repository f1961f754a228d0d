// Pieces shared by the renderers (private): the JSON objects several documents write (the
// model, the device, the workload, the layers), and the estimated-peak lines. One writer per
// object, so that `estimate`, `layers` and `compare` cannot drift apart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capcalc/hardware.hpp"
#include "capcalc/report.hpp"

namespace capcalc {

/// {"fp16": {"vector_flops_per_s": ..., "matrix_flops_per_s": ...}, ...} for the precisions the
/// device has, in FLOP/s.
nlohmann::ordered_json dense_peak_json(const Device& device);

/// {"fp16": {"vector": "why it is an estimate"}, ...} for the peaks no vendor document
/// states; {} if none.
nlohmann::ordered_json estimated_peaks_json(const Device& device);
/// {"fp8": clock}: the device's sustained matrix clocks, in Hz / `scale`; empty where none.
nlohmann::ordered_json sustained_clocks_json(const Device& device, double scale);

/// A count per sample: exact (an integer) when `batch` divides it, as counts are linear in the
/// batch; else a double.
nlohmann::ordered_json per_sample_json(std::int64_t value, std::int64_t batch);

/// The "model" object of `estimate` and `layers`: counts per sample and per batch, bytes at the
/// workload's precision, dims, operators counted as zero.
nlohmann::ordered_json model_json(const ReportInput& in);
/// The "device" object of `estimate` and `layers`: id, name, type, memory, dense peaks
/// (`hw show --format json` writes every figure instead, report_hardware.cpp).
nlohmann::ordered_json device_json(const Device& device);
/// The "layers" array of `estimate` and `layers`: counts per layer; with an estimate, its times.
nlohmann::ordered_json layers_json(const ReportInput& in);
/// The "workload" object of `estimate` (needs the estimate): the keys of budget and measurement
/// files.
nlohmann::ordered_json workload_json(const ReportInput& in);

/// Writes "devices", "tensor_parallel", "pipeline_parallel", "micro_batches", "virtual_stages"
/// and "zero_stage", in that order, from a Workload or a CompareTable (the same names).
template <typename Json, typename Parallelism>
void put_parallelism_json(Json& j, const Parallelism& p) {
  j["devices"] = p.devices;
  j["tensor_parallel"] = p.tensor_parallel;
  j["pipeline_parallel"] = p.pipeline_parallel;
  j["micro_batches"] = p.micro_batches;
  j["virtual_stages"] = p.virtual_stages;
  j["zero_stage"] = p.zero_stage;
}

/// "the fp16 vector peak is an unsourced estimate: why", one per estimated peak of `p`.
std::vector<std::string> estimate_lines(const Device& device, Precision p);

/// One short line per estimated peak of `p` that points to `capcalc hw show` for the why: an
/// estimate's output flags the figure without the essay.
std::vector<std::string> estimate_flags(const Device& device, Precision p);

/// The document as indented JSON text and a newline. Names from ONNX files are bytes the file
/// chose (protobuf does not check them): bytes that are not UTF-8 become U+FFFD instead of
/// nlohmann's type_error.
template <typename Json>
std::string json_text(const Json& doc) {
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace capcalc
