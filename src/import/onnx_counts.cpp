// The standard operators' count functions, shape functions and input checks, named in the
// rows of kRules (onnx_rules.cpp); onnxruntime's fused operators have theirs in onnx_fused.cpp.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "capcalc/error.hpp"

#include "checked.hpp"
#include "count_formulas.hpp"
#include "import/onnx_importer.hpp"
#include "import/onnx_rules.hpp"

namespace capcalc::onnx_import {

using formulas::kSigmoidFlops;
using formulas::kTanhFlops;

namespace {

// Convolutions, plain and transposed: counted by the native formula (count_formulas.hpp), as
// an implicit GEMM per group (src/ops/matrix.cpp's convolution says how).
CountResult convolution(const OnnxRule& rule, const NodeInputs& in, const Shape& out,
                        bool transposed) {
  const Operands& o = rule.operands;
  const Shape& x = in.shapes.at(static_cast<std::size_t>(o.x));
  const Shape& w = in.shapes.at(static_cast<std::size_t>(o.w));
  if (x.size() < 3 || w.size() != x.size()) {
    in.fail(fmt::format("node \"{}\": expected [N, C, ...] input and weight, got {} and {}",
                        in.name, shape_to_string(x), shape_to_string(w)));
  }
  const std::int64_t out_elements = element_count(out);
  const std::int64_t groups = attribute_int(in.node, "group", 1);
  // The shape pass refuses these with its own words (check_conv_operands); this guards the
  // divisions below where that pass did not run.
  if (groups < 1 || x[1] < 1 || (transposed ? w[1] : w[0]) < 1) {
    in.fail(
        fmt::format("node \"{}\": a convolution needs channels and at least one group, got "
                    "input {}, weight {}, group {}",
                    in.name, shape_to_string(x), shape_to_string(w), groups));
  }
  const std::int64_t out_channels = transposed ? checked_mul(w[1], groups) : w[0];
  const bool bias = has_input(in.node, o.bias);
  CountResult r;
  r.counts = formulas::conv_counts({element_count(x), out_elements, x[1], out_channels, groups,
                                    product(w, 2), bias, transposed});
  formulas::add_weighted_backward(r.counts, in.needs_grad);
  r.op = fmt::format("{}{}d", rule.name, x.size() - 2);
  const std::int64_t in_per_group = x[1] / groups;
  const std::int64_t out_per_group = out_channels / groups;
  const std::int64_t kernel = product(w, 2);
  r.gemm = transposed ? GemmView{element_count(x) / x[1], checked_mul(out_per_group, kernel),
                                 in_per_group, groups}
                      : GemmView{out_elements / out_channels, out_per_group,
                                 checked_mul(in_per_group, kernel), groups};
  return r;
}

// Labels of one einsum term; "..." expands to `ellipsis` labels "...k", counted from the right.
std::vector<std::string> einsum_labels(const std::string& term, std::size_t ellipsis) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      for (std::size_t e = ellipsis; e > 0; --e)
        labels.push_back(fmt::format("...{}", e));
      i += 2;
    } else {
      labels.emplace_back(1, term[i]);
    }
  }
  return labels;
}

// Why an einsum's terms do not fit its operands; nullopt when they do, with the size of every
// label of the left side and the rank "..." stands for.
std::optional<std::string> einsum_sizes(const std::string& lhs, const std::vector<Shape>& shapes,
                                        std::map<std::string, std::int64_t>& sizes,
                                        std::size_t& ellipsis_rank) {
  std::vector<std::string> terms;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size()) {
    return fmt::format("einsum \"{}\" has {} operands but the node has {} inputs", lhs,
                       terms.size(), shapes.size());
  }
  for (std::size_t t = 0; t < terms.size(); ++t) {
    const std::string& term = terms[t];
    const bool dots = term.find("...") != std::string::npos;
    const std::size_t named = term.size() - (dots ? 3 : 0);
    if (named > shapes[t].size() || (!dots && named != shapes[t].size())) {
      return fmt::format("einsum term \"{}\" does not fit {}", term, shape_to_string(shapes[t]));
    }
    const std::size_t extra = dots ? shapes[t].size() - named : 0;
    ellipsis_rank = std::max(ellipsis_rank, extra);
    const std::vector<std::string> labels = einsum_labels(term, extra);
    for (std::size_t a = 0; a < labels.size(); ++a) {
      const std::int64_t dim = shapes[t][a];
      const auto [it, fresh] = sizes.emplace(labels[a], dim);
      // An index is one size in every operand; 1 broadcasts.
      if (!fresh && it->second != dim && it->second != 1 && dim != 1) {
        return fmt::format("einsum index \"{}\" is {} in one operand but {} in term \"{}\"",
                           labels[a], it->second, dim, term);
      }
      it->second = std::max(it->second, dim);
    }
  }
  return std::nullopt;
}

