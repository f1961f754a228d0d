// Reading an ONNX model's declarations: validating the file and its nodes, and binding
// the inputs' dims (--batch, --set, --input-shape) so that shape inference sees numbers.

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

namespace {

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

}  // namespace

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

// Sets every dynamic input dim from the options, so that shape inference sees numbers.
// torch.onnx.export names the dynamic axes it was not given names for
// "<input>_dynamic_axes_<k>", k counting from 1: the first one of an input, on axis 0, is its
// batch.
void Importer::find_exporter_batch_dims() {
  for (const auto& input : graph_proto_.input()) {
    if (initializers_.count(input.name()) != 0 || !input.type().has_tensor_type()) continue;
    const auto& shape = input.type().tensor_type().shape();
    if (shape.dim_size() > 0 && shape.dim(0).dim_param() == input.name() + "_dynamic_axes_1") {
      exporter_batch_dims_.insert(shape.dim(0).dim_param());
    }
  }
}

bool Importer::batch_like(const std::string& param) const {
  return is_batch_name(param) || exporter_batch_dims_.count(param) != 0;
}

// Exporters name the dims they cannot size, on the outputs ("past_sequence_length + 1") and,
// torch.export's exporter, on every intermediate value it lists in value_info ("sequence",
// "(12//batch)", "unk__45"). ONNX's inference keeps such a name rather than the size it
// infers, so the sizes of outputs and intermediates are what inference and capcalc's folding
// find, as for every other value; only the graph inputs' names bind to --set and --batch.
void Importer::forget_exporter_dim_names() {
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

void Importer::bind_inputs() {
  find_exporter_batch_dims();
  check_dim_options();
  for (int i = 0; i < graph_proto_.input_size(); ++i) {
    onnx::ValueInfoProto& input = *graph_proto_.mutable_input(i);
    if (initializers_.count(input.name()) == 0)
      bind_input(input, fmt::format("/graph/input/{}", i));
  }
  if (graph_.inputs.empty()) fail("/graph/input", "the model has no inputs (only initializers)");
}

// Every --set name and --input-shape input is one the model has (--batch also fits a model
// exported with a fixed batch; integer scalar inputs take their value from --set).
void Importer::check_dim_options() {
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
  const bool has_sequence = std::any_of(dim_params.begin(), dim_params.end(),
                                        [](const auto& d) { return is_one_of(kSequenceNames, d); });
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
    if (value <= 0) fail("", fmt::format("dimension \"{}\" must be positive, got {}", name, value));
    if (scalar_inputs.count(name) != 0) {
      scalar_values_[name] = value;
      if (dim_params.count(name) == 0) continue;
    }
    if (dim_params.count(name) != 0 || (name == "batch" && has_batch)) continue;
    if (name == "seq" && has_sequence) continue;
    if (name == "batch" && !options_.input_shapes.empty()) continue;
    if (name == "batch" && rebatch_fixed_inputs(value)) continue;
    std::vector<std::string_view> known(dim_params.begin(), dim_params.end());
    known.insert(known.end(), scalar_inputs.begin(), scalar_inputs.end());
    std::string message =
        with_suggestion(fmt::format("the model has no dimension \"{}\" to set", name), name, known);
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
}

// One graph input: its dims set from --input-shape, --set and --batch, its bytes countable.
void Importer::bind_input(onnx::ValueInfoProto& input, const std::string& pointer) {
  if (!input.type().has_tensor_type() || !input.type().tensor_type().has_shape()) {
    if (options_.input_shapes.count(input.name()) == 0) {
      fail(pointer, fmt::format("input \"{}\" has no shape; give one (--input-shape {}=...)",
                                input.name(), input.name()));
    }
  }
  onnx::TensorShapeProto& shape = *input.mutable_type()->mutable_tensor_type()->mutable_shape();
  if (auto given = options_.input_shapes.find(input.name()); given != options_.input_shapes.end()) {
    apply_input_shape(input.name(), given->second, shape, pointer);
  }
  GraphInput graph_input;
  graph_input.name = input.name();
  std::vector<std::string> params_of_input;
  for (const auto& dim : shape.dim())
    params_of_input.push_back(dim.has_dim_param() ? dim.dim_param() : "");
  graph_input.shape = bind_input_dims(input.name(), shape, pointer);
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

// An --input-shape replaces the input's declared shape; the dims it named take their sizes.
void Importer::apply_input_shape(const std::string& name, const std::vector<std::int64_t>& given,
                                 onnx::TensorShapeProto& shape, const std::string& pointer) {
  if (shape.dim_size() != 0 && static_cast<std::size_t>(shape.dim_size()) != given.size()) {
    fail(pointer, fmt::format("input \"{}\" has rank {}, but its --input-shape has {} dims", name,
                              shape.dim_size(), given.size()));
  }
  std::vector<std::string> params;
  for (const auto& dim : shape.dim())
    params.push_back(dim.has_dim_param() ? dim.dim_param() : "");
  shape.clear_dim();
  for (std::int64_t d : given) {
    const std::size_t axis = static_cast<std::size_t>(shape.dim_size());
    if (axis < params.size() && !params[axis].empty()) {
      graph_.dims[params[axis]] = d;
      if (batch_like(params[axis])) {
        graph_.batch = d;
        graph_.dims["batch"] = d;
      }
    }
    if (d <= 0) {
      fail(pointer, fmt::format("input \"{}\": shape entries must be positive, got {}", name, d));
    }
    shape.add_dim()->set_dim_value(d);
  }
}

// The input's dims, each named one set from --set, --batch or its kind (dim_value), and
// written back as a number for shape inference.
std::vector<std::int64_t> Importer::bind_input_dims(const std::string& name,
                                                    onnx::TensorShapeProto& shape,
                                                    const std::string& pointer) {
  std::vector<std::int64_t> dims;
  for (int a = 0; a < shape.dim_size(); ++a) {
    onnx::TensorShapeProto_Dimension& dim = *shape.mutable_dim(a);
    if (dim.has_dim_value() && dim.dim_value() > 0) {
      dims.push_back(dim.dim_value());
      continue;
    }
    if (!dim.has_dim_param()) {
      fail(pointer, fmt::format("input \"{}\": axis {} has no size; set the shape "
                                "(--input-shape {}=...)",
                                name, a, name));
    }
    const std::string param = dim.dim_param();
    const std::optional<std::int64_t> value = dim_value(param);
    if (value && *value < 0) {
      fail(pointer,
           fmt::format("input \"{}\": dimension \"{}\" (axis {}) is {}", name, param, a, *value));
    }
    if (!value) {
      fail(pointer, fmt::format("input \"{}\": dimension \"{}\" (axis {}) is not set; give "
                                "--set {}=N or --input-shape {}=...",
                                name, param, a, param, name));
    }
    if (batch_like(param)) {
      graph_.batch = *value;
      graph_.dims["batch"] = *value;
    }
    if (is_one_of(kSequenceNames, param)) graph_.dims["seq"] = *value;  // Tokens per sample.
    graph_.dims[param] = *value;
    dim.set_dim_value(*value);  // Clears dim_param (a oneof).
    dims.push_back(*value);
  }
  return dims;
}

// A model exported with fixed shapes has no batch dim to set: --batch N is accepted when
// every input's leading axis holds the same size B (the batch it was exported with), and
// for N != B that axis is rewritten to N and every declared intermediate and output shape is
// forgotten, so that inference starts again from the inputs. False when the inputs do not
// agree on a leading size (then --batch is an error).
bool Importer::rebatch_fixed_inputs(std::int64_t batch) {
  std::vector<onnx::TensorShapeProto*> leading;
  std::int64_t exported = 0;
  for (auto& input : *graph_proto_.mutable_input()) {
    if (initializers_.count(input.name()) != 0 || !input.type().has_tensor_type()) continue;
    if (!input.type().tensor_type().has_shape()) return false;
    auto& shape = *input.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape.dim_size() == 0) continue;  // A scalar has no batch.
    if (!shape.dim(0).has_dim_value() || shape.dim(0).dim_value() <= 0) return false;
    if (exported != 0 && shape.dim(0).dim_value() != exported) return false;
    exported = shape.dim(0).dim_value();
    leading.push_back(&shape);
  }
  if (exported == 0) return false;
  graph_.batch = batch;
  graph_.dims["batch"] = batch;
  if (batch == exported) return true;
  exported_batch_ = exported;
  for (onnx::TensorShapeProto* shape : leading)
    shape->mutable_dim(0)->set_dim_value(batch);
  const auto forget = [](onnx::ValueInfoProto& value) {
    if (value.type().has_tensor_type()) value.mutable_type()->mutable_tensor_type()->clear_shape();
  };
  for (auto& output : *graph_proto_.mutable_output())
    forget(output);
  for (auto& info : *graph_proto_.mutable_value_info())
    forget(info);
  return true;
}

// What a rebatched model's errors add: the graph may hold its exported batch as a constant.
std::string Importer::rebatch_hint() const {
  return fmt::format(
      " (the model's inputs are fixed at batch {}, and --batch {} rewrote their "
      "leading axis; export it with a dynamic batch axis, e.g. "
      "torch.onnx.export(..., dynamic_axes={{\"input\": {{0: \"batch\"}}}}))",
      exported_batch_, graph_.batch);
}

// The size of a named input dimension: set (--set), or one of the kinds exporters name:
// batch (1 unless set), sequence (--set seq=N), past (the KV cache's length in LLM serving,
// else 0), total (past + sequence), or an expression of them ("past_sequence_length + 1").
std::optional<std::int64_t> Importer::dim_value(const std::string& param) const {
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

}  // namespace capcalc::onnx_import
