#include "capcalc/predict.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/names.hpp"

#include "checked.hpp"
#include "collectives.hpp"
#include "predict_graph.hpp"
#include "predict_rates.hpp"

namespace capcalc {
namespace {

constexpr auto kBounds = name_table<Bound>({{Bound::kCompute, "compute"},
                                            {Bound::kMemory, "memory"},
                                            {Bound::kHost, "host"},
                                            {Bound::kFused, "fused"},
                                            {Bound::kNone, "-"}});
constexpr auto kModes =
    name_table<Mode>({{Mode::kInference, "inference"}, {Mode::kTraining, "training"}});
constexpr auto kOptimizers = name_table<Optimizer>({{Optimizer::kSgd, "sgd"},
                                                    {Optimizer::kMomentum, "momentum"},
                                                    {Optimizer::kAdam, "adam"},
                                                    {Optimizer::kAdam, "adamw", true}});
constexpr auto kSparsities = name_table<Sparsity>({{Sparsity::kDense, "dense"},
                                                   {Sparsity::k2of4, "2:4"},
                                                   {Sparsity::kUnstructured, "unstructured"}});

constexpr double kMasterWeightBytesPerParam = 4;  // fp32 copy under mixed precision.

// Whether a compiler fuses the layer into a neighbouring kernel (the operator's trait).
bool fusable(const Layer& layer, Mode mode) {
  switch (layer.traits.fusion) {
    case Fusion::kAlways:
      return true;
    case Fusion::kInferenceOnly:
      return mode == Mode::kInference;
    case Fusion::kNever:
      break;
  }
  return false;
}

// 2:4 sparsity applies to weights: layers with parameters and weight MACs.
bool has_sparse_weights(const Layer& layer) {
  return layer.counts.params > 0 && layer.counts.macs > layer.counts.score_macs;
}

struct Work {
  double macs = 0;        // Weight MACs.
  double score_macs = 0;  // Activation x activation MACs.
  double other_flops = 0;
  double bytes = 0;
  double kernels = 1;
};

LayerEstimate roofline(const Work& w, bool matrix, double matrix_speed, bool fused,
                       const Rates& rates, double floor_s) {
  LayerEstimate e;
  e.matrix_units = matrix;
  e.flops = 2 * (w.macs + w.score_macs) + w.other_flops;
  e.bytes = fused ? 0 : w.bytes;
  const double mac_rate =
      matrix ? rates.matrix_flops_per_s * matrix_speed : rates.vector_flops_per_s;
  const double score_rate = matrix ? rates.score_flops_per_s : rates.vector_flops_per_s;
  e.compute_s = 2 * w.macs / mac_rate + 2 * w.score_macs / score_rate +
                w.other_flops / rates.vector_flops_per_s;
  e.memory_s = e.bytes / rates.bytes_per_s;
  if (fused) {
    e.time_s = e.compute_s;
    e.bound = Bound::kFused;
    return e;
  }
  e.kernels = w.kernels;
  e.overhead_s = w.kernels * floor_s;
  e.time_s = std::max({e.compute_s, e.memory_s, e.overhead_s});
  if (e.overhead_s >= std::max(e.compute_s, e.memory_s)) {
    e.bound = Bound::kHost;
  } else {
    e.bound = e.compute_s >= e.memory_s ? Bound::kCompute : Bound::kMemory;
  }
  return e;
}

void add(LayerEstimate& total, const LayerEstimate& part) {
  total.flops += part.flops;
  total.bytes += part.bytes;
  total.compute_s += part.compute_s;
  total.memory_s += part.memory_s;
  total.overhead_s += part.overhead_s;
  total.kernels += part.kernels;
  total.time_s += part.time_s;
}

struct PipelineLink {
  const Link* link = nullptr;
  double per_direction = 0;
};

// The link between neighbouring pipeline stages and the bandwidth each device gets on it in one
// direction (no link for it: nullptr). Stages are the outermost split (Megatron's order), so
// they share the scale-up link while the whole job (tp x replicas x pp devices) fits its
// domain, else each device sends over its own network port. Sends are point to point.
PipelineLink pipeline_link(const Device& device, std::int64_t devices) {
  if (!device.intra_node) return {};
  const Link& intra = *device.intra_node;
  if (intra.domain_devices == 0 || devices <= intra.domain_devices) {
    return {&intra, group_per_direction(intra, 2)};
  }
  if (!device.inter_node) return {};
  return {&*device.inter_node, link_per_direction(*device.inter_node)};
}

}  // namespace

std::string_view bound_name(Bound bound) {
  return kBounds.name(bound);
}

std::string_view mode_name(Mode mode) {
  return kModes.name(mode);
}

std::optional<Mode> parse_mode(std::string_view name) {
  return kModes.parse(name);
}

std::vector<std::string_view> mode_names() {
  return kModes.names();
}

std::string_view optimizer_name(Optimizer optimizer) {
  return kOptimizers.name(optimizer);
}

std::optional<Optimizer> parse_optimizer(std::string_view name) {
  return kOptimizers.parse(name);
}

std::vector<std::string_view> optimizer_names(bool with_aliases) {
  return kOptimizers.names(with_aliases);
}

std::string_view sparsity_name(Sparsity sparsity) {
  return kSparsities.name(sparsity);
}

std::optional<Sparsity> parse_sparsity(std::string_view name) {
  return kSparsities.parse(name);
}

std::vector<std::string_view> sparsity_names() {
  return kSparsities.names();
}

// fp32 state: momentum keeps one buffer, Adam two.
double optimizer_state_bytes(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::kSgd:
      return 0;
    case Optimizer::kMomentum:
      return 4;
    case Optimizer::kAdam:
      break;
  }
  return 8;
}

// One fused pass over fp32 tensors: SGD reads weights and gradients and writes weights (3 x 4
// bytes); momentum also reads and writes its buffer (5 x 4); Adam both moments (7 x 4).
double optimizer_update_bytes(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::kSgd:
      return 12;
    case Optimizer::kMomentum:
      return 20;
    case Optimizer::kAdam:
      break;
  }
  return 28;
}

namespace {

// Megatron-Core's expert parallelism splits the experts over devices that hold the same other
// weights ("expert_model_parallel_size" divides the data-parallel x context-parallel size).
void check_expert_parallel(const Workload& workload, std::int64_t replicas) {
  if (workload.expert_parallel < 1) {
    throw Error({}, "the expert-parallel degree must be at least 1");
  }
  if (!(workload.moe_imbalance >= 1 && workload.moe_imbalance <= 1000)) {
    throw Error({}, fmt::format("--moe-imbalance must be between 1 and 1000 (got {:g})",
                                workload.moe_imbalance));
  }
  // replicas x context_parallel is at most devices: no overflow.
  const std::int64_t shards = replicas * workload.context_parallel;
  if (shards % workload.expert_parallel != 0) {
    throw Error({},
                fmt::format("--expert-parallel {} does not divide the {} devices that hold the "
                            "same weights ({} data-parallel replicas x context-parallel {})",
                            workload.expert_parallel, shards, replicas, workload.context_parallel));
  }
}

}  // namespace

