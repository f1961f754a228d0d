// Rendering of the runtime table (`capcalc runtimes list` and `capcalc runtimes show`).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/report.hpp"
#include "capcalc/units.hpp"

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
  if (r.expert_bias_kernels > 0) entries.emplace_back("expert_bias", r.expert_bias_kernels);
  entries.insert(entries.end(), r.kernels_per_op.begin(), r.kernels_per_op.end());
  return entries;
}

bool has_fp8_expert_quantize(const Runtime& r) {
  return std::any_of(r.fp8_expert_quantize_kernels.begin(), r.fp8_expert_quantize_kernels.end(),
                     [](double count) { return count > 0; });
}

std::string kernels_text(const Runtime& r) {
  std::vector<std::string> parts;
  for (const auto& [key, count] : kernel_entries(r)) {
    const bool extra = key == "rotary" || key == "cache_update" || key == "autocast_weight_casts";
    // Per expert the device holds: "local_expert 2 each".
    const bool each = key == "local_expert" || key == "expert_bias";
    parts.push_back(fmt::format("{} {}{:g}{}", key, extra ? "+" : "", count, each ? " each" : ""));
  }
  return parts.empty() ? "one per layer" : fmt::format("{}", fmt::join(parts, ", "));
}

// "budget 8,192 tokens, 1,024 sequences, 90 % of device memory": what the base or a tier sets.
std::string serving_limits_text(std::int64_t tokens, std::int64_t seqs, double utilization,
                                double reserved_bytes, MemoryFraction of) {
  std::vector<std::string> parts;
  if (tokens > 0) parts.push_back(fmt::format("budget {} tokens", format_grouped(tokens)));
  if (seqs > 0) parts.push_back(fmt::format("{} sequences", format_grouped(seqs)));
  if (reserved_bytes > 0) {
    parts.push_back(fmt::format("memory less {} MiB",
                                format_grouped(std::llround(reserved_bytes / kBytesPerMiB))));
  } else if (utilization > 0) {
    parts.push_back(fmt::format("{:g} % of {} memory", 100 * utilization,
                                of == MemoryFraction::kFree ? "free" : "device"));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// `capcalc serve`'s defaults for the runtime: the base values, then one line per memory tier.
std::string serving_text(const ServingDefaults& d) {
  const std::string_view holds =
      d.fraction_of == MemoryFraction::kStatic ? " for weights and KV cache"
      : d.fraction_of == MemoryFraction::kFree ? " (what weights and activations leave)"
                                               : "";
  const std::string base = fmt::format(
      "{}{}, {}-token blocks, {}, {}",
      serving_limits_text(d.max_num_batched_tokens, d.max_num_seqs, d.memory_utilization,
                          d.reserved_memory_bytes, d.fraction_of),
      holds, d.block_size, d.chunked_prefill ? "prefill chunked" : "prefill not chunked",
      d.scheduler == Scheduler::kSglang ? "SGLang's scheduler"
      : d.reserve_full_request          ? "vLLM's scheduler with blocks reserved to the end"
                                        : "vLLM's scheduler");
  std::string out = "  serving      " + wrap_text(base, 100, 15);
  for (const ServingTier& t : d.tiers) {
    const std::string tier = fmt::format(
        "from {:g} GiB{}: {}", t.min_memory_bytes / kBytesPerGiB,
        t.except_names.empty() ? std::string()
                               : fmt::format(" (not {})", fmt::join(t.except_names, ", ")),
        serving_limits_text(t.max_num_batched_tokens, t.max_num_seqs, t.memory_utilization,
                            t.reserved_memory_bytes, d.fraction_of));
    out += "               " + wrap_text(tier, 100, 15);
  }
  return out;
}

// The limits a serving block or one of its tiers sets, keyed as the runtime table keys them.
void limits_json(Json& j, std::int64_t tokens, std::int64_t seqs, double utilization,
                 double reserved_bytes) {
  if (tokens > 0) j["max_num_batched_tokens"] = tokens;
  if (seqs > 0) j["max_num_seqs"] = seqs;
  if (reserved_bytes > 0) {
    j["reserved_memory_mib"] = reserved_bytes / kBytesPerMiB;
  } else if (utilization > 0) {
    j["gpu_memory_utilization"] = utilization;
  }
}

// The serving block as the runtime table spells it.
Json serving_json(const ServingDefaults& d) {
  Json j;
  limits_json(j, d.max_num_batched_tokens, d.max_num_seqs, d.memory_utilization,
              d.reserved_memory_bytes);
  j["block_size"] = d.block_size;
  j["memory_fraction_of"] = std::string(memory_fraction_name(d.fraction_of));
  j["chunked_prefill"] = d.chunked_prefill;
  j["reserve_full_request"] = d.reserve_full_request;
  j["scheduler"] = std::string(scheduler_name(d.scheduler));
  Json tiers = Json::array();
  for (const ServingTier& t : d.tiers) {
    Json tier;
    tier["min_memory_gib"] = t.min_memory_bytes / kBytesPerGiB;
    if (!t.except_names.empty()) tier["except_names"] = t.except_names;
    limits_json(tier, t.max_num_batched_tokens, t.max_num_seqs, t.memory_utilization,
                t.reserved_memory_bytes);
    tiers.push_back(tier);
  }
  j["memory_tiers"] = tiers;
  return j;
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
  if (has_fp8_expert_quantize(r)) {
    Json quantize = Json::object();
    for (std::size_t i = 0; i < kFp8RecipeCount; ++i)
      quantize[std::string(fp8_recipe_name(static_cast<Fp8Recipe>(i)))] =
          r.fp8_expert_quantize_kernels[i];
    j["fp8_expert_quantize"] = quantize;
  }
  if (r.vocab_padding > 0) j["vocab_padding"] = r.vocab_padding;
  if (r.flash_attention) j["flash_attention"] = true;
  if (r.fp8_quantize_bytes > 0) j["fp8_quantize_bytes"] = r.fp8_quantize_bytes;
  if (r.serving) j["serving"] = serving_json(*r.serving);
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
  if (has_fp8_expert_quantize(r)) {
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < kFp8RecipeCount; ++i) {
      parts.push_back(fmt::format("{} {:g}", fp8_recipe_name(static_cast<Fp8Recipe>(i)),
                                  r.fp8_expert_quantize_kernels[i]));
    }
    out += fmt::format("  fp8 experts  {} quantize kernels per expert and tensor\n",
                       fmt::join(parts, ", "));
  }
  if (r.vocab_padding > 0) {
    out += fmt::format(
        "  vocabulary   padded to a multiple of {} per tensor-parallel device (output layer "
        "aligned)\n",
        r.vocab_padding);
  }
  if (r.flash_attention) {
    out +=
        "  attention    FlashAttention-style: causally masked tiles skipped, QKᵀ recomputed in "
        "backward\n";
  }
  if (r.fp8_quantize_bytes > 0) {
    out += fmt::format(
        "  fp8 training {:g} B per element quantized: each weighted product's input and output "
        "gradient\n",
        r.fp8_quantize_bytes);
  }
  if (r.serving) out += serving_text(*r.serving);
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