std::string einsum_equation(const onnx::NodeProto& node) {
  std::string equation = attribute_string(node, "equation", "");
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  return equation;
}

// The size of every label of an einsum's left side; an error naming the node where its terms
// do not fit its operands.
std::map<std::string, std::int64_t> einsum_input_sizes(const NodeInputs& in) {
  const std::string equation = einsum_equation(in.node);
  std::map<std::string, std::int64_t> sizes;
  std::size_t ellipsis_rank = 0;
  if (const auto why =
          einsum_sizes(equation.substr(0, equation.find("->")), in.shapes, sizes, ellipsis_rank)) {
    in.fail(fmt::format("node \"{}\": {}", in.name, *why));
  }
  return sizes;
}

// ONNX LSTM, GRU and RNN (default activations). Per time step, direction and sequence of the
// batch: the gate products W·x and R·h (gates x hidden x (input + hidden) MACs), their sum,
// the biases (W's and R's) and the cell's `cell_flops` per hidden unit.
CountResult recurrent(const NodeInputs& in, const Shape& out, std::int64_t gates,
                      std::int64_t cell_flops) {
  const Shape& x = in.shapes.at(0);
  const Shape& w = in.shapes.at(1);
  const Shape& r = in.shapes.at(2);
  if (x.size() != 3 || w.size() != 3 || r.size() != 3 || r[2] <= 0 ||
      w[1] != checked_mul(gates, r[2]) || r[1] != w[1] || r[0] != w[0]) {
    in.fail(
        fmt::format("node \"{}\" ({}): expected X [seq, batch, input], W [dirs, {}·hidden, "
                    "input] and R [dirs, {}·hidden, hidden], got {}, {} and {}",
                    in.name, in.node.op_type(), gates, gates, shape_to_string(x),
                    shape_to_string(w), shape_to_string(r)));
  }
  const bool batch_first = attribute_int(in.node, "layout", 0) == 1;
  const std::int64_t seq = batch_first ? x[1] : x[0];
  const std::int64_t batch = batch_first ? x[0] : x[1];
  const std::int64_t input = x[2];
  const std::int64_t dirs = w[0];
  const std::int64_t hidden = r[2];
  const std::int64_t steps = checked_mul(seq, batch, dirs);
  const std::int64_t gate_width = checked_mul(gates, hidden);
  std::int64_t per_step = gate_width;  // W·x + R·h.
  if (has_input(in.node, 3)) per_step = checked_add(per_step, checked_mul(2, gate_width));
  per_step = checked_add(per_step, checked_mul(hidden, cell_flops));
  CountResult result;
  LayerCounts& c = result.counts;
  c.macs = checked_mul(steps, gate_width, checked_add(input, hidden));
  c.other_flops = checked_mul(steps, per_step);
  c.input_elements = in.activation_elements;
  c.weight_elements_read = in.constant_elements;
  c.output_elements = element_count(out);
  formulas::add_weighted_backward(c, in.needs_grad);
  return result;
}

}  // namespace

CountResult count_conv(const OnnxRule& rule, const NodeInputs& in, const Shape& out) {
  return convolution(rule, in, out, false);
}

