// Rendering of the hardware table (`capcalc hw list` and `capcalc hw show`) and of hardware
// files (`capcalc calibrate --output`).
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/calibrate.hpp"
#include "capcalc/report.hpp"
#include "capcalc/units.hpp"

#include "report_json.hpp"
#include "report_words.hpp"
#include "table.hpp"

namespace capcalc {
namespace {

using Json = nlohmann::ordered_json;
using Align = TextTable::Align;

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;

// The larger of the matrix and vector dense peaks, in TFLOP/s; "-" if the device lacks it.
std::string best_peak(const Device& d, Precision p) {
  const double best = std::max(d.peak(p).matrix_flops_per_s, d.peak(p).vector_flops_per_s);
  return best > 0 ? format_figure(best / kTera) : "-";
}

std::string optional_number(double value, double scale) {
  return value > 0 ? format_figure(value / scale) : "-";
}

Json link_json(const Link& link) {
  Json j;
  j["name"] = link.name;
  j["bandwidth_bytes_per_s"] = link.bandwidth_bytes_per_s;
  j["direction"] = link.direction;
  if (link.peers > 0) j["peers"] = link.peers;
  if (link.domain_devices > 0) j["domain_devices"] = link.domain_devices;
  return j;
}

// "  compute      132 SMs at 1.83 GHz\n"; either half alone where the table lacks the other.
std::string compute_units_line(const Device& d) {
  std::string units;
  if (d.compute_units > 0) {
    units = fmt::format("{} {}{}", d.compute_units, d.compute_unit_name,
                        d.compute_units == 1 ? "" : "s");
  }
  std::string clock;
  if (d.boost_clock_hz > 0) clock = format_rate(d.boost_clock_hz, "Hz");
  if (units.empty() && clock.empty()) return "";
  std::vector<std::string> sustained;
  for (Precision p : d.precisions()) {
    const double hz = d.sustained_matrix_clock_hz[static_cast<std::size_t>(p)];
    if (hz > 0) sustained.push_back(fmt::format("{:.0f} MHz {}", hz / 1e6, precision_name(p)));
  }
  if (!sustained.empty()) {
    clock += fmt::format("; matrix work sustained at {} (the vendor's measurement)",
                         fmt::join(sustained, ", "));
  }
  if (units.empty()) return fmt::format("  clock        {}\n", clock);
  return fmt::format("  compute      {}{}\n", units, clock.empty() ? "" : " at " + clock);
}

Json device_full_json(const Device& d) {
  Json j;
  j["id"] = d.id;
  j["name"] = d.name;
  j["aliases"] = d.aliases;
  j["type"] = std::string(device_type_name(d.type));
  j["vendor"] = d.vendor;
  if (d.release_year > 0) j["release_year"] = d.release_year;
  j["dense_peak"] = dense_peak_json(d);
  j["sparsity_2_4_speedup"] = d.sparsity_2_4_speedup;
  j["memory_bytes"] = d.memory_bytes;
  j["memory_bandwidth_bytes_per_s"] = d.memory_bandwidth_bytes_per_s;
  if (d.cache_bytes > 0) j["cache_bytes"] = d.cache_bytes;
  if (d.compute_units > 0) {
    j["compute_units"] = d.compute_units;
    j["compute_unit_name"] = d.compute_unit_name;
  }
  if (d.boost_clock_hz > 0) j["boost_clock_hz"] = d.boost_clock_hz;
  const Json clocks = sustained_clocks_json(d, 1);
  if (!clocks.empty()) j["sustained_matrix_clock_hz"] = clocks;
  if (d.tdp_w > 0) j["tdp_w"] = d.tdp_w;
  if (d.intra_node) j["intra_node"] = link_json(*d.intra_node);
  if (d.inter_node) j["inter_node"] = link_json(*d.inter_node);
  if (d.price) {
    j["price_per_hour_usd"] = {
        {"value", d.price->usd_per_hour}, {"date", d.price->date}, {"source", d.price->source}};
  }
  j["sources"] = d.sources;
  if (!d.corroboration.empty()) j["corroboration"] = d.corroboration;
  const Json estimates = estimated_peaks_json(d);
  if (!estimates.empty()) j["estimated_peaks"] = estimates;
  if (!d.notes.empty()) j["notes"] = d.notes;
  return j;
}

}  // namespace

nlohmann::ordered_json sustained_clocks_json(const Device& d, double scale) {
  nlohmann::ordered_json clocks = nlohmann::ordered_json::object();
  for (Precision p : d.precisions()) {
    const double hz = d.sustained_matrix_clock_hz[static_cast<std::size_t>(p)];
    if (hz > 0) clocks[std::string(precision_name(p))] = hz / scale;
  }
  return clocks;
}

nlohmann::ordered_json estimated_peaks_json(const Device& d) {
  nlohmann::ordered_json estimates = nlohmann::ordered_json::object();
  for (Precision p : d.precisions()) {
    const PeakEstimate& e = d.estimate_of(p);
    if (e.empty()) continue;
    nlohmann::ordered_json units = nlohmann::ordered_json::object();
    if (!e.vector.empty()) units["vector"] = e.vector;
    if (!e.matrix.empty()) units["matrix"] = e.matrix;
    estimates[std::string(precision_name(p))] = units;
  }
  return estimates;
}

namespace {

// Each estimated peak of `p` ("vector", "matrix") with the text that says how it was made.
std::vector<std::pair<const char*, const std::string*>> estimated_units(const Device& d,
                                                                        Precision p) {
  const PeakEstimate& e = d.estimate_of(p);
  std::vector<std::pair<const char*, const std::string*>> units;
  if (!e.vector.empty()) units.emplace_back("vector", &e.vector);
  if (!e.matrix.empty()) units.emplace_back("matrix", &e.matrix);
  return units;
}

}  // namespace

std::vector<std::string> estimate_lines(const Device& d, Precision p) {
  std::vector<std::string> lines;
  for (const auto& [unit, why] : estimated_units(d, p)) {
    lines.push_back(
        fmt::format("the {} {} peak is an unsourced estimate (no vendor document in "
                    "its sources states it): {}",
                    precision_name(p), unit, *why));
  }
  return lines;
}

std::vector<std::string> estimate_flags(const Device& d, Precision p) {
  std::vector<std::string> lines;
  for (const auto& [unit, why] : estimated_units(d, p)) {
    lines.push_back(
        fmt::format("the {} {} peak is an estimate, in no vendor document ('capcalc hw "
                    "show {}' says how it was made)",
                    precision_name(p), unit, d.id));
  }
  return lines;
}

nlohmann::ordered_json dense_peak_json(const Device& d) {
  nlohmann::ordered_json peaks = nlohmann::ordered_json::object();
  for (Precision p : d.precisions()) {
    nlohmann::ordered_json rate = nlohmann::ordered_json::object();
    if (d.peak(p).vector_flops_per_s > 0) rate["vector_flops_per_s"] = d.peak(p).vector_flops_per_s;
    if (d.peak(p).matrix_flops_per_s > 0) rate["matrix_flops_per_s"] = d.peak(p).matrix_flops_per_s;
    peaks[std::string(precision_name(p))] = rate;
  }
  return peaks;
}

std::string render_hardware_text(const std::vector<const Device*>& devices) {
  TextTable table;
  table.add_column("id", Align::kLeft);
  table.add_column("type", Align::kLeft);
  table.add_column("GB", Align::kRight);
  table.add_column("GB/s", Align::kRight);
  table.add_column("fp32", Align::kRight);
  table.add_column("fp16", Align::kRight);
  table.add_column("bf16", Align::kRight);
  table.add_column("fp8", Align::kRight);
  table.add_column("int8", Align::kRight);
  table.add_column("W", Align::kRight);
  for (const Device* d : devices) {
    table.add_row({d->id, std::string(device_type_name(d->type)),
                   format_figure(d->memory_bytes / kGiga),
                   format_figure(d->memory_bandwidth_bytes_per_s / kGiga),
                   best_peak(*d, Precision::kFp32), best_peak(*d, Precision::kFp16),
                   best_peak(*d, Precision::kBf16), best_peak(*d, Precision::kFp8),
                   best_peak(*d, Precision::kInt8), optional_number(d->tdp_w, 1)});
  }
  std::string out = table.render();
  out += fmt::format(
      "{}; dense peaks in TFLOP/s (TOPS for int8), the larger of matrix "
      "and vector units;\n- where the device has no such peak. "
      "`capcalc hw show ID` for every figure and its sources.\n",
      counted(static_cast<std::int64_t>(devices.size()), "device"));
  return out;
}

std::string render_hardware_json(const HardwareTable& table,
                                 const std::vector<const Device*>& devices) {
  Json doc;
  doc["schema_version"] = kOutputSchemaVersion;
  // null, not "", where the table names none (a user's --hardware file).
  doc["version"] = table.version.empty() ? Json(nullptr) : Json(table.version);
  doc["updated"] = table.updated.empty() ? Json(nullptr) : Json(table.updated);
  Json list = Json::array();
  for (const Device* d : devices)
    list.push_back(device_full_json(*d));
  doc["devices"] = list;
  return json_text(doc);
}

std::string render_hardware_csv(const std::vector<const Device*>& devices) {
  std::string out = "id,name,type,vendor,memory_gb,memory_bandwidth_gb_per_s";
  for (std::string_view p : precision_names())
    out += fmt::format(",{0}_vector_tflops,{0}_matrix_tflops", p);
  out += ",sparsity_2_4_speedup,tdp_w\n";
  for (const Device* d : devices) {
    std::string name = d->name;
    if (name.find(',') != std::string::npos) name = "\"" + name + "\"";
    out += fmt::format("{},{},{},{},{},{}", d->id, name, device_type_name(d->type), d->vendor,
                       csv_number(d->memory_bytes / kGiga),
                       csv_number(d->memory_bandwidth_bytes_per_s / kGiga));
    for (std::size_t i = 0; i < kPrecisionCount; ++i) {
      const PeakRate& rate = d->dense_peak[i];
      out += rate.vector_flops_per_s > 0 ? "," + csv_number(rate.vector_flops_per_s / kTera) : ",";
      out += rate.matrix_flops_per_s > 0 ? "," + csv_number(rate.matrix_flops_per_s / kTera) : ",";
    }
    out += fmt::format(",{},{}\n", csv_number(d->sparsity_2_4_speedup),
                       d->tdp_w > 0 ? fmt::format("{:.0f}", d->tdp_w) : "");
  }
  return out;
}

std::string render_device_text(const Device& d, const PerformanceParams& params) {
  std::string out = fmt::format("{} ({})\n", d.name, d.id);
  out += fmt::format("  type         {}, {}{}\n", device_type_name(d.type), d.vendor,
                     d.release_year > 0 ? fmt::format(", {}", d.release_year) : "");
  if (!d.aliases.empty()) out += fmt::format("  aliases      {}\n", fmt::join(d.aliases, ", "));
  out += fmt::format("  memory       {} at {}\n", format_bytes(d.memory_bytes),
                     format_rate(d.memory_bandwidth_bytes_per_s, "B/s"));
  if (d.cache_bytes > 0) out += fmt::format("  cache        {}\n", format_bytes(d.cache_bytes));
  out += compute_units_line(d);
  if (d.tdp_w > 0) out += fmt::format("  power        {:.0f} W\n", d.tdp_w);
  out += "\n  dense peak (TFLOP/s; TOPS for integers)\n";
  TextTable table;
  table.add_column("precision", Align::kLeft);
  table.add_column("vector", Align::kRight);
  table.add_column("matrix", Align::kRight);
  for (Precision p : d.precisions()) {
    table.add_row({std::string(precision_name(p)),
                   optional_number(d.peak(p).vector_flops_per_s, kTera),
                   optional_number(d.peak(p).matrix_flops_per_s, kTera)});
  }
  out += table.render("    ");
  for (Precision p : d.precisions()) {
    for (const std::string& line : estimate_lines(d, p))
      out += "  ESTIMATE     " + wrap_text(line, 78, 15);
  }
  out += d.sparsity_2_4_speedup > 1
             ? fmt::format("  2:4 sparsity {:.1f}x on matrix units\n", d.sparsity_2_4_speedup)
             : "  2:4 sparsity no hardware support\n";
  const auto link = [&](const char* label, const std::optional<Link>& l) {
    if (l) {
      out += fmt::format(
          "  {:<12} {}, {} ({}){}{}\n", label, l->name,
          format_rate(l->bandwidth_bytes_per_s, "B/s"),
          l->direction == "per_direction" ? "per direction" : l->direction,
          l->peers > 0
              ? fmt::format(", a full mesh: {} per direction to each of {} "
                            "peers",
                            format_rate(link_per_direction(*l) / l->peers, "B/s"), l->peers)
              : "",
          l->domain_devices > 0 ? fmt::format(", joins {} devices", l->domain_devices) : "");
    }
  };
  link("intra-node", d.intra_node);
  link("inter-node", d.inter_node);
  if (d.price) {
    out += fmt::format("  price        ${:.2f} per hour ({}, {})\n", d.price->usd_per_hour,
                       d.price->source, d.price->date);
  }
  out += fmt::format(
      "  model        matrix {:.0f} %, vector {:.0f} %, memory {:.0f} %; floor "
      "{} eager, {} graph, {} compiled\n",
      100 * params.matrix_efficiency, 100 * params.vector_efficiency,
      100 * params.memory_efficiency, format_duration(params.eager_overhead_s),
      format_duration(params.graph_overhead_s), format_duration(params.compiled_overhead_s));
  if (d.intra_node) {
    out += fmt::format("  all-reduce   {} latency ({} compiled), {:.0f} % of {} per direction{}\n",
                       format_duration(params.allreduce_latency_s),
                       format_duration(params.compiled_allreduce_latency_s),
                       100 * params.allreduce_efficiency,
                       format_rate(link_per_direction(*d.intra_node), "B/s"),
                       d.inter_node ? fmt::format("; {} per network step across nodes",
                                                  format_duration(params.network_step_latency_s))
                                    : "");
  }
  if (!d.notes.empty()) out += "  notes        " + wrap_text(d.notes, 78, 15);
  out += "  sources\n";
  for (const std::string& source : d.sources)
    out += fmt::format("    {}\n", source);
  if (!d.corroboration.empty()) {
    out += "  corroboration (secondary copies that agree; not sources)\n";
    for (const std::string& copy : d.corroboration)
      out += fmt::format("    {}\n", copy);
  }
  return out;
}

std::string render_device_json(const Device& d, const PerformanceParams& params) {
  Json doc;
  doc["schema_version"] = kOutputSchemaVersion;
  doc["device"] = device_full_json(d);
  doc["performance_model"] = {
      {"matrix_efficiency", params.matrix_efficiency},
      {"vector_efficiency", params.vector_efficiency},
      {"memory_efficiency", params.memory_efficiency},
      {"eager_overhead_s", params.eager_overhead_s},
      {"graph_overhead_s", params.graph_overhead_s},
      {"compiled_overhead_s", params.compiled_overhead_s},
      {"default_profile", std::string(profile_name(params.default_profile))},
      {"allreduce_latency_s", params.allreduce_latency_s},
      {"compiled_allreduce_latency_s", params.compiled_allreduce_latency_s},
      {"network_step_latency_s", params.network_step_latency_s},
      {"allreduce_efficiency", params.allreduce_efficiency}};
  return json_text(doc);
}

// calibrate.hpp: the hardware-file form (the units of data/hardware.json) of `devices`.
std::string render_hardware_file(const std::vector<const Device*>& devices) {
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
    if (d->compute_units > 0) {
      e["compute_units"] = d->compute_units;
      e["compute_unit_name"] = d->compute_unit_name;
    }
    if (d->boost_clock_hz > 0) e["boost_clock_mhz"] = d->boost_clock_hz / 1e6;
    const Json clocks = sustained_clocks_json(*d, 1e6);
    if (!clocks.empty()) e["sustained_matrix_clock_mhz"] = clocks;
    if (d->tdp_w > 0) e["tdp_w"] = d->tdp_w;
    const auto link = [](const Link& l) {
      Json j{{"name", l.name},
             {"bandwidth_gb_per_s", l.bandwidth_bytes_per_s / 1e9},
             {"direction", l.direction}};
      if (l.peers > 0) j["peers"] = l.peers;
      return j;
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
  return json_text(doc);
}

}  // namespace capcalc
