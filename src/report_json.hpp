// JSON pieces shared by the renderers (private).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "capcalc/hardware.hpp"

namespace capcalc {

/// {"fp16": {"vector_flops_per_s": ..., "matrix_flops_per_s": ...}, ...} for the precisions the
/// device has, in FLOP/s.
nlohmann::ordered_json dense_peak_json(const Device& device);

/// The document as indented JSON text and a newline. Names from ONNX files are bytes the file
/// chose (protobuf does not check them): bytes that are not UTF-8 become U+FFFD instead of
/// nlohmann's type_error.
template <typename Json>
std::string json_text(const Json& doc) {
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace capcalc
