#include "capcalc/validate.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "capcalc/compare.hpp"
#include "capcalc/error.hpp"
#include "capcalc/model.hpp"
#include "capcalc/names.hpp"
#include "capcalc/predict.hpp"

#include "checked.hpp"
#include "input_file.hpp"
#include "json_view.hpp"
#include "spellcheck.hpp"
#include "workload_spec_json.hpp"

namespace capcalc {
namespace {

constexpr auto kMetrics = name_table<Metric>({
    {Metric::kThroughput, "throughput_per_s"},
    {Metric::kLatency, "latency_s"},
    {Metric::kTokensPerSecond, "tokens_per_s"},
    {Metric::kMfu, "mfu"},
    {Metric::kTflopsPerDevice, "tflops_per_device"},
    {Metric::kGpuHours, "gpu_hours"},
    {Metric::kTtft, "ttft_s"},
    {Metric::kInterTokenLatency, "inter_token_latency_s"},
    {Metric::kRequestLatency, "request_latency_s"},
    {Metric::kOutputTokensPerSecond, "output_tokens_per_s"},
});

// The units a metric's figure may be published in (the schema's, for people; a unit that
// disagrees with the metric is a misread figure).
std::vector<std::string_view> units_of(Metric metric) {
  switch (metric) {
    case Metric::kThroughput:
      return {"images/s", "sequences/s", "samples/s"};
    case Metric::kTokensPerSecond:
    case Metric::kOutputTokensPerSecond:
      return {"tokens/s"};
    case Metric::kMfu:
      return {"fraction"};
    case Metric::kTflopsPerDevice:
      return {"TFLOP/s"};
    case Metric::kGpuHours:
      return {"GPU-hours"};
    case Metric::kLatency:
    case Metric::kTtft:
    case Metric::kInterTokenLatency:
    case Metric::kRequestLatency:
      break;
  }
  return {"s"};
}

bool is_serving(Metric metric) {
  return metric == Metric::kTtft || metric == Metric::kInterTokenLatency ||
         metric == Metric::kRequestLatency || metric == Metric::kOutputTokensPerSecond;
}

// A case's keys: its own (what was measured, where it comes from) and the workload's, which
// read_workload_spec() reads (workload_spec_json.hpp), less a training run's size and price
// and the replicas (a case gives its devices in all), which no measurement uses.
std::vector<std::string_view> case_keys() {
  std::vector<std::string_view> keys = {"id",     "model", "dims",  "device",   "metric",
                                        "value",  "unit",  "per",   "tokens",   "software",
                                        "source", "quote", "notes", "held_out", "mtp_layers"};
  for (std::string_view key : workload_keys("devices")) {
    const bool unused = key == "dataset_size" || key == "epochs" || key == "price_per_hour_usd" ||
                        key == "data_parallel" || key == "tokens";
    if (!unused) keys.push_back(key);
  }
  return keys;
}

// How the case ran (workload_spec.hpp): its precision and mode (both required), profile
// (eager when it names none) and parallel layout, each checked at its key.
Workload parse_case_workload(const JsonView& entry) {
  (void)entry.at("precision");
  (void)entry.at("mode");
  SpecLocations where;
  const WorkloadSpec spec = read_workload_spec(entry, std::nullopt, "devices", where);
  Workload w = workload_from(spec, &where);
  if (!w.profile) w.profile = Profile::kEager;
  return w;
}

// What was measured: the metric, per device or in total, and the figure (and a training
// run's tokens), each checked at its key.
void parse_case_figure(const JsonView& entry, Measurement& m) {
  const JsonView metric = entry.at("metric");
  const std::string metric_text = metric.as_string();
  const std::optional<Metric> found = kMetrics.parse(metric_text);
  if (!found) {
    metric.fail(
        with_suggestion("unknown metric \"" + metric_text + "\"", metric_text, kMetrics.names()));
  }
  m.metric = *found;
  if (auto per = entry.find("per"); per && !per->is_null()) {
    const std::string basis = per->as_string();
    if (basis != "total" && basis != "device") {  // A typo must not silently mean "total".
      per->fail(with_suggestion("expected \"total\" or \"device\", got \"" + basis + "\"", basis,
                                {"total", "device"}));
    }
    m.per_device = basis == "device";
  }
  const JsonView value = entry.at("value");
  m.value = value.as_positive_number();
  // A published figure is never below 1e-9 (a nanosecond, an MFU of 1e-9) nor above 1e15 in
  // SI units; past these a typo's exponent gives an infinite or zero ratio.
  if (m.value < 1e-9 || m.value > 1e15) {
    value.fail(fmt::format("{} is outside the range of a measurement (1e-09 to 1e+15)", m.value));
  }
  if (m.metric == Metric::kMfu && m.value > 1) {
    value.fail(fmt::format("an MFU is a fraction of the peak, at most 1; got {}", m.value));
  }
  if (auto tokens = entry.find("tokens"); tokens && !tokens->is_null()) {
    m.tokens = tokens->as_positive_number();
    if (*m.tokens > kMaxTrainingTokens) {
      tokens->fail(fmt::format("{} is more than {} (the limit)", *m.tokens, kMaxTrainingTokens));
    }
  }
}

Measurement parse_case(const JsonView& entry, Provenance provenance) {
  entry.expect_object();
  reject_unknown_keys(entry, case_keys(), "a measurement");
  Measurement m;
  m.id = entry.at("id").as_string();
  m.model = entry.at("model").as_string();
  if (auto dims = entry.find("dims")) {
    dims->expect_object();
    for (const auto& item : dims->json().items())
      m.dims[item.key()] = dims->at(item.key()).as_positive_int();
  }
  m.device = entry.at("device").as_string();
  parse_case_figure(entry, m);
  // The metric's rule before the workload's (serving is inference): its message names it.
  if (is_serving(m.metric) && entry.at("mode").as_string() == "training") {
    entry.at("mode").fail("an LLM serving metric needs \"mode\": \"inference\"");
  }
  m.workload = parse_case_workload(entry);
  if (auto runtime = entry.find("runtime")) m.runtime = runtime->as_string();
  if (m.metric == Metric::kGpuHours && !m.tokens) entry.fail("a gpu_hours case needs \"tokens\"");
  if (auto held_out = entry.find("held_out")) m.held_out = held_out->as_bool();
  if (auto prompt = entry.find("prompt_tokens")) m.prompt_tokens = prompt->as_positive_int();
  if (auto output = entry.find("output_tokens")) m.output_tokens = output->as_positive_int();
  if (auto mtp = entry.find("mtp_layers")) m.mtp_layers = read_mtp_layers(*mtp, m.workload.mode);
  if (is_serving(m.metric)) {
    if (m.prompt_tokens == 0 || m.output_tokens == 0) {
      entry.fail(fmt::format("a {} case needs \"prompt_tokens\" and \"output_tokens\"",
                             entry.at("metric").as_string()));
    }
  }
  // The validation set's cases say where their figure was published and quote it; a user's
  // own records for calibrate need neither.
  if (provenance == Provenance::kRequired || entry.find("source")) {
    m.source = entry.at("source").as_string();
    if (m.source.empty()) entry.at("source").fail("every measurement needs a source");
  }
  if (provenance == Provenance::kRequired) entry.at("quote").as_string();
  // Free text, read by people only: typed all the same.
  for (const char* key : {"quote", "software", "unit"}) {
    if (auto text = entry.find(key); text && !text->is_null()) (void)text->as_string();
  }
  if (auto unit = entry.find("unit"); unit && !unit->is_null()) {
    const std::vector<std::string_view> units = units_of(m.metric);
    if (std::find(units.begin(), units.end(), unit->as_string()) == units.end()) {
      unit->fail(fmt::format("\"{}\" is not a unit of {}; expected {}", unit->as_string(),
                             kMetrics.name(m.metric), fmt::join(units, " or ")));
    }
  }
  return m;
}

std::int64_t seq_of(const Graph& graph, const Measurement& m) {
  const auto it = graph.dims.find("seq");
  if (it == graph.dims.end()) {
    throw Error({m.model},
                fmt::format("measurement \"{}\" needs a model with a \"seq\" dimension", m.id));
  }
  return it->second;
}

// The metric of an estimate, as the case measures it.
double metric_value(const Measurement& m, const Graph& graph, const Estimate& e, double matrix_peak,
                    double per_device_samples);

struct Prediction {
  double value = 0;
  PredictionClass cls;
};

}  // namespace

const Device& measured_device(const Measurement& m, const HardwareTable& table) {
  if (const Device* device = table.find(m.device)) return *device;
  try {
    table.get(m.device);  // Its message: the did-you-mean and the closest names.
  } catch (const Error& e) {
    if (m.where.file.empty()) throw;
    throw Error({m.where.file, m.where.pointer + "/device", 0, 0}, e.message());
  }
  throw Error(m.where, fmt::format("unknown device \"{}\"", m.device));
}

namespace {

// The case's model with the case's dims. What the case got wrong (a model file that does not
// open, a dimension the model lacks, dims that take a count past 64 bits) is blamed on the
// case's key; what is wrong inside the model stays the model's.
Graph load_case_model(const Measurement& m, const std::string& path, const ModelOptions& options) {
  const auto at = [&](const std::string& key) {
    return SourceLocation{m.where.file, m.where.pointer + key, 0, 0};
  };
  try {
    return load_model(path, options);
  } catch (const OverflowError&) {
    if (m.where.file.empty()) throw;
    throw Error(at("/dims"), overflow_message(options.dims));
  } catch (const Error& e) {
    if (m.where.file.empty() || e.where().file != path) throw;
    if (e.where().pointer.empty() && e.where().line == 0)
      throw Error(at("/model"), fmt::format("{}: {}", path, e.message()));
    if (e.where().pointer == "/dims") {
      for (const auto& [name, value] : m.dims) {
        if (e.message().find(fmt::format("\"{}\"", name)) != std::string::npos)
          throw Error(at("/dims/" + name), fmt::format("{} (model {})", e.message(), path));
      }
    }
    if (e.message().find("a count does not fit in a 64-bit integer (with ") != std::string::npos)
      throw Error(at("/dims"), overflow_message(options.dims));
    throw;
  }
}

Prediction predict_case(const Measurement& m, const HardwareTable& table,
                        const std::string& models_dir, const RuntimeTable* runtimes,
                        ModelCache* cache) {
  const Device& device = measured_device(m, table);
  ModelOptions options;
  options.dims = m.dims;
  options.mtp_layers = m.mtp_layers;
  // A bare file name is looked up in the models directory, a zoo name ("resnet50", as every
  // command takes it) as its file there; a path is used as it is.
  std::string path = m.model.find('/') == std::string::npos ? models_dir + "/" + m.model : m.model;
  if (m.model.find('/') == std::string::npos && m.model.find('.') == std::string::npos &&
      !std::ifstream(path) && std::ifstream(path + ".json")) {
    path += ".json";
  }
  // Every load goes through a cache: the caller's, or one for this case alone.
  ModelCache own;
  ModelCache& models = cache != nullptr ? *cache : own;
  const auto graph_for = [&](const ModelOptions& shaped) -> const Graph& {
    return models.get(path, shaped, [&] { return load_case_model(m, path, shaped); });
  };
  Workload workload = m.workload;
  if (!m.runtime.empty()) {
    if (runtimes == nullptr) {
      throw Error({}, fmt::format("measurement \"{}\" names runtime \"{}\" but no runtime table "
                                  "was given",
                                  m.id, m.runtime));
    }
    try {
      workload.runtime = runtimes->get(m.runtime);
      // A case names the profile it ran as well: a runtime of another profile is a slip.
      if (workload.profile && workload.runtime->profile != *workload.profile) {
        throw Error({}, fmt::format("runtime \"{}\" runs the {} profile, not the case's {}",
                                    m.runtime, profile_name(workload.runtime->profile),
                                    profile_name(*workload.profile)));
      }
    } catch (const Error& e) {
      if (m.where.file.empty()) throw;
      throw Error({m.where.file, m.where.pointer + "/runtime", 0, 0}, e.message());
    }
  }
  const PerformanceParams params = table.performance_for(device);
  if (is_serving(m.metric)) {
    ServingRequest request;
    request.prompt_tokens = m.prompt_tokens;
    request.output_tokens = m.output_tokens;
    const ServingEstimate s = estimate_serving(
        [&](std::int64_t seq, std::int64_t cached) {
          ModelOptions shaped = options;
          shaped.dims["seq"] = seq;
          shaped.counting.kv_cache_length = cached;
          return graph_for(shaped);
        },
        device, params, workload, request);
    // The prefill's class for the time to first token, the decode step's for the rest.
    const Estimate& part = m.metric == Metric::kTtft ? s.prefill : s.decode;
    const PredictionClass cls{part.profile, dominant_bound(part), device.type};
    switch (m.metric) {
      case Metric::kTtft:
        return {s.ttft_s, cls};
      case Metric::kInterTokenLatency:
        return {s.decode_step_s, cls};
      case Metric::kRequestLatency:
        return {s.request_latency_s, cls};
      default: {
        // All sequences of all replicas: tokens_per_s is their decode rate.
        const double tokens =
            s.tokens_per_s * s.decode_step_s * static_cast<double>(m.output_tokens);
        const double total = tokens / s.request_latency_s;
        return {m.per_device ? total / static_cast<double>(workload.devices) : total, cls};
      }
    }
  }
  const Graph& graph = graph_for(options);
  const Estimate e = estimate(graph, device, params, workload);
  const auto devices = static_cast<double>(workload.devices);
  const double per_device_samples = e.throughput_per_s / devices;
  const PeakRate& peak = device.peak(workload.precision);
  const double matrix_peak =
      peak.matrix_flops_per_s > 0 ? peak.matrix_flops_per_s : peak.vector_flops_per_s;
  const PredictionClass cls{e.profile, dominant_bound(e), device.type};
  return {metric_value(m, graph, e, matrix_peak, per_device_samples), cls};
}

double metric_value(const Measurement& m, const Graph& graph, const Estimate& e, double matrix_peak,
                    double per_device_samples) {
  switch (m.metric) {
    case Metric::kThroughput:
      return m.per_device ? per_device_samples : e.throughput_per_s;
    case Metric::kLatency:
      return e.latency_s;
    case Metric::kTokensPerSecond: {
      const auto seq = static_cast<double>(seq_of(graph, m));
      return (m.per_device ? per_device_samples : e.throughput_per_s) * seq;
    }
    case Metric::kMfu:
      return e.achieved_flops_per_s / matrix_peak;
    case Metric::kTflopsPerDevice:
      return e.achieved_flops_per_s / 1e12;
    case Metric::kGpuHours: {
      const double samples = *m.tokens / static_cast<double>(seq_of(graph, m));
      return samples / per_device_samples / 3600;
    }
    case Metric::kTtft:
    case Metric::kInterTokenLatency:
    case Metric::kRequestLatency:
    case Metric::kOutputTokensPerSecond:
      break;  // Served above.
  }
  return 0;
}

}  // namespace

namespace {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

double ValidationResult::time_ratio() const {
  return is_time_metric(measurement->metric) ? 1 / ratio : ratio;
}

std::vector<Residual> residuals(const ValidationSummary& summary) {
  std::vector<Residual> out;
  out.reserve(summary.results.size());
  for (const ValidationResult& r : summary.results)
    out.push_back({r.cls, r.time_ratio()});
  return out;
}

bool is_time_metric(Metric metric) {
  return metric == Metric::kLatency || metric == Metric::kGpuHours || metric == Metric::kTtft ||
         metric == Metric::kInterTokenLatency || metric == Metric::kRequestLatency;
}

std::string_view metric_name(Metric metric) {
  return kMetrics.name(metric);
}

std::vector<Measurement> load_measurements(const std::string& path, Provenance provenance) {
  return parse_measurements(read_input_file(path), path, provenance);
}

std::vector<Measurement> parse_measurements(std::string_view text, const std::string& file,
                                            Provenance provenance) {
  const nlohmann::json document = parse_json_text(text, file);
  const JsonView root(document, file);
  root.expect_object();
  reject_unknown_keys(root, {"$schema", "schema_version", "description", "comment", "cases"},
                      "a measurement file");
  const JsonView version = root.at("schema_version");
  if (version.as_positive_int() != 1) version.fail("unsupported schema_version; expected 1");
  const JsonView cases = root.at("cases");
  if (cases.array_size() == 0) cases.fail("no cases: a measurement file needs at least one");
  std::vector<Measurement> result;
  for (std::size_t i = 0; i < cases.array_size(); ++i) {
    result.push_back(parse_case(cases.at(i), provenance));
    result.back().where = {file, cases.at(i).pointer(), 0, 0};
    for (std::size_t j = 0; j + 1 < result.size(); ++j) {
      if (result[j].id == result.back().id) {
        cases.at(i).at("id").fail(fmt::format("the id \"{}\" is used twice", result.back().id));
      }
    }
  }
  return result;
}

std::string ModelCache::cache_key(const std::string& path, const ModelOptions& options) {
  std::string key =
      fmt::format("{}\n{}\n{} {}\n", path, fmt::join(options.dims, ","),
                  static_cast<int>(options.counting.causal), options.counting.kv_cache_length);
  for (const auto& [input, shape] : options.input_shapes)
    key += fmt::format("{}={};", input, fmt::join(shape, "x"));
  key += fmt::format("\n{}\n{}\n{}", options.strict, fmt::join(options.omitted_inputs, ","),
                     options.mtp_layers);
  return key;
}

ValidationSummary validate(const std::vector<Measurement>& measurements, const HardwareTable& table,
                           const std::string& models_dir, const RuntimeTable* runtimes,
                           ModelCache* cache) {
  ValidationSummary summary;
  std::vector<double> errors;
  std::vector<double> held_out_errors;
  for (const Measurement& m : measurements) {
    ValidationResult r;
    r.measurement = &m;
    const Prediction p = predict_case(m, table, models_dir, runtimes, cache);
    r.predicted = p.value;
    r.cls = p.cls;
    r.ratio = r.predicted / m.value;
    const double factor = std::max(r.ratio, 1 / r.ratio);
    summary.worst_factor = std::max(summary.worst_factor, factor);
    if (factor <= 2) ++summary.within_2x;
    errors.push_back(std::fabs(r.ratio - 1));
    if (m.held_out) held_out_errors.push_back(errors.back());
    summary.results.push_back(r);
  }
  summary.median_abs_error = median(errors);
  summary.held_out = held_out_errors.size();
  summary.held_out_median_abs_error = median(held_out_errors);
  return summary;
}

}  // namespace capcalc
