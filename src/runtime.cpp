#include "capcalc/runtime.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "capcalc/error.hpp"

#include "input_file.hpp"
#include "json_view.hpp"
#include "ops.hpp"
#include "spellcheck.hpp"

namespace capcalc {
namespace {

const std::vector<std::string_view> kTableKeys = {"schema_version", "version", "description",
                                                  "comment",        "$schema", "runtimes"};
const std::vector<std::string_view> kRuntimeKeys = {
    "id",      "name",  "aliases", "profile", "device_types", "kernels", "host_overhead_us",
    "sources", "notes", "comment", "serving"};

std::array<double, kOpClassCount> one_kernel_per_layer() {
  std::array<double, kOpClassCount> kernels{};
  kernels.fill(1);
  kernels[static_cast<std::size_t>(OpClass::kView)] = 0;
  return kernels;
}

// "kernels": {"attention": 6, "rmsnorm": 8, "rotary": 10, "cache_update": 2}: a layer class,
// a native operator, or one of the two extras of attention layers.
void parse_kernels(const JsonView& kernels, Runtime& runtime) {
  kernels.expect_object();
  const std::vector<std::string_view> ops = op_names();
  std::vector<std::string_view> known = {"rotary", "cache_update", "autocast_weight_casts"};
  for (OpClass c : kOpClasses)
    known.push_back(op_class_name(c));
  known.insert(known.end(), ops.begin(), ops.end());
  for (const auto& item : kernels.json().items()) {
    const std::string& key = item.key();
    const JsonView value = kernels.at(key);
    const double count = value.as_number();
    if (!(count >= 0) || count > 1000)
      value.fail(fmt::format("expected 0 to 1000 kernels, got {}", value.json().dump()));
    if (key == "rotary") {
      runtime.rotary_kernels = count;
      continue;
    }
    if (key == "cache_update") {
      runtime.cache_update_kernels = count;
      continue;
    }
    if (key == "autocast_weight_casts") {
      runtime.autocast_weight_casts = count;
      continue;
    }
    const auto cls = std::find_if(kOpClasses.begin(), kOpClasses.end(),
                                  [&](OpClass c) { return op_class_name(c) == key; });
    if (cls != kOpClasses.end()) {
      runtime.kernels_per_class[static_cast<std::size_t>(*cls)] = count;
      continue;
    }
    if (find_op(key) == nullptr) {
      value.fail(
          with_suggestion(fmt::format("unknown layer class or operator \"{}\"", key), key, known));
    }
    runtime.kernels_per_op.emplace_back(key, count);
  }
}

std::vector<std::string> string_list(const JsonView& list, bool non_empty) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < list.array_size(); ++i) {
    const JsonView item = list.at(i);
    out.push_back(item.as_string());
    if (non_empty && out.back().empty()) item.fail("expected a non-empty string");
  }
  return out;
}

// "serving": continuous-batching defaults, with an optional "large_memory" tier.
ServingDefaults parse_serving(const JsonView& serving) {
  reject_unknown_keys(serving,
                      {"max_num_batched_tokens", "max_num_seqs", "block_size",
                       "gpu_memory_utilization", "chunked_prefill", "large_memory", "comment"},
                      "serving defaults");
  ServingDefaults d;
  d.max_num_batched_tokens = serving.at("max_num_batched_tokens").as_positive_int();
  d.max_num_seqs = serving.at("max_num_seqs").as_positive_int();
  d.block_size = serving.at("block_size").as_positive_int();
  const JsonView utilization = serving.at("gpu_memory_utilization");
  d.memory_utilization = utilization.as_number();
  if (!(d.memory_utilization > 0) || d.memory_utilization > 1) {
    utilization.fail("expected a fraction above 0 and at most 1");
  }
  if (auto chunked = serving.find("chunked_prefill")) d.chunked_prefill = chunked->as_bool();
  if (auto large = serving.find("large_memory")) {
    reject_unknown_keys(
        *large, {"min_memory_gib", "except_names", "max_num_batched_tokens", "max_num_seqs"},
        "the large-memory tier");
    d.large_memory_bytes = large->at("min_memory_gib").as_positive_number() * 1073741824.0;
    if (auto except = large->find("except_names")) d.large_except = string_list(*except, true);
    d.large_max_num_batched_tokens = large->at("max_num_batched_tokens").as_positive_int();
    d.large_max_num_seqs = large->at("max_num_seqs").as_positive_int();
  }
  return d;
}

