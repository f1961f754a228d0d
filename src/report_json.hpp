// Pieces shared by the renderers (private): JSON fragments and the estimated-peak lines.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capcalc/hardware.hpp"

namespace capcalc {

/// {"fp16": {"vector_flops_per_s": ..., "matrix_flops_per_s": ...}, ...} for the precisions the
/// device has, in FLOP/s.
nlohmann::ordered_json dense_peak_json(const Device& device);

/// {"fp16": {"vector": "why it is an estimate"}, ...} for the peaks no vendor document
/// states; {} if none.
nlohmann::ordered_json estimated_peaks_json(const Device& device);

/// "the fp16 vector peak is an unsourced estimate: why", one per estimated peak of `p`.
std::vector<std::string> estimate_lines(const Device& device, Precision p);

/// The document as indented JSON text and a newline. Names from ONNX files are bytes the file
/// chose (protobuf does not check them): bytes that are not UTF-8 become U+FFFD instead of
/// nlohmann's type_error.
template <typename Json>
std::string json_text(const Json& doc) {
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace capcalc