CountResult count_conv_transpose(const OnnxRule& rule, const NodeInputs& in, const Shape& out) {
  return convolution(rule, in, out, true);
}

// Gemm: a dense layer when an operand is constant, else a product of activations.
CountResult count_gemm(const OnnxRule&, const NodeInputs& in, const Shape& out) {
  const Shape& a = in.shapes.at(0);
  const Shape& b = in.shapes.at(1);
  if (a.size() != 2 || b.size() != 2) {
    in.fail(fmt::format("node \"{}\": Gemm needs 2-D operands, got {} and {}", in.name,
                        shape_to_string(a), shape_to_string(b)));
  }
  const bool trans_a = attribute_int(in.node, "transA", 0) != 0;
  const bool trans_b = attribute_int(in.node, "transB", 0) != 0;
  const std::int64_t m = trans_a ? a[1] : a[0];
  const std::int64_t k = trans_a ? a[0] : a[1];
  const std::int64_t n = trans_b ? b[0] : b[1];
  const bool bias = in.node.input_size() > 2 && !in.node.input(2).empty();
  CountResult r;
  r.gemm = GemmView{m, n, k, 1};
  if (in.constant[0] || in.constant[1]) {
    r.counts = formulas::linear_counts(m, k, n, bias, false);
    formulas::add_weighted_backward(r.counts, in.needs_grad);
  } else {
    const std::int64_t out_elements = element_count(out);
    r.op = "matmul";
    r.counts = formulas::matmul_counts(1, m, n, k, in.activation_elements, out_elements,
                                       in.operands_needing_grad);
    if (bias) r.counts.other_flops = out_elements;
  }
  return r;
}

// MatMul and its quantised forms: x @ W is a dense layer (exporters add the bias as a separate
// Add), a product with another constant is counted as one, and a product of activations is a
// batched matmul.
CountResult count_matmul(const OnnxRule& rule, const NodeInputs& in, const Shape& out) {
  const Operands& o = rule.operands;
  const auto xa = static_cast<std::size_t>(o.x);
  const auto wb = static_cast<std::size_t>(o.w);
  Shape a = in.shapes.at(xa);
  Shape b = in.shapes.at(wb);
  std::int64_t constant_elements = in.constant_elements;
  if (o.packed) {
    // B holds [N, blocks, block bytes]; the product is with a K x N matrix.
    b = {attribute_int(in.node, "K", 0), attribute_int(in.node, "N", 0)};
    constant_elements = checked_mul(b[0], b[1]);
  }
  if (a.empty() || b.empty()) in.fail("MatMul of a scalar");
  const std::int64_t out_elements = element_count(out);
  const std::int64_t k = a.back();
  const std::int64_t m = a.size() >= 2 ? a[a.size() - 2] : 1;
  const std::int64_t n = b.size() >= 2 ? b.back() : 1;
  CountResult r;
  if (in.constant[wb] && b.size() == 2 && !in.constant[xa]) {
    r.op = "linear";
    const bool bias = has_input(in.node, o.bias);
    r.counts = formulas::linear_counts(element_count(a) / k, k, n, bias, false);
    formulas::add_weighted_backward(r.counts, in.needs_grad);
    // [..., K] x [K, N] is one product whatever the leading axes: M is their product.
    r.gemm = GemmView{element_count(a) / k, n, k, 1};
  } else if (in.constant[xa] || in.constant[wb]) {
    r.op = "linear";
    r.counts.macs = checked_mul(out_elements, k);
    r.counts.input_elements = in.activation_elements;
    r.counts.weight_elements_read = constant_elements;
    r.counts.output_elements = out_elements;
    formulas::add_weighted_backward(r.counts, in.needs_grad);
  } else {
    r.counts =
        formulas::matmul_counts(out_elements / checked_mul(m, n), m, n, k, in.activation_elements,
                                out_elements, in.operands_needing_grad);
    r.gemm = GemmView{m, n, k, out_elements / checked_mul(m, n)};
  }
  return r;
}

