// The ONNX rows' operand checks (onnx_rules.hpp): what ONNX's shape inference checks but, run
// leniently, forgets once an output shape is declared in the file, and what it never checks.

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "capcalc/error.hpp"

#include "checked.hpp"
#include "import/onnx_importer.hpp"
#include "import/onnx_rules.hpp"

namespace capcalc::onnx_import {

// Operand checks (the rows' check_operands): the rules that ONNX's inference checks but, run
// leniently, forgets once an output shape is declared in the file (the declared shape was then
// taken as it stood), and those it never checks.

void OperandShapes::fail(const std::string& message) const {
  bad(message);
  throw std::logic_error("OperandShapes::bad returned");  // bad throws capcalc::Error.
}

namespace {

// What a convolution and its transpose both need: at least one group, input channels, and a
// weight with output channels (the GEMM view divides by each of them).
void check_conv_channels(const OperandShapes& in, const Shape& x, const Shape& w,
                         std::int64_t group, std::int64_t out_channels) {
  if (group < 1) in.fail(fmt::format("group {} must be at least 1", group));
  if (x[1] < 1) in.fail(fmt::format("the input {} has no channels", format_shape(x)));
  if (out_channels < 1) {
    in.fail(fmt::format("the weight {} has no output channels", format_shape(w)));
  }
}

// A convolution's bias B is one value per output channel.
void check_conv_bias(const OperandShapes& in, std::int64_t out_channels) {
  const std::optional<Shape>& c = in.input(2);
  if (c && (c->size() != 1 || (*c)[0] != out_channels)) {
    in.fail(fmt::format("the bias {} is not one value per output channel ({})", format_shape(*c),
                        out_channels));
  }
}

}  // namespace

void check_conv_operands(const OperandShapes& in) {
  const std::optional<Shape>& a = in.input(0);
  const std::optional<Shape>& b = in.input(1);
  if (!a || !b || a->size() < 3 || b->size() != a->size()) return;
  const std::int64_t group = attribute_int(in.node, "group", 1);
  check_conv_channels(in, *a, *b, group, (*b)[0]);
  const std::int64_t channels = (*a)[1];
  if ((*b)[1] > channels / group || (*b)[1] * group != channels) {
    in.fail(
        fmt::format("the input has {} channels, but the weight takes {} per group x {} "
                    "group{}",
                    channels, (*b)[1], group, group == 1 ? "" : "s"));
  }
  if ((*b)[0] % group != 0) {
    in.fail(fmt::format("{} output channels do not split into {} groups", (*b)[0], group));
  }
  check_conv_bias(in, (*b)[0]);
}

// ConvTranspose: the weight is [C, M / group, k...], so its first axis takes the input's channels.
void check_conv_transpose_operands(const OperandShapes& in) {
  const std::optional<Shape>& a = in.input(0);
  const std::optional<Shape>& b = in.input(1);
  if (!a || !b || a->size() < 3 || b->size() != a->size()) return;
  const std::int64_t group = attribute_int(in.node, "group", 1);
  check_conv_channels(in, *a, *b, group, (*b)[1]);
  if ((*b)[0] != (*a)[1]) {
    in.fail(fmt::format("the input has {} channels, but the weight {} takes {}", (*a)[1],
                        format_shape(*b), (*b)[0]));
  }
  if ((*a)[1] % group != 0) {
    in.fail(fmt::format("{} input channels do not split into {} groups", (*a)[1], group));
  }
  std::int64_t out_channels = 0;
  if (!__builtin_mul_overflow((*b)[1], group, &out_channels)) check_conv_bias(in, out_channels);
}

void check_gemm_operands(const OperandShapes& in) {
  const std::optional<Shape>& a = in.input(0);
  const std::optional<Shape>& b = in.input(1);
  if (!a || !b || a->size() != 2 || b->size() != 2) return;
  const bool trans_b = attribute_int(in.node, "transB", 0) != 0;
  const std::int64_t k_a = attribute_int(in.node, "transA", 0) != 0 ? (*a)[0] : (*a)[1];
  const std::int64_t k_b = trans_b ? (*b)[1] : (*b)[0];
  if (k_a != k_b) {
    in.fail(fmt::format("A gives K = {} but B takes K = {} (A {}, B {}{})", k_a, k_b,
                        format_shape(*a), format_shape(*b), trans_b ? ", transB" : ""));
  }
  // C broadcasts one way to [M, N]: each of its trailing dims is 1 or the output's.
  const std::optional<Shape>& c = in.input(2);
  if (!c) return;
  const Shape out = {attribute_int(in.node, "transA", 0) != 0 ? (*a)[1] : (*a)[0],
                     trans_b ? (*b)[0] : (*b)[1]};
  bool fits = c->size() <= 2;
  for (std::size_t i = 0; fits && i < c->size(); ++i) {
    const std::int64_t dim = (*c)[c->size() - 1 - i];
    fits = dim == 1 || dim == out[1 - i];
  }
  if (!fits) {
    in.fail(fmt::format("C {} does not broadcast to the output {}", format_shape(*c),
                        format_shape(out)));
  }
}

void check_matmul_operands(const OperandShapes& in) {
  const std::optional<Shape>& a = in.input(0);
  const std::optional<Shape>& b = in.input(1);
  if (!a || !b || a->empty() || b->empty()) return;
  const std::int64_t k_a = a->back();
  const std::int64_t k_b = b->size() == 1 ? (*b)[0] : (*b)[b->size() - 2];
  if (k_a != k_b) {
    in.fail(fmt::format("{} x {}: the inner dimensions {} and {} differ", format_shape(*a),
                        format_shape(*b), k_a, k_b));
  }
}

// Softmax, LogSoftmax, Hardmax: the axis is one of the input's.
void check_axis_operand(const OperandShapes& in) {
  const std::optional<Shape>& a = in.input(0);
  if (!a) return;
  const auto rank = static_cast<std::int64_t>(a->size());
  const std::int64_t axis = attribute_int(in.node, "axis", -1);
  if (axis < -rank || axis >= rank) {
    in.fail(fmt::format("axis {} is out of range for an input of rank {} ({})", axis, rank,
                        format_shape(*a)));
  }
}

// Transpose: perm is a permutation of the input's axes.
void check_perm_operand(const OperandShapes& in) {
  const std::optional<Shape>& a = in.input(0);
  const std::vector<std::int64_t> perm = attribute_ints(in.node, "perm");
  if (!a || perm.empty()) return;
  std::vector<bool> seen(a->size(), false);
  bool valid = perm.size() == a->size();
  for (std::int64_t p : perm) {
    if (!valid) break;
    valid =
        p >= 0 && p < static_cast<std::int64_t>(seen.size()) && !seen[static_cast<std::size_t>(p)];
    if (valid) seen[static_cast<std::size_t>(p)] = true;
  }
  if (!valid) {
    in.fail(fmt::format("perm [{}] is not a permutation of the {} axes of its input {}",
                        fmt::join(perm, ", "), a->size(), format_shape(*a)));
  }
}

// Every operand's shape, or nullopt unless all are known (ONNX's inference had its say then).
std::optional<std::vector<Shape> > all_known(const OperandShapes& in) {
  std::vector<Shape> operands;
  for (const std::optional<Shape>& shape : in.inputs) {
    if (!shape) return std::nullopt;
    operands.push_back(*shape);
  }
  return operands;
}

// Elementwise operators with NumPy broadcasting.
void check_broadcast_operands(const OperandShapes& in) {
  if (in.inputs.size() < 2) return;
  const std::optional<std::vector<Shape> > operands = all_known(in);
  if (!operands) return;
  Shape out;
  for (const Shape& s : *operands)
    out.resize(std::max(out.size(), s.size()), 1);
  for (const Shape& s : *operands) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      std::int64_t& o = out[out.size() - s.size() + i];
      const std::int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o != 1) {
        std::vector<std::string> listed;
        for (const Shape& each : *operands)
          listed.push_back(format_shape(each));
        in.fail(fmt::format("operands {} do not broadcast", fmt::join(listed, " and ")));
      }
      o = d;
    }
  }
}

