#include "capcalc/budget.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "capcalc/names.hpp"
#include "capcalc/units.hpp"

#include "checked.hpp"
#include "input_file.hpp"
#include "json_view.hpp"
#include "report_words.hpp"
#include "spellcheck.hpp"
#include "workload_spec_json.hpp"

namespace capcalc {
namespace {

constexpr auto kLimits = name_table<LimitKind>({{LimitKind::kMaxLatency, "max_latency"},
                                                {LimitKind::kMinThroughput, "min_throughput"},
                                                {LimitKind::kMaxMemory, "max_memory"},
                                                {LimitKind::kMaxCost, "max_cost"},
                                                {LimitKind::kMaxTrainTime, "max_train_time"},
                                                {LimitKind::kMaxParams, "max_params"},
                                                {LimitKind::kMaxMacs, "max_macs"},
                                                {LimitKind::kMustFit, "must_fit"},
                                                {LimitKind::kMaxTtft, "max_ttft"}});

bool is_min(LimitKind kind) {
  return kind == LimitKind::kMinThroughput;
}

// A value of the kind's quantity, in the units people read; `item` is what a throughput
// counts ("tokens"), "" for samples.
std::string format_value(LimitKind kind, double value, const std::string& item) {
  switch (kind) {
    case LimitKind::kMaxLatency:
    case LimitKind::kMaxTrainTime:
    case LimitKind::kMaxTtft:
      return format_duration(value);
    case LimitKind::kMinThroughput:
      // "995/s", "1.53 k/s", "3.84 k tokens/s"
      return format_count(value) + (item.empty() ? "" : " " + item) + "/s";
    case LimitKind::kMaxMemory:
    case LimitKind::kMustFit:
      return format_bytes(value);
    case LimitKind::kMaxCost:
      return format_usd(value);
    case LimitKind::kMaxParams:
    case LimitKind::kMaxMacs:
      return format_count(value);
  }
  return fmt::format("{}", value);
}

// What the value is, for messages: "latency", "cost per 1M samples", ...
std::string quantity_name(LimitKind kind, Mode mode, CostBasis basis) {
  switch (kind) {
    case LimitKind::kMaxLatency:
      if (basis == CostBasis::kPerMillionTokens) return "request time";
      return mode == Mode::kTraining ? "step time" : "latency";
    case LimitKind::kMinThroughput:
      return "throughput";
    case LimitKind::kMaxTtft:
      return "time to first token";
    case LimitKind::kMaxMemory:
    case LimitKind::kMustFit:
      return "memory";
    case LimitKind::kMaxCost:
      return basis == CostBasis::kPerRun             ? "cost of the run"
             : basis == CostBasis::kPerMillionTokens ? "cost per 1M generated tokens"
                                                     : "cost per 1M samples";
    case LimitKind::kMaxTrainTime:
      return "training time";
    case LimitKind::kMaxParams:
      return "parameters";
    case LimitKind::kMaxMacs:
      return "MACs per sample";
  }
  return "value";
}

std::string parent_dir(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// Keys a budget (or "defaults") may hold: these and the workload's (workload_spec.hpp), where
// "devices" lists the device ids and "device_count" is the devices in all.
constexpr std::array<std::string_view, 7> kBudgetOwnKeys = {"name", "model",  "devices",   "batch",
                                                            "set",  "limits", "mtp_layers"};

std::vector<std::string_view> budget_keys() {
  std::vector<std::string_view> keys(kBudgetOwnKeys.begin(), kBudgetOwnKeys.end());
  for (std::string_view key : workload_keys("device_count")) {
    if (key != "allow_tf32") keys.push_back(key);  // A measurement's; no flag sets it.
  }
  return keys;
}

void check_keys(const JsonView& object, const std::vector<std::string_view>& known) {
  object.expect_object();
  for (const auto& item : object.json().items()) {
    if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
      object.at(item.key())
          .fail(with_suggestion(fmt::format("unknown key \"{}\"", item.key()), item.key(), known));
    }
    check_free_text(object.at(item.key()), item.key());
  }
}

// The budget's member, else the defaults' member.
std::optional<JsonView> lookup(const JsonView& budget, const std::optional<JsonView>& defaults,
                               std::string_view key) {
  if (auto own = budget.find(key)) return own;
  if (defaults) return defaults->find(key);
  return std::nullopt;
}

// "12.5 %"; from 1,000 % on, whole and grouped: "1,703,802,033 %".
std::string percent_text(double fraction) {
  const double percent = 100 * fraction;
  if (percent < 999.95) return fmt::format("{:.1f} %", percent);
  return format_grouped(clamp_to_int64(std::round(percent))) + " %";
}

// A limit of zero is no gate: a maximum of 0 never holds, a minimum of 0 always does.
void check_above_zero(const Limit& limit) {
  if (limit.value > 0) return;
  throw Error({}, is_min(limit.kind)
                      ? fmt::format("a minimum of {} always holds: give one above zero", limit.text)
                      : fmt::format("a limit of {} never holds: give one above zero", limit.text));
}

Limit parse_limit_value(LimitKind kind, const JsonView& value) {
  if (kind == LimitKind::kMustFit) {
    Limit limit;
    limit.kind = kind;
    limit.text = value.as_bool() ? "true" : "false";
    return limit;
  }
  if (value.is_number() && kind != LimitKind::kMaxParams && kind != LimitKind::kMaxMacs) {
    // Only counts go bare; parsing the number as text gives the message with the fix
    // ("16 has no unit: write 16GB or 16GiB").
    try {
      return parse_limit(kind, value.json().dump());
    } catch (const Error& e) {
      value.fail(e.message());
    }
  }
  if (value.is_number()) {
    Limit limit;
    limit.kind = kind;
    limit.value = value.as_number();
    limit.text = fmt::format("{}", limit.value);
    if (limit.value < 0) value.fail(fmt::format("{} must not be negative", limit_name(kind)));
    try {
      check_above_zero(limit);
    } catch (const Error& e) {
      value.fail(e.message());
    }
    return limit;
  }
  if (!value.is_string()) {
    value.fail(fmt::format("expected a string with a unit or a number, got {}",
                           json_type_name(value.json())));
  }
  try {
    return parse_limit(kind, value.as_string());
  } catch (const Error& e) {
    value.fail(e.message());
  }
}

// Merges `limits` into `out`: a kind already there is replaced.
void add_limits(const JsonView& limits, std::vector<Limit>& out,
                std::map<LimitKind, JsonView>& where) {
  const std::vector<std::string_view> names = limit_names();
  check_keys(limits, names);
  for (const auto& item : limits.json().items()) {
    const LimitKind kind = *parse_limit_kind(item.key());
    Limit limit = parse_limit_value(kind, limits.at(item.key()));
    limit.where = {limits.file(), limits.at(item.key()).pointer(), 0, 0};
    where.insert_or_assign(kind, limits.at(item.key()));
    // must_fit: false means no limit.
    const bool keep = kind != LimitKind::kMustFit || limit.text == "true";
    out.erase(
        std::remove_if(out.begin(), out.end(), [&](const Limit& l) { return l.kind == kind; }),
        out.end());
    if (keep) out.push_back(std::move(limit));
  }
}

// The budget's dimensions: "batch", then "set" from the defaults and the budget on top.
void read_dims(const JsonView& view, const std::optional<JsonView>& defaults, Budget& budget) {
  if (auto batch = lookup(view, defaults, "batch")) {
    budget.model_options.dims["batch"] = batch->as_positive_int();
    budget.dims_where["batch"] = {batch->file(), batch->pointer(), 0, 0};
  }
  for (const std::optional<JsonView>& source : {defaults, std::optional<JsonView>(view)}) {
    if (!source) continue;
    if (auto set = source->find("set")) {
      set->expect_object();
      for (const auto& item : set->json().items()) {
        const JsonView dim = set->at(item.key());
        budget.model_options.dims[item.key()] = dim.as_positive_int();
        budget.dims_where[item.key()] = {dim.file(), dim.pointer(), 0, 0};
      }
    }
  }
}

// The workload (workload_spec.hpp): its settings, the training run, the price and serving.
void read_workload(const JsonView& view, const std::optional<JsonView>& defaults, Budget& budget) {
  SpecLocations where;
  const WorkloadSpec spec = read_workload_spec(view, defaults, "device_count", where);
  budget.request.workload = workload_from(spec, &where);
  budget.precision = budget.request.workload.precision;
  // A runtime is resolved against the runtime table when the budget is checked.
  if (!spec.runtime.empty()) {
    if (!spec.profile.empty()) {
      throw Error(where.keys.at("runtime"), "give a runtime or a profile, not both");
    }
    budget.runtime = spec.runtime;
    budget.runtime_where = where.keys.at("runtime");
  }
  budget.request.run = spec.run;
  if (spec.run.tokens) budget.tokens_where = where.keys.at("tokens");
  budget.request.price_per_hour_usd = spec.price_per_hour_usd;
  // LLM serving: rows serve `batch` sequences of prompt_tokens + output_tokens.
  if (!spec.prompt_tokens && !spec.output_tokens) return;
  ServingRequest serving;
  if (spec.prompt_tokens) serving.prompt_tokens = *spec.prompt_tokens;
  if (spec.output_tokens) serving.output_tokens = *spec.output_tokens;
  budget.request.serving = serving;
  budget.model_options.dims["seq"] = serving.prompt_tokens;
  budget.request.serving_graph = [path = budget.model_path, options = budget.model_options](
                                     std::int64_t batch, std::int64_t seq, std::int64_t cached) {
    ModelOptions shaped = options;
    // A model without a "batch" dimension serves one sequence (its graphs' batch is 1).
    if (batch != 1 || shaped.dims.count("batch") > 0) shaped.dims["batch"] = batch;
    shaped.dims["seq"] = seq;
    shaped.counting.kv_cache_length = cached;
    return load_model(path, shaped);
  };
}

// The limits, the defaults' first; each needs the part of the workload it measures.
void read_limits(const JsonView& view, const std::optional<JsonView>& defaults, Budget& budget) {
  std::map<LimitKind, JsonView> limit_where;
  if (defaults) {
    if (auto limits = defaults->find("limits")) add_limits(*limits, budget.limits, limit_where);
  }
  if (auto limits = view.find("limits")) add_limits(*limits, budget.limits, limit_where);
  // Limits that need a part of the workload the budget does not describe, named in its keys.
  for (const Limit& limit : budget.limits) {
    const JsonView& where = limit_where.at(limit.kind);
    if (limit.kind == LimitKind::kMaxTrainTime && budget.request.run.empty()) {
      where.fail(
          "max_train_time needs a training run: \"mode\": \"training\" with \"dataset_size\" "
          "or \"tokens\"");
    }
    if (limit.kind == LimitKind::kMaxTtft && !budget.request.serving) {
      where.fail("max_ttft needs LLM serving: give \"prompt_tokens\"");
    }
  }
  std::stable_sort(budget.limits.begin(), budget.limits.end(),
                   [](const Limit& a, const Limit& b) { return a.kind < b.kind; });
  if (budget.limits.empty()) view.fail("no limits (give \"limits\" here or in \"defaults\")");
}

Budget parse_one(const JsonView& view, const std::optional<JsonView>& defaults,
                 const std::string& file) {
  check_keys(view, budget_keys());
  Budget budget;
  budget.where = {file, view.pointer()};
  const auto model = view.at("model");
  const std::string path = model.as_string();
  if (path.empty()) model.fail("expected a model file, got \"\"");
  budget.model_where = {file, model.pointer(), 0, 0};
  budget.model_path = !path.empty() && path.front() == '/' ? path : parent_dir(file) + path;
  if (auto name = view.find("name")) budget.name = name->as_string();

  const auto devices = lookup(view, defaults, "devices");
  if (!devices) view.fail("missing \"devices\" (here or in \"defaults\")");
  if (devices->array_size() == 0) devices->fail("expected at least one device");
  for (std::size_t i = 0; i < devices->array_size(); ++i) {
    budget.devices.push_back(devices->at(i).as_string());
    budget.device_where.push_back({file, devices->at(i).pointer()});
  }
  read_dims(view, defaults, budget);
  budget.request.model_file = budget.model_path;
  read_workload(view, defaults, budget);
  // Multi-token-prediction modules (ModelOptions::mtp_layers) train beside the model.
  if (auto mtp = lookup(view, defaults, "mtp_layers")) {
    budget.model_options.mtp_layers = read_mtp_layers(*mtp, budget.request.workload.mode);
  }
  read_limits(view, defaults, budget);
  return budget;
}

// A throughput limit that the workload does not count: the message names the limit, by its
// place in a budget file or by its key (a flag).
[[noreturn]] void refuse_rate(const Limit& limit, const std::string& why) {
  const std::string text = Error::verbatim(limit.text);
  if (limit.where.file.empty()) {
    throw Error::naming_keys({}, fmt::format("`min_throughput` \"{}\": {}", text, why));
  }
  throw Error::naming_keys(limit.where, fmt::format("\"{}\": {}", text, why));
}

// The throughput in what the limit counts. A language model's sample is a sequence of `seq`
// tokens, so a bare rate is ambiguous by that factor; serving counts generated tokens.
double throughput_in(const Limit& limit, const Graph& graph, const CompareRow& row, bool serving) {
  const std::string model = Error::verbatim(graph.name);
  const bool tokens = limit.item == RateItem::kTokens;
  if (serving) {
    if (limit.item != RateItem::kNone && !tokens) {
      refuse_rate(limit, fmt::format("serving (`prompt_tokens`) counts generated tokens, not {}; "
                                     "write the limit in tokens/s",
                                     limit.item_word));
    }
    return row.throughput_per_s;
  }
  const std::optional<std::int64_t> seq = sequence_length(graph);
  if (!seq) {
    if (tokens || limit.item == RateItem::kSequences) {
      refuse_rate(limit, fmt::format("{} has no sequence dimension, so it counts no {}; write {} "
                                     "or {}",
                                     model, limit.item_word, rate_with_item(limit.text, ""),
                                     rate_with_item(limit.text, "samples")));
    }
    return row.throughput_per_s;
  }
  if (limit.item == RateItem::kNone) {
    refuse_rate(limit,
                fmt::format("a sample of {} is a sequence of {} tokens; write {} or {}", model,
                            format_grouped(*seq), rate_with_item(limit.text, "tokens"),
                            rate_with_item(limit.text, "sequences")));
  }
  return tokens ? row.throughput_per_s * static_cast<double>(*seq) : row.throughput_per_s;
}

std::string workload_text(const Graph& graph, Precision precision, const Workload& workload,
                          bool serving) {
  std::string text = fmt::format("{}, {}, batch {}", mode_name(workload.mode),
                                 precision_text(precision, workload.fp8_recipe), graph.batch);
  if (const std::optional<std::int64_t> seq = sequence_length(graph); seq && !serving) {
    text += fmt::format(", seq {}", format_grouped(*seq));  // A language model's context.
  }
  if (workload.devices > 1) text += ", " + counted(workload.devices, "device");
  if (workload.runtime) text += fmt::format(", {}", workload.runtime->name);
  return text + parallelism_text(workload);
}

}  // namespace

std::string_view limit_name(LimitKind kind) {
  return kLimits.name(kind);
}

std::vector<std::string_view> limit_names() {
  return kLimits.names();
}

std::optional<LimitKind> parse_limit_kind(std::string_view name) {
  return kLimits.parse(name);
}

Limit parse_limit(LimitKind kind, std::string_view text) {
  Limit limit;
  limit.kind = kind;
  limit.text = std::string(text);
  switch (kind) {
    case LimitKind::kMaxLatency:
    case LimitKind::kMaxTtft:
      limit.value = parse_duration(text);
      break;
    case LimitKind::kMaxTrainTime:
      limit.value = parse_duration(text, DurationScale::kRun);
      break;
    case LimitKind::kMinThroughput: {
      CountedRate rate = parse_counted_rate(text);
      limit.value = rate.per_second;
      limit.item = rate.item;
      limit.item_word = std::move(rate.item_word);
      break;
    }
    case LimitKind::kMaxMemory:
      limit.value = parse_bytes(text);
      break;
    case LimitKind::kMaxCost:
      limit.value = parse_money(text);
      break;
    case LimitKind::kMaxParams:
    case LimitKind::kMaxMacs:
      limit.value = parse_count(text);
      break;
    case LimitKind::kMustFit:
      limit.text = "true";
      return limit;
  }
  check_above_zero(limit);
  return limit;
}

std::vector<Budget> parse_budget(std::string_view text, const std::string& file) {
  const nlohmann::json document = parse_json_text(text, file);
  const JsonView root(document, file);
  check_keys(root, {"$schema", "schema_version", "defaults", "budgets"});
  if (auto version = root.find("schema_version")) {
    if (version->as_integer() != 1) version->fail("unsupported schema_version (expected 1)");
  }
  std::optional<JsonView> defaults = root.find("defaults");
  if (defaults) {
    std::vector<std::string_view> keys = budget_keys();
    keys.erase(std::remove(keys.begin(), keys.end(), "name"), keys.end());
    keys.erase(std::remove(keys.begin(), keys.end(), "model"), keys.end());
    check_keys(*defaults, keys);
  }
  const JsonView budgets = root.at("budgets");
  if (budgets.array_size() == 0) budgets.fail("expected at least one budget");
  std::vector<Budget> out;
  for (std::size_t i = 0; i < budgets.array_size(); ++i) {
    out.push_back(parse_one(budgets.at(i), defaults, file));
  }
  return out;
}

std::vector<Budget> load_budget(const std::string& path) {
  return parse_budget(read_input_file(path), path);
}

std::size_t CheckReport::failures() const {
  return static_cast<std::size_t>(std::count_if(results.begin(), results.end(),
                                                [](const CheckResult& r) { return !r.passed; }));
}

std::vector<CheckResult> check_limits(const Graph& graph, const Device& device,
                                      const PerformanceParams& params, Precision precision,
                                      const CompareRequest& request,
                                      const std::vector<Limit>& limits,
                                      const std::string& budget_name) {
  if (request.workload.runtime && !request.workload.runtime->runs_on(device.type)) {
    throw Error({}, fmt::format("{} does not run on {}, a {}", request.workload.runtime->name,
                                device.name, device_type_name(device.type)));
  }
  const CompareRow row = compare_row(graph, device, params, precision, request);
  if (!row.supported) {
    throw Error({}, fmt::format("{} has {}", device.name, row.note));
  }
  const GraphTotals totals = graph_totals(graph);
  const Mode mode = request.workload.mode;
  const CostBasis basis = request.serving  ? CostBasis::kPerMillionTokens
                          : row.run_time_s ? CostBasis::kPerRun
                                           : CostBasis::kPerMillionSamples;
  std::vector<CheckResult> out;
  for (const Limit& limit : limits) {
    CheckResult result;
    result.budget = budget_name.empty() ? graph.name : budget_name;
    result.model = graph.name;
    result.device = device.id;
    result.workload =
        workload_text(graph, precision, request.workload, request.serving.has_value());
    if (request.serving) {
      result.workload += fmt::format(", serving {} prompt + {} generated tokens",
                                     format_grouped(request.serving->prompt_tokens),
                                     format_grouped(request.serving->output_tokens));
    }
    result.limit = limit;
    std::string unknown_reason;
    double bound = limit.value;
    switch (limit.kind) {
      case LimitKind::kMaxLatency:
        result.value = row.latency_s;
        break;
      case LimitKind::kMinThroughput:
        result.value = throughput_in(limit, graph, row, request.serving.has_value());
        break;
      case LimitKind::kMaxMemory:
        result.value = row.memory_bytes;
        break;
      case LimitKind::kMaxCost:
        result.value = row.cost_usd;
        if (!row.cost_usd)
          unknown_reason = "no price in the hardware table (give a price per hour)";
        break;
      case LimitKind::kMaxTrainTime:
        if (!row.run_time_s) {
          throw Error::naming_keys({},
                                   "`max_train_time` needs a training run: `mode` training with "
                                   "`dataset_size` or `tokens`");
        }
        result.value = row.run_time_s;
        break;
      case LimitKind::kMaxParams:
        result.value = static_cast<double>(totals.params);
        break;
      case LimitKind::kMaxMacs:
        result.value = static_cast<double>(totals.macs) / static_cast<double>(graph.batch);
        break;
      case LimitKind::kMustFit:
        result.value = row.memory_bytes;
        bound = row.device_memory_bytes;
        break;
      case LimitKind::kMaxTtft:
        if (!row.ttft_s) {
          throw Error::naming_keys({}, "`max_ttft` needs LLM serving: `prompt_tokens`");
        }
        result.value = row.ttft_s;
        break;
    }
    const std::string quantity = quantity_name(limit.kind, mode, basis);
    if (!result.value) {
      result.passed = false;
      result.value_text = "unknown";
      result.message = fmt::format("{} unknown: {}", quantity, unknown_reason);
      out.push_back(std::move(result));
      continue;
    }
    const double value = *result.value;
    const std::string item = request.serving ? "generated tokens" : limit.item_word;
    result.value_text = format_value(limit.kind, value, item);
    const double headroom = is_min(limit.kind) ? value - bound : bound - value;
    result.passed = headroom >= 0;
    // A share of a bound of 0 (or 1e-320) is no figure: the amount alone, not "0.0 %" or "inf %".
    const double fraction = bound > 0 ? std::fabs(headroom) / bound : HUGE_VAL;
    const bool has_share = fraction < 1e6;
    const std::string amount = format_value(limit.kind, std::fabs(headroom), item);
    result.margin_text =
        has_share ? fmt::format("{}, {}", amount, percent_text(fraction)) : std::string(amount);
    const std::string over =
        has_share ? fmt::format("{} ({})", amount, percent_text(fraction)) : std::string(amount);
    if (limit.kind == LimitKind::kMustFit) {
      const std::string memory = format_bytes(row.device_memory_bytes);
      result.message =
          result.passed ? fmt::format("memory {} fits in {} (margin {})", result.value_text, memory,
                                      result.margin_text)
          : row.fit_flags.empty()
              ? fmt::format("memory {} does not fit in {}: over by {}; needs at least {} devices",
                            result.value_text, memory, over, row.devices_to_fit)
              : fmt::format("memory {} does not fit in {}: over by {}; fits on {} devices with {}",
                            result.value_text, memory, over, row.devices_to_fit, row.fit_flags);
    } else {
      const std::string_view side = is_min(limit.kind) ? "min" : "max";
      if (result.passed) {
        result.message = fmt::format("{} {} within {} {} (margin {})", quantity, result.value_text,
                                     side, limit.text, result.margin_text);
      } else {
        result.message =
            fmt::format("{} {} {} {} {} by {}", quantity, result.value_text,
                        is_min(limit.kind) ? "is below" : "exceeds", side, limit.text, over);
      }
    }
    out.push_back(std::move(result));
  }
  return out;
}

namespace {

// The budget's model, with the budget's values. What the budget got wrong (a path that does
// not open, a dimension the model lacks) is blamed on the budget's key; what is wrong inside
// the model stays the model's.
Graph load_budget_model(const Budget& budget) {
  try {
    return load_model(budget.model_path, budget.model_options);
  } catch (const OverflowError&) {
    throw Error(budget.where, overflow_message(budget.model_options.dims));
  } catch (const Error& e) {
    // A count past 64 bits comes from the budget's batch or dims, not from the model.
    if (e.message().find("a count does not fit in a 64-bit integer (with ") != std::string::npos &&
        !budget.where.file.empty()) {
      throw Error(budget.where, overflow_message(budget.model_options.dims));
    }
    if (e.where().file != budget.model_path || budget.model_where.file.empty()) throw;
    const std::string& pointer = e.where().pointer;
    if (pointer.empty() && e.where().line == 0) {
      throw Error(budget.model_where, fmt::format("{}: {}", budget.model_path, e.message()));
    }
    if (pointer == "/dims") {
      for (const auto& [name, where] : budget.dims_where) {
        if (e.message().find(fmt::format("\"{}\"", name)) != std::string::npos) {
          throw Error(where, fmt::format("{} (model {})", e.message(), budget.model_path));
        }
      }
    }
    throw;
  }
}

}  // namespace

CheckReport check_budgets(const std::vector<Budget>& budgets, const HardwareTable& table,
                          const RuntimeTable* runtimes) {
  CheckReport report;
  for (const Budget& given : budgets) {
    Budget budget = given;
    if (!budget.runtime.empty()) {
      if (runtimes == nullptr) {
        throw Error(budget.runtime_where, "a runtime needs the runtime table, and none was given");
      }
      try {
        budget.request.workload.runtime = runtimes->get(budget.runtime);
      } catch (const Error& e) {
        throw Error(budget.runtime_where, e.message());
      }
    }
    const Graph graph = load_budget_model(budget);
    if (budget.request.run.tokens && graph.dims.count("seq") == 0) {
      throw Error(budget.tokens_where,
                  fmt::format("\"tokens\" needs a model with a \"seq\" dimension (tokens per "
                              "sample); {} has none",
                              budget.model_path));
    }
    for (std::size_t i = 0; i < budget.devices.size(); ++i) {
      const Device* device = nullptr;
      try {
        device = &table.get(budget.devices[i]);
      } catch (const Error& e) {
        throw Error(budget.device_where[i], e.message());
      }
      const std::optional<Runtime>& runtime = budget.request.workload.runtime;
      if (runtime && !runtime->runs_on(device->type)) {
        throw Error(budget.runtime_where,
                    fmt::format("{} does not run on {}, a {}", runtime->name, device->name,
                                device_type_name(device->type)));
      }
      std::vector<CheckResult> results;
      try {
        results = check_limits(graph, *device, table.performance_for(*device),
                               precision_on(budget.request.workload, *device), budget.request,
                               budget.limits, budget.name);
      } catch (const Error& e) {
        if (!e.where().file.empty()) throw;
        throw Error(budget.where, e.message());
      } catch (const OverflowError&) {
        throw Error(budget.where, overflow_message(budget.model_options.dims));
      }
      for (CheckResult& r : results)
        report.results.push_back(std::move(r));
    }
  }
  return report;
}

}  // namespace capcalc