std::int64_t data_parallel_replicas(const Workload& workload) {
  if (workload.devices < 1) throw Error({}, "the number of devices must be at least 1");
  if (workload.tensor_parallel < 1)
    throw Error({}, "the tensor-parallel degree must be at least 1");
  if (workload.pipeline_parallel < 1 || workload.micro_batches < 1) {
    throw Error({}, "pipeline stages and micro-batches must be at least 1");
  }
  if ((workload.pipeline_parallel > 1 || workload.micro_batches > 1) &&
      workload.mode != Mode::kTraining) {
    throw Error({}, "pipeline stages and micro-batches are for training: add --mode training");
  }
  if (workload.context_parallel < 1) {
    throw Error({}, "the context-parallel degree must be at least 1");
  }
  if (workload.context_parallel > 1 && workload.mode != Mode::kTraining) {
    throw Error({}, "context parallelism splits training sequences: add --mode training");
  }
  std::int64_t group = 0;
  if (__builtin_mul_overflow(workload.tensor_parallel, workload.pipeline_parallel, &group) ||
      __builtin_mul_overflow(group, workload.context_parallel, &group)) {
    throw Error({}, fmt::format("tensor-parallel {} x pipeline {}: a count does not fit in a "
                                "64-bit integer",
                                workload.tensor_parallel, workload.pipeline_parallel));
  }
  if (workload.devices % group != 0 && workload.context_parallel > 1) {
    throw Error({}, fmt::format("{} devices do not split into model replicas of {} "
                                "(tensor-parallel {} x pipeline {} x context-parallel {})",
                                workload.devices, group, workload.tensor_parallel,
                                workload.pipeline_parallel, workload.context_parallel));
  }
  if (workload.devices % group != 0) {
    throw Error({}, workload.pipeline_parallel == 1
                        ? fmt::format("{} devices do not split into tensor-parallel groups of {}",
                                      workload.devices, workload.tensor_parallel)
                        : fmt::format("{} devices do not split into model replicas of {} "
                                      "(tensor-parallel {} x pipeline {})",
                                      workload.devices, group, workload.tensor_parallel,
                                      workload.pipeline_parallel));
  }
  if (workload.virtual_stages < 1) throw Error({}, "virtual stages must be at least 1");
  if (workload.virtual_stages > 1) {
    if (workload.pipeline_parallel < 2) {
      throw Error({}, "virtual stages interleave a pipeline: add --pipeline-parallel 2 or more");
    }
    // Megatron-LM: "number of microbatches ... should be divisible by pipeline-parallel size
    // when using interleaved schedule".
    if (workload.micro_batches % workload.pipeline_parallel != 0) {
      throw Error({}, fmt::format("the interleaved schedule needs micro-batches ({}) to be a "
                                  "multiple of the pipeline stages ({})",
                                  workload.micro_batches, workload.pipeline_parallel));
    }
  }
  if (workload.zero_stage < 0 || workload.zero_stage > 3) {
    throw Error(
        {}, fmt::format("ZeRO stage {} does not exist: 0 (none) to 3 (FSDP)", workload.zero_stage));
  }
  if (workload.zero_stage > 0 && workload.mode != Mode::kTraining) {
    throw Error({}, "ZeRO shards training state: add --mode training");
  }
  const std::int64_t replicas = workload.devices / group;
  check_expert_parallel(workload, replicas);
  return replicas;
}

std::int64_t data_parallel_shards(const Workload& workload) {
  return data_parallel_replicas(workload) * workload.context_parallel;
}

std::string parallelism_text(const Workload& workload) {
  std::string text;
  if (workload.tensor_parallel > 1) {
    const bool sequence = workload.sequence_parallel.value_or(workload.mode == Mode::kTraining);
    text += fmt::format(" (tensor-parallel {}{})", workload.tensor_parallel,
                        sequence ? ", sequence-parallel" : "");
  }
  if (workload.context_parallel > 1) {
    text += fmt::format(" (context-parallel {})", workload.context_parallel);
  }
  if (workload.expert_parallel > 1) {
    text += fmt::format(" (expert-parallel {})", workload.expert_parallel);
  }
  if (workload.pipeline_parallel > 1 || workload.micro_batches > 1) {
    text += fmt::format(" (pipeline {} x {} micro-batch{}{})", workload.pipeline_parallel,
                        workload.micro_batches, workload.micro_batches == 1 ? "" : "es",
                        workload.virtual_stages > 1
                            ? fmt::format(", {} virtual stages", workload.virtual_stages)
                            : "");
  }
  if (workload.zero_stage > 0) text += fmt::format(", ZeRO-{}", workload.zero_stage);
  if (workload.moe_imbalance != 1) {
    text += fmt::format(", MoE load imbalance {:g}", workload.moe_imbalance);
  }
  return text;
}

namespace {

// What every stage of a step needs, fixed for the step.
struct Step {
  const Graph& graph;
  const Device& device;
  const PerformanceParams& params;
  const Workload& workload;
  Runtime runtime;
  Rates rates;
  Rates tf32_rates{};  // fp32 products the runtime runs on TF32 tensor cores; unset: none.
  bool tf32 = false;
  std::int64_t align_elements = 0;  // NVIDIA's 16-byte rule in elements (alignment_multiple).
  double tp = 1;             // Each device of a tensor-parallel group holds 1/tp of every layer.
  double pp = 1;             // A pipeline stage holds 1/pp of the layers (an even split).
  double replicas = 1;       // Data-parallel replicas.
  double cp = 1;             // Context parallelism: each device holds 1/cp of every sequence.
  double shards = 1;         // Gradients are reduced, and ZeRO shards, over replicas x cp devices.
  double ep = 1;             // Expert parallelism: each device holds 1/ep of the routed experts,
  double expert_shards = 1;  // whose gradients reduce, and ZeRO shards, over shards / ep.
  double micro_batches = 1;
  double act_bytes = 0;
  double weight_bytes = 0;
  double sparse_weight_bytes = 0;
  double kv_bytes = 0;
  double comm_bytes = 0;
  bool training = false;
  bool has_matrix = false;
  bool fusing = false;
  bool sparse = false;
  double floor_s = 0;
  double backward_floor_s = 0;
  /// Per layer: input elements written by the layer just before it that stay in the
  /// last-level cache (read from there, not from DRAM).
  std::vector<double> cached_input_elements{};
  /// Per layer, training under autocast: casts of its inputs to 16 bits (inputs written in
  /// fp32 by an operator on autocast's fp32 list).
  std::vector<double> autocast_input_casts{};
  /// Per layer, training under autocast: backward casts of the gradients of its 16-bit inputs
  /// where other inputs are fp32.
  std::vector<double> mixed_gradient_casts{};
  /// The last layer that is not a view: the loss reads its output.
  std::size_t loss_layer = 0;
  /// Tensor parallelism with sequence parallelism (else the collectives are all-reduces).
  bool sequence_parallel = false;
  /// Per layer, tensor parallelism without sequence parallelism: 1 where every device runs the
  /// layer whole (replicated_layers); empty when none does.
  std::vector<char> replicated{};
  double replicated_activation_elements = 0;  // Their outputs and saved elements.
};

// `per_layer`: also what only the layers' pass reads (the cached inputs, one look per layer).
Step make_step(const Graph& graph, const Device& device, const PerformanceParams& params,
               const Workload& workload, bool per_layer = true) {
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
  s.expert_shards = s.shards / s.ep;
  s.tp = static_cast<double>(workload.tensor_parallel);
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
  s.pp = static_cast<double>(workload.pipeline_parallel);
  s.micro_batches = static_cast<double>(workload.micro_batches);
  s.act_bytes = activation_bytes_per_element(workload.precision);
  s.weight_bytes = weight_bytes_per_element(workload.weight_precision.value_or(workload.precision));
  // 2:4 sparsity: half the weight values plus 2 bits of index per kept value.
  s.sparse_weight_bytes = 0.5 * (s.weight_bytes + 0.25);
  s.kv_bytes =
      workload.kv_precision ? activation_bytes_per_element(*workload.kv_precision) : s.act_bytes;
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
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    if (!graph.layers[i].view) s.loss_layer = i;
  }
  return s;
}

