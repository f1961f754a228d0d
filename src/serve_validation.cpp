#include "capcalc/serve_validation.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/hardware.hpp"
#include "capcalc/units.hpp"

#include "input_file.hpp"
#include "json_view.hpp"
#include "report_json.hpp"
#include "table.hpp"

namespace capcalc {
namespace {

constexpr std::array<std::string_view, 3> kMetrics = {"output_tokens_per_s", "total_tokens_per_s",
                                                      "requests_per_s"};

const std::vector<std::string_view> kCaseKeys = {"id",
                                                 "held_out",
                                                 "runtime",
                                                 "model",
                                                 "device",
                                                 "devices",
                                                 "tensor_parallel",
                                                 "precision",
                                                 "kv_precision",
                                                 "prompt_tokens",
                                                 "output_tokens",
                                                 "requests",
                                                 "max_num_seqs",
                                                 "max_num_batched_tokens",
                                                 "slo",
                                                 "metric",
                                                 "value",
                                                 "unit",
                                                 "per",
                                                 "software",
                                                 "source",
                                                 "quote",
                                                 "notes"};

// A precision's name as the file gives it; an unknown or empty one names its key.
std::string precision_key(const JsonView& value) {
  const std::string name = value.as_string();
  if (!parse_precision(name)) value.fail(unknown_precision_message(name));
  return name;
}

ServingCase parse_serving_case(const JsonView& c) {
  c.expect_object();
  reject_unknown_keys(c, kCaseKeys, "a serving case");
  ServingCase s;
  s.id = c.at("id").as_string();
  if (s.id.empty()) c.at("id").fail("a case needs an id");
  if (auto h = c.find("held_out")) s.held_out = h->as_bool();
  s.runtime = c.at("runtime").as_string();
  if (s.runtime.empty()) c.at("runtime").fail("a case needs the runtime it was measured with");
  s.model = c.at("model").as_string();
  s.device = c.at("device").as_string();
  s.devices = c.at("devices").as_positive_int();
  s.tensor_parallel = c.at("tensor_parallel").as_positive_int();
  if (s.devices % s.tensor_parallel != 0) {
    c.at("tensor_parallel")
        .fail(fmt::format("{} does not divide devices {}", s.tensor_parallel, s.devices));
  }
  s.precision = precision_key(c.at("precision"));
  if (auto kv = c.find("kv_precision")) s.kv_precision = precision_key(*kv);
  s.prompt_tokens = c.at("prompt_tokens").as_positive_int();
  s.output_tokens = c.at("output_tokens").as_positive_int();
  s.requests = c.at("requests").as_positive_int();
  if (s.requests > 1'000'000) c.at("requests").fail("at most 1,000,000 requests");
  if (auto seqs = c.find("max_num_seqs")) s.max_num_seqs = seqs->as_positive_int();
  if (auto tokens = c.find("max_num_batched_tokens")) {
    s.max_num_batched_tokens = tokens->as_positive_int();
  }
  const JsonView slo = c.at("slo");
  if (!slo.is_null()) {
    s.slo = slo.as_string();
    try {
      parse_slo(s.slo);
    } catch (const Error& e) {
      slo.fail(e.message());
    }
  }
  const JsonView metric = c.at("metric");
  s.metric = metric.as_string();
  if (std::find(kMetrics.begin(), kMetrics.end(), s.metric) == kMetrics.end()) {
    metric.fail(
        fmt::format("unknown metric \"{}\"; expected output_tokens_per_s, "
                    "total_tokens_per_s or requests_per_s",
                    s.metric));
  }
  const JsonView value = c.at("value");
  s.value = value.as_positive_number();
  // As a measurement's: past these a typo's exponent gives an infinite or zero ratio.
  if (s.value < 1e-9 || s.value > 1e15)
    value.fail(fmt::format("{} is outside the range of a measurement (1e-09 to 1e+15)", s.value));
  if (const JsonView per = c.at("per"); per.as_string() != "total") {
    per.fail(fmt::format("expected \"total\" (the figure over all devices), got \"{}\"",
                         per.as_string()));
  }
  for (std::string_view key : {"unit", "software", "source", "quote"}) {
    if (c.at(key).as_string().empty()) c.at(key).fail(fmt::format("{} must not be empty", key));
  }
  if (auto notes = c.find("notes")) notes->as_string();
  s.where = {c.file(), c.pointer(), 0, 0};
  return s;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::vector<ServingCase> parse_serving_cases(const std::string& text, const std::string& file) {
  const nlohmann::json document = parse_json_text(text, file);
  const JsonView root(document, file);
  root.expect_object();
  const std::vector<std::string_view> kTop = {"schema_version", "description", "comment", "cases"};
  reject_unknown_keys(root, kTop, "a serving validation file");
  for (std::string_view key : {"description", "comment"}) {
    if (auto free_text = root.find(key)) free_text->as_string();
  }
  const JsonView version = root.at("schema_version");
  if (version.as_positive_int() != 1) version.fail("unsupported schema_version; expected 1");
  const JsonView cases = root.at("cases");
  if (cases.array_size() == 0) cases.fail("no cases: a serving validation file needs one");
  std::vector<ServingCase> result;
  for (std::size_t i = 0; i < cases.array_size(); ++i) {
    result.push_back(parse_serving_case(cases.at(i)));
    for (std::size_t j = 0; j + 1 < result.size(); ++j) {
      if (result[j].id == result.back().id) {
        cases.at(i).at("id").fail(fmt::format("the id \"{}\" is used twice", result.back().id));
      }
    }
  }
  return result;
}

std::vector<ServingCase> load_serving_cases(const std::string& path) {
  return parse_serving_cases(read_input_file(path), path);
}

double serving_metric(const ServeResult& r, const std::string& metric) {
  if (metric == "output_tokens_per_s") return r.output_tokens_per_s;
  if (metric == "total_tokens_per_s") return r.output_tokens_per_s + r.input_tokens_per_s;
  return r.requests_per_s;
}

ServingSummary summarize_serving(std::vector<ServingCheck> checks) {
  ServingSummary s;
  std::vector<double> errors;
  std::vector<double> held_out;
  for (const ServingCheck& c : checks) {
    const double ratio = c.ratio();
    const double factor = std::max(ratio, 1 / ratio);
    s.worst_factor = std::max(s.worst_factor, factor);
    if (factor <= 2) ++s.within_2x;
    errors.push_back(std::fabs(ratio - 1));
    if (c.measured->held_out) held_out.push_back(errors.back());
  }
  s.median_abs_error = median_of(errors);
  s.held_out = held_out.size();
  s.held_out_median_abs_error = median_of(held_out);
  s.checks = std::move(checks);
  return s;
}

std::string render_serving_validation_text(const ServingSummary& s) {
  TextTable table;
  table.add_column("case", TextTable::Align::kLeft);
  table.add_column("metric", TextTable::Align::kLeft);
  table.add_column("measured", TextTable::Align::kRight);
  table.add_column("predicted", TextTable::Align::kRight);
  table.add_column("error", TextTable::Align::kRight);
  for (const ServingCheck& c : s.checks) {
    table.add_row({c.measured->id, c.measured->metric, format_figure(c.measured->value),
                   format_figure(c.predicted), fmt::format("{:+.1f} %", 100 * (c.ratio() - 1))});
  }
  std::string out = table.render();
  out += fmt::format("\n{} cases: median |error| {:.1f} %, worst {:.2f}x, {} within 2x\n",
                     s.checks.size(), 100 * s.median_abs_error, s.worst_factor, s.within_2x);
  if (s.held_out > 0) {
    out += fmt::format("held out ({}): median |error| {:.1f} %\n", s.held_out,
                       100 * s.held_out_median_abs_error);
  }
  return out;
}

std::string render_serving_validation_json(const ServingSummary& s) {
  nlohmann::ordered_json doc;
  doc["schema_version"] = 1;
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  for (const ServingCheck& c : s.checks) {
    nlohmann::ordered_json j;
    j["id"] = c.measured->id;
    j["metric"] = c.measured->metric;
    j["measured"] = c.measured->value;
    j["predicted"] = c.predicted;
    j["ratio"] = c.ratio();
    j["held_out"] = c.measured->held_out;
    cases.push_back(j);
  }
  doc["cases"] = cases;
  doc["summary"] = {
      {"cases", s.checks.size()},       {"median_abs_error", s.median_abs_error},
      {"worst_factor", s.worst_factor}, {"within_2x", s.within_2x},
      {"held_out", s.held_out},         {"held_out_median_abs_error", s.held_out_median_abs_error}};
  return json_text(doc);
}

}  // namespace capcalc
