// The architectures the Hugging Face importer knows: one row per model_type in
// kArchitectures (hf_architectures.cpp). A Llama-like decoder is described by its row's
// LlamaLike traits alone; the others name a reader of their own (hf_architectures.cpp,
// hf_multimodal.cpp). docs/ARCHITECTURE.md, "Add a Hugging Face architecture", says how to add
// one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "import/hf_reader.hpp"
#include "import/hf_spec.hpp"

namespace capcalc::hf {

// Which attention projections carry biases.
enum class Biases {
  kNone,             // Mistral, Mixtral, Phi-3.
  kQkv,              // Qwen2: q_proj, k_proj, v_proj with bias, o_proj without.
  kAttentionKey,     // All four as "attention_bias" says (default false): Qwen3, Gemma.
  kAttentionAndMlp,  // Llama: "attention_bias" for q, k, v, o and "mlp_bias" for the MLP.
};

// Which decoder layers attend through a sliding window of "sliding_window" tokens. In every
// case a config's "layer_types" list, when present, names each layer's kind instead.
enum class Windows {
  kNone,        // Full attention everywhere (layer_types is still checked).
  kEveryLayer,  // Mistral: every layer, when sliding_window is set.
  kQwen,        // Qwen2: with use_sliding_window, from layer max_window_layers (28) on.
  kEvenLayers,  // Gemma 2: layers 0, 2, 4, ... (default window 4096).
};

// A Llama-like decoder's mixture of experts: the keys and transformers' defaults.
struct MoeTraits {
  std::string_view experts_key;  // "num_local_experts" or "num_experts".
  std::int64_t experts = 0;
  std::int64_t experts_per_token = 0;  // Key "num_experts_per_tok".
  // Each expert's hidden size: this key ("moe_intermediate_size") and default, or the dense
  // MLP's intermediate_size when empty.
  std::string_view expert_intermediate_key;
  std::int64_t expert_intermediate = 0;
  // > 0: a shared expert of "shared_expert_intermediate_size" (this default) behind a sigmoid
  // gate (Qwen2-MoE).
  std::int64_t shared_intermediate = 0;
  std::string_view name;  // The MoE module's name in the checkpoint.
  // Qwen: the MLP of layer i is dense when mlp_only_layers lists it or (i + 1) %
  // decoder_sparse_step != 0.
  bool qwen_sparse_layers = false;
};

// What sets one Llama-like decoder apart from Llama (RMSNorm pre-norm, rotary attention, a
// gated MLP, an untied LM head). Rows spell their traits with the with_ setters:
//   LlamaLike{}.with_biases(Biases::kQkv).with_windows(Windows::kQwen)
struct LlamaLike {
  Biases biases = Biases::kAttentionAndMlp;
  Windows windows = Windows::kNone;
  bool tied = false;            // tie_word_embeddings' default.
  bool qk_norm = false;         // Per-head RMSNorm of queries and keys.
  bool sandwich_norms = false;  // RMSNorm after attention and around the MLP.
  std::int64_t head_dim = 0;    // Default when the config has none; 0: hidden / heads.
  // The MLP's activation when hidden_act is absent; with `hidden_activation`, that key, when
  // present, overrides hidden_act (Gemma's GeGLU).
  std::string_view activation = "silu";
  bool hidden_activation = false;
  const MoeTraits* moe = nullptr;  // Null: a dense MLP in every layer.

  constexpr LlamaLike with_biases(Biases value) const {
    LlamaLike t = *this;
    t.biases = value;
    return t;
  }
  constexpr LlamaLike with_windows(Windows value) const {
    LlamaLike t = *this;
    t.windows = value;
    return t;
  }
  constexpr LlamaLike with_tied_embeddings() const {
    LlamaLike t = *this;
    t.tied = true;
    return t;
  }
  constexpr LlamaLike with_qk_norm() const {
    LlamaLike t = *this;
    t.qk_norm = true;
    return t;
  }
  constexpr LlamaLike with_sandwich_norms() const {
    LlamaLike t = *this;
    t.sandwich_norms = true;
    return t;
  }
  constexpr LlamaLike with_gemma_mlp() const {  // head_dim 256, GeGLU from hidden_activation.
    LlamaLike t = *this;
    t.head_dim = 256;
    t.activation = "gelu_pytorch_tanh";
    t.hidden_activation = true;
    return t;
  }
  constexpr LlamaLike with_moe(const MoeTraits& value) const {
    LlamaLike t = *this;
    t.moe = &value;
    return t;
  }
};

using ReadFn = void (*)(const Config&, Spec&);

// One row per model_type.
struct Architecture {
  std::string_view model_type;
  // transformers' class names: <prefix>ForCausalLM, <prefix>Model; or a whole class name
  // (Gemma3ForConditionalGeneration).
  std::string_view class_prefix;
  LlamaLike traits{};     // Read when `read` is null.
  ReadFn read = nullptr;  // An architecture that is not Llama-like reads itself.

  constexpr Architecture(std::string_view type, std::string_view prefix, LlamaLike llama_like)
      : model_type(type), class_prefix(prefix), traits(llama_like) {}
  constexpr Architecture(std::string_view type, std::string_view prefix, ReadFn reader)
      : model_type(type), class_prefix(prefix), read(reader) {}
};

// The table, sorted by model_type.
const std::vector<Architecture>& architectures();

// Fills `spec` from `config` as `architecture` says (spec.model_type is set by the caller).
void read_architecture(const Architecture& architecture, const Config& config, Spec& spec);

// The row of a class name ("LlamaForCausalLM" -> llama) in `table`; null if none. The prefix
// must be followed by "For", "Model" or "LMHeadModel", so that "Qwen2MoeForCausalLM" is not
// taken for qwen2.
const Architecture* architecture_of_class(std::string_view name,
                                          const std::vector<Architecture>& table);

// hf_config_to_model with `table` in place of architectures(): a test adds a row to a copy of
// the table and translates a config with it, as a new architecture would be.
nlohmann::json config_to_model(const nlohmann::json& config, const std::string& file,
                               const std::vector<Architecture>& table);

// The readers of the architectures that are not Llama-like (hf_multimodal.cpp).
void read_gemma3_text(const Config& config, Spec& spec);
void read_gemma3(const Config& config, Spec& spec);
void read_llama4_text(const Config& config, Spec& spec);
void read_llama4(const Config& config, Spec& spec);

}  // namespace capcalc::hf
