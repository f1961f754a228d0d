#include "capcalc/ranges.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/error.hpp"

#include "input_file.hpp"
#include "json_view.hpp"
#include "report_json.hpp"

namespace capcalc {
namespace {

const std::vector<std::string_view> kTableKeys = {"schema_version", "description", "made_from",
                                                  "coverage",       "min_cases",   "overall",
                                                  "classes",        "$schema",     "comment"};
const std::vector<std::string_view> kRangeKeys = {"low", "high", "cases"};

// Linear interpolation between order statistics (the "type 7" quantile of R and NumPy).
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 1;
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(at));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (at - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

PredictionRange range_of(std::vector<double> ratios, double coverage, std::string key) {
  std::sort(ratios.begin(), ratios.end());
  PredictionRange r;
  const double tail = (1 - coverage) / 2;
  r.low = quantile(ratios, tail);
  r.high = quantile(ratios, 1 - tail);
  r.cases = ratios.size();
  r.key = std::move(key);
  return r;
}

PredictionRange parse_range(const JsonView& view, std::string key) {
  reject_unknown_keys(view, kRangeKeys, "a range");
  PredictionRange r;
  r.low = view.at("low").as_positive_number();
  r.high = view.at("high").as_positive_number();
  if (r.high < r.low) view.at("high").fail("high is below low");
  r.cases = static_cast<std::size_t>(view.at("cases").as_positive_int());
  r.key = std::move(key);
  return r;
}

nlohmann::ordered_json range_json(const PredictionRange& r) {
  nlohmann::ordered_json j;
  j["low"] = r.low;
  j["high"] = r.high;
  j["cases"] = r.cases;
  return j;
}

}  // namespace

std::string class_key(const PredictionClass& cls) {
  return fmt::format("{}/{}/{}", profile_name(cls.profile), bound_name(cls.bound),
                     device_type_name(cls.device_type));
}

Bound dominant_bound(const Estimate& estimate) {
  std::array<double, 5> time{};
  for (const LayerEstimate& layer : estimate.layers) {
    if (layer.bound == Bound::kNone) continue;
    time[static_cast<std::size_t>(layer.bound)] += layer.time_s;
  }
  Bound best = Bound::kCompute;
  for (Bound b : {Bound::kMemory, Bound::kHost}) {
    if (time[static_cast<std::size_t>(b)] > time[static_cast<std::size_t>(best)]) best = b;
  }
  return best;
}

PredictionRange RangeTable::range_for(const PredictionClass& cls) const {
  const auto it = classes.find(class_key(cls));
  if (it != classes.end() && it->second.cases >= min_cases) {
    PredictionRange r = it->second;
    r.validated = true;
    return r;
  }
  PredictionRange r = overall;
  r.validated = false;
  return r;
}

RangeTable derive_ranges(const std::vector<Residual>& residuals, double coverage,
                         std::size_t min_cases, std::string made_from) {
  RangeTable table;
  table.coverage = coverage;
  table.min_cases = min_cases;
  table.made_from = std::move(made_from);
  std::map<std::string, std::vector<double>> by_class;
  std::vector<double> all;
  for (const Residual& r : residuals) {
    by_class[class_key(r.cls)].push_back(r.time_ratio);
    all.push_back(r.time_ratio);
  }
  for (auto& [key, ratios] : by_class) {
    if (ratios.size() >= min_cases) table.classes[key] = range_of(ratios, coverage, key);
  }
  table.overall = range_of(all, coverage, "all");
  return table;
}

RangeTable parse_ranges(std::string_view text, const std::string& file) {
  const nlohmann::json document = parse_json_text(text, file);
  const JsonView root(document, file);
  reject_unknown_keys(root, kTableKeys, "the ranges file");
  if (root.at("schema_version").as_positive_int() != 1) {
    root.at("schema_version").fail("unsupported schema_version; expected 1");
  }
  RangeTable table;
  const JsonView coverage = root.at("coverage");
  table.coverage = coverage.as_positive_number();
  if (table.coverage >= 1) coverage.fail("expected a fraction below 1");
  table.min_cases = static_cast<std::size_t>(root.at("min_cases").as_positive_int());
  if (auto made = root.find("made_from")) table.made_from = made->as_string();
  table.overall = parse_range(root.at("overall"), "all");
  const JsonView classes = root.at("classes");
  classes.expect_object();
  for (const auto& item : classes.json().items()) {
    table.classes[item.key()] = parse_range(classes.at(item.key()), item.key());
  }
  return table;
}

RangeTable load_ranges(const std::string& path) {
  return parse_ranges(read_input_file(path), path);
}

std::string render_ranges_json(const RangeTable& table) {
  nlohmann::ordered_json doc;
  doc["schema_version"] = 1;
  doc["description"] = fmt::format(
      "Measured time over predicted time, per class of prediction (profile/bound/device type): "
      "the range holding the middle {:.0f} % of the validation cases of each class with at "
      "least {} cases, and of all of them. Written by `capcalc validate --write-ranges`; a "
      "predicted time t is shown as [t x low, t x high], a rate r as [r / high, r / low].",
      100 * table.coverage, table.min_cases);
  doc["made_from"] = table.made_from;
  doc["coverage"] = table.coverage;
  doc["min_cases"] = table.min_cases;
  doc["overall"] = range_json(table.overall);
  nlohmann::ordered_json classes = nlohmann::ordered_json::object();
  for (const auto& [key, range] : table.classes)
    classes[key] = range_json(range);
  doc["classes"] = classes;
  return json_text(doc);
}

}  // namespace capcalc
