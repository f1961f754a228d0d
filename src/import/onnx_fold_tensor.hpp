// The small integer tensors onnx_fold.cpp evaluates: reading them from TensorProtos and
// Constant nodes, attributes, axes and numpy broadcasting (private to the importer).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "import/onnx_fold.hpp"

namespace capcalc::onnx_import::fold {

// A small integer tensor known at import time. Booleans are held as 0/1.
struct Tensor {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> values;
  int elem_type = onnx::TensorProto::INT64;
};

using Tensors = std::map<std::string, Tensor>;

bool is_integer_type(int type);

// Elements of `dims`; kMaxFoldedElements + 1 for more (or a negative dimension).
std::int64_t count(const std::vector<std::int64_t>& dims);

// The values of an integer TensorProto held inline; nullopt for floats, external data or
// tensors whose data was dropped.
std::optional<Tensor> from_proto(const onnx::TensorProto& proto);

const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const char* name);
std::int64_t int_attr(const onnx::NodeProto& node, const char* name, std::int64_t fallback);
std::optional<std::vector<std::int64_t>> ints_attr(const onnx::NodeProto& node, const char* name);

Tensor vector_tensor(std::vector<std::int64_t> values);

// Normalises a possibly negative axis; nullopt when out of range.
std::optional<std::int64_t> axis_in(std::int64_t axis, std::int64_t rank);

// Numpy broadcasting of two shapes.
std::optional<std::vector<std::int64_t>> broadcast(const std::vector<std::int64_t>& a,
                                                   const std::vector<std::int64_t>& b);

// The flat index into `shape` (broadcast into `out`) of the element at `flat` in `out`.
std::int64_t source_index(std::int64_t flat, const std::vector<std::int64_t>& out,
                          const std::vector<std::int64_t>& shape);

// `op` over the broadcast elements of `in`; nullopt where it fails or the result is too large.
template <typename Op>
std::optional<Tensor> elementwise(const std::vector<const Tensor*>& in, int elem_type, Op op) {
  std::vector<std::int64_t> dims = in[0]->dims;
  for (std::size_t i = 1; i < in.size(); ++i) {
    const auto b = broadcast(dims, in[i]->dims);
    if (!b) return std::nullopt;
    dims = *b;
  }
  const std::int64_t n = count(dims);
  if (n > kMaxFoldedElements) return std::nullopt;
  Tensor out;
  out.dims = dims;
  out.elem_type = elem_type;
  std::vector<std::int64_t> args(in.size());
  for (std::int64_t k = 0; k < n; ++k) {
    for (std::size_t i = 0; i < in.size(); ++i)
      args[i] = in[i]->values[static_cast<std::size_t>(source_index(k, dims, in[i]->dims))];
    const std::optional<std::int64_t> v = op(args);
    if (!v) return std::nullopt;
    out.values.push_back(*v);
  }
  return out;
}

// Floor-free integer division as ONNX Div on integers (truncation toward zero).
std::optional<std::int64_t> divide(std::int64_t a, std::int64_t b);

// A Constant node's value, if it is a small integer tensor.
std::optional<Tensor> constant_value(const onnx::NodeProto& node);

}  // namespace capcalc::onnx_import::fold
