#include "import/onnx_fold.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <set>

#include "import/onnx_fold_tensor.hpp"

namespace capcalc::onnx_import {
namespace {

// The tensors this pass evaluates (onnx_fold_tensor.hpp).
using fold::attribute;
using fold::axis_in;
using fold::broadcast;
using fold::constant_value;
using fold::count;
using fold::divide;
using fold::elementwise;
using fold::from_proto;
using fold::int_attr;
using fold::ints_attr;
using fold::is_integer_type;
using fold::source_index;
using fold::Tensor;
using fold::Tensors;
using fold::vector_tensor;

class Folder {
 public:
  Folder(onnx::GraphProto& graph, const ShapeLookup& shape_of, const KeptNode& on_kept)
      : graph_(graph), shape_of_(shape_of), on_kept_(on_kept) {
    for (const auto& init : graph.initializer()) {
      if (auto t = from_proto(init)) known_[init.name()] = std::move(*t);
    }
    for (const auto& output : graph.output())
      graph_outputs_.insert(output.name());
  }

  int run() {
    int folded = 0;
    for (auto& node : *graph_.mutable_node()) {
      if (fold(node)) {
        ++folded;
      } else if (on_kept_ && node.op_type() != "Constant") {
        on_kept_(node);
      }
    }
    return folded + feed_kept_values();
  }

 private:
  // Rewrites `node` into a Constant if its value can be computed; true if it did.
  bool fold(onnx::NodeProto& node) {
    if (node.output_size() != 1 || !node.domain().empty()) return false;
    const std::string& op = node.op_type();
    if (op == "Constant") {
      if (auto t = constant_value(node)) known_[node.output(0)] = std::move(*t);
      return false;
    }
    std::optional<Tensor> value = evaluate(node);
    if (!value || count(value->dims) > kMaxFoldedElements) return false;
    known_[node.output(0)] = *value;
    // Shape and Size stay: they read an activation, and a graph output stays computed.
    if (op == "Shape" || op == "Size" || graph_outputs_.count(node.output(0)) > 0) {
      kept_.insert(node.output(0));
      return false;
    }
    rewrite(node, *value);
    return true;
  }

  const Tensor* input(const onnx::NodeProto& node, int i) const {
    if (i >= node.input_size() || node.input(i).empty()) return nullptr;
    const auto it = known_.find(node.input(i));
    return it == known_.end() ? nullptr : &it->second;
  }

  bool has_input(const onnx::NodeProto& node, int i) const {
    return i < node.input_size() && !node.input(i).empty();
  }

  // The value of an integer node whose inputs are known (Shape and Size: whose input's shape
  // is known), if it is one of the operators that exporters' shape arithmetic uses.
  std::optional<Tensor> evaluate(const onnx::NodeProto& node) const {
    const std::string& op = node.op_type();
    if (op == "Shape" || op == "Size") return shape_or_size(node);
    const Tensor* x = input(node, 0);
    if (x == nullptr) return std::nullopt;
    if (op == "Identity") return *x;
    if (op == "Cast") return cast(node, *x);
    if (op == "Unsqueeze") return unsqueeze(node, *x);
    if (op == "Squeeze") return squeeze(node, *x);
    if (op == "Concat") return concat(node, *x);
    if (op == "Gather") return gather(node, *x);
    if (op == "Slice") return slice(node, *x);
    if (op == "Reshape") return reshape(node, *x);
    if (op == "Range") return range(node, *x);
    if (op == "Transpose") return transpose(node, *x);
    if (op == "ConstantOfShape") return constant_of_shape(node, *x);
    if (op == "Expand") return expand(*x, input(node, 1));
    if (op == "Neg" || op == "Abs" || op == "Not") return unary(op, *x);
    if (op == "Where") return where(node, *x);
    return binary(node, *x);
  }

