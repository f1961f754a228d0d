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
// After ONNX's headers: its text parser's header (included by schema.h) names an enumerator
// MAP_TYPE, which this header defines as a macro.
#include <sys/mman.h>

#include "import/onnx_declared.hpp"
#include "import/onnx_fold.hpp"
#include "import/onnx_functions.hpp"
#include "import/onnx_importer.hpp"
#include "import/onnx_wire.hpp"
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

namespace onnx_import {

Graph Importer::build() {
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
  // The shapes the file gives, before inference adds its own: each is held to its operator's
  // rule once the nodes are read (onnx_declared.hpp).
  const std::set<std::string> declared = onnx_import::declared_shapes(graph_proto_);
  try {
    infer_shapes();
    collect_shapes();
    check_baked_batch();
    read_nodes(graph_proto_);
    if (const auto bad = onnx_import::check_declared_outputs(model_, declared)) {
      const onnx::NodeProto& node = graph_proto_.node(bad->node);
      fail(node_pointer(bad->node), fmt::format("node \"{}\" ({}): {}", node_name(node, bad->node),
                                                node.op_type(), bad->message));
    }
  } catch (const Error& e) {
    if (exported_batch_ == 0 || e.message().find("--batch") != std::string::npos) throw;
    throw Error(e.where(), e.message() + rebatch_hint());
  }
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

void Importer::fail(const std::string& pointer, const std::string& message) const {
  throw Error({file_, pointer, 0, 0}, message);
}

std::string Importer::node_name(const onnx::NodeProto& node, int index) const {
  if (node.name().empty()) return fmt::format("{}{}_{}", name_prefix_, node.op_type(), index);
  return prefix_names_ ? name_prefix_ + node.name() : node.name();
}

// The JSON pointer of node `index` of the graph being read (a branch of If: its subgraph).
// Nodes expanded from a local function point at the call.
std::string Importer::node_pointer(int index) const {
  if (scope_ == "/graph" && static_cast<std::size_t>(index) < origins_.size()) {
    return origins_[static_cast<std::size_t>(index)];
  }
  return fmt::format("{}/node/{}", scope_, index);
}

std::int32_t Importer::group_of(const std::string& name) {
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

void Importer::add_node(const onnx::NodeProto& node, int index) {
  check_operands(node, index);
  if (add_control_flow(node, index)) return;
  const OnnxRule* rule = find_rule(node);
  bool any_activation = false;
  bool all_meta = true;
  for (const std::string& input : node.input()) {
    if (input.empty()) continue;
    const Value& value = value_of(input, node, index);
    any_activation = any_activation || value.kind == Kind::kActivation;
    all_meta = all_meta && value.kind == Kind::kMeta;
  }
  if (rule != nullptr && rule->role == Role::kMeta) {
    for (const std::string& output : node.output())
      values_[output] = meta_value();
    return;
  }
  if (!any_activation || (rule != nullptr && rule->role == Role::kConstant)) {
    fold_node(node, all_meta);
    return;
  }
  Layer layer;
  layer.name = node_name(node, index);
  layer.definition = node_pointer(index);
  layer.group = group_of(layer.name);
  const NodeOperands operands = read_operands(node, index, rule, layer);
  if (rule == nullptr) {
    add_unknown(node, index, std::move(layer), operands);
    return;
  }
  add_counted(node, index, *rule, std::move(layer), operands);
}

// Computed from constants only: folded, no layer. Parameters flow through to whoever uses it.
void Importer::fold_node(const onnx::NodeProto& node, bool all_meta) {
  Value folded;
  if (all_meta && node.input_size() > 0) folded.kind = Kind::kMeta;
  for (const std::string& input : node.input()) {
    if (input.empty()) continue;
    const Value& value = values_.at(input);
    folded.roots.insert(folded.roots.end(), value.roots.begin(), value.roots.end());
  }
  for (const std::string& output : node.output())
    values_[output] = folded;
}

// The node's inputs: activations become the layer's inputs, constants at the rule's
// parameter slots its parameters (each initializer counted once in the graph).
Importer::NodeOperands Importer::read_operands(const onnx::NodeProto& node, int index,
                                               const OnnxRule* rule, Layer& layer) {
  NodeOperands in;
  const Operands operands = rule != nullptr ? rule->operands : Operands{};
  for (int slot = 0; slot < node.input_size(); ++slot) {
    const std::string& input = node.input(slot);
    if (input.empty()) {
      in.shapes.emplace_back();
      in.constant.push_back(true);
      continue;
    }
    const Value& value = values_.at(input);
    const bool is_activation = value.kind == Kind::kActivation;
    in.constant.push_back(!is_activation);
    if (value.kind == Kind::kMeta) {
      in.shapes.emplace_back();
      continue;
    }
    in.shapes.push_back(shape_of(input, node, index));
    if (is_activation) {
      layer.inputs.push_back(value.id);
      in.needs_grad = in.needs_grad || value.needs_grad;
      in.operands_needing_grad += value.needs_grad ? 1 : 0;
      in.activation_elements = checked_add(in.activation_elements, element_count(in.shapes.back()));
      continue;
    }
    in.constant_elements = checked_add(in.constant_elements, element_count(in.shapes.back()));
    if (rule == nullptr || !rule->is_param_slot(slot)) continue;
    bool slot_has_weights = false;
    const auto initializer = initializers_.find(input);
    if (initializer != initializers_.end() &&
        initializer->second->data_type() == onnx::TensorProto::STRING) {
      // Not numbers: ONNX's type constraints reject the node (it was counted, with no weights).
      fail(node_pointer(index), fmt::format("node \"{}\" ({}): input \"{}\" holds strings, not "
                                            "the numbers its weights must be",
                                            node_name(node, index), node.op_type(), input));
    }
    for (const std::string& root : value.roots) {
      if (initializers_.at(root)->data_type() == onnx::TensorProto::INT32 &&
          !(operands.quantised && slot == operands.bias)) {
        continue;  // Indices, shapes: not parameters.
      }
      slot_has_weights = true;
      if (counted_.insert(root).second) {
        // A packed weight (MatMulNBits) holds K x N weights in bytes: count the weights.
        const bool packed = operands.packed && slot == operands.w;
        in.params = checked_add(in.params, packed ? checked_mul(attribute_int(node, "K", 0),
                                                                attribute_int(node, "N", 0))
                                                  : element_count(shapes_.at(root).dims));
      }
    }
    if (slot_has_weights) ++in.weight_slots;
    in.has_weights = in.has_weights || slot_has_weights;
  }
  return in;
}

// An operator capcalc does not know: listed in Graph::unknown_ops, its layer costs nothing and
// has the output's shape if inference found one, else its first input's.
void Importer::add_unknown(const onnx::NodeProto& node, int index, Layer layer,
                           const NodeOperands& in) {
  note_unknown(qualified_op(node), node_pointer(index));
  layer.op = lowercase(qualified_op(node));
  layer.view = false;
  layer.traits.op_class = OpClass::kUnknown;
  const std::string& out = node.output_size() > 0 ? node.output(0) : node.input(0);
  const auto known = shapes_.find(out);
  layer.output =
      known != shapes_.end() && known->second.complete() ? known->second.dims : in.shapes.front();
  finish(node, std::move(layer), in.needs_grad);
}

// A known operator: its row's count function gives the counts.
void Importer::add_counted(const onnx::NodeProto& node, int index, const OnnxRule& rule,
                           Layer layer, const NodeOperands& operands) {
  const NodeInputs in{node,
                      operands.shapes,
                      operands.constant,
                      operands.activation_elements,
                      operands.constant_elements,
                      operands.needs_grad,
                      operands.operands_needing_grad,
                      options_.counting,
                      file_,
                      layer.name,
                      layer.definition};
  if (rule.check_inputs != nullptr) rule.check_inputs(in);
  // LSTM and GRU may leave Y unnamed and give only Y_h: the first output named is the layer's.
  const auto named = std::find_if(node.output().begin(), node.output().end(),
                                  [](const std::string& output) { return !output.empty(); });
  const Shape out = shape_of(named != node.output().end() ? *named : std::string(), node, index);
  CountResult result = rule.count(rule, in, out);
  layer.traits = rule.traits();
  if (rule.op_class == OpClass::kMatrix || rule.op_class == OpClass::kAttention) {
    layer.traits.weight_tensors = operands.weight_slots;
  }
  if (result.gemm) layer.traits.gemm = result.gemm;
  result.counts.params = operands.params;
  result.counts.active_params = operands.params;  // No mixture of experts in ONNX graphs.
  layer.op = result.op.empty() ? std::string(rule.name) : result.op;
  layer.output = out;
  layer.counts = result.counts;
  layer.view = result.view;
  if (result.view) layer.traits = view_traits();
  finish(node, std::move(layer), operands.needs_grad || operands.has_weights);
}

// Adds the layer for output 0, and a view layer for each further output that is used.
void Importer::finish(const onnx::NodeProto& node, Layer layer, bool needs_grad) {
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
    extra.traits = view_traits();
    extra.group = group;
    extra.definition = graph_.layers.back().definition;
    const auto it = shapes_.find(output);
    extra.output = it != shapes_.end() && it->second.complete() ? it->second.dims : Shape{};
    graph_.layers.push_back(std::move(extra));
    define(output);
  }
}

// Registers a graph's initializers as constants and reads its nodes in order.
void Importer::read_nodes(const onnx::GraphProto& graph) {
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
    } catch (const OverflowError&) {
      // The node whose counts pass 64 bits, and the dims that were set.
      fail(node_pointer(i),
           fmt::format("node \"{}\" ({}): {}", node_name(graph.node(i), i),
                       qualified_op(graph.node(i)), overflow_message(options_.dims)));
    } catch (const std::out_of_range&) {
      // A known operator with fewer inputs than its formula reads (a malformed node).
      const onnx::NodeProto& node = graph.node(i);
      fail(node_pointer(i), fmt::format("node \"{}\" ({}) has too few inputs ({})",
                                        node_name(node, i), qualified_op(node), node.input_size()));
    }
  }
}

