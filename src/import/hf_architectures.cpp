#include "import/hf_architectures.hpp"

#include <fmt/format.h>

namespace capcalc::hf {
namespace {

// The keys every decoder and encoder named as LlamaConfig names them reads (GPT-NeoX and BERT
// too), with the MLP's activation in hidden_act.
void read_core(const Config& config, Spec& spec, Family family, std::string_view activation) {
  spec.family = family;
  spec.vocab = config.required("vocab_size");
  spec.hidden = config.required("hidden_size");
  spec.layers = config.layers("num_hidden_layers");
  spec.mlp.intermediate = config.required("intermediate_size");
  spec.max_positions = config.required("max_position_embeddings");
  read_heads(config, spec, "num_attention_heads");
  spec.mlp.activation = activation_of(config, "hidden_act", std::string(activation));
  spec.per_layer.windows.assign(static_cast<std::size_t>(spec.layers), 0);
}

void read_biases(const Config& config, Spec& spec, Biases biases) {
  switch (biases) {
    case Biases::kNone:
      break;
    case Biases::kQkv:
      spec.attention.qkv_bias = true;
      break;
    case Biases::kAttentionKey:
      spec.attention.qkv_bias = spec.attention.out_bias = config.flag("attention_bias", false);
      break;
    case Biases::kAttentionAndMlp:
      // LlamaAttention: bias=config.attention_bias on q, k, v and o; LlamaMLP: config.mlp_bias.
      spec.attention.qkv_bias = spec.attention.out_bias = config.flag("attention_bias", false);
      spec.mlp.bias = config.flag("mlp_bias", false);
      break;
  }
}

void read_llama_windows(const Config& config, Spec& spec, Windows windows) {
  switch (windows) {
    case Windows::kNone:
      break;
    case Windows::kEveryLayer:
      read_windows(config, spec, true);
      break;
    case Windows::kQwen: {
      const std::int64_t first_sliding = config.positive("max_window_layers", 28);
      read_windows(config, spec, config.flag("use_sliding_window", false), first_sliding);
      break;
    }
    case Windows::kEvenLayers:
      // Gemma2DecoderLayer: is_sliding = not layer_idx % 2.
      read_windows_by_layer(config, spec, [](std::int64_t i) { return i % 2 == 0; });
      break;
  }
}

// Qwen's MoE decoders: layer i's MLP is sparse unless mlp_only_layers lists it or
// (i + 1) % decoder_sparse_step != 0; dense ones have intermediate_size.
void read_qwen_sparse_layers(const Config& config, Spec& spec) {
  const std::int64_t step = config.positive("decoder_sparse_step", 1);
  spec.per_layer.dense_mlp.assign(static_cast<std::size_t>(spec.layers), false);
  for (std::int64_t i = 0; i < spec.layers; ++i) {
    spec.per_layer.dense_mlp[static_cast<std::size_t>(i)] = (i + 1) % step != 0;
  }
  if (auto dense = config.find("mlp_only_layers")) {
    for (std::size_t i : read_layer_indices(*dense, spec.layers))
      spec.per_layer.dense_mlp[i] = true;
  }
}

void read_llama_moe(const Config& config, Spec& spec, const MoeTraits& moe) {
  spec.moe.experts = config.positive(moe.experts_key, moe.experts);
  spec.moe.experts_per_token = config.positive("num_experts_per_tok", moe.experts_per_token);
  spec.moe.expert_intermediate =
      moe.expert_intermediate_key.empty()
          ? spec.mlp.intermediate
          : config.positive(moe.expert_intermediate_key, moe.expert_intermediate);
  if (moe.shared_intermediate > 0) {
    spec.moe.shared_intermediate =
        config.count("shared_expert_intermediate_size", moe.shared_intermediate);
    spec.moe.shared_gate = spec.moe.shared_intermediate > 0;
  }
  spec.moe.name = std::string(moe.name);
  check_experts_per_token(config, spec, moe.experts_key);
  if (moe.qwen_sparse_layers) read_qwen_sparse_layers(config, spec);
}

// Llama 1/2/3 and every decoder that shares its layout, told apart by `traits`.
void read_llama_like(const Config& config, Spec& spec, const LlamaLike& traits) {
  read_core(config, spec, Family::kDecoder, traits.activation);
  if (traits.head_dim > 0 && !config.find("head_dim")) spec.attention.head_dim = traits.head_dim;
  if (traits.hidden_activation && config.find("hidden_activation")) {
    spec.mlp.activation =
        activation_of(config, "hidden_activation", std::string(traits.activation));
  }
  read_biases(config, spec, traits.biases);
  spec.tied = config.flag("tie_word_embeddings", traits.tied);
  read_llama_windows(config, spec, traits.windows);
  spec.attention.qk_norm = traits.qk_norm;
  spec.sandwich_norms = traits.sandwich_norms;
  if (traits.moe != nullptr) read_llama_moe(config, spec, *traits.moe);
}

// DeepSeek-V2 and V3 (and Kimi K2, a deepseek_v3): multi-head latent attention, and MoE
// layers of n_routed_experts experts (num_experts_per_tok per token) beside n_shared_experts
// always-on ones, after first_k_dense_replace layers with a dense MLP of intermediate_size
// (DeepseekV3DecoderLayer). V3's router also holds a per-expert e_score_correction_bias
// (topk_method "noaux_tc"). The multi-token-prediction layers (num_nextn_predict_layers) are
// not part of the model transformers builds, nor of the published 671B.
void read_deepseek(const Config& config, Spec& spec) {
  read_core(config, spec, Family::kDecoder, "silu");
  spec.attention.qkv_bias = spec.attention.out_bias = config.flag("attention_bias", false);
  spec.tied = config.flag("tie_word_embeddings", false);
  spec.latent.q_lora_rank = config.optional_positive("q_lora_rank").value_or(0);
  spec.latent.kv_lora_rank = config.required("kv_lora_rank");
  spec.latent.qk_nope_head_dim = config.required("qk_nope_head_dim");
  spec.latent.qk_rope_head_dim = config.required("qk_rope_head_dim");
  spec.latent.v_head_dim = config.required("v_head_dim");
  if (spec.attention.qkv_bias)
    config.fail("attention_bias", "latent attention with biases is not supported");
  if (auto experts = config.optional_positive("n_routed_experts")) {
    spec.moe.experts = *experts;
    spec.moe.experts_per_token = config.required("num_experts_per_tok");
    spec.moe.expert_intermediate = config.required("moe_intermediate_size");
    spec.moe.shared_intermediate =
        config.count("n_shared_experts", 0) * spec.moe.expert_intermediate;
    const std::int64_t first_dense = config.count("first_k_dense_replace", 0);
    const std::int64_t every = config.positive("moe_layer_freq", 1);
    const std::string topk_method = config.text("topk_method").value_or("");
    spec.moe.router_bias = topk_method == "noaux_tc";
    // Group-limited routing (DeepseekV3TopkRouter, DeepSeek-V2's "group_limited_greedy"): the
    // experts in n_group groups, a token's top-k within the topk_group best of them.
    if (topk_method == "noaux_tc" || topk_method == "group_limited_greedy") {
      spec.moe.groups = config.count("n_group", 0);
      spec.moe.groups_per_token = config.count("topk_group", 0);
    }
    spec.moe.name = "mlp";
    check_experts_per_token(config, spec, "n_routed_experts");
    if (first_dense > spec.layers) {
      config.fail("first_k_dense_replace",
                  fmt::format("first_k_dense_replace = {} exceeds num_hidden_layers = {}",
                              first_dense, spec.layers));
    }
    // DeepSeek's decoder layer: MoE when layer_idx >= first_k_dense_replace and
    // layer_idx % moe_layer_freq == 0, else the dense MLP.
    spec.per_layer.dense_mlp.resize(static_cast<std::size_t>(spec.layers));
    for (std::int64_t i = 0; i < spec.layers; ++i) {
      spec.per_layer.dense_mlp[static_cast<std::size_t>(i)] = i < first_dense || i % every != 0;
    }
  }
}

// gpt-oss (GptOssForCausalLM): GQA attention with biases and a learned sink per head, every
// MLP a mixture of num_local_experts experts of intermediate_size (top num_experts_per_tok)
// whose router and experts carry biases (GptOssTopKRouter, GptOssExperts), sliding windows
// on the layers layer_types names. Its clamped SwiGLU counts as SwiGLU.
void read_gpt_oss(const Config& config, Spec& spec) {
  read_core(config, spec, Family::kDecoder, "silu");
  spec.attention.qkv_bias = spec.attention.out_bias = config.flag("attention_bias", true);
  spec.tied = config.flag("tie_word_embeddings", false);
  spec.attention.sinks = true;
  spec.moe.experts = config.required("num_local_experts");
  spec.moe.experts_per_token =
      config.positive("num_experts_per_tok", config.positive("experts_per_token", 4));
  spec.moe.expert_intermediate = spec.mlp.intermediate;
  spec.moe.router_bias = spec.moe.expert_bias = true;
  spec.moe.name = "mlp";
  check_experts_per_token(config, spec, "num_local_experts");
  read_windows(config, spec, true);
}

void read_gpt2(const Config& config, Spec& spec) {
  spec.family = Family::kGpt2;
  spec.vocab = config.required("vocab_size");
  spec.hidden = config.required("n_embd");
  spec.layers = config.layers("n_layer");
  spec.max_positions = config.required("n_positions");
  read_heads(config, spec, "n_head");
  spec.mlp.intermediate = config.positive("n_inner", 4 * spec.hidden);
  spec.mlp.activation = activation_of(config, "activation_function", "gelu_new");
  spec.attention.qkv_bias = spec.attention.out_bias = spec.mlp.bias = true;
  spec.tied = config.flag("tie_word_embeddings", true);
  spec.per_layer.windows.assign(static_cast<std::size_t>(spec.layers), 0);
}

void read_gpt_neox(const Config& config, Spec& spec) {
  read_core(config, spec, Family::kNeox, "gelu");
  spec.attention.qkv_bias = spec.attention.out_bias = config.flag("attention_bias", true);
  spec.mlp.bias = true;
  spec.parallel_residual = config.flag("use_parallel_residual", true);
  spec.tied = config.flag("tie_word_embeddings", false);
}

void read_bert(const Config& config, Spec& spec) {
  read_core(config, spec, Family::kBert, "gelu");
  spec.type_vocab = config.positive("type_vocab_size", 2);
  if (auto kind = config.text("position_embedding_type"); kind && *kind != "absolute") {
    config.fail(
        "position_embedding_type",
        fmt::format("unsupported position_embedding_type \"{}\"; only \"absolute\"", *kind));
  }
  spec.attention.qkv_bias = spec.attention.out_bias = spec.mlp.bias = true;
}

// MixtralSparseMoeBlock: experts of the dense MLP's size.
constexpr MoeTraits kMixtralMoe{"num_local_experts", 8, 2, "", 0, 0, "block_sparse_moe", false};
// Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B): top 4 of 60 experts of 1408 beside a gated shared
// expert of 5632.
constexpr MoeTraits kQwen2Moe{"num_experts", 60,   4,     "moe_intermediate_size",
                              1408,          5632, "mlp", true};
// Qwen3-MoE: top 8 of 128 experts of 768, routed by "mlp.gate".
constexpr MoeTraits kQwen3Moe{"num_experts", 128, 8, "moe_intermediate_size", 768, 0, "mlp", true};

constexpr LlamaLike kMistral =
    LlamaLike{}.with_biases(Biases::kNone).with_windows(Windows::kEveryLayer);
constexpr LlamaLike kQwen2 = LlamaLike{}.with_biases(Biases::kQkv).with_windows(Windows::kQwen);
constexpr LlamaLike kQwen3 =
    LlamaLike{}.with_biases(Biases::kAttentionKey).with_windows(Windows::kQwen).with_qk_norm();
constexpr LlamaLike kGemma =
    LlamaLike{}.with_biases(Biases::kAttentionKey).with_tied_embeddings().with_gemma_mlp();

}  // namespace

const std::vector<Architecture>& architectures() {
  static const std::vector<Architecture> table = {
      {"bert", "Bert", read_bert},
      {"deepseek_v2", "DeepseekV2", read_deepseek},
      {"deepseek_v3", "DeepseekV3", read_deepseek},
      {"gemma", "Gemma", kGemma},
      {"gemma2", "Gemma2", kGemma.with_sandwich_norms().with_windows(Windows::kEvenLayers)},
      {"gemma3", "Gemma3ForConditionalGeneration", read_gemma3},
      {"gemma3_text", "Gemma3", read_gemma3_text},
      {"gpt2", "GPT2", read_gpt2},
      {"gpt_neox", "GPTNeoX", read_gpt_neox},
      {"gpt_oss", "GptOss", read_gpt_oss},
      {"llama", "Llama", LlamaLike{}},
      {"llama4", "Llama4ForConditionalGeneration", read_llama4},
      {"llama4_text", "Llama4", read_llama4_text},
      {"mistral", "Mistral", kMistral},
      {"mixtral", "Mixtral", kMistral.with_moe(kMixtralMoe)},
      {"phi3", "Phi3", kMistral},  // Fused qkv_proj and gate_up_proj: the same counts.
      {"qwen2", "Qwen2", kQwen2},
      {"qwen2_moe", "Qwen2Moe", kQwen2.with_moe(kQwen2Moe)},
      {"qwen3", "Qwen3", kQwen3},
      {"qwen3_moe", "Qwen3Moe", kQwen3.with_moe(kQwen3Moe)},
  };
  return table;
}

void read_architecture(const Architecture& architecture, const Config& config, Spec& spec) {
  if (architecture.read != nullptr) {
    architecture.read(config, spec);
  } else {
    read_llama_like(config, spec, architecture.traits);
  }
}

const Architecture* architecture_of_class(std::string_view name,
                                          const std::vector<Architecture>& table) {
  for (const Architecture& row : table) {
    if (name.substr(0, row.class_prefix.size()) != row.class_prefix) continue;
    const std::string_view rest = name.substr(row.class_prefix.size());
    if (rest.empty() || rest.substr(0, 3) == "For" || rest == "Model" || rest == "LMHeadModel") {
      return &row;  // Empty: the class itself (Gemma3ForConditionalGeneration).
    }
  }
  return nullptr;
}

}  // namespace capcalc::hf