  // Shape (with start and end) and Size of a value whose shape is known.
  std::optional<Tensor> shape_or_size(const onnx::NodeProto& node) const {
    const std::string& op = node.op_type();
    if (node.input_size() < 1) return std::nullopt;
    auto shape = shape_of_(node.input(0));
    // A folded tensor's shape is known here before inference has seen it.
    if (const Tensor* folded = input(node, 0); !shape && folded != nullptr) shape = folded->dims;
    if (!shape) return std::nullopt;
    if (op == "Size") {
      std::int64_t n = 1;
      for (std::int64_t d : *shape) {
        if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
      }
      Tensor t;
      t.values = {n};
      return t;
    }
    const auto rank = static_cast<std::int64_t>(shape->size());
    const auto clamp = [&](std::int64_t v) {
      if (v < 0) v += rank;
      return std::clamp<std::int64_t>(v, 0, rank);
    };
    const std::int64_t start = clamp(int_attr(node, "start", 0));
    const std::int64_t end = clamp(int_attr(node, "end", rank));
    std::vector<std::int64_t> dims;
    for (std::int64_t i = start; i < end; ++i)
      dims.push_back((*shape)[static_cast<std::size_t>(i)]);
    return vector_tensor(std::move(dims));
  }

  // Cast to an integer type (to bool: 0 or 1).
  static std::optional<Tensor> cast(const onnx::NodeProto& node, const Tensor& x_in) {
    const Tensor* x = &x_in;
    const std::int64_t to = int_attr(node, "to", 0);
    if (!is_integer_type(static_cast<int>(to))) return std::nullopt;
    Tensor t = *x;
    t.elem_type = static_cast<int>(to);
    if (to == onnx::TensorProto::BOOL) {
      for (auto& v : t.values)
        v = v != 0 ? 1 : 0;
    }
    return t;
  }

  // Unsqueeze's and Squeeze's axes: the attribute (before opset 13) or the second input.
  // Empty optional inside: none given; nullopt outside: given but not known.
  std::optional<std::optional<std::vector<std::int64_t>>> squeeze_axes(
      const onnx::NodeProto& node) const {
    std::optional<std::vector<std::int64_t>> axes = ints_attr(node, "axes");
    if (!axes && has_input(node, 1)) {
      const Tensor* a = input(node, 1);
      if (a == nullptr) return std::nullopt;
      axes = a->values;
    }
    return axes;
  }

  std::optional<Tensor> unsqueeze(const onnx::NodeProto& node, const Tensor& x_in) const {
    const Tensor* x = &x_in;
    const auto given = squeeze_axes(node);
    if (!given) return std::nullopt;
    const std::optional<std::vector<std::int64_t>>& axes = *given;
    if (!axes) return std::nullopt;
    Tensor t = *x;
    const auto rank = static_cast<std::int64_t>(x->dims.size() + axes->size());
    std::vector<bool> inserted(static_cast<std::size_t>(rank), false);
    for (std::int64_t a : *axes) {
      const auto axis = axis_in(a, rank);
      if (!axis || inserted[static_cast<std::size_t>(*axis)]) return std::nullopt;
      inserted[static_cast<std::size_t>(*axis)] = true;
    }
    t.dims.clear();
    std::size_t next = 0;
    for (std::int64_t i = 0; i < rank; ++i)
      t.dims.push_back(inserted[static_cast<std::size_t>(i)] ? 1 : x->dims[next++]);
    return t;
  }

  std::optional<Tensor> squeeze(const onnx::NodeProto& node, const Tensor& x_in) const {
    const Tensor* x = &x_in;
    const auto given = squeeze_axes(node);
    if (!given) return std::nullopt;
    const std::optional<std::vector<std::int64_t>>& axes = *given;
    Tensor t = *x;
    const auto rank = static_cast<std::int64_t>(x->dims.size());
    std::vector<bool> removed(x->dims.size(), false);
    if (axes) {
      for (std::int64_t a : *axes) {
        const auto axis = axis_in(a, rank);
        if (!axis || x->dims[static_cast<std::size_t>(*axis)] != 1) return std::nullopt;
        removed[static_cast<std::size_t>(*axis)] = true;
      }
    } else {
      for (std::size_t i = 0; i < x->dims.size(); ++i)
        removed[i] = x->dims[i] == 1;
    }
    t.dims.clear();
    for (std::size_t i = 0; i < x->dims.size(); ++i) {
      if (!removed[i]) t.dims.push_back(x->dims[i]);
    }
    return t;
  }

