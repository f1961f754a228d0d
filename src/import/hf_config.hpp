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

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace capcalc {

/// Whether `document` is a Hugging Face config: an object with "model_type"
/// and/or "architectures" that does not say "format": "capcalc-model/1".
bool is_hf_config(const nlohmann::json& document);

/// Translates a config into a native model document with dims "batch" (1) and
/// "seq" (min(max_position_embeddings, 2048)). `file` names the config in
/// messages.
nlohmann::json hf_config_to_model(const nlohmann::json& config, const std::string& file);

/// The model_type values hf_config_to_model accepts, sorted.
std::vector<std::string_view> hf_model_types();

}  // namespace capcalc