Runtime parse_runtime(const JsonView& entry) {
  reject_unknown_keys(entry, kRuntimeKeys, "a runtime");
  Runtime r;
  r.kernels_per_class = one_kernel_per_layer();
  const JsonView id = entry.at("id");
  r.id = id.as_string();
  if (r.id.empty() || lookup_key(r.id) != r.id) {
    id.fail(fmt::format("expected a kebab-case id, got \"{}\"", r.id));
  }
  r.name = entry.at("name").as_string();
  if (r.name.empty()) entry.at("name").fail("expected a non-empty string");
  if (auto aliases = entry.find("aliases")) r.aliases = string_list(*aliases, true);
  const JsonView profile = entry.at("profile");
  const std::optional<Profile> parsed = parse_profile(profile.as_string());
  if (!parsed) profile.fail(unknown_profile_message(profile.as_string()));
  r.profile = *parsed;
  if (auto types = entry.find("device_types")) {
    for (std::size_t i = 0; i < types->array_size(); ++i) {
      const JsonView item = types->at(i);
      const std::optional<DeviceType> type = parse_device_type(item.as_string());
      if (!type) {
        item.fail(with_suggestion(fmt::format("unknown device type \"{}\"", item.as_string()),
                                  item.as_string(), {"cpu", "gpu", "tpu", "accelerator"}));
      }
      r.device_types.push_back(*type);
    }
  }
  if (auto kernels = entry.find("kernels")) parse_kernels(*kernels, r);
  if (auto host = entry.find("host_overhead_us")) {
    host->expect_object();
    for (const auto& item : host->json().items()) {
      const JsonView value = host->at(item.key());
      const std::optional<DeviceType> type = parse_device_type(item.key());
      if (!type) {
        value.fail(with_suggestion(fmt::format("unknown device type \"{}\"", item.key()),
                                   item.key(), {"cpu", "gpu", "tpu", "accelerator"}));
      }
      const double us = value.as_number();
      if (!(us > 0) || us > 1e6) {
        value.fail(fmt::format("expected microseconds above 0 and at most 1e6, got {}",
                               value.json().dump()));
      }
      r.host_overhead_s[static_cast<std::size_t>(*type)] = us * 1e-6;
    }
  }
  const JsonView sources = entry.at("sources");
  r.sources = string_list(sources, true);
  if (r.sources.empty()) sources.fail("a runtime needs at least one source");
  if (auto notes = entry.find("notes")) r.notes = notes->as_string();
  if (auto serving = entry.find("serving")) r.serving = parse_serving(*serving);
  return r;
}

}  // namespace

double Runtime::kernels(const Layer& layer) const {
  if (layer.view) return 0;
  for (const auto& [op, count] : kernels_per_op) {
    if (op == layer.op) return count;
  }
  double count = kernels_per_class[static_cast<std::size_t>(layer.traits.op_class)];
  if (layer.traits.rotary) count += rotary_kernels;
  // A decode step appends this token's keys and values to the cache.
  if (layer.counts.kv_cache_read_elements > 0) count += cache_update_kernels;
  return count;
}

bool Runtime::runs_on(DeviceType type) const {
  return device_types.empty() ||
         std::find(device_types.begin(), device_types.end(), type) != device_types.end();
}

const Runtime* RuntimeTable::find(std::string_view name) const {
  return find_by_name(runtimes, name);
}

const Runtime& RuntimeTable::get(std::string_view name) const {
  if (const Runtime* runtime = find(name)) return *runtime;
  const std::vector<std::string> keys = names_of(runtimes);
  const std::vector<std::string_view> known(keys.begin(), keys.end());
  throw Error({}, with_suggestion(fmt::format("unknown runtime \"{}\"", name), name, known) +
                      " (`capcalc runtimes list` shows them)");
}

Runtime RuntimeTable::for_profile(Profile profile) const {
  if (const Runtime* runtime = find(profile_name(profile))) return *runtime;
  return generic_runtime(profile);
}

Runtime generic_runtime(Profile profile) {
  Runtime r;
  r.id = std::string(profile_name(profile));
  r.name = fmt::format("{} profile", profile_name(profile));
  r.profile = profile;
  r.kernels_per_class = one_kernel_per_layer();
  return r;
}

RuntimeTable parse_runtimes(std::string_view text, const std::string& file) {
  const nlohmann::json document = parse_json_text(text, file);
  const JsonView root(document, file);
  reject_unknown_keys(root, kTableKeys, "the runtime table");
  RuntimeTable table;
  if (auto version = root.find("version")) table.version = version->as_string();
  const JsonView list = root.at("runtimes");
  for (std::size_t i = 0; i < list.array_size(); ++i) {
    const JsonView entry = list.at(i);
    Runtime runtime = parse_runtime(entry);
    // Ids and aliases name one runtime each.
    std::vector<std::string> names = runtime.aliases;
    names.push_back(runtime.id);
    for (const std::string& name : names) {
      if (const Runtime* other = table.find(name)) {
        entry.fail(fmt::format("\"{}\" already names runtime \"{}\"", name, other->id));
      }
    }
    table.runtimes.push_back(std::move(runtime));
  }
  return table;
}

RuntimeTable load_runtimes(const std::string& path) {
  return parse_runtimes(read_input_file(path), path);
}

RuntimeTable load_runtimes(const std::string& path, const std::vector<std::string>& overlays) {
  RuntimeTable table = load_runtimes(path);
  for (const std::string& overlay_path : overlays) {
    RuntimeTable overlay = load_runtimes(overlay_path);
    for (Runtime& runtime : overlay.runtimes) {
      const auto same = std::find_if(table.runtimes.begin(), table.runtimes.end(),
                                     [&](const Runtime& r) { return r.id == runtime.id; });
      if (same != table.runtimes.end()) {
        *same = std::move(runtime);
      } else {
        table.runtimes.insert(table.runtimes.begin(), std::move(runtime));
      }
    }
  }
  return table;
}

}  // namespace capcalc