  // Concat of vectors (shape arithmetic); higher ranks are left to ONNX.
  std::optional<Tensor> concat(const onnx::NodeProto& node, const Tensor& x_in) const {
    const Tensor* x = &x_in;
    std::vector<const Tensor*> parts;
    for (int i = 0; i < node.input_size(); ++i) {
      const Tensor* p = input(node, i);
      if (p == nullptr) return std::nullopt;
      parts.push_back(p);
    }
    Tensor t;
    t.elem_type = x->elem_type;
    for (const Tensor* p : parts) {
      if (p->dims.size() != 1) return std::nullopt;
      t.values.insert(t.values.end(), p->values.begin(), p->values.end());
    }
    t.dims = {static_cast<std::int64_t>(t.values.size())};
    return t;
  }

  // Gather along one axis.
  std::optional<Tensor> gather(const onnx::NodeProto& node, const Tensor& x_in) const {
    const Tensor* x = &x_in;
    const Tensor* indices = input(node, 1);
    if (indices == nullptr || x->dims.empty()) return std::nullopt;
    const auto axis = axis_in(int_attr(node, "axis", 0), static_cast<std::int64_t>(x->dims.size()));
    if (!axis) return std::nullopt;
    const auto a = static_cast<std::size_t>(*axis);
    std::int64_t outer = 1;
    std::int64_t inner = 1;
    for (std::size_t i = 0; i < a; ++i)
      outer *= x->dims[i];
    for (std::size_t i = a + 1; i < x->dims.size(); ++i)
      inner *= x->dims[i];
    const std::int64_t extent = x->dims[a];
    Tensor t;
    t.elem_type = x->elem_type;
    t.dims.assign(x->dims.begin(), x->dims.begin() + *axis);
    t.dims.insert(t.dims.end(), indices->dims.begin(), indices->dims.end());
    t.dims.insert(t.dims.end(), x->dims.begin() + *axis + 1, x->dims.end());
    if (count(t.dims) > kMaxFoldedElements) return std::nullopt;
    for (std::int64_t o = 0; o < outer; ++o) {
      for (std::int64_t index : indices->values) {
        if (index < 0) index += extent;
        if (index < 0 || index >= extent) return std::nullopt;
        for (std::int64_t i = 0; i < inner; ++i)
          t.values.push_back(x->values[static_cast<std::size_t>((o * extent + index) * inner + i)]);
      }
    }
    return t;
  }

  // Reshape: 0 copies the input's dim (unless allowzero), one -1 is inferred.
  std::optional<Tensor> reshape(const onnx::NodeProto& node, const Tensor& x_in) const {
    const Tensor* x = &x_in;
    const Tensor* target = input(node, 1);
    if (target == nullptr) return std::nullopt;
    std::vector<std::int64_t> dims;
    std::int64_t known = 1;
    int inferred = -1;
    const bool allowzero = int_attr(node, "allowzero", 0) != 0;
    for (std::size_t i = 0; i < target->values.size(); ++i) {
      std::int64_t d = target->values[i];
      if (d == 0 && !allowzero) {
        if (i >= x->dims.size()) return std::nullopt;
        d = x->dims[i];
      }
      if (d == -1) {
        if (inferred >= 0) return std::nullopt;
        inferred = static_cast<int>(i);
        dims.push_back(1);
        continue;
      }
      if (d < 0 || __builtin_mul_overflow(known, d, &known)) return std::nullopt;
      dims.push_back(d);
    }
    const auto n = static_cast<std::int64_t>(x->values.size());
    if (inferred >= 0) {
      if (known == 0 || n % known != 0) return std::nullopt;
      dims[static_cast<std::size_t>(inferred)] = n / known;
    } else if (known != n) {
      return std::nullopt;
    }
    Tensor t = *x;
    t.dims = dims;
    return t;
  }