// The value of a boolean (or integer) scalar known at import: an initializer with data or a
// Constant node (folded shape arithmetic ends as one).
std::optional<bool> Importer::constant_bool(const std::string& tensor) const {
  const std::optional<std::int64_t> value = constant_int(tensor);
  if (!value) return std::nullopt;
  return *value != 0;
}

// The values of an integer tensor known at import: an initializer with data or a Constant
// node (folded shape arithmetic ends as one).
std::optional<std::vector<std::int64_t> > Importer::constant_ints(const std::string& tensor) const {
  if (const auto it = initializers_.find(tensor); it != initializers_.end()) {
    return onnx_import::integer_values(*it->second);
  }
  for (const auto& node : graph_proto_.node()) {
    if (node.op_type() == "Constant" && node.output_size() == 1 && node.output(0) == tensor) {
      return onnx_import::constant_values(node);
    }
  }
  return std::nullopt;
}

// The value of an integer or boolean scalar (or one-element tensor) known at import.
std::optional<std::int64_t> Importer::constant_int(const std::string& tensor) const {
  if (const auto it = scalar_values_.find(tensor); it != scalar_values_.end()) return it->second;
  const std::optional<std::vector<std::int64_t> > values = constant_ints(tensor);
  if (!values || values->size() != 1) return std::nullopt;
  return values->front();
}

