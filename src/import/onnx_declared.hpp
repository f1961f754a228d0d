// Holding declared shapes to the operators' rules.
//
// ONNX's shape inference runs leniently (error_mode 0) so that one operator it cannot follow
// does not stop the import; the cost is that a node whose output shape the file declares is
// never checked: a Softmax axis out of range, a Gather axis past the rank, a Split whose sizes
// do not add up are all accepted as long as the file says what comes out. These functions run
// ONNX's own rule for each such node alone, strictly, with its output left undeclared.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include <onnx/onnx_pb.h>

namespace capcalc::onnx_import {

/// The version of the standard domain (ai.onnx) the model imports; 0 if none.
std::int64_t standard_opset(const onnx::ModelProto& model);

/// Whether ONNX can infer `node` alone: the standard domain, not a Constant, a schema at
/// `opset`, no subgraph.
bool inferable_alone(const onnx::NodeProto& node, std::int64_t opset);

/// An empty model with `model`'s IR version and opsets, its graph named `name`: where one node
/// is inferred alone (its inputs, the node and its outputs are added to the graph).
onnx::ModelProto model_for_one_node(const onnx::ModelProto& model, const std::string& name);

/// The values whose shapes the file itself gives: graph outputs and value_info entries with a
/// tensor shape. Taken before inference writes its own.
std::set<std::string> declared_shapes(const onnx::GraphProto& graph);

/// Why a node's declared output does not follow from its inputs.
struct DeclaredMismatch {
  int node = 0;         ///< Index in the graph's nodes.
  std::string message;  ///< Without the node's name: "Softmax axis ... (ONNX shape inference)".
};

/// Checks every node of the standard domain that ONNX has a rule for, has no subgraph, has a
/// type and complete shape for each input, and writes a value in `declared`: its inference
/// alone must succeed, and give each declared output the declared dims where both are known.
/// The first node that fails, or nullopt.
std::optional<DeclaredMismatch> check_declared_outputs(const onnx::ModelProto& model,
                                                       const std::set<std::string>& declared);

}  // namespace capcalc::onnx_import
