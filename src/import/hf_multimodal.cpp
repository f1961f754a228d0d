// Gemma 3 and Llama 4: text decoders whose attention varies by layer (sliding, chunked,
// NoPE) and, in their multimodal configs, the image encoder beside them.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "import/hf_architectures.hpp"

namespace capcalc::hf {
namespace {

// A multimodal config's text_config and vision_config: both required, both objects.
void require_parts(const Config& config, std::string_view model_type) {
  for (std::string_view key : {"text_config", "vision_config"}) {
    if (!config.find(key)) {
      config.fail(key,
                  fmt::format("missing required key \"{}\" (model_type \"{}\")", key, model_type));
    }
  }
}

Config part(const Config& config, std::string_view key) {
  const JsonView value = *config.find(key);
  value.expect_object();
  return Config(value);
}

// SigLIP's vision tower (SiglipVisionConfig's defaults) and Gemma 3's projector.
VisionSpec read_siglip_vision(const Config& config, std::int64_t tokens) {
  VisionSpec v = read_vision_tower(config, {768, 3072, 12, 12, 224, 16, "gelu_pytorch_tanh"});
  v.tokens = tokens;
  if (config.flag("vision_use_head", true)) {
    config.fail("vision_use_head",
                "a vision tower with its attention-pooling head (vision_use_head) is not "
                "supported; Gemma 3's configs set it to false");
  }
  return v;
}

// The layers moe_layers lists (by default every interleave_moe_layer_step-th) route to experts;
// the others have the dense MLP.
void read_llama4_moe_layers(const Config& config, Spec& spec) {
  const auto layers = static_cast<std::size_t>(spec.layers);
  spec.per_layer.dense_mlp.assign(layers, true);
  if (auto moe = config.find("moe_layers")) {
    for (std::size_t i : read_layer_indices(*moe, spec.layers))
      spec.per_layer.dense_mlp[i] = false;
  } else {
    const std::int64_t step = config.positive("interleave_moe_layer_step", 1);
    for (std::int64_t i = step - 1; i < spec.layers; i += step) {
      spec.per_layer.dense_mlp[static_cast<std::size_t>(i)] = false;
    }
  }
}

// The layers with RoPE attend in chunks (unless layer_types says otherwise) and L2-normalise
// queries and keys; the NoPE ones attend over everything.
void read_llama4_attention_pattern(const Config& config, Spec& spec) {
  const auto layers = static_cast<std::size_t>(spec.layers);
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
  spec.per_layer.chunks.assign(layers, 0);
  if (auto types = config.find("layer_types")) {
    const std::vector<bool> chunked = read_layer_kinds(*types, spec.layers, "chunked_attention");
    for (std::size_t i = 0; i < layers; ++i) {
      if (chunked[i]) spec.per_layer.chunks[i] = chunk;
    }
  } else {
    for (std::size_t i = 0; i < layers; ++i) {
      spec.per_layer.chunks[i] = rope[i] ? chunk : 0;
    }
  }
  const bool qk_norm = config.flag("use_qk_norm", true);
  spec.per_layer.l2_qk_norm.assign(layers, false);
  for (std::size_t i = 0; i < layers; ++i) {
    spec.per_layer.l2_qk_norm[i] = qk_norm && rope[i];
  }
  spec.per_layer.windows.assign(layers, 0);
}

// Llama 4's vision encoder (Llama4VisionConfig's defaults).
VisionSpec read_llama4_vision(const Config& config) {
  VisionSpec v = read_vision_tower(config, {768, 5632, 34, 16, 448, 14, "gelu"});
  v.kind = VisionKind::kLlama4;
  v.adapter_hidden = config.positive("projector_input_dim", 4096);
  v.adapter_out = config.positive("projector_output_dim", 4096);
  v.projector_bias = config.flag("multi_modal_projector_bias", false);
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

}  // namespace

// Gemma 3 (text): Gemma 2 with q_norm and k_norm; every sliding_window_pattern-th layer
// (default 6) is global, the rest slide. Missing keys take Gemma3TextConfig's defaults, as
// transformers does: the multimodal checkpoints' text_config names few of them.
void read_gemma3_text(const Config& config, Spec& spec) {
  spec.family = Family::kDecoder;
  spec.vocab = config.positive("vocab_size", 262208);
  spec.hidden = config.positive("hidden_size", 2304);
  spec.layers = config.layers("num_hidden_layers", 26);
  spec.mlp.intermediate = config.positive("intermediate_size", 9216);
  spec.max_positions = config.positive("max_position_embeddings", 131072);
  read_heads(config, spec, "num_attention_heads", 8, 4);
  spec.attention.head_dim = config.positive("head_dim", 256);
  spec.mlp.activation =
      activation_of(config, config.find("hidden_activation") ? "hidden_activation" : "hidden_act",
                    "gelu_pytorch_tanh");
  spec.attention.qkv_bias = spec.attention.out_bias = config.flag("attention_bias", false);
  spec.tied = config.flag("tie_word_embeddings", true);
  spec.sandwich_norms = true;
  spec.attention.qk_norm = true;
  spec.per_layer.windows.assign(static_cast<std::size_t>(spec.layers), 0);
  const std::int64_t pattern = config.positive("sliding_window_pattern", 6);
  read_windows_by_layer(config, spec, [pattern](std::int64_t i) { return (i + 1) % pattern != 0; });
}

// Gemma 3 multimodal (Gemma3ForConditionalGeneration): the gemma3_text decoder of text_config
// and a SigLIP image encoder of vision_config whose patches are average-pooled to
// mm_tokens_per_image tokens.
void read_gemma3(const Config& config, Spec& spec) {
  const std::int64_t tokens = config.positive("mm_tokens_per_image", 256);
  require_parts(config, "gemma3");
  read_gemma3_text(part(config, "text_config"), spec);
  spec.vision = read_siglip_vision(part(config, "vision_config"), tokens);
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
  spec.moe.expert_intermediate = config.positive("intermediate_size", 8192);
  spec.mlp.intermediate = config.positive("intermediate_size_mlp", 16384);
  spec.max_positions = config.positive("max_position_embeddings", 131072);
  read_heads(config, spec, "num_attention_heads", 40, 8);
  spec.attention.head_dim = config.positive("head_dim", 128);
  spec.mlp.activation = activation_of(config, "hidden_act", "silu");
  spec.attention.qkv_bias = spec.attention.out_bias = config.flag("attention_bias", false);
  spec.tied = config.flag("tie_word_embeddings", false);
  spec.moe.experts = config.positive("num_local_experts", 16);
  spec.moe.experts_per_token = config.positive("num_experts_per_tok", 1);
  check_experts_per_token(config, spec, "num_local_experts");
  spec.moe.shared_intermediate = spec.moe.expert_intermediate;
  spec.moe.name = "feed_forward";
  spec.mlp.name = "feed_forward";
  read_llama4_moe_layers(config, spec);
  read_llama4_attention_pattern(config, spec);
}

// Llama 4 multimodal (Llama4ForConditionalGeneration): the llama4_text decoder of text_config
// and the image encoder of vision_config.
void read_llama4(const Config& config, Spec& spec) {
  require_parts(config, "llama4");
  read_llama4_text(part(config, "text_config"), spec);
  spec.vision = read_llama4_vision(part(config, "vision_config"));
}

}  // namespace capcalc::hf