// Kernels a training step adds to a layer, forward and backward.
struct ExtraKernels {
  double forward = 0;
  double backward = 0;
};

// The loss reads the last layer's output. PyTorch's 16-bit batch norm runs channels-last (as its
// memory-format tutorial recommends for convolutional networks under autocast): its statistics
// (forward) and gradient (backward) reductions zero their grid semaphores where the grid has
// several rows (Normalization.cuh, at::zeros). Under autocast, gradients of 16-bit inputs read
// beside fp32 ones are cast back (backward).
ExtraKernels training_extra_kernels(const Step& s, std::size_t index) {
  const Layer& layer = s.graph.layers[index];
  const TrainingKernels& t = s.runtime.training;
  ExtraKernels extra;
  if (index == s.loss_layer) {
    extra.forward += t.loss_forward;
    extra.backward += t.loss_backward;
  }
  if (t.batchnorm_semaphore_zeroing > 0 && s.act_bytes < 4 && layer.op == "batchnorm" &&
      layer.output.size() >= 2) {
    const auto elements = static_cast<double>(element_count(layer.output));
    const auto channels = static_cast<double>(layer.output[1]);
    if (channels_last_reduction_rows(elements / channels, channels) > 1) {
      extra.forward += t.batchnorm_semaphore_zeroing;
      extra.backward += t.batchnorm_semaphore_zeroing;
    }
  }
  if (!s.mixed_gradient_casts.empty()) extra.backward += s.mixed_gradient_casts[index];
  // Self-attention's Q, K and V projections read one input: autograd sums their gradients.
  if (layer.traits.op_class == OpClass::kAttention && layer.inputs.size() == 1)
    extra.backward += t.attention_input_gradient_sums;
  return extra;
}

// Parameter elements a device reads for a layer (1/tp of them aside): of a moe layer's routed
// experts only those it holds, 1/ep of them, that the tokens reach (balanced routing: at most
// one per token-expert pair, and a device gets as many pairs as it sends).
double weight_elements_read(const Step& s, const Layer& layer) {
  const LayerCounts& c = layer.counts;
  const auto read = static_cast<double>(c.weight_elements_read);
  if (s.ep <= 1 || c.experts == 0 || layer.output.empty() || layer.output.back() == 0) return read;
  const auto experts = static_cast<double>(c.experts);
  const double per_expert = static_cast<double>(c.expert_params) / experts;
  const double pairs = static_cast<double>(element_count(layer.output)) /
                       static_cast<double>(layer.output.back()) *
                       static_cast<double>(c.experts_per_token);
  return read - per_expert * (std::min(experts, pairs) - std::min(experts / s.ep, pairs));
}

void slow_down(LayerEstimate& e, double factor) {
  e.compute_s *= factor;
  e.memory_s *= factor;
  e.time_s *= factor;
}

