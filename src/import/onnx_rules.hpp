// The ONNX operator table: one row per op_type capcalc counts, carrying everything the importer
// needs to know about it: its count function, its traits for the performance model, which
// inputs hold parameters, where its operands sit, and how to find its output shapes where
// ONNX's inference cannot.
//
// Adding an operator is one row in kRules (onnx_rules.cpp), with a count function from there
// (or a new one beside them), and a test in tests/onnx_test.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

namespace capcalc::onnx_import {

/// What a count function reads of one node: its inputs as the importer resolved them.
struct NodeInputs {
  const onnx::NodeProto& node;
  const std::vector<Shape>& shapes;   ///< Per input slot; [] where absent or metadata.
  const std::vector<bool>& constant;  ///< Per input slot: not an activation.
  std::int64_t activation_elements;   ///< Summed over the activation inputs.
  std::int64_t constant_elements;     ///< Summed over the constant (non-metadata) inputs.
  bool needs_grad;                    ///< Some activation input needs its gradient.
  int operands_needing_grad;          ///< How many activation inputs need their gradients.
  const CountOptions& counting;
  const std::string& file;
  const std::string& name;   ///< The layer's name, for messages.
  const std::string& where;  ///< The node's JSON pointer, for messages.

  /// Throws capcalc::Error at the node.
  [[noreturn]] void fail(const std::string& message) const;
};

/// A count function's answer.
struct CountResult {
  LayerCounts counts;
  std::string op;                ///< The layer's op; the row's name when empty.
  bool view = false;             ///< Costs nothing: a view layer.
  std::optional<GemmView> gemm;  ///< The product's GEMM shape, where it has one.
};

struct OnnxRule;

/// Counts one node of the row's operator; `out` is the shape of its first named output.
using CountFn = CountResult (*)(const OnnxRule& rule, const NodeInputs& in, const Shape& out);

/// Checks a node's inputs before its output shape is read (a message that says more than
/// "could not infer the shape"); throws through in.fail.
using CheckFn = void (*)(const NodeInputs& in);

/// The input shapes a shape function sees: nullopt where not (completely) known.
using KnownInputs = std::vector<std::optional<Shape>>;

/// What an operand check reads of a node: the shapes that ONNX's inference found.
struct OperandShapes {
  const onnx::NodeProto& node;
  const KnownInputs& inputs;
  std::optional<Shape> output;  ///< Output 0's, when known.
  /// The values of an integer tensor known at import (a Reshape's target).
  std::function<std::optional<std::vector<std::int64_t>>(const std::string&)> constant_ints;
  std::function<void(const std::string&)> bad;  ///< Throws capcalc::Error at the node.

  const std::optional<Shape>& input(std::size_t slot) const {
    static const std::optional<Shape> kNone;
    return slot < inputs.size() ? inputs[slot] : kNone;
  }
  [[noreturn]] void fail(const std::string& message) const;
};

/// Checks that a node's operands go together, on the shapes ONNX's inference found (run leniently,
/// it passes over operands that do not); throws through in.fail.
using OperandCheckFn = void (*)(const OperandShapes& in);

/// Output shapes where ONNX's inference has none (no schema, or ONNX 1.12's is partial):
/// one entry per output, nullopt where not known.
using ShapesFn = std::vector<std::optional<Shape>> (*)(const onnx::NodeProto& node,
                                                       const KnownInputs& in);

/// Where a convolution's or matrix product's operands sit: its activation (or first operand),
/// its weight (or second operand) and its bias (-1: none). The quantised forms put scales and
/// zero points between them, which are not parameters; a packed weight (MatMulNBits) holds
/// K x N weights (attributes K and N) in blocks of bytes.
struct Operands {
  int x = 0;
  int w = 1;
  int bias = 2;
  bool quantised = false;
  bool packed = false;
};

/// How the importer treats the operator's outputs.
enum class Role {
  kLayer,     ///< A layer, counted by the row's count function.
  kMeta,      ///< Shape, Size: metadata that only feeds shape arithmetic, no layer.
  kConstant,  ///< Constant, ConstantOfShape, Range: folded, no layer.
};

/// Every input slot holds parameters.
inline constexpr std::uint64_t kEverySlot = ~std::uint64_t{0};

/// The bit set of the given input slots (each below 64).
constexpr std::uint64_t slots(std::initializer_list<int> list) {
  std::uint64_t bits = 0;
  for (int slot : list)
    bits |= std::uint64_t{1} << slot;
  return bits;
}

/// One row of the operator table. Rows are made with the family functions in onnx_rules.cpp
/// (unary, binary, matrix...) and adjusted with the modifiers below.
struct OnnxRule {
  std::string_view op_type;
  std::string_view name;  ///< The layer's op: the native operator's name where there is one.
  CountFn count = nullptr;
  OpClass op_class = OpClass::kView;
  Fusion fusion = Fusion::kNever;
  std::int64_t flops = 0;  ///< Per output element, for the elementwise count functions.
  /// Inputs that count as the layer's parameters when constant (running statistics, shapes,
  /// axes, bounds and scales do not): a bit per slot.
  std::uint64_t param_slots = kEverySlot;
  Operands operands{};
  int bias_slot = -1;              ///< An optional input that, when given, adds 1 FLOP per element.
  bool shape_passthrough = false;  ///< Output shape = input shape, for ops ONNX 1.12 lacks.
  ShapesFn output_shapes = nullptr;         ///< Where ONNX's inference cannot find them.
  CheckFn check_inputs = nullptr;           ///< Run before the output shape is read.
  OperandCheckFn check_operands = nullptr;  ///< Run on every node (folded ones too), first.
  Role role = Role::kLayer;

