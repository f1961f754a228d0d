#include "import/onnx_rules.hpp"

#include <vector>

#include "capcalc/error.hpp"

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

}  // namespace capcalc::onnx_import