// One layer's forward (and, in training, backward) on one device.
LayerEstimate layer_time(const Step& s, std::size_t index, double sparsity_speedup,
                         double& backward_s, double& recompute_s) {
  const Layer& layer = s.graph.layers[index];
  const LayerCounts& c = layer.counts;
  const double outputs = static_cast<double>(element_count(layer.output));
  const bool tf32 = s.tf32 && std::find(s.runtime.tf32_ops.begin(), s.runtime.tf32_ops.end(),
                                        layer.op) != s.runtime.tf32_ops.end();
  const Rates& rates = tf32 ? s.tf32_rates : s.rates;
  const bool matrix = rates.matrix_flops_per_s > 0 && c.macs > 0 &&
                      static_cast<double>(c.macs) / outputs >= kMinMatrixReduction;
  const bool sparse_layer = s.sparse && has_sparse_weights(layer);
  // Tiles are cut from the product the matrix units see (the layer's GEMM view); layers that
  // mix products (attention, experts) have none and take no penalty.
  // Context parallelism gives each device 1/cp of the rows (tokens).
  std::optional<GemmView> gemm = layer.traits.gemm;
  if (gemm && s.cp > 1) gemm->m = std::max<std::int64_t>(1, gemm->m / s.workload.context_parallel);
  const double utilisation = matrix && gemm ? tile_utilisation(static_cast<double>(gemm->n),
                                                               static_cast<double>(gemm->k)) *
                                                  wave_utilisation(*gemm, s.device)
                                            : 1;
  // cuBLAS runs a product whose features are not a multiple of 16 bytes on slower kernels.
  const double aligned =
      matrix && s.params.misaligned_matrix_efficiency > 0 && misalignment(layer, s.align_elements)
          ? s.params.misaligned_matrix_efficiency / s.params.matrix_efficiency
          : 1;
  const double speed = utilisation * aligned * (sparse_layer && matrix ? sparsity_speedup : 1);
  const bool fused = s.fusing && fusable(layer, s.workload.mode) && s.runtime.fuses(layer);
  const double layer_weight_bytes = sparse_layer ? s.sparse_weight_bytes : s.weight_bytes;

  // Mixed-precision training casts each fp32 master weight to 16 bits once per forward
  // (autocast caches the cast: aten/src/ATen/autocast_mode.cpp, cached_cast) and its gradient
  // back in backward.
  const double casts =
      s.training && s.weight_bytes < 4
          ? s.runtime.autocast_weight_casts * static_cast<double>(layer.traits.weight_tensors)
          : 0;
  const double input_casts = s.autocast_input_casts.empty() ? 0 : s.autocast_input_casts[index];
  const double kernels = s.runtime.kernels(layer, s.act_bytes < 4);
  const ExtraKernels extra = s.training ? training_extra_kernels(s, index) : ExtraKernels{};
  Work forward;
  forward.kernels = kernels + casts + input_casts + extra.forward;
  // Each device's share: 1/tp, or all of it for a layer every device runs whole; context
  // parallelism splits every layer's tokens (`work`), not its weights (`split`).
  const double split = s.replicated.empty() || s.replicated[index] == 0 ? s.tp : 1;
  const double work = split * s.cp;
  forward.macs = static_cast<double>(c.macs - c.score_macs) / work;
  forward.score_macs = static_cast<double>(c.score_macs) / work;
  forward.other_flops = static_cast<double>(c.other_flops) / work;
  // Each device reads its share of the cache: all of it where there are fewer key/value heads
  // (one latent) than devices.
  forward.bytes = (static_cast<double>(c.input_elements + c.output_elements) * s.act_bytes / s.cp +
                   weight_elements_read(s, layer) * layer_weight_bytes) /
                      split +
                  static_cast<double>(c.kv_cache_read_elements) * s.kv_bytes *
                      kv_cache_share(c, s.workload.tensor_parallel);
  // An elementwise operator that the runtime launches as several kernels (NewGELUActivation's
  // eight in eager PyTorch) passes its tensors once per kernel.
  if (layer.traits.op_class == OpClass::kElementwise && kernels > 1) forward.bytes *= kernels;
  // Backward reads saved activations, long gone from the cache: twice the uncached traffic.
  const double uncached_bytes = forward.bytes;
  const double cached =
      std::min(s.cached_input_elements[index], static_cast<double>(c.input_elements));
  forward.bytes -= cached * s.act_bytes / work;
  LayerEstimate e = roofline(forward, matrix, speed, fused, rates, s.floor_s);
  // The step waits for the busiest expert: the moe layers take the imbalance times as long.
  const double imbalance = c.experts > 0 ? s.workload.moe_imbalance : 1;
  slow_down(e, imbalance);
  if (!s.training) return e;
  if (s.workload.checkpointing) recompute_s += e.time_s;
  // Backward: its own FLOPs, about twice the forward traffic (read the output gradient and the
  // saved inputs, write the input and weight gradients).
  Work backward;
  // Each product of two activations needs both operands' gradients: twice its forward.
  backward.score_macs =
      std::min(static_cast<double>(c.backward_macs) / work, 2 * forward.score_macs);
  backward.macs = static_cast<double>(c.backward_macs) / work - backward.score_macs;
  backward.other_flops = static_cast<double>(c.backward_other_flops) / work;
  backward.bytes = 2 * uncached_bytes;
  // Autograd's kernels for the layer (the runtime's table; else one per forward kernel and one
  // for weight gradients), a reduction per bias gradient, and the casts' backward.
  backward.kernels =
      s.runtime.backward_kernels(layer, kernels) + casts + input_casts + extra.backward +
      s.runtime.training.bias_gradient * static_cast<double>(layer.traits.bias_tensors);
  // A fused forward still leaves a backward that reads what it saved: not fused.
  LayerEstimate b = roofline(backward, matrix, speed, false, rates, s.backward_floor_s);
  slow_down(b, imbalance);
  backward_s += b.time_s;
  add(e, b);
  return e;
}

// Every layer's time; returns one micro-batch's backward through the whole model.
double layer_times(const Step& s, Estimate& result) {
  double backward_s = 0;
  result.layers.reserve(s.graph.layers.size());
  for (std::size_t i = 0; i < s.graph.layers.size(); ++i) {
    result.layers.push_back(s.graph.layers[i].view ? LayerEstimate{}
                                                   : layer_time(s, i, result.sparsity_speedup,
                                                                backward_s, result.recompute_s));
  }
  for (const LayerEstimate& e : result.layers) {
    result.kernels += e.kernels;
    result.latency_s += e.time_s;
    result.flops += e.flops;
    result.bytes += e.bytes;
  }
  return backward_s;
}

// Tensor parallelism: two all-reduces of each attention layer's output (after the attention
// output projection and after the feed-forward block's last projection), forward; backward
// all-reduces the gradients of the same activations. With sequence parallelism each is a
// reduce-scatter (into the sequence-split region) and an all-gather (out of it): the same bytes
// as the all-reduce's two ring phases, with a latency each.
void tensor_parallel_communication(const Step& s, Estimate& result) {
  if (s.workload.tensor_parallel <= 1) return;
  result.sequence_parallel = s.sequence_parallel;
  const CollectiveGroup group = collective_group(s.device, 1, s.workload.tensor_parallel);
  if (!group.modelled) {
    result.communication_modelled = false;
    return;
  }
  result.communication_link = group.link_name();
  result.communication_bandwidth = group.per_direction();
  const double passes = s.training ? (s.workload.checkpointing ? 3 : 2) : 1;
  for (const Layer& layer : s.graph.layers) {
    if (layer.traits.op_class != OpClass::kAttention || layer.view) continue;
    const double bytes = static_cast<double>(element_count(layer.output)) * s.comm_bytes / s.cp;
    const double t =
        s.sequence_parallel
            ? collective_s(group, s.params, result.profile, Collective::kReduceScatter, bytes) +
                  collective_s(group, s.params, result.profile, Collective::kAllGather, bytes)
            : collective_s(group, s.params, result.profile, Collective::kAllReduce, bytes);
    result.communication_s += 2 * passes * t;
    result.allreduces += static_cast<int>(2 * passes);
    result.allreduce_bytes += 2 * passes * bytes;
  }
  result.latency_s += result.communication_s;
}

// Context parallelism (ring attention, as Megatron-Core runs it through Transformer Engine):
// each device holds 1/cp of every sequence's tokens, and a self-attention layer's K and V
// chunks go round the ring, cp - 1 sends a pass, each overlapped with the attention over the
// chunk before it. The forward sends K and V once; backward sends them again with their
// gradients (twice the bytes); checkpointing's recompute once more. What the layer's own time
// does not hide shows.
void context_parallel_communication(const Step& s, Estimate& result) {
  if (s.workload.context_parallel <= 1) return;
  // Megatron's rank order puts the ring's members tensor_parallel devices apart.
  const CollectiveGroup group =
      collective_group(s.device, s.workload.tensor_parallel, s.workload.context_parallel);
  if (!group.modelled) {
    result.context_parallel_modelled = false;
    return;
  }
  result.context_parallel_link = group.link_name();
  const double passes = 3 + (s.workload.checkpointing ? 1 : 0);
  for (std::size_t i = 0; i < s.graph.layers.size(); ++i) {
    const Layer& layer = s.graph.layers[i];
    const LayerCounts& c = layer.counts;
    if (layer.view || c.attention_kv_per_token == 0 || layer.output.empty() ||
        layer.output.back() == 0) {
      continue;
    }
    const double tokens =
        static_cast<double>(element_count(layer.output)) / static_cast<double>(layer.output.back());
    // Tensor parallelism splits the heads: each device's ring carries its heads' share.
    const double bytes = static_cast<double>(c.attention_kv_per_token) * tokens / s.cp *
                         head_share(c.attention_kv_heads, s.workload.tensor_parallel) *
                         s.comm_bytes;
    const double sends =
        passes * (s.cp - 1) * send_s(s.params, result.profile, bytes, group.per_direction());
    result.context_parallel_send_s += sends;
    result.context_parallel_s += std::max(0.0, sends - result.layers[i].time_s);
  }
  result.latency_s += result.context_parallel_s;
}

