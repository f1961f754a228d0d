// Hugging Face config.json files as model inputs: a config is translated into
// capcalc's native model document (an nlohmann::json in the format of
// docs/model-format.md) that the native parser then loads like a hand-written file,
// so both get exactly the same counts.
//
// The supported model_type values are the rows of the architecture table
// (src/import/hf_architectures.cpp); hf_model_types() lists them and docs/importers.md,
// "Hugging Face config.json", says what each becomes. Errors point into the config:
// `config.json:/num_key_value_heads: ...`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "capcalc/graph.hpp"

namespace capcalc {

/// Whether `document` is a Hugging Face config: an object with "model_type"
/// and/or "architectures" that does not say "format": "capcalc-model/1".
bool is_hf_config(const nlohmann::json& document);

/// Translates a config into a native model document with dims "batch" (1) and
/// "seq" (min(max_position_embeddings, 2048)). `file` names the config in
/// messages.
nlohmann::json hf_config_to_model(const nlohmann::json& config, const std::string& file);

/// Appends `modules` multi-token-prediction modules to a decoder translated by
/// hf_config_to_model (Megatron-Core's --mtp-num-layers; DeepSeek-V3's MTP, arXiv:2412.19437
/// section 2.2): each normalises the next token's embedding and the previous depth's hidden
/// state (enorm, hnorm), projects their concatenation from 2d to d (eh_proj), runs one more
/// decoder layer like the model's last, normalises it and applies the output head, shared with
/// the model's (tied to lm_head: no new weights). Layers named "mtp.<k>.*". Fails, naming
/// `file`, on a model that does not end in decoder layers, a norm and lm_head.
void add_mtp_modules(nlohmann::json& model, std::int64_t modules, const std::string& file);

/// Marks in `graph`, built from a model add_mtp_modules extended, where its `modules` modules
/// begin (Graph::mtp_first_layer, their first layer "mtp.0.enorm"); nothing when `modules` is 0.
void mark_mtp_modules(Graph& graph, std::int64_t modules);

/// Fails, naming `file`, when `modules` (ModelOptions::mtp_layers) asks for multi-token-prediction
/// modules on a model that is not built from a Hugging Face config.
void reject_mtp_modules(std::int64_t modules, const std::string& file);

/// The model_type values hf_config_to_model accepts, sorted.
std::vector<std::string_view> hf_model_types();

}  // namespace capcalc