  // Range(start, limit, delta).
  std::optional<Tensor> range(const onnx::NodeProto& node, const Tensor& x_in) const {
    const Tensor* x = &x_in;
    const Tensor* limit = input(node, 1);
    const Tensor* delta = input(node, 2);
    if (limit == nullptr || delta == nullptr || x->values.size() != 1 ||
        limit->values.size() != 1 || delta->values.size() != 1 || delta->values[0] == 0) {
      return std::nullopt;
    }
    const std::int64_t start = x->values[0];
    const std::int64_t step = delta->values[0];
    // ceil((limit - start) / step), without overflow: the operands may be any int64.
    std::int64_t span = 0;
    if (__builtin_sub_overflow(limit->values[0], start, &span)) return std::nullopt;
    if (step == -1 && span == INT64_MIN) return std::nullopt;
    std::int64_t n = 0;
    if (span != 0 && (span > 0) == (step > 0)) n = span / step + (span % step != 0 ? 1 : 0);
    if (n > kMaxFoldedElements) return std::nullopt;
    Tensor t;
    t.elem_type = x->elem_type;
    t.dims = {n};
    for (std::int64_t i = 0; i < n; ++i)
      t.values.push_back(start + i * step);
    return t;
  }

  // Neg, Abs, Not.
  static std::optional<Tensor> unary(const std::string& op, const Tensor& x_in) {
    const Tensor* x = &x_in;
    using Args = std::vector<std::int64_t>;
    return elementwise({x}, x->elem_type, [&op](const Args& v) -> std::optional<std::int64_t> {
      if (v[0] == INT64_MIN && op != "Not") return std::nullopt;
      if (op == "Neg") return -v[0];
      if (op == "Abs") return v[0] < 0 ? -v[0] : v[0];
      return v[0] == 0 ? 1 : 0;
    });
  }

  // Two-operand integer operators: comparisons and logic, Mod, arithmetic, Min, Max, Equal.
  std::optional<Tensor> binary(const onnx::NodeProto& node, const Tensor& x_in) const {
    const std::string& op = node.op_type();
    const Tensor* x = &x_in;
    using Args = std::vector<std::int64_t>;
    const Tensor* y = input(node, 1);
    // Comparisons and logic, as torch exports integer floor division and remainder (Less, And,
    // Not around Div and Mul: Swin's window padding).
    if (op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" ||
        op == "And" || op == "Or" || op == "Xor") {
      if (y == nullptr || node.input_size() != 2) return std::nullopt;
      return elementwise({x, y}, onnx::TensorProto::BOOL,
                         [&op](const Args& v) -> std::optional<std::int64_t> {
                           if (op == "Less") return v[0] < v[1];
                           if (op == "Greater") return v[0] > v[1];
                           if (op == "LessOrEqual") return v[0] <= v[1];
                           if (op == "GreaterOrEqual") return v[0] >= v[1];
                           if (op == "And") return v[0] != 0 && v[1] != 0;
                           if (op == "Or") return v[0] != 0 || v[1] != 0;
                           return (v[0] != 0) != (v[1] != 0);
                         });
    }
    if (op == "Mod") {
      if (y == nullptr || node.input_size() != 2) return std::nullopt;
      const bool fmod = int_attr(node, "fmod", 0) != 0;
      return elementwise(
          {x, y}, x->elem_type, [fmod](const Args& v) -> std::optional<std::int64_t> {
            if (v[1] == 0 || (v[1] == -1 && v[0] == INT64_MIN)) return std::nullopt;
            const std::int64_t r = v[0] % v[1];  // C's: the sign of the dividend (fmod = 1).
            // fmod = 0 takes the divisor's sign, as Python's %.
            return !fmod && r != 0 && ((r < 0) != (v[1] < 0)) ? r + v[1] : r;
          });
    }
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Min" || op == "Max" ||
        op == "Equal") {
      if (y == nullptr || node.input_size() != 2) return std::nullopt;
      const int type = op == "Equal" ? static_cast<int>(onnx::TensorProto::BOOL) : x->elem_type;
      return elementwise({x, y}, type, [&op](const Args& v) -> std::optional<std::int64_t> {
        std::int64_t r = 0;
        if (op == "Add")
          return __builtin_add_overflow(v[0], v[1], &r) ? std::nullopt : std::optional(r);
        if (op == "Sub")
          return __builtin_sub_overflow(v[0], v[1], &r) ? std::nullopt : std::optional(r);
        if (op == "Mul")
          return __builtin_mul_overflow(v[0], v[1], &r) ? std::nullopt : std::optional(r);
        if (op == "Div") return divide(v[0], v[1]);
        if (op == "Min") return std::min(v[0], v[1]);
        if (op == "Max") return std::max(v[0], v[1]);
        return v[0] == v[1] ? 1 : 0;
      });
    }
    return std::nullopt;
  }

