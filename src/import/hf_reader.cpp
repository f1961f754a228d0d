#include "import/hf_reader.hpp"

#include <utility>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/units.hpp"

#include "limits.hpp"
#include "spellcheck.hpp"

namespace capcalc::hf {

std::optional<JsonView> Config::find(std::string_view key) const {
  std::optional<JsonView> value = root_.find(key);
  if (value && value->is_null()) return std::nullopt;
  return value;
}

std::int64_t Config::required(std::string_view key) const {
  if (auto value = find(key)) return value->as_positive_int();
  fail(key, fmt::format("missing required key \"{}\" (model_type \"{}\")", key, model_type_));
}

std::int64_t Config::positive(std::string_view key, std::int64_t fallback) const {
  if (auto value = find(key)) return value->as_positive_int();
  return fallback;
}

std::int64_t Config::count(std::string_view key, std::int64_t fallback) const {
  if (auto value = find(key)) {
    const std::int64_t n = value->as_integer();
    if (n < 0) value->fail(fmt::format("expected a count (0 or more), got {}", n));
    return n;
  }
  return fallback;
}

std::int64_t Config::layers(std::string_view key, std::optional<std::int64_t> fallback) const {
  const std::int64_t n = fallback ? positive(key, *fallback) : required(key);
  if (n > kMaxHfLayers) {
    fail(key, fmt::format("{} layers is more than {} (the limit for a Hugging Face config)",
                          format_grouped(n), format_grouped(kMaxHfLayers)));
  }
  return n;
}

std::optional<std::int64_t> Config::optional_positive(std::string_view key) const {
  if (auto value = find(key)) return value->as_positive_int();
  return std::nullopt;
}

bool Config::flag(std::string_view key, bool fallback) const {
  if (auto value = find(key)) return value->as_bool();
  return fallback;
}

std::optional<std::string> Config::text(std::string_view key) const {
  if (auto value = find(key)) return value->as_string();
  return std::nullopt;
}

void Config::fail(std::string_view key, const std::string& message) const {
  throw Error({root_.file(), fmt::format("{}/{}", root_.pointer(), key), 0, 0}, message);
}

std::string activation_of(const Config& config, std::string_view key, std::string fallback) {
  const std::string name = config.text(key).value_or(fallback);
  if (name == "silu" || name == "swish") return "silu";
  // NewGELUActivation (transformers' activations.py) writes the tanh form as eight Python
  // operators; gelu, gelu_pytorch_tanh and the others call one fused GELU.
  if (name == "gelu_new") return "gelu_new";
  if (name.rfind("gelu", 0) == 0) return "gelu";
  if (name == "relu") return "relu";
  config.fail(key, with_suggestion(fmt::format("unsupported activation \"{}\" (supported: silu, "
                                               "swish, relu, gelu and its variants)",
                                               name),
                                   name, {"silu", "swish", "relu", "gelu", "gelu_new"}));
}

void read_heads(const Config& config, Spec& spec, std::string_view heads_key,
                std::optional<std::int64_t> heads_default, std::optional<std::int64_t> kv_default) {
  spec.attention.heads =
      heads_default ? config.positive(heads_key, *heads_default) : config.required(heads_key);
  spec.attention.kv_heads =
      config.positive("num_key_value_heads", kv_default.value_or(spec.attention.heads));
  if (spec.attention.heads % spec.attention.kv_heads != 0) {
    config.fail("num_key_value_heads",
                fmt::format("num_key_value_heads = {} must divide {} = {}", spec.attention.kv_heads,
                            heads_key, spec.attention.heads));
  }
  if (auto head_dim = config.optional_positive("head_dim")) {
    spec.attention.head_dim = *head_dim;
  } else if (spec.hidden % spec.attention.heads != 0) {
    config.fail(heads_key, fmt::format("hidden size {} is not divisible by {} = {}; give "
                                       "head_dim",
                                       spec.hidden, heads_key, spec.attention.heads));
  } else {
    spec.attention.head_dim = spec.hidden / spec.attention.heads;
  }
}

void read_windows(const Config& config, Spec& spec, bool enabled, std::int64_t first_sliding) {
  const std::int64_t window = enabled ? config.positive("sliding_window", 0) : 0;
  spec.per_layer.windows.assign(static_cast<std::size_t>(spec.layers), 0);
  if (auto types = config.find("layer_types")) {
    const std::vector<bool> sliding = read_layer_kinds(*types, spec.layers, "sliding_attention");
    for (std::size_t i = 0; i < sliding.size(); ++i) {
      if (sliding[i]) spec.per_layer.windows[i] = window;
    }
    return;
  }
  for (std::int64_t i = first_sliding; i < spec.layers; ++i) {
    spec.per_layer.windows[static_cast<std::size_t>(i)] = window;
  }
}

void check_experts_per_token(const Config& config, const Spec& spec, std::string_view experts_key) {
  if (spec.moe.experts_per_token > spec.moe.experts) {
    config.fail("num_experts_per_tok",
                fmt::format("num_experts_per_tok = {} exceeds {} = {}", spec.moe.experts_per_token,
                            experts_key, spec.moe.experts));
  }
}

void read_windows_by_layer(const Config& config, Spec& spec,
                           const std::function<bool(std::int64_t)>& sliding) {
  if (config.find("layer_types")) {
    read_windows(config, spec, true);
    return;
  }
  const std::int64_t window = config.positive("sliding_window", 4096);
  for (std::int64_t i = 0; i < spec.layers; ++i)
    spec.per_layer.windows[static_cast<std::size_t>(i)] = sliding(i) ? window : 0;
}

std::vector<bool> read_layer_flags(const JsonView& list, std::int64_t layers) {
  if (list.array_size() < static_cast<std::size_t>(layers)) {
    list.fail(fmt::format("expected at least {} entries (num_hidden_layers), got {}", layers,
                          list.array_size()));
  }
  std::vector<bool> flags(static_cast<std::size_t>(layers));
  for (std::size_t i = 0; i < flags.size(); ++i) {
    const std::int64_t value = list.at(i).as_integer();
    if (value != 0 && value != 1) list.at(i).fail(fmt::format("expected 0 or 1, got {}", value));
    flags[i] = value == 1;
  }
  return flags;
}

std::vector<bool> read_layer_kinds(const JsonView& types, std::int64_t layers,
                                   std::string_view other) {
  if (types.array_size() != static_cast<std::size_t>(layers)) {
    types.fail(
        fmt::format("expected {} entries (num_hidden_layers), got {}", layers, types.array_size()));
  }
  std::vector<bool> kinds(static_cast<std::size_t>(layers));
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const std::string kind = types.at(i).as_string();
    if (kind != "full_attention" && kind != other) {
      types.at(i).fail(fmt::format(
          "unknown layer type \"{}\" (expected \"full_attention\" or \"{}\")", kind, other));
    }
    kinds[i] = kind == other;
  }
  return kinds;
}

