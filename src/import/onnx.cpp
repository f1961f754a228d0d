#include "import/onnx.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/units.hpp"

#include "checked.hpp"
#include "count_formulas.hpp"
#include "expr.hpp"
#include "limits.hpp"
#include "spellcheck.hpp"

#if CAPCALC_WITH_ONNX
#include <google/protobuf/io/coded_stream.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
// After ONNX's headers: its text parser's header (included by schema.h) names an enumerator
// MAP_TYPE, which this header defines as a macro.
#include <sys/mman.h>

#include "import/onnx_fold.hpp"
#include "import/onnx_functions.hpp"
#include "input_file.hpp"
#endif

namespace capcalc {

#if !CAPCALC_WITH_ONNX

bool onnx_supported() {
  return false;
}

Graph parse_onnx_model(std::string_view, const std::string& file, const ModelOptions&) {
  throw Error({file, "", 0, 0},
              "this capcalc was built without ONNX support (CMake option CAPCALC_WITH_ONNX)");
}

Graph load_onnx_model(const std::string& path, const ModelOptions& options) {
  return parse_onnx_model({}, path, options);
}

#else

bool onnx_supported() {
  return true;
}

namespace {

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Whether `name`, ignoring case, is one of `names`.
bool is_one_of(const std::vector<std::string_view>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), lowercase(name)) != names.end();
}

// Names exporters give the batch axis; --batch (dims["batch"]) sets any of them.
const std::vector<std::string_view> kBatchNames = {"batch", "batch_size", "batchsize", "bs", "n",
                                                   "b",     "batch_dim",  "unk__batch"};

bool is_batch_name(const std::string& name) {
  return is_one_of(kBatchNames, name);
}

// Names exporters give the sequence axis (--set seq=N, LLM serving's prompt and decode
// lengths), the cached positions of a past (LLM serving's cache; 0, a prefill, by default) and
// both together (the attention mask's).
const std::vector<std::string_view> kSequenceNames = {"seq", "sequence", "sequence_length",
                                                      "seq_len", "seq_length"};
const std::vector<std::string_view> kPastNames = {"past_sequence_length", "past_seq_len",
                                                  "past_sequence_len",    "past_length",
                                                  "past_seq_length",      "past_len"};
const std::vector<std::string_view> kTotalNames = {"total_sequence_length", "total_seq_len",
                                                   "total_sequence_len", "total_length"};

// What a tensor is, for counting: activations flow from the model inputs and become layers'
// inputs; constants (initializers, Constant nodes and anything computed from constants only)
// are folded away; metadata (Shape, Size) only feeds shape arithmetic.
enum class Kind { kActivation, kConstant, kMeta };

struct Value {
  Kind kind = Kind::kConstant;
  std::int32_t id = -1;            // Graph value id, for activations.
  bool needs_grad = false;         // For activations: does its gradient need computing?
  std::vector<std::string> roots;  // For constants: the parameter initializers it comes from.
};

Value meta_value() {
  Value value;
  value.kind = Kind::kMeta;
  return value;
}

// Element types whose initializers hold trainable parameters (weights, possibly quantised);
// integer index and shape tensors never do.
bool is_parameter_type(std::int32_t type) {
  using T = onnx::TensorProto;
  return type == T::FLOAT || type == T::DOUBLE || type == T::FLOAT16 || type == T::BFLOAT16 ||
         type == T::INT8 || type == T::UINT8;
}

// How a known operator is counted.
enum class Rule {
  kConv,
  kConvTranspose,
  kGemm,
  kMatMul,
  kEinsum,
  kBatchNorm,
  kLayerNorm,
  kGroupNorm,
  kUnary,   // `flops` per output element.
  kBinary,  // inputs - 1 per output element (NumPy broadcasting).
  kSoftmax,
  kReduce,      // One FLOP per input element.
  kPool,        // kernel elements per output element.
  kGlobalPool,  // One FLOP per input element.
  kCopy,        // Reads and writes, no FLOPs (concat, pad, tile).
  kView,        // Costs nothing (reshape, transpose, slice, cast, ...).
  kGather,      // A view of an activation, or an embedding lookup of a constant table.
  kSplit,       // One view layer per output.
  kResize,
  kRecurrent,       // LSTM, GRU, RNN: gate products and activations per step and direction.
  kBiased,          // Elementwise, `flops` per output element, its constant inputs parameters.
  kFusedAttention,  // onnxruntime's Attention, MultiHeadAttention, GroupQueryAttention.
  kEmbedLayerNorm,  // onnxruntime's EmbedLayerNormalization: BERT's embeddings and LayerNorm.
  kLrn,             // Local response normalisation: 2·size + 3 FLOPs per element.
  kMeta,            // Shape, Size: the output is metadata, no layer.
  kConstant,        // Constant, ConstantOfShape, Range: folded, no layer.
};

struct OpRule {
  std::string_view op_type;
  Rule rule;
  std::string_view name;  // The layer's op: the native operator's name where there is one.
  std::int64_t flops = 0;
  bool shape_passthrough = false;  // Output shape = input shape, for ops ONNX 1.12 lacks.
  int bias_slot = -1;              // An optional input that, when given, adds 1 FLOP per element.
};

using formulas::kBatchNormFlops;
using formulas::kGeluFlops;
using formulas::kReluFlops;
using formulas::kSigmoidFlops;
using formulas::kTanhFlops;

// ONNX op_type -> counting rule. Non-native elementwise costs: Clip does a min and a max (2),
// HardSigmoid max(0, min(1, a·x + b)) (4), HardSwish that and a multiply (5); Erf, Elu,
// Softplus and other transcendental functions count as tanh (5); Exp, Log, Sqrt,
// Reciprocal, Neg, Abs and the like one FLOP each.
const std::vector<OpRule> kRules = {
    {"Conv", Rule::kConv, "conv"},
    {"ConvTranspose", Rule::kConvTranspose, "conv_transpose"},
    {"Gemm", Rule::kGemm, "linear"},
    {"MatMul", Rule::kMatMul, "matmul"},
    // Quantised forms: the same MACs, their operands at other slots (operands_of).
    {"QLinearConv", Rule::kConv, "conv"},
    {"ConvInteger", Rule::kConv, "conv"},
    {"QLinearMatMul", Rule::kMatMul, "matmul"},
    {"MatMulInteger", Rule::kMatMul, "matmul"},
    {"MatMulNBits", Rule::kMatMul, "matmul"},  // com.microsoft: int4/int8 weight-only blocks.
    // QuantizeLinear: divide, round, add the zero point, saturate (4); DequantizeLinear:
    // subtract the zero point, multiply (2); DynamicQuantizeLinear finds min and max first (6).
    {"QuantizeLinear", Rule::kUnary, "quantize", 4},
    {"DequantizeLinear", Rule::kUnary, "dequantize", 2},
    {"DynamicQuantizeLinear", Rule::kUnary, "quantize", 6},
    {"Einsum", Rule::kEinsum, "einsum"},
    {"LSTM", Rule::kRecurrent, "lstm"},
    {"GRU", Rule::kRecurrent, "gru"},
    {"RNN", Rule::kRecurrent, "rnn"},
    {"BatchNormalization", Rule::kBatchNorm, "batchnorm", kBatchNormFlops},
    {"LayerNormalization", Rule::kLayerNorm, "layernorm", formulas::kLayerNormFlops},
    {"SimplifiedLayerNormalization", Rule::kLayerNorm, "rmsnorm", formulas::kRmsNormFlops, true},
    {"InstanceNormalization", Rule::kGroupNorm, "groupnorm", formulas::kGroupNormFlops},
    {"GroupNormalization", Rule::kGroupNorm, "groupnorm", formulas::kGroupNormFlops, true},
    {"Relu", Rule::kUnary, "relu", kReluFlops},
    {"LeakyRelu", Rule::kUnary, "leakyrelu", kReluFlops},
    {"Clip", Rule::kUnary, "clip", 2},
    {"Sigmoid", Rule::kUnary, "sigmoid", kSigmoidFlops},
    {"HardSigmoid", Rule::kUnary, "hardsigmoid", 4},
    {"HardSwish", Rule::kUnary, "hardswish", 5},
    {"Tanh", Rule::kUnary, "tanh", kTanhFlops},
    {"Erf", Rule::kUnary, "erf", kTanhFlops},
    {"Gelu", Rule::kUnary, "gelu", kGeluFlops, true},
    // onnxruntime's fused forms (com.microsoft), as its transformer optimizer and
    // onnxruntime-genai write them: a bias added first (1 more FLOP), a skip connection added
    // before a norm (1, and 1 more for its bias), QuickGelu x·sigmoid(1.702·x) (6), rotary
    // embeddings x·cos + rotate(x)·sin (3; the cos and sin caches are not parameters).
    {"FastGelu", Rule::kBiased, "gelu", kGeluFlops, true, 1},
    {"BiasGelu", Rule::kBiased, "gelu", kGeluFlops + 1, true},
    {"QuickGelu", Rule::kUnary, "gelu", kSigmoidFlops + 2, true},
    {"BiasAdd", Rule::kBinary, "add", 0, true},
    {"SkipLayerNormalization", Rule::kLayerNorm, "layernorm", formulas::kLayerNormFlops + 1, true,
     4},
    {"SkipSimplifiedLayerNormalization", Rule::kLayerNorm, "rmsnorm", formulas::kRmsNormFlops + 1,
     true, 3},
    {"RotaryEmbedding", Rule::kUnary, "rotary", 3, true},
    {"Attention", Rule::kFusedAttention, "attention"},
    {"MultiHeadAttention", Rule::kFusedAttention, "attention"},
    {"GroupQueryAttention", Rule::kFusedAttention, "attention"},
    {"EmbedLayerNormalization", Rule::kEmbedLayerNorm, "embedding"},
    {"Trilu", Rule::kUnary, "trilu", 1},
    // Older CNNs' and vision models' operators: LRN sums `size` squares per element and scales
    // (2·size + 3), GridSample samples bilinearly (7), MeanVarianceNormalization normalises as
    // LayerNorm does (8), CELU is transcendental (5), ThresholdedRelu and the predicates 1,
    // Shrink 2; Hardmax and TopK compare every input element; scatters and OneHot copy.
    {"LRN", Rule::kLrn, "lrn"},
    {"GridSample", Rule::kUnary, "grid_sample", formulas::kBilinearFlops},
    {"MeanVarianceNormalization", Rule::kUnary, "mvn", formulas::kLayerNormFlops},
    {"Celu", Rule::kUnary, "celu", kTanhFlops},
    {"ThresholdedRelu", Rule::kUnary, "thresholdedrelu", kReluFlops},
    {"Shrink", Rule::kUnary, "shrink", 2},
    {"IsNaN", Rule::kUnary, "isnan", 1},
    {"IsInf", Rule::kUnary, "isinf", 1},
    {"Xor", Rule::kBinary, "xor"},
    {"BitShift", Rule::kBinary, "bitshift"},
    {"Hardmax", Rule::kReduce, "hardmax"},
    {"TopK", Rule::kReduce, "topk"},
    {"ScatterND", Rule::kCopy, "scatter"},
    {"ScatterElements", Rule::kCopy, "scatter"},
    {"Scatter", Rule::kCopy, "scatter"},
    {"OneHot", Rule::kCopy, "onehot"},
    {"Elu", Rule::kUnary, "elu", kTanhFlops},
    {"Selu", Rule::kUnary, "selu", kTanhFlops},
    {"Softplus", Rule::kUnary, "softplus", kTanhFlops},
    {"Mish", Rule::kUnary, "mish", 2 * kTanhFlops, true},
    {"Exp", Rule::kUnary, "exp", 1},
    {"Log", Rule::kUnary, "log", 1},
    {"Sqrt", Rule::kUnary, "sqrt", 1},
    {"Reciprocal", Rule::kUnary, "reciprocal", 1},
    {"Neg", Rule::kUnary, "neg", 1},
    {"Abs", Rule::kUnary, "abs", 1},
    {"Floor", Rule::kUnary, "floor", 1},
    {"Ceil", Rule::kUnary, "ceil", 1},
    {"Round", Rule::kUnary, "round", 1},
    {"Sin", Rule::kUnary, "sin", 1},
    {"Cos", Rule::kUnary, "cos", 1},
    {"Not", Rule::kUnary, "not", 1},
    {"Sign", Rule::kUnary, "sign", 1},
    {"Add", Rule::kBinary, "add"},
    {"Sub", Rule::kBinary, "sub"},
    {"Mul", Rule::kBinary, "mul"},
    {"Div", Rule::kBinary, "div"},
    {"Pow", Rule::kBinary, "pow"},
    {"Max", Rule::kBinary, "max"},
    {"Min", Rule::kBinary, "min"},
    {"Sum", Rule::kBinary, "add"},
    {"Mean", Rule::kBinary, "mean"},
    {"Mod", Rule::kBinary, "mod"},
    {"PRelu", Rule::kBinary, "prelu"},
    {"Where", Rule::kBinary, "where"},
    {"Equal", Rule::kBinary, "equal"},
    {"Less", Rule::kBinary, "less"},
    {"LessOrEqual", Rule::kBinary, "lessorequal"},
    {"Greater", Rule::kBinary, "greater"},
    {"GreaterOrEqual", Rule::kBinary, "greaterorequal"},
    {"And", Rule::kBinary, "and"},
    {"Or", Rule::kBinary, "or"},
    {"Softmax", Rule::kSoftmax, "softmax", formulas::kSoftmaxFlops},
    {"LogSoftmax", Rule::kSoftmax, "softmax", formulas::kSoftmaxFlops},
    {"ReduceMean", Rule::kReduce, "reducemean"},
    {"ReduceSum", Rule::kReduce, "reducesum"},
    {"ReduceMax", Rule::kReduce, "reducemax"},
    {"ReduceMin", Rule::kReduce, "reducemin"},
    {"ReduceProd", Rule::kReduce, "reduceprod"},
    {"ReduceL1", Rule::kReduce, "reducel1"},
    {"ReduceL2", Rule::kReduce, "reducel2"},
    {"ReduceSumSquare", Rule::kReduce, "reducesumsquare"},
    {"ReduceLogSumExp", Rule::kReduce, "reducelogsumexp"},
    {"ArgMax", Rule::kReduce, "argmax"},
    {"ArgMin", Rule::kReduce, "argmin"},
    {"CumSum", Rule::kReduce, "cumsum"},
    {"MaxPool", Rule::kPool, "maxpool"},
    {"AveragePool", Rule::kPool, "avgpool"},
    {"LpPool", Rule::kPool, "lppool"},
    {"GlobalAveragePool", Rule::kGlobalPool, "global_avgpool"},
    {"GlobalMaxPool", Rule::kGlobalPool, "global_maxpool"},
    {"Concat", Rule::kCopy, "concat"},
    {"Pad", Rule::kCopy, "pad"},
    {"Tile", Rule::kCopy, "tile"},
    {"Split", Rule::kSplit, "split"},
    {"Slice", Rule::kView, "slice"},
    {"Gather", Rule::kGather, "gather"},
    {"GatherElements", Rule::kView, "gather"},
    {"GatherND", Rule::kView, "gather"},
    {"Reshape", Rule::kView, "reshape"},
    {"Flatten", Rule::kView, "flatten"},
    {"Transpose", Rule::kView, "transpose"},
    {"Squeeze", Rule::kView, "squeeze"},
    {"Unsqueeze", Rule::kView, "unsqueeze"},
    {"Expand", Rule::kView, "expand"},
    {"Identity", Rule::kView, "identity"},
    {"Dropout", Rule::kView, "dropout"},
    {"Cast", Rule::kView, "cast"},
    {"CastLike", Rule::kView, "cast"},
    {"DepthToSpace", Rule::kView, "depthtospace"},
    {"SpaceToDepth", Rule::kView, "spacetodepth"},
    {"Resize", Rule::kResize, "upsample"},
    {"Upsample", Rule::kResize, "upsample"},
    {"Shape", Rule::kMeta, "shape"},
    {"Size", Rule::kMeta, "size"},
    {"Constant", Rule::kConstant, "constant"},
    {"ConstantOfShape", Rule::kConstant, "constantofshape"},
    {"Range", Rule::kConstant, "range"},
    {"EyeLike", Rule::kConstant, "eyelike"},
};

