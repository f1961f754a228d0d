// Comparing one model across devices (`capcalc compare`): one row per device, or per device ×
// batch × precision for a sweep, with time, throughput, memory, fit, cost and energy.
//
// Every row comes from capcalc::estimate() with the same workload, so a row here and
// `capcalc estimate` on the same device agree. On top of the estimate a row carries:
//   devices_to_fit = ceil(memory needed / device memory): a lower bound, since splitting a
//                    model (tensor or pipeline parallelism) adds buffers and never splits evenly;
//   bound          = the bound of the layers that take most of the step's time;
//   cost, energy   = price × time and TDP × time, for 1e6 samples (inference, or training
//                    without a run) or for the whole training run. TDP makes energy an upper
//                    bound; devices without a price or a TDP have no cost or energy.
// A device that lacks the precision gets a row with `supported` false and a note, not an error.
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
#include "capcalc/workload_spec.hpp"  // RunSize, run_samples and the run's bounds.

namespace capcalc {

/// Samples that cost and energy are quoted for when there is no training run.
inline constexpr double kCostSamples = 1e6;

/// What cost_usd and energy_kwh of a row are for.
enum class CostBasis {
  kPerMillionSamples,  ///< 1e6 samples at the row's throughput.
  kPerRun,             ///< The whole training run.
  kPerMillionTokens,   ///< LLM serving: 1e6 generated tokens at the row's token rate.
};
/// "per_million_samples", "per_run", "per_million_tokens".
std::string_view cost_basis_name(CostBasis basis);

/// LLM serving rows: the model at `batch` sequences of `seq` new tokens over `cached` ones.
using CompareServingBuilder =
    std::function<Graph(std::int64_t batch, std::int64_t seq, std::int64_t cached)>;

/// How every row is run; the precision of each row is given separately (a sweep has several).
struct CompareRequest {
  Workload workload;                         ///< Mode, profile, optimizer, devices, ...
  RunSize run;                               ///< Training only; empty: no run.
  std::optional<double> price_per_hour_usd;  ///< Overrides the table's prices when set.
  std::string model_file;                    ///< For messages about the run.
  /// LLM serving (inference only): each row is estimate_serving() of a request of the graph's
  /// batch of sequences, its graphs built by serving_graph. Unset: one forward pass a row.
  std::optional<ServingRequest> serving;
  CompareServingBuilder serving_graph;
};

/// One device at one batch and precision.
struct CompareRow {
  const Device* device = nullptr;
  std::int64_t batch = 1;
  Precision precision = Precision::kFp32;
  bool supported = true;  ///< false: the device lacks the precision; figures below are unset.
  std::string note;       ///< Why a row is not supported, e.g. "no bf16 (has fp32, fp16)".
  double latency_s = 0;   ///< Inference: one forward pass of the batch; training: a step;
                          ///< serving: the whole request (prefill and every decode step).
  std::optional<double> ttft_s;  ///< Serving: time to first token (the prefill).
  double throughput_per_s = 0;   ///< Samples per second over all data-parallel devices; serving:
                                 ///< generated tokens per second (all sequences, all replicas).
  std::optional<double> run_time_s;  ///< Wall-clock time of the training run, if one is given.
  double memory_bytes = 0;           ///< Needed on one device.
  double device_memory_bytes = 0;    ///< Available on one device.
  bool fits = false;
  /// Devices in all it would take to fit: where it does not, the fewest of the changes
  /// advise_fit finds (fit.hpp; `fit_flags` says which), else ceil(memory_bytes /
  /// device_memory_bytes), a lower bound.
  std::int64_t devices_to_fit = 1;
  std::string fit_flags;  ///< The change that fits with devices_to_fit, e.g. "--tp 2"; "": none.
  Bound bound = Bound::kNone;  ///< The bound of most of the step's time.
  std::optional<double> price_per_device_hour_usd;
  std::optional<double> cost_usd;    ///< Per CompareTable::cost_basis; unset without a price.
  std::optional<double> energy_kwh;  ///< At TDP, per cost_basis; unset without a TDP.
};

/// How rows are ordered: devices that fit first, then by the key. Unknown values (unsupported
/// precision, no price, no TDP) go last.
enum class CompareSort {
  kTable,       ///< The order of the hardware table (or of --hw).
  kTime,        ///< Latency / step time, shortest first.
  kThroughput,  ///< Highest first.
  kCost,        ///< Cheapest first.
  kMemory,      ///< Most memory to spare (device memory − needed) first.
  kEnergy,      ///< Least first.
};
std::optional<CompareSort> parse_compare_sort(std::string_view name);  ///< "time", "cost", ...
std::string_view compare_sort_name(CompareSort sort);
std::vector<std::string_view> compare_sort_names();

/// The whole comparison.
struct CompareTable {
  std::string model;  ///< Graph name.
  std::int64_t params = 0;
  std::int64_t active_params = 0;  ///< Of `params`, those each token uses (a mixture of experts).
  /// Tokens per sample of a language model (its "seq" dimension; the prompt when serving).
  std::optional<std::int64_t> seq;
  Mode mode = Mode::kInference;
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;  ///< How the fp8 rows scale FP8 tensors.
  std::int64_t devices = 1;               ///< Per row: all devices (tensor_parallel × replicas).
  std::int64_t tensor_parallel = 1;       ///< Devices per pipeline stage of a replica.
  std::int64_t pipeline_parallel = 1;     ///< Training: pipeline stages per replica.
  std::int64_t micro_batches = 1;         ///< Training: micro-batches per optimizer step.
  double input_rate_per_s = 0;            ///< The input pipeline's samples/s a replica (0: none).
  std::int64_t virtual_stages = 1;        ///< Training: interleaved chunks per pipeline stage.
  int zero_stage = 0;                     ///< Training state sharding over the replicas.
  std::string runtime;                    ///< The runtime's name; "" when none was named.
  std::optional<double> run_samples;      ///< The training run's samples (of the first graph).
  std::optional<ServingRequest> serving;  ///< Serving rows: the request each row serves.
  CostBasis cost_basis = CostBasis::kPerMillionSamples;
  CompareSort sort = CompareSort::kTable;
  bool batch_sweep = false;      ///< More than one batch.
  bool precision_sweep = false;  ///< More than one precision.
  std::vector<CompareRow> rows;
};

/// One row: estimate() plus the figures above. Never throws for a missing precision.
CompareRow compare_row(const Graph& graph, const Device& device, const PerformanceParams& params,
                       Precision precision, const CompareRequest& request);

/// Rows for every device × graph (one graph per batch) × precision, device-major, then sorted.
/// In a sweep a device's rows stay together, devices ordered by their first row.
CompareTable compare_devices(const std::vector<Graph>& graphs,
                             const std::vector<const Device*>& devices, const HardwareTable& table,
                             const std::vector<Precision>& precisions,
                             const CompareRequest& request, CompareSort sort);

}  // namespace capcalc