std::vector<std::size_t> read_layer_indices(const JsonView& list, std::int64_t layers) {
  std::vector<std::size_t> indices;
  for (std::size_t k = 0; k < list.array_size(); ++k) {
    const JsonView entry = list.at(k);
    const std::int64_t i = entry.as_integer();
    if (i < 0 || i >= layers) {
      entry.fail(
          fmt::format("layer {} out of range: the model has {} (0 to {})", i, layers, layers - 1));
    }
    indices.push_back(static_cast<std::size_t>(i));
  }
  return indices;
}

VisionSpec read_vision_tower(const Config& config, const VisionDefaults& defaults) {
  VisionSpec v;
  v.hidden = config.positive("hidden_size", defaults.hidden);
  v.intermediate = config.positive("intermediate_size", defaults.intermediate);
  v.layers = config.layers("num_hidden_layers", defaults.layers);
  v.heads = config.positive("num_attention_heads", defaults.heads);
  v.channels = config.positive("num_channels", 3);
  v.image = config.positive("image_size", defaults.image);
  v.patch = config.positive("patch_size", defaults.patch);
  v.activation = activation_of(config, "hidden_act", std::string(defaults.activation));
  if (v.hidden % v.heads != 0) {
    config.fail("num_attention_heads",
                fmt::format("hidden_size {} is not divisible by num_attention_heads = {}", v.hidden,
                            v.heads));
  }
  if (v.image % v.patch != 0) {
    config.fail("patch_size",
                fmt::format("image_size {} is not a multiple of patch_size {}", v.image, v.patch));
  }
  return v;
}

}  // namespace capcalc::hf
