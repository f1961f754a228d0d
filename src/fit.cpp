#include "capcalc/fit.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "capcalc/units.hpp"

#include "predict_step.hpp"

namespace capcalc {
namespace {

bool fits(const Graph& graph, const Device& device, const PerformanceParams& params,
          const Workload& workload) {
  return estimate(graph, device, params, workload).fits;
}

// The first candidate (ascending) for which `fits_with` holds, by bisection: more devices never
// need more memory per device, so the predicate is taken as monotone; the answer is checked.
template <typename Predicate>
std::optional<std::int64_t> first_fit(const std::vector<std::int64_t>& candidates,
                                      Predicate fits_with) {
  if (candidates.empty() || !fits_with(candidates.back())) return std::nullopt;
  std::size_t lo = 0;
  std::size_t hi = candidates.size() - 1;  // Fits.
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (fits_with(candidates[mid])) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return candidates[hi];
}

// Activation checkpointing (every block's, not selected modules'), of the fewest blocks that
// fit: the first N of each pipeline chunk (Megatron-Core's recompute_method block), where fewer
// than all of a chunk's blocks suffice. More checkpointed blocks never keep more, so the
// bisection holds.
std::optional<FitOption> by_checkpointing(const Graph& graph, const Device& device,
                                          const PerformanceParams& params,
                                          const Workload& workload) {
  Workload w = workload;
  w.checkpointing = true;
  w.checkpoint_layers = 0;
  w.recompute = 0;
  if (!fits(graph, device, params, w)) return std::nullopt;
  const std::int64_t chunks = workload.pipeline_parallel * workload.virtual_stages;
  const std::int64_t blocks = detail::block_count(graph);
  const std::int64_t per_chunk = (blocks + chunks - 1) / chunks;
  std::vector<std::int64_t> fewer;
  for (std::int64_t n = std::max<std::int64_t>(1, workload.checkpoint_layers + 1); n < per_chunk;
       ++n) {
    fewer.push_back(n);
  }
  const std::optional<std::int64_t> least = first_fit(fewer, [&](std::int64_t n) {
    w.checkpoint_layers = n;
    return fits(graph, device, params, w);
  });
  std::string text;
  if (least) {
    text = workload.checkpoint_layers > 0
               ? fmt::format("--checkpoint-layers {}", *least)
               : fmt::format("--checkpointing --checkpoint-layers {}{}", *least,
                             workload.recompute != 0 ? " instead of --recompute" : "");
  } else {
    text = workload.checkpoint_layers > 0
               ? "--checkpointing of every block (no --checkpoint-layers)"
           : workload.recompute != 0 ? "--checkpointing instead of --recompute"
                                     : "--checkpointing";
  }
  return FitOption{
      text, workload.devices,
      workload.tensor_parallel * workload.pipeline_parallel * workload.context_parallel};
}

// The smallest tensor-parallel degree above the current one that splits the attention heads
// and fits, keeping the replicas and stages.
std::optional<FitOption> by_tensor_parallel(const Graph& graph, const Device& device,
                                            const PerformanceParams& params, Workload w) {
  const std::int64_t replicas = data_parallel_replicas(w);
  const std::int64_t others = replicas * w.pipeline_parallel * w.context_parallel;
  std::vector<std::int64_t> degrees;
  // Bounds as quotients: a user's --devices may be near 2^63.
  for (std::int64_t t = w.tensor_parallel + 1; t <= kMaxFitDevices / others; ++t) {
    if (!tensor_parallel_problem(graph, t)) degrees.push_back(t);
  }
  const auto t = first_fit(degrees, [&](std::int64_t degree) {
    w.tensor_parallel = degree;
    w.devices = degree * others;
    return fits(graph, device, params, w);
  });
  if (!t) return std::nullopt;
  // Replicas stay: --devices counts them all.
  const std::string flags = replicas > 1 ? fmt::format("--tp {} --devices {}", *t, *t * others)
                                         : fmt::format("--tp {}", *t);
  return FitOption{flags, *t * others, *t * w.pipeline_parallel * w.context_parallel};
}

// The fewest pipeline stages (training) that fit, at most one per layer; interleaved, only
// those that divide the micro-batches (the schedule's rule).
std::optional<FitOption> by_pipeline(const Graph& graph, const Device& device,
                                     const PerformanceParams& params, Workload w) {
  const std::int64_t others = data_parallel_replicas(w) * w.tensor_parallel * w.context_parallel;
  const auto layers = static_cast<std::int64_t>(graph.layers.size());
  std::vector<std::int64_t> stages;
  for (std::int64_t p = w.pipeline_parallel + 1; p <= layers && p <= kMaxFitDevices / others; ++p) {
    if (w.virtual_stages == 1 || w.micro_batches % p == 0) stages.push_back(p);
  }
  const auto p = first_fit(stages, [&](std::int64_t count) {
    w.pipeline_parallel = count;
    w.devices = count * others;
    return fits(graph, device, params, w);
  });
  if (!p) return std::nullopt;
  return FitOption{fmt::format("--pp {}", *p), *p * others,
                   *p * w.tensor_parallel * w.context_parallel};
}

// ZeRO shards the training state over the replicas: the fewest replicas (the current number,
// or powers of two above it) that fit at the lowest stage that does.
std::optional<FitOption> by_zero(const Graph& graph, const Device& device,
                                 const PerformanceParams& params, Workload w) {
  const std::int64_t group = w.tensor_parallel * w.pipeline_parallel * w.context_parallel;
  std::vector<std::int64_t> counts;
  const std::int64_t current = data_parallel_replicas(w);
  if (current > 1) counts.push_back(current);
  for (std::int64_t r = 2; r <= kMaxFitDevices / group; r *= 2) {
    // Expert parallelism splits the experts over replicas x context_parallel.
    if (r > current && r * w.context_parallel % w.expert_parallel == 0) counts.push_back(r);
  }
  std::optional<FitOption> best;
  for (int stage = w.zero_stage + 1; stage <= 3; ++stage) {
    const auto r = first_fit(counts, [&](std::int64_t replicas) {
      w.zero_stage = stage;
      w.devices = replicas * group;
      return fits(graph, device, params, w);
    });
    if (r && (!best || *r * group < best->devices)) {
      best = FitOption{fmt::format("--devices {} --zero {}", *r * group, stage), *r * group, group};
    }
  }
  return best;
}

// Expert parallelism splits the routed experts over the devices that hold the same weights,
// adding none: the smallest degree above the current one (powers of two dividing the experts
// and replicas x context_parallel) that fits.
std::optional<FitOption> by_expert_parallel(const Graph& graph, const Device& device,
                                            const PerformanceParams& params, Workload w) {
  const std::int64_t shards = data_parallel_shards(w);
  std::vector<std::int64_t> degrees;
  for (std::int64_t e = w.expert_parallel * 2; e <= shards; e *= 2) {
    if (shards % e == 0 && !expert_parallel_problem(graph, e)) degrees.push_back(e);
  }
  const auto e = first_fit(degrees, [&](std::int64_t degree) {
    w.expert_parallel = degree;
    return fits(graph, device, params, w);
  });
  if (!e) return std::nullopt;
  return FitOption{fmt::format("--ep {}", *e), w.devices,
                   w.tensor_parallel * w.pipeline_parallel * w.context_parallel};
}

// Inference: the routed experts at the storage the model's checkpoint states for them, where
// no weight storage was given.
std::optional<FitOption> by_checkpoint_storage(const Graph& graph, const Device& device,
                                               const PerformanceParams& params, Workload w) {
  const std::optional<Precision> storage = parse_precision(graph.expert_weight_storage);
  if (!storage || w.weight_precision || w.expert_weight_precision || !has_experts(graph)) {
    return std::nullopt;
  }
  w.expert_weight_precision = storage;
  if (!fits(graph, device, params, w)) return std::nullopt;
  return FitOption{fmt::format("--expert-weight-precision {}", precision_name(*storage)), w.devices,
                   w.tensor_parallel};
}

}  // namespace

FitAdvice advise_fit(const Graph& graph, const Device& device, const PerformanceParams& params,
                     const Workload& workload) {
  FitAdvice advice;
  const Estimate e = estimate(graph, device, params, workload);
  if (e.fits) return advice;
  // The whole model's state: a device's share with nothing sharded but by T and P (ZeRO and
  // expert parallelism split it further), times T x P.
  Workload whole = workload;
  whole.zero_stage = 0;
  whole.expert_parallel = 1;
  whole.moe_dispatcher = MoeDispatcher::kAllToAll;
  const Estimate unsharded = estimate(graph, device, params, whole);
  const double split = static_cast<double>(workload.tensor_parallel * workload.pipeline_parallel);
  advice.state_bytes = (unsharded.memory.weight_bytes + unsharded.memory.gradient_bytes +
                        unsharded.memory.optimizer_bytes) *
                       split;
  if (workload.mode != Mode::kTraining) {
    advice.replicas_do_not_split = data_parallel_replicas(workload) > 1;
    if (auto option = by_tensor_parallel(graph, device, params, workload)) {
      advice.options.push_back(*option);
    }
    advice.checkpoint_storage = by_checkpoint_storage(graph, device, params, workload);
    return advice;
  }
  if (has_experts(graph)) {
    if (auto option = by_expert_parallel(graph, device, params, workload)) {
      advice.options.push_back(*option);
    }
  }
  if (!workload.checkpointing || workload.checkpoint_layers > 0) {
    if (auto option = by_checkpointing(graph, device, params, workload)) {
      advice.options.push_back(*option);
    }
  }
  for (auto* search : {by_zero, by_tensor_parallel, by_pipeline}) {
    if (auto option = search(graph, device, params, workload)) advice.options.push_back(*option);
  }
  std::stable_sort(advice.options.begin(), advice.options.end(),
                   [](const FitOption& a, const FitOption& b) { return a.devices < b.devices; });
  return advice;
}

std::string fit_advice_text(const FitAdvice& advice, const Device& device, Mode mode) {
  const bool training = mode == Mode::kTraining;
  std::string text = fmt::format("does not fit: {} of {}", format_bytes(advice.state_bytes),
                                 training ? "weights, gradients and optimizer state" : "weights");
  if (advice.replicas_do_not_split) {
    text += "; replicas (--devices) each hold the whole model and do not split it";
  }
  // The checkpoint's storage of the routed experts, where it fits as laid out.
  const std::string storage =
      advice.checkpoint_storage
          ? fmt::format("; or keep the routed experts as its checkpoint stores them: try {}",
                        advice.checkpoint_storage->flags)
          : std::string();
  if (advice.options.empty()) {
    return text + (storage.empty()
                       ? fmt::format("; no split over up to {} devices fits", kMaxFitDevices)
                       : storage);
  }
  if (!training) {
    const FitOption& o = advice.options.front();
    return text +
           fmt::format("; needs at least {} x {}{}: try {}", o.replica_devices, device.name,
                       o.devices > o.replica_devices ? " per replica" : "", o.flags) +
           storage;
  }
  std::vector<std::string> flags;
  for (const FitOption& o : advice.options)
    flags.push_back(o.devices > 1 ? fmt::format("{} ({} devices)", o.flags, o.devices) : o.flags);
  return text + fmt::format("; fits with any of: {}", fmt::join(flags, ", "));
}

}  // namespace capcalc
