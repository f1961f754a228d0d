// Shape inference: ONNX's, in rounds with capcalc's folding between them, and the call of each
// row's operand check on the shapes it found (the checks: onnx_operands.cpp).

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "capcalc/error.hpp"

#include "checked.hpp"
#include "count_formulas.hpp"
#include "import/onnx_declared.hpp"
#include "import/onnx_fold.hpp"
#include "import/onnx_importer.hpp"
#include "limits.hpp"

namespace capcalc::onnx_import {
namespace {

// Calls `f` with each value a graph gives a type: its inputs, inferred values and outputs.
template <typename F>
void for_each_value_info(const onnx::GraphProto& graph, F f) {
  for (const auto& info : graph.input())
    f(info);
  for (const auto& info : graph.value_info())
    f(info);
  for (const auto& info : graph.output())
    f(info);
}

// ONNX's inference of one node at a time, between the rounds over the whole graph: the node
// alone in a model of its own, its inputs as the graph has them (Constant nodes and small
// initializers with their values, the rest as typed inputs), as check_declared_outputs does.
class LocalInference {
 public:
  LocalInference(const onnx::ModelProto& model, const onnx::GraphProto& graph)
      : model_(model), opset_(standard_opset(model)) {
    for_each_value_info(graph, [&](const onnx::ValueInfoProto& info) {
      if (info.type().has_tensor_type() && info.type().tensor_type().has_shape()) {
        types_[info.name()] = info.type();
      }
    });
    for (const auto& init : graph.initializer())
      initializers_[init.name()] = &init;
    for (const auto& node : graph.node()) {
      for (const std::string& output : node.output())
        producers_[output] = &node;
    }
  }

  // Adds to `shapes` the shapes ONNX gives `node`'s outputs, where it has a schema for it, no
  // subgraph, and every input is known; outputs already complete are left as they are.
  void infer(const onnx::NodeProto& node, std::map<std::string, KnownShape>& shapes) {
    const bool pending = std::any_of(node.output().begin(), node.output().end(), [&](auto& out) {
      if (out.empty()) return false;
      const auto it = shapes.find(out);
      return it == shapes.end() || !it->second.complete();
    });
    if (!pending || !inferable_alone(node, opset_)) return;
    onnx::ModelProto alone = model_for_one_node(model_, "local_inference");
    onnx::GraphProto& g = *alone.mutable_graph();
    std::set<std::string> added;
    for (const std::string& input : node.input()) {
      if (input.empty() || !added.insert(input).second) continue;
      if (!add_input(g, input)) return;
    }
    *g.add_node() = node;
    for (const std::string& output : node.output()) {
      if (!output.empty()) g.add_output()->set_name(output);
    }
    const onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0,
                                              /*enable_data_propagation=*/false);
    try {
      onnx::shape_inference::InferShapes(alone, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception&) {
      return;  // The next round over the whole graph says what is wrong.
    }
    for (const auto& out : g.output()) {
      if (!out.type().has_tensor_type() || !out.type().tensor_type().has_shape()) continue;
      KnownShape shape = from_proto(out.type().tensor_type().shape());
      auto& known = shapes[out.name()];
      if (known.dims.empty() || !known.complete()) known = std::move(shape);
      types_[out.name()] = out.type();
    }
  }

 private:
  // `input` into the node's model: false if nothing is known of it.
  bool add_input(onnx::GraphProto& g, const std::string& input) {
    if (const auto p = producers_.find(input); p != producers_.end() &&
                                               p->second->op_type() == "Constant" &&
                                               p->second->domain().empty()) {
      *g.add_node() = *p->second;
      return true;
    }
    if (const auto init = initializers_.find(input); init != initializers_.end()) {
      // Small ones with their values (a Reshape's target, a Resize's scales); the data of
      // larger ones was dropped before inference, so they go as typed inputs.
      std::int64_t elements = 1;
      for (std::int64_t d : init->second->dims()) {
        if (d > 0)
          elements = d > kMaxFoldedElements / elements ? kMaxFoldedElements + 1 : elements * d;
      }
      if (elements <= kMaxFoldedElements) {
        *g.add_initializer() = *init->second;
        return true;
      }
      onnx::ValueInfoProto& in = *g.add_input();
      in.set_name(input);
      auto& tensor = *in.mutable_type()->mutable_tensor_type();
      tensor.set_elem_type(init->second->data_type());
      for (std::int64_t d : init->second->dims())
        tensor.mutable_shape()->add_dim()->set_dim_value(d);
      return true;
    }
    const auto type = types_.find(input);
    if (type == types_.end()) return false;
    onnx::ValueInfoProto& in = *g.add_input();
    in.set_name(input);
    *in.mutable_type() = type->second;
    return true;
  }

