#include "import/onnx_functions.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/units.hpp"

#include "limits.hpp"

namespace capcalc::onnx_import {
namespace {

using FunctionKey = std::pair<std::string, std::string>;  // Domain, name.

class Inliner {
 public:
  Inliner(onnx::ModelProto& model, const std::string& file) : model_(model), file_(file) {
    for (const auto& function : model.functions())
      functions_[{function.domain(), function.name()}] = &function;
  }

  std::vector<std::string> run() {
    if (functions_.empty()) return {};
    onnx::GraphProto& graph = *model_.mutable_graph();
    google::protobuf::RepeatedPtrField<onnx::NodeProto> expanded;
    for (int i = 0; i < graph.node_size(); ++i)
      expand(graph.node(i), fmt::format("/graph/node/{}", i), 0, expanded);
    graph.mutable_node()->Swap(&expanded);
    return std::move(origins_);
  }

 private:
  const onnx::FunctionProto* function_of(const onnx::NodeProto& node) const {
    const auto it = functions_.find({node.domain(), node.op_type()});
    return it == functions_.end() ? nullptr : it->second;
  }

  void expand(const onnx::NodeProto& node, const std::string& origin, int depth,
              google::protobuf::RepeatedPtrField<onnx::NodeProto>& out) {
    const onnx::FunctionProto* function = function_of(node);
    if (function == nullptr) {
      if (static_cast<std::int64_t>(origins_.size()) >= kMaxExpandedNodes) fail_expansion(origin);
      *out.Add() = node;
      origins_.push_back(origin);
      return;
    }
    if (depth >= kMaxFunctionDepth) {
      throw Error({file_, origin, 0, 0},
                  fmt::format("local function {}.{} calls functions more than {} deep "
                              "(recursive?)",
                              node.domain(), node.op_type(), kMaxFunctionDepth));
    }
    // Checked before expanding: functions that each call the one below twice double the
    // nodes at every level.
    if (static_cast<std::int64_t>(origins_.size()) + expanded_size(*function, depth) >
        kMaxExpandedNodes) {
      fail_expansion(origin);
    }
    const std::string call = node.name().empty()
                                 ? (node.output_size() > 0 ? node.output(0) : node.op_type())
                                 : node.name();
    // The function's formal inputs and outputs are the call's actual ones; a missing optional
    // input is the empty name. Every other value is the call's own.
    std::map<std::string, std::string> names;
    for (int k = 0; k < function->input_size(); ++k)
      names[function->input(k)] = k < node.input_size() ? node.input(k) : std::string();
    for (int k = 0; k < function->output_size(); ++k)
      names[function->output(k)] = k < node.output_size() ? node.output(k) : std::string();
    const auto rename = [&](const std::string& value) -> std::string {
      if (value.empty()) return value;
      const auto it = names.find(value);
      return it != names.end() ? it->second : call + "/" + value;
    };
    for (int j = 0; j < function->node_size(); ++j) {
      onnx::NodeProto inner = function->node(j);
      for (auto& input : *inner.mutable_input())
        input = rename(input);
      for (auto& output : *inner.mutable_output())
        output = rename(output);
      inner.set_name(
          call + "/" +
          (inner.name().empty() ? fmt::format("{}_{}", inner.op_type(), j) : inner.name()));
      // Attributes that refer to the call's: its value, or the operator's default without it.
      auto& attributes = *inner.mutable_attribute();
      for (int a = attributes.size() - 1; a >= 0; --a) {
        onnx::AttributeProto& attribute = attributes[a];
        if (attribute.ref_attr_name().empty()) continue;
        const onnx::AttributeProto* given = nullptr;
        for (const auto& candidate : node.attribute()) {
          if (candidate.name() == attribute.ref_attr_name()) given = &candidate;
        }
        if (given == nullptr) {
          attributes.DeleteSubrange(a, 1);
          continue;
        }
        const std::string name = attribute.name();
        attribute = *given;
        attribute.set_name(name);
      }
      expand(inner, origin, depth + 1, out);
    }
  }

  [[noreturn]] void fail_expansion(const std::string& origin) const {
    throw Error({file_, origin, 0, 0},
                fmt::format("the model expands to more than {} nodes (the limit) when its local "
                            "functions are inlined",
                            format_grouped(kMaxExpandedNodes)));
  }

  // The nodes one call of `function` expands to (past the limit: the limit + 1).
  std::int64_t expanded_size(const onnx::FunctionProto& function, int depth) {
    const FunctionKey key{function.domain(), function.name()};
    if (const auto it = sizes_.find(key); it != sizes_.end()) return it->second;
    std::int64_t size = 0;
    for (const auto& inner : function.node()) {
      const onnx::FunctionProto* callee = function_of(inner);
      // A call too deep is the depth's error, found when it is expanded.
      size += callee != nullptr && depth + 1 < kMaxFunctionDepth ? expanded_size(*callee, depth + 1)
                                                                 : 1;
      if (size > kMaxExpandedNodes) break;
    }
    return sizes_[key] = std::min(size, kMaxExpandedNodes + 1);
  }

  onnx::ModelProto& model_;
  const std::string& file_;
  std::map<FunctionKey, std::int64_t> sizes_;
  std::map<FunctionKey, const onnx::FunctionProto*> functions_;
  std::vector<std::string> origins_;
};

}  // namespace

std::vector<std::string> inline_local_functions(onnx::ModelProto& model, const std::string& file) {
  return Inliner(model, file).run();
}

}  // namespace capcalc::onnx_import
