#include "capcalc/graph.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "capcalc/names.hpp"

#include "checked.hpp"

namespace capcalc {
namespace {

constexpr auto kOpClassNames = name_table<OpClass>({{OpClass::kMatrix, "matrix"},
                                                    {OpClass::kAttention, "attention"},
                                                    {OpClass::kElementwise, "elementwise"},
                                                    {OpClass::kNormalization, "normalization"},
                                                    {OpClass::kPooling, "pooling"},
                                                    {OpClass::kDataMovement, "data_movement"},
                                                    {OpClass::kView, "view"},
                                                    {OpClass::kUnknown, "unknown"}});
static_assert(kOpClassNames.rows.size() == kOpClassCount);

}  // namespace

std::string_view op_class_name(OpClass op_class) {
  return kOpClassNames.name(op_class);
}

std::string shape_to_string(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::int64_t element_count(const Shape& shape) {
  std::int64_t count = 1;
  for (std::int64_t dim : shape)
    count = checked_mul(count, dim);
  return count;
}

std::int64_t LayerCounts::flops() const {
  return checked_add(checked_mul(macs, 2), other_flops);
}

std::int64_t LayerCounts::backward_flops() const {
  return checked_add(checked_mul(backward_macs, 2), backward_other_flops);
}

std::int64_t LayerCounts::moved_elements() const {
  return checked_add(checked_add(input_elements, weight_elements_read), output_elements);
}

const Shape& Graph::value_shape(std::int32_t value) const {
  const auto index = static_cast<std::size_t>(value);
  if (index < inputs.size()) return inputs[index].shape;
  return layers[index - inputs.size()].output;
}

std::string Graph::value_name(std::int32_t value) const {
  const auto index = static_cast<std::size_t>(value);
  if (index < inputs.size()) return inputs[index].name;
  return layers[index - inputs.size()].name;
}

std::int64_t kv_cache_elements(const Graph& graph, std::int64_t context) {
  std::int64_t total = 0;
  for (const Layer& layer : graph.layers) {
    const LayerCounts& c = layer.counts;
    const std::int64_t kept =
        c.kv_cache_window > 0 ? std::min(context, c.kv_cache_window) : context;
    total = checked_add(total, checked_mul(c.kv_cache_per_token, kept));
  }
  if (total == 0) total = checked_mul(graph.past_elements_per_token, context);
  return total;
}

double head_share(std::int64_t heads, std::int64_t tp) {
  const std::int64_t split = heads > 0 ? std::min(tp, heads) : tp;
  return 1.0 / static_cast<double>(std::max<std::int64_t>(split, 1));
}

double kv_cache_share(const LayerCounts& counts, std::int64_t tp) {
  return head_share(counts.kv_cache_heads, tp);
}

double kv_cache_elements_per_device(const Graph& graph, std::int64_t context, std::int64_t tp) {
  double total = 0;
  bool layered = false;
  for (const Layer& layer : graph.layers) {
    const LayerCounts& c = layer.counts;
    if (c.kv_cache_per_token == 0) continue;
    layered = true;
    const std::int64_t kept =
        c.kv_cache_window > 0 ? std::min(context, c.kv_cache_window) : context;
    total += static_cast<double>(checked_mul(c.kv_cache_per_token, kept)) * kv_cache_share(c, tp);
  }
  if (!layered) {
    total = static_cast<double>(checked_mul(graph.past_elements_per_token, context)) /
            static_cast<double>(tp);
  }
  return total;
}

namespace {

// Whether each value (inputs, then layers) depends on an input that `absent` does not pick (a
// layer without inputs counts as such).
template <typename Absent>
std::vector<bool> fed_by_present_inputs(const Graph& graph, Absent absent) {
  std::vector<bool> present;
  present.reserve(graph.inputs.size() + graph.layers.size());
  for (const GraphInput& input : graph.inputs)
    present.push_back(!absent(input));
  for (const Layer& layer : graph.layers) {
    bool runs = layer.inputs.empty();
    for (std::int32_t id : layer.inputs)
      runs = runs || present.at(static_cast<std::size_t>(id));
    present.push_back(runs);
  }
  return present;
}

// Turns the layers computed only from inputs that `absent` picks into views without counts
// (the parameters kept where asked: weights still loaded); returns how many.
template <typename Absent>
std::int64_t drop_layers_fed_only_by(Graph& graph, Absent absent, bool keep_params) {
  const std::vector<bool> present = fed_by_present_inputs(graph, absent);
  std::int64_t dropped = 0;
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    Layer& layer = graph.layers[i];
    if (present[static_cast<std::size_t>(graph.layer_value(i))]) continue;
    LayerCounts kept;
    if (keep_params) {
      kept.params = layer.counts.params;
      kept.active_params = layer.counts.active_params;
    }
    layer.counts = kept;
    layer.view = true;
    ++dropped;
  }
  return dropped;
}

}  // namespace

std::int64_t drop_prefill_only_layers(Graph& graph) {
  return drop_layers_fed_only_by(
      graph, [](const GraphInput& input) { return input.prefill_only; }, false);
}

std::int64_t omit_input_layers(Graph& graph) {
  return drop_layers_fed_only_by(
      graph, [](const GraphInput& input) { return input.omitted; }, true);
}

std::int64_t last_token_logits(Graph& graph) {
  const std::vector<bool> from_tokens =
      fed_by_present_inputs(graph, [](const GraphInput& input) { return input.prefill_only; });
  std::int64_t changed = 0;
  for (std::int32_t value : graph.outputs) {
    if (value < static_cast<std::int32_t>(graph.inputs.size())) continue;
    Layer& layer = graph.layers.at(static_cast<std::size_t>(value) - graph.inputs.size());
    const std::optional<GemmView>& gemm = layer.traits.gemm;
    LayerCounts& c = layer.counts;
    Shape& out = layer.output;
    if (layer.traits.op_class != OpClass::kMatrix || !gemm || gemm->count != 1 ||
        c.weight_elements_read == 0 || c.score_macs != 0 || out.size() < 3 ||
        !from_tokens[static_cast<std::size_t>(value)]) {
      continue;
    }
    const std::int64_t tokens = out[out.size() - 2];
    // (An empty output, a zero-sized axis, has no rows to keep.)
    if (tokens <= 1 || out.back() <= 0 || gemm->m != element_count(out) / out.back()) continue;
    // A product with weights: every count but the weights' is per row, and the rows are the
    // sequences times their tokens.
    for (std::int64_t* per_row : {&c.macs, &c.other_flops, &c.input_elements, &c.output_elements,
                                  &c.backward_macs, &c.backward_other_flops, &c.saved_elements}) {
      *per_row /= tokens;
    }
    layer.traits.gemm->m /= tokens;
    out[out.size() - 2] = 1;
    ++changed;
  }
  return changed;
}

bool has_experts(const Graph& graph) {
  return std::any_of(graph.layers.begin(), graph.layers.end(),
                     [](const Layer& layer) { return layer.counts.experts > 0; });
}

namespace {

// Each group's elements: what its non-view layers keep (outputs and saved elements) and its
// last layer's output. Importers number groups 0, 1, 2, ... in layer order, so a vector
// indexed by id serves; ids spread far apart (a hand-built graph) are ranked first.
struct GroupSums {
  std::int64_t inside = 0;
  std::int64_t result = 0;
};

void add_checkpointing(const Graph& graph, GraphTotals& totals) {
  if (graph.layers.empty()) return;
  const auto [lowest, highest] =
      std::minmax_element(graph.layers.begin(), graph.layers.end(),
                          [](const Layer& a, const Layer& b) { return a.group < b.group; });
  const std::int64_t low = lowest->group;
  const std::int64_t span = std::int64_t{highest->group} - low + 1;
  std::vector<std::int32_t> ranked;  // Sorted ids, where they are spread.
  if (span > 2 * static_cast<std::int64_t>(graph.layers.size())) {
    ranked.reserve(graph.layers.size());
    for (const Layer& layer : graph.layers)
      ranked.push_back(layer.group);
    std::sort(ranked.begin(), ranked.end());
    ranked.erase(std::unique(ranked.begin(), ranked.end()), ranked.end());
  }
  const auto slot = [&](std::int32_t group) {
    if (ranked.empty()) return static_cast<std::size_t>(group - low);
    return static_cast<std::size_t>(std::lower_bound(ranked.begin(), ranked.end(), group) -
                                    ranked.begin());
  };
  std::vector<GroupSums> groups(ranked.empty() ? static_cast<std::size_t>(span) : ranked.size());
  for (const Layer& layer : graph.layers) {
    GroupSums& sums = groups[slot(layer.group)];
    const std::int64_t elements = element_count(layer.output);
    if (!layer.view) {
      sums.inside = checked_add(sums.inside, checked_add(elements, layer.counts.saved_elements));
    }
    sums.result = elements;
  }
  // Checkpointing keeps each group's result and recomputes one group at a time. A group
  // without layers (a gap in the ids) adds nothing.
  std::int64_t largest = 0;
  for (const GroupSums& sums : groups)
    largest = std::max(largest, sums.inside);
  for (const GroupSums& sums : groups) {
    totals.checkpoint_result_elements = checked_add(totals.checkpoint_result_elements, sums.result);
  }
  totals.checkpointed_elements = checked_add(largest, totals.checkpoint_result_elements);
  // The boundary: every group's result but the last group's (the highest id); with
  // multi-token-prediction modules, which run on the last stage, the output layer's group
  // (the one before them) is the last that sends.
  std::size_t last = groups.size() - 1;
  if (graph.mtp_first_layer > 0) {
    last = slot(graph.layers[static_cast<std::size_t>(graph.mtp_first_layer) - 1].group);
  }
  for (std::size_t g = 0; g < last; ++g)
    totals.boundary_elements = std::max(totals.boundary_elements, groups[g].result);
}

// Liveness. A view shares the storage of the value it reads; storage lives from the step
// that creates it to the last step that reads it (or any view of it); model inputs from the
// start, model outputs to the end.
std::int64_t peak_live_elements(const Graph& graph) {
  const std::size_t values = graph.inputs.size() + graph.layers.size();
  const std::size_t steps = graph.layers.size();
  std::vector<std::size_t> storage(values);
  std::vector<std::size_t> last_use(values, 0);
  for (std::size_t v = 0; v < values; ++v)
    storage[v] = v;
  for (std::size_t i = 0; i < steps; ++i) {
    const Layer& layer = graph.layers[i];
    const std::size_t value = graph.inputs.size() + i;
    if (layer.view) storage[value] = storage[static_cast<std::size_t>(layer.inputs.front())];
    last_use[storage[value]] = std::max(last_use[storage[value]], i);
    for (std::int32_t input : layer.inputs) {
      const std::size_t root = storage[static_cast<std::size_t>(input)];
      last_use[root] = std::max(last_use[root], i);
    }
  }
  for (std::int32_t output : graph.outputs)
    last_use[storage[static_cast<std::size_t>(output)]] = steps;

  // The storages freed after each step, grouped by step (a counting sort): frees[first[i],
  // first[i + 1]) after step i.
  std::vector<std::size_t> first(steps + 2, 0);
  for (std::size_t v = 0; v < values; ++v) {
    if (storage[v] == v) ++first[last_use[v] + 1];
  }
  for (std::size_t i = 1; i < first.size(); ++i)
    first[i] += first[i - 1];
  std::vector<std::size_t> frees(first.back());
  std::vector<std::size_t> next(first.begin(), first.end() - 1);
  std::int64_t live = 0;
  for (std::size_t v = 0; v < values; ++v) {
    if (storage[v] != v) continue;
    frees[next[last_use[v]]++] = v;
    if (v < graph.inputs.size()) live = checked_add(live, element_count(graph.inputs[v].shape));
  }
  std::int64_t peak = live;
  for (std::size_t i = 0; i < steps; ++i) {
    const Layer& layer = graph.layers[i];
    if (!layer.view) live = checked_add(live, element_count(layer.output));
    // Workspace: what a layer holds only while it runs (attention's Q, K, V and context).
    peak = std::max(peak, checked_add(live, layer.counts.saved_elements));
    for (std::size_t f = first[i]; f < first[i + 1]; ++f) {
      live -= element_count(graph.value_shape(static_cast<std::int32_t>(frees[f])));
    }
  }
  return peak;
}

}  // namespace

GraphTotals graph_totals(const Graph& graph) {
  GraphTotals totals;
  for (const Layer& layer : graph.layers) {
    const LayerCounts& c = layer.counts;
    totals.params = checked_add(totals.params, c.params);
    totals.active_params = checked_add(totals.active_params, c.active_params);
    totals.expert_params = checked_add(totals.expert_params, c.expert_params);
    totals.macs = checked_add(totals.macs, c.macs);
    totals.other_flops = checked_add(totals.other_flops, c.other_flops);
    totals.backward_macs = checked_add(totals.backward_macs, c.backward_macs);
    totals.backward_flops = checked_add(totals.backward_flops, c.backward_flops());
    totals.moved_elements = checked_add(totals.moved_elements, c.moved_elements());
    if (!layer.view) {
      totals.activation_elements = checked_add(
          totals.activation_elements, checked_add(element_count(layer.output), c.saved_elements));
    }
  }
  totals.flops = checked_add(checked_mul(totals.macs, 2), totals.other_flops);
  add_checkpointing(graph, totals);
  totals.peak_live_elements = peak_live_elements(graph);
  return totals;
}

}  // namespace capcalc
