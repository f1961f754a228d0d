// What a Hugging Face config describes, between reading it (hf_reader, hf_architectures) and
// emitting the native model (hf_emit): plain values, grouped by the part of the model they
// shape. Defaults are "absent": no bias, no experts, no latent attention, no image encoder.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace capcalc::hf {

// The layer layout hf_emit builds; one emitter per family.
enum class Family {
  kDecoder,  // Pre-norm RMSNorm decoder with a gated MLP (Llama and its descendants).
  kGpt2,     // Pre-LN, learned positions, fused-bias attention, GELU MLP.
  kNeox,     // Pre-LN, rotary, parallel (or sequential) attention + MLP, separate embed_out.
  kBert,     // Post-LN encoder with token types and a pooler (BertModel).
};

struct AttentionSpec {
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;  // GQA/MQA: divides heads.
  std::int64_t head_dim = 0;
  bool qkv_bias = false;
  bool out_bias = false;
  bool qk_norm = false;  // RMSNorm of each head's queries and keys (Qwen3, Gemma 3).
  bool sinks = false;    // gpt-oss: a learned sink logit per head.
};

// Multi-head latent attention (DeepSeek-V2/V3): in use when kv_lora_rank > 0.
struct LatentAttentionSpec {
  std::int64_t q_lora_rank = 0;  // 0: queries projected directly (V2-Lite).
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

// The dense MLP (every layer's, or a MoE model's dense layers').
struct MlpSpec {
  std::int64_t intermediate = 0;
  std::string activation = "silu";  // Gated for kDecoder.
  bool bias = false;
  std::string name = "mlp";  // The module's name in the checkpoint.
};

// A mixture of experts: in use when experts > 0.
struct MoeSpec {
  std::int64_t experts = 0;
  std::int64_t experts_per_token = 0;
  std::int64_t expert_intermediate = 0;  // Each expert's hidden size.
  std::int64_t shared_intermediate = 0;  // The always-on shared experts' MLP (DeepSeek, Qwen2-MoE).
  bool shared_gate = false;              // Qwen2-MoE: a sigmoid gate on the shared expert.
  bool router_bias = false;  // DeepSeek-V3's e_score_correction_bias, gpt-oss's router bias.
  bool expert_bias = false;  // gpt-oss: biases in every expert.
  // DeepSeek's group-limited routing (n_group, topk_group); 0: none.
  std::int64_t groups = 0;
  std::int64_t groups_per_token = 0;
  std::string name = "block_sparse_moe";  // The module's name in the checkpoint.
};

// What varies from one decoder layer to the next; empty lists mean "the same everywhere".
struct PerLayerSpec {
  std::vector<std::int64_t> windows;  // Sliding window, 0 for full attention (one per layer).
  std::vector<std::int64_t> chunks;   // Chunked attention's chunk (Llama 4), 0: none.
  std::vector<bool> l2_qk_norm;       // Queries and keys L2-normalised (Llama 4).
  std::vector<bool> dense_mlp;        // MoE models: layers with a dense MLP.
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
  std::int64_t max_positions = 0;
  std::int64_t type_vocab = 0;     // BERT's token types.
  bool tied = false;               // The LM head shares the token embedding.
  bool parallel_residual = false;  // GPT-NeoX: attention and MLP read the same input.
  bool sandwich_norms = false;     // RMSNorm after attention and around the MLP (Gemma 2, 3).
  AttentionSpec attention;
  LatentAttentionSpec latent;
  MlpSpec mlp;
  MoeSpec moe;
  PerLayerSpec per_layer;
  std::optional<VisionSpec> vision;
};

}  // namespace capcalc::hf
