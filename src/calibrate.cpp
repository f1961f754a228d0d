#include "capcalc/calibrate.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace capcalc {
namespace {

constexpr int kMaxIterations = 20;
constexpr double kTolerance = 1e-4;  // |log f| at which the fit has settled.

// How much faster the prediction is than the measurement (> 1: predicted too fast).
double predicted_speedup(const ValidationResult& r) {
  const Metric metric = r.measurement->metric;
  const bool time_like = metric == Metric::kLatency || metric == Metric::kGpuHours;
  return time_like ? 1 / r.ratio : r.ratio;
}

Device* find_mutable(HardwareTable& table, const std::string& id) {
  for (Device& d : table.devices) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

}  // namespace

CalibrationResult calibrate(const std::vector<Measurement>& records, const HardwareTable& table,
                            const std::string& models_dir) {
  CalibrationResult result;
  result.calibrated = table;
  result.before = validate(records, table, models_dir);

  // Records per device (by id, whatever name the record used).
  std::vector<std::string> ids;
  for (const Measurement& m : records) {
    const std::string id = table.get(m.device).id;
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  for (const std::string& id : ids) {
    std::vector<Measurement> own;
    for (const Measurement& m : records) {
      if (table.get(m.device).id == id) own.push_back(m);
    }
    Device& device = *find_mutable(result.calibrated, id);
    PerformanceParams params = result.calibrated.performance_for(device);
    CalibrationFit fit;
    fit.device_id = id;
    fit.records = own.size();
    for (int iteration = 0; iteration < kMaxIterations; ++iteration) {
      const ValidationSummary now = validate(own, result.calibrated, models_dir);
      double log_sum = 0;
      for (const ValidationResult& r : now.results)
        log_sum += std::log(predicted_speedup(r));
      const double f = std::exp(log_sum / static_cast<double>(now.results.size()));
      fit.speed_factor /= f;
      params.matrix_efficiency = std::min(1.0, params.matrix_efficiency / f);
      params.vector_efficiency = std::min(1.0, params.vector_efficiency / f);
      params.memory_efficiency = std::min(1.0, params.memory_efficiency / f);
      params.eager_overhead_s *= f;
      params.compiled_overhead_s *= f;
      params.graph_overhead_s *= f;
      device.performance = {params.matrix_efficiency,   params.vector_efficiency,
                            params.memory_efficiency,   params.eager_overhead_s,
                            params.compiled_overhead_s, params.graph_overhead_s};
      if (std::fabs(std::log(f)) < kTolerance) break;
    }
    fit.fitted = device.performance;
    result.fits.push_back(fit);
  }
  result.after = validate(records, result.calibrated, models_dir);
  return result;
}

std::string render_hardware_file(const std::vector<const Device*>& devices) {
  using Json = nlohmann::ordered_json;
  Json doc;
  doc["schema_version"] = 1;
  doc["comment"] =
      "Written by capcalc calibrate: entries replace the built-in devices of the "
      "same id when passed with --hardware-file.";
  Json list = Json::array();
  for (const Device* d : devices) {
    Json e;
    e["id"] = d->id;
    e["name"] = d->name;
    if (!d->aliases.empty()) e["aliases"] = d->aliases;
    e["type"] = std::string(device_type_name(d->type));
    e["vendor"] = d->vendor;
    if (d->release_year > 0) e["release_year"] = d->release_year;
    Json peaks = Json::object();
    for (Precision p : d->precisions()) {
      Json rate = Json::object();
      if (d->peak(p).vector_flops_per_s > 0) rate["vector"] = d->peak(p).vector_flops_per_s / 1e12;
      if (d->peak(p).matrix_flops_per_s > 0) rate["matrix"] = d->peak(p).matrix_flops_per_s / 1e12;
      peaks[std::string(precision_name(p))] = rate;
    }
    e["dense_peak_tflops"] = peaks;
    if (d->sparsity_2_4_speedup > 1) e["sparsity_2_4_speedup"] = d->sparsity_2_4_speedup;
    e["memory_gb"] = d->memory_bytes / 1e9;
    e["memory_bandwidth_gb_per_s"] = d->memory_bandwidth_bytes_per_s / 1e9;
    if (d->cache_bytes > 0) e["cache_mb"] = d->cache_bytes / 1e6;
    if (d->tdp_w > 0) e["tdp_w"] = d->tdp_w;
    const auto link = [](const Link& l) {
      return Json{{"name", l.name},
                  {"bandwidth_gb_per_s", l.bandwidth_bytes_per_s / 1e9},
                  {"direction", l.direction}};
    };
    if (d->intra_node || d->inter_node) {
      Json links = Json::object();
      if (d->intra_node) links["intra_node"] = link(*d->intra_node);
      if (d->inter_node) links["inter_node"] = link(*d->inter_node);
      e["interconnect"] = links;
    }
    if (d->price) {
      e["price_per_hour_usd"] = {{"value", d->price->usd_per_hour},
                                 {"date", d->price->date},
                                 {"source", d->price->source}};
    }
    e["sources"] = d->sources;
    if (!d->notes.empty()) e["notes"] = d->notes;
    const PerformanceOverride& o = d->performance;
    if (!o.empty()) {
      Json perf = Json::object();
      if (o.matrix_efficiency) perf["matrix_efficiency"] = *o.matrix_efficiency;
      if (o.vector_efficiency) perf["vector_efficiency"] = *o.vector_efficiency;
      if (o.memory_efficiency) perf["memory_efficiency"] = *o.memory_efficiency;
      if (o.eager_overhead_s) perf["eager_overhead_us"] = *o.eager_overhead_s * 1e6;
      if (o.graph_overhead_s) perf["graph_overhead_us"] = *o.graph_overhead_s * 1e6;
      if (o.compiled_overhead_s) perf["compiled_overhead_us"] = *o.compiled_overhead_s * 1e6;
      e["performance"] = perf;
    }
    list.push_back(e);
  }
  doc["devices"] = list;
  return doc.dump(2) + "\n";
}

}  // namespace capcalc