  LayerTraits traits() const { return {op_class, fusion, std::nullopt}; }
  bool is_param_slot(int slot) const {
    return param_slots == kEverySlot || (slot >= 0 && slot < 64 && ((param_slots >> slot) & 1U));
  }

  constexpr OnnxRule passthrough() const {
    OnnxRule r = *this;
    r.shape_passthrough = true;
    return r;
  }
  constexpr OnnxRule params(std::uint64_t bits) const {
    OnnxRule r = *this;
    r.param_slots = bits;
    return r;
  }
  constexpr OnnxRule bias(int slot) const {
    OnnxRule r = *this;
    r.bias_slot = slot;
    return r;
  }
  /// Quantised operands: the parameters are the operands themselves, not scales or zero points.
  constexpr OnnxRule quantised(int x, int w, int bias_at, bool packed = false) const {
    OnnxRule r = *this;
    r.operands = {x, w, bias_at, true, packed};
    r.param_slots = 0;
    for (int slot : {x, w, bias_at}) {
      if (slot >= 0) r.param_slots |= std::uint64_t{1} << slot;
    }
    return r;
  }
  constexpr OnnxRule shapes(ShapesFn fn) const {
    OnnxRule r = *this;
    r.output_shapes = fn;
    return r;
  }
  constexpr OnnxRule input_check(CheckFn fn) const {
    OnnxRule r = *this;
    r.check_inputs = fn;
    return r;
  }
  constexpr OnnxRule operand_check(OperandCheckFn fn) const {
    OnnxRule r = *this;
    r.check_operands = fn;
    return r;
  }
};

/// The row of a node's operator (ai.onnx or com.microsoft), or nullptr.
const OnnxRule* find_rule(const onnx::NodeProto& node);

/// Every row, in table order.
const std::vector<OnnxRule>& onnx_rules();

/// The traits of a view layer.
LayerTraits view_traits();

/// The output shape of an einsum whose inputs are all known (ONNX 1.12 infers only its rank).
std::optional<Shape> einsum_output(const onnx::NodeProto& node, const KnownInputs& in);

// The standard operators' count functions, shape functions and input checks, in onnx_counts.cpp.
CountResult count_conv(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_conv_transpose(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_gemm(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_matmul(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_einsum(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_elementwise(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_binary(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_reduce(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_pool(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_copy(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_view(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_resize(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_gather(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_lrn(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_lstm(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_gru(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_rnn(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
std::vector<std::optional<Shape>> matmul_nbits_shapes(const onnx::NodeProto& node,
                                                      const KnownInputs& in);
std::vector<std::optional<Shape>> einsum_shapes(const onnx::NodeProto& node, const KnownInputs& in);
void check_einsum_inputs(const NodeInputs& in);

// Operand checks, in onnx_operands.cpp.
void check_conv_operands(const OperandShapes& in);
void check_conv_transpose_operands(const OperandShapes& in);
void check_gemm_operands(const OperandShapes& in);
void check_matmul_operands(const OperandShapes& in);
void check_axis_operand(const OperandShapes& in);
void check_perm_operand(const OperandShapes& in);
void check_broadcast_operands(const OperandShapes& in);
void check_concat_operands(const OperandShapes& in);
void check_reshape_operands(const OperandShapes& in);

// onnxruntime's fused operators (com.microsoft), in onnx_fused.cpp.
CountResult count_attention(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
CountResult count_embed_layer_norm(const OnnxRule& rule, const NodeInputs& in, const Shape& out);
void check_attention_inputs(const NodeInputs& in);
std::vector<std::optional<Shape>> attention_output_shapes(const onnx::NodeProto& node,
                                                          const KnownInputs& in);
std::vector<std::optional<Shape>> skip_norm_output_shapes(const onnx::NodeProto& node,
                                                          const KnownInputs& in);
std::vector<std::optional<Shape>> embed_layer_norm_output_shapes(const onnx::NodeProto& node,
                                                                 const KnownInputs& in);

}  // namespace capcalc::onnx_import
