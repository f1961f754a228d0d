// Setting up a step: the runtime, rates, parallel degrees, bytes per element, floors and the
// per-layer facts every stage reads (make_step), and the parameters a device holds
// (device_params).
#include "predict_step.hpp"

#include <algorithm>
#include <map>
#include <string_view>

#include "predict_graph.hpp"

namespace capcalc::detail {

// `per_layer`: also what only the layers' pass reads (the cached inputs, one look per layer).
Step make_step(const Graph& graph, const Device& device, const PerformanceParams& params,
               const Workload& workload, bool per_layer, std::int64_t blocks) {
  Step s{graph,
         device,
         params,
         workload,
         workload.runtime ? *workload.runtime
                          : generic_runtime(workload.profile.value_or(
                                graph.runs_fused ? Profile::kCompiled : params.default_profile)),
         achievable_rates(device, params, workload.precision)};
  s.replicas = static_cast<double>(data_parallel_replicas(workload));
  s.cp = static_cast<double>(workload.context_parallel);
  s.shards = static_cast<double>(data_parallel_shards(workload));
  s.ep = static_cast<double>(workload.expert_parallel);
  s.tp = static_cast<double>(workload.tensor_parallel);
  s.etp = static_cast<double>(expert_tensor_parallel(workload));
  s.expert_shards = s.shards * s.tp / (s.ep * s.etp);
  s.sequence_parallel = workload.tensor_parallel > 1 &&
                        workload.sequence_parallel.value_or(workload.mode == Mode::kTraining);
  if (workload.tensor_parallel > 1 && !s.sequence_parallel) {
    s.replicated = replicated_layers(graph);
    for (std::size_t i = 0; i < graph.layers.size(); ++i) {
      if (!s.replicated[i]) continue;
      const Layer& layer = graph.layers[i];
      s.replicated_activation_elements += static_cast<double>(element_count(layer.output)) +
                                          static_cast<double>(layer.counts.saved_elements);
    }
  }
  if (workload.mode == Mode::kTraining && workload.recompute != 0) {
    s.recomputed = recomputed_layers(graph, workload.recompute);
    for (std::size_t i = 0; i < graph.layers.size(); ++i) {
      const Layer& layer = graph.layers[i];
      double dropped = 0;
      if (s.recomputed[i] == Recomputed::kWhole) {
        dropped = static_cast<double>(element_count(layer.output)) +
                  static_cast<double>(layer.counts.saved_elements);
      } else if (s.recomputed[i] == Recomputed::kPart) {
        const RecomputedParts parts = recomputed_parts(layer, workload.recompute);
        if (parts.own) dropped += static_cast<double>(layer.counts.recomputable.elements);
        if (parts.shared) dropped += static_cast<double>(layer.counts.shared_recomputable.elements);
      }
      s.recompute_dropped_elements += dropped;
      if (!s.replicated.empty() && s.replicated[i]) s.recompute_dropped_replicated += dropped;
    }
  }
  s.pp = static_cast<double>(workload.pipeline_parallel);
  if (workload.checkpointing) s.checkpoint_share = 1;
  if (workload.checkpointing && workload.checkpoint_layers > 0) {
    // The first N blocks of each of the P x V chunks, of an even split of the blocks.
    const auto split =
        static_cast<double>(std::max<std::int64_t>(1, blocks >= 0 ? blocks : block_count(graph)));
    const double chunks = s.pp * static_cast<double>(workload.virtual_stages);
    s.checkpoint_share =
        std::min(1.0, static_cast<double>(workload.checkpoint_layers) * chunks / split);
  }
  s.micro_batches = static_cast<double>(workload.micro_batches);
  s.act_bytes = activation_bytes_per_element(workload.precision);
  s.saved_bytes = stored_activation_bytes(workload.precision);
  s.weight_bytes = weight_bytes_per_element(workload.weight_precision.value_or(workload.precision));
  s.expert_weight_bytes = workload.expert_weight_precision
                              ? weight_bytes_per_element(*workload.expert_weight_precision)
                              : s.weight_bytes;
  // 2:4 sparsity: half the weight values plus 2 bits of index per kept value.
  s.sparse_weight_bytes = 0.5 * (s.weight_bytes + 0.25);
  s.kv_bytes = stored_activation_bytes(workload.kv_precision.value_or(workload.precision));
  // 8- and 4-bit recipes quantise GEMM inputs; the activations they all-reduce or send between
  // devices stay in 16 bits (Transformer Engine, TensorRT-LLM).
  s.comm_bytes = std::max(s.act_bytes, 2.0);
  s.training = workload.mode == Mode::kTraining;
  s.has_matrix = s.rates.matrix_flops_per_s > 0;
  s.fusing = fuses_elementwise(s.runtime.profile);
  s.sparse = workload.sparsity == Sparsity::k2of4;
  // The runtime's own host cost per kernel on this device type where the table gives one,
  // else the hardware table's floor for its profile.
  const double host_s = s.runtime.host_overhead_s[static_cast<std::size_t>(device.type)];
  s.floor_s = host_s > 0 ? host_s : params.overhead_s(s.runtime.profile);
  // Eager backward kernels are launched by the autograd engine in C++, not dispatched from
  // Python one by one: they take the graph executor's floor (at most the forward's). Inductor
  // compiles the backward too (AOTAutograd) and launches its kernels from Python, as the
  // forward's.
  s.backward_floor_s = s.runtime.profile == Profile::kEager
                           ? std::min(params.graph_overhead_s, s.floor_s)
                           : s.floor_s;
  // PyTorch runs fp32 convolutions on TF32 tensor cores unless told not to.
  s.tf32 = workload.precision == Precision::kFp32 && !workload.strict_fp32 &&
           !s.runtime.tf32_ops.empty() && device.peak(Precision::kTf32).matrix_flops_per_s > 0;
  if (s.tf32) s.tf32_rates = achievable_rates(device, params, Precision::kTf32);
  s.align_elements = alignment_multiple(device, workload.precision);
  if (per_layer) {
    s.cached_input_elements = cached_inputs(graph, device.cache_bytes, s.act_bytes, s.tp);
    if (s.training && s.weight_bytes < 4) {
      s.autocast_input_casts = autocast_casts(graph, s.runtime);
      s.mixed_gradient_casts = mixed_dtype_casts(graph, s.runtime);
    }
  }
  s.loss_layer = loss_layer_of(graph);
  if (s.training && workload.lora_rank > 0) {
    s.lora_rank = static_cast<double>(workload.lora_rank);
    for (std::size_t i = 0; i < graph.layers.size(); ++i) {
      s.adapter_params += s.lora_rank * lora_adapters(s, i).params;
    }
  }
  return s;
}

std::int64_t block_count(const Graph& graph) {
  std::map<std::int32_t, std::int64_t> layers;
  for (const Layer& layer : graph.layers) {
    if (!layer.view) ++layers[layer.group];
  }
  return std::count_if(layers.begin(), layers.end(), [](const auto& g) { return g.second > 1; });
}

bool in_mlp(const Layer& layer) {
  if (layer.counts.experts > 0) return false;
  const std::string_view name = layer.name;
  for (std::size_t at = name.find("mlp."); at != std::string_view::npos;
       at = name.find("mlp.", at + 1)) {
    if (at == 0 || name[at - 1] == '.') return true;
  }
  return false;
}

namespace {

// A moe layer, or latent attention (the attention whose up-projections are recomputable).
bool moe_or_latent_attention(const Layer& layer) {
  return layer.counts.experts > 0 ||
         (layer.traits.op_class == OpClass::kAttention && layer.counts.recomputable.elements > 0);
}

// Per layer: whether a moe layer or latent attention reads its output (through views).
std::vector<char> read_by_moe_or_latent_attention(const Graph& graph) {
  const std::size_t inputs = graph.inputs.size();
  std::vector<char> read(graph.layers.size(), 0);
  for (std::size_t i = graph.layers.size(); i-- > 0;) {
    const Layer& layer = graph.layers[i];
    if (!moe_or_latent_attention(layer) && !(layer.view && read[i])) continue;
    for (std::int32_t value : layer.inputs) {
      if (value >= static_cast<std::int32_t>(inputs)) {
        read[static_cast<std::size_t>(value) - inputs] = 1;
      }
    }
  }
  return read;
}

}  // namespace

std::vector<Recomputed> recomputed_layers(const Graph& graph, unsigned modules) {
  const auto has = [modules](RecomputeModule module) {
    return (modules & static_cast<unsigned>(module)) != 0;
  };
  std::vector<Recomputed> out(graph.layers.size(), Recomputed::kNo);
  const std::vector<char> apart = has(RecomputeModule::kLayernorm)
                                      ? read_by_moe_or_latent_attention(graph)
                                      : std::vector<char>(graph.layers.size(), 0);
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    const Layer& layer = graph.layers[i];
    if (layer.view) continue;
    const OpClass op_class = layer.traits.op_class;
    if (apart[i] && op_class == OpClass::kNormalization && layer.counts.params > 0) {
      out[i] = Recomputed::kWhole;
    } else if ((has(RecomputeModule::kMlp) && in_mlp(layer)) ||
               (has(RecomputeModule::kMoe) && layer.counts.experts > 0)) {
      out[i] = Recomputed::kWhole;
    } else {
      const RecomputedParts parts = recomputed_parts(layer, modules);
      if (parts.own || parts.shared) out[i] = Recomputed::kPart;
    }
  }
  return out;
}

