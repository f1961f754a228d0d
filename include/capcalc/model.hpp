// Loading capcalc's native model format (JSON written by people) into a Graph.
//
// The format is documented in docs/model-format.md and described by
// data/schema/model.schema.json. Loading resolves symbolic dimensions, expands blocks and
// repeats, infers every shape and counts every layer; any problem is a capcalc::Error naming
// the file and JSON pointer (and the layer).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "capcalc/graph.hpp"

namespace capcalc {

/// How causal attention is counted.
enum class CausalCounting {
  kFull,  ///< Every query/key pair, as dense attention kernels compute them (default).
  kHalf,  ///< Only the unmasked pairs (on or below the diagonal, inside the window).
};

std::string_view causal_counting_name(CausalCounting counting);  ///< "full", "half".
std::optional<CausalCounting> parse_causal_counting(std::string_view name);
std::vector<std::string_view> causal_counting_names();

/// Options that change counts.
struct CountOptions {
  CausalCounting causal = CausalCounting::kFull;
  /// LLM decode: self-attention layers also attend to this many cached positions (0: none).
  std::int64_t kv_cache_length = 0;
};

/// What the user sets from outside the file.
struct ModelOptions {
  std::map<std::string, std::int64_t> dims;  ///< Overrides of the file's dims ("batch", "seq").
  CountOptions counting;
  /// ONNX: whole input shapes by input name ("pixel_values" -> {1, 3, 224, 224}); they win
  /// over the file's dims for that input.
  std::map<std::string, std::vector<std::int64_t>> input_shapes;
  /// ONNX: an operator capcalc does not know is an error instead of a zero-count layer.
  bool strict = false;
  /// Native and Hugging Face models: inputs declared `optional` that this run leaves out (an
  /// image of a multimodal model for a text-only prompt); the layers computed from them alone
  /// do no work, their weights stay loaded (omit_input_layers).
  std::set<std::string> omitted_inputs;
  /// Hugging Face decoder configs: multi-token-prediction modules appended for training
  /// (Megatron-Core's --mtp-num-layers; add_mtp_modules in src/import/hf_config.hpp); 0: none.
  /// Any other model with it is an error.
  std::int64_t mtp_layers = 0;
};

/// Parses a model from JSON text; `file` names it in messages. The text may also be a Hugging
/// Face config.json (docs/importers.md, "Hugging Face config.json"): it is translated into the
/// native format first. options.input_shapes (ONNX only) are an error here.
Graph parse_model(std::string_view text, const std::string& file, const ModelOptions& options = {});

/// Reads and parses a model file: ONNX for a ".onnx" name (when built with ONNX support;
/// otherwise a capcalc::Error says so), capcalc's JSON otherwise.
Graph load_model(const std::string& path, const ModelOptions& options = {});

/// Names of the operators the native format accepts, in table order.
std::vector<std::string_view> operator_names();

}  // namespace capcalc
