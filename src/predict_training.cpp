// A training step beyond its layers: the memory of gradients, optimizer state and activations
// in flight (training_memory), the optimizer's kernels, and the pipeline schedule that puts
// micro-batches, sends, gradient sync and the update together (training_schedule).
#include <algorithm>
#include <cmath>

#include "predict_step.hpp"

namespace capcalc::detail {
namespace {

constexpr double kMasterWeightBytesPerParam = 4;  // fp32 copy under mixed precision.

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
                     const DeviceParams& trained, double gradient_bytes, MemoryEstimate& memory) {
  const int zero = s.workload.zero_stage;
  memory.gradient_bytes = state_bytes(s, trained, zero >= 2, gradient_bytes);
  memory.optimizer_bytes = state_bytes(s, trained, zero >= 1,
                                       optimizer_state_bytes(s.workload.optimizer) +
                                           (s.weight_bytes < 4 ? kMasterWeightBytesPerParam : 0));
  if (zero >= 3) {
    memory.weight_bytes =
        state_bytes(s, params, true, s.sparse ? s.sparse_weight_bytes : s.weight_bytes);
  }
  // LoRA: the adapters' own weights beside the frozen ones.
  if (s.lora_rank > 0) memory.weight_bytes += state_bytes(s, trained, zero >= 3, s.weight_bytes);
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
  if (s.lora_rank > 0) {
    // LoRA: the optimizer steps A and B of each adapted weight matrix, nothing else.
    for (std::size_t i = 0; i < s.graph.layers.size(); ++i) {
      const Layer& layer = s.graph.layers[i];
      const double adapters = s.lora_rank * lora_adapters(s, i).params;
      const auto matrices = static_cast<double>(
          std::max<std::int64_t>(1, layer.traits.weight_tensors - layer.traits.bias_tensors));
      if (adapters <= 0) continue;
      tensors += 2 * matrices;
      chunks += 2 * matrices * std::ceil(adapters / (2 * matrices) / shards / chunk);
    }
    return s.runtime.optimizer_kernels(optimizer_name(s.workload.optimizer), tensors / s.pp,
                                       chunks / s.pp);
  }
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

}  // namespace

// A training step: one micro-batch through the whole model (forward, backward, recompute,
// all-reduces); each stage takes 1/pp of it, micro-batch after micro-batch, and the pipeline
// fills and drains: (micro-batches + pp - 1) stage times (interleaved: the fill and drain take
// 1/V of that), then the exposed gradient sync and the optimizer update of the stage.
void training_schedule(const Step& s, const GraphTotals& totals, const DeviceParams& params,
                       double backward_s, Estimate& result) {
  // Gradients are kept and reduced in 16 bits at least: fp8 training (Transformer Engine,
  // Megatron) computes fp8 products but writes bf16 weight gradients (fp32 main grads).
  const double gradient_bytes = std::max(s.weight_bytes, 2.0);
  const DeviceParams trained = trainable_params(s, params);
  const double update_bytes = state_bytes(s, trained, s.workload.zero_stage >= 1,
                                          optimizer_update_bytes(s.workload.optimizer));
  const double optimizer_kernels = optimizer_step_kernels(s);
  result.optimizer_s =
      std::max(update_bytes / s.rates.bytes_per_s, std::max(1.0, optimizer_kernels) * s.floor_s);
  training_memory(s, totals, params, trained, gradient_bytes, result.memory);

  const auto virtual_stages = static_cast<double>(s.workload.virtual_stages);
  double stage_s = (result.latency_s + result.recompute_s) / s.pp;
  const double sends =
      s.workload.pipeline_parallel > 1 ? pipeline_sends(s, totals, stage_s, result) : 0;
  stage_s += sends;
  result.pipeline_bubble_s = (s.pp - 1) * stage_s / virtual_stages;
  // The sends' share of the step: in every stage time, the bubble's included.
  result.pipeline_send_s = (s.micro_batches + (s.pp - 1) / virtual_stages) * sends;
  data_parallel_sync(s, params, trained, gradient_bytes, backward_s, result);
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

}  // namespace capcalc::detail
