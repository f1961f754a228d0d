// The small integer tensors onnx_fold.cpp evaluates (onnx_fold_tensor.hpp).
#include "import/onnx_fold_tensor.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

namespace capcalc::onnx_import::fold {
namespace {

template <typename T>
bool read_raw(const std::string& raw, std::int64_t n, std::vector<std::int64_t>& out) {
  if (raw.size() != static_cast<std::size_t>(n) * sizeof(T)) return false;
  for (std::int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
    out.push_back(static_cast<std::int64_t>(v));
  }
  return true;
}

}  // namespace

bool is_integer_type(int type) {
  switch (type) {
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::BOOL:
      return true;
    default:
      return false;
  }
}

std::int64_t count(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0 || (d > 0 && n > kMaxFoldedElements / d)) return kMaxFoldedElements + 1;
    n *= d;
  }
  return n;
}

// The values of an integer TensorProto held inline; nullopt for floats, external data or
// tensors whose data was dropped.
std::optional<Tensor> from_proto(const onnx::TensorProto& proto) {
  if (!is_integer_type(proto.data_type())) return std::nullopt;
  Tensor t;
  t.dims.assign(proto.dims().begin(), proto.dims().end());
  t.elem_type = proto.data_type();
  const std::int64_t n = count(t.dims);
  if (n > kMaxFoldedElements) return std::nullopt;
  if (proto.data_type() == onnx::TensorProto::INT64 && proto.int64_data_size() == n) {
    t.values.assign(proto.int64_data().begin(), proto.int64_data().end());
  } else if (proto.data_type() != onnx::TensorProto::INT64 &&
             proto.data_type() != onnx::TensorProto::UINT32 && proto.int32_data_size() == n) {
    t.values.assign(proto.int32_data().begin(), proto.int32_data().end());
  } else if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    bool ok = false;
    switch (proto.data_type()) {
      case onnx::TensorProto::INT64:
        ok = read_raw<std::int64_t>(raw, n, t.values);
        break;
      case onnx::TensorProto::INT32:
        ok = read_raw<std::int32_t>(raw, n, t.values);
        break;
      case onnx::TensorProto::INT16:
        ok = read_raw<std::int16_t>(raw, n, t.values);
        break;
      case onnx::TensorProto::INT8:
        ok = read_raw<std::int8_t>(raw, n, t.values);
        break;
      case onnx::TensorProto::UINT8:
      case onnx::TensorProto::BOOL:
        ok = read_raw<std::uint8_t>(raw, n, t.values);
        break;
      case onnx::TensorProto::UINT16:
        ok = read_raw<std::uint16_t>(raw, n, t.values);
        break;
      case onnx::TensorProto::UINT32:
        ok = read_raw<std::uint32_t>(raw, n, t.values);
        break;
      default:
        break;
    }
    if (!ok) return std::nullopt;
  } else if (n == 0) {
    // An empty tensor: no data to read.
  } else {
    return std::nullopt;
  }
  return t;
}

const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const char* name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::int64_t int_attr(const onnx::NodeProto& node, const char* name, std::int64_t fallback) {
  const auto* a = attribute(node, name);
  return a != nullptr && a->type() == onnx::AttributeProto::INT ? a->i() : fallback;
}

std::optional<std::vector<std::int64_t>> ints_attr(const onnx::NodeProto& node, const char* name) {
  const auto* a = attribute(node, name);
  if (a == nullptr || a->type() != onnx::AttributeProto::INTS) return std::nullopt;
  return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
}

Tensor vector_tensor(std::vector<std::int64_t> values) {
  Tensor t;
  t.dims = {static_cast<std::int64_t>(values.size())};
  t.values = std::move(values);
  return t;
}

// Normalises a possibly negative axis; nullopt when out of range.
std::optional<std::int64_t> axis_in(std::int64_t axis, std::int64_t rank) {
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  return axis;
}

// Numpy broadcasting of two shapes.
std::optional<std::vector<std::int64_t>> broadcast(const std::vector<std::int64_t>& a,
                                                   const std::vector<std::int64_t>& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<std::int64_t> out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// The flat index into `shape` (broadcast into `out`) of the element at `flat` in `out`.
std::int64_t source_index(std::int64_t flat, const std::vector<std::int64_t>& out,
                          const std::vector<std::int64_t>& shape) {
  std::int64_t index = 0;
  std::int64_t stride = 1;
  const std::size_t offset = out.size() - shape.size();
  for (std::size_t i = out.size(); i-- > 0;) {
    const std::int64_t coordinate = flat % out[i];
    flat /= out[i];
    if (i < offset) continue;
    const std::int64_t d = shape[i - offset];
    if (d != 1) index += coordinate * stride;
    stride *= d;
  }
  return index;
}

// Floor-free integer division as ONNX Div on integers (truncation toward zero).
std::optional<std::int64_t> divide(std::int64_t a, std::int64_t b) {
  if (b == 0 || (b == -1 && a == INT64_MIN)) return std::nullopt;
  return a / b;
}

// A Constant node's value, if it is a small integer tensor.
std::optional<Tensor> constant_value(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute()) {
    if (a.name() == "value" && a.type() == onnx::AttributeProto::TENSOR) return from_proto(a.t());
    if (a.name() == "value_int" && a.type() == onnx::AttributeProto::INT) {
      Tensor t;
      t.values = {a.i()};
      return t;
    }
    if (a.name() == "value_ints" && a.type() == onnx::AttributeProto::INTS) {
      return vector_tensor({a.ints().begin(), a.ints().end()});
    }
  }
  return std::nullopt;
}

}  // namespace capcalc::onnx_import::fold
