// How a model that does not fit a device's memory would fit: the smallest change of each kind
// (tensor parallelism; in training also checkpointing, ZeRO over replicas, pipeline stages),
// each found by predicting the changed workload with estimate(), never by a rule of thumb.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/predict.hpp"

namespace capcalc {

/// One change to the workload that alone makes the model fit.
struct FitOption {
  std::string flags;                 ///< The flags to add, e.g. "--tp 2", "--devices 8 --zero 3".
  std::int64_t devices = 1;          ///< Devices the changed workload takes in all.
  std::int64_t replica_devices = 1;  ///< Of those, devices per model replica (T x P).
};

/// What it would take to fit, for an estimate that does not.
struct FitAdvice {
  /// Inference: the whole model's weights; training: its weights, gradients and optimizer
  /// state (all devices together, before any splitting), bytes.
  double state_bytes = 0;
  /// Fewest devices first; in training at most one per kind. Empty: none found within the
  /// search's limits (up to kMaxFitDevices devices), e.g. activations alone too large.
  std::vector<FitOption> options;
  /// Inference with data-parallel replicas: each holds the whole model, so --devices alone
  /// cannot make it fit.
  bool replicas_do_not_split = false;
  /// Inference: the routed experts stored as the model's checkpoint stores them
  /// (Graph::expert_weight_storage, e.g. gpt-oss's MXFP4), where that fits as the workload is
  /// laid out and no weight storage was given.
  std::optional<FitOption> checkpoint_storage;
};

/// The largest group the search tries.
constexpr std::int64_t kMaxFitDevices = 1024;

/// The advice for `workload` on `device`; no options when it already fits. Throws what
/// estimate() throws for the workload as given.
FitAdvice advise_fit(const Graph& graph, const Device& device, const PerformanceParams& params,
                     const Workload& workload);

/// "does not fit: 138 GB of weights; needs at least 2 x NVIDIA H100 SXM5 80GB: try --tp 2" (or
/// the training options, or that replicas do not split a model): one line, no newline.
std::string fit_advice_text(const FitAdvice& advice, const Device& device, Mode mode);

}  // namespace capcalc
