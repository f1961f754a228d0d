#include "capcalc/predict.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "capcalc/error.hpp"

namespace capcalc {
namespace {

// Adam in one fused pass: read weights, gradients and both moments, write weights and moments
// (7 fp32 tensors); a low-precision gradient read and weight copy written cost about the same.
constexpr double kAdamBytesPerParam = 28;
// Adam's moments (2 x fp32), plus fp32 master weights when training below fp32.
constexpr double kAdamStateBytesPerParam = 8;
constexpr double kMasterWeightBytesPerParam = 4;

struct Rates {
  double matrix_flops_per_s = 0;  // Achievable, for MACs.
  double vector_flops_per_s = 0;  // Achievable, for other FLOPs.
  double bytes_per_s = 0;         // Achievable bandwidth.
};

Rates achievable_rates(const Device& device, const PerformanceParams& params, Precision precision) {
  if (!device.supports(precision)) {
    std::vector<std::string_view> names;
    for (Precision p : device.precisions()) names.push_back(precision_name(p));
    throw Error({}, fmt::format("{} has no {} peak in the hardware table (it has: {})", device.name,
                                precision_name(precision), fmt::join(names, ", ")));
  }
  const PeakRate& peak = device.peak(precision);
  const PeakRate& fp32 = device.peak(Precision::kFp32);
  Rates rates;
  // MACs run on matrix units when the device has them for this precision.
  rates.matrix_flops_per_s = peak.matrix_flops_per_s > 0
                                 ? peak.matrix_flops_per_s * params.matrix_efficiency
                                 : peak.vector_flops_per_s * params.vector_efficiency;
  // Elementwise work runs on vector units: this precision's, else fp32's (tf32 and the integer
  // formats have none of their own), else the matrix units.
  double vector = peak.vector_flops_per_s;
  if (vector == 0) vector = fp32.vector_flops_per_s;
  if (vector == 0) vector = peak.matrix_flops_per_s;
  rates.vector_flops_per_s = vector * params.vector_efficiency;
  rates.bytes_per_s = device.memory_bandwidth_bytes_per_s * params.memory_efficiency;
  return rates;
}

// Roofline time of one kernel (or a few): max(compute, memory) + overhead.
LayerEstimate roofline(double macs, double other_flops, double bytes, double kernels,
                       const Rates& rates, const PerformanceParams& params) {
  LayerEstimate e;
  e.flops = 2 * macs + other_flops;
  e.bytes = bytes;
  e.compute_s = 2 * macs / rates.matrix_flops_per_s + other_flops / rates.vector_flops_per_s;
  e.memory_s = bytes / rates.bytes_per_s;
  e.overhead_s = kernels * params.layer_overhead_s;
  e.time_s = std::max(e.compute_s, e.memory_s) + e.overhead_s;
  if (e.overhead_s > std::max(e.compute_s, e.memory_s)) {
    e.bound = Bound::kOverhead;
  } else {
    e.bound = e.compute_s >= e.memory_s ? Bound::kCompute : Bound::kMemory;
  }
  return e;
}

}  // namespace

std::string_view bound_name(Bound bound) {
  switch (bound) {
    case Bound::kCompute:
      return "compute";
    case Bound::kMemory:
      return "memory";
    case Bound::kOverhead:
      return "overhead";
    case Bound::kNone:
      break;
  }
  return "-";
}

std::string_view mode_name(Mode mode) { return mode == Mode::kTraining ? "training" : "inference"; }

Estimate estimate(const Graph& graph, const Device& device, const PerformanceParams& params,
                  const Workload& workload) {
  const Rates rates = achievable_rates(device, params, workload.precision);
  const double act_bytes = activation_bytes_per_element(workload.precision);
  const double weight_bytes = weight_bytes_per_element(workload.precision);
  const bool training = workload.mode == Mode::kTraining;

  Estimate result;
  result.layers.reserve(graph.layers.size());
  for (const Layer& layer : graph.layers) {
    if (layer.view) {
      result.layers.emplace_back();
      continue;
    }
    const LayerCounts& c = layer.counts;
    const double bytes = static_cast<double>(c.input_elements + c.output_elements) * act_bytes +
                         static_cast<double>(c.weight_elements_read) * weight_bytes;
    LayerEstimate e = roofline(static_cast<double>(c.macs), static_cast<double>(c.other_flops),
                               bytes, 1, rates, params);
    if (training) {
      // Backward: its own FLOPs, about twice the forward traffic (read the output gradient and
      // saved inputs, write the input and weight gradients), two kernels.
      const LayerEstimate b =
          roofline(static_cast<double>(c.backward_macs), static_cast<double>(c.backward_other_flops),
                   2 * bytes, 2, rates, params);
      e.flops += b.flops;
      e.bytes += b.bytes;
      e.compute_s += b.compute_s;
      e.memory_s += b.memory_s;
      e.overhead_s += b.overhead_s;
      e.time_s += b.time_s;
    }
    result.layers.push_back(e);
  }

  const GraphTotals totals = graph_totals(graph);
  const auto params_count = static_cast<double>(totals.params);
  for (const LayerEstimate& e : result.layers) {
    result.latency_s += e.time_s;
    result.flops += e.flops;
    result.bytes += e.bytes;
  }
  MemoryEstimate& memory = result.memory;
  memory.weight_bytes = params_count * weight_bytes;
  if (training) {
    result.optimizer_s = params_count * kAdamBytesPerParam / rates.bytes_per_s + params.layer_overhead_s;
    result.latency_s += result.optimizer_s;
    result.bytes += params_count * kAdamBytesPerParam;
    memory.gradient_bytes = params_count * weight_bytes;
    memory.optimizer_bytes = params_count * kAdamStateBytesPerParam;
    if (weight_bytes < 4) memory.optimizer_bytes += params_count * kMasterWeightBytesPerParam;
    memory.activation_bytes = static_cast<double>(totals.activation_elements) * act_bytes;
  } else {
    memory.activation_bytes = static_cast<double>(totals.peak_live_elements) * act_bytes;
  }
  memory.total_bytes =
      memory.weight_bytes + memory.gradient_bytes + memory.optimizer_bytes + memory.activation_bytes;
  result.fits = memory.total_bytes <= device.memory_bytes;
  result.throughput_per_s = result.latency_s > 0 ? static_cast<double>(graph.batch) / result.latency_s : 0;
  result.achieved_flops_per_s = result.latency_s > 0 ? result.flops / result.latency_s : 0;
  return result;
}

}  // namespace capcalc
