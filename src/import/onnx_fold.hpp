// Folding an ONNX graph's shape arithmetic into constants.
//
// Exporters compute reshape targets, slice bounds and position indices at run time:
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape, or Slice(position_ids, 0, seq_len).
// Once every input dimension is set, those values are fixed. ONNX's data propagation
// resolves some of these chains (Reshape), but not all (Slice bounds, Range, arithmetic on
// them); this folds every small integer computation it can evaluate into a Constant node, so
// that shape inference sees plain constants.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace capcalc::onnx_import {

/// The complete shape of a tensor, if known.
using ShapeLookup = std::function<std::optional<std::vector<std::int64_t>>(const std::string&)>;

/// Rewrites into Constant nodes every node whose outputs are small integer tensors
/// (at most kMaxFoldedElements) computable from constants, initializers and known shapes:
/// Shape, Size, Identity, Cast (to integer types), Unsqueeze, Squeeze, Concat, Gather, Slice,
/// Reshape, Range, Transpose, ConstantOfShape, Expand, Add, Sub, Mul, Div, Mod, Min, Max, Neg, Abs,
/// Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor, Not and Where. Returns the
/// number of nodes rewritten.
/// `on_kept`, if given, is called in graph order with each node the pass leaves computed,
/// before the pass reads the nodes after it: a shape that it learns there (`shape_of` reads it)
/// lets the rest of the same pass fold what depends on it.
using KeptNode = std::function<void(const onnx::NodeProto&)>;
int fold_shape_arithmetic(onnx::GraphProto& graph, const ShapeLookup& shape_of,
                          const KeptNode& on_kept = {});

inline constexpr std::int64_t kMaxFoldedElements = 4096;

/// The values of an integer (or boolean) tensor held inline, at most kMaxFoldedElements of
/// them; nullopt for floats, external data or tensors without their data.
std::optional<std::vector<std::int64_t>> integer_values(const onnx::TensorProto& tensor);

/// The integer values of a Constant node (attribute value, value_int or value_ints).
std::optional<std::vector<std::int64_t>> constant_values(const onnx::NodeProto& constant);

}  // namespace capcalc::onnx_import
