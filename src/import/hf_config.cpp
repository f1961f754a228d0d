#include "import/hf_config.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/units.hpp"

#include "json_view.hpp"
#include "limits.hpp"
#include "spellcheck.hpp"

namespace capcalc {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kNativeFormat = "capcalc-model/1";
// The default "seq": the model's context, capped so that long-context models
// (32k, 128k) are counted at a typical training and prefill length unless --set
// seq=N says otherwise.
constexpr std::int64_t kDefaultSeqCap = 2048;

// What the translator builds; one emitter per family.
enum class Family {
  kDecoder,  // Pre-norm RMSNorm decoder with a gated MLP (Llama and its
             // descendants).
  kGpt2,     // Pre-LN, learned positions, fused-bias attention, GELU MLP.
  kNeox,     // Pre-LN, rotary, parallel (or sequential) attention + MLP, separate
             // embed_out.
  kBert,     // Post-LN encoder with token types and a pooler (BertModel).
};

// An image encoder beside the decoder. kSiglip: a SigLIP vision tower and Gemma 3's projector
// (patch embedding, learned positions, pre-LN encoder layers, final LayerNorm; the patches
// average-pooled to `tokens` per image, RMSNorm, projected to the decoder's width). kLlama4:
// Llama 4's (patch embedding without bias, a class token, learned positions, LayerNorm, pre-LN
// encoder layers, LayerNorm; the class token dropped, the patches pixel-shuffled to `tokens`
// of hidden / ratio², a two-layer GELU adapter, a projection to the decoder's width).
enum class VisionKind { kSiglip, kLlama4 };

struct VisionSpec {
  VisionKind kind = VisionKind::kSiglip;
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t channels = 3;
  std::int64_t image = 0;
  std::int64_t patch = 0;
  std::int64_t tokens = 0;  // mm_tokens_per_image.
  std::int64_t pooled = 0;  // Tokens per side of the pooled grid: sqrt(tokens).
  std::string activation = "gelu";
  // kLlama4: the adapter's widths (projector_input_dim, projector_output_dim), the shuffled
  // token width and the projector's bias.
  std::int64_t adapter_hidden = 0;
  std::int64_t adapter_out = 0;
  std::int64_t shuffled = 0;
  bool projector_bias = false;
};

struct Spec {
  std::string model_type;
  Family family = Family::kDecoder;
  std::int64_t vocab = 0;
  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t intermediate = 0;
  std::int64_t max_positions = 0;
  std::string activation = "silu";  // The MLP's (gated for kDecoder).
  bool qkv_bias = false;
  bool out_bias = false;
  bool mlp_bias = false;
  bool tied = false;
  bool parallel_residual = false;
  bool qk_norm = false;         // RMSNorm of each head's queries and keys (Qwen3, Gemma 3).
  bool sandwich_norms = false;  // RMSNorm after attention and around the MLP (Gemma 2, 3).
  std::int64_t experts = 0;     // > 0: the MLP is a mixture of experts.
  std::int64_t experts_per_token = 0;
  std::int64_t expert_intermediate = 0;         // Each expert's hidden size.
  std::string moe_name = "block_sparse_moe";    // The MoE module's name in the checkpoint.
  std::int64_t shared_expert_intermediate = 0;  // DeepSeek: the always-on shared experts' MLP.
  bool router_bias = false;         // DeepSeek-V3's e_score_correction_bias, gpt-oss's router bias.
  bool expert_bias = false;         // gpt-oss: biases in every expert.
  bool attention_sinks = false;     // gpt-oss: a learned sink logit per head.
  std::vector<bool> dense_layers;   // MoE models: layers with a dense MLP (empty: none).
  bool shared_expert_gate = false;  // Qwen2-MoE: a sigmoid gate on the shared expert.
  // Multi-head latent attention (DeepSeek-V2/V3): set when kv_lora_rank > 0.
  std::int64_t q_lora_rank = 0;  // 0: queries projected directly (V2-Lite).
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  std::int64_t type_vocab = 0;        // BERT's token types.
  std::vector<std::int64_t> windows;  // Per layer: sliding window, 0 for full attention.
  std::vector<std::int64_t> chunks;   // Per layer: chunked attention's chunk (Llama 4), 0: none.
  std::vector<bool> l2_qk_norm;       // Per layer: queries and keys L2-normalised (Llama 4).
  std::string mlp_name = "mlp";       // The dense MLP's module name.
  std::optional<VisionSpec> vision;   // Multimodal: the image encoder beside the decoder.
};

// Located reads of a config's keys. A JSON null counts as absent: transformers
// writes "head_dim": null and "sliding_window": null for "not set".
class Config {
 public:
  Config(const Json& document, const std::string& file) : root_(document, file) {}
  explicit Config(JsonView root) : root_(std::move(root)) {}

  std::optional<JsonView> find(std::string_view key) const {
    std::optional<JsonView> value = root_.find(key);
    if (value && value->is_null()) return std::nullopt;
    return value;
  }

  std::int64_t required(std::string_view key) const {
    if (auto value = find(key)) return value->as_positive_int();
    fail(key, fmt::format("missing required key \"{}\" (model_type \"{}\")", key, model_type_));
  }

  std::int64_t positive(std::string_view key, std::int64_t fallback) const {
    if (auto value = find(key)) return value->as_positive_int();
    return fallback;
  }

  // A count that may be zero.
  std::int64_t count(std::string_view key, std::int64_t fallback) const {
    if (auto value = find(key)) {
      const std::int64_t n = value->as_integer();
      if (n < 0) value->fail(fmt::format("expected a count (0 or more), got {}", n));
      return n;
    }
    return fallback;
  }

  // A number of decoder or encoder layers, each a block call of 10 to 30 native layers: the
  // limit is checked here, where the key is, rather than in the generated model.
  std::int64_t layers(std::string_view key, std::optional<std::int64_t> fallback = {}) const {
    const std::int64_t n = fallback ? positive(key, *fallback) : required(key);
    if (n > kMaxHfLayers) {
      fail(key, fmt::format("{} layers is more than {} (the limit for a Hugging Face config)",
                            format_grouped(n), format_grouped(kMaxHfLayers)));
    }
    return n;
  }

  std::optional<std::int64_t> optional_positive(std::string_view key) const {
    if (auto value = find(key)) return value->as_positive_int();
    return std::nullopt;
  }

  bool flag(std::string_view key, bool fallback) const {
    if (auto value = find(key)) return value->as_bool();
    return fallback;
  }

  std::optional<std::string> text(std::string_view key) const {
    if (auto value = find(key)) return value->as_string();
    return std::nullopt;
  }

  [[noreturn]] void fail(std::string_view key, const std::string& message) const {
    throw Error({root_.file(), fmt::format("{}/{}", root_.pointer(), key), 0, 0}, message);
  }

  const JsonView& root() const { return root_; }
  void set_model_type(std::string model_type) { model_type_ = std::move(model_type); }