  const onnx::ModelProto& model_;
  std::int64_t opset_ = 0;
  std::map<std::string, onnx::TypeProto> types_;
  std::map<std::string, const onnx::TensorProto*> initializers_;
  std::map<std::string, const onnx::NodeProto*> producers_;
};

}  // namespace

// ONNX's inference errors read "[ShapeInferenceError] (op_type:Conv, node name: c1):
// [ShapeInferenceError] what": the node they name is blamed by its pointer.
void Importer::fail_inference(std::string what) const {
  std::replace(what.begin(), what.end(), '\n', ' ');
  const std::string tag = "[ShapeInferenceError] ";
  const std::size_t open = what.find("(op_type:");
  const std::size_t close = open == std::string::npos ? open : what.find("): ", open);
  if (close != std::string::npos) {
    const std::string inside = what.substr(open + 9, close - open - 9);
    const std::size_t comma = inside.find(", node name: ");
    const std::string op = inside.substr(0, comma);
    const std::string name = comma == std::string::npos ? "" : inside.substr(comma + 13);
    int found = -1;
    int matches = 0;
    for (int i = 0; i < graph_proto_.node_size(); ++i) {
      const onnx::NodeProto& node = graph_proto_.node(i);
      if (node.op_type() == op && (name.empty() || node.name() == name)) {
        if (found < 0) found = i;
        ++matches;
      }
    }
    if (found >= 0 && (matches == 1 || !name.empty())) {
      std::string detail = what.substr(close + 3);
      for (std::size_t at; (at = detail.find(tag)) != std::string::npos;)
        detail.erase(at, tag.size());
      fail(node_pointer(found),
           fmt::format("node \"{}\" ({}): ONNX shape inference: {}",
                       node_name(graph_proto_.node(found), found), op, detail));
    }
  }
  fail("", fmt::format("ONNX shape inference failed: {}", what));
}

// After inference on a rebatched model: a Reshape that keeps the exported batch where its
// input has the new one (a target of [1, -1, 12, 64], or [1, 128, 12, 64] that no longer
// holds the input's elements) bakes the batch in, and counting on would count a batch of 1
// there. The first one is an error.
void Importer::check_baked_batch() const {
  if (exported_batch_ == 0) return;
  for (int i = 0; i < graph_proto_.node_size(); ++i) {
    const onnx::NodeProto& node = graph_proto_.node(i);
    if (node.op_type() != "Reshape" || node.input_size() < 2) continue;
    const auto in = shapes_.find(node.input(0));
    if (in == shapes_.end() || !in->second.complete() || in->second.dims.empty()) continue;
    if (in->second.dims.front() != graph_.batch) continue;
    const std::optional<std::vector<std::int64_t> > target = constant_ints(node.input(1));
    if (!target || target->empty()) continue;
    std::int64_t target_elements = 1;
    bool wildcard = false;
    const bool allowzero = attribute_int(node, "allowzero", 0) != 0;
    for (std::size_t a = 0; a < target->size(); ++a) {
      std::int64_t d = (*target)[a];
      if (d == 0 && !allowzero && a < in->second.dims.size()) d = in->second.dims[a];  // Copy.
      if (d == -1) wildcard = true;
      if (d > 0) target_elements = checked_mul(target_elements, d);
    }
    const bool keeps_batch = target->front() == exported_batch_;
    const bool loses_elements = !wildcard && target_elements != product(in->second.dims);
    if (!keeps_batch && !loses_elements) continue;
    fail(node_pointer(i),
         fmt::format("node \"{}\" (Reshape) reshapes [{}] to [{}]: the graph bakes in the batch "
                     "of {} it was exported with, so it cannot run at --batch {}; export it with "
                     "a dynamic batch axis, e.g. torch.onnx.export(..., dynamic_axes={{\"input\": "
                     "{{0: \"batch\"}}}})",
                     node_name(node, i), fmt::join(in->second.dims, ", "), fmt::join(*target, ", "),
                     exported_batch_, graph_.batch));
  }
}

// ONNX shape inference in rounds; between them capcalc folds the shape arithmetic (Shape ->
// Gather -> Concat -> Reshape) to constants. Operators ONNX does not know get their first
// input's shape, and inference runs again from there.
void Importer::infer_shapes() {
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
      fail_inference(e.what());
    }
    collect_shapes();
    // Exporters compute slice bounds and reshape targets from Shape at run time; with every
    // input dimension set, those are constants that the next round can read. Each node the
    // fold leaves is inferred alone where its inputs are known, so that one pass folds the
    // chains that hang on it (a Swin block's window reshapes, one after the other): a round
    // per chain made the rounds, each over the whole graph, quadratic in the model's depth.
    LocalInference local(model_, graph_proto_);
    bool added = onnx_import::fold_shape_arithmetic(
                     graph_proto_,
                     [this](const std::string& name) -> std::optional<std::vector<std::int64_t> > {
                       const auto it = shapes_.find(name);
                       if (it == shapes_.end() || !it->second.complete()) return std::nullopt;
                       return it->second.dims;
                     },
                     [&](const onnx::NodeProto& node) { local.infer(node, shapes_); }) > 0;
    added = set_if_output_shapes() || added;
    added = set_loop_output_shapes() || added;
    added = assume_output_shapes() || added;
    const bool released = hold_unready_nodes();
    if (!added && !released) break;
  }
  release_waiting_nodes();
}

