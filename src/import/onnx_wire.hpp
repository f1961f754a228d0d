// Reading an ONNX file without its weights.
//
// capcalc needs a tensor's dims, never its values, except for the small integer constants of
// shape arithmetic (at most onnx_import::kMaxFoldedElements). Parsing a whole ModelProto would
// copy every weight into memory (a 553 MB VGG-16 peaked at 1,068 MB); this walks the protobuf
// wire format instead and writes a copy of the model in which every tensor payload larger than
// kMaxKeptTensorBytes is left out, so that the weights' pages of a mapped file are never read.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace capcalc::onnx_import {

/// Payloads up to this size are kept: 4,096 elements of 16 bytes, so every tensor that shape
/// arithmetic can fold (kMaxFoldedElements of any element type) keeps its values.
inline constexpr std::size_t kMaxKeptTensorBytes = 64 * 1024;

/// The serialised ModelProto `bytes` again, with the data of every TensorProto (initializers,
/// attribute tensors, sparse tensors, in subgraphs and functions too) whose payload exceeds
/// kMaxKeptTensorBytes removed and its data_location set to EXTERNAL; names, types and dims
/// stay. nullopt where `bytes` is not a well-formed wire stream or nests messages deeper than
/// `max_depth` (protobuf's own parser then says so).
std::optional<std::string> strip_tensor_data(std::string_view bytes, int max_depth);

}  // namespace capcalc::onnx_import