  // Where(condition, x, y).
  std::optional<Tensor> where(const onnx::NodeProto& node, const Tensor& condition) const {
    const Tensor* x = &condition;
    using Args = std::vector<std::int64_t>;
    const Tensor* y = input(node, 1);
    const Tensor* z = input(node, 2);
    if (y == nullptr || z == nullptr) return std::nullopt;
    return elementwise({x, y, z}, y->elem_type, [](const Args& v) -> std::optional<std::int64_t> {
      return v[0] != 0 ? v[1] : v[2];
    });
  }

  // Transpose (torch writes F.pad's pads through Reshape [-1, 2], a reversing Slice, a
  // Transpose and Reshape [-1]: Swin's window padding).
  static std::optional<Tensor> transpose(const onnx::NodeProto& node, const Tensor& x) {
    const std::size_t rank = x.dims.size();
    std::vector<std::int64_t> perm;
    if (const auto p = ints_attr(node, "perm")) {
      perm = *p;
    } else {
      for (std::size_t i = rank; i-- > 0;)
        perm.push_back(static_cast<std::int64_t>(i));
    }
    if (perm.size() != rank) return std::nullopt;
    std::vector<bool> used(rank, false);
    for (std::int64_t p : perm) {
      if (p < 0 || static_cast<std::size_t>(p) >= rank || used[static_cast<std::size_t>(p)]) {
        return std::nullopt;
      }
      used[static_cast<std::size_t>(p)] = true;
    }
    Tensor t;
    t.elem_type = x.elem_type;
    for (std::int64_t p : perm)
      t.dims.push_back(x.dims[static_cast<std::size_t>(p)]);
    // Row-major strides of the input, read in the output's axis order.
    std::vector<std::int64_t> stride(rank, 1);
    for (std::size_t i = rank; i-- > 1;)
      stride[i - 1] = stride[i] * x.dims[i];
    const std::int64_t n = count(t.dims);
    for (std::int64_t k = 0; k < n; ++k) {
      std::int64_t rest = k;
      std::int64_t source = 0;
      for (std::size_t i = rank; i-- > 0;) {
        source += (rest % t.dims[i]) * stride[static_cast<std::size_t>(perm[i])];
        rest /= t.dims[i];
      }
      t.values.push_back(x.values[static_cast<std::size_t>(source)]);
    }
    return t;
  }

  // ConstantOfShape of an integer value (torch exports ones_like of a shape so: the -1s of
  // expand(n, -1, -1) become 1s through Equal and Where against it).
  static std::optional<Tensor> constant_of_shape(const onnx::NodeProto& node, const Tensor& shape) {
    const auto* value = attribute(node, "value");
    if (value == nullptr || value->type() != onnx::AttributeProto::TENSOR) return std::nullopt;
    const std::optional<Tensor> fill = from_proto(value->t());
    if (!fill || fill->values.size() != 1 || shape.dims.size() > 1) return std::nullopt;
    for (std::int64_t d : shape.values) {
      if (d < 0) return std::nullopt;
    }
    Tensor t;
    t.dims = shape.values;
    t.elem_type = fill->elem_type;
    const std::int64_t n = count(t.dims);
    if (n > kMaxFoldedElements) return std::nullopt;
    t.values.assign(static_cast<std::size_t>(n), fill->values.front());
    return t;
  }

