// Control flow: If (the branch its condition selects, or the costlier one) and Loop and Scan
// (their bodies unrolled once per iteration).

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/units.hpp"

#include "checked.hpp"
#include "count_formulas.hpp"
#include "import/onnx_importer.hpp"
#include "limits.hpp"

namespace capcalc::onnx_import {

// If, and Loop and Scan whose trip counts are known at import (or not too large to unroll): read
// here. False for other nodes, and for a Loop or Scan that stays an unknown operator (listed and
// warned about).
bool Importer::add_control_flow(const onnx::NodeProto& node, int index) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") return false;
  if (node.op_type() == "If") {
    add_if(node, index);
    return true;
  }
  if (node.op_type() == "Loop" && node.input_size() >= 2 && !node.input(0).empty()) {
    const std::optional<std::int64_t> trips = constant_int(node.input(0));
    if (!trips || *trips < 0 || *trips > kMaxLoopIterations) return false;
    add_loop(node, index, *trips);
    return true;
  }
  if (node.op_type() == "Scan") {
    if (opset_ >= 9) scan_layout(node, index);  // An invalid Scan is an error, not unknown.
    const std::optional<std::int64_t> trips = scan_trips(node);
    if (!trips || *trips > kMaxLoopIterations) return false;
    add_scan(node, index, *trips);
    return true;
  }
  return false;
}

