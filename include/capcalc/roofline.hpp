// The roofline picture of a prediction: the device's compute ceilings and bandwidth slope, and
// each layer as a point at its arithmetic intensity and attained rate.
//
// A layer that does F FLOPs and moves B bytes in time t sits at
//   x = intensity = F / B      (FLOP/byte)
//   y = attained  = F / t      (FLOP/s)
// and can never be above the roof min(peak, x · bandwidth) (Williams, Waterman and Patterson,
// "Roofline: an insightful visual performance model", CACM 52(4), 2009). The points come from an
// Estimate, so they sit below the roof by the performance model's efficiencies and floors.
//
// build_roofline() computes the numbers (tests check them); render_roofline_svg() only draws
// them. Both are pure: the SVG is returned as a string for the CLI to write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/predict.hpp"

namespace capcalc {

/// One horizontal compute ceiling: a dense peak of one precision on one kind of unit.
struct RooflineCeiling {
  Precision precision = Precision::kFp32;
  bool matrix_units = false;  ///< Matrix units (tensor cores, MXU, AMX); else vector units.
  double flops_per_s = 0;     ///< The dense peak.
  bool workload = false;      ///< Of the workload's precision (drawn highlighted).
};

/// Which pass of the workload a point belongs to: LLM serving has two, the prompt's prefill and a
/// decode step (one token per sequence over the KV cache).
enum class RooflinePhase { kPass, kPrefill, kDecode };

/// One layer of the estimate as a point (or, in Roofline::passes, a whole pass).
struct RooflinePoint {
  std::size_t layer = 0;  ///< Index into Graph::layers and Estimate::layers.
  std::string name;       ///< The layer's name (may hold any characters).
  std::string op;
  double flops = 0;                     ///< FLOPs executed in the step (LayerEstimate::flops).
  double bytes = 0;                     ///< Bytes moved in the step (LayerEstimate::bytes).
  double intensity_flops_per_byte = 0;  ///< flops / bytes.
  double attained_flops_per_s = 0;      ///< flops / time_s.
  double time_s = 0;                    ///< LayerEstimate::time_s.
  Bound bound = Bound::kNone;
  RooflinePhase phase = RooflinePhase::kPass;
};

/// Everything a roofline picture shows.
struct Roofline {
  std::string model;   ///< Graph::name.
  std::string device;  ///< Device::name.
  Precision precision = Precision::kFp32;
  Mode mode = Mode::kInference;
  Profile profile = Profile::kEager;
  std::int64_t batch = 1;
  /// Every dense peak the device has, one per precision and unit kind, highest first.
  std::vector<RooflineCeiling> ceilings;
  /// The highest rate the workload's layers can use: the workload precision's matrix peak (times
  /// the 2:4 speedup when that applied), its vector peak, or the peaks predict() falls back to
  /// (fp32 vector units; 16-bit matrix units for attention scores in 8- and 4-bit formats).
  double roof_flops_per_s = 0;
  double bandwidth_bytes_per_s = 0;             ///< Peak memory bandwidth.
  double achievable_bandwidth_bytes_per_s = 0;  ///< Bandwidth × memory_efficiency.
  double matrix_efficiency = 0;                 ///< PerformanceParams, for the caption.
  double memory_efficiency = 0;
  double sparsity_speedup = 1;  ///< Estimate::sparsity_speedup (1: dense).
  /// Layers with FLOPs and bytes, in graph order.
  std::vector<RooflinePoint> points;
  /// Layers left out: no FLOPs or no bytes (views; layers fused away by a compiled profile).
  std::size_t skipped_layers = 0;
  /// LLM serving: the request, the mean decode step's cached tokens, and one point per whole pass
  /// (prefill, then the decode step) at its FLOPs / bytes and FLOPs / latency. Empty otherwise.
  std::optional<ServingRequest> serving;
  std::int64_t mean_context = 0;
  std::vector<RooflinePoint> passes;

  /// Intensity where the bandwidth slope meets roof_flops_per_s, in FLOP/byte.
  double ridge_flops_per_byte() const { return roof_flops_per_s / bandwidth_bytes_per_s; }
  /// The roof at an intensity: min(roof_flops_per_s, intensity × bandwidth), in FLOP/s.
  double attainable_flops_per_s(double intensity_flops_per_byte) const;
};

/// The roofline of an estimate (`estimate` must be estimate(graph, device, params, workload)).
Roofline build_roofline(const Graph& graph, const Device& device, const PerformanceParams& params,
                        const Workload& workload, const Estimate& estimate);

/// The roofline of LLM serving: the prefill's layers and the decode step's as points of their
/// phase, and both passes whole. `prefill` and `decode` are the graphs estimate_serving() built
/// (the prompt; one token over `serving.mean_context` cached tokens, prefill-only layers dropped).
Roofline build_serving_roofline(const Graph& prefill, const Graph& decode, const Device& device,
                                const PerformanceParams& params, const Workload& workload,
                                const ServingRequest& request, const ServingEstimate& serving);

/// How to draw a roofline.
struct RooflineSvgOptions {
  /// The heaviest layers (by time) labelled with their names; a label that finds no free place
  /// near its dot is left out. Layers that differ only in their numbers and sit on one spot
  /// (`layers.0.mlp` ... `layers.31.mlp`) share one label, "layers.N.mlp x32".
  std::size_t labels = 5;
  /// true: a standalone SVG 1.1 file (xmlns, version). false: for inlining in HTML5, whose parser
  /// puts <svg> in the SVG namespace itself (no xmlns, so no URL in the page).
  bool standalone = true;
};

/// The roofline as an SVG document (UTF-8, log-log axes, no scripts, no external references).
std::string render_roofline_svg(const Roofline& roofline, const RooflineSvgOptions& options = {});

}  // namespace capcalc