// What each counting rule's layers are, for the performance model (graph.hpp, LayerTraits).
// Every elementwise operator and reduction fuses under a compiler (onnxruntime's and TensorRT's
// fusions of LayerNorm, GELU and bias chains are built of them); batch normalisation folds into
// the convolution before it at inference.
LayerTraits rule_traits(Rule rule) {
  switch (rule) {
    case Rule::kConv:
    case Rule::kConvTranspose:
    case Rule::kGemm:
    case Rule::kMatMul:
    case Rule::kEinsum:
    case Rule::kRecurrent:
      return {OpClass::kMatrix, Fusion::kNever, std::nullopt};
    case Rule::kFusedAttention:
      return {OpClass::kAttention, Fusion::kNever, std::nullopt};
    case Rule::kBatchNorm:
      return {OpClass::kNormalization, Fusion::kInferenceOnly, std::nullopt};
    case Rule::kLayerNorm:
    case Rule::kSoftmax:
      return {OpClass::kNormalization, Fusion::kAlways, std::nullopt};
    case Rule::kGroupNorm:
    case Rule::kLrn:
      return {OpClass::kNormalization, Fusion::kNever, std::nullopt};
    case Rule::kUnary:
    case Rule::kBinary:
    case Rule::kBiased:
      return {OpClass::kElementwise, Fusion::kAlways, std::nullopt};
    case Rule::kReduce:
      return {OpClass::kPooling, Fusion::kAlways, std::nullopt};
    case Rule::kPool:
    case Rule::kGlobalPool:
      return {OpClass::kPooling, Fusion::kNever, std::nullopt};
    case Rule::kCopy:
    case Rule::kGather:
    case Rule::kResize:
    case Rule::kEmbedLayerNorm:
      return {OpClass::kDataMovement, Fusion::kNever, std::nullopt};
    case Rule::kView:
    case Rule::kSplit:
    case Rule::kMeta:
    case Rule::kConstant:
      break;
  }
  return {OpClass::kView, Fusion::kNever, std::nullopt};
}

const OpRule* find_rule(const onnx::NodeProto& node) {
  const std::string& domain = node.domain();
  if (!domain.empty() && domain != "ai.onnx" && domain != "com.microsoft") return nullptr;
  for (const OpRule& rule : kRules) {
    if (rule.op_type == node.op_type()) return &rule;
  }
  return nullptr;
}

// Where a convolution's or matrix product's operands sit: its activation (or first operand),
// its weight (or second operand) and its bias (-1: none). The quantised forms put scales and
// zero points between them, which are not parameters.
struct Operands {
  int x = 0;
  int w = 1;
  int bias = 2;
  bool quantised = false;
};

Operands operands_of(const std::string& op_type) {
  if (op_type == "QLinearConv") return {0, 3, 8, true};
  if (op_type == "QLinearMatMul") return {0, 3, -1, true};
  if (op_type == "ConvInteger" || op_type == "MatMulInteger") return {0, 1, -1, true};
  if (op_type == "MatMulNBits") return {0, 1, 5, true};
  return {};
}

// A node's subgraph attribute (If's branches, Loop's body) and its index; nullptr if absent.
const onnx::GraphProto* graph_attribute(const onnx::NodeProto& node, std::string_view name,
                                        int* slot = nullptr) {
  for (int a = 0; a < node.attribute_size(); ++a) {
    const onnx::AttributeProto& attr = node.attribute(a);
    if (attr.name() == name && attr.type() == onnx::AttributeProto::GRAPH) {
      if (slot != nullptr) *slot = a;
      return &attr.g();
    }
  }
  return nullptr;
}

// Whether input `slot` of a node is given (optional inputs may be absent or empty).
bool has_input(const onnx::NodeProto& node, int slot) {
  return slot >= 0 && slot < node.input_size() && !node.input(slot).empty();
}

std::string qualified_op(const onnx::NodeProto& node) {
  if (node.domain().empty() || node.domain() == "ai.onnx") return node.op_type();
  return node.domain() + "." + node.op_type();
}

// Inputs with a param slot count as the layer's parameters; the others (running statistics,
// shapes, axes, bounds, scales) are read but are not parameters.
bool is_param_slot(Rule rule, const std::string& op_type, int slot) {
  if (const Operands o = operands_of(op_type); o.quantised) {
    return slot == o.x || slot == o.w || slot == o.bias;
  }
  switch (rule) {
    case Rule::kBatchNorm:
      return slot == 1 || slot == 2;  // Scale and bias; mean and variance are buffers.
    case Rule::kRecurrent:
      return slot == 1 || slot == 2 || slot == 3 || slot == 7;  // W, R, B, peepholes P.
    case Rule::kFusedAttention:
      // Attention's packed weights and bias, MultiHeadAttention's bias; not masks, caches,
      // lengths or GroupQueryAttention's cos and sin caches.
      if (op_type == "Attention") return slot == 1 || slot == 2;
      return op_type == "MultiHeadAttention" && slot == 3;
    case Rule::kEmbedLayerNorm:
      return slot >= 2 && slot <= 6;  // Word, position, segment tables; gamma, beta.
    case Rule::kView:
    case Rule::kSplit:
    case Rule::kResize:
    case Rule::kReduce:
    case Rule::kSoftmax:
      return false;
    case Rule::kUnary:
      return false;  // Clip's bounds, nothing else.
    case Rule::kCopy:
      return op_type == "Concat";  // A learned token concatenated (ViT); not pads or repeats.
    default:
      return true;
  }
}

std::int64_t attribute_int(const onnx::NodeProto& node, std::string_view name,
                           std::int64_t fallback) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return a.i();
  }
  return fallback;
}

std::vector<std::int64_t> attribute_ints(const onnx::NodeProto& node, std::string_view name) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

std::string attribute_string(const onnx::NodeProto& node, std::string_view name,
                             std::string fallback) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return a.s();
  }
  return fallback;
}

std::int64_t product(const Shape& shape, std::size_t from = 0) {
  std::int64_t p = 1;
  for (std::size_t i = from; i < shape.size(); ++i)
    p = checked_mul(p, shape[i]);
  return p;
}

// A tensor's shape as ONNX knows it; dims are -1 where unknown.
struct KnownShape {
  Shape dims;
  std::vector<std::string> params;  // dim_param per axis ("" if none).
  bool complete() const {
    return std::all_of(dims.begin(), dims.end(), [](std::int64_t d) { return d >= 0; });
  }
};

KnownShape from_proto(const onnx::TensorShapeProto& proto) {
  KnownShape shape;
  for (const auto& dim : proto.dim()) {
    shape.dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    shape.params.push_back(dim.has_dim_param() ? dim.dim_param() : "");
  }
  return shape;
}

// Rounds of ONNX shape inference, each followed by capcalc's own shapes, at most.
constexpr int kMaxInferenceRounds = 1024;

class Importer {
 public:
  Importer(onnx::ModelProto& model, const std::string& file, const ModelOptions& options)
      : model_(model), graph_proto_(*model.mutable_graph()), file_(file), options_(options) {}

  Graph build() {
    if (!options_.omitted_inputs.empty()) {
      fail("", fmt::format("an ONNX model cannot run without input \"{}\" (--omit-input is for "
                           "capcalc and Hugging Face models)",
                           *options_.omitted_inputs.begin()));
    }
    validate();
    origins_ = onnx_import::inline_local_functions(model_, file_);
    for (int i = 0; i < graph_proto_.node_size(); ++i)
      check_node(graph_proto_.node(i), i, node_pointer(i));
    take_declared_weights();
    for (int i = 0; i < graph_proto_.initializer_size(); ++i) {
      const onnx::TensorProto& init = graph_proto_.initializer(i);
      check_element_count(init, fmt::format("/graph/initializer/{}", i));
      initializers_[init.name()] = &init;
    }
    make_kernel_shapes_explicit();
    bind_inputs();
    forget_exporter_dim_names();
    infer_shapes();
    collect_shapes();
    read_nodes(graph_proto_);
    for (const auto& output : graph_proto_.output()) {
      const auto it = values_.find(output.name());
      if (it != values_.end() && it->second.kind == Kind::kActivation) {
        graph_.outputs.push_back(it->second.id);
      }
    }
    if (graph_.outputs.empty() && !graph_.layers.empty()) {
      graph_.outputs.push_back(graph_.layer_value(graph_.layers.size() - 1));
    }
    if (options_.strict && !graph_.unknown_ops.empty()) {
      std::vector<std::string> parts;
      std::int64_t nodes = 0;
      for (const UnknownOperator& op : graph_.unknown_ops) {
        parts.push_back(fmt::format("{} ({})", op.op, op.nodes));
        nodes += op.nodes;
      }
      const UnknownOperator& first = graph_.unknown_ops.front();
      fail(first.first_node,
           fmt::format("unknown operator {} (strict mode; {} node{} of unknown operators: {})",
                       first.op, nodes, nodes == 1 ? "" : "s", fmt::join(parts, ", ")));
    }
    return std::move(graph_);
  }

 private:
  [[noreturn]] void fail(const std::string& pointer, const std::string& message) const {
    throw Error({file_, pointer, 0, 0}, message);
  }

  // A weight's dims are the file's word: their product must be a count.
  void check_element_count(const onnx::TensorProto& init, const std::string& pointer) const {
    try {
      std::int64_t elements = 1;
      for (std::int64_t d : init.dims())
        elements = checked_mul(elements, d);
    } catch (const OverflowError&) {
      fail(pointer, fmt::format("initializer \"{}\": dims [{}] hold more elements than a 64-bit "
                                "count",
                                init.name(), fmt::join(init.dims(), ", ")));
    }
  }

  // A printed model with its weights stripped out (Loam's `.onnxtext`, for one) declares each
  // weight in the graph's value-info list, typed but with no value: a value that nothing
  // defines, of a fully known shape, is an initializer whose data was left out.
  void take_declared_weights() {
    std::set<std::string> defined;
    for (const auto& input : graph_proto_.input())
      defined.insert(input.name());
    for (const auto& init : graph_proto_.initializer())
      defined.insert(init.name());
    for (const auto& node : graph_proto_.node())
      defined.insert(node.output().begin(), node.output().end());
    for (const auto& info : graph_proto_.value_info()) {
      if (defined.count(info.name()) != 0 || !info.type().has_tensor_type()) continue;
      const auto& tensor = info.type().tensor_type();
      if (!is_parameter_type(tensor.elem_type()) || !tensor.has_shape()) continue;
      bool known = true;
      for (const auto& dim : tensor.shape().dim())
        known = known && dim.has_dim_value() && dim.dim_value() > 0;
      if (!known) continue;
      auto* init = graph_proto_.add_initializer();
      init->set_name(info.name());
      init->set_data_type(tensor.elem_type());
      for (const auto& dim : tensor.shape().dim())
        init->add_dims(dim.dim_value());
      init->set_data_location(onnx::TensorProto::EXTERNAL);
      defined.insert(info.name());
    }
  }

  void validate() {
    if (!model_.has_graph() || graph_proto_.node_size() == 0) {
      fail("", "not an ONNX model: it has no graph nodes (corrupt, truncated or not ONNX?)");
    }
    for (const auto& opset : model_.opset_import()) {
      if (opset.domain().empty() || opset.domain() == "ai.onnx") opset_ = opset.version();
    }
    if (opset_ <= 0) fail("", "not an ONNX model: it imports no ai.onnx opset (truncated?)");
    // Newer files mostly read well (operators keep their schemas for many opsets), but what
    // changed since is read as this build's ONNX knows it: said, not silent.
    const int known_opset =
        onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(onnx::ONNX_DOMAIN).second;
    if (opset_ > known_opset) {
      graph_.warnings.push_back(
          fmt::format("{}: opset {} is newer than this build's ONNX knows (up to {}); operators "
                      "are read as of opset {}",
                      file_, opset_, known_opset, known_opset));
    }
    if (model_.ir_version() > onnx::Version::IR_VERSION) {
      graph_.warnings.push_back(
          fmt::format("{}: IR version {} is newer than this build's ONNX knows (up to {})", file_,
                      model_.ir_version(), static_cast<int>(onnx::Version::IR_VERSION)));
    }
    check_declarations();
    graph_.name = graph_proto_.name().empty() ? "onnx_model" : graph_proto_.name();
    graph_.runs_fused = true;
    graph_.description = model_.doc_string();
    graph_.source = model_.producer_name().empty()
                        ? "ONNX"
                        : fmt::format("ONNX, exported by {} {}", model_.producer_name(),
                                      model_.producer_version());
  }

  // Names the graph declares once: its inputs (a known element type, a bounded rank), its
  // initializers (a data type) and every value a node writes (one writer each).
  void check_declarations() const {
    std::map<std::string, std::string> defined;  // Name -> what defined it, for messages.
    for (int i = 0; i < graph_proto_.initializer_size(); ++i) {
      const onnx::TensorProto& init = graph_proto_.initializer(i);
      const std::string pointer = fmt::format("/graph/initializer/{}", i);
      if (init.name().empty()) fail(pointer, "an initializer needs a name");
      if (init.data_type() == onnx::TensorProto::UNDEFINED ||
          !onnx::TensorProto_DataType_IsValid(init.data_type())) {
        fail(pointer, fmt::format("initializer \"{}\": data_type {} is not an ONNX element type",
                                  init.name(), init.data_type()));
      }
      if (!defined.emplace(init.name(), pointer).second) {
        fail(pointer, fmt::format("initializer \"{}\" is declared twice (first at {})", init.name(),
                                  defined[init.name()]));
      }
    }
    std::map<std::string, std::string> inputs;
    for (int i = 0; i < graph_proto_.input_size(); ++i) {
      const onnx::ValueInfoProto& input = graph_proto_.input(i);
      const std::string pointer = fmt::format("/graph/input/{}", i);
      if (input.name().empty()) fail(pointer, "an input needs a name");
      if (!inputs.emplace(input.name(), pointer).second) {
        fail(pointer, fmt::format("input \"{}\" is declared twice (first at {})", input.name(),
                                  inputs[input.name()]));
      }
      defined.emplace(input.name(), pointer);  // Before IR 4, initializers are inputs too.
      if (!input.type().has_tensor_type()) continue;
      const auto& tensor = input.type().tensor_type();
      const std::int32_t type = tensor.elem_type();
      if (type == onnx::TensorProto::UNDEFINED || !onnx::TensorProto_DataType_IsValid(type)) {
        fail(pointer, fmt::format("input \"{}\": element type {} is not an ONNX element type",
                                  input.name(), type));
      }
      if (type == onnx::TensorProto::STRING) {
        fail(pointer, fmt::format("input \"{}\" holds strings: capcalc counts numeric tensors "
                                  "only",
                                  input.name()));
      }
      if (tensor.has_shape() && tensor.shape().dim_size() > kMaxTensorRank) {
        fail(pointer, fmt::format("input \"{}\" has {} dims, more than {} (the limit)",
                                  input.name(), tensor.shape().dim_size(), kMaxTensorRank));
      }
    }
    for (int i = 0; i < graph_proto_.node_size(); ++i) {
      const onnx::NodeProto& node = graph_proto_.node(i);
      const std::string pointer = node_pointer(i);
      for (const std::string& output : node.output()) {
        if (output.empty()) continue;
        const auto [it, fresh] = defined.emplace(output, pointer);
        if (!fresh) {
          fail(pointer, fmt::format("node \"{}\" ({}) writes \"{}\", already written at {}",
                                    node_name(node, i), node.op_type(), output, it->second));
        }
      }
    }
  }