// MACs of an einsum: the product of the sizes of every index that appears (each output element
// sums over the contracted indices). "..." stands for the same leading axes in every operand.
// One operand: a view when it keeps every element, else a reduction.
CountResult count_einsum(const OnnxRule&, const NodeInputs& in, const Shape& out) {
  const std::map<std::string, std::int64_t> sizes = einsum_input_sizes(in);
  std::int64_t macs = 1;
  for (const auto& [label, size] : sizes)
    macs = checked_mul(macs, size);
  const std::int64_t out_elements = element_count(out);
  CountResult r;
  if (in.node.input_size() == 1) {
    if (element_count(in.shapes.at(0)) == out_elements) {
      r.view = true;
    } else {
      r.counts = formulas::elementwise_counts(in.activation_elements, out_elements, 0);
      r.counts.other_flops = element_count(in.shapes.at(0));
      r.counts.backward_other_flops = checked_mul(r.counts.other_flops, 2);
    }
  } else if (in.constant[0] || in.constant[1]) {
    r.counts.macs = macs;
    r.counts.input_elements = in.activation_elements;
    r.counts.weight_elements_read = in.constant_elements;
    r.counts.output_elements = out_elements;
    formulas::add_weighted_backward(r.counts, in.needs_grad);
  } else {
    r.counts = formulas::matmul_counts(macs, 1, 1, 1, in.activation_elements, out_elements,
                                       in.operands_needing_grad);
  }
  return r;
}

// `rule.flops` per output element (one more with the bias input), the constant inputs read.
CountResult count_elementwise(const OnnxRule& rule, const NodeInputs& in, const Shape& out) {
  CountResult r;
  r.counts =
      formulas::elementwise_counts(in.activation_elements, element_count(out),
                                   rule.flops + (has_input(in.node, rule.bias_slot) ? 1 : 0));
  r.counts.weight_elements_read = in.constant_elements;
  return r;
}

// inputs - 1 FLOPs per output element (NumPy broadcasting).
CountResult count_binary(const OnnxRule&, const NodeInputs& in, const Shape& out) {
  CountResult r;
  r.counts = formulas::elementwise_counts(in.activation_elements, element_count(out),
                                          std::max(1, in.node.input_size() - 1));
  r.counts.weight_elements_read = in.constant_elements;
  return r;
}

// One FLOP per input element, as global_avgpool.
CountResult count_reduce(const OnnxRule&, const NodeInputs& in, const Shape& out) {
  CountResult r;
  r.counts = formulas::elementwise_counts(in.activation_elements, element_count(out), 0);
  r.counts.other_flops = element_count(in.shapes.at(0));
  r.counts.backward_other_flops = checked_mul(r.counts.other_flops, 2);
  return r;
}

// Kernel elements per output element.
CountResult count_pool(const OnnxRule& rule, const NodeInputs& in, const Shape& out) {
  std::int64_t kernel = 1;
  for (std::int64_t k : attribute_ints(in.node, "kernel_shape"))
    kernel = checked_mul(kernel, k);
  CountResult r;
  r.counts = formulas::elementwise_counts(in.activation_elements, element_count(out), kernel);
  r.op = fmt::format("{}{}d", rule.name, in.shapes.at(0).size() - 2);
  return r;
}

// Reads and writes, no FLOPs (concat, pad, tile).
CountResult count_copy(const OnnxRule&, const NodeInputs& in, const Shape& out) {
  CountResult r;
  r.counts = formulas::elementwise_counts(in.activation_elements, element_count(out), 0);
  r.counts.weight_elements_read = in.constant_elements;
  return r;
}

CountResult count_view(const OnnxRule&, const NodeInputs&, const Shape&) {
  CountResult r;
  r.view = true;
  return r;
}

// Linear: 4 weights applied and summed (bilinear); cubic: 16 weights (4·4 mul, 15 add).
CountResult count_resize(const OnnxRule&, const NodeInputs& in, const Shape& out) {
  const std::string mode = attribute_string(in.node, "mode", "nearest");
  const std::int64_t flops = mode == "linear" || mode == "bilinear" ? formulas::kBilinearFlops
                             : mode == "cubic"                      ? 31
                                                                    : 0;
  CountResult r;
  r.counts = formulas::elementwise_counts(in.activation_elements, element_count(out), flops);
  return r;
}