// Expert parallelism (Megatron-Core's all-to-all token dispatcher): each moe layer sends every
// token-expert pair to the device holding the expert (dispatch) and the expert's output back
// (combine), forward; backward sends their gradients the two ways again, and checkpointing's
// recompute repeats the forward's. A device dispatches its 1/tp of its tokens (sequence
// parallelism, which Megatron-Core requires with experts and tensor parallelism), 1/cp of the
// sequence's. The group is ep devices tp apart: Megatron-Core lays the experts out on a grid
// of its own (parallel_state.py: RankGenerator(tp=expert tensor parallel, ep, dp, pp, cp=1)),
// context parallelism's devices folded into the expert-parallel ones. Not overlapped with
// compute (Megatron-Core's default).
void expert_parallel_communication(const Step& s, Estimate& result) {
  if (s.workload.expert_parallel <= 1) return;
  const CollectiveGroup group =
      collective_group(s.device, s.workload.tensor_parallel, s.workload.expert_parallel);
  if (!group.modelled) {
    result.expert_parallel_modelled = false;
    return;
  }
  result.expert_parallel_link = group.link_name();
  const double passes = s.training ? (s.workload.checkpointing ? 6 : 4) : 2;
  for (const Layer& layer : s.graph.layers) {
    const LayerCounts& c = layer.counts;
    if (layer.view || c.experts == 0) continue;
    const double bytes = static_cast<double>(element_count(layer.output)) *
                         static_cast<double>(c.experts_per_token) * s.comm_bytes / s.tp / s.cp;
    result.expert_parallel_s +=
        passes * collective_s(group, s.params, result.profile, Collective::kAllToAll, bytes);
    result.alltoalls += static_cast<int>(passes);
    result.alltoall_bytes += passes * bytes * (s.ep - 1) / s.ep;
  }
  result.latency_s += result.expert_parallel_s;
}

// One micro-batch's activations a device keeps for backward: 1/tp of them, but all of those of
// the layers it runs whole (no sequence parallelism). With checkpointing the kept block
// outputs are the residual stream, which every such device keeps whole, and the block being
// recomputed keeps the whole model's replicated share whole.
double activation_elements_per_device(const Step& s, const GraphTotals& totals) {
  const auto all = static_cast<double>(totals.activation_elements);
  const double whole = s.replicated_activation_elements;
  if (!s.workload.checkpointing) return (all - whole) / s.tp + whole;
  const auto checkpointed = static_cast<double>(totals.checkpointed_elements);
  if (whole == 0 || all == 0) return checkpointed / s.tp;
  const auto results = static_cast<double>(totals.checkpoint_result_elements);
  const double share = whole / all;
  return results + (checkpointed - results) * (share + (1 - share) / s.tp);
}

// A device's parameters: 1/(tp x pp) of the model's, the routed experts' 1/ep of that again.
struct DeviceParams {
  double all = 0;
  double experts = 0;  // Of `all`, the routed experts'.
};

DeviceParams device_params(const Step& s, const GraphTotals& totals) {
  const double experts = static_cast<double>(totals.expert_params) / s.tp / s.pp;
  return {static_cast<double>(totals.params) / s.tp / s.pp - experts * (1 - 1 / s.ep),
          experts / s.ep};
}

// Bytes of `per_param` a device keeps for its parameters: all of them, or (`sharded`, ZeRO) its
// shard of them, the experts' over the devices that hold the same experts.
double state_bytes(const Step& s, const DeviceParams& p, bool sharded, double per_param) {
  if (!sharded) return p.all * per_param;
  return ((p.all - p.experts) / s.shards + p.experts / s.expert_shards) * per_param;
}

// Training memory beyond the weights: gradients, optimizer state and the activations the
// schedule keeps in flight. ZeRO: each replica keeps and updates 1/replicas of the optimizer
// state (stage 1), of the gradients (2) and of the weights (3).
void training_memory(const Step& s, const GraphTotals& totals, const DeviceParams& params,
                     double gradient_bytes, MemoryEstimate& memory) {
  const int zero = s.workload.zero_stage;
  memory.gradient_bytes = state_bytes(s, params, zero >= 2, gradient_bytes);
  memory.optimizer_bytes = state_bytes(s, params, zero >= 1,
                                       optimizer_state_bytes(s.workload.optimizer) +
                                           (s.weight_bytes < 4 ? kMasterWeightBytesPerParam : 0));
  if (zero >= 3) {
    memory.weight_bytes =
        state_bytes(s, params, true, s.sparse ? s.sparse_weight_bytes : s.weight_bytes);
  }
  // 1F1B: the first stage holds min(pp, micro-batches) micro-batches' activations of its 1/pp
  // of the layers; gradient accumulation alone (pp = 1) holds one at a time. Interleaved,
  // Megatron-LM's schedule warms up 2(P-1) + (V-1)P chunk passes on the first stage and keeps
  // one more in flight, each over 1/(P V) of the layers: 1 + (P-1)/(P V) micro-batches' worth
  // for many micro-batches (Korthikanti et al. 2022).
  const auto virtual_stages = static_cast<double>(s.workload.virtual_stages);
  const double in_flight = s.workload.virtual_stages == 1
                               ? std::min(s.pp, s.micro_batches) / s.pp
                               : std::min(2 * (s.pp - 1) + (virtual_stages - 1) * s.pp + 1,
                                          s.micro_batches * virtual_stages) /
                                     (s.pp * virtual_stages);
  memory.activation_bytes =
      activation_elements_per_device(s, totals) * s.act_bytes / s.cp * in_flight;
}

