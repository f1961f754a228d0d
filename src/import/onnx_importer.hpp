// The ONNX importer's internals, shared by its files (private to src/import/).
//
// Importer reads one onnx::ModelProto into a Graph. Its work is split by concern:
//   onnx.cpp          the public entry points and the walk over the nodes (add_node, finish)
//   onnx_load.cpp     validating the file and binding the inputs' dims (--batch, --set)
//   onnx_shapes.cpp   shape inference in rounds, and operand checks on the inferred shapes
//   onnx_control.cpp  If, Loop and Scan: branches and unrolled bodies
//   onnx_rules.cpp    the operator table (onnx_rules.hpp) and the counts of its rows
//   onnx_fused.cpp    onnxruntime's fused operators (com.microsoft): shapes and counts
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

#include "checked.hpp"
#include "import/onnx_rules.hpp"

namespace capcalc::onnx_import {

inline std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Whether `name`, ignoring case, is one of `names`.
inline bool is_one_of(const std::vector<std::string_view>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), lowercase(name)) != names.end();
}

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

inline Value meta_value() {
  Value value;
  value.kind = Kind::kMeta;
  return value;
}

// Element types whose initializers hold trainable parameters (weights, possibly quantised);
// integer index and shape tensors never do.
inline bool is_parameter_type(std::int32_t type) {
  using T = onnx::TensorProto;
  return type == T::FLOAT || type == T::DOUBLE || type == T::FLOAT16 || type == T::BFLOAT16 ||
         type == T::INT8 || type == T::UINT8;
}

// A node's subgraph attribute (If's branches, Loop's body) and its index; nullptr if absent.
inline const onnx::GraphProto* graph_attribute(const onnx::NodeProto& node, std::string_view name,
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
inline bool has_input(const onnx::NodeProto& node, int slot) {
  return slot >= 0 && slot < node.input_size() && !node.input(slot).empty();
}

inline std::string qualified_op(const onnx::NodeProto& node) {
  if (node.domain().empty() || node.domain() == "ai.onnx") return node.op_type();
  return node.domain() + "." + node.op_type();
}

inline std::int64_t attribute_int(const onnx::NodeProto& node, std::string_view name,
                                  std::int64_t fallback) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return a.i();
  }
  return fallback;
}

inline std::vector<std::int64_t> attribute_ints(const onnx::NodeProto& node,
                                                std::string_view name) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

inline std::string attribute_string(const onnx::NodeProto& node, std::string_view name,
                                    std::string fallback) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return a.s();
  }
  return fallback;
}