 private:
  JsonView root_;
  std::string model_type_;
};

// ---------------------------------------------------------------------------------------------
// Reading configs. Defaults are transformers' (the *Config classes' __init__
// arguments).

// The MLP activation: transformers' ACT2FN names, reduced to capcalc's
// operators.
std::string activation_of(const Config& config, std::string_view key, std::string fallback) {
  const std::string name = config.text(key).value_or(fallback);
  if (name == "silu" || name == "swish") return "silu";
  if (name.rfind("gelu", 0) == 0) return "gelu";  // gelu, gelu_new, gelu_pytorch_tanh, ...
  if (name == "relu") return "relu";
  config.fail(key, with_suggestion(fmt::format("unsupported activation \"{}\" (supported: silu, "
                                               "swish, relu, gelu and its variants)",
                                               name),
                                   name, {"silu", "swish", "relu", "gelu", "gelu_new"}));
}

// Heads, key/value heads (GQA/MQA) and head size, checked here so that errors
// point into the config rather than the generated model.
void read_heads(const Config& config, Spec& spec, std::string_view heads_key,
                std::optional<std::int64_t> heads_default = std::nullopt,
                std::optional<std::int64_t> kv_default = std::nullopt) {
  spec.heads =
      heads_default ? config.positive(heads_key, *heads_default) : config.required(heads_key);
  spec.kv_heads = config.positive("num_key_value_heads", kv_default.value_or(spec.heads));
  if (spec.heads % spec.kv_heads != 0) {
    config.fail("num_key_value_heads", fmt::format("num_key_value_heads = {} must divide {} = {}",
                                                   spec.kv_heads, heads_key, spec.heads));
  }
  if (auto head_dim = config.optional_positive("head_dim")) {
    spec.head_dim = *head_dim;
  } else if (spec.hidden % spec.heads != 0) {
    config.fail(heads_key, fmt::format("hidden size {} is not divisible by {} = {}; give "
                                       "head_dim",
                                       spec.hidden, heads_key, spec.heads));
  } else {
    spec.head_dim = spec.hidden / spec.heads;
  }
}

// Sliding windows per layer. "layer_types" (newer transformers) names each
// layer's kind; otherwise every layer gets `sliding_window` when `enabled`,
// from `first_sliding` on.
void read_windows(const Config& config, Spec& spec, bool enabled, std::int64_t first_sliding = 0) {
  const std::int64_t window = enabled ? config.positive("sliding_window", 0) : 0;
  spec.windows.assign(static_cast<std::size_t>(spec.layers), 0);
  if (auto types = config.find("layer_types")) {
    if (types->array_size() != static_cast<std::size_t>(spec.layers)) {
      types->fail(fmt::format("expected {} entries (num_hidden_layers), got {}", spec.layers,
                              types->array_size()));
    }
    for (std::size_t i = 0; i < spec.windows.size(); ++i) {
      const std::string kind = types->at(i).as_string();
      if (kind == "sliding_attention") {
        spec.windows[i] = window;
      } else if (kind != "full_attention") {
        types->at(i).fail(
            fmt::format("unknown layer type \"{}\" (expected \"full_attention\" or "
                        "\"sliding_attention\")",
                        kind));
      }
    }
    return;
  }
  for (std::int64_t i = first_sliding; i < spec.layers; ++i) {
    spec.windows[static_cast<std::size_t>(i)] = window;
  }
}

// A mixture of experts routes each token to at most all its experts.
void check_experts_per_token(const Config& config, const Spec& spec, std::string_view experts_key) {
  if (spec.experts_per_token > spec.experts) {
    config.fail("num_experts_per_tok",
                fmt::format("num_experts_per_tok = {} exceeds {} = {}", spec.experts_per_token,
                            experts_key, spec.experts));
  }
}

// Llama 1/2/3 and the decoders that share its layout.
void read_decoder(const Config& config, Spec& spec) {
  spec.family = Family::kDecoder;
  spec.vocab = config.required("vocab_size");
  spec.hidden = config.required("hidden_size");
  spec.layers = config.layers("num_hidden_layers");
  spec.intermediate = config.required("intermediate_size");
  spec.max_positions = config.required("max_position_embeddings");
  read_heads(config, spec, "num_attention_heads");
  spec.activation = activation_of(config, "hidden_act", "silu");
  spec.windows.assign(static_cast<std::size_t>(spec.layers), 0);
}

void read_llama(const Config& config, Spec& spec) {
  read_decoder(config, spec);
  // LlamaAttention: bias=config.attention_bias on q, k, v and o; LlamaMLP:
  // config.mlp_bias.
  spec.qkv_bias = spec.out_bias = config.flag("attention_bias", false);
  spec.mlp_bias = config.flag("mlp_bias", false);
  spec.tied = config.flag("tie_word_embeddings", false);
}

void read_mistral(const Config& config, Spec& spec) {
  read_decoder(config, spec);
  spec.tied = config.flag("tie_word_embeddings", false);
  read_windows(config, spec, true);
}

void read_mixtral(const Config& config, Spec& spec) {
  read_mistral(config, spec);
  spec.experts = config.positive("num_local_experts", 8);
  spec.experts_per_token = config.positive("num_experts_per_tok", 2);
  spec.expert_intermediate = spec.intermediate;
  check_experts_per_token(config, spec, "num_local_experts");
}

void read_qwen2(const Config& config, Spec& spec) {
  read_decoder(config, spec);
  // Qwen2Attention: q_proj, k_proj, v_proj with bias, o_proj without.
  spec.qkv_bias = true;
  spec.out_bias = false;
  spec.tied = config.flag("tie_word_embeddings", false);
  // Sliding windows only with use_sliding_window, on the layers from
  // max_window_layers up.
  read_windows(config, spec, config.flag("use_sliding_window", false),
               config.positive("max_window_layers", 28));
}

// Qwen3: Qwen2's layout without the Q/K/V biases (attention_bias) and with q_norm and k_norm.
void read_qwen3(const Config& config, Spec& spec) {
  read_qwen2(config, spec);
  spec.qkv_bias = spec.out_bias = config.flag("attention_bias", false);
  spec.qk_norm = true;
}

// Qwen's MoE decoders: layer i's MLP is sparse unless mlp_only_layers lists it or
// (i + 1) % decoder_sparse_step != 0; dense ones have intermediate_size.
void read_qwen_sparse_layers(const Config& config, Spec& spec) {
  const std::int64_t step = config.positive("decoder_sparse_step", 1);
  spec.dense_layers.assign(static_cast<std::size_t>(spec.layers), false);
  for (std::int64_t i = 0; i < spec.layers; ++i) {
    spec.dense_layers[static_cast<std::size_t>(i)] = (i + 1) % step != 0;
  }
  if (auto dense = config.find("mlp_only_layers")) {
    for (std::size_t k = 0; k < dense->array_size(); ++k) {
      const JsonView entry = dense->at(k);
      const std::int64_t i = entry.as_integer();
      if (i < 0 || i >= spec.layers) {
        entry.fail(fmt::format("layer {} out of range: the model has {} (0 to {})", i, spec.layers,
                               spec.layers - 1));
      }
      spec.dense_layers[static_cast<std::size_t>(i)] = true;
    }
  }
}

// Qwen3-MoE: Qwen3 attention; every layer's MLP a mixture of num_experts SwiGLU experts of
// moe_intermediate_size, num_experts_per_tok of them per token, routed by "mlp.gate".
void read_qwen3_moe(const Config& config, Spec& spec) {
  read_qwen3(config, spec);
  spec.experts = config.positive("num_experts", 128);
  spec.experts_per_token = config.positive("num_experts_per_tok", 8);
  spec.expert_intermediate = config.positive("moe_intermediate_size", 768);
  spec.moe_name = "mlp";
  check_experts_per_token(config, spec, "num_experts");
  read_qwen_sparse_layers(config, spec);
}

// Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B): Qwen2 attention (Q, K, V biases); every MLP a
// mixture of num_experts experts of moe_intermediate_size (top num_experts_per_tok) beside a
// shared expert of shared_expert_intermediate_size scaled by a sigmoid gate (d x 1).
void read_qwen2_moe(const Config& config, Spec& spec) {
  read_qwen2(config, spec);
  spec.experts = config.positive("num_experts", 60);
  spec.experts_per_token = config.positive("num_experts_per_tok", 4);
  spec.expert_intermediate = config.positive("moe_intermediate_size", 1408);
  spec.shared_expert_intermediate = config.count("shared_expert_intermediate_size", 5632);
  spec.shared_expert_gate = spec.shared_expert_intermediate > 0;
  spec.moe_name = "mlp";
  check_experts_per_token(config, spec, "num_experts");
  read_qwen_sparse_layers(config, spec);
}

// DeepSeek-V2 and V3 (and Kimi K2, a deepseek_v3): multi-head latent attention, and MoE
// layers of n_routed_experts experts (num_experts_per_tok per token) beside n_shared_experts
// always-on ones, after first_k_dense_replace layers with a dense MLP of intermediate_size
// (DeepseekV3DecoderLayer). V3's router also holds a per-expert e_score_correction_bias
// (topk_method "noaux_tc"). The multi-token-prediction layers (num_nextn_predict_layers) are
// not part of the model transformers builds, nor of the published 671B.
void read_deepseek(const Config& config, Spec& spec) {
  read_decoder(config, spec);
  spec.qkv_bias = spec.out_bias = config.flag("attention_bias", false);
  spec.tied = config.flag("tie_word_embeddings", false);
  spec.q_lora_rank = config.optional_positive("q_lora_rank").value_or(0);
  spec.kv_lora_rank = config.required("kv_lora_rank");
  spec.qk_nope_head_dim = config.required("qk_nope_head_dim");
  spec.qk_rope_head_dim = config.required("qk_rope_head_dim");
  spec.v_head_dim = config.required("v_head_dim");
  if (spec.qkv_bias) config.fail("attention_bias", "latent attention with biases is not supported");
  if (auto experts = config.optional_positive("n_routed_experts")) {
    spec.experts = *experts;
    spec.experts_per_token = config.required("num_experts_per_tok");
    spec.expert_intermediate = config.required("moe_intermediate_size");
    spec.shared_expert_intermediate =
        config.count("n_shared_experts", 0) * spec.expert_intermediate;
    const std::int64_t first_dense = config.count("first_k_dense_replace", 0);
    const std::int64_t every = config.positive("moe_layer_freq", 1);
    spec.router_bias = config.text("topk_method").value_or("") == "noaux_tc";
    spec.moe_name = "mlp";
    check_experts_per_token(config, spec, "n_routed_experts");
    if (first_dense > spec.layers) {
      config.fail("first_k_dense_replace",
                  fmt::format("first_k_dense_replace = {} exceeds num_hidden_layers = {}",
                              first_dense, spec.layers));
    }
    // DeepSeek's decoder layer: MoE when layer_idx >= first_k_dense_replace and
    // layer_idx % moe_layer_freq == 0, else the dense MLP.
    spec.dense_layers.resize(static_cast<std::size_t>(spec.layers));
    for (std::int64_t i = 0; i < spec.layers; ++i) {
      spec.dense_layers[static_cast<std::size_t>(i)] = i < first_dense || i % every != 0;
    }
  }
}

// gpt-oss (GptOssForCausalLM): GQA attention with biases and a learned sink per head, every
// MLP a mixture of num_local_experts experts of intermediate_size (top num_experts_per_tok)
// whose router and experts carry biases (GptOssTopKRouter, GptOssExperts), sliding windows
// on the layers layer_types names. Its clamped SwiGLU counts as SwiGLU.
void read_gpt_oss(const Config& config, Spec& spec) {
  read_decoder(config, spec);
  spec.qkv_bias = spec.out_bias = config.flag("attention_bias", true);
  spec.tied = config.flag("tie_word_embeddings", false);
  spec.attention_sinks = true;
  spec.experts = config.required("num_local_experts");
  spec.experts_per_token =
      config.positive("num_experts_per_tok", config.positive("experts_per_token", 4));
  spec.expert_intermediate = spec.intermediate;
  spec.router_bias = spec.expert_bias = true;
  spec.moe_name = "mlp";
  check_experts_per_token(config, spec, "num_local_experts");
  read_windows(config, spec, true);
}

void read_gemma(const Config& config, Spec& spec) {
  read_decoder(config, spec);
  if (!config.find("head_dim")) spec.head_dim = 256;  // GemmaConfig's default.
  // GemmaMLP uses hidden_activation (GeGLU, tanh approximation); older configs
  // hidden_act.
  spec.activation =
      activation_of(config, config.find("hidden_activation") ? "hidden_activation" : "hidden_act",
                    "gelu_pytorch_tanh");
  spec.qkv_bias = spec.out_bias = config.flag("attention_bias", false);
  spec.tied = config.flag("tie_word_embeddings", true);
}

// Sliding windows on the layers `sliding` picks, unless "layer_types" names each layer's.
void read_windows_by_layer(const Config& config, Spec& spec,
                           const std::function<bool(std::int64_t)>& sliding) {
  if (config.find("layer_types")) {
    read_windows(config, spec, true);
    return;
  }
  const std::int64_t window = config.positive("sliding_window", 4096);
  for (std::int64_t i = 0; i < spec.layers; ++i)
    spec.windows[static_cast<std::size_t>(i)] = sliding(i) ? window : 0;
}

// Gemma 2: Gemma's layout with sandwich norms; even layers slide (Gemma2DecoderLayer's
// is_sliding = not layer_idx % 2). Soft-capping of the logits is not counted.
void read_gemma2(const Config& config, Spec& spec) {
  read_gemma(config, spec);
  spec.sandwich_norms = true;
  read_windows_by_layer(config, spec, [](std::int64_t i) { return i % 2 == 0; });
}

// Gemma 3 (text): Gemma 2 with q_norm and k_norm; every sliding_window_pattern-th layer
// (default 6) is global, the rest slide. Missing keys take Gemma3TextConfig's defaults, as
// transformers does: the multimodal checkpoints' text_config names few of them.
void read_gemma3_text(const Config& config, Spec& spec) {
  spec.family = Family::kDecoder;
  spec.vocab = config.positive("vocab_size", 262208);
  spec.hidden = config.positive("hidden_size", 2304);
  spec.layers = config.layers("num_hidden_layers", 26);
  spec.intermediate = config.positive("intermediate_size", 9216);
  spec.max_positions = config.positive("max_position_embeddings", 131072);
  read_heads(config, spec, "num_attention_heads", 8, 4);
  spec.head_dim = config.positive("head_dim", 256);
  spec.activation =
      activation_of(config, config.find("hidden_activation") ? "hidden_activation" : "hidden_act",
                    "gelu_pytorch_tanh");
  spec.qkv_bias = spec.out_bias = config.flag("attention_bias", false);
  spec.tied = config.flag("tie_word_embeddings", true);
  spec.sandwich_norms = true;
  spec.qk_norm = true;
  spec.windows.assign(static_cast<std::size_t>(spec.layers), 0);
  const std::int64_t pattern = config.positive("sliding_window_pattern", 6);
  read_windows_by_layer(config, spec, [pattern](std::int64_t i) { return (i + 1) % pattern != 0; });
}

// SigLIP's vision tower (SiglipVisionConfig's defaults) and Gemma 3's projector.
VisionSpec read_siglip_vision(const Config& config, std::int64_t tokens) {
  VisionSpec v;
  v.hidden = config.positive("hidden_size", 768);
  v.intermediate = config.positive("intermediate_size", 3072);
  v.layers = config.layers("num_hidden_layers", 12);
  v.heads = config.positive("num_attention_heads", 12);
  v.channels = config.positive("num_channels", 3);
  v.image = config.positive("image_size", 224);
  v.patch = config.positive("patch_size", 16);
  v.activation = activation_of(config, "hidden_act", "gelu_pytorch_tanh");
  v.tokens = tokens;
  if (v.hidden % v.heads != 0) {
    config.fail("num_attention_heads",
                fmt::format("hidden_size {} is not divisible by num_attention_heads = {}", v.hidden,
                            v.heads));
  }
  if (v.image % v.patch != 0) {
    config.fail("patch_size",
                fmt::format("image_size {} is not a multiple of patch_size {}", v.image, v.patch));
  }
  if (config.flag("vision_use_head", true)) {
    config.fail("vision_use_head",
                "a vision tower with its attention-pooling head (vision_use_head) is not "
                "supported; Gemma 3's configs set it to false");
  }
  return v;
}

// Gemma 3 multimodal (Gemma3ForConditionalGeneration): the gemma3_text decoder of text_config
// and a SigLIP image encoder of vision_config whose patches are average-pooled to
// mm_tokens_per_image tokens.
void read_gemma3(const Config& config, Spec& spec) {
  const std::int64_t tokens = config.positive("mm_tokens_per_image", 256);
  for (std::string_view key : {"text_config", "vision_config"}) {
    if (!config.find(key)) {
      config.fail(key, fmt::format("missing required key \"{}\" (model_type \"gemma3\")", key));
    }
  }
  const JsonView text = *config.find("text_config");
  text.expect_object();
  read_gemma3_text(Config(text), spec);
  const JsonView vision = *config.find("vision_config");
  vision.expect_object();
  const Config vision_config(vision);
  spec.vision = read_siglip_vision(vision_config, tokens);
  const std::int64_t side = spec.vision->image / spec.vision->patch;  // Patches per side.
  const auto pooled =
      static_cast<std::int64_t>(std::llround(std::sqrt(static_cast<double>(tokens))));
  spec.vision->pooled = pooled;
  if (pooled * pooled != tokens || side % pooled != 0) {
    config.fail("mm_tokens_per_image",
                fmt::format("mm_tokens_per_image = {} must be a square whose side divides the "
                            "{} x {} patches",
                            tokens, side, side));
  }
}

// A per-layer 0/1 list of at least `layers` entries (Llama 4's no_rope_layers).
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

// Llama 4 (text; Llama4TextConfig's defaults, those of Scout): every layer's attention is GQA
// without biases; the layers with RoPE (no_rope_layers 1, by default all but every
// no_rope_layer_interval-th) attend in chunks of attention_chunk_size ("chunked_attention",
// unless layer_types says otherwise) and L2-normalise queries and keys (use_qk_norm), the NoPE
// ones attend over everything. The layers moe_layers lists (by default every
// interleave_moe_layer_step-th) route each token to num_experts_per_tok of num_local_experts
// SwiGLU experts of intermediate_size beside a shared expert of the same size; the others are
// SwiGLU MLPs of intermediate_size_mlp.
void read_llama4_text(const Config& config, Spec& spec) {
  spec.family = Family::kDecoder;
  spec.vocab = config.positive("vocab_size", 202048);
  spec.hidden = config.positive("hidden_size", 5120);
  spec.layers = config.layers("num_hidden_layers", 48);
  spec.expert_intermediate = config.positive("intermediate_size", 8192);
  spec.intermediate = config.positive("intermediate_size_mlp", 16384);
  spec.max_positions = config.positive("max_position_embeddings", 131072);
  read_heads(config, spec, "num_attention_heads", 40, 8);
  spec.head_dim = config.positive("head_dim", 128);
  spec.activation = activation_of(config, "hidden_act", "silu");
  spec.qkv_bias = spec.out_bias = config.flag("attention_bias", false);
  spec.tied = config.flag("tie_word_embeddings", false);
  spec.experts = config.positive("num_local_experts", 16);
  spec.experts_per_token = config.positive("num_experts_per_tok", 1);
  check_experts_per_token(config, spec, "num_local_experts");
  spec.shared_expert_intermediate = spec.expert_intermediate;
  spec.moe_name = "feed_forward";
  spec.mlp_name = "feed_forward";
  const auto layers = static_cast<std::size_t>(spec.layers);

  spec.dense_layers.assign(layers, true);
  if (auto moe = config.find("moe_layers")) {
    for (std::size_t k = 0; k < moe->array_size(); ++k) {
      const JsonView entry = moe->at(k);
      const std::int64_t i = entry.as_integer();
      if (i < 0 || i >= spec.layers) {
        entry.fail(fmt::format("layer {} out of range: the model has {} (0 to {})", i, spec.layers,
                               spec.layers - 1));
      }
      spec.dense_layers[static_cast<std::size_t>(i)] = false;
    }
  } else {
    const std::int64_t step = config.positive("interleave_moe_layer_step", 1);
    for (std::int64_t i = step - 1; i < spec.layers; i += step) {
      spec.dense_layers[static_cast<std::size_t>(i)] = false;
    }
  }

  std::vector<bool> rope(layers);
  // An empty list means "not set" in transformers, as null does.
  if (auto list = config.find("no_rope_layers"); list && list->array_size() > 0) {
    rope = read_layer_flags(*list, spec.layers);
  } else {
    const std::int64_t interval = config.positive("no_rope_layer_interval", 4);
    for (std::size_t i = 0; i < layers; ++i) {
      rope[i] = (static_cast<std::int64_t>(i) + 1) % interval != 0;
    }
  }
  // attention_chunk_size null: no chunking.
  const std::optional<JsonView> chunk_key = config.root().find("attention_chunk_size");
  const std::int64_t chunk =
      chunk_key && chunk_key->is_null() ? 0 : config.positive("attention_chunk_size", 8192);
  spec.chunks.assign(layers, 0);
  if (auto types = config.find("layer_types")) {
    if (types->array_size() != layers) {
      types->fail(fmt::format("expected {} entries (num_hidden_layers), got {}", spec.layers,
                              types->array_size()));
    }
    for (std::size_t i = 0; i < layers; ++i) {
      const std::string kind = types->at(i).as_string();
      if (kind == "chunked_attention") {
        spec.chunks[i] = chunk;
      } else if (kind != "full_attention") {
        types->at(i).fail(
            fmt::format("unknown layer type \"{}\" (expected \"full_attention\" or "
                        "\"chunked_attention\")",
                        kind));
      }
    }
  } else {
    for (std::size_t i = 0; i < layers; ++i) {
      spec.chunks[i] = rope[i] ? chunk : 0;
    }
  }
  const bool qk_norm = config.flag("use_qk_norm", true);
  spec.l2_qk_norm.assign(layers, false);
  for (std::size_t i = 0; i < layers; ++i) {
    spec.l2_qk_norm[i] = qk_norm && rope[i];
  }
  spec.windows.assign(layers, 0);
}

// Llama 4's vision encoder (Llama4VisionConfig's defaults).
VisionSpec read_llama4_vision(const Config& config) {
  VisionSpec v;
  v.kind = VisionKind::kLlama4;
  v.hidden = config.positive("hidden_size", 768);
  v.intermediate = config.positive("intermediate_size", 5632);
  v.layers = config.layers("num_hidden_layers", 34);
  v.heads = config.positive("num_attention_heads", 16);
  v.channels = config.positive("num_channels", 3);
  v.image = config.positive("image_size", 448);
  v.patch = config.positive("patch_size", 14);
  v.activation = activation_of(config, "hidden_act", "gelu");
  v.adapter_hidden = config.positive("projector_input_dim", 4096);
  v.adapter_out = config.positive("projector_output_dim", 4096);
  v.projector_bias = config.flag("multi_modal_projector_bias", false);
  if (v.hidden % v.heads != 0) {
    config.fail("num_attention_heads",
                fmt::format("hidden_size {} is not divisible by num_attention_heads = {}", v.hidden,
                            v.heads));
  }
  if (v.image % v.patch != 0) {
    config.fail("patch_size",
                fmt::format("image_size {} is not a multiple of patch_size {}", v.image, v.patch));
  }
  // Pixel shuffle: the side x side patches regrouped to (side r)² tokens of hidden / r².
  const double ratio = config.find("pixel_shuffle_ratio")
                           ? config.find("pixel_shuffle_ratio")->as_positive_number()
                           : 0.5;
  const std::int64_t side = v.image / v.patch;
  const auto per_side = static_cast<std::int64_t>(std::llround(static_cast<double>(side) * ratio));
  const auto width =
      static_cast<std::int64_t>(std::llround(static_cast<double>(v.hidden) / (ratio * ratio)));
  if (std::abs(static_cast<double>(per_side) - static_cast<double>(side) * ratio) > 1e-9 ||
      std::abs(static_cast<double>(width) * ratio * ratio - static_cast<double>(v.hidden)) > 1e-6) {
    config.fail("pixel_shuffle_ratio",
                fmt::format("pixel_shuffle_ratio {} does not regroup {} x {} patches of {} "
                            "evenly",
                            ratio, side, side, v.hidden));
  }
  v.tokens = per_side * per_side;
  v.pooled = per_side;
  v.shuffled = width;
  // Llama4VisionMLP2 reads intermediate_size features and maps projector_output_dim to itself;
  // the projector reads vision_output_dim: transformers builds them so only when they agree.
  if (v.intermediate != width) {
    config.fail("intermediate_size",
                fmt::format("intermediate_size {} must equal hidden_size / pixel_shuffle_ratio² "
                            "= {}, the adapter's input",
                            v.intermediate, width));
  }
  if (v.adapter_hidden != v.adapter_out) {
    config.fail("projector_output_dim",
                fmt::format("projector_output_dim {} must equal projector_input_dim {} (the "
                            "adapter's second layer maps one to the other)",
                            v.adapter_out, v.adapter_hidden));
  }
  if (const std::int64_t output = config.positive("vision_output_dim", 7680);
      output != v.adapter_out) {
    config.fail("vision_output_dim",
                fmt::format("vision_output_dim {} must equal projector_output_dim {}, the "
                            "projector's input",
                            output, v.adapter_out));
  }
  return v;
}

// Llama 4 multimodal (Llama4ForConditionalGeneration): the llama4_text decoder of text_config
// and the image encoder of vision_config.
void read_llama4(const Config& config, Spec& spec) {
  for (std::string_view key : {"text_config", "vision_config"}) {
    if (!config.find(key)) {
      config.fail(key, fmt::format("missing required key \"{}\" (model_type \"llama4\")", key));
    }
  }
  const JsonView text = *config.find("text_config");
  text.expect_object();
  read_llama4_text(Config(text), spec);
  const JsonView vision = *config.find("vision_config");
  vision.expect_object();
  spec.vision = read_llama4_vision(Config(vision));
}

void read_phi3(const Config& config, Spec& spec) {
  read_decoder(config,
               spec);  // Fused qkv_proj and gate_up_proj: the same counts.
  spec.tied = config.flag("tie_word_embeddings", false);
  read_windows(config, spec, true);
}

void read_gpt2(const Config& config, Spec& spec) {
  spec.family = Family::kGpt2;
  spec.vocab = config.required("vocab_size");
  spec.hidden = config.required("n_embd");
  spec.layers = config.layers("n_layer");
  spec.max_positions = config.required("n_positions");
  read_heads(config, spec, "n_head");
  spec.intermediate = config.positive("n_inner", 4 * spec.hidden);
  spec.activation = activation_of(config, "activation_function", "gelu_new");
  spec.qkv_bias = spec.out_bias = spec.mlp_bias = true;
  spec.tied = config.flag("tie_word_embeddings", true);
  spec.windows.assign(static_cast<std::size_t>(spec.layers), 0);
}

void read_gpt_neox(const Config& config, Spec& spec) {
  spec.family = Family::kNeox;
  spec.vocab = config.required("vocab_size");
  spec.hidden = config.required("hidden_size");
  spec.layers = config.layers("num_hidden_layers");
  spec.intermediate = config.required("intermediate_size");
  spec.max_positions = config.required("max_position_embeddings");
  read_heads(config, spec, "num_attention_heads");
  spec.activation = activation_of(config, "hidden_act", "gelu");
  spec.qkv_bias = spec.out_bias = config.flag("attention_bias", true);
  spec.mlp_bias = true;
  spec.parallel_residual = config.flag("use_parallel_residual", true);
  spec.tied = config.flag("tie_word_embeddings", false);
  spec.windows.assign(static_cast<std::size_t>(spec.layers), 0);
}

void read_bert(const Config& config, Spec& spec) {
  spec.family = Family::kBert;
  spec.vocab = config.required("vocab_size");
  spec.hidden = config.required("hidden_size");
  spec.layers = config.layers("num_hidden_layers");
  spec.intermediate = config.required("intermediate_size");
  spec.max_positions = config.required("max_position_embeddings");
  read_heads(config, spec, "num_attention_heads");
  spec.activation = activation_of(config, "hidden_act", "gelu");
  spec.type_vocab = config.positive("type_vocab_size", 2);
  if (auto kind = config.text("position_embedding_type"); kind && *kind != "absolute") {
    config.fail(
        "position_embedding_type",
        fmt::format("unsupported position_embedding_type \"{}\"; only \"absolute\"", *kind));
  }
  spec.qkv_bias = spec.out_bias = spec.mlp_bias = true;
  spec.windows.assign(static_cast<std::size_t>(spec.layers), 0);
}

struct ModelType {
  std::string_view name;
  std::string_view class_prefix;  // transformers' class names:
                                  // <prefix>ForCausalLM, <prefix>Model.
  void (*read)(const Config&, Spec&);
};

// Sorted by name.
constexpr std::array kModelTypes = {
    ModelType{"bert", "Bert", read_bert},
    ModelType{"deepseek_v2", "DeepseekV2", read_deepseek},
    ModelType{"deepseek_v3", "DeepseekV3", read_deepseek},
    ModelType{"gemma", "Gemma", read_gemma},
    ModelType{"gemma2", "Gemma2", read_gemma2},
    ModelType{"gemma3", "Gemma3ForConditionalGeneration", read_gemma3},
    ModelType{"gemma3_text", "Gemma3", read_gemma3_text},
    ModelType{"gpt2", "GPT2", read_gpt2},
    ModelType{"gpt_neox", "GPTNeoX", read_gpt_neox},
    ModelType{"gpt_oss", "GptOss", read_gpt_oss},
    ModelType{"llama", "Llama", read_llama},
    ModelType{"llama4", "Llama4ForConditionalGeneration", read_llama4},
    ModelType{"llama4_text", "Llama4", read_llama4_text},
    ModelType{"mistral", "Mistral", read_mistral},
    ModelType{"mixtral", "Mixtral", read_mixtral},
    ModelType{"phi3", "Phi3", read_phi3},
    ModelType{"qwen2", "Qwen2", read_qwen2},
    ModelType{"qwen2_moe", "Qwen2Moe", read_qwen2_moe},
    ModelType{"qwen3", "Qwen3", read_qwen3},
    ModelType{"qwen3_moe", "Qwen3Moe", read_qwen3_moe},
};

const ModelType* find_type(std::string_view name) {
  for (const ModelType& type : kModelTypes) {
    if (type.name == name) return &type;
  }
  return nullptr;
}

// "LlamaForCausalLM" -> llama. The prefix must be followed by "For", "Model" or
// "LMHeadModel", so that "Qwen2MoeForCausalLM" is not taken for qwen2.
const ModelType* type_of_class(std::string_view name) {
  for (const ModelType& type : kModelTypes) {
    if (name.substr(0, type.class_prefix.size()) != type.class_prefix) continue;
    const std::string_view rest = name.substr(type.class_prefix.size());
    if (rest.empty() || rest.substr(0, 3) == "For" || rest == "Model" || rest == "LMHeadModel") {
      return &type;  // Empty: the class itself (Gemma3ForConditionalGeneration).
    }
  }
  return nullptr;
}

std::string supported_list() {
  std::vector<std::string_view> names = hf_model_types();
  return fmt::format("{}", fmt::join(names, ", "));
}

const ModelType& model_type_of(const Config& config) {
  if (auto model_type = config.find("model_type")) {
    const std::string name = model_type->as_string();
    if (const ModelType* type = find_type(name)) return *type;
    // A model of its own name on a known architecture (Kimi K2's "kimi_k2" is a
    // DeepseekV3ForCausalLM): the architecture class says how transformers builds it.
    if (auto classes = config.find("architectures"); classes && classes->array_size() > 0) {
      if (const ModelType* type = type_of_class(classes->at(0).as_string())) return *type;
    }
    model_type->fail(with_suggestion(
        fmt::format("unsupported model_type \"{}\" (supported: {})", name, supported_list()), name,
        hf_model_types()));
  }
  const JsonView classes = config.root().at("architectures");
  if (classes.array_size() == 0) classes.fail("expected at least one architecture class name");
  const std::string name = classes.at(0).as_string();
  if (const ModelType* type = type_of_class(name)) return *type;
  classes.at(0).fail(
      fmt::format("unsupported architecture \"{}\" and no model_type (supported "
                  "model_type values: {})",
                  name, supported_list()));
}

// ---------------------------------------------------------------------------------------------
// Emitting the native document. Layer names follow transformers' state_dict
// names (as the hand-written models in data/models do), so `capcalc layers`
// reads like the checkpoint.

Json layer(std::string_view name, std::string_view op) {
  return Json{{"name", std::string(name)}, {"op", std::string(op)}};
}

Json with_input(Json entry, std::string_view input) {
  entry["input"] = input;
  return entry;
}

Json with_inputs(Json entry, std::vector<std::string> inputs) {
  entry["inputs"] = std::move(inputs);
  return entry;
}

Json linear(std::string_view name, std::int64_t out, bool bias) {
  Json entry = layer(name, "linear");
  entry["out_features"] = out;
  entry["bias"] = bias;
  return entry;
}

bool has_chunks(const Spec& spec) {
  return std::any_of(spec.chunks.begin(), spec.chunks.end(), [](std::int64_t c) { return c > 0; });
}

Json attention(std::string_view name, const Spec& spec, bool causal, bool l2_qk_norm = false,
               bool rotary = false) {
  Json entry = layer(name, "attention");
  entry["heads"] = spec.heads;
  entry["kv_heads"] = spec.kv_heads;
  entry["head_dim"] = spec.head_dim;
  entry["causal"] = causal;
  if (causal) entry["window"] = "window";
  if (causal && has_chunks(spec)) entry["chunk"] = "chunk";
  if (spec.qk_norm) entry["qk_norm"] = true;
  if (l2_qk_norm) {
    entry["qk_norm"] = true;
    entry["qk_norm_affine"] = false;
  }
  if (spec.attention_sinks) entry["sinks"] = true;
  if (rotary) entry["rotary"] = true;
  if (spec.qkv_bias == spec.out_bias) {
    entry["bias"] = spec.qkv_bias;
  } else {
    entry["qkv_bias"] = spec.qkv_bias;
    entry["out_bias"] = spec.out_bias;
  }
  return entry;
}

Json embedding(std::string_view name, std::int64_t rows, std::int64_t dim) {
  Json entry = layer(name, "embedding");
  entry["num_embeddings"] = rows;
  entry["embedding_dim"] = dim;
  return entry;
}

Json lm_head(std::string_view name, const Spec& spec, std::string_view embedding_name) {
  Json entry = linear(name, spec.vocab, false);
  if (spec.tied) entry["tied_to"] = embedding_name;
  return entry;
}

bool l2_qk_norm_at(const Spec& spec, std::size_t i) {
  return i < spec.l2_qk_norm.size() && spec.l2_qk_norm[i];
}

// A decoder layer's block: "decoder_layer", "dense_" before it for a MoE model's dense
// layers, "_qk_norm" after it for Llama 4's L2-normalised layers.
std::string block_name(std::string_view block, bool dense, bool l2_qk_norm) {
  return fmt::format("{}{}{}", dense ? "dense_" : "", block, l2_qk_norm ? "_qk_norm" : "");
}

// The decoder layers as block calls: one repeated call when every layer has the
// same window, chunk and block, else one call per layer ("layers.0", "layers.1", ...)
// with its own (block_name's).
void add_layer_calls(Json& layers, std::string_view name, std::string_view block,
                     const Spec& spec) {
  const auto kind = [&](std::size_t i) {
    const bool dense = i < spec.dense_layers.size() && spec.dense_layers[i];
    const std::int64_t chunk = i < spec.chunks.size() ? spec.chunks[i] : 0;
    return std::tuple(spec.windows[i], chunk, block_name(block, dense, l2_qk_norm_at(spec, i)));
  };
  const auto args = [&](std::size_t i) {
    Json values = Json::object();
    if (spec.windows[i] > 0) values["window"] = spec.windows[i];
    if (i < spec.chunks.size() && spec.chunks[i] > 0) values["chunk"] = spec.chunks[i];
    return values;
  };
  bool uniform = true;
  for (std::size_t i = 1; i < spec.windows.size(); ++i)
    uniform = uniform && kind(i) == kind(0);
  if (uniform) {
    Json call{{"name", name}, {"block", std::get<2>(kind(0))}, {"repeat", spec.layers}};
    if (Json values = args(0); !values.empty()) call["args"] = std::move(values);
    layers.push_back(std::move(call));
    return;
  }
  for (std::size_t i = 0; i < spec.windows.size(); ++i) {
    Json call{{"name", fmt::format("{}.{}", name, i)}, {"block", std::get<2>(kind(i))}};
    if (Json values = args(i); !values.empty()) call["args"] = std::move(values);
    layers.push_back(std::move(call));
  }
}

Json mla_attention(std::string_view name, const Spec& spec) {
  Json entry = layer(name, "mla_attention");
  entry["heads"] = spec.heads;
  if (spec.q_lora_rank > 0) entry["q_lora_rank"] = spec.q_lora_rank;
  entry["kv_lora_rank"] = spec.kv_lora_rank;
  entry["qk_nope_head_dim"] = spec.qk_nope_head_dim;
  entry["qk_rope_head_dim"] = spec.qk_rope_head_dim;
  entry["v_head_dim"] = spec.v_head_dim;
  entry["causal"] = true;
  entry["window"] = "window";
  return entry;
}

// One decoder layer; `sparse` false gives the dense MLP of a MoE model's leading layers,
// `l2_qk_norm` Llama 4's normalised queries and keys.
Json decoder_block(const Spec& spec, bool sparse = true, bool l2_qk_norm = false) {
  Json body = Json::array();
  body.push_back(layer("input_layernorm", "rmsnorm"));
  body.push_back(spec.kv_lora_rank > 0 ? mla_attention("self_attn", spec)
                                       : attention("self_attn", spec, true, l2_qk_norm, true));
  // Gemma 2 and 3 normalise the attention's and the MLP's outputs too ("sandwich" norms):
  // post_attention_layernorm is then the attention's output norm, pre_feedforward_layernorm
  // the MLP's input norm.
  std::string attn_out = "self_attn";
  if (spec.sandwich_norms) {
    body.push_back(layer("post_attention_layernorm", "rmsnorm"));
    attn_out = "post_attention_layernorm";
  }
  body.push_back(with_inputs(layer("attn_add", "add"), {attn_out, "x"}));
  const std::string mlp_norm =
      spec.sandwich_norms ? "pre_feedforward_layernorm" : "post_attention_layernorm";
  body.push_back(layer(mlp_norm, "rmsnorm"));
  const std::string mlp = spec.mlp_name + ".";
  std::string mlp_out = mlp + "down_proj";
  if (spec.experts > 0 && sparse) {
    // MixtralSparseMoeBlock (Qwen3MoeSparseMoeBlock): router "gate" and SwiGLU experts w1 (gate),
    // w3 (up), w2 (down); DeepseekV3MoE adds shared_experts, one SwiGLU MLP.
    Json moe = layer(spec.moe_name, "moe");
    moe["experts"] = spec.experts;
    moe["experts_per_token"] = spec.experts_per_token;
    moe["hidden"] = spec.expert_intermediate;
    moe["kind"] = "swiglu";
    if (spec.shared_expert_intermediate > 0) moe["shared_hidden"] = spec.shared_expert_intermediate;
    if (spec.router_bias) moe["router_bias"] = true;
    if (spec.expert_bias) moe["expert_bias"] = true;
    if (spec.shared_expert_gate) moe["shared_gate"] = true;
    body.push_back(std::move(moe));
    mlp_out = spec.moe_name;
  } else {
    // down(act(gate(x)) * up(x)): SwiGLU (silu) or GeGLU (gelu).
    body.push_back(linear(mlp + "gate_proj", spec.intermediate, spec.mlp_bias));
    body.push_back(layer(mlp + "act", spec.activation));
    body.push_back(with_input(linear(mlp + "up_proj", spec.intermediate, spec.mlp_bias), mlp_norm));
    body.push_back(with_inputs(layer(mlp + "gated", "mul"), {mlp + "act", mlp + "up_proj"}));
    body.push_back(linear(mlp + "down_proj", spec.hidden, spec.mlp_bias));
  }
  if (spec.sandwich_norms) {
    body.push_back(with_input(layer("post_feedforward_layernorm", "rmsnorm"), mlp_out));
    mlp_out = "post_feedforward_layernorm";
  }
  body.push_back(with_inputs(layer("mlp_add", "add"), {mlp_out, "attn_add"}));
  Json args{{"window", 0}};
  if (has_chunks(spec)) args["chunk"] = 0;
  return Json{{"args", std::move(args)}, {"layers", std::move(body)}};
}

void emit_decoder(const Spec& spec, Json& model) {
  // The blocks the layers use: sparse or dense, with or without L2-normalised queries and keys.
  model["blocks"] = Json::object();
  for (std::size_t i = 0; i < static_cast<std::size_t>(spec.layers); ++i) {
    const bool dense = i < spec.dense_layers.size() && spec.dense_layers[i];
    const bool l2 = l2_qk_norm_at(spec, i);
    const std::string name = block_name("decoder_layer", dense, l2);
    if (!model["blocks"].contains(name)) model["blocks"][name] = decoder_block(spec, !dense, l2);
  }
  Json layers = Json::array();
  layers.push_back(embedding("embed_tokens", spec.vocab, spec.hidden));
  add_layer_calls(layers, "layers", "decoder_layer", spec);
  layers.push_back(layer("norm", "rmsnorm"));
  layers.push_back(lm_head("lm_head", spec, "embed_tokens"));
  model["layers"] = std::move(layers);
}

void emit_gpt2(const Spec& spec, Json& model) {
  Json body = Json::array();
  body.push_back(layer("ln_1", "layernorm"));
  body.push_back(attention("attn", spec, true));
  body.push_back(with_inputs(layer("attn_add", "add"), {"attn", "x"}));
  body.push_back(layer("ln_2", "layernorm"));
  body.push_back(linear("mlp.c_fc", spec.intermediate, true));
  body.push_back(layer("mlp.act", spec.activation));
  body.push_back(linear("mlp.c_proj", spec.hidden, true));
  body.push_back(with_inputs(layer("mlp_add", "add"), {"mlp.c_proj", "attn_add"}));
  model["blocks"] = Json{{"block", {{"args", {{"window", 0}}}, {"layers", std::move(body)}}}};
  Json layers = Json::array();
  layers.push_back(embedding("wte", spec.vocab, spec.hidden));
  Json positions = layer("wpe", "position_embedding");
  positions["positions"] = spec.max_positions;
  layers.push_back(std::move(positions));
  add_layer_calls(layers, "h", "block", spec);
  layers.push_back(layer("ln_f", "layernorm"));
  layers.push_back(lm_head("lm_head", spec, "wte"));
  model["layers"] = std::move(layers);
}

void emit_neox(const Spec& spec, Json& model) {
  // GPTNeoXLayer: x + attn(ln1(x)) + mlp(ln2(x)) with use_parallel_residual,
  // else sequential.
  Json body = Json::array();
  body.push_back(layer("input_layernorm", "layernorm"));
  body.push_back(attention("attention", spec, true, false, true));
  std::string mlp_input = "x";
  if (!spec.parallel_residual) {
    body.push_back(with_inputs(layer("attn_add", "add"), {"attention", "x"}));
    mlp_input = "attn_add";
  }
  body.push_back(with_input(layer("post_attention_layernorm", "layernorm"), mlp_input));
  body.push_back(linear("mlp.dense_h_to_4h", spec.intermediate, true));
  body.push_back(layer("mlp.act", spec.activation));
  body.push_back(linear("mlp.dense_4h_to_h", spec.hidden, true));
  if (spec.parallel_residual) {
    body.push_back(with_inputs(layer("residual", "add"), {"attention", "mlp.dense_4h_to_h", "x"}));
  } else {
    body.push_back(with_inputs(layer("mlp_add", "add"), {"mlp.dense_4h_to_h", "attn_add"}));
  }
  model["blocks"] =
      Json{{"gpt_neox_layer", {{"args", {{"window", 0}}}, {"layers", std::move(body)}}}};
  Json layers = Json::array();
  layers.push_back(embedding("embed_in", spec.vocab, spec.hidden));
  add_layer_calls(layers, "layers", "gpt_neox_layer", spec);
  layers.push_back(layer("final_layer_norm", "layernorm"));
  layers.push_back(lm_head("embed_out", spec, "embed_in"));
  model["layers"] = std::move(layers);
}

void emit_bert(const Spec& spec, Json& model) {
  Json body = Json::array();
  body.push_back(attention("attention", spec, false));
  body.push_back(with_inputs(layer("attention_add", "add"), {"attention", "x"}));
  body.push_back(layer("attention_layernorm", "layernorm"));
  body.push_back(linear("intermediate", spec.intermediate, true));
  body.push_back(layer("act", spec.activation));
  body.push_back(linear("output", spec.hidden, true));
  body.push_back(with_inputs(layer("output_add", "add"), {"output", "attention_layernorm"}));
  body.push_back(layer("output_layernorm", "layernorm"));
  model["blocks"] = Json{{"encoder_layer", {{"layers", std::move(body)}}}};
  model["inputs"].push_back(Json{{"name", "token_type_ids"}, {"shape", {"batch", "seq"}}});
  Json layers = Json::array();
  layers.push_back(
      with_input(embedding("embeddings.word_embeddings", spec.vocab, spec.hidden), "input_ids"));
  Json positions = layer("embeddings.position_embeddings", "position_embedding");
  positions["positions"] = spec.max_positions;
  layers.push_back(std::move(positions));
  layers.push_back(
      with_input(embedding("embeddings.token_type_embeddings", spec.type_vocab, spec.hidden),
                 "token_type_ids"));
  layers.push_back(
      with_inputs(layer("embeddings.add", "add"),
                  {"embeddings.position_embeddings", "embeddings.token_type_embeddings"}));
  layers.push_back(layer("embeddings.layernorm", "layernorm"));
  layers.push_back(
      Json{{"name", "encoder.layer"}, {"block", "encoder_layer"}, {"repeat", spec.layers}});
  Json first = layer("pooler.first_token", "select");
  first["axis"] = 1;
  first["index"] = 0;
  layers.push_back(std::move(first));
  layers.push_back(linear("pooler.dense", spec.hidden, true));
  layers.push_back(layer("pooler.tanh", "tanh"));
  model["layers"] = std::move(layers);
  model["outputs"] = {fmt::format("encoder.layer.{}", spec.layers - 1), "pooler.tanh"};
}

// A pre-LN vision encoder layer (SigLIP's, Llama 4's): LayerNorm, attention with biases,
// residual, LayerNorm, MLP fc1 / activation / fc2 with biases, residual.
Json vision_encoder_block(const VisionSpec& v, std::string_view norm1, std::string_view norm2) {
  Json body = Json::array();
  body.push_back(layer(norm1, "layernorm"));
  Json attention = layer("self_attn", "attention");
  attention["heads"] = v.heads;
  attention["causal"] = false;
  attention["bias"] = true;
  body.push_back(std::move(attention));
  body.push_back(with_inputs(layer("attn_add", "add"), {"self_attn", "x"}));
  body.push_back(layer(norm2, "layernorm"));
  body.push_back(linear("mlp.fc1", v.intermediate, true));
  body.push_back(layer("mlp.act", v.activation));
  body.push_back(linear("mlp.fc2", v.hidden, true));
  body.push_back(with_inputs(layer("mlp_add", "add"), {"mlp.fc2", "attn_add"}));
  return Json{{"layers", std::move(body)}};
}

// The image encoder comes after the decoder: its own input (`images` images of the batch,
// read at prefill only, optional: a text-only prompt has none) and its own output, the image
// tokens in the decoder's width. Gemma 3 and Llama 4 scatter them into the embedded sequence at
// its image-token positions, which `seq` counts.
void add_image_input(const VisionSpec& v, Json& model) {
  model["dims"]["images"] = 1;
  model["inputs"].push_back(Json{{"name", "pixel_values"},
                                 {"shape", {"batch * images", v.channels, v.image, v.image}},
                                 {"prefill_only", true},
                                 {"optional", true}});
}

// Llama4VisionModel and Llama4MultiModalProjector: per 336 x 336 tile, the patches (a linear
// map of each unfolded patch, a conv without bias), a class token, learned positions,
// layernorm_pre, the encoder, layernorm_post; the class token dropped, the patches
// pixel-shuffled, the adapter's fc1 / GELU / fc2 / GELU without biases, and linear_1 to the
// decoder's width.
void emit_llama4_vision(const Spec& spec, Json& model) {
  const VisionSpec& v = *spec.vision;
  const std::int64_t side = v.image / v.patch;
  add_image_input(v, model);
  model["blocks"]["vision_encoder_layer"] =
      vision_encoder_block(v, "input_layernorm", "post_attention_layernorm");
  const std::string tower = "vision_model.";
  Json& layers = model["layers"];
  Json patches = with_input(layer(tower + "patch_embedding", "conv2d"), "pixel_values");
  patches["in_channels"] = v.channels;
  patches["out_channels"] = v.hidden;
  patches["kernel"] = v.patch;
  patches["stride"] = v.patch;
  patches["bias"] = false;
  layers.push_back(std::move(patches));
  Json flat = layer(tower + "patch_embedding.flatten", "flatten");
  flat["start_dim"] = 2;
  layers.push_back(std::move(flat));  // [images, hidden, side²]
  Json to_tokens = layer(tower + "patch_embedding.transpose", "transpose");
  to_tokens["dim0"] = 1;
  to_tokens["dim1"] = 2;
  layers.push_back(std::move(to_tokens));  // [images, side², hidden]
  Json cls = layer(tower + "class_embedding", "class_token");
  cls["tokens"] = 1;
  layers.push_back(std::move(cls));
  Json positions = layer(tower + "positional_embedding_vlm", "position_embedding");
  positions["positions"] = side * side + 1;
  layers.push_back(std::move(positions));
  layers.push_back(layer(tower + "layernorm_pre", "layernorm"));
  layers.push_back(Json{
      {"name", tower + "model.layers"}, {"block", "vision_encoder_layer"}, {"repeat", v.layers}});
  layers.push_back(layer(tower + "layernorm_post", "layernorm"));
  Json patches_only = layer(tower + "drop_class_token", "slice");
  patches_only["axis"] = 1;
  patches_only["end"] = -1;
  layers.push_back(std::move(patches_only));
  const std::string adapter = tower + "vision_adapter.";
  Json shuffle = layer(adapter + "pixel_shuffle", "reshape");
  shuffle["shape"] = {-1, v.tokens, v.shuffled};
  layers.push_back(std::move(shuffle));
  layers.push_back(linear(adapter + "mlp.fc1", v.adapter_hidden, false));
  layers.push_back(layer(adapter + "mlp.act1", "gelu"));
  layers.push_back(linear(adapter + "mlp.fc2", v.adapter_out, false));
  layers.push_back(layer(adapter + "mlp.act2", "gelu"));
  layers.push_back(linear("multi_modal_projector.linear_1", spec.hidden, v.projector_bias));
  model["outputs"] = {"lm_head", "multi_modal_projector.linear_1"};
}

void emit_siglip_vision(const Spec& spec, Json& model) {
  const VisionSpec& v = *spec.vision;
  const std::int64_t side = v.image / v.patch;
  add_image_input(v, model);
  model["blocks"]["siglip_encoder_layer"] = vision_encoder_block(v, "layer_norm1", "layer_norm2");

  const std::string tower = "vision_tower.vision_model.";
  Json& layers = model["layers"];
  Json patches = with_input(layer(tower + "embeddings.patch_embedding", "conv2d"), "pixel_values");
  patches["in_channels"] = v.channels;
  patches["out_channels"] = v.hidden;
  patches["kernel"] = v.patch;
  patches["stride"] = v.patch;
  patches["bias"] = true;
  layers.push_back(std::move(patches));
  Json flat = layer(tower + "embeddings.flatten", "flatten");
  flat["start_dim"] = 2;
  layers.push_back(std::move(flat));  // [images, hidden, side²]
  Json to_tokens = layer(tower + "embeddings.transpose", "transpose");
  to_tokens["dim0"] = 1;
  to_tokens["dim1"] = 2;
  layers.push_back(to_tokens);  // [images, side², hidden]
  Json positions = layer(tower + "embeddings.position_embedding", "position_embedding");
  positions["positions"] = side * side;
  layers.push_back(std::move(positions));
  layers.push_back(Json{
      {"name", tower + "encoder.layers"}, {"block", "siglip_encoder_layer"}, {"repeat", v.layers}});
  layers.push_back(layer(tower + "post_layernorm", "layernorm"));
  // Gemma3MultiModalProjector: back to a side x side grid, average-pooled to pooled x pooled.
  const std::string projector = "multi_modal_projector.";
  Json to_channels = to_tokens;
  to_channels["name"] = projector + "transpose";
  layers.push_back(std::move(to_channels));
  Json grid = layer(projector + "grid", "reshape");
  grid["shape"] = {-1, v.hidden, side, side};
  layers.push_back(std::move(grid));
  Json pool = layer(projector + "avg_pool", "avgpool2d");
  pool["kernel"] = side / v.pooled;
  layers.push_back(std::move(pool));
  Json pooled_flat = layer(projector + "flatten", "flatten");
  pooled_flat["start_dim"] = 2;
  layers.push_back(std::move(pooled_flat));
  Json back = to_tokens;
  back["name"] = projector + "tokens";
  layers.push_back(std::move(back));  // [images, tokens, hidden]
  layers.push_back(layer(projector + "mm_soft_emb_norm", "rmsnorm"));
  layers.push_back(linear(projector + "mm_input_projection", spec.hidden, false));
  model["outputs"] = {"lm_head", projector + "mm_input_projection"};
}

std::string describe(const Spec& spec) {
  const std::string heads =
      spec.kv_lora_rank > 0
          ? fmt::format(
                "{} heads of latent attention (q_lora_rank {}, kv_lora_rank {}, qk {} + "
                "{} rope, v {})",
                spec.heads, spec.q_lora_rank, spec.kv_lora_rank, spec.qk_nope_head_dim,
                spec.qk_rope_head_dim, spec.v_head_dim)
          : fmt::format("{} heads ({} key/value heads, head_dim {})", spec.heads, spec.kv_heads,
                        spec.head_dim);
  std::string text = fmt::format(
      "Translated from a Hugging Face config.json (model_type \"{}\"): {} "
      "layers, hidden {}, {}, {} {}, vocab {}",
      spec.model_type, spec.layers, spec.hidden, heads,
      spec.experts > 0
          ? fmt::format("{} experts (top {}) of intermediate", spec.experts, spec.experts_per_token)
          : std::string("intermediate"),
      spec.experts > 0 ? spec.expert_intermediate : spec.intermediate, spec.vocab);
  if (spec.shared_expert_intermediate > 0) {
    text += fmt::format(", shared experts of {}", spec.shared_expert_intermediate);
  }
  if (const auto dense = std::count(spec.dense_layers.begin(), spec.dense_layers.end(), true);
      dense > 0) {
    text += fmt::format(", {} layers dense of intermediate {}", dense, spec.intermediate);
  }
  switch (spec.family) {
    case Family::kDecoder:
    case Family::kNeox:
      text += fmt::format(
          ", rotary positions (no parameters; their elementwise FLOPs are not "
          "counted), {} LM head",
          spec.tied ? "tied" : "untied");
      break;
    case Family::kGpt2:
      text += fmt::format(", {} learned positions, {} LM head", spec.max_positions,
                          spec.tied ? "tied" : "untied");
      break;
    case Family::kBert:
      text += fmt::format(", {} learned positions, BertModel with pooler (no pre-training heads)",
                          spec.max_positions);
      break;
  }
  if (const auto chunked = std::count_if(spec.chunks.begin(), spec.chunks.end(),
                                         [](std::int64_t c) { return c > 0; });
      chunked > 0) {
    text += fmt::format(
        ", {} layers attending in chunks of {} (their cache keeps one chunk), {} over the whole "
        "context",
        chunked, *std::max_element(spec.chunks.begin(), spec.chunks.end()), spec.layers - chunked);
  }
  if (const auto normed = std::count(spec.l2_qk_norm.begin(), spec.l2_qk_norm.end(), true);
      normed > 0) {
    text += fmt::format(", queries and keys L2-normalised (no parameters) in {} layers", normed);
  }
  if (spec.vision && spec.vision->kind == VisionKind::kLlama4) {
    const VisionSpec& v = *spec.vision;
    text += fmt::format(
        "; with Llama 4's vision encoder ({} layers, hidden {}, {} heads, intermediate {}; "
        "{}x{} tiles in {}x{} patches and a class token) whose patches are pixel-shuffled to {} "
        "tokens of {} per tile, passed through a {} -> {} GELU adapter and projected to the "
        "decoder's width (tiles: dimension \"images\", one per sequence by default, run at "
        "prefill only; their tokens are part of \"seq\"). Llama 4's attention temperature on the "
        "NoPE layers is elementwise and not counted",
        v.layers, v.hidden, v.heads, v.intermediate, v.image, v.image, v.patch, v.patch, v.tokens,
        v.shuffled, v.adapter_hidden, v.adapter_out);
  } else if (spec.vision) {
    const VisionSpec& v = *spec.vision;
    text += fmt::format(
        "; with a SigLIP vision tower ({} layers, hidden {}, {} heads, intermediate {}; {}x{} "
        "images in {}x{} patches) whose patches are average-pooled to {} tokens per image and "
        "projected to the decoder's width (images: dimension \"images\", one per sequence by "
        "default, run at prefill only; their tokens are part of \"seq\")",
        v.layers, v.hidden, v.heads, v.intermediate, v.image, v.image, v.patch, v.patch, v.tokens);
  }
  if (spec.model_type.rfind("gemma", 0) == 0) {
    text +=
        "; the embedding's scaling by sqrt(hidden) is elementwise and not "
        "counted";
  }
  return text + ".";
}

}  // namespace

