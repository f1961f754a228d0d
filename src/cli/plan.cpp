// `capcalc plan` (search layouts, device types and counts for a training run) and
// `capcalc scale` (speed-up per device count).
#include "capcalc/plan.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/report_plan.hpp"
#include "capcalc/units.hpp"

#include "commands.hpp"
#include "formats.hpp"
#include "output_file.hpp"
#include "usage.hpp"
#include "workload_args.hpp"

namespace capcalc::cli {
namespace {

// What plan and scale share: the model, the hardware, the step and the memory reserve.
struct PlanArgs {
  ModelArgs model;
  HardwareArgs hardware;
  std::vector<std::string> precisions{"bf16"};
  std::string optimizer;
  std::string runtime;
  std::vector<std::string> runtime_files;
  std::string fp8_recipe;
  std::string global_batch;  // Empty: 4Mi tokens (a model with "seq"), else 512 samples.
  std::string memory_reserve = "10%";
  std::vector<std::int64_t> micro_batch_sizes{1, 2, 4, 8};
  std::optional<double> moe_imbalance;
  std::string moe_dispatcher;
  std::vector<std::string> recompute;  // --recompute: Megatron-Core's module names.
  std::int64_t lora_rank = 0;
  std::string lora_targets = "all-linear";
  std::string format;  // --format; add_format_option sets the default (formats.hpp).
};

// --pricing and the figures each kind takes (include/capcalc/pricing.hpp).
struct PricingOptions {
  std::string kind = "on-demand";
  std::string price;  // "$2.10/h": per device-hour.
  std::string discount;
  std::optional<double> interruptions;  // Per device-day.
  std::string restart;
  std::string checkpoint_every;
  std::string capex;
  std::optional<double> life_years;
  std::string power_price;  // "$0.08/kWh".
  std::optional<double> pue;
};

struct PlanOptions {
  PlanArgs common;
  RunSize run;
  std::vector<std::string> devices;
  std::string type;
  bool all = false;
  std::int64_t max_devices = 4096;
  std::string deadline;
  std::string budget;
  PricingOptions pricing;
  std::string objective = "time";
  std::size_t top = 10;
  std::optional<std::size_t> explain;
};

struct ScaleOptions {
  PlanArgs common;
  std::string device;
  std::string counts = "8..4096";
  std::string output;  // -o: the SVG.
  bool weak = false;
};

bool iends_with(std::string_view text, std::string_view suffix) {
  if (text.size() < suffix.size()) return false;
  const std::string_view tail = text.substr(text.size() - suffix.size());
  return std::equal(tail.begin(), tail.end(), suffix.begin(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  });
}

// A quantity read by units.hpp, its message prefixed by the flag ("--deadline: 30 has no unit").
template <typename Parse>
double with_flag(const char* flag, Parse parse) {
  try {
    return parse();
  } catch (const Error& e) {
    throw Error({}, fmt::format("{}: {}", flag, e.message()));
  }
}

// A deadline or budget of zero is no ask: no run meets it (as check's limits of 0).
void above_zero(const char* flag, const std::string& text, double value) {
  if (value > 0) return;
  throw Error({}, fmt::format("{}: a limit of {} never holds: give one above zero", flag, text));
}

// "4M-tokens", "4Mi tokens", "512-samples": a count with a binary (Ki, Mi, Gi) or SI suffix
// and a unit, which is required.
struct GlobalBatch {
  double value = 0;
  bool tokens = false;
};

GlobalBatch parse_global_batch(const std::string& text) {
  std::string_view rest = text;
  GlobalBatch batch;
  if (iends_with(rest, "tokens")) {
    batch.tokens = true;
    rest.remove_suffix(6);
  } else if (iends_with(rest, "samples")) {
    rest.remove_suffix(7);
  } else {
    throw Error({}, fmt::format("--global-batch: {} has no unit: write {}-tokens or {}-samples",
                                text, text, text));
  }
  while (!rest.empty() && (rest.back() == '-' || rest.back() == ' '))
    rest.remove_suffix(1);
  double factor = 1;
  static constexpr std::pair<std::string_view, double> kBinary[] = {
      {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}};
  for (const auto& [suffix, f] : kBinary) {
    if (rest.size() > suffix.size() && rest.substr(rest.size() - suffix.size()) == suffix) {
      rest.remove_suffix(suffix.size());
      factor = f;
      break;
    }
  }
  try {
    batch.value = parse_count(rest) * factor;
  } catch (const Error&) {
    throw Error({}, fmt::format("--global-batch \"{}\": expected a count and a unit, e.g. "
                                "4Mi-tokens, 4M-tokens or 512-samples",
                                text));
  }
  if (!(batch.value >= 1)) throw Error({}, fmt::format("--global-batch {} is below 1", text));
  if (batch.value > 1e18) throw Error({}, fmt::format("--global-batch {} is too large", text));
  return batch;
}

// The global batch in whole samples; a note when tokens do not make whole sequences.
std::int64_t global_batch_samples(const PlanArgs& args, const Graph& graph,
                                  std::vector<std::string>& notes) {
  const auto seq = graph.dims.find("seq");
  const std::string text = !args.global_batch.empty()
                               ? args.global_batch
                               : (seq != graph.dims.end() ? "4Mi-tokens" : "512-samples");
  const GlobalBatch batch = parse_global_batch(text);
  if (!batch.tokens) {
    if (batch.value != std::floor(batch.value)) {
      throw Error({}, fmt::format("--global-batch {}: a whole number of samples", text));
    }
    return static_cast<std::int64_t>(batch.value);
  }
  if (seq == graph.dims.end()) {
    throw Error({args.model.path},
                "--global-batch in tokens needs a model with a \"seq\" dimension: give samples");
  }
  const double samples = batch.value / static_cast<double>(seq->second);
  const auto rounded = static_cast<std::int64_t>(std::max(1.0, std::round(samples)));
  if (static_cast<double>(rounded) != samples) {
    notes.push_back(fmt::format("--global-batch {} is {:.1f} sequences of {}: taken as {}{}", text,
                                samples, seq->second, rounded,
                                batch.tokens && text.find("Mi") == std::string::npos
                                    ? " (Mi, Ki and Gi are powers of 1024: 4Mi-tokens)"
                                    : ""));
  }
  return rounded;
}

// "$2.10/h", "2.1USD/h" (per device-hour) or "$0.08/kWh": money, then the unit it is per.
double money_per(const char* flag, const std::string& text, std::string_view per,
                 std::string_view example) {
  std::string_view rest = text;
  if (!iends_with(rest, per)) {
    throw Error({}, fmt::format("{} \"{}\": expected USD{}, e.g. {}", flag, text, per, example));
  }
  rest.remove_suffix(per.size());
  return with_flag(flag, [&] { return parse_money(rest); });
}

// "40%": a share, below 100 % (`example` is shown for a bad one; `full` follows "FLAG TEXT"
// when it reaches 100 %).
double parse_share(const char* flag, const std::string& text, std::string_view example,
                   std::string_view full) {
  std::string_view rest = text;
  if (rest.empty() || rest.back() != '%') {
    throw Error({}, fmt::format("{}: {} has no unit: write {}%", flag, text, text));
  }
  rest.remove_suffix(1);
  double value = 0;
  try {
    value = parse_count(rest);
  } catch (const Error&) {
    throw Error({}, fmt::format("{} \"{}\": expected a percentage, e.g. {}", flag, text, example));
  }
  if (value >= 100) throw Error({}, fmt::format("{} {}{}", flag, text, full));
  return value / 100;
}

// The flags of one pricing kind are refused with another: they would be ignored.
Pricing pricing_from(const PricingOptions& o) {
  Pricing p;
  p.kind = parse_pricing_kind(o.kind).value_or(PricingKind::kOnDemand);
  const bool spot = p.kind == PricingKind::kSpot;
  const bool owned = p.kind == PricingKind::kOwned;
  const auto only_with = [&](bool given, const char* flag, bool allowed, const char* kinds) {
    if (given && !allowed) {
      throw Error({}, fmt::format("{} is for --pricing {}, not {}", flag, kinds, o.kind));
    }
  };
  only_with(!o.price.empty(), "--price", !owned, "on-demand, reserved or spot");
  only_with(!o.discount.empty(), "--discount", !owned, "on-demand, reserved or spot");
  only_with(o.interruptions.has_value(), "--interruptions", spot, "spot");
  only_with(!o.restart.empty(), "--restart", spot, "spot");
  only_with(!o.checkpoint_every.empty(), "--checkpoint-every", spot, "spot");
  only_with(!o.capex.empty(), "--capex", owned, "owned");
  only_with(o.life_years.has_value(), "--life", owned, "owned");
  only_with(!o.power_price.empty(), "--power-price", owned, "owned");
  only_with(o.pue.has_value(), "--pue", owned, "owned");
  if (!o.price.empty() && !o.discount.empty()) {
    throw Error({}, "give --price or --discount, not both");
  }
  if (!o.price.empty()) p.usd_per_device_hour = money_per("--price", o.price, "/h", "$2.10/h");
  if (!o.discount.empty())
    p.discount = parse_share("--discount", o.discount, "40%", ": must be below 100%");
  if ((p.kind == PricingKind::kReserved || spot) && o.price.empty() && o.discount.empty()) {
    throw Error({}, fmt::format("--pricing {} needs its rate: --price (per device-hour, e.g. "
                                "$2.10/h) or --discount off the table's on-demand price (e.g. 40%)",
                                o.kind));
  }
  if (spot) {
    if (!o.interruptions || o.restart.empty() || o.checkpoint_every.empty()) {
      throw Error({},
                  "--pricing spot needs --interruptions (per device-day), --restart (e.g. "
                  "15min) and --checkpoint-every (e.g. 1h)");
    }
    p.interruptions_per_device_day = *o.interruptions;
    p.restart_s =
        with_flag("--restart", [&] { return parse_duration(o.restart, DurationScale::kInterval); });
    p.checkpoint_interval_s = with_flag("--checkpoint-every", [&] {
      return parse_duration(o.checkpoint_every, DurationScale::kInterval);
    });
  }
  if (owned) {
    if (o.capex.empty()) {
      throw Error({},
                  "--pricing owned needs --capex: the purchase price per device, with its "
                  "share of the server and network (e.g. $35k)");
    }
    p.capex_usd_per_device = with_flag("--capex", [&] { return parse_money(o.capex); });
    if (o.life_years) p.life_years = *o.life_years;
    if (!o.power_price.empty())
      p.power_usd_per_kwh = money_per("--power-price", o.power_price, "/kWh", "$0.08/kWh");
    if (o.pue) p.pue = *o.pue;
  }
  return p;
}

void add_pricing_options(CLI::App& sub, PricingOptions& o) {
  one_of(sub.add_option("--pricing", o.kind,
                        "How the devices are paid for: the table's on-demand price, reserved or "
                        "spot at --price or --discount, or owned (--capex)"),
         pricing_kind_names())
      ->capture_default_str();
  sub.add_option("--price", o.price, "USD per device-hour, e.g. $2.10/h (not owned)");
  sub.add_option("--discount", o.discount,
                 "Off the table's on-demand price, e.g. 40% (reserved, spot)");
  number_in(sub.add_option("--interruptions", o.interruptions,
                           "Spot: interruptions per device-day; any one stops the job"),
            0, 1e6);
  sub.add_option("--restart", o.restart,
                 "Spot: from an interruption to training again, e.g. 15min");
  sub.add_option("--checkpoint-every", o.checkpoint_every,
                 "Spot: checkpoint interval; half of one is lost per interruption, e.g. 1h");
  sub.add_option("--capex", o.capex,
                 "Owned: purchase price per device, with its share of server and network");
  number_above(sub.add_option("--life", o.life_years,
                              "Owned: years the purchase is spread over (default 5)"),
               0, 100);
  sub.add_option("--power-price", o.power_price,
                 "Owned: electricity, e.g. $0.08/kWh (default $0.0806/kWh, EIA 2023)");
  number_in(sub.add_option("--pue", o.pue, "Owned: power usage effectiveness (default 1.58)"), 1,
            10);
}

// "10%": the share of each device's memory left free.
double parse_reserve(const std::string& text) {
  return parse_share("--memory-reserve", text, "10%", " leaves no memory");
}

void add_plan_args(CLI::App& sub, PlanArgs& args) {
  sub.add_option("model", args.model.path,
                 "Model file (capcalc JSON, ONNX or a Hugging Face config.json)")
      ->required();
  sub.add_option("--set", args.model.sets,
                 "Set a model dimension, e.g. --set seq=4096 (repeatable)");
  one_of(sub.add_option("--causal", args.model.causal, "Count causal attention as full or half"),
         causal_counting_names())
      ->capture_default_str();
  add_mtp_option(sub, args.model.mtp_layers);
  add_hardware_options(sub, args.hardware);
  one_of(sub.add_option("-p,--precision", args.precisions,
                        "Number formats to try, comma-separated (default bf16)")
             ->delimiter(','),
         precision_names());
  add_optimizer_option(sub, args.optimizer);
  add_runtime_options(sub, args.runtime, args.runtime_files);
  add_fp8_recipe_option(sub, args.fp8_recipe);
  sub.add_option("--global-batch", args.global_batch,
                 "Samples per optimizer step (data-parallel x micro-batches x micro-batch size), "
                 "with a unit: 4Mi-tokens, 4M-tokens or 512-samples (default 4Mi-tokens, or "
                 "512-samples for a model without \"seq\")");
  sub.add_option("--memory-reserve", args.memory_reserve,
                 "Share of each device's memory left free (framework, allocator, buffers)")
      ->capture_default_str();
  whole_number(sub.add_option("--micro-batch-sizes", args.micro_batch_sizes,
                              "Micro-batch sizes to try, comma-separated (default 1,2,4,8)")
                   ->delimiter(','));
  number_in(sub.add_option("--moe-imbalance", args.moe_imbalance,
                           "MoE: the busiest expert's load over the mean; the moe layers take "
                           "this many times as long in every layout (default 1: balanced, an "
                           "assumption)"),
            1, 1000);
  one_of(sub.add_option("--moe-dispatcher", args.moe_dispatcher,
                        "MoE: how tokens reach their experts in the layouts with expert "
                        "parallelism, alltoall (the default), deepep or hybridep (a copy for "
                        "each device holding any, across nodes one for each node), or "
                        "allgather (every token gathered, outputs reduce-scattered)"),
         moe_dispatcher_names());
  add_lora_options(sub, args.lora_rank, args.lora_targets);
  add_recompute_option(sub, args.recompute);
}

// The request both commands start from, and the builder of each micro-batch's graph.
struct Prepared {
  HardwareTable table;
  PlanRequest request;
  PlanGraphBuilder build;
  Graph graph;  // At a micro-batch of 1.
  std::vector<std::string> notes;
};

std::unique_ptr<Prepared> prepare(const PlanArgs& args) {
  auto p = std::make_unique<Prepared>();
  p->table = load_table(args.hardware);
  const ModelArgs model = args.model;
  p->build = [model](std::int64_t batch) {
    ModelArgs at = model;
    at.batch = batch;
    return load_model_from(at);
  };
  p->graph = p->build(1);
  p->request.precisions.clear();
  for (const std::string& name : args.precisions) {
    p->request.precisions.push_back(precision_from(name));
  }
  p->request.optimizer =
      parse_optimizer(args.optimizer.empty() ? "adam" : args.optimizer).value_or(Optimizer::kAdam);
  const RuntimeTable runtimes = load_runtime_table(args.runtime_files);
  if (!args.runtime.empty()) {
    p->request.runtime = runtimes.get(args.runtime);
    p->notes.push_back(fmt::format("every layout runs under {}: its profile and kernels per layer",
                                   p->request.runtime->name));
  }
  if (!args.fp8_recipe.empty()) {
    if (std::find(p->request.precisions.begin(), p->request.precisions.end(), Precision::kFp8) ==
        p->request.precisions.end()) {
      throw Error({}, "--fp8-recipe scales FP8 tensors: add fp8 to --precision");
    }
    p->request.fp8_recipe = *parse_fp8_recipe(args.fp8_recipe);
    p->notes.push_back(
        fmt::format("fp8 layouts scale FP8 tensors {}", fp8_recipe_name(p->request.fp8_recipe)));
  }
  p->request.memory_reserve = parse_reserve(args.memory_reserve);
  p->request.micro_batch_sizes = args.micro_batch_sizes;
  p->request.global_batch = global_batch_samples(args, p->graph, p->notes);
  if (args.moe_imbalance) {
    if (auto problem = expert_parallel_problem(p->graph, 1, *args.moe_imbalance)) {
      throw Error({args.model.path}, *problem);
    }
    p->request.moe_imbalance = *args.moe_imbalance;
    p->notes.push_back(fmt::format(
        "MoE load imbalance {:g}: every layout's moe layers take {:g} times as long as balanced "
        "routing's",
        *args.moe_imbalance, *args.moe_imbalance));
  }
  if (!args.moe_dispatcher.empty()) {
    if (!has_experts(p->graph)) {
      throw Error({args.model.path}, "--moe-dispatcher: the model has no \"moe\" layer");
    }
    p->request.moe_dispatcher = *parse_moe_dispatcher(args.moe_dispatcher);
    p->notes.push_back(fmt::format("layouts with expert parallelism dispatch tokens by {}",
                                   moe_dispatcher_title(p->request.moe_dispatcher)));
  }
  if (!args.recompute.empty()) {
    for (const std::string& name : args.recompute) {
      p->request.recompute |= static_cast<unsigned>(*parse_recompute_module(name));
    }
    if (auto problem = recompute_problem(p->graph, p->request.recompute)) {
      throw Error({args.model.path}, *problem);
    }
    if (p->request.recompute != 0) {
      p->notes.push_back(fmt::format(
          "\"selective\" layouts recompute {} in backward (Megatron-Core's recompute_modules); "
          "the others nothing, or every block (\"ckpt\")",
          recompute_modules_text(p->request.recompute)));
    }
  }
  if (args.lora_targets != "all-linear" && args.lora_rank == 0) {
    throw Error({}, "--lora-targets places LoRA's adapters: add --lora-rank");
  }
  if (args.lora_rank > 0) {
    p->request.lora_rank = args.lora_rank;
    p->request.lora_attention_only = args.lora_targets == "attention";
    p->notes.push_back(fmt::format(
        "LoRA rank {} on {}: the model's weights frozen, every layout trains the adapters only",
        args.lora_rank,
        p->request.lora_attention_only ? "attention's projections"
                                       : "every linear layer but the output"));
  }
  return p;
}

void run_plan(const PlanOptions& options) {
  const int ways =
      (options.devices.empty() ? 0 : 1) + (options.type.empty() ? 0 : 1) + (options.all ? 1 : 0);
  if (ways != 1) throw Error({}, "give exactly one of --gpu LIST, --type TYPE or --all");
  if (options.explain && !plan_formats().is_default(options.common.format)) {
    throw Error({}, "--explain is for the table: add --format table");
  }
  auto p = prepare(options.common);
  PlanRequest& request = p->request;
  if (!options.devices.empty()) {
    for (const std::string& name : options.devices) {
      const Device* device = &p->table.get(name);
      if (std::find(request.devices.begin(), request.devices.end(), device) ==
          request.devices.end()) {
        request.devices.push_back(device);
      }
    }
  } else {
    for (const Device& device : p->table.devices) {
      if (options.all || device_type_name(device.type) == options.type) {
        request.devices.push_back(&device);
      }
    }
    if (request.devices.empty()) {
      throw Error({}, fmt::format("no device of type \"{}\" in the table", options.type));
    }
  }
  const std::optional<double> samples =
      run_samples(options.run, p->graph, options.common.model.path);
  if (!samples) throw Error({}, "plan needs the run's size: add --tokens or --dataset-size");
  request.samples = *samples;
  request.max_devices = options.max_devices;
  if (!options.deadline.empty()) {
    request.deadline_s = with_flag(
        "--deadline", [&] { return parse_duration(options.deadline, DurationScale::kRun); });
    above_zero("--deadline", options.deadline, *request.deadline_s);
  }
  if (!options.budget.empty()) {
    request.budget_usd = with_flag("--budget", [&] { return parse_money(options.budget); });
    above_zero("--budget", options.budget, *request.budget_usd);
  }
  request.pricing = pricing_from(options.pricing);
  request.objective = parse_plan_objective(options.objective).value_or(PlanObjective::kTime);

  PlanResult result = plan(p->build, p->table, request);
  result.notes.insert(result.notes.begin(), p->notes.begin(), p->notes.end());
  PlanReportInput input;
  input.request = &request;
  input.result = &result;
  input.model = p->graph.name;
  const GraphTotals totals = graph_totals(p->graph);
  input.params = static_cast<double>(totals.params);
  input.active_params = static_cast<double>(totals.active_params);
  const auto seq = p->graph.dims.find("seq");
  input.tokens_per_sample = seq == p->graph.dims.end() ? 1 : static_cast<double>(seq->second);
  input.has_tokens = seq != p->graph.dims.end();
  input.top = options.top;
  Estimate explained;
  if (options.explain) {
    if (*options.explain > result.rows.size()) {
      throw Error({}, fmt::format("--explain {}: the plan has {} row{}", *options.explain,
                                  result.rows.size(), result.rows.size() == 1 ? "" : "s"));
    }
    input.explain_row = *options.explain;
    explained =
        plan_estimate(p->build, p->table, request, result.rows[*options.explain - 1].layout);
    input.explain = &explained;
  }
  const std::string text = plan_formats().render(options.common.format, input);
  fmt::print("{}", text);
}

// "8..4096": the powers of two from 8 to 4096; "8,24,64": those counts.
std::vector<std::int64_t> parse_counts(const std::string& text) {
  const auto whole = [&](std::string_view part) {
    std::int64_t value = 0;
    const bool digits =
        !part.empty() && part.size() <= 12 && std::all_of(part.begin(), part.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        });
    for (char c : digits ? part : std::string_view())
      value = value * 10 + (c - '0');
    if (value < 1) {
      throw Error({}, fmt::format("--devices \"{}\": expected a range of whole numbers ≥ 1, e.g. "
                                  "8..4096 (powers of two) or 8,16,64",
                                  text));
    }
    return value;
  };
  std::vector<std::int64_t> counts;
  const std::size_t dots = text.find("..");
  if (dots != std::string::npos) {
    const std::int64_t low = whole(std::string_view(text).substr(0, dots));
    const std::int64_t high = whole(std::string_view(text).substr(dots + 2));
    if (low > high) {
      throw Error({}, fmt::format("--devices {}: the range runs from low to high", text));
    }
    for (std::int64_t n = low; n <= high; n *= 2)
      counts.push_back(n);
    if (counts.back() != high) counts.push_back(high);
    return counts;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    counts.push_back(whole(std::string_view(text).substr(start, comma - start)));
    start = comma + 1;
  }
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

void run_scale(const ScaleOptions& options) {
  check_writable(options.output);
  const std::vector<std::int64_t> counts = parse_counts(options.counts);
  auto p = prepare(options.common);
  if (options.device.find(',') != std::string::npos) {
    throw Error({}, fmt::format("--gpu {}: scale follows one device type (plan compares several: "
                                "capcalc plan ... --gpu {})",
                                options.device, options.device));
  }
  const Device& device = p->table.get(options.device);
  p->request.devices = {&device};
  p->request.samples = static_cast<double>(p->request.global_batch);  // Step times only.
  ScaleResult scale = plan_scaling(p->build, p->table, p->request, counts, options.weak);
  scale.notes.insert(scale.notes.begin(), p->notes.begin(), p->notes.end());
  const std::string text =
      scale_formats().render(options.common.format, {scale, p->graph.name, device.id});
  if (!options.output.empty()) {
    write_output(options.output, render_scale_svg(scale, p->graph.name, device.id));
  }
  fmt::print("{}", text);
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* sub = app.add_subcommand(
      "plan", "Search device types, counts and layouts for a training run: time, cost, energy");
  add_plan_args(*sub, options->common);
  add_run_size_options(*sub, options->run);
  sub->add_option("-g,--gpu,--hw,--device", options->devices,
                  "Device types to plan on, comma-separated ids or aliases (H100,B200,MI300X)")
      ->delimiter(',');
  one_of(sub->add_option("--type", options->type, "Every device of this type"),
         device_type_names());
  sub->add_flag("--all", options->all, "Every device in the table");
  whole_number(sub->add_option("--max-devices", options->max_devices,
                               "Most devices of one type in a layout"))
      ->capture_default_str();
  sub->add_option("--deadline", options->deadline, "Longest acceptable run, e.g. 30d or 720h");
  sub->add_option("--budget", options->budget, "Most the run may cost, e.g. $2M or 500kUSD");
  add_pricing_options(*sub, options->pricing);
  one_of(sub->add_option("--objective", options->objective, "What to rank layouts by"),
         plan_objective_names())
      ->capture_default_str();
  whole_number(sub->add_option("--top", options->top, "How many layouts to list"))
      ->capture_default_str();
  whole_number(sub->add_option("--explain", options->explain,
                               "Break down row N: compute, communication, bubble, memory"));
  add_format_option(*sub, options->common.format, plan_formats());
  sub->callback([options] { run_plan(*options); });
}

void add_scale_command(CLI::App& app) {
  auto options = std::make_shared<ScaleOptions>();
  CLI::App* sub = app.add_subcommand(
      "scale", "Speed-up and scaling efficiency per device count, the fastest layout at each");
  add_plan_args(*sub, options->common);
  sub->add_option("-g,--gpu,--hw,--device", options->device, "The device type")->required();
  sub->add_option("--devices", options->counts,
                  "Device counts: LOW..HIGH (powers of two) or a comma-separated list")
      ->capture_default_str();
  add_format_option(*sub, options->common.format, scale_formats());
  sub->add_flag("--weak", options->weak,
                "Weak scaling: the global batch grows with the count from --global-batch at the "
                "first count (default: strong, the global batch stays)");
  sub->add_option("-o,--output", options->output,
                  "Also draw the speed-up against the device count as an SVG file");
  sub->callback([options] { run_scale(*options); });
}

}  // namespace capcalc::cli