inline std::int64_t product(const Shape& shape, std::size_t from = 0) {
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

inline KnownShape from_proto(const onnx::TensorShapeProto& proto) {
  KnownShape shape;
  for (const auto& dim : proto.dim()) {
    shape.dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    shape.params.push_back(dim.has_dim_param() ? dim.dim_param() : "");
  }
  return shape;
}

// Rounds of ONNX shape inference, each followed by capcalc's own shapes, at most.
constexpr int kMaxInferenceRounds = 1024;

inline std::string format_shape(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

class Importer {
 public:
  Importer(onnx::ModelProto& model, const std::string& file, const ModelOptions& options)
      : model_(model), graph_proto_(*model.mutable_graph()), file_(file), options_(options) {}

  Graph build();

 private:
  [[noreturn]] void fail(const std::string& pointer, const std::string& message) const;

  // ONNX's inference errors read "[ShapeInferenceError] (op_type:Conv, node name: c1):
  // [ShapeInferenceError] what": the node they name is blamed by its pointer.
  [[noreturn]] void fail_inference(std::string what) const;

  // A weight's dims are the file's word: their product must be a count.
  void check_element_count(const onnx::TensorProto& init, const std::string& pointer) const;

  // A printed model with its weights stripped out (Loam's `.onnxtext`, for one) declares each
  // weight in the graph's value-info list, typed but with no value: a value that nothing
  // defines, of a fully known shape, is an initializer whose data was left out.
  void take_declared_weights();

  void validate();

  // An initializer whose raw_data holds a different number of bytes than its dims and
  // element type say is corrupt (ONNX's checker says the same). Stripped weights carry no
  // raw_data and are not checked; packed and variable-size types are skipped.
  void check_raw_data_size(const onnx::TensorProto& init, const std::string& pointer) const;

  // Names the graph declares once: its inputs (a known element type, a bounded rank), its
  // initializers (a data type) and every value a node writes (one writer each).
  void check_declarations() const;

  // Warns of nodes whose outputs reach no graph output (dead code: counted as the graph holds
  // them, though a runtime may drop them), naming how many and the first.
  void warn_dead_nodes();

  // What ONNX's inference functions assume of a node, checked before they run (each of these
  // was a crash, found by fuzzing): control flow has its graphs, the node keeps its operator's
  // contract, and strides, dilations, kernel sizes, groups and block sizes, which they divide
  // by unchecked, are positive. Subgraphs are checked too.
  void check_node(const onnx::NodeProto& node, int index, const std::string& pointer) const;

  // A convolution without `kernel_shape` takes it from its weight's spatial dims. ONNX's
  // shape inference then indexes the input's spatial dims by the weight's without checking
  // that the ranks agree (a crash on a rank-2 input); stated as the attribute, the kernel is
  // checked against the input's rank, which makes that an error. A weight of rank below 3 is
  // an error here: ONNX reads its channel axes unchecked.
  void make_kernel_shapes_explicit();

  // Sets every dynamic input dim from the options, so that shape inference sees numbers.
  // torch.onnx.export names the dynamic axes it was not given names for
  // "<input>_dynamic_axes_<k>", k counting from 1: the first one of an input, on axis 0, is its
  // batch.
  void find_exporter_batch_dims();

  bool batch_like(const std::string& param) const;

  // Exporters name the dims they cannot size, on the outputs ("past_sequence_length + 1") and,
  // torch.export's exporter, on every intermediate value it lists in value_info ("sequence",
  // "(12//batch)", "unk__45"). ONNX's inference keeps such a name rather than the size it
  // infers, so the sizes of outputs and intermediates are what inference and capcalc's folding
  // find, as for every other value; only the graph inputs' names bind to --set and --batch.
  void forget_exporter_dim_names();

  void bind_inputs();
  void check_dim_options();
  void bind_input(onnx::ValueInfoProto& input, const std::string& pointer);
  void apply_input_shape(const std::string& name, const std::vector<std::int64_t>& given,
                         onnx::TensorShapeProto& shape, const std::string& pointer);
  std::vector<std::int64_t> bind_input_dims(const std::string& name, onnx::TensorShapeProto& shape,
                                            const std::string& pointer);

  // A model exported with fixed shapes has no batch dim to set: --batch N is accepted when
  // every input's leading axis holds the same size B (the batch it was exported with), and
  // for N != B that axis is rewritten to N and every declared intermediate and output shape is
  // forgotten, so that inference starts again from the inputs. False when the inputs do not
  // agree on a leading size (then --batch is an error).
  bool rebatch_fixed_inputs(std::int64_t batch);

  // What a rebatched model's errors add: the graph may hold its exported batch as a constant.
  std::string rebatch_hint() const;

  // After inference on a rebatched model: a Reshape that keeps the exported batch where its
  // input has the new one (a target of [1, -1, 12, 64], or [1, 128, 12, 64] that no longer
  // holds the input's elements) bakes the batch in, and counting on would count a batch of 1
  // there. The first one is an error.
  void check_baked_batch() const;

  // The size of a named input dimension: set (--set), or one of the kinds exporters name:
  // batch (1 unless set), sequence (--set seq=N), past (the KV cache's length in LLM serving,
  // else 0), total (past + sequence), or an expression of them ("past_sequence_length + 1").
  std::optional<std::int64_t> dim_value(const std::string& param) const;

  // ONNX shape inference in rounds; between them capcalc folds the shape arithmetic (Shape ->
  // Gather -> Concat -> Reshape) to constants. Operators ONNX does not know get their first
  // input's shape, and inference runs again from there.
  void infer_shapes();

  static constexpr std::string_view kWaitingDomain = "capcalc.waiting";

  // Moves each STFT whose signal has no known shape of rank 2 or more into kWaitingDomain, and
  // back once it has one; true if one came back (another round is needed to infer it).
  bool hold_unready_nodes();
  bool assume_output_shapes();
  void check_declared_shape(const onnx::NodeProto& node, int index, const std::string& output,
                            const Shape& computed) const;
  void release_waiting_nodes();

  // ONNX merges an If's output shapes over both branches, losing dims where they differ. With a
  // constant condition, the selected branch's shapes are the outputs': written back, they
  // reach the nodes downstream in the next round.
  bool set_if_output_shapes();

  // ONNX leaves a Loop's scan outputs without their leading dimension (the trip count); with a
  // trip count known at import they are [trips, ...the body's output], and the loop-carried
  // outputs have the body's shapes.
  bool set_loop_output_shapes();

  // Sets a graph value's shape (its value_info and graph output entries) unless ONNX already
  // knows it; the next inference round reads it.
  bool write_shape(const std::string& name, const Shape& shape);

  void collect_shapes();

  Shape shape_of(const std::string& tensor, const onnx::NodeProto& node, int index) const;

  std::string node_name(const onnx::NodeProto& node, int index) const;

  // The JSON pointer of node `index` of the graph being read (a branch of If: its subgraph).
  // Nodes expanded from a local function point at the call.
  std::string node_pointer(int index) const;

  std::int32_t group_of(const std::string& name);

  // The complete shape of a value, if inference found one.
  std::optional<Shape> complete_shape(const onnx::NodeProto& node, int slot) const;

  // Operands that cannot go together (ONNX's inference, run leniently, passes over them): a
  // convolution's channels and groups, a product's inner dimensions, a reshape's element count.
  void check_operands(const onnx::NodeProto& node, int index) const;

  void add_node(const onnx::NodeProto& node, int index);

  // What add_node reads of a node's inputs.
  struct NodeOperands {
    std::vector<Shape> shapes;  // Per input slot; [] where absent or metadata.
    std::vector<bool> constant;
    std::int64_t activation_elements = 0;
    std::int64_t constant_elements = 0;
    std::int64_t params = 0;        // Parameters first counted at this node.
    std::int64_t weight_slots = 0;  // Inputs that hold parameters.
    bool needs_grad = false;        // Some activation input needs its gradient.
    bool has_weights = false;
    int operands_needing_grad = 0;
  };

  bool add_control_flow(const onnx::NodeProto& node, int index);
  void fold_node(const onnx::NodeProto& node, bool all_meta);
  NodeOperands read_operands(const onnx::NodeProto& node, int index, const OnnxRule* rule,
                             Layer& layer);
  void add_unknown(const onnx::NodeProto& node, int index, Layer layer, const NodeOperands& in);
  void add_counted(const onnx::NodeProto& node, int index, const OnnxRule& rule, Layer layer,
                   const NodeOperands& operands);

  // Adds the layer for output 0, and a view layer for each further output that is used.
  void finish(const onnx::NodeProto& node, Layer layer, bool needs_grad);

  // Registers a graph's initializers as constants and reads its nodes in order.
  void read_nodes(const onnx::GraphProto& graph);

  // Reading a subgraph of node `index` (attribute `slot`) `reads` times (a loop's trip count):
  // its nodes' pointers go under it. The readers recurse once per level, so the depth is
  // limited; the nodes that the reads will take at least, with those of the loops around it
  // still to come, are checked before the first, so that loops in loops fail at once.
  void enter_subgraph(const onnx::NodeProto& node, int index, int slot,
                      const onnx::GraphProto& graph, std::int64_t reads);

  void leave_subgraph(std::string saved_scope);

  // Too many nodes to read (loops unrolled inside loops) or layers made. The place is the node
  // whose subgraph is read most often (the outermost of equals), else node `index` of the
  // graph being read.
  [[noreturn]] void fail_expansion(int index, bool nodes) const;

  // Loop with a trip count known at import: the body unrolled, once per iteration, its
  // loop-carried values threaded through (the condition is taken to hold unless it is a
  // constant false: an upper bound); each scan output a concatenation of the iterations'
  // values. Layers are named "<Loop node>/<iteration>/<body node>".
  void add_loop(const onnx::NodeProto& node, int index, std::int64_t trips);

  // Scan (opset 9 on): the body runs once per slice of the scan inputs along their scan axes,
  // a trip count that the inputs' shapes give. Unrolled like Loop: each body scan input is a
  // view of one slice, the N state values are threaded through, and each scan output stacks
  // the iterations' values. Layers are named "<Scan node>/<iteration>/<body node>".
  void add_scan(const onnx::NodeProto& node, int index, std::int64_t trips);
  /// Fails unless a Scan (opset 9 on) has num_scan_inputs M >= 1 of its inputs and a body with
  /// as many inputs and at least its N = inputs - M state outputs: an invalid node, whatever its
  /// trip count. Returns the body, its attribute slot, M and N.
  struct ScanLayout {
    const onnx::GraphProto* body = nullptr;
    int slot = -1;
    std::int64_t scan_inputs = 0;
    int carried = 0;
  };
  ScanLayout scan_layout(const onnx::NodeProto& node, int index);

  // A Scan's trip count: the length of its first scan input along its scan axis, if known.
  // Opset 8's Scan (a batch axis and sequence_lens) stays an unknown operator.
  std::optional<std::int64_t> scan_trips(const onnx::NodeProto& node) const;

  // The scan axis of scan input `j` (scan_input_axes, default 0; negative counts from the
  // end), or -1 if out of range.
  static std::int64_t scan_axis(const std::vector<std::int64_t>& axes, int j, std::size_t rank);

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
                                                 const std::function<void(std::int64_t)>& bind);

  // One concat layer per scan output (the node's outputs after the `carried` state values),
  // stacking the iterations' values; its shape is the node output's.
  void stack_scan_outputs(const onnx::NodeProto& node, int index, int carried,
                          const std::vector<std::vector<std::int32_t> >& scanned);

  // If: the branch its condition selects when the condition is a constant (as it is once the
  // shape arithmetic is folded); otherwise the costlier branch, an upper bound. Its layers are
  // named "<If node>/then/..." or ".../else/...".
  void add_if(const onnx::NodeProto& node, int index);

  // Reads a branch's nodes as if they stood in the graph, and binds the If's outputs to the
  // branch's.
  void import_branch(const onnx::NodeProto& node, int index, const onnx::GraphProto& branch,
                     int slot, const char* label);

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
  ImportState take_state(std::size_t first);

  void put_state(ImportState state);

  // An If whose condition is not known: the branch with more FLOPs (then on a tie), an upper
  // bound. Each branch is read once: reading the chosen one again made nested Ifs take time
  // exponential in their depth.
  void import_costlier_branch(const onnx::NodeProto& node, int index,
                              const onnx::GraphProto* const (&branches)[2], const int (&slots)[2]);

  // The value of a boolean (or integer) scalar known at import: an initializer with data or a
  // Constant node (folded shape arithmetic ends as one).
  std::optional<bool> constant_bool(const std::string& tensor) const;

  // The values of an integer tensor known at import: an initializer with data or a Constant
  // node (folded shape arithmetic ends as one).
  std::optional<std::vector<std::int64_t> > constant_ints(const std::string& tensor) const;

  // The value of an integer or boolean scalar (or one-element tensor) known at import.
  std::optional<std::int64_t> constant_int(const std::string& tensor) const;

  const Value& value_of(const std::string& tensor, const onnx::NodeProto& node, int index);

  void note_unknown(const std::string& op, const std::string& pointer);

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
  std::set<std::string> exporter_batch_dims_;  // "<input>_dynamic_axes_1" on axis 0.
  std::int64_t exported_batch_ = 0;  // A fixed-shape model's batch that --batch rewrote; else 0.
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

}  // namespace capcalc::onnx_import