bool is_hf_config(const nlohmann::json& document) {
  if (!document.is_object()) return false;
  if (!document.contains("model_type") && !document.contains("architectures")) return false;
  const auto format = document.find("format");
  return format == document.end() || !format->is_string() ||
         format->get<std::string>() != kNativeFormat;
}

std::vector<std::string_view> hf_model_types() {
  std::vector<std::string_view> names;
  names.reserve(kModelTypes.size());
  for (const ModelType& type : kModelTypes)
    names.push_back(type.name);
  return names;
}

// "layer_types" names one kind per decoder layer. The families that read it check it as they
// read it; for the rest it must still be well formed, or a typo passes silently.
void check_layer_types(const Config& config, const Spec& spec) {
  const std::optional<JsonView> types = config.find("layer_types");
  if (!types) return;
  if (types->array_size() != static_cast<std::size_t>(spec.layers)) {
    types->fail(fmt::format("expected {} entries (num_hidden_layers), got {}", spec.layers,
                            types->array_size()));
  }
  const std::vector<std::string_view> known = {"full_attention", "sliding_attention",
                                               "chunked_attention"};
  for (std::size_t i = 0; i < types->array_size(); ++i) {
    const std::string kind = types->at(i).as_string();
    if (std::find(known.begin(), known.end(), kind) == known.end()) {
      types->at(i).fail(
          with_suggestion(fmt::format("unknown layer type \"{}\"", kind), kind, known));
    }
  }
}