  // Expand: numpy broadcasting of x to the shape (either may be the larger in an axis).
  static std::optional<Tensor> expand(const Tensor& x, const Tensor* shape) {
    if (shape == nullptr || shape->dims.size() > 1) return std::nullopt;
    for (std::int64_t d : shape->values) {
      if (d < 0) return std::nullopt;
    }
    const auto dims = broadcast(x.dims, shape->values);
    if (!dims || count(*dims) > kMaxFoldedElements) return std::nullopt;
    Tensor t;
    t.dims = *dims;
    t.elem_type = x.elem_type;
    const std::int64_t n = count(t.dims);
    for (std::int64_t k = 0; k < n; ++k)
      t.values.push_back(x.values[static_cast<std::size_t>(source_index(k, t.dims, x.dims))]);
    return t;
  }

  std::optional<Tensor> slice(const onnx::NodeProto& node, const Tensor& x) const {
    const auto rank = static_cast<std::int64_t>(x.dims.size());
    std::vector<std::int64_t> starts;
    std::vector<std::int64_t> ends;
    std::vector<std::int64_t> axes;
    std::vector<std::int64_t> steps;
    if (node.input_size() == 1) {  // opset < 10: attributes
      const auto s = ints_attr(node, "starts");
      const auto e = ints_attr(node, "ends");
      if (!s || !e) return std::nullopt;
      starts = *s;
      ends = *e;
      if (const auto a = ints_attr(node, "axes")) axes = *a;
    } else {
      const Tensor* s = input(node, 1);
      const Tensor* e = input(node, 2);
      if (s == nullptr || e == nullptr) return std::nullopt;
      starts = s->values;
      ends = e->values;
      if (has_input(node, 3)) {
        const Tensor* a = input(node, 3);
        if (a == nullptr) return std::nullopt;
        axes = a->values;
      }
      if (has_input(node, 4)) {
        const Tensor* st = input(node, 4);
        if (st == nullptr) return std::nullopt;
        steps = st->values;
      }
    }
    if (ends.size() != starts.size()) return std::nullopt;
    if (axes.empty()) {
      for (std::size_t i = 0; i < starts.size(); ++i)
        axes.push_back(static_cast<std::int64_t>(i));
    }
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (axes.size() != starts.size() || steps.size() != starts.size()) return std::nullopt;

    std::vector<std::int64_t> first(x.dims.size(), 0);
    std::vector<std::int64_t> step(x.dims.size(), 1);
    std::vector<std::int64_t> dims = x.dims;
    for (std::size_t i = 0; i < starts.size(); ++i) {
      const auto axis = axis_in(axes[i], rank);
      if (!axis || steps[i] == 0) return std::nullopt;
      const auto a = static_cast<std::size_t>(*axis);
      const std::int64_t d = x.dims[a];
      // Exporters write INT64_MAX for "to the end": clamp before any arithmetic.
      std::int64_t s = starts[i] < 0 ? std::max<std::int64_t>(starts[i], -d) + d : starts[i];
      std::int64_t e = ends[i] < 0 ? std::max<std::int64_t>(ends[i], -d - 1) + d : ends[i];
      // |step| without overflow for INT64_MIN.
      const std::uint64_t magnitude = steps[i] > 0
                                          ? static_cast<std::uint64_t>(steps[i])
                                          : static_cast<std::uint64_t>(-(steps[i] + 1)) + 1;
      if (steps[i] > 0) {
        s = std::clamp<std::int64_t>(s, 0, d);
        e = std::clamp<std::int64_t>(e, 0, d);
        dims[a] =
            e > s ? 1 + static_cast<std::int64_t>(static_cast<std::uint64_t>(e - s - 1) / magnitude)
                  : 0;
      } else if (d == 0) {
        dims[a] = 0;
      } else {
        s = std::clamp<std::int64_t>(s, 0, d - 1);
        e = std::clamp<std::int64_t>(e, -1, d - 1);
        dims[a] =
            s > e ? 1 + static_cast<std::int64_t>(static_cast<std::uint64_t>(s - e - 1) / magnitude)
                  : 0;
      }
      first[a] = s;
      step[a] = steps[i];
    }
    Tensor t;
    t.elem_type = x.elem_type;
    t.dims = dims;
    const std::int64_t n = count(dims);
    if (n > kMaxFoldedElements) return std::nullopt;
    for (std::int64_t k = 0; k < n; ++k) {
      std::int64_t rest = k;
      std::int64_t index = 0;
      std::int64_t stride = 1;
      for (std::size_t i = dims.size(); i-- > 0;) {
        const std::int64_t c = rest % dims[i];
        rest /= dims[i];
        index += (first[i] + c * step[i]) * stride;
        stride *= x.dims[i];
      }
      t.values.push_back(x.values[static_cast<std::size_t>(index)]);
    }
    return t;
  }