const Value& Importer::value_of(const std::string& tensor, const onnx::NodeProto& node, int index) {
  const auto it = values_.find(tensor);
  if (it == values_.end()) {
    fail(node_pointer(index),
         fmt::format("node \"{}\" ({}) reads \"{}\", which no input, initializer or earlier "
                     "node defines",
                     node_name(node, index), qualified_op(node), tensor));
  }
  return it->second;
}

void Importer::note_unknown(const std::string& op, const std::string& pointer) {
  for (UnknownOperator& known : graph_.unknown_ops) {
    if (known.op == op) {
      ++known.nodes;
      return;
    }
  }
  graph_.unknown_ops.push_back({op, 1, pointer});
}

}  // namespace onnx_import

Graph parse_onnx_model(std::string_view bytes, const std::string& file,
                       const ModelOptions& options) {
  onnx::ModelProto model;
  bool parsed = false;
  if (bytes.size() <= static_cast<std::size_t>(kMaxOnnxFileBytes)) {
    // The weights' values are never needed: parse a copy without them (onnx_wire.hpp), or the
    // file itself where that copy cannot be made, to get protobuf's verdict on it.
    const std::optional<std::string> slim = onnx_import::strip_tensor_data(bytes, kMaxNestingDepth);
    if (slim) bytes = *slim;
    // Protobuf's parser and the message's destructor recurse once per level of nesting.
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                              static_cast<int>(bytes.size()));
    in.SetRecursionLimit(kMaxNestingDepth);
    parsed = model.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
  }
  if (parsed && model.ir_version() < 1 && model.opset_import_size() > 0) {
    throw Error({file, "/ir_version", 0, 0},
                fmt::format("IR version {} does not exist (ONNX's IR versions start at 1)",
                            model.ir_version()));
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
    return onnx_import::Importer(model, file, options).build();
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
