// What a device achieves on a product: NVIDIA's alignment rule, tile and wave quantisation,
// and the achievable matrix, vector and memory rates for a precision (src/predict_rates.cpp).
// Internal to the performance model (src/predict*.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"

namespace capcalc {

/// Elements in the 16 bytes that NVIDIA's GEMM guide asks each dimension to be a multiple of;
/// 0 where there is no such rule.
std::int64_t alignment_multiple(const Device& device, Precision precision);

struct Misalignment {
  const char* dimension = "";
  std::int64_t size = 0;
};

/// Whether a runtime's vocabulary padding (Runtime::vocab_padding; 0: none) keeps the output
/// layer's features a multiple of `multiple`.
inline bool pads_to(std::int64_t padding, std::int64_t multiple) {
  return padding > 0 && multiple > 0 && padding % multiple == 0;
}

/// The first feature dimension of a product with weights that is not a multiple of `multiple`;
/// `padded_outputs`: the runtime pads its output features to one (only its inputs can miss).
std::optional<Misalignment> misalignment(const Layer& layer, std::int64_t multiple,
                                         bool padded_outputs = false);

/// The useful fraction of the matrix tiles of a product N wide with a reduction of K.
double tile_utilisation(double n, double k);

/// The useful fraction of the device's compute units over the product's waves of tiles.
double wave_utilisation(const GemmView& gemm, const Device& device);

struct Rates {
  double matrix_flops_per_s = 0;  // Achievable, for weight MACs on matrix units.
  double score_flops_per_s = 0;   // Achievable, for activation x activation MACs (attention).
  double vector_flops_per_s = 0;  // Achievable, for other FLOPs (and MACs without matrix units).
  double bytes_per_s = 0;         // Achievable bandwidth.
};

/// The matrix peak of attention's products of two activations at `precision`.
double score_matrix_peak(const Device& device, Precision precision);

/// The rates the device achieves at `precision` (throws capcalc::Error when it lacks it).
Rates achievable_rates(const Device& device, const PerformanceParams& params, Precision precision);

/// For int4 or int8 on a device without that math: how to ask for weight-only quantisation
/// instead ("; for int4 weights with bf16 math: --weight-precision int4 --precision bf16"); ""
/// otherwise.
std::string weight_only_hint(const Device& device, Precision precision);

}  // namespace capcalc
