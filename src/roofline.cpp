// The roofline's numbers (roofline.hpp): ceilings, the roof, and a point per layer or pass.
// Drawing them is report_roofline_svg.cpp's.
#include "capcalc/roofline.hpp"

#include <algorithm>
#include <stdexcept>

#include "capcalc/ranges.hpp"

namespace capcalc {
namespace {

// The same fallbacks as predict(): vector work of formats without vector units runs on fp32
// vector units (else the matrix units); attention scores of 8- and 4-bit formats on 16-bit
// matrix units.
double workload_roof(const Device& device, Precision precision, double sparsity_speedup) {
  const PeakRate& peak = device.peak(precision);
  double vector = peak.vector_flops_per_s;
  if (vector == 0) vector = device.peak(Precision::kFp32).vector_flops_per_s;
  if (vector == 0) vector = peak.matrix_flops_per_s;
  double score = 0;
  if (precision == Precision::kFp8 || precision == Precision::kInt8 ||
      precision == Precision::kInt4) {
    score = std::max(device.peak(Precision::kBf16).matrix_flops_per_s,
                     device.peak(Precision::kFp16).matrix_flops_per_s);
  }
  return std::max({vector, peak.matrix_flops_per_s * sparsity_speedup, score});
}

// The layers of `estimate` that did work, as points of `phase`; the others are counted skipped.
void add_layer_points(Roofline& r, const Graph& graph, const Estimate& estimate,
                      RooflinePhase phase) {
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    const LayerEstimate& e = estimate.layers[i];
    if (e.executed_flops <= 0 || e.bytes <= 0 || e.time_s <= 0) {
      r.skipped_layers++;
      continue;
    }
    RooflinePoint point;
    point.layer = i;
    point.name = graph.layers[i].name;
    point.op = graph.layers[i].op;
    // What the kernels run: a point never sits above its roof.
    point.flops = e.executed_flops;
    point.bytes = e.bytes;
    point.intensity_flops_per_byte = e.executed_flops / e.bytes;
    point.attained_flops_per_s = e.executed_flops / e.time_s;
    point.time_s = e.time_s;
    point.bound = e.bound;
    point.phase = phase;
    r.points.push_back(std::move(point));
  }
}

// A whole pass as one point: its FLOPs over its bytes and over its latency (floors,
// communication and all), so it sits below every layer's roof too.
RooflinePoint whole_pass(std::string name, const Estimate& e, RooflinePhase phase) {
  RooflinePoint point;
  point.name = std::move(name);
  point.op = "pass";
  point.flops = e.executed_flops;
  point.bytes = e.bytes;
  point.intensity_flops_per_byte = e.bytes > 0 ? e.executed_flops / e.bytes : 0;
  point.attained_flops_per_s = e.latency_s > 0 ? e.executed_flops / e.latency_s : 0;
  point.time_s = e.latency_s;
  point.bound = dominant_bound(e);
  point.phase = phase;
  return point;
}

}  // namespace

double Roofline::attainable_flops_per_s(double intensity_flops_per_byte) const {
  return std::min(roof_flops_per_s, intensity_flops_per_byte * bandwidth_bytes_per_s);
}

Roofline build_roofline(const Graph& graph, const Device& device, const PerformanceParams& params,
                        const Workload& workload, const Estimate& estimate) {
  if (estimate.layers.size() != graph.layers.size()) {
    throw std::invalid_argument("build_roofline: the estimate is not of this graph");
  }
  Roofline r;
  r.model = graph.name;
  r.device = device.name;
  r.precision = workload.precision;
  r.mode = workload.mode;
  r.profile = estimate.profile;
  r.batch = graph.batch;
  for (Precision p : device.precisions()) {
    const PeakRate& peak = device.peak(p);
    if (peak.matrix_flops_per_s > 0) {
      r.ceilings.push_back({p, true, peak.matrix_flops_per_s, p == workload.precision});
    }
    if (peak.vector_flops_per_s > 0) {
      r.ceilings.push_back({p, false, peak.vector_flops_per_s, p == workload.precision});
    }
  }
  std::stable_sort(r.ceilings.begin(), r.ceilings.end(),
                   [](const RooflineCeiling& a, const RooflineCeiling& b) {
                     return a.flops_per_s > b.flops_per_s;
                   });
  r.sparsity_speedup = estimate.sparsity_speedup;
  r.roof_flops_per_s = workload_roof(device, workload.precision, estimate.sparsity_speedup);
  r.bandwidth_bytes_per_s = device.memory_bandwidth_bytes_per_s;
  r.achievable_bandwidth_bytes_per_s =
      device.memory_bandwidth_bytes_per_s * params.memory_efficiency;
  r.matrix_efficiency = params.matrix_efficiency;
  r.memory_efficiency = params.memory_efficiency;
  add_layer_points(r, graph, estimate, RooflinePhase::kPass);
  return r;
}

Roofline build_serving_roofline(const Graph& prefill, const Graph& decode, const Device& device,
                                const PerformanceParams& params, const Workload& workload,
                                const ServingRequest& request, const ServingEstimate& serving) {
  Roofline r = build_roofline(prefill, device, params, workload, serving.prefill);
  if (serving.decode.layers.size() != decode.layers.size()) {
    throw std::invalid_argument("build_serving_roofline: the decode estimate is not of this graph");
  }
  for (RooflinePoint& point : r.points)
    point.phase = RooflinePhase::kPrefill;
  add_layer_points(r, decode, serving.decode, RooflinePhase::kDecode);
  r.serving = request;
  r.mean_context = serving.mean_context;
  r.passes.push_back(whole_pass("prefill", serving.prefill, RooflinePhase::kPrefill));
  r.passes.push_back(whole_pass("decode step", serving.decode, RooflinePhase::kDecode));
  return r;
}

}  // namespace capcalc
