#include <algorithm>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "import/hf_emit.hpp"

namespace capcalc::hf {
namespace {

// "32 heads (8 key/value heads, head_dim 128)", or latent attention's ranks.
std::string describe_attention(const Spec& spec) {
  return spec.latent.kv_lora_rank > 0
             ? fmt::format(
                   "{} heads of latent attention (q_lora_rank {}, kv_lora_rank {}, qk {} + "
                   "{} rope, v {})",
                   spec.attention.heads, spec.latent.q_lora_rank, spec.latent.kv_lora_rank,
                   spec.latent.qk_nope_head_dim, spec.latent.qk_rope_head_dim,
                   spec.latent.v_head_dim)
             : fmt::format("{} heads ({} key/value heads, head_dim {})", spec.attention.heads,
                           spec.attention.kv_heads, spec.attention.head_dim);
}

// ", shared experts of 2048, 3 layers dense of intermediate 18432".
std::string describe_moe_layers(const Spec& spec) {
  std::string text;
  if (spec.moe.shared_intermediate > 0) {
    text += fmt::format(", shared experts of {}", spec.moe.shared_intermediate);
  }
  if (const auto dense =
          std::count(spec.per_layer.dense_mlp.begin(), spec.per_layer.dense_mlp.end(), true);
      dense > 0) {
    text += fmt::format(", {} layers dense of intermediate {}", dense, spec.mlp.intermediate);
  }
  return text;
}

// How positions are encoded, and the LM head or pooler.
std::string describe_positions(const Spec& spec) {
  std::string text;
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
  return text;
}

// Llama 4's per-layer attention: chunks and L2-normalised queries and keys.
std::string describe_layer_pattern(const Spec& spec) {
  std::string text;
  if (const auto chunked = std::count_if(spec.per_layer.chunks.begin(), spec.per_layer.chunks.end(),
                                         [](std::int64_t c) { return c > 0; });
      chunked > 0) {
    text += fmt::format(
        ", {} layers attending in chunks of {} (their cache keeps one chunk), {} over the whole "
        "context",
        chunked, *std::max_element(spec.per_layer.chunks.begin(), spec.per_layer.chunks.end()),
        spec.layers - chunked);
  }
  if (const auto normed =
          std::count(spec.per_layer.l2_qk_norm.begin(), spec.per_layer.l2_qk_norm.end(), true);
      normed > 0) {
    text += fmt::format(", queries and keys L2-normalised (no parameters) in {} layers", normed);
  }
  return text;
}

std::string describe_vision(const Spec& spec) {
  std::string text;
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
  return text;
}

}  // namespace

std::string describe(const Spec& spec) {
  std::string text = fmt::format(
      "Translated from a Hugging Face config.json (model_type \"{}\"): {} "
      "layers, hidden {}, {}, {} {}, vocab {}",
      spec.model_type, spec.layers, spec.hidden, describe_attention(spec),
      spec.moe.experts > 0 ? fmt::format("{} experts (top {}) of intermediate", spec.moe.experts,
                                         spec.moe.experts_per_token)
                           : std::string("intermediate"),
      spec.moe.experts > 0 ? spec.moe.expert_intermediate : spec.mlp.intermediate, spec.vocab);
  text += describe_moe_layers(spec);
  text += describe_positions(spec);
  text += describe_layer_pattern(spec);
  text += describe_vision(spec);
  if (spec.model_type.rfind("gemma", 0) == 0) {
    text +=
        "; the embedding's scaling by sqrt(hidden) is elementwise and not "
        "counted";
  }
  return text + ".";
}

}  // namespace capcalc::hf
