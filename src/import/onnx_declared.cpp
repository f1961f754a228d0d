#include "import/onnx_declared.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

namespace capcalc::onnx_import {
namespace {

bool has_shape(const onnx::ValueInfoProto& info) {
  return info.type().has_tensor_type() && info.type().tensor_type().has_shape();
}

// Every dim a value, none symbolic or missing.
bool complete(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return false;
  if (type.tensor_type().elem_type() == 0) return false;
  const auto& dims = type.tensor_type().shape().dim();
  return std::all_of(dims.begin(), dims.end(), [](const onnx::TensorShapeProto::Dimension& d) {
    return d.has_dim_value() && d.dim_value() >= 0;
  });
}

std::string dims_text(const onnx::TensorShapeProto& shape) {
  std::vector<std::string> dims;
  for (const auto& d : shape.dim())
    dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value())
                                     : (d.has_dim_param() ? d.dim_param() : "?"));
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// ONNX's message without its tags and the node name it repeats: "axis must be in ...".
std::string detail_of(std::string what) {
  std::replace(what.begin(), what.end(), '\n', ' ');
  const std::size_t open = what.find("(op_type:");
  const std::size_t close = open == std::string::npos ? open : what.find("): ", open);
  if (close != std::string::npos) what = what.substr(close + 3);
  for (const std::string tag : {"[ShapeInferenceError] ", "[TypeInferenceError] "}) {
    for (std::size_t at; (at = what.find(tag)) != std::string::npos;)
      what.erase(at, tag.size());
  }
  while (!what.empty() && what.back() == ' ')
    what.pop_back();
  return what;
}

}  // namespace

std::int64_t standard_opset(const onnx::ModelProto& model) {
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") return opset.version();
  }
  return 0;
}

bool inferable_alone(const onnx::NodeProto& node, std::int64_t opset) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") return false;
  if (node.op_type() == "Constant") return false;
  if (onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), "") == nullptr) {
    return false;
  }
  return std::none_of(node.attribute().begin(), node.attribute().end(), [](const auto& a) {
    return a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS;
  });
}

onnx::ModelProto model_for_one_node(const onnx::ModelProto& model, const std::string& name) {
  onnx::ModelProto alone;
  alone.set_ir_version(model.ir_version());
  *alone.mutable_opset_import() = model.opset_import();
  alone.mutable_graph()->set_name(name);
  return alone;
}

std::set<std::string> declared_shapes(const onnx::GraphProto& graph) {
  std::set<std::string> names;
  for (const auto& info : graph.value_info()) {
    if (has_shape(info)) names.insert(info.name());
  }
  for (const auto& info : graph.output()) {
    if (has_shape(info)) names.insert(info.name());
  }
  return names;
}

std::optional<DeclaredMismatch> check_declared_outputs(const onnx::ModelProto& model,
                                                       const std::set<std::string>& declared) {
  const onnx::GraphProto& graph = model.graph();
  const std::int64_t opset = standard_opset(model);
  if (declared.empty() || opset <= 0) return std::nullopt;
  // What is known of each value after inference: its type, its initializer, its Constant.
  std::map<std::string, const onnx::TypeProto*> types;
  for (const auto& info : graph.input())
    types[info.name()] = &info.type();
  for (const auto& info : graph.value_info())
    types[info.name()] = &info.type();
  for (const auto& info : graph.output())
    types[info.name()] = &info.type();
  std::map<std::string, const onnx::TensorProto*> initializers;
  for (const auto& init : graph.initializer())
    initializers[init.name()] = &init;
  std::map<std::string, const onnx::NodeProto*> constants;
  for (const auto& node : graph.node()) {
    if (node.op_type() == "Constant" && node.domain().empty() && node.output_size() == 1) {
      constants[node.output(0)] = &node;
    }
  }

  const onnx::ShapeInferenceOptions strict(/*check_type=*/false, /*error_mode=*/1,
                                           /*enable_data_propagation=*/false);
  for (int index = 0; index < graph.node_size(); ++index) {
    const onnx::NodeProto& node = graph.node(index);
    const bool writes_declared =
        std::any_of(node.output().begin(), node.output().end(),
                    [&](const std::string& out) { return declared.count(out) != 0; });
    if (!writes_declared || !inferable_alone(node, opset)) continue;

    // The node alone, its inputs as the graph has them: constants with their values, the rest
    // as inputs of their type and shape; its outputs undeclared.
    onnx::ModelProto alone = model_for_one_node(model, "declared_check");
    onnx::GraphProto& g = *alone.mutable_graph();
    bool known = true;
    std::set<std::string> added;
    for (const std::string& input : node.input()) {
      if (input.empty() || !added.insert(input).second) continue;
      if (const auto c = constants.find(input); c != constants.end()) {
        *g.add_node() = *c->second;
      } else if (const auto init = initializers.find(input); init != initializers.end()) {
        *g.add_initializer() = *init->second;
      } else if (const auto type = types.find(input);
                 type != types.end() && complete(*type->second)) {
        onnx::ValueInfoProto& in = *g.add_input();
        in.set_name(input);
        *in.mutable_type() = *type->second;
      } else {
        known = false;
        break;
      }
    }
    if (!known) continue;
    *g.add_node() = node;
    for (const std::string& output : node.output()) {
      if (!output.empty()) g.add_output()->set_name(output);
    }
    try {
      onnx::shape_inference::InferShapes(alone, onnx::OpSchemaRegistry::Instance(), strict);
    } catch (const std::exception& e) {
      return DeclaredMismatch{index, detail_of(e.what())};
    }
    for (const auto& inferred : g.output()) {
      if (declared.count(inferred.name()) == 0 || !has_shape(inferred)) continue;
      const auto type = types.find(inferred.name());
      if (type == types.end() || !type->second->tensor_type().has_shape()) continue;
      const auto& got = inferred.type().tensor_type().shape();
      const auto& said = type->second->tensor_type().shape();
      bool same = got.dim_size() == said.dim_size();
      for (int d = 0; same && d < got.dim_size(); ++d) {
        if (got.dim(d).has_dim_value() && said.dim(d).has_dim_value()) {
          same = got.dim(d).dim_value() == said.dim(d).dim_value();
        }
      }
      if (!same) {
        return DeclaredMismatch{
            index, fmt::format("the file declares {} for \"{}\", but the operator gives {}",
                               dims_text(said), inferred.name(), dims_text(got))};
      }
    }
  }
  return std::nullopt;
}

}  // namespace capcalc::onnx_import
