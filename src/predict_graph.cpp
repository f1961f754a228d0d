// What the performance model reads off a graph before it times a step (predict_graph.hpp).
#include "predict_graph.hpp"

#include <algorithm>
#include <string>

namespace capcalc {

// The layers every device of a tensor-parallel group runs whole without sequence parallelism:
// those between the tensor-parallel regions (Megatron's column- then row-parallel attention
// and MLP), the norms, residual adds and other elementwise layers on the model's width (the
// width of the attention layers' outputs). Elementwise layers inside a region (the MLP's
// activation, SwiGLU's product) are on the split intermediate width. A model without
// attention layers has no such regions: none.
std::vector<char> replicated_layers(const Graph& graph) {
  std::int64_t width = 0;
  for (const Layer& layer : graph.layers) {
    if (layer.view || layer.traits.op_class != OpClass::kAttention || layer.output.empty())
      continue;
    width = layer.output.back();
    break;
  }
  std::vector<char> replicated(graph.layers.size(), 0);
  if (width == 0) return replicated;
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    const Layer& layer = graph.layers[i];
    const OpClass kind = layer.traits.op_class;
    replicated[i] = !layer.view && !layer.output.empty() && layer.output.back() == width &&
                    (kind == OpClass::kNormalization || kind == OpClass::kElementwise);
  }
  return replicated;
}

// The layer that holds a value's storage: a view aliases its input; -1 for a model input.
std::int64_t storage_layer(const Graph& graph, std::int32_t value) {
  const auto first_layer = static_cast<std::int32_t>(graph.inputs.size());
  while (value >= first_layer) {
    const Layer& layer = graph.layers[static_cast<std::size_t>(value - first_layer)];
    if (!layer.view || layer.inputs.empty()) return value - first_layer;
    value = layer.inputs.front();
  }
  return -1;
}

// An activation written by one layer and read by the next fits in the last-level cache (GPUs'
// L2, CPUs' L3) when its bytes on one device do not exceed the cache: the reader takes it from
// there. Only the reading is spared; the writer's traffic stays (a write-back cache still
// writes it out).
std::vector<double> cached_inputs(const Graph& graph, double cache_bytes, double act_bytes,
                                  double tp) {
  std::vector<double> cached(graph.layers.size(), 0);
  if (cache_bytes <= 0) return cached;
  std::int64_t previous = -1;  // The last layer that is not a view.
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    const Layer& layer = graph.layers[i];
    if (layer.view) continue;
    for (std::int32_t input : layer.inputs) {
      if (previous < 0 || storage_layer(graph, input) != previous) continue;
      const auto elements = static_cast<double>(element_count(graph.value_shape(input)));
      if (elements * act_bytes / tp <= cache_bytes) cached[i] += elements;
    }
    previous = static_cast<std::int64_t>(i);
  }
  return cached;
}

// Autocast runs some operators in fp32 (aten/src/ATen/autocast_mode.cpp: layer_norm, softmax,
// group_norm on its fp32 list); a matrix product reading such an output casts it to 16 bits
// first, one cast per projection that reads it (attention: Q, K and V).
std::vector<double> autocast_casts(const Graph& graph, const Runtime& runtime) {
  std::vector<double> casts(graph.layers.size(), 0);
  const std::vector<std::string>& fp32_ops = runtime.training.autocast_fp32_ops;
  if (fp32_ops.empty() || runtime.training.autocast_input_casts <= 0) return casts;
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    const Layer& layer = graph.layers[i];
    const OpClass op_class = layer.traits.op_class;
    if (layer.view || (op_class != OpClass::kMatrix && op_class != OpClass::kAttention)) continue;
    for (std::int32_t input : layer.inputs) {
      const std::int64_t writer = storage_layer(graph, input);
      if (writer < 0) continue;
      const std::string& op = graph.layers[static_cast<std::size_t>(writer)].op;
      if (std::find(fp32_ops.begin(), fp32_ops.end(), op) == fp32_ops.end()) continue;
      casts[i] += runtime.training.autocast_input_casts * (op_class == OpClass::kAttention ? 3 : 1);
    }
  }
  return casts;
}

// Autocast runs products in 16 bits; other ops follow type promotion, so a value is fp32 when
// an op on the fp32 list, an fp32 parameter (embedding tables, position embeddings) or an fp32
// input takes part (PyTorch's batch norm returns its input's dtype). Model inputs arrive in
// fp32. Where an op reads a 16-bit value beside an fp32 one (a residual add after a
// projection), autograd casts the 16-bit input's gradient back to its dtype
// (torch/csrc/autograd/engine.cpp, validate_outputs): one cast per such input.
std::vector<double> mixed_dtype_casts(const Graph& graph, const Runtime& runtime) {
  std::vector<double> casts(graph.layers.size(), 0);
  const TrainingKernels& t = runtime.training;
  if (t.mixed_dtype_gradient_casts <= 0) return casts;
  const auto first_layer = static_cast<std::int32_t>(graph.inputs.size());
  std::vector<bool> fp32(graph.layers.size(), false);
  const auto is_fp32 = [&](std::int32_t value) {
    return value < first_layer || fp32[static_cast<std::size_t>(value - first_layer)];
  };
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    const Layer& layer = graph.layers[i];
    const OpClass op_class = layer.traits.op_class;
    const bool on_fp32_list = std::find(t.autocast_fp32_ops.begin(), t.autocast_fp32_ops.end(),
                                        layer.op) != t.autocast_fp32_ops.end();
    if (on_fp32_list) {
      fp32[i] = true;
      continue;
    }
    if (op_class == OpClass::kMatrix || op_class == OpClass::kAttention) continue;
    double narrow_inputs = 0;
    bool wide_input = layer.traits.param_tensors > 0 && layer.op != "batchnorm";
    for (std::int32_t input : layer.inputs) {
      if (is_fp32(input)) {
        wide_input = true;
      } else {
        ++narrow_inputs;
      }
    }
    fp32[i] = wide_input;
    if (wide_input && !layer.view) casts[i] = t.mixed_dtype_gradient_casts * narrow_inputs;
  }
  return casts;
}

}  // namespace capcalc
