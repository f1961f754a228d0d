// Predicting time and memory of a model (a Graph) on a device, with a roofline per layer.
//
// Each layer's time is max(compute time, memory time) + a fixed overhead, where
//   compute time = 2·MACs / (matrix peak · matrix_efficiency)
//                + other FLOPs / (vector peak · vector_efficiency)
//   memory time  = bytes moved / (bandwidth · memory_efficiency)
// and the efficiencies and the overhead are the few global parameters of the device's type,
// stored in the hardware table (`performance_model`). Training adds the backward pass (its own
// FLOPs, twice the forward traffic, two kernels per layer) and the optimizer update.
#pragma once

#include <string>
#include <vector>

#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"

namespace capcalc {

enum class Mode { kInference, kTraining };

/// What limits a layer.
enum class Bound {
  kCompute,   ///< Arithmetic takes longest.
  kMemory,    ///< Memory traffic takes longest.
  kOverhead,  ///< The fixed per-kernel cost exceeds both (small layers).
  kNone,      ///< A view (reshape, flatten, dropout): no work.
};

std::string_view bound_name(Bound bound);  ///< "compute", "memory", "overhead", "-".
std::string_view mode_name(Mode mode);     ///< "inference", "training".

/// How the model is run.
struct Workload {
  Precision precision = Precision::kFp32;  ///< Weights, activations and math.
  Mode mode = Mode::kInference;
};

/// Time of one layer for one step (forward; forward + backward in training).
struct LayerEstimate {
  double flops = 0;        ///< FLOPs executed.
  double bytes = 0;        ///< Bytes moved.
  double compute_s = 0;
  double memory_s = 0;
  double overhead_s = 0;
  double time_s = 0;       ///< Roofline time plus overhead.
  Bound bound = Bound::kNone;
};

/// Memory needed on the device, in bytes.
struct MemoryEstimate {
  double weight_bytes = 0;
  double gradient_bytes = 0;    ///< Training only.
  double optimizer_bytes = 0;   ///< Training only: Adam's two moments plus fp32 master weights.
  double activation_bytes = 0;  ///< Peak live (inference) or saved for backward (training).
  double total_bytes = 0;
};

/// The prediction for one step over the graph's batch.
struct Estimate {
  std::vector<LayerEstimate> layers;  ///< Parallel to Graph::layers.
  double optimizer_s = 0;             ///< Training: the Adam update.
  double latency_s = 0;               ///< Inference: one forward pass; training: one step.
  double throughput_per_s = 0;        ///< Samples per second (batch / latency).
  double flops = 0;                   ///< FLOPs executed per step.
  double bytes = 0;                   ///< Bytes moved per step.
  double achieved_flops_per_s = 0;    ///< flops / latency.
  MemoryEstimate memory;
  bool fits = false;                  ///< memory.total_bytes <= device memory.
};

/// Predicts one step. Throws capcalc::Error if the device cannot compute in the precision.
Estimate estimate(const Graph& graph, const Device& device, const PerformanceParams& params,
                  const Workload& workload);

}  // namespace capcalc
