// Reading a Hugging Face config.json: located reads of its keys (a JSON null counts as absent:
// transformers writes "head_dim": null for "not set") and the readers that several
// architectures share. Defaults are transformers' (the *Config classes' __init__ arguments).
// Every error points into the config: `config.json:/num_key_value_heads: ...`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "import/hf_spec.hpp"
#include "json_view.hpp"

namespace capcalc::hf {

// One config object (the root, or a multimodal model's text_config or vision_config).
class Config {
 public:
  Config(const nlohmann::json& document, const std::string& file) : root_(document, file) {}
  explicit Config(JsonView root) : root_(std::move(root)) {}

  std::optional<JsonView> find(std::string_view key) const;  // Absent or null: nullopt.
  std::int64_t required(std::string_view key) const;         // A positive integer.
  std::int64_t positive(std::string_view key, std::int64_t fallback) const;
  std::int64_t count(std::string_view key, std::int64_t fallback) const;  // 0 or more.
  std::optional<std::int64_t> optional_positive(std::string_view key) const;
  bool flag(std::string_view key, bool fallback) const;
  std::optional<std::string> text(std::string_view key) const;
  // A number of decoder or encoder layers, each a block call of 10 to 30 native layers: the
  // limit is checked here, where the key is, rather than in the generated model.
  std::int64_t layers(std::string_view key, std::optional<std::int64_t> fallback = {}) const;

  [[noreturn]] void fail(std::string_view key, const std::string& message) const;

  const JsonView& root() const { return root_; }
  // Named in "missing required key" messages.
  void set_model_type(std::string model_type) { model_type_ = std::move(model_type); }

 private:
  JsonView root_;
  std::string model_type_;
};

// The activation `key` names (or `fallback`): transformers' ACT2FN names, reduced to capcalc's
// operators ("silu", "gelu", "relu").
std::string activation_of(const Config& config, std::string_view key, std::string fallback);

// Heads, key/value heads (GQA/MQA) and head size, checked here so that errors point into the
// config rather than the generated model. Needs spec.hidden.
void read_heads(const Config& config, Spec& spec, std::string_view heads_key,
                std::optional<std::int64_t> heads_default = std::nullopt,
                std::optional<std::int64_t> kv_default = std::nullopt);

// Sliding windows per layer. "layer_types" (newer transformers) names each layer's kind;
// otherwise every layer gets `sliding_window` when `enabled`, from `first_sliding` on.
void read_windows(const Config& config, Spec& spec, bool enabled, std::int64_t first_sliding = 0);

// Sliding windows (default 4096) on the layers `sliding` picks, unless "layer_types" names
// each layer's.
void read_windows_by_layer(const Config& config, Spec& spec,
                           const std::function<bool(std::int64_t)>& sliding);

// A mixture of experts routes each token to at most all its experts.
void check_experts_per_token(const Config& config, const Spec& spec, std::string_view experts_key);

// A per-layer 0/1 list of at least `layers` entries (Llama 4's no_rope_layers).
std::vector<bool> read_layer_flags(const JsonView& list, std::int64_t layers);

// "layer_types": one entry per layer, each "full_attention" or `other` ("sliding_attention",
// "chunked_attention"); true where it is `other`.
std::vector<bool> read_layer_kinds(const JsonView& types, std::int64_t layers,
                                   std::string_view other);

// A list of layer indices (mlp_only_layers, moe_layers), each checked against `layers`.
std::vector<std::size_t> read_layer_indices(const JsonView& list, std::int64_t layers);

// The vision tower's shape shared by SigLIP's and Llama 4's encoders, with the defaults of the
// model's *VisionConfig: width, depth, heads, image and patch sizes, activation.
struct VisionDefaults {
  std::int64_t hidden;
  std::int64_t intermediate;
  std::int64_t layers;
  std::int64_t heads;
  std::int64_t image;
  std::int64_t patch;
  std::string_view activation;
};
VisionSpec read_vision_tower(const Config& config, const VisionDefaults& defaults);

}  // namespace capcalc::hf
