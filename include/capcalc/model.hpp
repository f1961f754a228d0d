// Loading capcalc's native model format (JSON written by people) into a Graph.
//
// The format is documented in data/README.md ("The native model format") and described by
// data/schema/model.schema.json. Loading resolves symbolic dimensions, expands blocks and
// repeats, infers every shape and counts every layer; any problem is a capcalc::Error naming
// the file and JSON pointer (and the layer).
#pragma once

#include <cstdint>
#include <map>
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

/// Options that change counts.
struct CountOptions {
  CausalCounting causal = CausalCounting::kFull;
};

/// What the user sets from outside the file.
struct ModelOptions {
  std::map<std::string, std::int64_t> dims;  ///< Overrides of the file's dims ("batch", "seq").
  CountOptions counting;
};

/// Parses a model from JSON text; `file` names it in messages.
Graph parse_model(std::string_view text, const std::string& file, const ModelOptions& options = {});

/// Reads and parses a model file.
Graph load_model(const std::string& path, const ModelOptions& options = {});

/// Names of the operators the native format accepts, in table order.
std::vector<std::string_view> operator_names();

}  // namespace capcalc