// Shapes for the outputs that ONNX's inference cannot give: those of operators it has no
// schema for (onnxruntime's fused ones, with their rows' shape functions; unknown ones, their
// first input's shape) and those of rows that ONNX 1.12 infers partly. True if one was added.
// An operator with a row but no schema at the file's opset (LayerNormalization below opset
// 17, the fused ones) is held to its row's shape where the file declares one, as
// check_declared_outputs holds the others to ONNX's; an unknown operator's first-input shape
// is only a guess, so what the file declares stands.
bool Importer::assume_output_shapes() {
  bool added = false;
  for (int index = 0; index < graph_proto_.node_size(); ++index) {
    const onnx::NodeProto& node = graph_proto_.node(index);
    if (node.input_size() == 0 || node.output_size() == 0) continue;
    if (node.domain() == kWaitingDomain) continue;  // ONNX infers it once released.
    const OnnxRule* rule = find_rule(node);
    const bool has_schema = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset_),
                                                           node.domain()) != nullptr;
    if (has_schema && (rule == nullptr || !rule->shape_passthrough)) continue;
    const bool own_rule = rule != nullptr && !has_schema;
    if (rule != nullptr && rule->output_shapes != nullptr) {
      KnownInputs in;
      for (int slot = 0; slot < node.input_size(); ++slot) {
        const auto it = shapes_.find(node.input(slot));
        in.push_back(it != shapes_.end() && it->second.complete()
                         ? std::optional<Shape>(it->second.dims)
                         : std::nullopt);
      }
      const std::vector<std::optional<Shape> > shapes = rule->output_shapes(node, in);
      for (std::size_t i = 0; i < shapes.size() && i < static_cast<std::size_t>(node.output_size());
           ++i) {
        const std::string& output = node.output(static_cast<int>(i));
        if (output.empty() || !shapes[i]) continue;
        if (own_rule) check_declared_shape(node, index, output, *shapes[i]);
        if (!write_shape(output, *shapes[i])) continue;
        assumed_.insert(output);
        added = true;
      }
      continue;
    }
    const auto in = shapes_.find(node.input(0));
    if (in == shapes_.end() || !in->second.complete()) continue;
    if (own_rule) check_declared_shape(node, index, node.output(0), in->second.dims);
    if (!write_shape(node.output(0), in->second.dims)) continue;
    assumed_.insert(node.output(0));
    added = true;
  }
  return added;
}

