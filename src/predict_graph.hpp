// What the performance model reads off a graph before it times a step: the layers that run
// whole on every tensor-parallel device without sequence parallelism, the inputs the
// last-level cache holds, and autocast's casts (src/predict_graph.cpp). Internal to the
// performance model (src/predict*.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "capcalc/graph.hpp"
#include "capcalc/runtime.hpp"

namespace capcalc {

/// Per layer, 1 where it lies between the tensor-parallel regions (norms, residual adds and other
/// elementwise layers on the model's width); all 0 for a model without attention.
std::vector<char> replicated_layers(const Graph& graph);

/// The layer that holds a value's storage: a view aliases its input; -1 for a model input.
std::int64_t storage_layer(const Graph& graph, std::int32_t value);

/// Per layer, the input elements written by the layer before it that fit the last-level cache
/// of `cache_bytes` at `act_bytes` an element over `tp` devices.
std::vector<double> cached_inputs(const Graph& graph, double cache_bytes, double act_bytes,
                                  double tp);

/// Per layer, training under autocast: casts of its inputs to 16 bits.
std::vector<double> autocast_casts(const Graph& graph, const Runtime& runtime);

/// Per layer, training under autocast: backward casts of its 16-bit inputs' gradients.
std::vector<double> mixed_dtype_casts(const Graph& graph, const Runtime& runtime);

}  // namespace capcalc