nlohmann::json hf_config_to_model(const nlohmann::json& config, const std::string& file) {
  Config reader(config, file);
  reader.root().expect_object();
  const ModelType& type = model_type_of(reader);
  reader.set_model_type(std::string(type.name));
  Spec spec;
  spec.model_type = std::string(type.name);
  type.read(reader, spec);
  check_layer_types(reader, spec);

  Json model;
  model["format"] = kNativeFormat;
  // The file's stem ("llama2_7b_hf"): configs rarely carry their own name.
  const std::string name = std::filesystem::path(file).stem().string();
  model["name"] = name.empty() ? spec.model_type : name;
  model["description"] = describe(spec);
  model["source"] = fmt::format(
      "{}: a Hugging Face config.json, as transformers builds it "
      "(model_type \"{}\")",
      file, spec.model_type);
  model["dims"] = Json{{"batch", 1}, {"seq", std::min(spec.max_positions, kDefaultSeqCap)}};
  model["inputs"] = Json::array({Json{{"name", "input_ids"}, {"shape", {"batch", "seq"}}}});
  switch (spec.family) {
    case Family::kDecoder:
      emit_decoder(spec, model);
      break;
    case Family::kGpt2:
      emit_gpt2(spec, model);
      break;
    case Family::kNeox:
      emit_neox(spec, model);
      break;
    case Family::kBert:
      emit_bert(spec, model);
      break;
  }
  if (spec.vision) {
    if (spec.vision->kind == VisionKind::kLlama4) {
      emit_llama4_vision(spec, model);
    } else {
      emit_siglip_vision(spec, model);
    }
  }
  return model;
}

}  // namespace capcalc