  // What ONNX's inference functions assume of a node, checked before they run (each of these
  // was a crash, found by fuzzing): control flow has its graphs, the node keeps its operator's
  // contract, and strides, dilations, kernel sizes, groups and block sizes, which they divide
  // by unchecked, are positive. Subgraphs are checked too.
  void check_node(const onnx::NodeProto& node, int index, const std::string& pointer) const {
    if (node.op_type().empty()) {
      fail(pointer, node.name().empty() ? std::string("a node needs an op_type")
                                        : fmt::format("node \"{}\" has no op_type", node.name()));
    }
    const std::string label = node_name(node, index);
    // Control flow without its graphs: ONNX's Scan inference dereferences a missing body.
    if (node.domain().empty() || node.domain() == "ai.onnx") {
      const auto has_graph = [&](const char* name) {
        return std::any_of(
            node.attribute().begin(), node.attribute().end(),
            [&](const onnx::AttributeProto& a) { return a.name() == name && a.has_g(); });
      };
      if ((node.op_type() == "Loop" || node.op_type() == "Scan") && !has_graph("body")) {
        fail(pointer, fmt::format("node \"{}\" ({}) has no body graph", label, node.op_type()));
      }
    }
    // The operator's own contract (input and output counts, attribute types, required
    // attributes), as ONNX's checker verifies it: ONNX's inference functions assume it, and
    // crashed on nodes that break it (an STFT with missing inputs, found by fuzzing).
    if (node.domain().empty() || node.domain() == "ai.onnx") {
      if (const auto* schema =
              onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset_), "")) {
        try {
          schema->Verify(node);
        } catch (const std::exception& e) {
          std::string reason = e.what();
          if (const auto cut = reason.find("\n\n==> Context"); cut != std::string::npos) {
            reason.erase(cut);
          }
          // An attribute the operator does not define is ignored by inference, as by runtimes.
          if (reason.rfind("Unrecognized attribute", 0) != 0) {
            fail(pointer,
                 fmt::format("node \"{}\" ({}) is malformed: {}", label, node.op_type(), reason));
          }
        }
      }
    }
    std::set<std::string> names;
    for (int a = 0; a < node.attribute_size(); ++a) {
      const onnx::AttributeProto& attr = node.attribute(a);
      const std::string where = fmt::format("{}/attribute/{}", pointer, a);
      if (!names.insert(attr.name()).second) {
        fail(where, fmt::format("node \"{}\" ({}) has a second attribute \"{}\"", label,
                                node.op_type(), attr.name()));
      }
      // Sizes ONNX (and capcalc) divide by: one positive integer, or a list of them.
      const bool scalar = is_one_of({"group", "blocksize"}, attr.name());
      if (scalar || is_one_of({"strides", "dilations", "kernel_shape"}, attr.name())) {
        const bool bad = scalar ? attr.type() != onnx::AttributeProto::INT || attr.i() <= 0
                                : attr.type() != onnx::AttributeProto::INTS ||
                                      std::any_of(attr.ints().begin(), attr.ints().end(),
                                                  [](std::int64_t v) { return v <= 0; });
        if (bad) {
          fail(where,
               fmt::format("node \"{}\" ({}): {} must be {}", label, node.op_type(), attr.name(),
                           scalar ? "a positive integer" : "a list of positive integers"));
        }
      }
      const auto check_graph = [&](const onnx::GraphProto& g, const std::string& at) {
        for (int i = 0; i < g.node_size(); ++i)
          check_node(g.node(i), i, fmt::format("{}/node/{}", at, i));
      };
      if (attr.has_g()) check_graph(attr.g(), where + "/g");
      for (int g = 0; g < attr.graphs_size(); ++g)
        check_graph(attr.graphs(g), fmt::format("{}/graphs/{}", where, g));
    }
  }

  // A convolution without `kernel_shape` takes it from its weight's spatial dims. ONNX's
  // shape inference then indexes the input's spatial dims by the weight's without checking
  // that the ranks agree (a crash on a rank-2 input); stated as the attribute, the kernel is
  // checked against the input's rank, which makes that an error. A weight of rank below 3 is
  // an error here: ONNX reads its channel axes unchecked.
  void make_kernel_shapes_explicit() {
    for (int index = 0; index < graph_proto_.node_size(); ++index) {
      onnx::NodeProto& node = *graph_proto_.mutable_node(index);
      int weight_slot = -1;
      if (is_one_of({"conv", "convinteger", "convtranspose"}, node.op_type())) weight_slot = 1;
      if (node.op_type() == "QLinearConv") weight_slot = 3;
      if (weight_slot < 0 || node.input_size() <= weight_slot) continue;
      const bool has_kernel =
          std::any_of(node.attribute().begin(), node.attribute().end(),
                      [](const onnx::AttributeProto& a) { return a.name() == "kernel_shape"; });
      const auto weight = initializers_.find(node.input(weight_slot));
      if (weight == initializers_.end()) continue;
      if (weight->second->dims_size() < 3) {
        // ONNX's inference reads the weight's channel axes unchecked (a crash on a rank-1
        // weight, found by fuzzing).
        fail(node_pointer(index),
             fmt::format("node \"{}\" ({}): weight \"{}\" has rank {}; a convolution's weight is "
                         "[out channels, in channels / group, kernel...]",
                         node_name(node, index), node.op_type(), weight->first,
                         weight->second->dims_size()));
      }
      if (has_kernel) continue;
      auto* kernel = node.add_attribute();
      kernel->set_name("kernel_shape");
      kernel->set_type(onnx::AttributeProto::INTS);
      for (int d = 2; d < weight->second->dims_size(); ++d)
        kernel->add_ints(weight->second->dims(d));
    }
  }

  // Sets every dynamic input dim from the options, so that shape inference sees numbers.
  // torch.onnx.export names the dynamic axes it was not given names for
  // "<input>_dynamic_axes_<k>", k counting from 1: the first one of an input, on axis 0, is its
  // batch.
  void find_exporter_batch_dims() {
    for (const auto& input : graph_proto_.input()) {
      if (initializers_.count(input.name()) != 0 || !input.type().has_tensor_type()) continue;
      const auto& shape = input.type().tensor_type().shape();
      if (shape.dim_size() > 0 && shape.dim(0).dim_param() == input.name() + "_dynamic_axes_1") {
        exporter_batch_dims_.insert(shape.dim(0).dim_param());
      }
    }
  }

  bool batch_like(const std::string& param) const {
    return is_batch_name(param) || exporter_batch_dims_.count(param) != 0;
  }

  // Exporters name the dims they cannot size, on the outputs ("past_sequence_length + 1") and,
  // torch.export's exporter, on every intermediate value it lists in value_info ("sequence",
  // "(12//batch)", "unk__45"). ONNX's inference keeps such a name rather than the size it
  // infers, so the sizes of outputs and intermediates are what inference and capcalc's folding
  // find, as for every other value; only the graph inputs' names bind to --set and --batch.
  void forget_exporter_dim_names() {
    const auto forget = [](onnx::ValueInfoProto& value) {
      if (!value.type().has_tensor_type()) return;
      auto& tensor = *value.mutable_type()->mutable_tensor_type();
      if (!tensor.has_shape()) return;
      for (auto& dim : *tensor.mutable_shape()->mutable_dim()) {
        if (dim.has_dim_param()) dim.clear_dim_param();
      }
    };
    for (auto& output : *graph_proto_.mutable_output())
      forget(output);
    for (auto& info : *graph_proto_.mutable_value_info())
      forget(info);
  }

  void bind_inputs() {
    find_exporter_batch_dims();
    std::vector<std::string> input_names;
    std::set<std::string> dim_params;
    bool has_batch = false;
    for (const auto& input : graph_proto_.input()) {
      if (initializers_.count(input.name()) != 0) continue;
      input_names.push_back(input.name());
      if (!input.type().has_tensor_type()) continue;
      for (const auto& dim : input.type().tensor_type().shape().dim()) {
        if (dim.has_dim_param()) {
          dim_params.insert(dim.dim_param());
          has_batch = has_batch || batch_like(dim.dim_param());
        }
      }
    }
    const bool has_sequence = std::any_of(dim_params.begin(), dim_params.end(), [](const auto& d) {
      return is_one_of(kSequenceNames, d);
    });
    // Integer scalar inputs (a Loop's trip count, a max length) take their value from --set.
    std::set<std::string> scalar_inputs;
    for (const auto& input : graph_proto_.input()) {
      if (initializers_.count(input.name()) != 0 || !input.type().has_tensor_type()) continue;
      const auto& tensor = input.type().tensor_type();
      const bool integer = tensor.elem_type() == onnx::TensorProto::INT64 ||
                           tensor.elem_type() == onnx::TensorProto::INT32;
      const bool scalar =
          tensor.has_shape() &&
          (tensor.shape().dim_size() == 0 ||
           (tensor.shape().dim_size() == 1 && tensor.shape().dim(0).dim_value() == 1));
      if (integer && scalar) scalar_inputs.insert(input.name());
    }
    for (const auto& [name, value] : options_.dims) {
      if (value <= 0)
        fail("", fmt::format("dimension \"{}\" must be positive, got {}", name, value));
      if (scalar_inputs.count(name) != 0) {
        scalar_values_[name] = value;
        if (dim_params.count(name) == 0) continue;
      }
      if (dim_params.count(name) != 0 || (name == "batch" && has_batch)) continue;
      if (name == "seq" && has_sequence) continue;
      if (name == "batch" && !options_.input_shapes.empty()) continue;
      std::vector<std::string_view> known(dim_params.begin(), dim_params.end());
      known.insert(known.end(), scalar_inputs.begin(), scalar_inputs.end());
      std::string message = with_suggestion(
          fmt::format("the model has no dimension \"{}\" to set", name), name, known);
      message += dim_params.empty()
                     ? " (its inputs have fixed shapes"
                     : fmt::format(" (its dynamic dims: {}", fmt::join(dim_params, ", "));
      if (!scalar_inputs.empty()) {
        message += fmt::format("; integer scalar inputs: {}", fmt::join(scalar_inputs, ", "));
      }
      message += ")";
      fail("", message);
    }
    for (const auto& [name, shape] : options_.input_shapes) {
      if (std::find(input_names.begin(), input_names.end(), name) == input_names.end()) {
        std::vector<std::string_view> known(input_names.begin(), input_names.end());
        fail("", with_suggestion(fmt::format("the model has no input \"{}\" (its inputs: {})", name,
                                             fmt::join(input_names, ", ")),
                                 name, known));
      }
    }

    for (int i = 0; i < graph_proto_.input_size(); ++i) {
      onnx::ValueInfoProto& input = *graph_proto_.mutable_input(i);
      if (initializers_.count(input.name()) != 0) continue;
      const std::string pointer = fmt::format("/graph/input/{}", i);
      if (!input.type().has_tensor_type() || !input.type().tensor_type().has_shape()) {
        if (options_.input_shapes.count(input.name()) == 0) {
          fail(pointer, fmt::format("input \"{}\" has no shape; give one (--input-shape {}=...)",
                                    input.name(), input.name()));
        }
      }
      onnx::TensorShapeProto& shape = *input.mutable_type()->mutable_tensor_type()->mutable_shape();
      if (auto given = options_.input_shapes.find(input.name());
          given != options_.input_shapes.end()) {
        if (shape.dim_size() != 0 &&
            static_cast<std::size_t>(shape.dim_size()) != given->second.size()) {
          fail(pointer, fmt::format("input \"{}\" has rank {}, but its --input-shape has {} dims",
                                    input.name(), shape.dim_size(), given->second.size()));
        }
        std::vector<std::string> params;
        for (const auto& dim : shape.dim())
          params.push_back(dim.has_dim_param() ? dim.dim_param() : "");
        shape.clear_dim();
        for (std::int64_t d : given->second) {
          const std::size_t axis = static_cast<std::size_t>(shape.dim_size());
          if (axis < params.size() && !params[axis].empty()) {
            graph_.dims[params[axis]] = d;
            if (batch_like(params[axis])) {
              graph_.batch = d;
              graph_.dims["batch"] = d;
            }
          }
          if (d <= 0) {
            fail(pointer, fmt::format("input \"{}\": shape entries must be positive, got {}",
                                      input.name(), d));
          }
          shape.add_dim()->set_dim_value(d);
        }
      }
      GraphInput graph_input;
      graph_input.name = input.name();
      std::vector<std::string> params_of_input;
      for (const auto& dim : shape.dim())
        params_of_input.push_back(dim.has_dim_param() ? dim.dim_param() : "");
      for (int a = 0; a < shape.dim_size(); ++a) {
        onnx::TensorShapeProto_Dimension& dim = *shape.mutable_dim(a);
        if (dim.has_dim_value() && dim.dim_value() > 0) {
          graph_input.shape.push_back(dim.dim_value());
          continue;
        }
        if (!dim.has_dim_param()) {
          fail(pointer, fmt::format("input \"{}\": axis {} has no size; set the shape "
                                    "(--input-shape {}=...)",
                                    input.name(), a, input.name()));
        }
        const std::string param = dim.dim_param();
        const std::optional<std::int64_t> value = dim_value(param);
        if (value && *value < 0) {
          fail(pointer, fmt::format("input \"{}\": dimension \"{}\" (axis {}) is {}", input.name(),
                                    param, a, *value));
        }
        if (!value) {
          fail(pointer, fmt::format("input \"{}\": dimension \"{}\" (axis {}) is not set; give "
                                    "--set {}=N or --input-shape {}=...",
                                    input.name(), param, a, param, input.name()));
        }
        if (batch_like(param)) {
          graph_.batch = *value;
          graph_.dims["batch"] = *value;
        }
        if (is_one_of(kSequenceNames, param)) graph_.dims["seq"] = *value;  // Tokens per sample.
        graph_.dims[param] = *value;
        dim.set_dim_value(*value);  // Clears dim_param (a oneof).
        graph_input.shape.push_back(*value);
      }
      // Its bytes must be countable too (16 per element covers every element type).
      std::int64_t elements = 1;
      for (const std::int64_t d : graph_input.shape) {  // 0 for an empty past (no KV cache).
        if (elements == 0 || elements == INT64_MAX) break;
        elements = d > INT64_MAX / 16 / elements ? INT64_MAX : elements * d;
      }
      if (elements > INT64_MAX / 16) {
        fail(pointer, fmt::format("input \"{}\": shape [{}] has more elements than a 64-bit count "
                                  "of bytes holds",
                                  input.name(), fmt::join(graph_input.shape, ", ")));
      }
      // A past input (past_key_values.*: [batch, heads, past, head_dim]) holds the cache: its
      // elements per cached token of one sequence are the other axes' product.
      std::int64_t per_token = 1;
      bool is_past = false;
      for (int a = 0; a < shape.dim_size(); ++a) {
        const std::string& param = a < static_cast<int>(params_of_input.size())
                                       ? params_of_input[static_cast<std::size_t>(a)]
                                       : std::string();
        if (is_one_of(kPastNames, param)) {
          is_past = true;
        } else if (!batch_like(param)) {
          per_token = checked_mul(per_token, graph_input.shape[static_cast<std::size_t>(a)]);
        }
      }
      if (is_past) {
        graph_.past_elements_per_token = checked_add(graph_.past_elements_per_token, per_token);
      }
      Value value;
      value.kind = Kind::kActivation;
      value.id = static_cast<std::int32_t>(graph_.inputs.size());
      values_[graph_input.name] = value;
      graph_.inputs.push_back(std::move(graph_input));
    }
    if (graph_.inputs.empty()) fail("/graph/input", "the model has no inputs (only initializers)");
  }

  // The size of a named input dimension: set (--set), or one of the kinds exporters name:
  // batch (1 unless set), sequence (--set seq=N), past (the KV cache's length in LLM serving,
  // else 0), total (past + sequence), or an expression of them ("past_sequence_length + 1").
  std::optional<std::int64_t> dim_value(const std::string& param) const {
    if (auto it = options_.dims.find(param); it != options_.dims.end()) return it->second;
    const auto set = [&](std::string_view name) -> std::optional<std::int64_t> {
      const auto it = options_.dims.find(std::string(name));
      if (it == options_.dims.end()) return std::nullopt;
      return it->second;
    };
    if (batch_like(param)) return set("batch").value_or(1);
    const auto sequence = [&]() -> std::optional<std::int64_t> {
      for (std::string_view name : kSequenceNames) {
        if (auto value = set(name)) return value;
      }
      return std::nullopt;
    };
    if (is_one_of(kSequenceNames, param)) return sequence();
    const auto past = [&]() -> std::int64_t {
      for (std::string_view name : kPastNames) {
        if (auto value = set(name)) return *value;
      }
      return options_.counting.kv_cache_length;
    };
    if (is_one_of(kPastNames, param)) return past();
    if (is_one_of(kTotalNames, param)) {
      if (auto s = sequence()) return checked_add(past(), *s);
      return std::nullopt;
    }
    if (param.find_first_of("+-*/()") == std::string::npos) return std::nullopt;
    struct Scope : NameScope {
      const Importer* importer;
      explicit Scope(const Importer* i) : importer(i) {}
      std::optional<std::int64_t> lookup(std::string_view name) const override {
        return importer->dim_value(std::string(name));
      }
      std::vector<std::string> names() const override { return {}; }
    } scope(this);
    try {
      return evaluate_expression(param, scope);
    } catch (const std::exception&) {
      return std::nullopt;  // Not an expression of known dims: "not set" below.
    }
  }

  // ONNX shape inference in rounds; between them capcalc folds the shape arithmetic (Shape ->
  // Gather -> Concat -> Reshape) to constants. Operators ONNX does not know get their first
  // input's shape, and inference runs again from there.
  void infer_shapes() {
    // ONNX refuses nodes of a domain the model does not import; custom domains are common.
    std::set<std::string> domains;
    for (const auto& opset : model_.opset_import())
      domains.insert(opset.domain());
    for (const auto& node : graph_proto_.node()) {
      if (domains.insert(node.domain()).second) {
        auto* opset = model_.add_opset_import();
        opset->set_domain(node.domain());
        opset->set_version(1);
      }
    }
    // Inference needs the values of small constants only (shapes, axes, scales); dropping
    // the weights' data keeps it from copying them.
    for (auto& init : *graph_proto_.mutable_initializer()) {
      // Counted only as far as 4097: the dims are whatever the file says, and their product
      // can overflow (found by fuzzing).
      std::int64_t elements = 1;
      for (std::int64_t d : init.dims()) {
        if (d > 0) elements = d > 4096 / elements ? 4097 : elements * d;
      }
      if (elements > 4096) {
        init.clear_raw_data();
        init.clear_float_data();
        init.clear_double_data();
        init.clear_int32_data();
        init.clear_external_data();
      }
    }
    // No data propagation: ONNX 1.12's dereferences the type of a Shape node's input unchecked,
    // and a value without one (the output of an operator ONNX has no schema for, or of a node
    // whose inference failed) made `Shape` of it a crash (found by fuzzing). The shape
    // arithmetic it would propagate is folded by fold_shape_arithmetic between rounds instead.
    const onnx::ShapeInferenceOptions inference(/*check_type=*/false, /*error_mode=*/0,
                                                /*enable_data_propagation=*/false);
    // Each round gets past the operators that ONNX cannot infer (onnxruntime's fused ones, a
    // passthrough) for one more stretch of the graph: a fused transformer needs a few per layer.
    // STFT's inference reads its signal's first two dims unchecked (a crash on a scalar, found
    // by fuzzing): an STFT waits in a private domain, which ONNX skips, until a round has
    // given its signal a shape of rank 2 or more.
    auto* waiting = model_.add_opset_import();
    waiting->set_domain(std::string(kWaitingDomain));
    waiting->set_version(1);
    hold_unready_nodes();
    for (int round = 0; round < kMaxInferenceRounds; ++round) {
      try {
        onnx::shape_inference::InferShapes(model_, onnx::OpSchemaRegistry::Instance(), inference);
      } catch (const std::exception& e) {
        fail("", fmt::format("ONNX shape inference failed: {}", e.what()));
      }
      collect_shapes();
      // Exporters compute slice bounds and reshape targets from Shape at run time; with every
      // input dimension set, those are constants that the next round can read.
      bool added =
          onnx_import::fold_shape_arithmetic(
              graph_proto_,
              [this](const std::string& name) -> std::optional<std::vector<std::int64_t> > {
                const auto it = shapes_.find(name);
                if (it == shapes_.end() || !it->second.complete()) return std::nullopt;
                return it->second.dims;
              }) > 0;
      added = set_if_output_shapes() || added;
      added = set_loop_output_shapes() || added;
      for (const auto& node : graph_proto_.node()) {
        if (node.input_size() == 0 || node.output_size() == 0) continue;
        if (node.domain() == kWaitingDomain) continue;  // ONNX infers it once released.
        const OpRule* rule = find_rule(node);
        const bool has_schema =
            onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset_),
                                           node.domain()) != nullptr;
        const bool einsum = rule != nullptr && rule->rule == Rule::kEinsum;
        if (has_schema && !einsum && (rule == nullptr || !rule->shape_passthrough)) continue;
        if (const auto fused = fused_output_shapes(node)) {
          for (std::size_t i = 0; i < fused->size(); ++i) {
            const std::string& output = node.output(static_cast<int>(i));
            if (output.empty() || !(*fused)[i] || !write_shape(output, *(*fused)[i])) continue;
            assumed_.insert(output);
            added = true;
          }
          continue;
        }
        const auto in = shapes_.find(node.input(0));
        const auto out = shapes_.find(node.output(0));
        if (in == shapes_.end() || !in->second.complete()) continue;
        if (out != shapes_.end() && out->second.complete()) continue;
        std::optional<Shape> shape = in->second.dims;
        if (einsum) shape = einsum_output(node);
        if (node.op_type() == "MatMulNBits" && !shape->empty()) {
          shape->back() = attribute_int(node, "N", 0);  // [..., K] x [K, N].
          if (shape->back() <= 0) shape.reset();
        }
        if (!shape || !write_shape(node.output(0), *shape)) continue;
        assumed_.insert(node.output(0));
        added = true;
      }
      const bool released = hold_unready_nodes();
      if (!added && !released) break;
    }
    for (int i = 0; i < graph_proto_.node_size(); ++i) {
      onnx::NodeProto& node = *graph_proto_.mutable_node(i);
      if (node.domain() != kWaitingDomain) continue;
      node.set_domain("");
      const auto signal = shapes_.find(node.input(0));
      if (signal != shapes_.end() && signal->second.complete() && signal->second.dims.size() < 2) {
        fail(node_pointer(i), fmt::format("node \"{}\" (STFT): its signal has rank {}; STFT needs "
                                          "[batch, length, 1 or 2]",
                                          node_name(node, i), signal->second.dims.size()));
      }
    }
  }

  static constexpr std::string_view kWaitingDomain = "capcalc.waiting";

  // Moves each STFT whose signal has no known shape of rank 2 or more into kWaitingDomain, and
  // back once it has one; true if one came back (another round is needed to infer it).
  bool hold_unready_nodes() {
    bool released = false;
    for (auto& node : *graph_proto_.mutable_node()) {
      const bool stft =
          node.op_type() == "STFT" && node.input_size() > 0 &&
          (node.domain().empty() || node.domain() == "ai.onnx" || node.domain() == kWaitingDomain);
      if (!stft) continue;
      const auto signal = shapes_.find(node.input(0));
      const bool ready = signal != shapes_.end() && signal->second.dims.size() >= 2;
      if (ready && node.domain() == kWaitingDomain) {
        node.set_domain("");
        released = true;
      } else if (!ready) {
        node.set_domain(std::string(kWaitingDomain));
      }
    }
    return released;
  }

  // The output shapes of onnxruntime's fused operators (ONNX has no schema for them), or
  // nullopt for the other operators. An output whose shape is not known yet is nullopt.
  std::optional<std::vector<std::optional<Shape> > > fused_output_shapes(
      const onnx::NodeProto& node) const {
    const std::string& op = node.op_type();
    const bool attention =
        op == "Attention" || op == "MultiHeadAttention" || op == "GroupQueryAttention";
    const bool skip_norm =
        op == "SkipLayerNormalization" || op == "SkipSimplifiedLayerNormalization";
    if ((!attention && !skip_norm && op != "EmbedLayerNormalization") ||
        (!node.domain().empty() && node.domain() != "com.microsoft")) {
      return std::nullopt;
    }
    std::vector<Shape> in;
    for (int slot = 0; slot < node.input_size(); ++slot) {
      const auto it = shapes_.find(node.input(slot));
      in.push_back(it != shapes_.end() && it->second.complete() ? it->second.dims : Shape{});
    }
    std::vector<std::optional<Shape> > out(static_cast<std::size_t>(node.output_size()));
    const auto set = [&](std::size_t i, Shape shape) {
      if (i < out.size()) out[i] = std::move(shape);
    };
    if (attention) {
      const std::optional<AttentionSizes> a = fused_attention_sizes(node, in);
      if (!a) return out;
      set(0, {a->batch, a->queries, checked_mul(a->heads, a->v_head_dim)});
      if (op == "Attention") {
        set(1, {2, a->batch, a->heads, a->keys, a->head_dim});
      } else {
        set(1, {a->batch, a->kv_heads, a->keys, a->head_dim});
        set(2, {a->batch, a->kv_heads, a->keys, a->v_head_dim});
      }
    } else if (skip_norm) {
      if (in.empty() || in[0].empty()) return out;
      Shape reduced = in[0];
      reduced.back() = 1;
      set(0, in[0]);
      set(1, reduced);
      set(2, reduced);
      set(3, in[0]);
    } else {  // EmbedLayerNormalization: ids [B, S], word embedding [V, D].
      if (in.size() < 3 || in[0].size() != 2 || in[2].size() != 2) return out;
      set(0, {in[0][0], in[0][1], in[2][1]});
      set(1, {in[0][0]});
      set(2, {in[0][0], in[0][1], in[2][1]});
    }
    return out;
  }

  // ONNX merges an If's output shapes over both branches, losing dims where they differ. With a
  // constant condition, the selected branch's shapes are the outputs': written back, they
  // reach the nodes downstream in the next round.
  bool set_if_output_shapes() {
    bool changed = false;
    for (const auto& node : graph_proto_.node()) {
      if (node.op_type() != "If" || node.input_size() < 1) continue;
      const std::optional<bool> condition = constant_bool(node.input(0));
      if (!condition) continue;
      const onnx::GraphProto* branch =
          graph_attribute(node, *condition ? "then_branch" : "else_branch");
      if (branch == nullptr) continue;
      for (int i = 0; i < node.output_size() && i < branch->output_size(); ++i) {
        const auto in = shapes_.find(branch->output(i).name());
        if (node.output(i).empty() || in == shapes_.end() || !in->second.complete()) continue;
        changed = write_shape(node.output(i), in->second.dims) || changed;
      }
    }
    return changed;
  }

  // ONNX leaves a Loop's scan outputs without their leading dimension (the trip count); with a
  // trip count known at import they are [trips, ...the body's output], and the loop-carried
  // outputs have the body's shapes.
  bool set_loop_output_shapes() {
    bool changed = false;
    for (const auto& node : graph_proto_.node()) {
      if (node.op_type() != "Loop" || node.input_size() < 2 || node.input(0).empty()) continue;
      const std::optional<std::int64_t> trips = constant_int(node.input(0));
      if (!trips || *trips < 0 || *trips > kMaxLoopIterations) continue;
      const onnx::GraphProto* body = graph_attribute(node, "body");
      const int carried = node.input_size() - 2;
      if (body == nullptr || body->output_size() < carried + 1) continue;
      for (int i = 0; i < node.output_size() && 1 + i < body->output_size(); ++i) {
        const auto in = shapes_.find(body->output(1 + i).name());
        if (node.output(i).empty() || in == shapes_.end() || !in->second.complete()) continue;
        Shape shape = in->second.dims;
        if (i >= carried) shape.insert(shape.begin(), *trips);
        changed = write_shape(node.output(i), shape) || changed;
      }
    }
    return changed;
  }

  // Sets a graph value's shape (its value_info and graph output entries) unless ONNX already
  // knows it; the next inference round reads it.
  bool write_shape(const std::string& name, const Shape& shape) {
    const auto known = shapes_.find(name);
    if (known != shapes_.end() && known->second.complete()) return false;
    std::vector<onnx::ValueInfoProto*> infos;
    for (auto& existing : *graph_proto_.mutable_value_info()) {
      if (existing.name() == name) infos.push_back(&existing);
    }
    for (auto& existing : *graph_proto_.mutable_output()) {
      if (existing.name() == name) infos.push_back(&existing);
    }
    if (infos.empty()) {
      infos.push_back(graph_proto_.add_value_info());
      infos.back()->set_name(name);
    }
    for (onnx::ValueInfoProto* info : infos) {
      auto& tensor = *info->mutable_type()->mutable_tensor_type();
      if (tensor.elem_type() == 0) tensor.set_elem_type(onnx::TensorProto::FLOAT);
      tensor.clear_shape();
      for (std::int64_t d : shape)
        tensor.mutable_shape()->add_dim()->set_dim_value(d);
    }
    // Known at once to the nodes after it in this round (a chain of fused operators).
    shapes_[name] = KnownShape{shape, std::vector<std::string>(shape.size())};
    return true;
  }

  void collect_shapes() {
    shapes_.clear();
    const auto add = [&](const onnx::ValueInfoProto& info) {
      if (info.type().has_tensor_type() && info.type().tensor_type().has_shape()) {
        shapes_[info.name()] = from_proto(info.type().tensor_type().shape());
      }
    };
    for (const auto& info : graph_proto_.input())
      add(info);
    for (const auto& info : graph_proto_.value_info())
      add(info);
    for (const auto& info : graph_proto_.output())
      add(info);
    const auto add_initializer = [&](const onnx::TensorProto& init) {
      KnownShape shape;
      shape.dims.assign(init.dims().begin(), init.dims().end());
      shape.params.assign(shape.dims.size(), "");
      shapes_[init.name()] = shape;
    };
    for (const auto& init : graph_proto_.initializer())
      add_initializer(init);
    // Shape inference writes the shapes inside subgraphs (If branches) into the subgraphs.
    const std::function<void(const onnx::GraphProto&)> add_subgraphs =
        [&](const onnx::GraphProto& graph) {
          for (const auto& node : graph.node()) {
            for (const auto& a : node.attribute()) {
              if (a.type() != onnx::AttributeProto::GRAPH) continue;
              for (const auto& info : a.g().input())
                add(info);
              for (const auto& info : a.g().value_info())
                add(info);
              for (const auto& info : a.g().output())
                add(info);
              for (const auto& init : a.g().initializer())
                add_initializer(init);
              add_subgraphs(a.g());
            }
          }
        };
    add_subgraphs(graph_proto_);
  }

  Shape shape_of(const std::string& tensor, const onnx::NodeProto& node, int index) const {
    const auto it = shapes_.find(tensor);
    const std::string where = node_pointer(index);
    if (it == shapes_.end()) {
      fail(where, fmt::format("node \"{}\" ({}): ONNX shape inference could not infer the shape "
                              "of \"{}\"",
                              node_name(node, index), qualified_op(node), tensor));
    }
    for (std::size_t a = 0; a < it->second.dims.size(); ++a) {
      if (it->second.dims[a] < 0) {
        const std::string& param = it->second.params[a];
        fail(where, fmt::format("node \"{}\" ({}): axis {} of \"{}\" has no known size{}",
                                node_name(node, index), qualified_op(node), a, tensor,
                                param.empty() ? "" : fmt::format(" (\"{}\")", param)));
      }
    }
    return it->second.dims;
  }

  std::string node_name(const onnx::NodeProto& node, int index) const {
    if (node.name().empty()) return fmt::format("{}{}_{}", name_prefix_, node.op_type(), index);
    return prefix_names_ ? name_prefix_ + node.name() : node.name();
  }

  // The JSON pointer of node `index` of the graph being read (a branch of If: its subgraph).
  // Nodes expanded from a local function point at the call.
  std::string node_pointer(int index) const {
    if (scope_ == "/graph" && static_cast<std::size_t>(index) < origins_.size()) {
      return origins_[static_cast<std::size_t>(index)];
    }
    return fmt::format("{}/node/{}", scope_, index);
  }

  std::int32_t group_of(const std::string& name) {
    // Exporters name nodes by module path ("/layer1/layer1.0/conv1/Conv"): the first two
    // levels are the unit of activation checkpointing, like a top-level block call.
    std::string key = name;
    if (!name.empty() && name[0] == '/') {
      const std::size_t second = name.find('/', 1);
      const std::size_t third = second == std::string::npos ? second : name.find('/', second + 1);
      key = name.substr(0, third);
    }
    const auto [it, inserted] = groups_.emplace(key, static_cast<std::int32_t>(groups_.size()));
    return it->second;
  }

  // The complete shape of a value, if inference found one.
  std::optional<Shape> complete_shape(const onnx::NodeProto& node, int slot) const {
    if (node.input_size() <= slot || node.input(slot).empty()) return std::nullopt;
    const auto it = shapes_.find(node.input(slot));
    if (it == shapes_.end() || !it->second.complete()) return std::nullopt;
    return it->second.dims;
  }

  // Operands that cannot go together (ONNX's inference, run leniently, passes over them): a
  // convolution's channels and groups, a product's inner dimensions, a reshape's element count.
  void check_operands(const onnx::NodeProto& node, int index) const {
    if (!node.domain().empty() && node.domain() != "ai.onnx") return;
    const std::string& op = node.op_type();
    const auto bad = [&](const std::string& message) {
      fail(node_pointer(index),
           fmt::format("node \"{}\" ({}): {}", node_name(node, index), op, message));
    };
    const std::optional<Shape> a = complete_shape(node, 0);
    const std::optional<Shape> b = complete_shape(node, 1);
    if (op == "Conv" && a && b && a->size() >= 3 && b->size() == a->size()) {
      const std::int64_t group = attribute_int(node, "group", 1);
      const std::int64_t channels = (*a)[1];
      if ((*b)[1] > channels / group || (*b)[1] * group != channels) {
        bad(
            fmt::format("the input has {} channels, but the weight takes {} per group x {} "
                        "group{}",
                        channels, (*b)[1], group, group == 1 ? "" : "s"));
      }
      if ((*b)[0] % group != 0) {
        bad(fmt::format("{} output channels do not split into {} groups", (*b)[0], group));
      }
    }
    if (op == "Gemm" && a && b && a->size() == 2 && b->size() == 2) {
      const std::int64_t k_a = attribute_int(node, "transA", 0) != 0 ? (*a)[0] : (*a)[1];
      const std::int64_t k_b = attribute_int(node, "transB", 0) != 0 ? (*b)[1] : (*b)[0];
      if (k_a != k_b) {
        bad(fmt::format("A gives K = {} but B takes K = {} (A {}, B {}{})", k_a, k_b,
                        format_shape(*a), format_shape(*b),
                        attribute_int(node, "transB", 0) != 0 ? ", transB" : ""));
      }
    }
    if (op == "MatMul" && a && b && !a->empty() && !b->empty()) {
      const std::int64_t k_a = a->back();
      const std::int64_t k_b = b->size() == 1 ? (*b)[0] : (*b)[b->size() - 2];
      if (k_a != k_b) {
        bad(fmt::format("{} x {}: the inner dimensions {} and {} differ", format_shape(*a),
                        format_shape(*b), k_a, k_b));
      }
    }
    if (op == "Reshape" && a && node.output_size() > 0) {
      const auto out = shapes_.find(node.output(0));
      if (out != shapes_.end() && out->second.complete()) {
        const std::int64_t in_elements = element_count(*a);
        const std::int64_t out_elements = element_count(out->second.dims);
        if (in_elements != out_elements) {
          bad(fmt::format("reshapes {} ({} elements) to {} ({} elements)", format_shape(*a),
                          in_elements, format_shape(out->second.dims), out_elements));
        }
      }
    }
  }

  static std::string format_shape(const Shape& shape) {
    return fmt::format("[{}]", fmt::join(shape, ", "));
  }

  void add_node(const onnx::NodeProto& node, int index) {
    check_operands(node, index);
    if (node.op_type() == "If" && (node.domain().empty() || node.domain() == "ai.onnx")) {
      add_if(node, index);
      return;
    }
    // A Loop whose trip count is not known at import (or too large to unroll) stays an unknown
    // operator: listed and warned about, as before.
    if (node.op_type() == "Loop" && (node.domain().empty() || node.domain() == "ai.onnx") &&
        node.input_size() >= 2 && !node.input(0).empty()) {
      if (const auto trips = constant_int(node.input(0));
          trips && *trips >= 0 && *trips <= kMaxLoopIterations) {
        add_loop(node, index, *trips);
        return;
      }
    }
    if (node.op_type() == "Scan" && (node.domain().empty() || node.domain() == "ai.onnx")) {
      if (const auto trips = scan_trips(node); trips && *trips <= kMaxLoopIterations) {
        add_scan(node, index, *trips);
        return;
      }
    }
    const OpRule* rule = find_rule(node);
    bool any_activation = false;
    bool all_meta = true;
    for (const std::string& input : node.input()) {
      if (input.empty()) continue;
      const Value& value = value_of(input, node, index);
      any_activation = any_activation || value.kind == Kind::kActivation;
      all_meta = all_meta && value.kind == Kind::kMeta;
    }
    if (rule != nullptr && rule->rule == Rule::kMeta) {
      for (const std::string& output : node.output())
        values_[output] = meta_value();
      return;
    }
    if (!any_activation || (rule != nullptr && rule->rule == Rule::kConstant)) {
      // Folded: computed from constants only. Parameters flow through to whoever uses it.
      Value folded;
      if (all_meta && node.input_size() > 0) folded.kind = Kind::kMeta;
      for (const std::string& input : node.input()) {
        if (input.empty()) continue;
        const Value& value = values_.at(input);
        folded.roots.insert(folded.roots.end(), value.roots.begin(), value.roots.end());
      }
      for (const std::string& output : node.output())
        values_[output] = folded;
      return;
    }

    const std::string name = node_name(node, index);
    Layer layer;
    layer.name = name;
    layer.definition = node_pointer(index);
    layer.group = group_of(name);
    bool any_needs_grad = false;
    bool has_weights = false;
    std::vector<Shape> shapes;
    std::vector<bool> constant;
    std::int64_t activation_elements = 0;
    std::int64_t constant_elements = 0;
    std::int64_t params = 0;
    int operands_needing_grad = 0;
    std::int64_t weight_slots = 0;  // Inputs that hold parameters.
    const Operands operands = operands_of(node.op_type());
    for (int slot = 0; slot < node.input_size(); ++slot) {
      const std::string& input = node.input(slot);
      if (input.empty()) {
        shapes.emplace_back();
        constant.push_back(true);
        continue;
      }
      const Value& value = values_.at(input);
      const bool is_activation = value.kind == Kind::kActivation;
      constant.push_back(!is_activation);
      if (value.kind == Kind::kMeta) {
        shapes.emplace_back();
        continue;
      }
      shapes.push_back(shape_of(input, node, index));
      if (is_activation) {
        layer.inputs.push_back(value.id);
        any_needs_grad = any_needs_grad || value.needs_grad;
        operands_needing_grad += value.needs_grad ? 1 : 0;
        activation_elements = checked_add(activation_elements, element_count(shapes.back()));
      } else {
        constant_elements = checked_add(constant_elements, element_count(shapes.back()));
        if (rule != nullptr && is_param_slot(rule->rule, node.op_type(), slot)) {
          const bool had_weights = has_weights;
          has_weights = false;
          for (const std::string& root : value.roots) {
            if (initializers_.at(root)->data_type() == onnx::TensorProto::INT32 &&
                !(operands.quantised && slot == operands.bias)) {
              continue;  // Indices, shapes: not parameters.
            }
            has_weights = true;
            if (counted_.insert(root).second) {
              // MatMulNBits packs K x N weights into bytes: count the weights.
              const bool packed = node.op_type() == "MatMulNBits" && slot == 1;
              params = checked_add(params, packed ? checked_mul(attribute_int(node, "K", 0),
                                                                attribute_int(node, "N", 0))
                                                  : element_count(shapes_.at(root).dims));
            }
          }
          if (has_weights) ++weight_slots;
          has_weights = has_weights || had_weights;
        }
      }
    }

    if (rule == nullptr) {
      note_unknown(qualified_op(node), node_pointer(index));
      layer.op = lowercase(qualified_op(node));
      layer.view = false;
      layer.traits.op_class = OpClass::kUnknown;
      const std::string& out = node.output_size() > 0 ? node.output(0) : node.input(0);
      const auto known = shapes_.find(out);
      layer.output =
          known != shapes_.end() && known->second.complete() ? known->second.dims : shapes.front();
      finish(node, std::move(layer), any_needs_grad);
      return;
    }

    if (rule->rule == Rule::kFusedAttention && !fused_attention_sizes(node, shapes)) {
      fail_attention_shapes(node, shapes, name, layer.definition);
    }
    // LSTM and GRU may leave Y unnamed and give only Y_h: the first output named is the layer's.
    const auto named = std::find_if(node.output().begin(), node.output().end(),
                                    [](const std::string& output) { return !output.empty(); });
    const Shape out = shape_of(named != node.output().end() ? *named : std::string(), node, index);
    const std::int64_t out_elements = element_count(out);
    LayerCounts c;
    std::string op(rule->name);
    bool view = false;
    layer.traits = rule_traits(rule->rule);
    const OpClass op_class = layer.traits.op_class;
    if (op_class == OpClass::kMatrix || op_class == OpClass::kAttention) {
      layer.traits.weight_tensors = weight_slots;
    }
    switch (rule->rule) {
      case Rule::kConv:
      case Rule::kConvTranspose: {
        const Operands& o = operands;
        const Shape& x = shapes.at(static_cast<std::size_t>(o.x));
        const Shape& w = shapes.at(static_cast<std::size_t>(o.w));
        if (x.size() < 3 || w.size() != x.size()) {
          fail(layer.definition, fmt::format("node \"{}\": expected [N, C, ...] input and weight, "
                                             "got {} and {}",
                                             name, shape_to_string(x), shape_to_string(w)));
        }
        const std::int64_t groups = attribute_int(node, "group", 1);
        const bool transposed = rule->rule == Rule::kConvTranspose;
        const std::int64_t out_channels = transposed ? checked_mul(w[1], groups) : w[0];
        const bool bias = has_input(node, o.bias);
        c = formulas::conv_counts({element_count(x), out_elements, x[1], out_channels, groups,
                                   product(w, 2), bias, transposed});
        formulas::add_weighted_backward(c, any_needs_grad);
        op = fmt::format("{}{}d", rule->name, x.size() - 2);
        {
          // Implicit GEMM per group (ops.cpp's convolution says how).
          const std::int64_t in_per_group = x[1] / groups;
          const std::int64_t out_per_group = out_channels / groups;
          const std::int64_t kernel = product(w, 2);
          layer.traits.gemm =
              transposed ? GemmView{element_count(x) / x[1], checked_mul(out_per_group, kernel),
                                    in_per_group, groups}
                         : GemmView{out_elements / out_channels, out_per_group,
                                    checked_mul(in_per_group, kernel), groups};
        }
        break;
      }
      case Rule::kGemm: {
        const Shape& a = shapes.at(0);
        const Shape& b = shapes.at(1);
        if (a.size() != 2 || b.size() != 2) {
          fail(layer.definition, fmt::format("node \"{}\": Gemm needs 2-D operands, got {} and {}",
                                             name, shape_to_string(a), shape_to_string(b)));
        }
        const bool trans_a = attribute_int(node, "transA", 0) != 0;
        const bool trans_b = attribute_int(node, "transB", 0) != 0;
        const std::int64_t m = trans_a ? a[1] : a[0];
        const std::int64_t k = trans_a ? a[0] : a[1];
        const std::int64_t n = trans_b ? b[0] : b[1];
        const bool bias = node.input_size() > 2 && !node.input(2).empty();
        layer.traits.gemm = GemmView{m, n, k, 1};
        if (constant[0] || constant[1]) {
          c = formulas::linear_counts(m, k, n, bias, false);
          formulas::add_weighted_backward(c, any_needs_grad);
        } else {
          op = "matmul";
          c = formulas::matmul_counts(1, m, n, k, activation_elements, out_elements,
                                      operands_needing_grad);
          if (bias) c.other_flops = out_elements;
        }
        break;
      }
      case Rule::kMatMul: {
        const Operands& o = operands;
        const auto xa = static_cast<std::size_t>(o.x);
        const auto wb = static_cast<std::size_t>(o.w);
        Shape a = shapes.at(xa);
        Shape b = shapes.at(wb);
        if (node.op_type() == "MatMulNBits") {
          // B holds [N, blocks, block bytes]; the product is with a K x N matrix.
          b = {attribute_int(node, "K", 0), attribute_int(node, "N", 0)};
          constant_elements = checked_mul(b[0], b[1]);
        }
        if (a.empty() || b.empty()) fail(layer.definition, "MatMul of a scalar");
        const std::int64_t k = a.back();
        const std::int64_t m = a.size() >= 2 ? a[a.size() - 2] : 1;
        const std::int64_t n = b.size() >= 2 ? b.back() : 1;
        if (constant[wb] && b.size() == 2 && !constant[xa]) {
          // x @ W: a dense layer without bias (exporters add the bias as a separate Add).
          op = "linear";
          const bool bias = has_input(node, o.bias);
          c = formulas::linear_counts(element_count(a) / k, k, n, bias, false);
          formulas::add_weighted_backward(c, any_needs_grad);
          // [..., K] x [K, N] is one product whatever the leading axes: M is their product.
          layer.traits.gemm = GemmView{element_count(a) / k, n, k, 1};
        } else if (constant[xa] || constant[wb]) {
          op = "linear";
          c.macs = checked_mul(out_elements, k);
          c.input_elements = activation_elements;
          c.weight_elements_read = constant_elements;
          c.output_elements = out_elements;
          formulas::add_weighted_backward(c, any_needs_grad);
        } else {
          c = formulas::matmul_counts(out_elements / checked_mul(m, n), m, n, k,
                                      activation_elements, out_elements, operands_needing_grad);
          layer.traits.gemm = GemmView{m, n, k, out_elements / checked_mul(m, n)};
        }
        break;
      }
      case Rule::kEinsum: {
        const std::int64_t macs = einsum_macs(node, shapes, name, layer.definition);
        if (node.input_size() == 1) {
          if (element_count(shapes.at(0)) == out_elements) {
            view = true;
          } else {
            c = formulas::elementwise_counts(activation_elements, out_elements, 0);
            c.other_flops = element_count(shapes.at(0));
            c.backward_other_flops = checked_mul(c.other_flops, 2);
          }
        } else if (constant[0] || constant[1]) {
          c.macs = macs;
          c.input_elements = activation_elements;
          c.weight_elements_read = constant_elements;
          c.output_elements = out_elements;
          formulas::add_weighted_backward(c, any_needs_grad);
        } else {
          c = formulas::matmul_counts(macs, 1, 1, 1, activation_elements, out_elements,
                                      operands_needing_grad);
        }
        break;
      }
      case Rule::kBatchNorm:
      case Rule::kLayerNorm:
      case Rule::kGroupNorm:
      case Rule::kUnary:
      case Rule::kBiased:
      case Rule::kSoftmax:
        c = formulas::elementwise_counts(activation_elements, out_elements,
                                         rule->flops + (has_input(node, rule->bias_slot) ? 1 : 0));
        c.weight_elements_read = constant_elements;
        break;
      case Rule::kBinary:
        c = formulas::elementwise_counts(activation_elements, out_elements,
                                         std::max(1, node.input_size() - 1));
        c.weight_elements_read = constant_elements;
        break;
      case Rule::kReduce:
      case Rule::kGlobalPool:
        c = formulas::elementwise_counts(activation_elements, out_elements, 0);
        c.other_flops = element_count(shapes.at(0));  // One per input element, as global_avgpool.
        c.backward_other_flops = checked_mul(c.other_flops, 2);
        break;
      case Rule::kPool: {
        std::int64_t kernel = 1;
        for (std::int64_t k : attribute_ints(node, "kernel_shape"))
          kernel = checked_mul(kernel, k);
        c = formulas::elementwise_counts(activation_elements, out_elements, kernel);
        op = fmt::format("{}{}d", rule->name, shapes.at(0).size() - 2);
        break;
      }
      case Rule::kCopy:
        c = formulas::elementwise_counts(activation_elements, out_elements, 0);
        c.weight_elements_read = constant_elements;
        break;
      case Rule::kResize: {
        const std::string mode = attribute_string(node, "mode", "nearest");
        // Linear: 4 weights applied and summed (bilinear); cubic: 16 weights (4·4 mul, 15 add).
        const std::int64_t flops = mode == "linear" || mode == "bilinear" ? formulas::kBilinearFlops
                                   : mode == "cubic"                      ? 31
                                                                          : 0;
        c = formulas::elementwise_counts(activation_elements, out_elements, flops);
        break;
      }
      case Rule::kGather:
        if (constant[0] && !constant[1]) {
          // An embedding lookup: reads one row per id (data/README.md, `embedding`).
          op = "embedding";
          c.input_elements = activation_elements;
          c.output_elements = out_elements;
          c.weight_elements_read = out_elements;
          c.backward_other_flops = out_elements;
        } else {
          view = true;
        }
        break;
      case Rule::kView:
      case Rule::kSplit:
        view = true;
        break;
      case Rule::kRecurrent:
        c = recurrent_counts(node, shapes, activation_elements, constant_elements, out_elements,
                             name, layer.definition);
        formulas::add_weighted_backward(c, any_needs_grad);
        break;
      case Rule::kLrn: {
        const std::int64_t size = attribute_int(node, "size", 0);
        if (size <= 0) fail(layer.definition, fmt::format("node \"{}\" (LRN) needs a size", name));
        c = formulas::elementwise_counts(activation_elements, out_elements,
                                         checked_add(checked_mul(2, size), 3));
        break;
      }
      case Rule::kFusedAttention:
        c = fused_attention_counts(node, shapes, activation_elements, out_elements, name,
                                   layer.definition);
        c.weight_elements_read = constant_elements;
        break;
      case Rule::kEmbedLayerNorm: {
        // Reads one row of each table per token (word, position, and segment when given),
        // adds them and normalises: 1 or 2 adds and LayerNorm's 8 FLOPs per element.
        const std::int64_t tables = has_input(node, 1) && has_input(node, 4) ? 3 : 2;
        c.input_elements = activation_elements;
        c.output_elements = out_elements;
        c.weight_elements_read =
            checked_add(checked_mul(tables, out_elements), element_count(shapes.at(5)) * 2);
        c.other_flops = checked_mul(out_elements, tables - 1 + formulas::kLayerNormFlops);
        c.backward_other_flops = checked_mul(c.other_flops, 2);
        break;
      }
      case Rule::kMeta:
      case Rule::kConstant:
        break;
    }
    c.params = params;
    c.active_params = params;  // No mixture of experts in ONNX graphs.
    layer.op = op;
    layer.output = out;
    layer.counts = c;
    layer.view = view;
    if (view) layer.traits = rule_traits(Rule::kView);
    finish(node, std::move(layer), any_needs_grad || has_weights);
  }

  // Adds the layer for output 0, and a view layer for each further output that is used.
  void finish(const onnx::NodeProto& node, Layer layer, bool needs_grad) {
    const std::string base = layer.name;
    const std::int32_t group = layer.group;
    const std::vector<std::int32_t> inputs = layer.inputs;
    graph_.layers.push_back(std::move(layer));
    const auto define = [&](const std::string& output) {
      Value value;
      value.kind = Kind::kActivation;
      value.id = graph_.layer_value(graph_.layers.size() - 1);
      value.needs_grad = needs_grad;
      values_[output] = value;
    };
    if (node.output_size() > 0) define(node.output(0));
    for (int i = 1; i < node.output_size(); ++i) {
      const std::string& output = node.output(i);
      if (output.empty() || used_.count(output) == 0) continue;
      Layer extra;
      extra.name = fmt::format("{}:{}", base, i);
      extra.op = graph_.layers.back().op;
      extra.inputs = inputs;
      extra.view = true;
      extra.traits = rule_traits(Rule::kView);
      extra.group = group;
      extra.definition = graph_.layers.back().definition;
      const auto it = shapes_.find(output);
      extra.output = it != shapes_.end() && it->second.complete() ? it->second.dims : Shape{};
      graph_.layers.push_back(std::move(extra));
      define(output);
    }
  }

  // The output shape of an einsum whose inputs are all known (ONNX 1.12 infers only its rank).
  std::optional<Shape> einsum_output(const onnx::NodeProto& node) const {
    std::vector<Shape> shapes;
    for (const std::string& input : node.input()) {
      const auto it = shapes_.find(input);
      if (it == shapes_.end() || !it->second.complete()) return std::nullopt;
      shapes.push_back(it->second.dims);
    }
    std::string equation = attribute_string(node, "equation", "");
    equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
    const std::size_t arrow = equation.find("->");
    if (arrow == std::string::npos) return std::nullopt;  // Implicit output: not supported.
    std::map<std::string, std::int64_t> sizes;
    std::size_t ellipsis_rank = 0;
    einsum_sizes(equation.substr(0, arrow), shapes, sizes, ellipsis_rank, "", "");
    Shape out;
    for (const std::string& label : einsum_labels(equation.substr(arrow + 2), ellipsis_rank)) {
      const auto it = sizes.find(label);
      if (it == sizes.end()) return std::nullopt;
      out.push_back(it->second);
    }
    return out;
  }

  // Labels of one einsum term; "..." expands to `ellipsis` labels "...k", counted from the right.
  static std::vector<std::string> einsum_labels(const std::string& term, std::size_t ellipsis) {
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

  // The size of every label of the einsum's left side, given the operands' shapes.
  void einsum_sizes(const std::string& lhs, const std::vector<Shape>& shapes,
                    std::map<std::string, std::int64_t>& sizes, std::size_t& ellipsis_rank,
                    const std::string& name, const std::string& where) const {
    std::vector<std::string> terms;
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = lhs.find(',', start);
      terms.push_back(lhs.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (terms.size() != shapes.size()) {
      fail(where, fmt::format("node \"{}\": einsum \"{}\" has {} operands but the node has {} "
                              "inputs",
                              name, lhs, terms.size(), shapes.size()));
    }
    for (std::size_t t = 0; t < terms.size(); ++t) {
      const std::string& term = terms[t];
      const bool dots = term.find("...") != std::string::npos;
      const std::size_t named = term.size() - (dots ? 3 : 0);
      if (named > shapes[t].size() || (!dots && named != shapes[t].size())) {
        fail(where, fmt::format("node \"{}\": einsum term \"{}\" does not fit {}", name, term,
                                shape_to_string(shapes[t])));
      }
      const std::size_t extra = dots ? shapes[t].size() - named : 0;
      ellipsis_rank = std::max(ellipsis_rank, extra);
      const std::vector<std::string> labels = einsum_labels(term, extra);
      for (std::size_t a = 0; a < labels.size(); ++a) {
        std::int64_t& size = sizes[labels[a]];
        size = std::max(size, shapes[t][a]);
      }
    }
  }

  // MACs of a two-operand einsum: the product of the sizes of every index that appears
  // (each output element sums over the contracted indices). "..." stands for the same
  // leading axes in every operand.
  std::int64_t einsum_macs(const onnx::NodeProto& node, const std::vector<Shape>& shapes,
                           const std::string& name, const std::string& where) const {
    std::string equation = attribute_string(node, "equation", "");
    equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
    std::map<std::string, std::int64_t> sizes;
    std::size_t ellipsis_rank = 0;
    einsum_sizes(equation.substr(0, equation.find("->")), shapes, sizes, ellipsis_rank, name,
                 where);
    std::int64_t macs = 1;
    for (const auto& [label, size] : sizes)
      macs = checked_mul(macs, size);
    return macs;
  }

  // Registers a graph's initializers as constants and reads its nodes in order.
  void read_nodes(const onnx::GraphProto& graph) {
    for (const auto& init : graph.initializer()) {
      initializers_[init.name()] = &init;
      Value value;
      value.kind = Kind::kConstant;
      // int32 tensors are parameters only as the bias of a quantised product (add_node).
      if ((is_parameter_type(init.data_type()) || init.data_type() == onnx::TensorProto::INT32) &&
          init.dims_size() > 0) {
        value.roots = {init.name()};
      }
      values_[init.name()] = value;
    }
    for (const auto& node : graph.node()) {
      for (const std::string& input : node.input())
        used_.insert(input);
    }
    for (const auto& output : graph.output())
      used_.insert(output.name());
    for (int i = 0; i < graph.node_size(); ++i) {
      if (++nodes_read_ > kMaxExpandedNodes) fail_expansion(i, true);
      if (static_cast<std::int64_t>(graph_.layers.size()) > kMaxLayers) fail_expansion(i, false);
      try {
        add_node(graph.node(i), i);
      } catch (const std::out_of_range&) {
        // A known operator with fewer inputs than its formula reads (a malformed node).
        const onnx::NodeProto& node = graph.node(i);
        fail(node_pointer(i),
             fmt::format("node \"{}\" ({}) has too few inputs ({})", node_name(node, i),
                         qualified_op(node), node.input_size()));
      }
    }
  }

  // Reading a subgraph of node `index` (attribute `slot`) `reads` times (a loop's trip count):
  // its nodes' pointers go under it. The readers recurse once per level, so the depth is
  // limited; the nodes that the reads will take at least, with those of the loops around it
  // still to come, are checked before the first, so that loops in loops fail at once.
  void enter_subgraph(const onnx::NodeProto& node, int index, int slot,
                      const onnx::GraphProto& graph, std::int64_t reads) {
    if (static_cast<int>(expanding_.size()) >= kMaxSubgraphDepth) {
      fail(node_pointer(index),
           fmt::format("node \"{}\" ({}): subgraphs nest more than {} deep "
                       "(the limit)",
                       node_name(node, index), qualified_op(node), kMaxSubgraphDepth));
    }
    const auto saturating_mul = [](std::int64_t a, std::int64_t b) {
      return b != 0 && a > (kMaxExpandedNodes + 1) / b ? kMaxExpandedNodes + 1 : a * b;
    };
    std::int64_t ahead = saturating_mul(reads, graph.node_size());
    for (const Expansion& outer : expanding_)
      ahead = saturating_mul(ahead, outer.reads - outer.done);
    expanding_.push_back({node_pointer(index), reads, 0});
    if (ahead > kMaxExpandedNodes - nodes_read_) fail_expansion(index, true);
    scope_ = fmt::format("{}/attribute/{}/g", expanding_.back().pointer, slot);
  }

  void leave_subgraph(std::string saved_scope) {
    expanding_.pop_back();
    scope_ = std::move(saved_scope);
  }

  // Too many nodes to read (loops unrolled inside loops) or layers made. The place is the node
  // whose subgraph is read most often (the outermost of equals), else node `index` of the
  // graph being read.
  [[noreturn]] void fail_expansion(int index, bool nodes) const {
    std::string place = node_pointer(index);
    std::int64_t most = 0;
    for (auto it = expanding_.rbegin(); it != expanding_.rend(); ++it) {
      if (it->reads >= most) {
        place = it->pointer;
        most = it->reads;
      }
    }
    fail(place, fmt::format("the model expands to more than {} (the limit) when its loops are "
                            "unrolled and its If branches read",
                            nodes ? fmt::format("{} nodes", format_grouped(kMaxExpandedNodes))
                                  : fmt::format("{} layers", format_grouped(kMaxLayers))));
  }

  // Loop with a trip count known at import: the body unrolled, once per iteration, its
  // loop-carried values threaded through (the condition is taken to hold unless it is a
  // constant false: an upper bound); each scan output a concatenation of the iterations'
  // values. Layers are named "<Loop node>/<iteration>/<body node>".
  void add_loop(const onnx::NodeProto& node, int index, std::int64_t trips) {
    const std::string name = node_name(node, index);
    int slot = -1;
    const onnx::GraphProto* body = graph_attribute(node, "body", &slot);
    const int carried = node.input_size() - 2;
    if (body == nullptr || carried < 0 || body->input_size() != carried + 2 ||
        body->output_size() < carried + 1) {
      fail(node_pointer(index),
           fmt::format("node \"{}\" (Loop) needs a body with 2 + N inputs and 1 + N + K outputs "
                       "for its N loop-carried values",
                       name));
    }
    std::int64_t iterations = trips;
    if (has_input(node, 1)) {
      if (const std::optional<bool> go = constant_bool(node.input(1)); go && !*go) iterations = 0;
    }
    const Body layout{body, slot, carried, 2, 1};
    const std::vector<std::vector<std::int32_t> > scanned =
        unroll(node, index, layout, iterations, [&](std::int64_t) {
          values_[body->input(0).name()] = meta_value();
          values_[body->input(1).name()] = meta_value();
        });
    stack_scan_outputs(node, index, carried, scanned);
  }

  // Scan (opset 9 on): the body runs once per slice of the scan inputs along their scan axes,
  // a trip count that the inputs' shapes give. Unrolled like Loop: each body scan input is a
  // view of one slice, the N state values are threaded through, and each scan output stacks
  // the iterations' values. Layers are named "<Scan node>/<iteration>/<body node>".
  void add_scan(const onnx::NodeProto& node, int index, std::int64_t trips) {
    const std::string name = node_name(node, index);
    int slot = -1;
    const onnx::GraphProto* body = graph_attribute(node, "body", &slot);
    const std::int64_t scan_inputs = attribute_int(node, "num_scan_inputs", 0);
    const int carried = node.input_size() - static_cast<int>(scan_inputs);
    if (body == nullptr || scan_inputs < 1 || carried < 0 ||
        body->input_size() != node.input_size() || body->output_size() < carried) {
      fail(node_pointer(index),
           fmt::format("node \"{}\" (Scan) needs num_scan_inputs M >= 1 and a body with N + M "
                       "inputs and N + K outputs for its N state values",
                       name));
    }
    const std::vector<std::int64_t> axes = attribute_ints(node, "scan_input_axes");
    std::vector<std::pair<Value, std::int64_t> > sources;  // Scan input and its axis.
    for (int j = 0; j < scan_inputs; ++j) {
      const std::string& input = node.input(carried + j);
      const Value& source = value_of(input, node, index);
      const Shape shape = shape_of(input, node, index);
      const std::int64_t axis = scan_axis(axes, j, shape.size());
      if (axis < 0 || shape[static_cast<std::size_t>(axis)] != trips) {
        fail(node_pointer(index),
             fmt::format("node \"{}\" (Scan): scan input \"{}\" {} has no axis {} of length {}",
                         name, input, shape_to_string(shape),
                         j < static_cast<int>(axes.size()) ? axes[static_cast<std::size_t>(j)] : 0,
                         trips));
      }
      sources.emplace_back(source, axis);
      // The body's slice has the scan input's shape without the scan axis.
      Shape slice = shape;
      slice.erase(slice.begin() + axis);
      shapes_[body->input(carried + j).name()] = KnownShape{slice, {}};
      shapes_[body->input(carried + j).name()].params.assign(slice.size(), "");
    }
    const Body layout{body, slot, carried, 0, 0};
    const std::vector<std::vector<std::int32_t> > scanned =
        unroll(node, index, layout, trips, [&](std::int64_t it) {
          for (int j = 0; j < scan_inputs; ++j) {
            const std::string& input = body->input(carried + j).name();
            const auto& [source, axis] = sources[static_cast<std::size_t>(j)];
            if (source.kind != Kind::kActivation) {
              values_[input] = source;  // A constant sequence: its slices are constants.
              continue;
            }
            Layer slice;
            slice.name = fmt::format("{}/{}/scan_input_{}", name, it, j);
            slice.op = "slice";
            slice.view = true;
            slice.traits = rule_traits(Rule::kView);
            slice.definition = node_pointer(index);
            slice.group = group_of(name);
            slice.inputs = {source.id};
            slice.output = shapes_.at(input).dims;
            graph_.layers.push_back(std::move(slice));
            Value value;
            value.kind = Kind::kActivation;
            value.id = graph_.layer_value(graph_.layers.size() - 1);
            value.needs_grad = source.needs_grad;
            values_[input] = value;
          }
        });
    stack_scan_outputs(node, index, carried, scanned);
  }

  // A Scan's trip count: the length of its first scan input along its scan axis, if known.
  // Opset 8's Scan (a batch axis and sequence_lens) stays an unknown operator.
  std::optional<std::int64_t> scan_trips(const onnx::NodeProto& node) const {
    const std::int64_t scan_inputs = attribute_int(node, "num_scan_inputs", 0);
    const int first = node.input_size() - static_cast<int>(scan_inputs);
    if (opset_ < 9 || scan_inputs < 1 || first < 0 || !has_input(node, first)) return std::nullopt;
    const auto it = shapes_.find(node.input(first));
    if (it == shapes_.end() || !it->second.complete()) return std::nullopt;
    const std::int64_t axis =
        scan_axis(attribute_ints(node, "scan_input_axes"), 0, it->second.dims.size());
    if (axis < 0) return std::nullopt;
    return it->second.dims[static_cast<std::size_t>(axis)];
  }

  // The scan axis of scan input `j` (scan_input_axes, default 0; negative counts from the
  // end), or -1 if out of range.
  static std::int64_t scan_axis(const std::vector<std::int64_t>& axes, int j, std::size_t rank) {
    std::int64_t axis = j < static_cast<int>(axes.size()) ? axes[static_cast<std::size_t>(j)] : 0;
    const auto r = static_cast<std::int64_t>(rank);
    if (axis < 0) axis += r;
    return axis >= 0 && axis < r ? axis : -1;
  }

  // A Loop or Scan body: its subgraph and attribute slot, the number of state values threaded
  // through it, and where they start among the body's inputs and outputs.
  struct Body {
    const onnx::GraphProto* graph;
    int slot;
    int carried;
    int state_in;
    int state_out;
  };

  // Reads the body `iterations` times; `bind(it)` sets the body inputs that are not state.
  // Leaves the final state in the node's first outputs and returns, for each scan output (the
  // body outputs after the state), the iterations' values.
  std::vector<std::vector<std::int32_t> > unroll(const onnx::NodeProto& node, int index,
                                                 const Body& layout, std::int64_t iterations,
                                                 const std::function<void(std::int64_t)>& bind) {
    const onnx::GraphProto& body = *layout.graph;
    const int carried = layout.carried;
    std::vector<Value> state;
    for (int k = 0; k < carried; ++k) {
      // The node's inputs put the initial state where the body's inputs put the state.
      const std::string& initial_name = node.input(layout.state_in + k);
      state.push_back(value_of(initial_name, node, index));
      // A body input without a shape has its initial value's.
      const std::string& body_input = body.input(layout.state_in + k).name();
      const auto known = shapes_.find(body_input);
      const auto initial = shapes_.find(initial_name);
      if ((known == shapes_.end() || !known->second.complete()) && initial != shapes_.end()) {
        shapes_[body_input] = initial->second;
      }
    }
    const int scans = body.output_size() - layout.state_out - carried;
    std::vector<std::vector<std::int32_t> > scanned(static_cast<std::size_t>(scans));
    const std::string name = node_name(node, index);
    const std::string saved_scope = scope_;
    const std::string saved_prefix = name_prefix_;
    const bool saved_prefix_names = prefix_names_;
    enter_subgraph(node, index, layout.slot, body, iterations);
    prefix_names_ = true;
    for (std::int64_t it = 0; it < iterations; ++it) {
      expanding_.back().done = it;
      name_prefix_ = fmt::format("{}/{}/", name, it);
      bind(it);
      for (int k = 0; k < carried; ++k)
        values_[body.input(layout.state_in + k).name()] = state[static_cast<std::size_t>(k)];
      read_nodes(body);
      for (int k = 0; k < carried; ++k) {
        state[static_cast<std::size_t>(k)] =
            value_of(body.output(layout.state_out + k).name(), node, index);
      }
      for (int j = 0; j < scans; ++j) {
        const Value& v = value_of(body.output(layout.state_out + carried + j).name(), node, index);
        if (v.kind == Kind::kActivation) scanned[static_cast<std::size_t>(j)].push_back(v.id);
      }
    }
    leave_subgraph(saved_scope);
    name_prefix_ = saved_prefix;
    prefix_names_ = saved_prefix_names;
    for (int k = 0; k < carried && k < node.output_size(); ++k) {
      if (!node.output(k).empty()) values_[node.output(k)] = state[static_cast<std::size_t>(k)];
    }
    return scanned;
  }

  // One concat layer per scan output (the node's outputs after the `carried` state values),
  // stacking the iterations' values; its shape is the node output's.
  void stack_scan_outputs(const onnx::NodeProto& node, int index, int carried,
                          const std::vector<std::vector<std::int32_t> >& scanned) {
    const std::string name = node_name(node, index);
    const int scans = static_cast<int>(scanned.size());
    for (int j = 0; j < scans && carried + j < node.output_size(); ++j) {
      const std::string& output = node.output(carried + j);
      if (output.empty()) continue;
      Layer layer;
      layer.name = fmt::format("{}/scan_{}", name, j);
      layer.op = "concat";
      layer.traits = rule_traits(Rule::kCopy);
      layer.definition = node_pointer(index);
      layer.group = group_of(name);
      layer.inputs = scanned[static_cast<std::size_t>(j)];
      layer.output = shape_of(output, node, index);
      std::int64_t in_elements = 0;
      for (std::int32_t id : layer.inputs)
        in_elements = checked_add(in_elements, element_count(graph_.value_shape(id)));
      layer.counts = formulas::elementwise_counts(in_elements, element_count(layer.output), 0);
      graph_.layers.push_back(std::move(layer));
      Value value;
      value.kind = Kind::kActivation;
      value.id = graph_.layer_value(graph_.layers.size() - 1);
      value.needs_grad = true;
      values_[output] = value;
    }
  }

  // The sizes of onnxruntime's fused attention (com.microsoft), from its inputs' shapes:
  // Attention packs the Q, K and V projections (x [B, S, D] times weights [D, Dq + Dk + Dv],
  // qkv_hidden_sizes or three equal parts) and may read a past [2, B, N, P, H];
  // MultiHeadAttention takes Q [B, S, Dq] and K, V [B, L, Dk] (or [B, N, L, H]), or Q packed
  // [B, S, N, 3, H], and a past_key [B, N, P, H]; GroupQueryAttention takes Q [B, S, N·H] and
  // K, V [B, S, kvN·H] (or all three packed into Q) and a past_key [B, kvN, P, H]. Keys are
  // the past and the new ones. Empty when a shape does not fit.
  struct AttentionSizes {
    std::int64_t batch = 0, queries = 0, keys = 0, past = 0;
    std::int64_t heads = 0, kv_heads = 0, head_dim = 0, v_head_dim = 0;
    std::int64_t projection_macs = 0;  // Attention's packed Q, K, V projection.
    std::int64_t bias_elements = 0;    // Elements the biases are added to.
    std::int64_t rotary_elements = 0;  // GroupQueryAttention's do_rotary: Q and K rotated.
    bool causal = false;
    std::int64_t window = 0;
  };

  static std::optional<AttentionSizes> fused_attention_sizes(const onnx::NodeProto& node,
                                                             const std::vector<Shape>& shapes) {
    const auto shape = [&](int slot) -> const Shape& {
      static const Shape kNone;
      return slot >= 0 && static_cast<std::size_t>(slot) < shapes.size() && has_input(node, slot)
                 ? shapes[static_cast<std::size_t>(slot)]
                 : kNone;
    };
    AttentionSizes a;
    a.heads = attribute_int(node, "num_heads", 0);
    const Shape& q = shape(0);
    if (a.heads <= 0 || q.size() < 3) return std::nullopt;
    a.batch = q[0];
    a.queries = q[1];
    const std::string& op = node.op_type();
    if (op == "Attention") {
      const Shape& w = shape(1);
      if (q.size() != 3 || w.size() != 2 || w[0] != q[2]) return std::nullopt;
      std::vector<std::int64_t> sizes = attribute_ints(node, "qkv_hidden_sizes");
      if (sizes.empty()) sizes.assign(3, w[1] / 3);
      if (sizes.size() != 3 || sizes[0] + sizes[1] + sizes[2] != w[1] || sizes[0] != sizes[1] ||
          sizes[0] % a.heads != 0 || sizes[2] % a.heads != 0) {
        return std::nullopt;
      }
      a.kv_heads = a.heads;
      a.head_dim = sizes[0] / a.heads;
      a.v_head_dim = sizes[2] / a.heads;
      a.projection_macs = checked_mul(a.batch, a.queries, q[2], w[1]);
      if (has_input(node, 2)) a.bias_elements = checked_mul(a.batch, a.queries, w[1]);
      if (const Shape& past = shape(4); past.size() == 5) a.past = past[3];
      a.causal = attribute_int(node, "unidirectional", 0) != 0;
      a.keys = checked_add(a.past, a.queries);
      return a;
    }
    if (op == "MultiHeadAttention") {
      const Shape& k = shape(1);
      const Shape& v = shape(2);
      a.kv_heads = a.heads;
      if (q.size() == 5) {  // Packed [B, S, N, 3, H].
        if (q[2] != a.heads || q[3] != 3) return std::nullopt;
        a.head_dim = a.v_head_dim = q[4];
        a.keys = a.queries;
      } else if (q.size() == 3 && q[2] % a.heads == 0 && (k.size() == 3 || k.size() == 4) &&
                 v.size() == k.size()) {
        a.head_dim = q[2] / a.heads;
        a.keys = k.size() == 3 ? k[1] : k[2];
        a.v_head_dim = v.size() == 3 ? v[2] / a.heads : v[3];
      } else {
        return std::nullopt;
      }
      if (has_input(node, 3)) {
        a.bias_elements = checked_mul(
            a.batch, checked_add(checked_mul(a.queries, a.heads, a.head_dim),
                                 checked_mul(a.keys, a.heads, a.head_dim + a.v_head_dim)));
      }
      if (const Shape& past = shape(6); past.size() == 4) a.past = past[2];
      a.keys = checked_add(a.keys, a.past);
      a.causal = attribute_int(node, "unidirectional", 0) != 0;
      return a;
    }
    // GroupQueryAttention: causal, K and V heads shared by groups of query heads.
    a.kv_heads = attribute_int(node, "kv_num_heads", 0);
    if (q.size() != 3 || a.kv_heads <= 0 || a.heads % a.kv_heads != 0) return std::nullopt;
    const std::int64_t width = has_input(node, 1) ? a.heads : a.heads + 2 * a.kv_heads;
    if (q[2] % width != 0) return std::nullopt;
    a.head_dim = a.v_head_dim = q[2] / width;
    if (const Shape& past = shape(3); past.size() == 4) a.past = past[2];
    a.keys = checked_add(a.past, a.queries);
    a.causal = true;
    if (attribute_int(node, "do_rotary", 0) != 0) {
      a.rotary_elements = checked_mul(a.batch, a.queries, a.heads + a.kv_heads, a.head_dim);
    }
    const std::int64_t window = attribute_int(node, "local_window_size", -1);
    a.window = window > 0 ? window : 0;
    return a;
  }

  [[noreturn]] void fail_attention_shapes(const onnx::NodeProto& node,
                                          const std::vector<Shape>& shapes, const std::string& name,
                                          const std::string& where) const {
    std::vector<std::string> given;
    for (std::size_t slot = 0; slot < shapes.size() && slot < 4; ++slot)
      given.push_back(shape_to_string(shapes[slot]));
    fail(where, fmt::format("node \"{}\" ({}): its inputs {} and attributes (num_heads{}) do "
                            "not fit the operator's shapes",
                            name, qualified_op(node), fmt::join(given, ", "),
                            node.op_type() == "GroupQueryAttention" ? ", kv_num_heads" : ""));
  }

  // Counted like the native attention's products (data/README.md): QKᵀ and AV per head over
  // the keys, the scale and softmax on every score (6 FLOPs), Attention's packed projection,
  // the biases and GroupQueryAttention's rotary embeddings; the output projection is a separate
  // MatMul in these graphs. A past makes the pairs exact (the new queries over the cached keys);
  // causal self-attention caches its K and V per token.
  LayerCounts fused_attention_counts(const onnx::NodeProto& node, const std::vector<Shape>& shapes,
                                     std::int64_t activation_elements, std::int64_t out_elements,
                                     const std::string& name, const std::string& where) const {
    const std::optional<AttentionSizes> sizes = fused_attention_sizes(node, shapes);
    if (!sizes) fail_attention_shapes(node, shapes, name, where);
    const AttentionSizes& a = *sizes;
    const std::int64_t pairs =
        formulas::attention_pairs(a.queries, a.keys, a.causal, a.window,
                                  a.past > 0 ? CausalCounting::kHalf : options_.counting.causal);
    const std::int64_t scores = checked_mul(a.batch, a.heads, pairs);
    LayerCounts c;
    c.score_macs = checked_mul(scores, a.head_dim + a.v_head_dim);
    c.macs = checked_add(a.projection_macs, c.score_macs);
    // Rotary embeddings inside GroupQueryAttention: x·cos + rotate(x)·sin, 3 per element.
    c.other_flops = checked_add(checked_add(checked_mul(scores, 6), a.bias_elements),
                                checked_mul(a.rotary_elements, 3));
    // Q, K, V and the output written and read once; the scores stay on chip.
    c.input_elements = activation_elements;
    c.output_elements = out_elements;
    c.saved_elements = checked_mul(
        a.batch, checked_add(checked_mul(a.queries, a.heads, a.head_dim + a.v_head_dim),
                             checked_mul(a.keys, a.kv_heads, a.head_dim + a.v_head_dim)));
    if (a.causal) {
      c.kv_cache_per_token = checked_mul(a.kv_heads, a.head_dim + a.v_head_dim);
      c.kv_cache_window = a.window;
      const std::int64_t read = a.window > 0 ? std::min(a.past, a.window) : a.past;
      c.kv_cache_read_elements = checked_mul(a.batch, read, c.kv_cache_per_token);
    }
    c.backward_macs = checked_add(checked_mul(a.projection_macs, 2), checked_mul(c.score_macs, 2));
    c.backward_other_flops = checked_mul(c.other_flops, 2);
    return c;
  }

  // ONNX LSTM, GRU and RNN (default activations). Per time step, direction and sequence of the
  // batch: the gate products W·x and R·h (gates x hidden x (input + hidden) MACs), their sum,
  // the biases (W's and R's) and the cell: LSTM 3 sigmoids, 2 tanh and 4 products/sums per
  // hidden unit; GRU 2 sigmoids, 1 tanh and 4; RNN 1 tanh.
  LayerCounts recurrent_counts(const onnx::NodeProto& node, const std::vector<Shape>& shapes,
                               std::int64_t activation_elements, std::int64_t constant_elements,
                               std::int64_t out_elements, const std::string& name,
                               const std::string& where) const {
    const Shape& x = shapes.at(0);
    const Shape& w = shapes.at(1);
    const Shape& r = shapes.at(2);
    const std::string& op = node.op_type();
    const std::int64_t gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
    if (x.size() != 3 || w.size() != 3 || r.size() != 3 || r[2] <= 0 ||
        w[1] != checked_mul(gates, r[2]) || r[1] != w[1] || r[0] != w[0]) {
      fail(where,
           fmt::format("node \"{}\" ({}): expected X [seq, batch, input], W [dirs, {}·hidden, "
                       "input] and R [dirs, {}·hidden, hidden], got {}, {} and {}",
                       name, op, gates, gates, shape_to_string(x), shape_to_string(w),
                       shape_to_string(r)));
    }
    const bool batch_first = attribute_int(node, "layout", 0) == 1;
    const std::int64_t seq = batch_first ? x[1] : x[0];
    const std::int64_t batch = batch_first ? x[0] : x[1];
    const std::int64_t input = x[2];
    const std::int64_t dirs = w[0];
    const std::int64_t hidden = r[2];
    const bool bias = has_input(node, 3);
    const std::int64_t steps = checked_mul(seq, batch, dirs);
    const std::int64_t gate_width = checked_mul(gates, hidden);
    std::int64_t per_step = gate_width;  // W·x + R·h.
    if (bias) per_step = checked_add(per_step, checked_mul(2, gate_width));
    if (op == "LSTM") {
      per_step = checked_add(per_step, checked_mul(hidden, 3 * formulas::kSigmoidFlops +
                                                               2 * formulas::kTanhFlops + 4));
    } else if (op == "GRU") {
      per_step = checked_add(
          per_step, checked_mul(hidden, 2 * formulas::kSigmoidFlops + formulas::kTanhFlops + 4));
    } else {
      per_step = checked_add(per_step, checked_mul(hidden, formulas::kTanhFlops));
    }
    LayerCounts c;
    c.macs = checked_mul(steps, gate_width, checked_add(input, hidden));
    c.other_flops = checked_mul(steps, per_step);
    c.input_elements = activation_elements;
    c.weight_elements_read = constant_elements;
    c.output_elements = out_elements;
    return c;
  }

  // If: the branch its condition selects when the condition is a constant (as it is once the
  // shape arithmetic is folded); otherwise the costlier branch, an upper bound. Its layers are
  // named "<If node>/then/..." or ".../else/...".
  void add_if(const onnx::NodeProto& node, int index) {
    int slots[2] = {-1, -1};
    const onnx::GraphProto* branches[2] = {graph_attribute(node, "then_branch", &slots[0]),
                                           graph_attribute(node, "else_branch", &slots[1])};
    const std::string name = node_name(node, index);
    if (branches[0] == nullptr || branches[1] == nullptr || node.input_size() < 1) {
      fail(node_pointer(index),
           fmt::format("node \"{}\" (If) needs a condition, then_branch and else_branch", name));
    }
    (void)value_of(node.input(0), node, index);
    if (const std::optional<bool> condition = constant_bool(node.input(0))) {
      const int chosen = *condition ? 0 : 1;
      import_branch(node, index, *branches[chosen], slots[chosen], chosen == 0 ? "then" : "else");
      return;
    }
    // Compared branch by branch: a shape declared on the If's output ([4, 16]) does not make
    // a branch that gives [4, 8] agree.
    for (int i = 0;
         i < node.output_size() && i < branches[0]->output_size() && i < branches[1]->output_size();
         ++i) {
      const auto then_shape = shapes_.find(branches[0]->output(i).name());
      const auto else_shape = shapes_.find(branches[1]->output(i).name());
      if (node.output(i).empty() || then_shape == shapes_.end() || else_shape == shapes_.end() ||
          !then_shape->second.complete() || !else_shape->second.complete()) {
        continue;
      }
      if (then_shape->second.dims != else_shape->second.dims) {
        fail(node_pointer(index),
             fmt::format("node \"{}\" (If): its condition is not known at import and its "
                         "branches give \"{}\" different shapes ({} and {})",
                         name, node.output(i), format_shape(then_shape->second.dims),
                         format_shape(else_shape->second.dims)));
      }
    }
    for (const std::string& output : node.output()) {
      const auto it = shapes_.find(output);
      if (!output.empty() && (it == shapes_.end() || !it->second.complete())) {
        fail(node_pointer(index),
             fmt::format("node \"{}\" (If): its condition is not known at import and its "
                         "branches give \"{}\" different shapes",
                         name, output));
      }
    }
    import_costlier_branch(node, index, branches, slots);
  }

  // Reads a branch's nodes as if they stood in the graph, and binds the If's outputs to the
  // branch's.
  void import_branch(const onnx::NodeProto& node, int index, const onnx::GraphProto& branch,
                     int slot, const char* label) {
    const std::string name = node_name(node, index);
    const std::string saved_scope = scope_;
    const std::string saved_prefix = name_prefix_;
    enter_subgraph(node, index, slot, branch, 1);
    name_prefix_ = fmt::format("{}/{}/", name, label);
    read_nodes(branch);
    leave_subgraph(saved_scope);
    name_prefix_ = saved_prefix;
    if (branch.output_size() < node.output_size()) {
      fail(node_pointer(index), fmt::format("node \"{}\" (If): its {} branch has {} outputs for {}",
                                            name, label, branch.output_size(), node.output_size()));
    }
    for (int i = 0; i < node.output_size(); ++i) {
      if (node.output(i).empty()) continue;
      values_[node.output(i)] = value_of(branch.output(i).name(), node, index);
    }
  }

  // What reading a branch changes: undone to read the other branch, kept if it is chosen.
  struct ImportState {
    std::vector<Layer> layers;  // Those the branch added.
    std::map<std::string, Value> values;
    std::set<std::string> used;
    std::set<std::string> counted;
    std::map<std::string, std::int32_t> groups;
    std::vector<UnknownOperator> unknown;
    std::map<std::string, const onnx::TensorProto*> initializers;
  };

  // Moves the state out: the layers from `first` on, and the maps (put_state refills them).
  ImportState take_state(std::size_t first) {
    ImportState state{{},
                      std::move(values_),
                      std::move(used_),
                      std::move(counted_),
                      std::move(groups_),
                      std::move(graph_.unknown_ops),
                      std::move(initializers_)};
    const auto from = graph_.layers.begin() + static_cast<std::ptrdiff_t>(first);
    state.layers.assign(std::make_move_iterator(from),
                        std::make_move_iterator(graph_.layers.end()));
    graph_.layers.erase(from, graph_.layers.end());
    return state;
  }

  void put_state(ImportState state) {
    graph_.layers.insert(graph_.layers.end(), std::make_move_iterator(state.layers.begin()),
                         std::make_move_iterator(state.layers.end()));
    values_ = std::move(state.values);
    used_ = std::move(state.used);
    counted_ = std::move(state.counted);
    groups_ = std::move(state.groups);
    graph_.unknown_ops = std::move(state.unknown);
    initializers_ = std::move(state.initializers);
  }

  // An If whose condition is not known: the branch with more FLOPs (then on a tie), an upper
  // bound. Each branch is read once: reading the chosen one again made nested Ifs take time
  // exponential in their depth.
  void import_costlier_branch(const onnx::NodeProto& node, int index,
                              const onnx::GraphProto* const (&branches)[2], const int (&slots)[2]) {
    const std::size_t first = graph_.layers.size();
    const auto flops_since_first = [&] {
      double flops = 0;
      for (std::size_t i = first; i < graph_.layers.size(); ++i)
        flops += static_cast<double>(graph_.layers[i].counts.flops());
      return flops;
    };
    // The shapes each branch gives the If's outputs, as its layers computed them.
    const auto output_shapes = [&] {
      std::vector<std::optional<Shape> > shapes;
      for (const std::string& output : node.output()) {
        const auto it = values_.find(output);
        const bool known = !output.empty() && it != values_.end() &&
                           it->second.kind == Kind::kActivation && it->second.id >= 0;
        shapes.push_back(known ? std::optional<Shape>(graph_.value_shape(it->second.id))
                               : std::nullopt);
      }
      return shapes;
    };
    ImportState before{{}, values_, used_, counted_, groups_, graph_.unknown_ops, initializers_};
    import_branch(node, index, *branches[0], slots[0], "then");
    const double then_flops = flops_since_first();
    const std::vector<std::optional<Shape> > then_shapes = output_shapes();
    ImportState then_read = take_state(first);
    put_state(std::move(before));
    import_branch(node, index, *branches[1], slots[1], "else");
    const std::vector<std::optional<Shape> > else_shapes = output_shapes();
    for (std::size_t i = 0; i < then_shapes.size(); ++i) {
      if (then_shapes[i] && else_shapes[i] && *then_shapes[i] != *else_shapes[i]) {
        fail(node_pointer(index),
             fmt::format("node \"{}\" (If): its condition is not known at import and its "
                         "branches give \"{}\" different shapes ({} and {})",
                         node_name(node, index), node.output(static_cast<int>(i)),
                         format_shape(*then_shapes[i]), format_shape(*else_shapes[i])));
      }
    }
    if (flops_since_first() > then_flops) return;
    take_state(first);  // The else branch's reading, dropped.
    put_state(std::move(then_read));
  }

  // The value of a boolean (or integer) scalar known at import: an initializer with data or a
  // Constant node (folded shape arithmetic ends as one).
  std::optional<bool> constant_bool(const std::string& tensor) const {
    const std::optional<std::int64_t> value = constant_int(tensor);
    if (!value) return std::nullopt;
    return *value != 0;
  }

  // The value of an integer or boolean scalar (or one-element tensor) known at import.
  std::optional<std::int64_t> constant_int(const std::string& tensor) const {
    if (const auto it = scalar_values_.find(tensor); it != scalar_values_.end()) return it->second;
    std::optional<std::vector<std::int64_t> > values;
    if (const auto it = initializers_.find(tensor); it != initializers_.end()) {
      values = onnx_import::integer_values(*it->second);
    }
    for (const auto& node : graph_proto_.node()) {
      if (!values && node.op_type() == "Constant" && node.output_size() == 1 &&
          node.output(0) == tensor) {
        values = onnx_import::constant_values(node);
      }
    }
    if (!values || values->size() != 1) return std::nullopt;
    return values->front();
  }

  const Value& value_of(const std::string& tensor, const onnx::NodeProto& node, int index) {
    const auto it = values_.find(tensor);
    if (it == values_.end()) {
      fail(node_pointer(index),
           fmt::format("node \"{}\" ({}) reads \"{}\", which no input, initializer or earlier "
                       "node defines",
                       node_name(node, index), qualified_op(node), tensor));
    }
    return it->second;
  }

  void note_unknown(const std::string& op, const std::string& pointer) {
    for (UnknownOperator& known : graph_.unknown_ops) {
      if (known.op == op) {
        ++known.nodes;
        return;
      }
    }
    graph_.unknown_ops.push_back({op, 1, pointer});
  }

  onnx::ModelProto& model_;
  onnx::GraphProto& graph_proto_;
  const std::string& file_;
  const ModelOptions& options_;
  Graph graph_;
  std::int64_t opset_ = 0;
  std::map<std::string, const onnx::TensorProto*> initializers_;
  std::map<std::string, KnownShape> shapes_;
  std::map<std::string, Value> values_;
  std::set<std::string> used_;
  std::set<std::string> counted_;  // Parameter initializers already counted.
  std::set<std::string> assumed_;  // Outputs whose shape was assumed (unknown operators).
  std::set<std::string> exporter_batch_dims_;          // "<input>_dynamic_axes_1" on axis 0.
  std::map<std::string, std::int64_t> scalar_values_;  // Integer scalar inputs set by --set.
  std::map<std::string, std::int32_t> groups_;
  std::string scope_ = "/graph";  // JSON pointer of the graph being read.
  // The nodes whose subgraphs are being read, outermost first.
  struct Expansion {
    std::string pointer;
    std::int64_t reads;  // How often: a loop's trip count, 1 for an If branch.
    std::int64_t done;   // Reads finished.
  };
  std::vector<Expansion> expanding_;
  std::int64_t nodes_read_ = 0;       // Nodes read, loop iterations and If branches included.
  std::string name_prefix_;           // Unnamed nodes in If branches, every node in Loop bodies.
  bool prefix_names_ = false;         // Loop iterations: every node name gets name_prefix_.
  std::vector<std::string> origins_;  // Per main-graph node, its pointer in the file (functions).
};

}  // namespace

