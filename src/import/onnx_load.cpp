// Reading an ONNX model's declarations: validating the file, its weights and its nodes (the
// inputs' dims are bound in onnx_bind.cpp).

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

#include "capcalc/error.hpp"

#include "checked.hpp"
#include "count_formulas.hpp"
#include "expr.hpp"
#include "import/onnx_importer.hpp"
#include "limits.hpp"
#include "spellcheck.hpp"

namespace capcalc::onnx_import {

// A weight's dims are the file's word: their product must be a count.
void Importer::check_element_count(const onnx::TensorProto& init,
                                   const std::string& pointer) const {
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
void Importer::take_declared_weights() {
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

void Importer::validate() {
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
  warn_dead_nodes();
  graph_.name = graph_proto_.name().empty() ? "onnx_model" : graph_proto_.name();
  graph_.runs_fused = true;
  graph_.description = model_.doc_string();
  graph_.source = model_.producer_name().empty()
                      ? "ONNX"
                      : fmt::format("ONNX, exported by {} {}", model_.producer_name(),
                                    model_.producer_version());
}

// An initializer whose raw_data holds a different number of bytes than its dims and
// element type say is corrupt (ONNX's checker says the same). Stripped weights carry no
// raw_data and are not checked; packed and variable-size types are skipped.
void Importer::check_raw_data_size(const onnx::TensorProto& init,
                                   const std::string& pointer) const {
  if (init.raw_data().empty()) return;
  std::uint64_t element_bytes = 0;
  switch (init.data_type()) {
    case onnx::TensorProto::BOOL:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
      element_bytes = 1;
      break;
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      element_bytes = 2;
      break;
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::FLOAT:
      element_bytes = 4;
      break;
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::COMPLEX64:
      element_bytes = 8;
      break;
    case onnx::TensorProto::COMPLEX128:
      element_bytes = 16;
      break;
    default:
      return;
  }
  const std::uint64_t have = init.raw_data().size();
  std::uint64_t want = element_bytes;  // Stops growing once past what the data holds.
  for (const std::int64_t dim : init.dims()) {
    if (dim < 0) return;  // A negative dim has its own error.
    if (dim == 0) want = 0;
    if (want > have) break;
    want *= static_cast<std::uint64_t>(dim);
  }
  if (want > have) {
    fail(pointer, fmt::format("initializer \"{}\": raw_data holds {} bytes, fewer than its dims "
                              "and data_type need",
                              init.name(), have));
  }
  if (want < have) {
    fail(pointer, fmt::format("initializer \"{}\": raw_data holds {} bytes, but its dims and "
                              "data_type need {}",
                              init.name(), have, want));
  }
}

// Names the graph declares once: its inputs (a known element type, a bounded rank), its
// initializers (a data type) and every value a node writes (one writer each); every output is
// one of them.
void Importer::check_declarations() const {
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
    check_raw_data_size(init, pointer);
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
      fail(pointer, fmt::format("input \"{}\" has {} dims, more than {} (the limit)", input.name(),
                                tensor.shape().dim_size(), kMaxTensorRank));
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
  // An output nothing writes was counted as nothing (its declared shape taken on trust).
  for (int i = 0; i < graph_proto_.output_size(); ++i) {
    const std::string& name = graph_proto_.output(i).name();
    const std::string pointer = fmt::format("/graph/output/{}", i);
    if (name.empty()) fail(pointer, "an output needs a name");
    if (defined.count(name) == 0) {
      fail(pointer,
           fmt::format("output \"{}\" is written by no node and is no input or initializer", name));
    }
  }
}

void Importer::warn_dead_nodes() {
  std::map<std::string, int> writer;  // Value -> the node that writes it.
  for (int i = 0; i < graph_proto_.node_size(); ++i) {
    for (const std::string& output : graph_proto_.node(i).output())
      if (!output.empty()) writer.emplace(output, i);
  }
  std::vector<bool> live(static_cast<std::size_t>(graph_proto_.node_size()), false);
  std::vector<std::string> pending;
  for (const auto& output : graph_proto_.output())
    pending.push_back(output.name());
  // Subgraphs (If, Loop, Scan bodies) read outer values by name: each node's subgraphs count
  // as its inputs.
  const auto reads = [](const onnx::NodeProto& node, std::vector<std::string>& into) {
    std::vector<const onnx::GraphProto*> graphs;
    const auto read = [&](const onnx::NodeProto& n) {
      into.insert(into.end(), n.input().begin(), n.input().end());
      for (const auto& attribute : n.attribute()) {
        if (attribute.has_g()) graphs.push_back(&attribute.g());
        for (const auto& g : attribute.graphs())
          graphs.push_back(&g);
      }
    };
    read(node);
    while (!graphs.empty()) {
      const onnx::GraphProto* g = graphs.back();
      graphs.pop_back();
      for (const auto& inner : g->node())
        read(inner);
      for (const auto& output : g->output())
        into.push_back(output.name());
    }
  };
  while (!pending.empty()) {
    const auto it = writer.find(pending.back());
    pending.pop_back();
    if (it == writer.end() || live[static_cast<std::size_t>(it->second)]) continue;
    live[static_cast<std::size_t>(it->second)] = true;
    reads(graph_proto_.node(it->second), pending);
  }
  int dead = 0;
  int first = -1;
  for (int i = 0; i < graph_proto_.node_size(); ++i) {
    if (live[static_cast<std::size_t>(i)]) continue;
    ++dead;
    if (first < 0) first = i;
  }
  if (dead == 0) return;
  graph_.warnings.push_back(fmt::format(
      "{}: {} node{} reach{} no graph output (the first: \"{}\" at {}); counted as the graph "
      "holds {}, though a runtime may drop {}",
      file_, dead, dead == 1 ? "" : "s", dead == 1 ? "es" : "",
      node_name(graph_proto_.node(first), first), node_pointer(first), dead == 1 ? "it" : "them",
      dead == 1 ? "it" : "them"));
}

// What ONNX's inference functions assume of a node, checked before they run (each of these
// was a crash, found by fuzzing): control flow has its graphs, the node keeps its operator's
// contract, and strides, dilations, kernel sizes, groups and block sizes, which they divide
// by unchecked, are positive. Subgraphs are checked too.
void Importer::check_node(const onnx::NodeProto& node, int index,
                          const std::string& pointer) const {
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
      const auto verify = [&](const onnx::NodeProto& checked) -> std::string {
        try {
          schema->Verify(checked);
        } catch (const std::exception& e) {
          std::string reason = e.what();
          if (const auto cut = reason.find("\n\n==> Context"); cut != std::string::npos) {
            reason.erase(cut);
          }
          return reason;
        }
        return "";
      };
      std::string reason = verify(node);
      // An attribute the operator does not define is ignored by inference, as by runtimes;
      // the rest of the contract still holds (Verify stops at the first fault: a Scan whose
      // misspelt num_scan_inputs hid the missing one crashed ONNX's Scan inference).
      if (reason.rfind("Unrecognized attribute", 0) == 0) {
        onnx::NodeProto known = node;
        known.clear_attribute();
        for (const onnx::AttributeProto& attr : node.attribute()) {
          if (schema->attributes().count(attr.name()) != 0) *known.add_attribute() = attr;
        }
        reason = verify(known);
      }
      if (!reason.empty()) {
        fail(pointer,
             fmt::format("node \"{}\" ({}) is malformed: {}", label, node.op_type(), reason));
      }
    }
  }
  // Cast to UNDEFINED (0) passes ONNX's inference, which refuses other unknown types.
  if ((node.domain().empty() || node.domain() == "ai.onnx") && node.op_type() == "Cast") {
    for (const onnx::AttributeProto& attr : node.attribute()) {
      if (attr.name() == "to" && attr.i() == onnx::TensorProto::UNDEFINED) {
        fail(pointer,
             fmt::format("node \"{}\" (Cast): to = 0 is no element type (UNDEFINED)", label));
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
void Importer::make_kernel_shapes_explicit() {
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

}  // namespace capcalc::onnx_import
