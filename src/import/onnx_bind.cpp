// Binding an ONNX model's input dims (--batch, --set, --input-shape, LLM serving's sequence
// and past lengths) so that shape inference sees numbers.

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "capcalc/error.hpp"

#include "checked.hpp"
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