// A shape the file declares (complete, and not one this importer wrote) for the output of an
// operator that capcalc's row shapes: it must be the row's.
void Importer::check_declared_shape(const onnx::NodeProto& node, int index,
                                    const std::string& output, const Shape& computed) const {
  if (output.empty() || assumed_.count(output) != 0) return;
  const auto known = shapes_.find(output);
  if (known == shapes_.end() || !known->second.complete() || known->second.dims == computed) {
    return;
  }
  fail(node_pointer(index),
       fmt::format("node \"{}\" ({}): the file declares {} for \"{}\", but the operator gives {}",
                   node_name(node, index), node.op_type(), format_shape(known->second.dims), output,
                   format_shape(computed)));
}

// STFTs still waiting after the last round go back to ONNX's domain, and one whose signal is
// known to be of rank below 2 is an error.
void Importer::release_waiting_nodes() {
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

// Moves each STFT whose signal has no known shape of rank 2 or more into kWaitingDomain, and
// back once it has one; true if one came back (another round is needed to infer it).
bool Importer::hold_unready_nodes() {
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

// Sets a graph value's shape (its value_info and graph output entries) unless ONNX already
// knows it; the next inference round reads it.
bool Importer::write_shape(const std::string& name, const Shape& shape) {
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

void Importer::collect_shapes() {
  shapes_.clear();
  const auto add = [&](const onnx::ValueInfoProto& info) {
    if (info.type().has_tensor_type() && info.type().tensor_type().has_shape()) {
      shapes_[info.name()] = from_proto(info.type().tensor_type().shape());
    }
  };
  for_each_value_info(graph_proto_, add);
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
            for_each_value_info(a.g(), add);
            for (const auto& init : a.g().initializer())
              add_initializer(init);
            add_subgraphs(a.g());
          }
        }
      };
  add_subgraphs(graph_proto_);
}

Shape Importer::shape_of(const std::string& tensor, const onnx::NodeProto& node, int index) const {
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

// The complete shape of a value, if inference found one.
std::optional<Shape> Importer::complete_shape(const onnx::NodeProto& node, int slot) const {
  if (node.input_size() <= slot || node.input(slot).empty()) return std::nullopt;
  const auto it = shapes_.find(node.input(slot));
  if (it == shapes_.end() || !it->second.complete()) return std::nullopt;
  return it->second.dims;
}

// Operands that cannot go together (ONNX's inference, run leniently, passes over them), as the
// node's row checks them: a convolution's channels and groups, a product's inner dimensions, a
// reshape's element count, an axis in range, a permutation, operands that broadcast.
void Importer::check_operands(const onnx::NodeProto& node, int index) const {
  if (!node.domain().empty() && node.domain() != "ai.onnx") return;
  const OnnxRule* rule = find_rule(node);
  if (rule == nullptr || rule->check_operands == nullptr) return;
  KnownInputs inputs;
  for (int slot = 0; slot < node.input_size(); ++slot)
    inputs.push_back(complete_shape(node, slot));
  std::optional<Shape> output;
  if (node.output_size() > 0) {
    const auto out = shapes_.find(node.output(0));
    if (out != shapes_.end() && out->second.complete()) output = out->second.dims;
  }
  const OperandShapes operands{
      node, inputs, output, [this](const std::string& tensor) { return constant_ints(tensor); },
      [&](const std::string& message) {
        fail(node_pointer(index),
             fmt::format("node \"{}\" ({}): {}", node_name(node, index), node.op_type(), message));
      }};
  rule->check_operands(operands);
}

}  // namespace capcalc::onnx_import