RecomputedParts recomputed_parts(const Layer& layer, unsigned modules) {
  const auto has = [modules](RecomputeModule module) {
    return (modules & static_cast<unsigned>(module)) != 0;
  };
  const LayerCounts& c = layer.counts;
  const bool moe = c.experts > 0;
  RecomputedParts parts;
  parts.own =
      c.recomputable.elements > 0 &&
      ((moe && has(RecomputeModule::kMoeAct)) ||
       (!moe && layer.traits.op_class == OpClass::kAttention && has(RecomputeModule::kMlaUpProj)));
  parts.shared = c.shared_recomputable.elements > 0 && has(RecomputeModule::kSharedExperts);
  return parts;
}

std::size_t loss_layer_of(const Graph& graph) {
  // From the end: a search makes a step per layout, and the last layers are rarely views.
  for (std::size_t i = graph.layers.size(); i > 0; --i) {
    if (!graph.layers[i - 1].view) return i - 1;
  }
  return 0;
}

Adapters lora_adapters(const Step& s, std::size_t index) {
  if (s.lora_rank <= 0) return {};
  return lora_adapters(s.graph, s.workload, s.loss_layer, index);
}

Adapters lora_adapters(const Graph& graph, const Workload& workload, std::size_t loss_layer,
                       std::size_t index) {
  const Layer& layer = graph.layers[index];
  if (index == loss_layer || layer.view || layer.counts.params <= 0) return {};
  if (workload.lora_attention_only && layer.traits.op_class != OpClass::kAttention) return {};
  const AdapterShape& own = layer.traits.adapters;
  if (own.params_per_rank > 0) {
    return {static_cast<double>(own.params_per_rank), static_cast<double>(own.macs_per_rank)};
  }
  const std::optional<GemmView>& g = layer.traits.gemm;
  if (!g || layer.counts.score_macs > 0) return {};
  const double sides =
      (static_cast<double>(g->k) + static_cast<double>(g->n)) * static_cast<double>(g->count);
  return {sides, sides * static_cast<double>(g->m)};
}

DeviceParams device_params(const Step& s, const GraphTotals& totals) {
  const auto experts = static_cast<double>(totals.expert_params);
  const double held = experts / s.pp / (s.ep * s.etp);
  return {(static_cast<double>(totals.params) - experts) / s.tp / s.pp + held, held};
}

DeviceParams trainable_params(const Step& s, const DeviceParams& held) {
  if (s.lora_rank <= 0) return held;
  return {s.adapter_params / s.tp / s.pp, 0};
}

}  // namespace capcalc::detail