// What the sends between pipeline stages add to one micro-batch's stage time. Each
// micro-batch sends its boundary activation forward and receives its gradient back, 1/tp of it
// per device (Megatron's scatter-gather), once per chunk. 1F1B blocks on them; the interleaved
// schedule overlaps them with its chunks' compute.
double pipeline_sends(const Step& s, const GraphTotals& totals, double stage_s, Estimate& result) {
  const PipelineLink link =
      pipeline_link(s.device, s.workload.tensor_parallel * static_cast<std::int64_t>(s.shards) *
                                  s.workload.pipeline_parallel);
  result.pipeline_send_bytes =
      static_cast<double>(totals.boundary_elements) * s.comm_bytes / s.tp / s.cp;
  if (link.link == nullptr) {
    result.pipeline_sends_modelled = false;
    return 0;
  }
  result.pipeline_link = link.link->name;
  const double send =
      send_s(s.params, result.profile, result.pipeline_send_bytes, link.per_direction);
  const auto virtual_stages = static_cast<double>(s.workload.virtual_stages);
  const double chunk_s = stage_s / virtual_stages;
  return s.workload.virtual_stages == 1 ? 2 * send
                                        : virtual_stages * std::max(0.0, 2 * send - chunk_s);
}

// Data-parallel replicas all-reduce their gradients once a step (ZeRO 0 and 1); buckets are
// reduced as backward produces them (PyTorch DDP, Megatron's overlapped grad reduce): only what
// outlasts the stage's last backward shows. ZeRO-2 keeps only its shard of the gradients, so it
// reduce-scatters them after every micro-batch's backward (DeepSpeed PR 338 added gradient
// accumulation to stage 2; engine.py: "ZeRO stage 2 communicates during non gradient
// accumulation boundaries as well"), hidden behind that backward, and all-gathers the weights
// once after the optimizer step (DeepSpeed's stage_1_and_2.py: step() calls all_gather_dp_groups),
// exposed. ZeRO-3 (FSDP) holds neither whole weights nor whole gradients, so every micro-batch
// all-gathers the weights before its forward and again before its backward and reduce-scatters
// its gradients after it (PyTorch FSDP2 docs, fully_shard: "before forward and backward passes,
// pre-forward/backward hooks are responsible for all-gathering the parameters"; DeepSpeed's
// zero3.rst: ZeRO-3 "will automatically collect and partition them during the forward and
// backward passes"). Prefetch hides the forward's gather behind the stage's forward and the
// backward's gather and reduce-scatter behind its backward (with any recompute); the rest
// shows, every micro-batch. A reduce-scatter or an all-gather moves half an all-reduce's bytes.
void data_parallel_sync(const Step& s, const DeviceParams& params, double gradient_bytes,
                        double backward_s, Estimate& result) {
  if (s.shards <= 1) return;
  const CollectiveGroup dp =
      collective_group(s.device, s.workload.tensor_parallel, static_cast<std::int64_t>(s.shards));
  // With expert parallelism the routed experts' gradients reduce apart, over the shards / ep
  // devices that hold the same experts (their span taken as the replicas': tp x ep apart).
  const bool expert_sync = s.ep > 1 && s.expert_shards > 1;
  const CollectiveGroup experts =
      expert_sync
          ? collective_group(s.device, s.workload.tensor_parallel * s.workload.expert_parallel,
                             static_cast<std::int64_t>(s.expert_shards))
          : CollectiveGroup{};
  const double dense = s.ep > 1 ? params.all - params.experts : params.all;
  const int zero = s.workload.zero_stage;
  const double weight_bytes = params.all * s.weight_bytes;
  const double grad_bytes = params.all * gradient_bytes;
  // As an all-reduce's operand: a reduce-scatter or an all-gather counts half of its bytes.
  result.data_parallel_bytes = zero >= 3   ? s.micro_batches * (2 * weight_bytes + grad_bytes) / 2
                               : zero == 2 ? (s.micro_batches * grad_bytes + weight_bytes) / 2
                                           : grad_bytes;
  if (!dp.modelled || (expert_sync && !experts.modelled)) {
    result.data_parallel_modelled = false;
    return;
  }
  result.data_parallel_link = dp.link_name();
  result.data_parallel_bandwidth = dp.per_direction();
  // A collective of `per_param` bytes of each parameter the device holds.
  const auto time = [&](Collective kind, double per_param) {
    const double t = collective_s(dp, s.params, result.profile, kind, dense * per_param);
    return expert_sync ? t + collective_s(experts, s.params, result.profile, kind,
                                          params.experts * per_param)
                       : t;
  };
  const double backward_stage_s = (backward_s + result.recompute_s) / s.pp;
  if (zero <= 1) {
    result.data_parallel_s = time(Collective::kAllReduce, gradient_bytes);
    result.data_parallel_exposed_s = std::max(0.0, result.data_parallel_s - backward_s / s.pp);
    return;
  }
  const double scatter_s = time(Collective::kReduceScatter, gradient_bytes);
  const double gather_s = time(Collective::kAllGather, s.weight_bytes);
  if (zero == 2) {
    result.data_parallel_s = s.micro_batches * scatter_s + gather_s;
    result.data_parallel_exposed_s =
        s.micro_batches * std::max(0.0, scatter_s - backward_stage_s) + gather_s;
    return;
  }
  const double forward_stage_s = (result.latency_s - backward_s) / s.pp;
  result.data_parallel_s = s.micro_batches * (2 * gather_s + scatter_s);
  result.data_parallel_exposed_s =
      s.micro_batches * (std::max(0.0, gather_s - forward_stage_s) +
                         std::max(0.0, gather_s + scatter_s - backward_stage_s));
}

// The optimizer's multi-tensor kernels over one device's parameter tensors (a pipeline stage
// holds 1/pp of them; tensor parallelism and ZeRO shard their elements).
double optimizer_step_kernels(const Step& s) {
  const double chunk = s.runtime.training.multi_tensor.chunk_elements;
  if (chunk <= 0) return 0;
  double tensors = 0;
  double chunks = 0;
  const bool zero = s.workload.zero_stage >= 1;
  const double shards = s.tp * (zero ? s.shards : 1);
  const double expert_shards = s.tp * (zero ? s.expert_shards : 1);
  for (const Layer& layer : s.graph.layers) {
    const LayerCounts& c = layer.counts;
    const auto count = static_cast<double>(layer.traits.param_tensors);
    if (layer.view || count <= 0 || c.params <= 0) continue;
    // Expert parallelism: a device holds 1/ep of a moe layer's routed experts (taken as their
    // share of its tensors), which ZeRO shards over the devices that hold the same experts.
    const bool experts = s.ep > 1 && c.expert_params > 0;
    const double held = experts ? 1 - static_cast<double>(c.expert_params) /
                                          static_cast<double>(c.params) * (1 - 1 / s.ep)
                                : 1;
    tensors += count * held;
    const double elements =
        static_cast<double>(c.params) / count / (experts ? expert_shards : shards);
    chunks += count * held * std::ceil(elements / chunk);
  }
  return s.runtime.optimizer_kernels(optimizer_name(s.workload.optimizer), tensors / s.pp,
                                     chunks / s.pp);
}

