// The step that the performance model times (src/predict.cpp): what every stage of a step
// needs, fixed for the step (`Step`, built by `make_step` in src/predict_step.cpp), and the
// stages that estimate_layers and estimate_schedule run on it, grouped by the file that holds
// them. Internal to the performance model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/runtime.hpp"

#include "predict_rates.hpp"

namespace capcalc::detail {

/// What selective recomputation (RecomputeModule bits) makes of a layer: nothing, the whole
/// layer (its output and saved elements not kept, its forward run again in backward), or its
/// recomputable part (LayerCounts::recomputable).
enum class Recomputed : char { kNo, kWhole, kPart };
/// Per layer of the graph. `layernorm` takes the norms Megatron-Core keeps apart from the next
/// linear: those a moe layer or latent attention reads (its Transformer Engine layer spec fuses
/// the others into the following linear, TELayerNormColumnParallelLinear, which recomputes
/// nothing).
std::vector<Recomputed> recomputed_layers(const Graph& graph, unsigned modules);
/// Of a layer recomputed in part, which parts the modules take: its own (LayerCounts::
/// recomputable: a moe layer's expert activation under moe_act, latent attention's
/// up-projections under mla_up_proj) and a moe layer's shared expert (shared_experts).
struct RecomputedParts {
  bool own = false;
  bool shared = false;
};
RecomputedParts recomputed_parts(const Layer& layer, unsigned modules);

/// The model's blocks: its top-level entries (groups) of more than one layer, what
/// Megatron-Core's transformer layers are to checkpointing (the embedding, the final norm and
/// the output layer are entries of one layer each).
std::int64_t block_count(const Graph& graph);

/// A layer of a dense MLP: one named `<...>.mlp.<...>` (Hugging Face's module name, and the
/// native models'), not a moe layer (Megatron-Core's `mlp` module skips MoE layers).
bool in_mlp(const Layer& layer);

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
  double etp = 1;            // each split over etp devices (tp, or 1: whole experts),
  double expert_shards = 1;  // whose gradients reduce, and ZeRO shards, over tp x shards /
                             // (ep x etp) devices: shards / ep when etp is tp.
  double micro_batches = 1;
  double act_bytes = 0;
  /// Bytes per activation a training step saves for backward: under fp8 the products'
  /// quantized inputs (Transformer Engine keeps the FP8 copy the weight gradient reads), 1 B.
  double saved_bytes = 0;
  double weight_bytes = 0;
  double expert_weight_bytes = 0;  // The routed experts' (expert_weight_precision).
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
  /// Training with selective recomputation (workload.recompute): per layer, what of it is
  /// recomputed (empty: nothing), and the activation elements of one micro-batch it no longer
  /// keeps, all of them and those of the layers every tensor-parallel device runs whole.
  std::vector<Recomputed> recomputed{};
  /// Training with checkpointing: the share of the blocks it recomputes (1: all; less where
  /// workload.checkpoint_layers picks the first N of each chunk); 0 without.
  double checkpoint_share = 0;
  double recompute_dropped_elements = 0;
  double recompute_dropped_replicated = 0;
  /// Training with LoRA: the adapters' rank (0: every weight trains) and their parameters in the
  /// whole model.
  double lora_rank = 0;
  double adapter_params = 0;
};

/// The step of `workload` on `device`; `per_layer`: also what only the layers' pass reads.
/// `blocks`: block_count(graph) where the caller has it (a search makes a step per layout),
/// else -1.
Step make_step(const Graph& graph, const Device& device, const PerformanceParams& params,
               const Workload& workload, bool per_layer = true, std::int64_t blocks = -1);

// A device's parameters: 1/(tp x pp) of the model's, the routed experts' 1/ep of that again.
struct DeviceParams {
  double all = 0;
  double experts = 0;  // Of `all`, the routed experts'.
};

/// The parameters a device holds in the step.
DeviceParams device_params(const Step& s, const GraphTotals& totals);

/// The parameters a device trains: those it holds, or with LoRA its share of the adapters.
DeviceParams trainable_params(const Step& s, const DeviceParams& held);

/// LoRA's adapters on one layer, per unit of rank (AdapterShape's counts).
struct Adapters {
  double params = 0;
  double macs = 0;
};

/// LoRA's adapters on layer `index`: its traits', else its GEMM view's for a layer with
/// weights; none on the layer the loss reads (the output layer) or without LoRA.
Adapters lora_adapters(const Step& s, std::size_t index);

/// The last layer that is not a view: the loss reads its output.
std::size_t loss_layer_of(const Graph& graph);

/// The same for any graph and workload, `loss_layer` the last layer that is not a view.
Adapters lora_adapters(const Graph& graph, const Workload& workload, std::size_t loss_layer,
                       std::size_t index);

// The layers (src/predict_layers.cpp).

/// Every layer's time into `result`; returns one micro-batch's backward through the whole model.
double layer_times(const Step& s, Estimate& result);

// The routed experts' weights, gradients and state are held apart from the other weights:
// split over expert parallelism, or whole on a device (whole_experts).
inline bool experts_held_apart(const Step& s) {
  return s.ep > 1 || whole_experts(s.workload);
}

// Communication (src/predict_comm.cpp).

// A moe layer whose tensor-parallel collective is not its own: its experts are whole (no
// partial products to reduce), or the all-gather dispatcher's reduce-scatter over the expert
// and tensor-parallel devices sums them.
inline bool moe_without_tp_collective(const Workload& workload) {
  return whole_experts(workload) ||
         (workload.moe_dispatcher == MoeDispatcher::kAllGather && workload.expert_parallel > 1);
}

/// Tensor parallelism's all-reduces (or reduce-scatters and all-gathers), added to the latency.
void tensor_parallel_communication(const Step& s, Estimate& result);

/// Context parallelism's ring sends that the attention layers do not hide, added to the latency.
void context_parallel_communication(const Step& s, Estimate& result);

/// Expert parallelism's all-to-alls, added to the latency.
void expert_parallel_communication(const Step& s, Estimate& result);

/// What the sends between pipeline stages add to one micro-batch's stage time of `stage_s`.
double pipeline_sends(const Step& s, const GraphTotals& totals, double stage_s, Estimate& result);

/// The data-parallel gradient sync (and ZeRO's gathers) and the part of it that shows.
/// `params`: the parameters a device holds (ZeRO-3 gathers them); `trained`: those whose
/// gradients it reduces (trainable_params).
void data_parallel_sync(const Step& s, const DeviceParams& params, const DeviceParams& trained,
                        double gradient_bytes, double backward_s, Estimate& result);

// Training (src/predict_training.cpp).

/// The pass's blocks and the time of the layers before and after them (LayerPass), from the
/// layers' times in `result`.
void pipeline_ends(const Step& s, const Estimate& result, LayerPass& pass);

/// A training step's memory, optimizer update, pipeline schedule and gradient sync: `result`
/// holds the pass's sums (one micro-batch through the whole model).
void training_schedule(const Step& s, const LayerPass& pass, const DeviceParams& params,
                       Estimate& result);

}  // namespace capcalc::detail
