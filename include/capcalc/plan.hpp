// Planning a training run: which devices, how many and which layout train a model on a number
// of tokens fastest, cheapest or with the least energy, within a deadline and a budget.
//
// plan() searches device type x device count x tensor-parallel (T) x pipeline (P) x
// data-parallel (D) x context-parallel (C) x expert-parallel (E) x ZeRO stage x micro-batch
// size and count x virtual stages x activation checkpointing x precision. A layout is generated
// only if it is valid: T divides the attention heads and the key/value heads and fits the
// device's scale-up domain, P x V divides the blocks, E (a power of two) divides the experts
// and D x C, D x micro-batches x micro-batch size is the global batch, and a layout that spans
// nodes has a network in the hardware table. It is kept only if its memory fits every device
// with the reserve left free. Each layout is timed by estimate()'s two halves: the per-layer
// pass once per (device, precision, micro-batch size, T, C, E, checkpointing), the schedule
// per layout. docs/planning.md has the rules and their sources.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/pricing.hpp"

namespace capcalc {

/// What the plan ranks layouts by.
enum class PlanObjective {
  kTime,    ///< Wall-clock days of the run.
  kCost,    ///< Device-hours at the request's pricing (the table's on-demand price by default).
  kEnergy,  ///< Device-hours at the devices' TDP.
};
std::string_view plan_objective_name(PlanObjective objective);  ///< "time", "cost", "energy".
std::optional<PlanObjective> parse_plan_objective(std::string_view name);
std::vector<std::string_view> plan_objective_names();

/// The model at a micro-batch of `batch` samples (its "batch" dimension).
using PlanGraphBuilder = std::function<Graph(std::int64_t batch)>;

/// The largest global batch plan() takes, in samples (2^31: its divisors are found by trial).
inline constexpr std::int64_t kMaxGlobalBatch = std::int64_t{1} << 31;
/// The largest context-parallel degree the search tries (powers of two from 2).
inline constexpr std::int64_t kMaxContextParallel = 16;

/// What to search and the limits a layout must meet.
struct PlanRequest {
  std::vector<const Device*> devices;  ///< Device types to try (from `table`).
  std::int64_t max_devices = 4096;     ///< Most devices of one type in a layout.
  /// Only these device counts (`capcalc scale`); empty: any up to max_devices.
  std::vector<std::int64_t> device_counts;
  double samples = 0;             ///< Samples (sequences) in the run.
  std::int64_t global_batch = 0;  ///< Samples per optimizer step: D x micro-batches x size.
  std::vector<Precision> precisions{Precision::kBf16};
  Optimizer optimizer = Optimizer::kAdam;
  std::optional<Profile> profile;  ///< Unset: each device type's default.
  /// The runtime every layout runs under (its profile and kernels replace `profile`'s); device
  /// types it does not run on are skipped, with a note.
  std::optional<Runtime> runtime;
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;  ///< How fp8 layouts scale FP8 tensors.
  /// Micro-batch sizes to try (those that divide the global batch).
  std::vector<std::int64_t> micro_batch_sizes{1, 2, 4, 8};
  std::optional<double> deadline_s;  ///< Longest acceptable run.
  std::optional<double> budget_usd;  ///< Most it may cost.
  Pricing pricing;                   ///< How the devices are paid for.
  double memory_reserve = 0.10;      ///< Fraction of each device's memory left free.
  /// The busiest expert's load over the mean: the moe layers take this many times as long.
  double moe_imbalance = 1;
  /// How the moe layers' tokens reach their experts in layouts with expert parallelism.
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  /// Selective recomputation (RecomputeModule bits): tried as a third choice beside none and
  /// checkpointing; 0: not tried.
  unsigned recompute = 0;
  /// LoRA fine-tuning (Workload::lora_rank; 0: full training) and its targets.
  std::int64_t lora_rank = 0;
  bool lora_attention_only = false;
  PlanObjective objective = PlanObjective::kTime;
};

/// One layout of one device type.
struct Layout {
  const Device* device = nullptr;
  Precision precision = Precision::kBf16;
  std::int64_t devices = 1;
  std::int64_t tensor_parallel = 1;
  std::int64_t pipeline_parallel = 1;
  std::int64_t context_parallel = 1;  ///< Devices that split each sequence (ring attention).
  std::int64_t expert_parallel = 1;   ///< Devices that split each moe layer's experts.
  /// Each routed expert whole on one device (expert tensor-parallel 1, the expert grid folded
  /// over the tensor-parallel devices too); false: split like the other weights.
  bool whole_experts = false;
  std::int64_t data_parallel = 1;
  std::int64_t virtual_stages = 1;
  std::int64_t micro_batch_size = 1;  ///< Samples per micro-batch.
  std::int64_t micro_batches = 1;     ///< Per replica per step.
  int zero_stage = 0;
  bool checkpointing = false;
  /// With checkpointing: only the first N blocks of each pipeline chunk (--checkpoint-layers),
  /// the fewest that fit where the layout does not fit without; 0: every block.
  std::int64_t checkpoint_layers = 0;
  /// Selective recomputation of the request's modules (PlanRequest::recompute), searched
  /// beside none and checkpointing when the request names some.
  bool selective_recompute = false;
};

/// How close (relative, by the objective) a layout that differs from a listed one only in its
/// data/context split must rank to be left out of the listing as a variant of it.
inline constexpr double kVariantTolerance = 0.005;

/// "TP 8, PP 8, DP 64".
std::string layout_text(const Layout& layout);

/// Where a step's time goes (seconds; the parts add up to step_s).
struct StepBreakdown {
  double compute_s = 0;           ///< Forward and backward of the layers.
  double recompute_s = 0;         ///< Checkpointing's second forward.
  double tensor_parallel_s = 0;   ///< Tensor-parallel all-reduces.
  double context_parallel_s = 0;  ///< Ring attention's sends the layers do not hide.
  double expert_parallel_s = 0;   ///< The moe layers' all-to-alls (not overlapped).
  double pipeline_send_s = 0;     ///< Sends between stages outside the bubble.
  double bubble_s = 0;            ///< Pipeline fill and drain.
  double data_parallel_s = 0;     ///< The gradient sync backward does not hide.
  double optimizer_s = 0;         ///< The optimizer update.
  double communication_s() const {
    return tensor_parallel_s + context_parallel_s + expert_parallel_s + pipeline_send_s +
           data_parallel_s;
  }
};

/// One layout with its figures.
struct PlanRow {
  Layout layout;
  double step_s = 0;        ///< One optimizer step.
  double mfu = 0;           ///< Model FLOPs (forward + backward, no recompute) / dense peak.
  double tokens_per_s = 0;  ///< Samples x "seq" per second (samples/s without "seq").
  double steps = 0;         ///< Optimizer steps of the run.
  double time_s = 0;        ///< The run, wall clock.
  double device_hours = 0;
  double interruptions = 0;  ///< Spot pricing: expected interruptions over the run.
  /// Unset: no price for the device (none in the table; owned without a TDP).
  std::optional<double> usd_per_device_hour;
  std::optional<double> cost_usd;    ///< Unset: no price for the device.
  std::optional<double> energy_kwh;  ///< At TDP; unset: the table has no TDP.
  double memory_bytes = 0;           ///< Needed on the fullest device.
  double headroom_bytes = 0;         ///< Usable memory (after the reserve) left over.
  StepBreakdown breakdown;
  bool meets_ask = true;  ///< Within the deadline and the budget.
};

/// The search's answer.
struct PlanResult {
  /// Layouts within the deadline and budget, best first by the objective (ties: fewer
  /// devices, then the layout's numbers, so the order is deterministic).
  std::vector<PlanRow> rows;
  /// The time/cost Pareto front over every layout that fits (met ask or not), fastest first.
  std::vector<PlanRow> pareto;
  /// Per device count searched (ascending), the fastest layout that fits, of any type.
  std::vector<PlanRow> fastest_per_count;
  std::int64_t layouts_searched = 0;  ///< Valid layouts timed.
  std::int64_t layouts_fit = 0;       ///< Of those, layouts that fit in memory.
  /// Of those, layouts left out because spot interruptions come faster than they recover.
  std::int64_t layouts_never_finish = 0;
  /// Layouts not listed in `rows` because a listed one on as many devices of the same type
  /// differs from them only in how its replicas split into data- and context-parallel groups
  /// and micro-batches, and ranks within kVariantTolerance of them.
  std::int64_t variants_hidden = 0;
  /// Device types left out or limited, and why ("t4: no bf16", "l4: no scale-up domain ...").
  std::vector<std::string> notes;
  /// Empty when rows is not; otherwise why nothing met the ask and what would.
  std::string infeasible;
};

/// Searches every valid layout. Throws capcalc::Error for a request that cannot be searched
/// (no devices, a global batch of 0, no run). `table` gives the performance parameters.
PlanResult plan(const PlanGraphBuilder& build, const HardwareTable& table,
                const PlanRequest& request);

/// The estimate of one row's layout (with its per-layer detail), for `--explain`.
Estimate plan_estimate(const PlanGraphBuilder& build, const HardwareTable& table,
                       const PlanRequest& request, const Layout& layout);

/// The workload estimate() takes for a layout.
Workload plan_workload(const PlanRequest& request, const Layout& layout);

/// Attention heads, key/value heads, blocks (top-level entries holding attention; every
/// top-level entry for a model without attention) and experts of a graph: what T, P and E must
/// divide.
struct PlanShape {
  std::int64_t heads = 0;     ///< gcd over attention layers; 0: no attention.
  std::int64_t kv_heads = 0;  ///< gcd over attention layers; 0: no attention.
  std::int64_t blocks = 1;
  std::int64_t experts = 0;  ///< gcd of the moe layers' routed experts; 0: no moe layer.
};
PlanShape plan_shape(const Graph& graph);

/// One device count of `capcalc scale`.
struct ScalePoint {
  std::int64_t devices = 0;
  std::optional<PlanRow> best;    ///< The fastest layout at this count; unset: none fits.
  std::int64_t global_batch = 0;  ///< Samples per step at this count.
  double speedup = 0;     ///< Step rate (weak: tokens/s) over the first count's with a layout.
  double efficiency = 0;  ///< speedup / (devices / the first count).
};

/// Speed-up per device count (strong scaling: the global batch stays the same).
struct ScaleResult {
  bool weak = false;  ///< Weak scaling: the global batch grew with the count.
  std::vector<ScalePoint> points;
  /// The first count where exposed communication is the step's largest overhead, and where the
  /// pipeline bubble is; 0: never.
  std::int64_t communication_leads_from = 0;
  std::int64_t bubble_leads_from = 0;
  std::vector<std::string> notes;
};

/// Runs plan() over exactly `counts` (ascending) and keeps the fastest layout of each.
/// Strong scaling: the global batch stays request.global_batch; speed-up is in step rate.
/// Weak scaling (`weak`): the global batch grows with the count from request.global_batch at
/// the first count (rounded to whole samples); speed-up is in tokens (samples) per second.
ScaleResult plan_scaling(const PlanGraphBuilder& build, const HardwareTable& table,
                         PlanRequest request, const std::vector<std::int64_t>& counts,
                         bool weak = false);

}  // namespace capcalc