// A training step: one micro-batch through the whole model (forward, backward, recompute,
// all-reduces); each stage takes 1/pp of it, micro-batch after micro-batch, and the pipeline
// fills and drains: (micro-batches + pp - 1) stage times (interleaved: the fill and drain take
// 1/V of that), then the exposed gradient sync and the optimizer update of the stage.
void training_schedule(const Step& s, const GraphTotals& totals, const DeviceParams& params,
                       double backward_s, Estimate& result) {
  // Gradients are kept and reduced in 16 bits at least: fp8 training (Transformer Engine,
  // Megatron) computes fp8 products but writes bf16 weight gradients (fp32 main grads).
  const double gradient_bytes = std::max(s.weight_bytes, 2.0);
  const double update_bytes = state_bytes(s, params, s.workload.zero_stage >= 1,
                                          optimizer_update_bytes(s.workload.optimizer));
  const double optimizer_kernels = optimizer_step_kernels(s);
  result.optimizer_s =
      std::max(update_bytes / s.rates.bytes_per_s, std::max(1.0, optimizer_kernels) * s.floor_s);
  training_memory(s, totals, params, gradient_bytes, result.memory);

  const auto virtual_stages = static_cast<double>(s.workload.virtual_stages);
  double stage_s = (result.latency_s + result.recompute_s) / s.pp;
  const double sends =
      s.workload.pipeline_parallel > 1 ? pipeline_sends(s, totals, stage_s, result) : 0;
  stage_s += sends;
  result.pipeline_bubble_s = (s.pp - 1) * stage_s / virtual_stages;
  // The sends' share of the step: in every stage time, the bubble's included.
  result.pipeline_send_s = (s.micro_batches + (s.pp - 1) / virtual_stages) * sends;
  data_parallel_sync(s, params, gradient_bytes, backward_s, result);
  result.latency_s = s.micro_batches * stage_s + result.pipeline_bubble_s +
                     result.data_parallel_exposed_s + result.optimizer_s;
  // The device's own work in a step: its stage's share of every micro-batch.
  const double share = s.micro_batches / s.pp;
  result.layer_repeats = share;
  result.flops *= share;
  result.kernels = result.kernels * share + optimizer_kernels;
  result.bytes = result.bytes * share + update_bytes;
  result.recompute_s *= share;
  result.communication_s *= share;
  result.context_parallel_send_s *= share;
  result.context_parallel_s *= share;
  result.expert_parallel_s *= share;
  result.alltoall_bytes *= share;
  result.alltoalls = static_cast<int>(std::lround(result.alltoalls * share));
  result.allreduce_bytes *= share;
  result.allreduces = static_cast<int>(std::lround(result.allreduces * share));
}

// Memory totals and the largest batch that fits: activations are linear in the batch,
// everything else does not depend on it.
void memory_fit(const Step& s, Estimate& result) {
  MemoryEstimate& memory = result.memory;
  memory.total_bytes = memory.weight_bytes + memory.gradient_bytes + memory.optimizer_bytes +
                       memory.activation_bytes;
  const auto batch = static_cast<double>(s.graph.batch);
  memory.per_sample_bytes = memory.activation_bytes / batch;
  result.fits = memory.total_bytes <= s.device.memory_bytes;
  if (s.graph.dims.count("batch") == 0) {
    result.max_batch = -1;
    return;
  }
  const double fixed = memory.total_bytes - memory.activation_bytes;
  result.max_batch =
      fixed >= s.device.memory_bytes || memory.per_sample_bytes <= 0
          ? 0
          : clamp_to_int64(std::floor((s.device.memory_bytes - fixed) / memory.per_sample_bytes));
}

}  // namespace

std::optional<std::string> tensor_parallel_problem(const Graph& graph,
                                                   std::int64_t tensor_parallel) {
  const std::int64_t t = tensor_parallel;
  if (t <= 1) return std::nullopt;
  for (const Layer& layer : graph.layers) {
    const std::int64_t heads = layer.counts.attention_heads;
    const std::int64_t kv = layer.counts.attention_kv_heads;
    if (heads > 0 && heads % t != 0) {
      return fmt::format("--tensor-parallel {} does not divide the {} attention heads of \"{}\"", t,
                         heads, layer.name);
    }
    // Megatron-LM and vLLM split the KV heads evenly, or replicate them when the degree is a
    // multiple of their number.
    if (kv > 0 && kv % t != 0 && t % kv != 0) {
      return fmt::format(
          "--tensor-parallel {} and the {} KV heads of \"{}\" do not divide "
          "each other (KV heads split evenly, or are replicated over a multiple)",
          t, kv, layer.name);
    }
  }
  return std::nullopt;
}

std::optional<std::string> expert_parallel_problem(const Graph& graph, std::int64_t expert_parallel,
                                                   double moe_imbalance) {
  if (expert_parallel <= 1 && moe_imbalance == 1) return std::nullopt;
  const Layer* moe = nullptr;
  for (const Layer& layer : graph.layers) {
    const std::int64_t experts = layer.counts.experts;
    if (experts == 0) continue;
    if (moe == nullptr) moe = &layer;
    if (experts % expert_parallel != 0) {
      return fmt::format("--expert-parallel {} does not divide the {} experts of \"{}\"",
                         expert_parallel, experts, layer.name);
    }
  }
  if (moe != nullptr) return std::nullopt;
  return fmt::format("{}: the model has no \"moe\" layer",
                     expert_parallel > 1 ? "--expert-parallel" : "--moe-imbalance");
}

LayerPass estimate_layers(const Graph& graph, const Device& device, const PerformanceParams& params,
                          const Workload& workload) {
  if (auto problem = tensor_parallel_problem(graph, workload.tensor_parallel)) {
    throw Error({}, *problem);
  }
  if (auto problem =
          expert_parallel_problem(graph, workload.expert_parallel, workload.moe_imbalance)) {
    throw Error({}, *problem);
  }
  const Step s = make_step(graph, device, params, workload);
  LayerPass pass;
  Estimate& result = pass.partial;
  result.profile = s.runtime.profile;
  result.runtime = s.runtime.id;
  result.floor_s = s.floor_s;
  result.sparsity_speedup = s.sparse && s.has_matrix ? device.sparsity_2_4_speedup : 1;
  pass.backward_s = layer_times(s, result);
  tensor_parallel_communication(s, result);
  context_parallel_communication(s, result);
  expert_parallel_communication(s, result);
  pass.totals = graph_totals(graph);
  return pass;
}