  // A node that stays computed (it reads a tensor without values: an external-data buffer,
  // an activation) but takes a kept Shape or Size output whose value is known reads that value
  // from an int64 initializer instead, so that ONNX's inference sees a constant there: torch's
  // exporter slices position_ids[:, :Shape(input_ids)[1]] directly. Integer initializers are
  // never parameters.
  int feed_kept_values() {
    int fed = 0;
    for (auto& node : *graph_.mutable_node()) {
      // Nodes whose own value is known were folded or are kept on purpose.
      if (node.output_size() > 0 && known_.count(node.output(0)) != 0) continue;
      for (int i = 0; i < node.input_size(); ++i) {
        const std::string name = node.input(i);
        if (kept_.count(name) == 0) continue;
        const std::string constant = name + "__value";
        if (known_.count(constant) == 0) {
          onnx::TensorProto& init = *graph_.add_initializer();
          init.set_name(constant);
          fill(init, known_.at(name));
          known_[constant] = known_.at(name);
        }
        node.set_input(i, constant);
        ++fed;
      }
    }
    return fed;
  }

  // Turns `node` into a Constant holding `value`; its name and output stay.
  static void rewrite(onnx::NodeProto& node, const Tensor& value) {
    node.clear_input();
    node.clear_attribute();
    node.set_op_type("Constant");
    auto* a = node.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    fill(*a->mutable_t(), value);
  }

  static void fill(onnx::TensorProto& t, const Tensor& value) {
    t.set_data_type(value.elem_type);
    for (std::int64_t d : value.dims)
      t.add_dims(d);
    if (value.elem_type == onnx::TensorProto::INT64) {
      for (std::int64_t v : value.values)
        t.add_int64_data(v);
    } else if (value.elem_type == onnx::TensorProto::UINT32) {
      for (std::int64_t v : value.values)
        t.add_uint64_data(static_cast<std::uint64_t>(v));
    } else {
      for (std::int64_t v : value.values)
        t.add_int32_data(static_cast<std::int32_t>(v));
    }
  }

  onnx::GraphProto& graph_;
  const ShapeLookup& shape_of_;
  const KeptNode& on_kept_;
  Tensors known_;
  std::set<std::string> graph_outputs_;
  std::set<std::string> kept_;  // Shape, Size and graph outputs: known, left computed.
};

}  // namespace

std::optional<std::vector<std::int64_t>> integer_values(const onnx::TensorProto& tensor) {
  std::optional<Tensor> t = from_proto(tensor);
  if (!t) return std::nullopt;
  return std::move(t->values);
}

std::optional<std::vector<std::int64_t>> constant_values(const onnx::NodeProto& constant) {
  std::optional<Tensor> t = constant_value(constant);
  if (!t) return std::nullopt;
  return std::move(t->values);
}

int fold_shape_arithmetic(onnx::GraphProto& graph, const ShapeLookup& shape_of,
                          const KeptNode& on_kept) {
  return Folder(graph, shape_of, on_kept).run();
}

}  // namespace capcalc::onnx_import
