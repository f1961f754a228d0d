#include "capcalc/compare.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/fit.hpp"
#include "capcalc/names.hpp"

#include "checked.hpp"
#include "predict_rates.hpp"

namespace capcalc {
namespace {

constexpr double kSecondsPerHour = 3600;

// The bound that takes most of the step: per-layer times summed by bound. Fused and view
// layers take no time of their own.
Bound dominant_bound(const Estimate& estimate) {
  std::array<double, 3> seconds{};  // compute, memory, host
  for (const LayerEstimate& layer : estimate.layers) {
    if (layer.bound == Bound::kCompute) seconds[0] += layer.time_s;
    if (layer.bound == Bound::kMemory) seconds[1] += layer.time_s;
    if (layer.bound == Bound::kHost) seconds[2] += layer.time_s;
  }
  // A step that waits for its samples longer than any bound's layers take is input-bound.
  const double most = std::max({seconds[0], seconds[1], seconds[2]}) * estimate.layer_repeats;
  if (estimate.input_wait_s > most) return Bound::kInput;
  if (seconds[0] == 0 && seconds[1] == 0 && seconds[2] == 0) return Bound::kNone;
  if (seconds[0] >= seconds[1] && seconds[0] >= seconds[2]) return Bound::kCompute;
  return seconds[1] >= seconds[2] ? Bound::kMemory : Bound::kHost;
}

std::string missing_precision_note(const Device& device, Precision precision) {
  std::vector<std::string_view> has;
  for (Precision p : device.precisions())
    has.push_back(precision_name(p));
  return fmt::format("no {} (has {}){}", precision_name(precision), fmt::join(has, ", "),
                     weight_only_hint(device, precision));
}

// The value a row is sorted by, smaller first; nullopt sorts last.
std::optional<double> sort_key(const CompareRow& row, CompareSort sort) {
  if (sort == CompareSort::kTable) return 0.0;
  if (!row.supported) return std::nullopt;
  switch (sort) {
    case CompareSort::kTable:
      return 0.0;
    case CompareSort::kTime:
      return row.latency_s;
    case CompareSort::kThroughput:
      return -row.throughput_per_s;
    case CompareSort::kCost:
      return row.cost_usd;
    case CompareSort::kMemory:
      return row.memory_bytes - row.device_memory_bytes;
    case CompareSort::kEnergy:
      return row.energy_kwh;
  }
  return std::nullopt;
}

bool key_less(const std::optional<double>& a, const std::optional<double>& b) {
  if (!a) return false;
  if (!b) return true;
  return *a < *b;
}

constexpr auto kSorts = name_table<CompareSort>({{CompareSort::kTable, "table"},
                                                 {CompareSort::kTime, "time"},
                                                 {CompareSort::kThroughput, "throughput"},
                                                 {CompareSort::kCost, "cost"},
                                                 {CompareSort::kMemory, "memory"},
                                                 {CompareSort::kEnergy, "energy"}});

}  // namespace

std::string_view cost_basis_name(CostBasis basis) {
  constexpr auto kNames =
      name_table<CostBasis>({{CostBasis::kPerMillionSamples, "per_million_samples"},
                             {CostBasis::kPerMillionTokens, "per_million_tokens"},
                             {CostBasis::kPerRun, "per_run"}});
  return kNames.name(basis);
}

std::optional<CompareSort> parse_compare_sort(std::string_view name) {
  return kSorts.parse(name);
}

std::string_view compare_sort_name(CompareSort sort) {
  return kSorts.name(sort);
}

std::vector<std::string_view> compare_sort_names() {
  return kSorts.names();
}

CompareRow compare_row(const Graph& graph, const Device& device, const PerformanceParams& params,
                       Precision precision, const CompareRequest& request) {
  if (request.workload.serving_default_precision) precision = llm_serving_precision(device);
  CompareRow row;
  row.device = &device;
  row.batch = graph.batch;
  row.precision = precision;
  row.device_memory_bytes = device.memory_bytes;
  row.price_per_device_hour_usd = request.price_per_hour_usd;
  if (!row.price_per_device_hour_usd && device.price) {
    row.price_per_device_hour_usd = device.price->usd_per_hour;
  }
  if (!device.supports(precision)) {
    row.supported = false;
    row.note = missing_precision_note(device, precision);
    return row;
  }
  if (request.workload.runtime && !request.workload.runtime->runs_on(device.type)) {
    row.supported = false;
    row.note = fmt::format("{} does not run on a {}", request.workload.runtime->name,
                           device_type_name(device.type));
    return row;
  }
  Workload workload = request.workload;
  workload.precision = precision;
  // The FP8 recipe scales the fp8 rows; the others have none.
  if (precision != Precision::kFp8) workload.fp8_recipe = Fp8Recipe::kDelayed;
  if (request.serving) {
    // A request of the graph's batch of sequences: its prefill and every decode step; the
    // rate is the tokens it generates over its whole time, on every replica.
    const ServingEstimate s = estimate_serving(
        [&](std::int64_t seq, std::int64_t cached) {
          return request.serving_graph(graph.batch, seq, cached);
        },
        device, params, workload, *request.serving);
    row.ttft_s = s.ttft_s;
    row.latency_s = s.request_latency_s;
    row.throughput_per_s =
        static_cast<double>(graph.batch) * static_cast<double>(data_parallel_replicas(workload)) *
        static_cast<double>(request.serving->output_tokens) / s.request_latency_s;
    row.memory_bytes = s.memory_bytes;
    row.fits = s.fits;
    row.bound = dominant_bound(s.decode);
  } else {
    const Estimate result = estimate(graph, device, params, workload);
    row.latency_s = result.latency_s;
    row.throughput_per_s = result.throughput_per_s;
    row.memory_bytes = result.memory.total_bytes;
    row.fits = result.fits;
    row.bound = dominant_bound(result);
    if (workload.mode == Mode::kTraining) {
      if (const auto samples = run_samples(request.run, graph, request.model_file)) {
        TrainingRun run;
        run.samples = *samples;
        run.price_per_device_hour_usd = row.price_per_device_hour_usd;
        run.power_w = device.tdp_w;
        const TrainingTotals totals = training_totals(result, graph.batch, workload, run);
        row.run_time_s = totals.time_s;
        row.cost_usd = totals.cost_usd;
        row.energy_kwh = totals.energy_kwh;
      }
    }
  }
  row.devices_to_fit =
      device.memory_bytes > 0
          ? std::max<std::int64_t>(
                1, clamp_to_int64(std::ceil(row.memory_bytes / device.memory_bytes)))
          : 1;
  if (!row.fits && !request.serving) {
    const FitAdvice advice = advise_fit(graph, device, params, workload);
    if (!advice.options.empty()) {
      row.devices_to_fit = advice.options.front().devices;
      row.fit_flags = advice.options.front().flags;
    }
  }
  if (!row.run_time_s && row.throughput_per_s > 0) {
    // Device-hours for 1e6 samples (serving: generated tokens): the rate is over all devices,
    // each one is paid for.
    const double device_hours = kCostSamples / row.throughput_per_s *
                                static_cast<double>(workload.devices) / kSecondsPerHour;
    if (row.price_per_device_hour_usd) {
      row.cost_usd = device_hours * *row.price_per_device_hour_usd;
    }
    if (device.tdp_w > 0) row.energy_kwh = device_hours * device.tdp_w / 1000;
  }
  return row;
}

CompareTable compare_devices(const std::vector<Graph>& graphs,
                             const std::vector<const Device*>& devices, const HardwareTable& table,
                             const std::vector<Precision>& precisions,
                             const CompareRequest& request, CompareSort sort) {
  if (graphs.empty()) throw Error({}, "compare: no batch to compare at");
  if (precisions.empty()) throw Error({}, "compare: no precision to compare in");
  if (devices.empty()) throw Error({}, "compare: no devices to compare");
  CompareTable out;
  out.model = graphs.front().name;
  const GraphTotals totals = graph_totals(graphs.front());
  out.params = totals.params;
  out.active_params = totals.active_params;
  if (const auto seq = graphs.front().dims.find("seq"); seq != graphs.front().dims.end()) {
    out.seq = seq->second;
  }
  out.mode = request.workload.mode;
  out.fp8_recipe = request.workload.fp8_recipe;
  out.devices = request.workload.devices;
  out.tensor_parallel = request.workload.tensor_parallel;
  out.pipeline_parallel = request.workload.pipeline_parallel;
  out.micro_batches = request.workload.micro_batches;
  out.input_rate_per_s = request.workload.input_rate_per_s;
  out.virtual_stages = request.workload.virtual_stages;
  out.zero_stage = request.workload.zero_stage;
  if (request.workload.runtime) out.runtime = request.workload.runtime->name;
  out.sort = sort;
  out.batch_sweep = graphs.size() > 1;
  out.precision_sweep = precisions.size() > 1;
  if (request.workload.mode == Mode::kTraining) {
    out.run_samples = run_samples(request.run, graphs.front(), request.model_file);
  } else if (!request.run.empty()) {
    throw Error::naming_keys(
        {}, "`dataset_size` and `tokens` describe a training run: add `mode` training");
  }
  out.cost_basis = out.run_samples ? CostBasis::kPerRun : CostBasis::kPerMillionSamples;
  if (request.serving) {
    if (!request.serving_graph) throw Error({}, "compare: serving rows need a graph builder");
    out.serving = request.serving;
    out.cost_basis = CostBasis::kPerMillionTokens;
  }

  // Device-major groups, each in sweep order (batch, then precision).
  std::vector<std::vector<CompareRow>> groups;
  for (const Device* device : devices) {
    const PerformanceParams params = table.performance_for(*device);
    std::vector<CompareRow> group;
    for (const Graph& graph : graphs) {
      for (Precision precision : precisions) {
        group.push_back(compare_row(graph, *device, params, precision, request));
      }
    }
    groups.push_back(std::move(group));
  }
  // A device's first supported row stands for it; a device with none goes last, and one that
  // does not fit after every one that does, whatever the key.
  const auto group_key = [sort](const std::vector<CompareRow>& group) {
    for (const CompareRow& row : group) {
      if (row.supported) return std::make_pair(row.fits ? 0 : 1, sort_key(row, sort));
    }
    return std::make_pair(2, std::optional<double>());
  };
  std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
    const auto ka = group_key(a);
    const auto kb = group_key(b);
    if (ka.first != kb.first) return ka.first < kb.first;
    return key_less(ka.second, kb.second);
  });
  for (auto& group : groups) {
    for (CompareRow& row : group)
      out.rows.push_back(std::move(row));
  }
  // Serving's default precision differs by device (fp16 where bf16 is missing): a column then.
  for (const CompareRow& row : out.rows)
    out.precision_sweep = out.precision_sweep || row.precision != out.rows.front().precision;
  return out;
}

}  // namespace capcalc
