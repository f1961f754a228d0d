// Emitting capcalc's native model document (docs/model-format.md) from a Spec. Layer names
// follow transformers' state_dict names (as the hand-written models in data/models do), so
// `capcalc layers` reads like the checkpoint.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "import/hf_spec.hpp"

namespace capcalc::hf {

// Adds "blocks", "layers" and, where the family needs them, "inputs" and "outputs" to `model`,
// whose "dims" and "inputs" (input_ids) are set: the family's layers, then the image encoder.
void emit_layers(const Spec& spec, nlohmann::json& model);

// One paragraph for the model's "description": what was translated and what is not counted.
std::string describe(const Spec& spec);

}  // namespace capcalc::hf
