// Inlining an ONNX model's local functions.
//
// torch.onnx.export with dynamo=True (and other exporters) may write modules as model-local
// functions (ModelProto.functions): a node whose domain and op_type name a function stands for
// the function's body. Counting needs the body's operators, so each call is replaced by the
// body's nodes, recursively: inputs and outputs bound to the call's, internal values renamed
// under the call's name, attributes that refer to the call's (ref_attr_name) taken from it.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace capcalc::onnx_import {

/// Expands every call of a local function in the main graph. Returns, for each node of the
/// expanded graph, the JSON pointer of the node of the file it comes from (the call for
/// expanded nodes); empty when the model has no local functions (nothing changes). Throws
/// capcalc::Error naming `file` and the call for calls nested deeper than kMaxFunctionDepth or
/// for more than kMaxExpandedNodes nodes in all (limits.hpp: functions that call others twice,
/// nested, double the nodes per level).
std::vector<std::string> inline_local_functions(onnx::ModelProto& model, const std::string& file);

}  // namespace capcalc::onnx_import