// Concat: the axis in range, the inputs equal off it.
void check_concat_operands(const OperandShapes& in) {
  if (in.inputs.empty()) return;
  const std::optional<std::vector<Shape> > known = all_known(in);
  if (!known) return;
  const std::vector<Shape>& operands = *known;
  const auto rank = static_cast<std::int64_t>(operands.front().size());
  const std::int64_t axis = attribute_int(in.node, "axis", 0);
  if (axis < -rank || axis >= rank) {
    in.fail(fmt::format("axis {} is out of range for inputs of rank {}", axis, rank));
  }
  const auto along = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  for (std::size_t k = 1; k < operands.size(); ++k) {
    bool same = operands[k].size() == operands.front().size();
    for (std::size_t i = 0; same && i < operands[k].size(); ++i)
      same = i == along || operands[k][i] == operands.front()[i];
    if (!same) {
      in.fail(fmt::format("input {} {} does not match input 0 {} off axis {}", k,
                          format_shape(operands[k]), format_shape(operands.front()), axis));
    }
  }
}

// A Reshape whose output ONNX could not infer: say why, from its target when it is a
// constant (ONNX's own inference gives up silently on these).
void check_reshape_target(const OperandShapes& operands, const Shape& in) {
  if (operands.node.input_size() < 2) return;
  const std::optional<std::vector<std::int64_t> > target =
      operands.constant_ints(operands.node.input(1));
  if (!target) return;
  const bool allowzero = attribute_int(operands.node, "allowzero", 0) != 0;
  int minus_ones = 0;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < target->size(); ++i) {
    std::int64_t d = (*target)[i];
    if (d == 0 && !allowzero) {
      if (i >= in.size()) {
        operands.fail(
            fmt::format("entry {} of the target shape {} is 0 (copy the input's dim), but the "
                        "input {} has only {} dims",
                        i, format_shape(*target), format_shape(in), in.size()));
      }
      d = in[i];
    }
    if (d == -1) {
      if (++minus_ones > 1) {
        operands.fail(
            fmt::format("the target shape {} has more than one -1: only one entry can be "
                        "inferred",
                        format_shape(*target)));
      }
    } else if (d < 0) {
      operands.fail(fmt::format("entry {} of the target shape {} is {}: expected a size, 0 or -1",
                                i, format_shape(*target), d));
    } else if (__builtin_mul_overflow(known, d, &known)) {
      return;
    }
  }
  const std::int64_t elements = element_count(in);
  if (minus_ones == 1 && (known == 0 || elements % known != 0)) {
    operands.fail(
        fmt::format("the -1 in the target shape {} cannot be inferred: {} ({} elements) does "
                    "not divide by the other entries' {}",
                    format_shape(*target), format_shape(in), elements, known));
  }
}

// Reshape: a target that fits the input, or an output of as many elements.
void check_reshape_operands(const OperandShapes& in) {
  const std::optional<Shape>& a = in.input(0);
  if (!a || in.node.output_size() == 0) return;
  if (!in.output) {
    check_reshape_target(in, *a);
    return;
  }
  const std::int64_t in_elements = element_count(*a);
  const std::int64_t out_elements = element_count(*in.output);
  if (in_elements != out_elements) {
    in.fail(fmt::format("reshapes {} ({} elements) to {} ({} elements)", format_shape(*a),
                        in_elements, format_shape(*in.output), out_elements));
  }
}

}  // namespace capcalc::onnx_import
