#include "predict_rates.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/predict.hpp"

namespace capcalc {

// Elements in the 16 bytes that NVIDIA's GEMM guide asks each dimension to be a multiple of
// ("Tensor Core Requirements"); 0 where there is no such rule (other vendors, precisions
// without one, no matrix peak).
std::int64_t alignment_multiple(const Device& device, Precision precision) {
  if (device.vendor != "nvidia" || device.peak(precision).matrix_flops_per_s <= 0) return 0;
  switch (precision) {
    case Precision::kFp16:
    case Precision::kBf16:
      return 8;
    case Precision::kTf32:
      return 4;
    case Precision::kFp8:
    case Precision::kInt8:
      return 16;
    default:
      return 0;
  }
}

// The first feature dimension of a product with weights that is not a multiple of `multiple`:
// linear layers and MatMuls by a weight, whose features are the last axis (convolutions are
// channels-first), have the GEMM's N and K as their output and input features (M is the
// tokens, which cuBLAS tiles whatever their number).
std::optional<Misalignment> misalignment(const Layer& layer, std::int64_t multiple,
                                         bool padded_outputs) {
  const std::optional<GemmView>& gemm = layer.traits.gemm;
  if (multiple <= 0 || layer.view || !gemm || layer.counts.weight_elements_read == 0 ||
      layer.output.empty() || layer.output.back() != gemm->n) {
    return std::nullopt;
  }
  if (!padded_outputs && gemm->n % multiple != 0) return Misalignment{"output features", gemm->n};
  if (gemm->k % multiple != 0) return Misalignment{"input features", gemm->k};
  return std::nullopt;
}

// Matrix units work on tiles: a product whose output width N or reduction K is not a multiple
// of the tile wastes the rest of it (tile quantisation; NVIDIA's "Matrix Multiplication
// Background" guide: 128-wide output tiles, 64-deep reduction slices on tensor cores).
double tile_utilisation(double n, double k) {
  const auto fill = [](double size, double tile) { return size / (std::ceil(size / tile) * tile); };
  return fill(n, kMatrixTileN) * fill(k, kMatrixTileK);
}

// Wave quantisation (NVIDIA's "Matrix Multiplication Background" guide): a product's output
// tiles (kMatrixTileN square) are spread over the device's compute units a wave at a time, and
// a last partial wave leaves units idle. Fewer tiles than units: the reduction is split over
// the idle units in slices of kMatrixTileK (cuBLAS's split-K, CUTLASS's stream-K), as far as
// it goes. CPUs block GEMMs per core differently: no penalty there, nor without a unit count.
double wave_utilisation(const GemmView& gemm, const Device& device) {
  if (device.compute_units <= 0 || device.type == DeviceType::kCpu) return 1;
  const auto units = static_cast<double>(device.compute_units);
  const double tiles = std::ceil(static_cast<double>(gemm.m) / kMatrixTileN) *
                       std::ceil(static_cast<double>(gemm.n) / kMatrixTileN) *
                       static_cast<double>(gemm.count);
  if (tiles >= units) return tiles / (std::ceil(tiles / units) * units);
  const double slices = std::ceil(static_cast<double>(gemm.k) / kMatrixTileK);
  return std::min(units, tiles * std::min(slices, std::floor(units / tiles))) / units;
}

// 8-bit and 4-bit formats quantise weights and GEMM inputs; attention's products of two
// activations (QKᵀ, AV) stay in 16 bits in the common stacks (Transformer Engine's FP8
// recipe, TensorRT's fused MHA), so they run at the 16-bit matrix rate.
// Each at the device's sustained matrix clock for that precision, where its vendor states one.
double score_matrix_peak(const Device& device, Precision precision) {
  const auto sustained = [&](Precision p) {
    return device.peak(p).matrix_flops_per_s * device.matrix_clock_fraction(p);
  };
  const bool narrow = precision == Precision::kFp8 || precision == Precision::kInt8 ||
                      precision == Precision::kInt4;
  if (!narrow) return sustained(precision);
  return std::max(sustained(Precision::kBf16), sustained(Precision::kFp16));
}

std::string weight_only_hint(const Device& device, Precision precision) {
  // Weight-only quantisation stores narrow weights and computes in 16 bits: what people who
  // ask for int4 or int8 on such a device usually mean.
  if (device.supports(precision)) return "";
  if (precision != Precision::kInt4 && precision != Precision::kInt8) return "";
  for (Precision math : {Precision::kBf16, Precision::kFp16}) {
    if (device.supports(math)) {
      return fmt::format("; for {0} weights with {1} math: --weight-precision {0} --precision {1}",
                         precision_name(precision), precision_name(math));
    }
  }
  return "";
}

Rates achievable_rates(const Device& device, const PerformanceParams& params, Precision precision) {
  if (!device.supports(precision)) {
    std::vector<std::string_view> names;
    for (Precision p : device.precisions())
      names.push_back(precision_name(p));
    std::string message =
        fmt::format("{} has no {} peak in the hardware table (it has: {})", device.name,
                    precision_name(precision), fmt::join(names, ", "));
    throw Error({}, message + weight_only_hint(device, precision));
  }
  const PeakRate& peak = device.peak(precision);
  const PeakRate& fp32 = device.peak(Precision::kFp32);
  Rates rates;
  // Vector units: this precision's, else fp32's (tf32 and the integer formats have none of
  // their own), else the matrix units.
  double vector = peak.vector_flops_per_s;
  if (vector == 0) vector = fp32.vector_flops_per_s;
  if (vector == 0) vector = peak.matrix_flops_per_s;
  rates.vector_flops_per_s = vector * params.vector_efficiency;
  // Matrix units run at the clock the device holds under sustained matrix work (AMD measures
  // MI300X's at 1,115-1,230 MHz against the 2,100 its peaks are stated at), where stated.
  const double matrix = peak.matrix_flops_per_s * device.matrix_clock_fraction(precision);
  rates.matrix_flops_per_s = matrix * params.matrix_efficiency;
  double score = score_matrix_peak(device, precision);
  if (score == 0) score = matrix;
  rates.score_flops_per_s = score * params.matrix_efficiency;
  rates.bytes_per_s = device.memory_bandwidth_bytes_per_s * params.memory_efficiency;
  return rates;
}

}  // namespace capcalc