Graph parse_onnx_model(std::string_view bytes, const std::string& file,
                       const ModelOptions& options) {
  onnx::ModelProto model;
  bool parsed = false;
  if (bytes.size() <= static_cast<std::size_t>(kMaxOnnxFileBytes)) {
    // Protobuf's parser and the message's destructor recurse once per level of nesting.
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                              static_cast<int>(bytes.size()));
    in.SetRecursionLimit(kMaxNestingDepth);
    parsed = model.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
  }
  if (!parsed) {
    throw Error({file, "", 0, 0},
                fmt::format("not a valid ONNX model: the protobuf does not parse (corrupt or "
                            "truncated file, or messages nested more than {} deep?)",
                            kMaxNestingDepth));
  }
  return import_onnx_model(model, file, options);
}

Graph import_onnx_model(onnx::ModelProto& model, const std::string& file,
                        const ModelOptions& options) {
  try {
    return Importer(model, file, options).build();
  } catch (const OverflowError&) {
    throw Error({file, "", 0, 0}, overflow_message(options.dims));
  }
}

Graph load_onnx_model(const std::string& path, const ModelOptions& options) {
  const InputFile file(path, kMaxOnnxFileBytes, "ONNX files");
  if (file.size() == 0) return parse_onnx_model({}, path, options);
  // Mapped, not read: a 200 MB file would otherwise be copied once more before parsing.
  void* data = ::mmap(nullptr, file.size(), PROT_READ, MAP_PRIVATE, file.fd(), 0);
  if (data == MAP_FAILED) throw Error({path, "", 0, 0}, "cannot read file");
  struct Unmap {
    void* data;
    std::size_t size;
    ~Unmap() { ::munmap(data, size); }
  } unmap{data, file.size()};
  return parse_onnx_model(std::string_view(static_cast<const char*>(data), file.size()), path,
                          options);
}

#endif  // CAPCALC_WITH_ONNX

}  // namespace capcalc