// Gather from a constant table by activation ids is an embedding lookup: it reads one row per
// id (docs/model-format.md, `embedding`). Otherwise a view of an activation.
CountResult count_gather(const OnnxRule&, const NodeInputs& in, const Shape& out) {
  CountResult r;
  if (!(in.constant[0] && !in.constant[1])) {
    r.view = true;
    return r;
  }
  const std::int64_t out_elements = element_count(out);
  r.op = "embedding";
  r.counts.input_elements = in.activation_elements;
  r.counts.output_elements = out_elements;
  r.counts.weight_elements_read = out_elements;
  r.counts.backward_other_flops = out_elements;
  return r;
}

// Local response normalisation sums `size` squares per element and scales: 2·size + 3.
CountResult count_lrn(const OnnxRule&, const NodeInputs& in, const Shape& out) {
  const std::int64_t size = attribute_int(in.node, "size", 0);
  if (size <= 0) in.fail(fmt::format("node \"{}\" (LRN) needs a size", in.name));
  CountResult r;
  r.counts = formulas::elementwise_counts(in.activation_elements, element_count(out),
                                          checked_add(checked_mul(2, size), 3));
  return r;
}

// LSTM: 3 sigmoids, 2 tanh and 4 products/sums per hidden unit.
CountResult count_lstm(const OnnxRule&, const NodeInputs& in, const Shape& out) {
  return recurrent(in, out, 4, 3 * kSigmoidFlops + 2 * kTanhFlops + 4);
}

// GRU: 2 sigmoids, 1 tanh and 4.
CountResult count_gru(const OnnxRule&, const NodeInputs& in, const Shape& out) {
  return recurrent(in, out, 3, 2 * kSigmoidFlops + kTanhFlops + 4);
}

// RNN: 1 tanh.
CountResult count_rnn(const OnnxRule&, const NodeInputs& in, const Shape& out) {
  return recurrent(in, out, 1, kTanhFlops);
}

// MatMulNBits: [..., K] x [K, N].
std::vector<std::optional<Shape>> matmul_nbits_shapes(const onnx::NodeProto& node,
                                                      const KnownInputs& in) {
  if (in.empty() || !in[0]) return {std::nullopt};
  std::optional<Shape> shape = in[0];
  if (!shape->empty()) {
    shape->back() = attribute_int(node, "N", 0);
    if (shape->back() <= 0) shape.reset();
  }
  return {shape};
}

std::vector<std::optional<Shape>> einsum_shapes(const onnx::NodeProto& node,
                                                const KnownInputs& in) {
  return {einsum_output(node, in)};
}

// An einsum whose terms do not fit its operands, said before its output shape is looked for.
void check_einsum_inputs(const NodeInputs& in) {
  (void)einsum_input_sizes(in);
}

std::optional<Shape> einsum_output(const onnx::NodeProto& node, const KnownInputs& in) {
  std::vector<Shape> shapes;
  for (const std::optional<Shape>& shape : in) {
    if (!shape) return std::nullopt;
    shapes.push_back(*shape);
  }
  const std::string equation = einsum_equation(node);
  const std::size_t arrow = equation.find("->");
  if (arrow == std::string::npos) return std::nullopt;  // Implicit output: not supported.
  std::map<std::string, std::int64_t> sizes;
  std::size_t ellipsis_rank = 0;
  if (einsum_sizes(equation.substr(0, arrow), shapes, sizes, ellipsis_rank)) return std::nullopt;
  Shape out;
  for (const std::string& label : einsum_labels(equation.substr(arrow + 2), ellipsis_rank)) {
    const auto it = sizes.find(label);
    if (it == sizes.end()) return std::nullopt;
    out.push_back(it->second);
  }
  return out;
}

}  // namespace capcalc::onnx_import