// ONNX merges an If's output shapes over both branches, losing dims where they differ. With a
// constant condition, the selected branch's shapes are the outputs': written back, they
// reach the nodes downstream in the next round.
bool Importer::set_if_output_shapes() {
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
bool Importer::set_loop_output_shapes() {
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

// Reading a subgraph of node `index` (attribute `slot`) `reads` times (a loop's trip count):
// its nodes' pointers go under it. The readers recurse once per level, so the depth is
// limited; the nodes that the reads will take at least, with those of the loops around it
// still to come, are checked before the first, so that loops in loops fail at once.
void Importer::enter_subgraph(const onnx::NodeProto& node, int index, int slot,
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

void Importer::leave_subgraph(std::string saved_scope) {
  expanding_.pop_back();
  scope_ = std::move(saved_scope);
}

// Too many nodes to read (loops unrolled inside loops) or layers made. The place is the node
// whose subgraph is read most often (the outermost of equals), else node `index` of the
// graph being read.
void Importer::fail_expansion(int index, bool nodes) const {
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
void Importer::add_loop(const onnx::NodeProto& node, int index, std::int64_t trips) {
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
void Importer::add_scan(const onnx::NodeProto& node, int index, std::int64_t trips) {
  const std::string name = node_name(node, index);
  const ScanLayout scan = scan_layout(node, index);
  const onnx::GraphProto* body = scan.body;
  const std::int64_t scan_inputs = scan.scan_inputs;
  const int carried = scan.carried;
  const std::vector<std::int64_t> axes = attribute_ints(node, "scan_input_axes");
  std::vector<std::pair<Value, std::int64_t> > sources;  // Scan input and its axis.
  for (int j = 0; j < scan_inputs; ++j) {
    const std::string& input = node.input(carried + j);
    const Value& source = value_of(input, node, index);
    const Shape shape = shape_of(input, node, index);
    const std::int64_t axis = scan_axis(axes, j, shape.size());
    if (axis < 0 || shape[static_cast<std::size_t>(axis)] != trips) {
      fail(node_pointer(index),
           fmt::format("node \"{}\" (Scan): scan input \"{}\" {} has no axis {} of length {}", name,
                       input, shape_to_string(shape),
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
  const Body layout{body, scan.slot, carried, 0, 0};
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
          slice.traits = view_traits();
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

Importer::ScanLayout Importer::scan_layout(const onnx::NodeProto& node, int index) {
  ScanLayout layout;
  layout.body = graph_attribute(node, "body", &layout.slot);
  layout.scan_inputs = attribute_int(node, "num_scan_inputs", 0);
  const bool fits = layout.scan_inputs >= 1 && layout.scan_inputs <= node.input_size();
  if (fits) layout.carried = node.input_size() - static_cast<int>(layout.scan_inputs);
  if (layout.body == nullptr || !fits || layout.body->input_size() != node.input_size() ||
      layout.body->output_size() < layout.carried) {
    fail(node_pointer(index),
         fmt::format("node \"{}\" (Scan) needs num_scan_inputs M >= 1 and a body with N + M "
                     "inputs and N + K outputs for its N state values (inputs {}, "
                     "num_scan_inputs {})",
                     node_name(node, index), node.input_size(), layout.scan_inputs));
  }
  return layout;
}

// A Scan's trip count: the length of its first scan input along its scan axis, if known.
// Opset 8's Scan (a batch axis and sequence_lens) stays an unknown operator.
std::optional<std::int64_t> Importer::scan_trips(const onnx::NodeProto& node) const {
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
std::int64_t Importer::scan_axis(const std::vector<std::int64_t>& axes, int j, std::size_t rank) {
  std::int64_t axis = j < static_cast<int>(axes.size()) ? axes[static_cast<std::size_t>(j)] : 0;
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < 0) axis += r;
  return axis >= 0 && axis < r ? axis : -1;
}

// Reads the body `iterations` times; `bind(it)` sets the body inputs that are not state.
// Leaves the final state in the node's first outputs and returns, for each scan output (the
// body outputs after the state), the iterations' values.
std::vector<std::vector<std::int32_t> > Importer::unroll(
    const onnx::NodeProto& node, int index, const Body& layout, std::int64_t iterations,
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
void Importer::stack_scan_outputs(const onnx::NodeProto& node, int index, int carried,
                                  const std::vector<std::vector<std::int32_t> >& scanned) {
  const std::string name = node_name(node, index);
  const int scans = static_cast<int>(scanned.size());
  for (int j = 0; j < scans && carried + j < node.output_size(); ++j) {
    const std::string& output = node.output(carried + j);
    if (output.empty()) continue;
    Layer layer;
    layer.name = fmt::format("{}/scan_{}", name, j);
    layer.op = "concat";
    layer.traits = LayerTraits{OpClass::kDataMovement, Fusion::kNever, std::nullopt};
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

// If: the branch its condition selects when the condition is a constant (as it is once the
// shape arithmetic is folded); otherwise the costlier branch, an upper bound. Its layers are
// named "<If node>/then/..." or ".../else/...".
void Importer::add_if(const onnx::NodeProto& node, int index) {
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
void Importer::import_branch(const onnx::NodeProto& node, int index, const onnx::GraphProto& branch,
                             int slot, const char* label) {
  const std::string name = node_name(node, index);
  const std::string saved_scope = scope_;
  const std::string saved_prefix = name_prefix_;
  enter_subgraph(node, index, slot, branch, 1);
  name_prefix_ = fmt::format("{}/{}/", name, label);
  read_nodes(branch);
  leave_subgraph(saved_scope);
  name_prefix_ = saved_prefix;
  if (branch.output_size() != node.output_size()) {  // ONNX: one branch output per If output.
    fail(node_pointer(index), fmt::format("node \"{}\" (If): its {} branch has {} outputs for {}",
                                          name, label, branch.output_size(), node.output_size()));
  }
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty()) continue;
    values_[node.output(i)] = value_of(branch.output(i).name(), node, index);
  }
}

// Moves the state out: the layers from `first` on, and the maps (put_state refills them).
Importer::ImportState Importer::take_state(std::size_t first) {
  ImportState state{{},
                    std::move(values_),
                    std::move(used_),
                    std::move(counted_),
                    std::move(groups_),
                    std::move(graph_.unknown_ops),
                    std::move(initializers_)};
  const auto from = graph_.layers.begin() + static_cast<std::ptrdiff_t>(first);
  state.layers.assign(std::make_move_iterator(from), std::make_move_iterator(graph_.layers.end()));
  graph_.layers.erase(from, graph_.layers.end());
  return state;
}

void Importer::put_state(ImportState state) {
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
void Importer::import_costlier_branch(const onnx::NodeProto& node, int index,
                                      const onnx::GraphProto* const (&branches)[2],
                                      const int (&slots)[2]) {
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

}  // namespace capcalc::onnx_import
