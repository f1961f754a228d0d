#include "capcalc/plan.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/names.hpp"
#include "capcalc/units.hpp"

#include "plan_checkpoint.hpp"

namespace capcalc {
namespace {

constexpr auto kObjectives = name_table<PlanObjective>({{PlanObjective::kTime, "time"},
                                                        {PlanObjective::kCost, "cost"},
                                                        {PlanObjective::kEnergy, "energy"}});

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    out.push_back(d);
    if (d != n / d) out.push_back(n / d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Whether P x V pipeline chunks split the blocks evenly: the blocks alone, or the blocks plus
// the embedding and the loss counted as one block each (pipeline_counts_ends; Megatron-Bridge's
// Llama 3.1 405B recipes: 126 blocks + 2 over 8 x 8 chunks).
bool splits_evenly(std::int64_t blocks, std::int64_t chunks) {
  return blocks % chunks == 0 || pipeline_counts_ends(blocks, chunks);
}

// The counts c for which `per` x c chunks split the blocks evenly.
std::vector<std::int64_t> chunk_counts(std::int64_t blocks, std::int64_t per) {
  std::vector<std::int64_t> out;
  for (std::int64_t c = 1; per * c <= blocks + 2; ++c) {
    if (splits_evenly(blocks, per * c)) out.push_back(c);
  }
  return out;
}

// A device's short name for messages: its first alias ("H100"), else its id.
std::string short_name(const Device& device) {
  return device.aliases.empty() ? device.id : device.aliases.front();
}

// The largest scale-up group the table describes, and the most devices a layout may span.
struct Reach {
  std::int64_t domain = 1;       // Devices a tensor-parallel group may span.
  std::int64_t max_devices = 1;  // Devices any layout may span.
};

Reach reach_of(const Device& device, std::int64_t max_devices, std::vector<std::string>& notes) {
  Reach reach;
  if (!device.intra_node || device.intra_node->domain_devices <= 0) {
    // PCIe cards: how many share a server and how servers connect is not in the table.
    notes.push_back(
        fmt::format("{}: the hardware table gives no scale-up domain, so only one "
                    "device was planned",
                    device.id));
    return reach;
  }
  reach.domain = device.intra_node->domain_devices;
  reach.max_devices = max_devices;
  if (!device.inter_node && reach.domain < max_devices) {
    reach.max_devices = reach.domain;
    notes.push_back(
        fmt::format("{}: the hardware table gives no network between nodes, so at "
                    "most {} devices (one scale-up domain) were planned",
                    device.id, reach.domain));
  }
  return reach;
}

double objective_value(const PlanRow& row, PlanObjective objective) {
  switch (objective) {
    case PlanObjective::kCost:
      return row.cost_usd.value_or(HUGE_VAL);
    case PlanObjective::kEnergy:
      return row.energy_kwh.value_or(HUGE_VAL);
    case PlanObjective::kTime:
      break;
  }
  return row.time_s;
}

auto layout_key(const Layout& l) {
  return std::make_tuple(l.devices, l.tensor_parallel, l.pipeline_parallel, l.context_parallel,
                         l.expert_parallel, l.whole_experts, l.virtual_stages, l.micro_batch_size,
                         l.zero_stage, l.checkpointing, l.checkpoint_layers, l.selective_recompute,
                         l.device->id, static_cast<int>(l.precision));
}

// Best first by the objective; ties by the other figures and then the layout, so that equal
// layouts always print in one order.
bool better(const PlanRow& a, const PlanRow& b, PlanObjective objective) {
  const double va = objective_value(a, objective);
  const double vb = objective_value(b, objective);
  if (va != vb) return va < vb;
  if (a.time_s != b.time_s) return a.time_s < b.time_s;
  return layout_key(a.layout) < layout_key(b.layout);
}

// Where a step's time goes, from the estimate's parts: the stage time of each micro-batch holds
// the layers, the recompute, the tensor-parallel all-reduces and the sends; the bubble, the
// exposed gradient sync and the optimizer come on top (estimate()'s training schedule).
StepBreakdown breakdown_of(const Estimate& e, const Layout& l) {
  StepBreakdown b;
  const auto m = static_cast<double>(l.micro_batches);
  const double fill =
      static_cast<double>(l.pipeline_parallel - 1) / static_cast<double>(l.virtual_stages);
  b.recompute_s = e.recompute_s;
  b.tensor_parallel_s = e.communication_s;
  b.context_parallel_s = e.context_parallel_s;
  b.expert_parallel_s = e.expert_parallel_s;
  b.pipeline_send_s = e.pipeline_send_s > 0 ? e.pipeline_send_s * m / (m + fill) : 0;
  b.bubble_s = e.pipeline_bubble_s;
  b.data_parallel_s = e.data_parallel_exposed_s;
  b.optimizer_s = e.optimizer_s;
  b.compute_s = std::max(0.0, e.latency_s - b.recompute_s - b.tensor_parallel_s -
                                  b.context_parallel_s - b.expert_parallel_s - b.pipeline_send_s -
                                  b.bubble_s - b.data_parallel_s - b.optimizer_s);
  return b;
}

// What one graph (one micro-batch size) needs for the search.
struct ShapeCase {
  std::int64_t micro_batch_size = 1;
  Graph graph;
  PlanShape shape;
  double tokens_per_sample = 1;
  std::vector<std::int64_t> replica_counts;  // Divisors of global batch / micro-batch size.
  std::vector<std::int64_t> stage_counts;    // P that split the blocks evenly.
  std::vector<std::int64_t> context_counts;  // C that split the sequence (1 first).
  std::vector<std::int64_t> expert_counts;   // E, powers of two dividing the experts (1 first).
  double model_flops = 0;                    // One micro-batch's (training_model_flops).
};

struct Search {
  const PlanRequest& request;
  const HardwareTable& table;
  PlanResult& result;
  std::vector<PlanRow> fitting;  // Every layout that fits.
  // For a message when nothing fits: the layout that came closest.
  double closest_ratio = HUGE_VAL;
  std::optional<PlanRow> closest;
  std::set<std::int64_t> counts;  // Empty: any.
  // The passes without recomputation of one shape, TP and CP, by EP and whole experts.
  std::map<std::pair<std::int64_t, bool>, LayerPass> unchecked_passes;

  bool count_allowed(std::int64_t devices) const {
    return counts.empty() || counts.count(devices) > 0;
  }

  double usable_bytes(const Layout& layout) const {
    return layout.device->memory_bytes * (1 - request.memory_reserve);
  }

  // Returns the bytes a device needs (infinite where the layout's links are not modelled).
  double add_row(const ShapeCase& sc, const LayerPass& pass, const PerformanceParams& params,
                 const Layout& layout) {
    const Workload workload = plan_workload(request, layout);
    const Device& device = *layout.device;
    const Estimate e = estimate_schedule(pass, sc.graph, device, params, workload, false);
    if (!e.communication_modelled || !e.pipeline_sends_modelled || !e.data_parallel_modelled) {
      return HUGE_VAL;
    }
    ++result.layouts_searched;
    PlanRow row;
    row.layout = layout;
    row.step_s = e.latency_s;
    row.memory_bytes = e.memory.total_bytes;
    const double usable = usable_bytes(layout);
    row.headroom_bytes = usable - row.memory_bytes;
    if (row.headroom_bytes < 0) {
      const double ratio = row.memory_bytes / usable;
      if (ratio < closest_ratio) {
        closest_ratio = ratio;
        closest = row;
      }
      return row.memory_bytes;
    }
    ++result.layouts_fit;
    const auto global_batch = static_cast<double>(request.global_batch);
    const auto devices = static_cast<double>(layout.devices);
    // Model FLOPs: the graph's forward and backward per micro-batch (LoRA's, without the frozen
    // weight gradients), every micro-batch of every replica; checkpointing's recompute is not
    // model work (Chowdhery et al. 2022, MFU).
    const double model_flops =
        sc.model_flops * global_batch / static_cast<double>(layout.micro_batch_size);
    const PeakRate& peak = device.peak(layout.precision);
    const double peak_flops =
        peak.matrix_flops_per_s > 0 ? peak.matrix_flops_per_s : peak.vector_flops_per_s;
    row.mfu = model_flops / (row.step_s * devices * peak_flops);
    row.tokens_per_s = global_batch * sc.tokens_per_sample / row.step_s;
    row.steps = std::ceil(request.samples / global_batch);
    // Spot interruptions lengthen the run; a layout interrupted faster than it recovers never
    // ends and is not listed.
    const RunCost paid = price_run(request.pricing, device, row.steps * row.step_s, layout.devices);
    if (!std::isfinite(paid.wall_s)) {
      ++result.layouts_never_finish;
      return row.memory_bytes;
    }
    row.time_s = paid.wall_s;
    row.interruptions = paid.interruptions;
    row.device_hours = row.time_s * devices / 3600;
    row.usd_per_device_hour = paid.usd_per_device_hour;
    row.cost_usd = paid.cost_usd;
    if (device.tdp_w > 0) row.energy_kwh = row.device_hours * device.tdp_w / 1000;
    row.breakdown = breakdown_of(e, layout);
    if (request.deadline_s && row.time_s > *request.deadline_s) row.meets_ask = false;
    if (request.budget_usd && (!row.cost_usd || *row.cost_usd > *request.budget_usd)) {
      row.meets_ask = false;
    }
    fitting.push_back(row);
    return row.memory_bytes;
  }

  // Every P x V x D x ZeRO for one per-layer pass. `unchecked`: with checkpointing, the same
  // layout's pass without, for checkpointing only the fewest blocks that fit.
  void schedules(const ShapeCase& sc, const LayerPass& pass, const PerformanceParams& params,
                 const Reach& reach, Layout layout, const LayerPass* unchecked) {
    const std::int64_t replicas_max = request.global_batch / sc.micro_batch_size;
    for (std::int64_t pp : sc.stage_counts) {
      for (std::int64_t v :
           pp == 1 ? std::vector<std::int64_t>{1} : chunk_counts(sc.shape.blocks, pp)) {
        for (std::int64_t dp : sc.replica_counts) {
          const std::int64_t devices = layout.tensor_parallel * layout.context_parallel * pp * dp;
          if (devices > reach.max_devices) break;
          if (!count_allowed(devices)) continue;
          // Expert parallelism splits the experts over the devices holding the same weights, and
          // whole experts over the tensor-parallel devices too.
          const std::int64_t folded = layout.whole_experts ? layout.tensor_parallel : 1;
          if (folded * dp * layout.context_parallel % layout.expert_parallel != 0) continue;
          const std::int64_t m = replicas_max / dp;
          if (v > 1 && m % pp != 0) continue;  // Megatron's interleaved schedule needs it.
          layout.devices = devices;
          layout.pipeline_parallel = pp;
          layout.virtual_stages = v;
          layout.data_parallel = dp;
          layout.micro_batches = m;
          for (int zero = 0; zero <= (dp > 1 ? 3 : 0); ++zero) {
            layout.zero_stage = zero;
            // Every block checkpointed; then, where only that fits, the fewest blocks that do,
            // in its place.
            const std::size_t rows = fitting.size();
            const double checked = add_row(sc, pass, params, layout);
            if (unchecked == nullptr || fitting.size() == rows) continue;
            Layout none = layout;
            none.checkpointing = false;
            const double unchecked_bytes =
                estimate_schedule(*unchecked, sc.graph, *layout.device, params,
                                  plan_workload(request, none), false)
                    .memory.total_bytes;
            const auto add = [&](const LayerPass& mixed, const Layout& partial) {
              return add_row(sc, mixed, params, partial);
            };
            if (detail::fewest_checkpointed_blocks(*unchecked, unchecked_bytes, pass, checked,
                                                   usable_bytes(layout), layout, add)) {
              fitting.erase(fitting.begin() + static_cast<std::ptrdiff_t>(rows));
              --result.layouts_fit;
            }
          }
        }
      }
    }
  }

  // Each expert-parallel degree's per-layer pass (its all-to-alls), and the schedules on it.
  void expert_layouts(const ShapeCase& sc, const PerformanceParams& params, const Reach& reach,
                      Layout layout) {
    const Device& device = *layout.device;
    for (std::int64_t ep : sc.expert_counts) {
      // Experts split like the other weights, and (with tensor parallelism) whole experts, the
      // expert grid folded over the tensor-parallel devices too (Megatron-Core's
      // expert_tensor_parallel_size=1).
      for (bool whole : {false, true}) {
        if (whole && (ep == 1 || layout.tensor_parallel == 1)) continue;
        // The smallest job with E dividing (T x) D x C: lcm(E, (T x) C) / ((T x) C) replicas;
        // the pass does not depend on D.
        const std::int64_t folded = layout.context_parallel * (whole ? layout.tensor_parallel : 1);
        const std::int64_t replicas = ep / std::gcd(ep, folded);
        layout.devices = layout.tensor_parallel * layout.context_parallel * replicas;
        if (layout.devices > reach.max_devices) continue;
        layout.expert_parallel = ep;
        layout.whole_experts = whole;
        const LayerPass pass =
            estimate_layers(sc.graph, device, params, plan_workload(request, layout));
        if (!pass.partial.communication_modelled || !pass.partial.context_parallel_modelled ||
            !pass.partial.expert_parallel_modelled) {
          continue;
        }
        const auto key = std::make_pair(ep, whole);
        const auto none = unchecked_passes.find(key);
        schedules(sc, pass, params, reach, layout,
                  layout.checkpointing && none != unchecked_passes.end() ? &none->second : nullptr);
        if (!layout.checkpointing && !layout.selective_recompute) unchecked_passes[key] = pass;
      }
    }
  }

  void device_type(const Device& device, const std::vector<ShapeCase>& cases) {
    const Reach reach = reach_of(device, request.max_devices, result.notes);
    const PerformanceParams params = table.performance_for(device);
    if (request.runtime && !request.runtime->runs_on(device.type)) {
      result.notes.push_back(fmt::format("{}: {} does not run on a {}", device.id,
                                         request.runtime->name, device_type_name(device.type)));
      return;
    }
    for (Precision precision : request.precisions) {
      if (!device.supports(precision)) {
        result.notes.push_back(
            fmt::format("{}: cannot compute in {}", device.id, precision_name(precision)));
        continue;
      }
      for (const ShapeCase& sc : cases) {
        const std::int64_t heads = std::gcd(sc.shape.heads, sc.shape.kv_heads);
        for (std::int64_t tp : heads > 0 ? divisors(heads) : std::vector<std::int64_t>{1}) {
          if (tp > reach.domain) break;
          for (std::int64_t cp : sc.context_counts) {
            if (tp * cp > reach.max_devices) break;
            unchecked_passes.clear();
            // Recompute nothing, every block, or the request's modules.
            for (int recompute = 0; recompute < (request.recompute != 0 ? 3 : 2); ++recompute) {
              Layout layout;
              layout.device = &device;
              layout.precision = precision;
              layout.tensor_parallel = tp;
              layout.context_parallel = cp;
              layout.micro_batch_size = sc.micro_batch_size;
              layout.checkpointing = recompute == 1;
              layout.selective_recompute = recompute == 2;
              expert_layouts(sc, params, reach, layout);
            }
          }
        }
      }
    }
  }
};

std::string plural(const std::string& name, std::int64_t n) {
  return n == 1 ? name : name + "s";
}

// "≤ 4,096 H100s" or "≤ 4,096 devices (H100, B200)".
std::string devices_text(const PlanRequest& request) {
  std::string text = "≤ " + format_grouped(request.max_devices) + " ";
  if (request.devices.size() == 1) return text + plural(short_name(*request.devices.front()), 2);
  std::string names;
  for (const Device* device : request.devices) {
    names += (names.empty() ? "" : ", ") + short_name(*device);
  }
  return text + "devices (" + names + ")";
}

std::string where_text(const PlanRow& row) {
  return fmt::format("{} {} ({})", format_grouped(row.layout.devices),
                     plural(short_name(*row.layout.device), row.layout.devices),
                     layout_text(row.layout));
}

std::string days_text(double seconds) {
  const double days = seconds / 86400;
  return days >= 10 ? fmt::format("{:.0f} days", days) : fmt::format("{:.3g} days", days);
}

// Why nothing met the ask, and what would.
std::string infeasible_text(const Search& search) {
  const PlanRequest& request = search.request;
  if (search.fitting.empty()) {
    if (search.result.layouts_never_finish > 0) {
      // Λ L ≥ 1 on every layout that fits (Λ grows with the device count).
      const Pricing& p = request.pricing;
      return fmt::format(
          "every layout of {} that fits is interrupted faster than it recovers ({:g} "
          "interruptions per device-day, each losing {}: the restart and half a checkpoint "
          "interval); fewer interruptions, a faster restart or more frequent checkpoints would",
          devices_text(request), p.interruptions_per_device_day,
          format_duration(p.restart_s + p.checkpoint_interval_s / 2));
    }
    if (!search.closest) {
      return fmt::format(
          "no valid layout of {}: the global batch of {} samples, the heads and "
          "the blocks leave none (see the notes)",
          devices_text(request), format_grouped(request.global_batch));
    }
    const PlanRow& c = *search.closest;
    const double usable = c.layout.device->memory_bytes * (1 - request.memory_reserve);
    return fmt::format(
        "no layout of {} fits in memory with a {:.0f} % reserve: the closest needs "
        "{} of {} per device on {}; more devices or devices with more memory would",
        devices_text(request), request.memory_reserve * 100, format_bytes(c.memory_bytes),
        format_bytes(usable), where_text(c));
  }
  const PlanRow* fastest = nullptr;
  const PlanRow* cheapest = nullptr;
  for (const PlanRow& row : search.fitting) {
    if (fastest == nullptr || better(row, *fastest, PlanObjective::kTime)) fastest = &row;
    if (row.cost_usd && (cheapest == nullptr || better(row, *cheapest, PlanObjective::kCost))) {
      cheapest = &row;
    }
  }
  std::string text;
  if (request.deadline_s && fastest->time_s > *request.deadline_s) {
    const double deadline_days = *request.deadline_s / 86400;
    text = fmt::format("no layout of {} meets {:g} days: the fastest is {} on {}",
                       devices_text(request), deadline_days, days_text(fastest->time_s),
                       where_text(*fastest));
    // At perfect scaling from the fastest layout, rounded up to whole model replicas.
    const std::int64_t replica =
        fastest->layout.tensor_parallel * fastest->layout.pipeline_parallel;
    const double needed =
        static_cast<double>(fastest->layout.devices) * fastest->time_s / *request.deadline_s;
    const auto rounded =
        static_cast<std::int64_t>(std::ceil(needed / static_cast<double>(replica))) * replica;
    if (rounded > request.max_devices) {
      text += fmt::format("; about {} would at perfect scaling", format_grouped(rounded));
      // Replicas of one sample each at the least: more than the global batch has.
      const std::int64_t replicas = (rounded + replica - 1) / replica;
      if (replicas > request.global_batch) {
        text +=
            fmt::format(", with a global batch of at least {} samples", format_grouped(replicas));
      }
    } else {
      text += fmt::format("; layouts of more devices, up to {}, were slower",
                          format_grouped(request.max_devices));
    }
    return text;
  }
  if (request.budget_usd) {
    if (cheapest == nullptr) {
      return fmt::format("no layout of {} has a price to hold to {}", devices_text(request),
                         format_usd(*request.budget_usd));
    }
    // Within the deadline where one was asked: the cheapest of those.
    const PlanRow* best = nullptr;
    for (const PlanRow& row : search.fitting) {
      if (!row.cost_usd) continue;
      if (request.deadline_s && row.time_s > *request.deadline_s) continue;
      if (best == nullptr || better(row, *best, PlanObjective::kCost)) best = &row;
    }
    if (best == nullptr) best = cheapest;
    return fmt::format(
        "no layout of {} costs at most {}{}: the cheapest{} is {} on {} ({})",
        devices_text(request), format_usd(*request.budget_usd),
        request.deadline_s ? fmt::format(" within {:g} days", *request.deadline_s / 86400) : "",
        request.deadline_s ? " within the deadline" : "", format_usd(*best->cost_usd),
        where_text(*best), days_text(best->time_s));
  }
  return "no layout meets the ask";
}

// The fastest rows that no cheaper row beats: sorted by time, each kept if it costs less than
// every faster one.
std::vector<PlanRow> pareto_front(const std::vector<PlanRow>& rows) {
  std::vector<const PlanRow*> priced;
  for (const PlanRow& row : rows) {
    if (row.cost_usd) priced.push_back(&row);
  }
  std::sort(priced.begin(), priced.end(), [](const PlanRow* a, const PlanRow* b) {
    if (a->time_s != b->time_s) return a->time_s < b->time_s;
    if (*a->cost_usd != *b->cost_usd) return *a->cost_usd < *b->cost_usd;
    return layout_key(a->layout) < layout_key(b->layout);
  });
  std::vector<PlanRow> front;
  double cheapest = HUGE_VAL;
  for (const PlanRow* row : priced) {
    if (*row->cost_usd >= cheapest) continue;
    cheapest = *row->cost_usd;
    front.push_back(*row);
  }
  return front;
}

}  // namespace

std::string_view plan_objective_name(PlanObjective objective) {
  return kObjectives.name(objective);
}

std::optional<PlanObjective> parse_plan_objective(std::string_view name) {
  return kObjectives.parse(name);
}

std::vector<std::string_view> plan_objective_names() {
  return kObjectives.names();
}

namespace {

// What the search needs of the graph at micro-batch `size`.
ShapeCase shape_case(const PlanGraphBuilder& build, const PlanRequest& request, std::int64_t size) {
  ShapeCase sc;
  sc.micro_batch_size = size;
  sc.graph = build(size);
  sc.shape = plan_shape(sc.graph);
  const auto seq = sc.graph.dims.find("seq");
  sc.tokens_per_sample = seq == sc.graph.dims.end() ? 1 : static_cast<double>(seq->second);
  Workload lora;
  lora.lora_rank = request.lora_rank;
  lora.lora_attention_only = request.lora_attention_only;
  sc.model_flops = training_model_flops(sc.graph, lora);
  sc.replica_counts = divisors(request.global_batch / size);
  sc.stage_counts = chunk_counts(sc.shape.blocks, 1);
  // Context parallelism splits a sequence into 2C chunks (Megatron-Core balances causal
  // attention's work that way: the sequence must divide by 2C); a model without attention
  // has none.
  sc.context_counts = {1};
  const auto tokens = static_cast<std::int64_t>(sc.tokens_per_sample);
  for (std::int64_t c = 2; sc.shape.heads > 0 && c <= kMaxContextParallel; c *= 2) {
    if (tokens % (2 * c) == 0) sc.context_counts.push_back(c);
  }
  // Expert parallelism: powers of two dividing every moe layer's experts.
  sc.expert_counts = {1};
  for (std::int64_t e = 2; sc.shape.experts > 0 && sc.shape.experts % e == 0; e *= 2) {
    sc.expert_counts.push_back(e);
  }
  return sc;
}

}  // namespace

PlanResult plan(const PlanGraphBuilder& build, const HardwareTable& table,
                const PlanRequest& request) {
  if (request.devices.empty()) throw Error({}, "no device types to plan on");
  if (request.global_batch < 1) throw Error({}, "the global batch must be at least 1 sample");
  if (request.global_batch > kMaxGlobalBatch) {
    throw Error({},
                fmt::format("a global batch of {} samples is beyond the {} the search takes",
                            format_grouped(request.global_batch), format_grouped(kMaxGlobalBatch)));
  }
  if (!(request.samples > 0))
    throw Error::naming_keys({}, "the run has no samples: give `tokens` or `dataset_size`");
  if (request.max_devices < 1) {
    throw Error::naming_keys({}, "`max_devices` must be at least 1");
  }
  if (!(request.memory_reserve >= 0 && request.memory_reserve < 1)) {
    throw Error({}, "the memory reserve must be at least 0 % and below 100 %");
  }
  validate_pricing(request.pricing);
  PlanResult result;
  Search search{request, table, result, {}, HUGE_VAL, std::nullopt, {}, {}};
  search.counts.insert(request.device_counts.begin(), request.device_counts.end());

  std::vector<ShapeCase> cases;
  std::set<std::int64_t> sizes(request.micro_batch_sizes.begin(), request.micro_batch_sizes.end());
  for (std::int64_t size : sizes) {
    if (size < 1 || request.global_batch % size != 0) continue;
    cases.push_back(shape_case(build, request, size));
  }
  if (cases.empty()) {
    throw Error({}, fmt::format("no micro-batch size divides the global batch of {} samples",
                                request.global_batch));
  }
  for (const Device* device : request.devices) {
    search.device_type(*device, cases);
  }

  const PlanObjective objective = request.objective;
  std::vector<PlanRow>& all = search.fitting;
  std::sort(all.begin(), all.end(),
            [objective](const PlanRow& a, const PlanRow& b) { return better(a, b, objective); });
  // Layouts that differ only in a ZeRO stage that changes nothing in the step: the lowest
  // stage that fits is listed (sorted first), the others would repeat its row.
  std::set<
      std::tuple<std::string, int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool,
                 std::int64_t, std::int64_t, std::int64_t, bool, std::int64_t, bool, double>>
      listed;
  std::map<std::tuple<std::string, int, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                      bool, std::int64_t, int, bool, std::int64_t, bool>,
           double>
      family_last;
  for (const PlanRow& row : all) {
    if (!row.meets_ask) continue;
    const Layout& l = row.layout;
    if (!listed
             .insert({l.device->id, static_cast<int>(l.precision), l.tensor_parallel,
                      l.pipeline_parallel, l.context_parallel, l.expert_parallel, l.whole_experts,
                      l.data_parallel, l.virtual_stages, l.micro_batch_size, l.checkpointing,
                      l.checkpoint_layers, l.selective_recompute, row.step_s})
             .second) {
      continue;
    }
    if (objective != PlanObjective::kTime && !std::isfinite(objective_value(row, objective))) {
      continue;  // No price or no TDP in the table: it cannot be ranked by them.
    }
    // Context parallelism trades replicas for sequence splits at the same device count, and
    // micro-batches trade size for count: the splits that rank within the tolerance of a
    // listed one repeat its row.
    const auto family =
        std::make_tuple(l.device->id, static_cast<int>(l.precision), l.devices, l.tensor_parallel,
                        l.pipeline_parallel, l.expert_parallel, l.whole_experts, l.virtual_stages,
                        l.zero_stage, l.checkpointing, l.checkpoint_layers, l.selective_recompute);
    // Rows come best first, so each is compared with its family's last listed row.
    const double value = objective_value(row, objective);
    const auto [last, fresh] = family_last.emplace(family, value);
    if (!fresh) {
      if (value <= last->second * (1 + kVariantTolerance)) {
        ++result.variants_hidden;
        continue;
      }
      last->second = value;
    }
    result.rows.push_back(row);
  }
  result.pareto = pareto_front(all);
  std::map<std::int64_t, const PlanRow*> per_count;
  for (const PlanRow& row : all) {
    const PlanRow*& best = per_count[row.layout.devices];
    if (best == nullptr || better(row, *best, PlanObjective::kTime)) best = &row;
  }
  for (const auto& [count, row] : per_count) {
    result.fastest_per_count.push_back(*row);
  }
  if (result.layouts_never_finish > 0) {
    result.notes.push_back(fmt::format(
        "{} layout{} left out: spot interruptions would come faster than the run recovers",
        format_grouped(result.layouts_never_finish), result.layouts_never_finish == 1 ? "" : "s"));
  }
  if (result.rows.empty()) result.infeasible = infeasible_text(search);
  return result;
}

Estimate plan_estimate(const PlanGraphBuilder& build, const HardwareTable& table,
                       const PlanRequest& request, const Layout& layout) {
  const Graph graph = build(layout.micro_batch_size);
  return estimate(graph, *layout.device, table.performance_for(*layout.device),
                  plan_workload(request, layout));
}

}  // namespace capcalc
