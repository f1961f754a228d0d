#include "import/onnx_rules.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "capcalc/error.hpp"

#include "checked.hpp"
#include "count_formulas.hpp"
#include "import/onnx_importer.hpp"

namespace capcalc::onnx_import {

void NodeInputs::fail(const std::string& message) const {
  throw Error({file, where, 0, 0}, message);
}

LayerTraits view_traits() {
  return {OpClass::kView, Fusion::kNever, std::nullopt};
}

namespace {

using formulas::kBatchNormFlops;
using formulas::kGeluFlops;
using formulas::kReluFlops;
using formulas::kSigmoidFlops;
using formulas::kTanhFlops;

// ---------------------------------------------------------------------------------------------
// Count functions

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

// MACs of an einsum: the product of the sizes of every index that appears (each output element
// sums over the contracted indices). "..." stands for the same leading axes in every operand.
// One operand: a view when it keeps every element, else a reduction.
CountResult count_einsum(const OnnxRule&, const NodeInputs& in, const Shape& out) {
  const std::string equation = einsum_equation(in.node);
  std::map<std::string, std::int64_t> sizes;
  std::size_t ellipsis_rank = 0;
  if (const auto why =
          einsum_sizes(equation.substr(0, equation.find("->")), in.shapes, sizes, ellipsis_rank)) {
    in.fail(fmt::format("node \"{}\": {}", in.name, *why));
  }
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
  const std::string equation = einsum_equation(in.node);
  std::map<std::string, std::int64_t> sizes;
  std::size_t ellipsis_rank = 0;
  if (const auto why =
          einsum_sizes(equation.substr(0, equation.find("->")), in.shapes, sizes, ellipsis_rank)) {
    in.fail(fmt::format("node \"{}\": {}", in.name, *why));
  }
}

// ---------------------------------------------------------------------------------------------
// Families of rows: the count function, traits and parameter inputs that their operators share.

constexpr OnnxRule layer(std::string_view op_type, std::string_view name, CountFn count,
                         OpClass op_class, Fusion fusion, std::uint64_t params,
                         std::int64_t flops = 0) {
  OnnxRule rule;
  rule.op_type = op_type;
  rule.name = name;
  rule.count = count;
  rule.op_class = op_class;
  rule.fusion = fusion;
  rule.param_slots = params;
  rule.flops = flops;
  return rule;
}

// Products: convolutions, GEMMs, recurrent cells. Never fused into their neighbours.
constexpr OnnxRule matrix(std::string_view op_type, std::string_view name, CountFn count) {
  return layer(op_type, name, count, OpClass::kMatrix, Fusion::kNever, kEverySlot);
}

// Every elementwise operator and reduction fuses under a compiler (onnxruntime's and TensorRT's
// fusions of LayerNorm, GELU and bias chains are built of them).
constexpr OnnxRule unary(std::string_view op_type, std::string_view name, std::int64_t flops) {
  return layer(op_type, name, count_elementwise, OpClass::kElementwise, Fusion::kAlways, 0, flops);
}

// Elementwise, its constant inputs parameters (a bias).
constexpr OnnxRule biased(std::string_view op_type, std::string_view name, std::int64_t flops) {
  return layer(op_type, name, count_elementwise, OpClass::kElementwise, Fusion::kAlways, kEverySlot,
               flops);
}

constexpr OnnxRule binary(std::string_view op_type, std::string_view name) {
  return layer(op_type, name, count_binary, OpClass::kElementwise, Fusion::kAlways, kEverySlot)
      .operand_check(check_broadcast_operands);
}

constexpr OnnxRule norm(std::string_view op_type, std::string_view name, std::int64_t flops,
                        Fusion fusion = Fusion::kAlways) {
  return layer(op_type, name, count_elementwise, OpClass::kNormalization, fusion, kEverySlot,
               flops);
}

constexpr OnnxRule softmax(std::string_view op_type) {
  return layer(op_type, "softmax", count_elementwise, OpClass::kNormalization, Fusion::kAlways, 0,
               formulas::kSoftmaxFlops)
      .operand_check(check_axis_operand);
}

constexpr OnnxRule reduce(std::string_view op_type, std::string_view name) {
  return layer(op_type, name, count_reduce, OpClass::kPooling, Fusion::kAlways, 0);
}

constexpr OnnxRule pool(std::string_view op_type, std::string_view name, CountFn count) {
  return layer(op_type, name, count, OpClass::kPooling, Fusion::kNever, kEverySlot);
}

constexpr OnnxRule copy(std::string_view op_type, std::string_view name) {
  return layer(op_type, name, count_copy, OpClass::kDataMovement, Fusion::kNever, 0);
}

constexpr OnnxRule view(std::string_view op_type, std::string_view name) {
  return layer(op_type, name, count_view, OpClass::kView, Fusion::kNever, 0);
}

constexpr OnnxRule fused_attention(std::string_view op_type, std::uint64_t params) {
  return layer(op_type, "attention", count_attention, OpClass::kAttention, Fusion::kNever, params)
      .input_check(check_attention_inputs)
      .shapes(attention_output_shapes);
}

constexpr OnnxRule no_layer(std::string_view op_type, std::string_view name, Role role) {
  OnnxRule rule = layer(op_type, name, nullptr, OpClass::kView, Fusion::kNever, kEverySlot);
  rule.role = role;
  return rule;
}

// ONNX op_type -> counting rule. Non-native elementwise costs: Clip does a min and a max (2),
// HardSigmoid max(0, min(1, a·x + b)) (4), HardSwish that and a multiply (5); Erf, Elu,
// Softplus and other transcendental functions count as tanh (5); Exp, Log, Sqrt,
// Reciprocal, Neg, Abs and the like one FLOP each.
const std::vector<OnnxRule> kRules = {
    matrix("Conv", "conv", count_conv).operand_check(check_conv_operands),
    matrix("ConvTranspose", "conv_transpose", count_conv_transpose)
        .operand_check(check_conv_transpose_operands),
    matrix("Gemm", "linear", count_gemm).operand_check(check_gemm_operands),
    matrix("MatMul", "matmul", count_matmul).operand_check(check_matmul_operands),
    // Quantised forms: the same MACs, their operands at other slots.
    matrix("QLinearConv", "conv", count_conv).quantised(0, 3, 8),
    matrix("ConvInteger", "conv", count_conv).quantised(0, 1, -1),
    matrix("QLinearMatMul", "matmul", count_matmul).quantised(0, 3, -1),
    matrix("MatMulInteger", "matmul", count_matmul).quantised(0, 1, -1),
    // com.microsoft: int4/int8 weight-only blocks.
    matrix("MatMulNBits", "matmul", count_matmul)
        .quantised(0, 1, 5, /*packed=*/true)
        .shapes(matmul_nbits_shapes),
    // QuantizeLinear: divide, round, add the zero point, saturate (4); DequantizeLinear:
    // subtract the zero point, multiply (2); DynamicQuantizeLinear finds min and max first (6).
    unary("QuantizeLinear", "quantize", 4),
    unary("DequantizeLinear", "dequantize", 2),
    unary("DynamicQuantizeLinear", "quantize", 6),
    matrix("Einsum", "einsum", count_einsum)
        .passthrough()
        .shapes(einsum_shapes)
        .input_check(check_einsum_inputs),
    // Recurrent: W, R, B and the peepholes P are parameters.
    matrix("LSTM", "lstm", count_lstm).params(slots({1, 2, 3, 7})),
    matrix("GRU", "gru", count_gru).params(slots({1, 2, 3, 7})),
    matrix("RNN", "rnn", count_rnn).params(slots({1, 2, 3, 7})),
    // Batch normalisation folds into the convolution before it at inference; its scale and
    // bias are parameters, its mean and variance buffers.
    norm("BatchNormalization", "batchnorm", kBatchNormFlops, Fusion::kInferenceOnly)
        .params(slots({1, 2})),
    norm("LayerNormalization", "layernorm", formulas::kLayerNormFlops)
        .operand_check(check_axis_operand),
    norm("SimplifiedLayerNormalization", "rmsnorm", formulas::kRmsNormFlops).passthrough(),
    norm("InstanceNormalization", "groupnorm", formulas::kGroupNormFlops, Fusion::kNever),
    norm("GroupNormalization", "groupnorm", formulas::kGroupNormFlops, Fusion::kNever)
        .passthrough(),
    unary("Relu", "relu", kReluFlops),
    unary("LeakyRelu", "leakyrelu", kReluFlops),
    unary("Clip", "clip", 2),
    unary("Sigmoid", "sigmoid", kSigmoidFlops),
    unary("HardSigmoid", "hardsigmoid", 4),
    unary("HardSwish", "hardswish", 5),
    unary("Tanh", "tanh", kTanhFlops),
    unary("Erf", "erf", kTanhFlops),
    unary("Gelu", "gelu", kGeluFlops).passthrough(),
    // onnxruntime's fused forms (com.microsoft), as its transformer optimizer and
    // onnxruntime-genai write them: a bias added first (1 more FLOP), a skip connection added
    // before a norm (1, and 1 more for its bias), QuickGelu x·sigmoid(1.702·x) (6), rotary
    // embeddings x·cos + rotate(x)·sin (3; the cos and sin caches are not parameters).
    biased("FastGelu", "gelu", kGeluFlops).passthrough().bias(1),
    biased("BiasGelu", "gelu", kGeluFlops + 1).passthrough(),
    unary("QuickGelu", "gelu", kSigmoidFlops + 2).passthrough(),
    binary("BiasAdd", "add").passthrough().operand_check(nullptr),
    norm("SkipLayerNormalization", "layernorm", formulas::kLayerNormFlops + 1)
        .passthrough()
        .bias(4)
        .shapes(skip_norm_output_shapes),
    norm("SkipSimplifiedLayerNormalization", "rmsnorm", formulas::kRmsNormFlops + 1)
        .passthrough()
        .bias(3)
        .shapes(skip_norm_output_shapes),
    unary("RotaryEmbedding", "rotary", 3).passthrough(),
    // Attention's packed weights and bias, MultiHeadAttention's bias; not masks, caches,
    // lengths or GroupQueryAttention's cos and sin caches.
    fused_attention("Attention", slots({1, 2})),
    fused_attention("MultiHeadAttention", slots({3})),
    fused_attention("GroupQueryAttention", 0),
    // Word, position, segment tables; gamma, beta.
    layer("EmbedLayerNormalization", "embedding", count_embed_layer_norm, OpClass::kDataMovement,
          Fusion::kNever, slots({2, 3, 4, 5, 6}))
        .shapes(embed_layer_norm_output_shapes),
    unary("Trilu", "trilu", 1),
    // Older CNNs' and vision models' operators: LRN sums `size` squares per element and scales
    // (2·size + 3), GridSample samples bilinearly (7), MeanVarianceNormalization normalises as
    // LayerNorm does (8), CELU is transcendental (5), ThresholdedRelu and the predicates 1,
    // Shrink 2; Hardmax and TopK compare every input element; scatters and OneHot copy.
    layer("LRN", "lrn", count_lrn, OpClass::kNormalization, Fusion::kNever, kEverySlot),
    unary("GridSample", "grid_sample", formulas::kBilinearFlops),
    unary("MeanVarianceNormalization", "mvn", formulas::kLayerNormFlops),
    unary("Celu", "celu", kTanhFlops),
    unary("ThresholdedRelu", "thresholdedrelu", kReluFlops),
    unary("Shrink", "shrink", 2),
    unary("IsNaN", "isnan", 1),
    unary("IsInf", "isinf", 1),
    binary("Xor", "xor"),
    binary("BitShift", "bitshift"),
    reduce("Hardmax", "hardmax").operand_check(check_axis_operand),
    reduce("TopK", "topk"),
    copy("ScatterND", "scatter"),
    copy("ScatterElements", "scatter"),
    copy("Scatter", "scatter"),
    copy("OneHot", "onehot"),
    unary("Elu", "elu", kTanhFlops),
    unary("Selu", "selu", kTanhFlops),
    unary("Softplus", "softplus", kTanhFlops),
    unary("Mish", "mish", 2 * kTanhFlops).passthrough(),
    unary("Exp", "exp", 1),
    unary("Log", "log", 1),
    unary("Sqrt", "sqrt", 1),
    unary("Reciprocal", "reciprocal", 1),
    unary("Neg", "neg", 1),
    unary("Abs", "abs", 1),
    unary("Floor", "floor", 1),
    unary("Ceil", "ceil", 1),
    unary("Round", "round", 1),
    unary("Sin", "sin", 1),
    unary("Cos", "cos", 1),
    unary("Not", "not", 1),
    unary("Sign", "sign", 1),
    binary("Add", "add"),
    binary("Sub", "sub"),
    binary("Mul", "mul"),
    binary("Div", "div"),
    binary("Pow", "pow"),
    binary("Max", "max"),
    binary("Min", "min"),
    binary("Sum", "add"),
    binary("Mean", "mean"),
    binary("Mod", "mod"),
    binary("PRelu", "prelu").operand_check(nullptr),  // Broadcasts the slope to X only.
    binary("Where", "where"),
    binary("Equal", "equal"),
    binary("Less", "less"),
    binary("LessOrEqual", "lessorequal"),
    binary("Greater", "greater"),
    binary("GreaterOrEqual", "greaterorequal"),
    binary("And", "and"),
    binary("Or", "or"),
    softmax("Softmax"),
    softmax("LogSoftmax"),
    reduce("ReduceMean", "reducemean"),
    reduce("ReduceSum", "reducesum"),
    reduce("ReduceMax", "reducemax"),
    reduce("ReduceMin", "reducemin"),
    reduce("ReduceProd", "reduceprod"),
    reduce("ReduceL1", "reducel1"),
    reduce("ReduceL2", "reducel2"),
    reduce("ReduceSumSquare", "reducesumsquare"),
    reduce("ReduceLogSumExp", "reducelogsumexp"),
    reduce("ArgMax", "argmax"),
    reduce("ArgMin", "argmin"),
    reduce("CumSum", "cumsum"),
    pool("MaxPool", "maxpool", count_pool),
    pool("AveragePool", "avgpool", count_pool),
    pool("LpPool", "lppool", count_pool),
    pool("GlobalAveragePool", "global_avgpool", count_reduce),
    pool("GlobalMaxPool", "global_maxpool", count_reduce),
    copy("Concat", "concat")
        .params(kEverySlot)
        .operand_check(check_concat_operands),  // A learned token concatenated (ViT).
    copy("Pad", "pad"),
    copy("Tile", "tile"),
    view("Split", "split"),
    view("Slice", "slice"),
    layer("Gather", "gather", count_gather, OpClass::kDataMovement, Fusion::kNever, kEverySlot),
    view("GatherElements", "gather"),
    view("GatherND", "gather"),
    view("Reshape", "reshape").operand_check(check_reshape_operands),
    view("Flatten", "flatten"),
    view("Transpose", "transpose").operand_check(check_perm_operand),
    view("Squeeze", "squeeze"),
    view("Unsqueeze", "unsqueeze"),
    view("Expand", "expand"),
    view("Identity", "identity"),
    view("Dropout", "dropout"),
    view("Cast", "cast"),
    view("CastLike", "cast"),
    view("DepthToSpace", "depthtospace"),
    view("SpaceToDepth", "spacetodepth"),
    layer("Resize", "upsample", count_resize, OpClass::kDataMovement, Fusion::kNever, 0),
    layer("Upsample", "upsample", count_resize, OpClass::kDataMovement, Fusion::kNever, 0),
    no_layer("Shape", "shape", Role::kMeta),
    no_layer("Size", "size", Role::kMeta),
    no_layer("Constant", "constant", Role::kConstant),
    no_layer("ConstantOfShape", "constantofshape", Role::kConstant),
    no_layer("Range", "range", Role::kConstant),
    no_layer("EyeLike", "eyelike", Role::kConstant),
};

}  // namespace

const OnnxRule* find_rule(const onnx::NodeProto& node) {
  const std::string& domain = node.domain();
  if (!domain.empty() && domain != "ai.onnx" && domain != "com.microsoft") return nullptr;
  for (const OnnxRule& rule : kRules) {
    if (rule.op_type == node.op_type()) return &rule;
  }
  return nullptr;
}

const std::vector<OnnxRule>& onnx_rules() {
  return kRules;
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
