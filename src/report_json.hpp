// JSON pieces shared by the renderers (private).
#pragma once

#include <nlohmann/json.hpp>

#include "capcalc/hardware.hpp"

namespace capcalc {

/// {"fp16": {"vector_flops_per_s": ..., "matrix_flops_per_s": ...}, ...} for the precisions the
/// device has, in FLOP/s.
nlohmann::ordered_json dense_peak_json(const Device& device);

}  // namespace capcalc
