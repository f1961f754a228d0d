// Rendering of the runtime table (`capcalc runtimes list` and `capcalc runtimes show`).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/report.hpp"

#include "report_json.hpp"
#include "table.hpp"

namespace capcalc {
namespace {

using Json = nlohmann::ordered_json;
using Align = TextTable::Align;

std::string device_types_text(const Runtime& r) {
  if (r.device_types.empty()) return "any";
  std::vector<std::string_view> names;
  for (DeviceType type : r.device_types)
    names.push_back(device_type_name(type));
  return fmt::format("{}", fmt::join(names, ", "));
}

// What differs from one kernel per layer: "attention 6, rotary +10, rmsnorm 8".
std::vector<std::pair<std::string, double>> kernel_entries(const Runtime& r) {
  std::vector<std::pair<std::string, double>> entries;
  for (OpClass c : kOpClasses) {
    const double count = r.kernels_per_class[static_cast<std::size_t>(c)];
    const double usual = c == OpClass::kView ? 0 : 1;
    if (count != usual) entries.emplace_back(std::string(op_class_name(c)), count);
  }
  if (r.rotary_kernels > 0) entries.emplace_back("rotary", r.rotary_kernels);
  if (r.cache_update_kernels > 0) entries.emplace_back("cache_update", r.cache_update_kernels);
  if (r.autocast_weight_casts > 0) {
    entries.emplace_back("autocast_weight_casts", r.autocast_weight_casts);
  }
  if (r.local_expert_kernels > 0) entries.emplace_back("local_expert", r.local_expert_kernels);
  entries.insert(entries.end(), r.kernels_per_op.begin(), r.kernels_per_op.end());
  return entries;
}

std::string kernels_text(const Runtime& r) {
  std::vector<std::string> parts;
  for (const auto& [key, count] : kernel_entries(r)) {
    const bool extra = key == "rotary" || key == "cache_update" || key == "autocast_weight_casts";
    // Per expert the device holds: "local_expert 2 each".
    const bool each = key == "local_expert";
    parts.push_back(fmt::format("{} {}{:g}{}", key, extra ? "+" : "", count, each ? " each" : ""));
  }
  return parts.empty() ? "one per layer" : fmt::format("{}", fmt::join(parts, ", "));
}

Json runtime_json(const Runtime& r) {
  Json j;
  j["id"] = r.id;
  j["name"] = r.name;
  j["aliases"] = r.aliases;
  j["profile"] = std::string(profile_name(r.profile));
  Json types = Json::array();
  for (DeviceType type : r.device_types)
    types.push_back(std::string(device_type_name(type)));
  j["device_types"] = types;
  Json kernels = Json::object();
  for (const auto& [key, count] : kernel_entries(r))
    kernels[key] = count;
  j["kernels"] = kernels;
  if (!r.unfused_ops.empty()) j["unfused_ops"] = r.unfused_ops;
  j["sources"] = r.sources;
  if (!r.notes.empty()) j["notes"] = r.notes;
  return j;
}

}  // namespace

std::string render_runtimes_text(const RuntimeTable& table) {
  TextTable t;
  t.add_column("id", Align::kLeft);
  t.add_column("runtime", Align::kLeft);
  t.add_column("profile", Align::kLeft);
  t.add_column("devices", Align::kLeft);
  t.add_column("kernels per layer", Align::kLeft);
  for (const Runtime& r : table.runtimes) {
    t.add_row({r.id, r.name, std::string(profile_name(r.profile)), device_types_text(r),
               kernels_text(r)});
  }
  return t.render() + fmt::format("\n{} runtime{}; `capcalc runtimes show ID` for sources\n",
                                  table.runtimes.size(), table.runtimes.size() == 1 ? "" : "s");
}

std::string render_runtimes_json(const RuntimeTable& table) {
  Json doc;
  doc["schema_version"] = 1;
  doc["version"] = table.version.empty() ? Json(nullptr) : Json(table.version);  // As hw list.
  Json list = Json::array();
  for (const Runtime& r : table.runtimes)
    list.push_back(runtime_json(r));
  doc["runtimes"] = list;
  return json_text(doc);
}

std::string render_runtime_text(const Runtime& r) {
  std::string out = fmt::format("{} ({})\n", r.name, r.id);
  if (!r.aliases.empty()) out += fmt::format("  aliases      {}\n", fmt::join(r.aliases, ", "));
  std::string fusion;
  if (fuses_elementwise(r.profile)) {
    fusion = r.unfused_ops.empty()
                 ? " (elementwise layers fused)"
                 : fmt::format(" (elementwise layers fused; {} run as kernels of their own)",
                               fmt::join(r.unfused_ops, ", "));
  }
  out += fmt::format("  profile      {}{}\n", profile_name(r.profile), fusion);
  out += fmt::format("  devices      {}\n", device_types_text(r));
  out += fmt::format("  kernels      {}\n", kernels_text(r));
  if (!r.notes.empty()) out += "  notes        " + wrap_text(r.notes, 100, 15);
  out += "  sources\n";
  for (const std::string& source : r.sources)
    out += fmt::format("    {}\n", source);
  return out;
}

std::string render_runtime_json(const Runtime& r) {
  Json doc;
  doc["schema_version"] = 1;
  doc["runtime"] = runtime_json(r);
  return json_text(doc);
}

}  // namespace capcalc