Estimate estimate_schedule(const LayerPass& pass, const Graph& graph, const Device& device,
                           const PerformanceParams& params, const Workload& workload,
                           bool keep_layers) {
  const Step s = make_step(graph, device, params, workload, false);
  Estimate result;
  if (keep_layers) {
    result = pass.partial;
  } else {
    // Everything but the per-layer vector, which a search over layouts never reads.
    result.profile = pass.partial.profile;
    result.runtime = pass.partial.runtime;
    result.floor_s = pass.partial.floor_s;
    result.sparsity_speedup = pass.partial.sparsity_speedup;
    result.kernels = pass.partial.kernels;
    result.latency_s = pass.partial.latency_s;
    result.flops = pass.partial.flops;
    result.bytes = pass.partial.bytes;
    result.recompute_s = pass.partial.recompute_s;
    result.communication_s = pass.partial.communication_s;
    result.communication_modelled = pass.partial.communication_modelled;
    result.communication_link = pass.partial.communication_link;
    result.communication_bandwidth = pass.partial.communication_bandwidth;
    result.allreduces = pass.partial.allreduces;
    result.allreduce_bytes = pass.partial.allreduce_bytes;
    result.context_parallel_send_s = pass.partial.context_parallel_send_s;
    result.context_parallel_s = pass.partial.context_parallel_s;
    result.context_parallel_link = pass.partial.context_parallel_link;
    result.context_parallel_modelled = pass.partial.context_parallel_modelled;
    result.expert_parallel_s = pass.partial.expert_parallel_s;
    result.alltoalls = pass.partial.alltoalls;
    result.alltoall_bytes = pass.partial.alltoall_bytes;
    result.expert_parallel_link = pass.partial.expert_parallel_link;
    result.expert_parallel_modelled = pass.partial.expert_parallel_modelled;
  }
  const GraphTotals& totals = pass.totals;
  const DeviceParams params_on_device = device_params(s, totals);
  result.memory.weight_bytes =
      params_on_device.all * (s.sparse ? s.sparse_weight_bytes : s.weight_bytes);
  if (s.training) {
    training_schedule(s, totals, params_on_device, pass.backward_s, result);
  } else {
    result.memory.activation_bytes =
        static_cast<double>(totals.peak_live_elements) * s.act_bytes / s.tp;
  }
  memory_fit(s, result);
  const auto batch = static_cast<double>(graph.batch);
  result.throughput_per_s =
      result.latency_s > 0 ? batch * s.micro_batches * s.replicas / result.latency_s : 0;
  result.achieved_flops_per_s = result.latency_s > 0 ? result.flops / result.latency_s : 0;
  return result;
}

Estimate estimate(const Graph& graph, const Device& device, const PerformanceParams& params,
                  const Workload& workload) {
  return estimate_schedule(estimate_layers(graph, device, params, workload), graph, device, params,
                           workload, true);
}

ServingEstimate estimate_serving(const ServingGraphBuilder& build, const Device& device,
                                 const PerformanceParams& params, const Workload& workload,
                                 const ServingRequest& request) {
  if (request.prompt_tokens < 1 || request.output_tokens < 1) {
    throw Error({}, "prompt and output tokens must be at least 1");
  }
  if (workload.mode != Mode::kInference) {
    throw Error({}, "--prompt-tokens and --output-tokens describe serving: use --mode inference");
  }
  ServingEstimate s;
  const Graph prefill = build(request.prompt_tokens, 0);
  s.prefill = estimate(prefill, device, params, workload);
  // Decode steps 1 .. output-1 read caches of prompt .. prompt + output - 2 tokens.
  s.mean_context = request.prompt_tokens + (request.output_tokens - 1) / 2;
  Graph decode = build(1, s.mean_context);
  drop_prefill_only_layers(decode);
  s.decode = estimate(decode, device, params, workload);
  const auto batch = static_cast<double>(prefill.batch);
  s.ttft_s = s.prefill.latency_s;
  s.decode_step_s = s.decode.latency_s;
  s.tokens_per_s_per_sequence = 1 / s.decode_step_s;
  const auto replicas = static_cast<double>(data_parallel_replicas(workload));
  s.tokens_per_s = batch * replicas / s.decode_step_s;
  s.request_latency_s = s.ttft_s + static_cast<double>(request.output_tokens - 1) * s.decode_step_s;

  const double kv_bytes = workload.kv_precision
                              ? activation_bytes_per_element(*workload.kv_precision)
                              : activation_bytes_per_element(workload.precision);
  const std::int64_t context = request.prompt_tokens + request.output_tokens;
  // Tensor parallelism splits the heads, and the cache with them, over the group (at most
  // over as many devices as a layer has key/value heads).
  s.kv_bytes_per_token =
      kv_cache_elements_per_device(prefill, 1, workload.tensor_parallel) * kv_bytes;
  const double kv_per_sequence =
      kv_cache_elements_per_device(prefill, context, workload.tensor_parallel) * kv_bytes;
  s.kv_bytes = kv_per_sequence * batch;
  const double weights = s.prefill.memory.weight_bytes;
  const double activations = s.prefill.memory.activation_bytes;
  s.memory_bytes = weights + s.kv_bytes + activations;
  s.fits = s.memory_bytes <= device.memory_bytes;
  const double free_bytes = device.memory_bytes - weights;
  const double per_sequence = kv_per_sequence + activations / batch;
  s.max_batch = free_bytes > 0 && per_sequence > 0
                    ? clamp_to_int64(std::floor(free_bytes / per_sequence))
                    : 0;
  s.max_cached_tokens = free_bytes > 0 && s.kv_bytes_per_token > 0
                            ? clamp_to_int64(std::floor(free_bytes / s.kv_bytes_per_token))
                            : 0;
  return s;
}

TrainingTotals training_totals(const Estimate& step, std::int64_t batch, const Workload& workload,
                               const TrainingRun& run) {
  TrainingTotals totals;
  const auto devices = workload.devices;
  const double global_batch = static_cast<double>(batch) *
                              static_cast<double>(workload.micro_batches) *
                              static_cast<double>(data_parallel_replicas(workload));
  totals.steps = std::ceil(run.samples / global_batch);
  totals.time_s = totals.steps * step.latency_s;
  totals.device_hours = totals.time_s * static_cast<double>(devices) / 3600;
  if (run.price_per_device_hour_usd) {
    totals.cost_usd = totals.device_hours * *run.price_per_device_hour_usd;
  }
  if (run.power_w > 0) totals.energy_kwh = totals.device_hours * run.power_w / 1000;
  return totals;
}

std::vector<MisalignedLayer> misaligned_matrix_layers(const Graph& graph, const Device& device,
                                                      Precision precision) {
  const std::int64_t multiple = alignment_multiple(device, precision);
  if (multiple == 0) return {};
  const std::int64_t total_macs = graph_totals(graph).macs;
  std::vector<MisalignedLayer> result;
  for (const Layer& layer : graph.layers) {
    const std::optional<Misalignment> found = misalignment(layer, multiple);
    if (!found) continue;
    MisalignedLayer m;
    m.name = layer.name;
    m.dimension = found->dimension;
    m.size = found->size;
    m.multiple = multiple;
    m.padded = (found->size + 63) / 64 * 64;
    m.share_of_macs = total_macs > 0
                          ? static_cast<double>(layer.counts.macs) / static_cast<double>(total_macs)
                          : 0;
    result.push_back(std::move(m));
  }
  std::stable_sort(result.begin(), result.end(),
                   [](const auto& a, const auto& b) { return a.share_of_macs > b.share_of_macs; });
  return result;
}

}  // namespace capcalc
