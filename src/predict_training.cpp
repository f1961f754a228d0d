// A training step beyond its layers: the memory of gradients, optimizer state and activations
// in flight (training_memory), the optimizer's kernels, and the pipeline schedule that puts
// micro-batches, sends, gradient sync and the update together (training_schedule).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "predict_step.hpp"

namespace capcalc::detail {
namespace {

constexpr double kMasterWeightBytesPerParam = 4;  // fp32 copy under mixed precision.

// One micro-batch's activations a device keeps for backward: 1/tp of them, but all of those of
// the layers it runs whole (no sequence parallelism), less what selective recomputation drops. With
// checkpointing the kept block outputs are the residual stream, which every such device keeps
// whole, and the block being recomputed keeps the whole model's replicated share whole.
double activation_elements_per_device(const Step& s, const GraphTotals& totals) {
  // Selective recomputation keeps none of what it recomputes.
  const double all = static_cast<double>(totals.activation_elements) - s.recompute_dropped_elements;
  const double whole = s.replicated_activation_elements - s.recompute_dropped_replicated;
  const double kept = (all - whole) / s.tp + whole;
  if (s.checkpoint_share <= 0) return kept;
  const auto checkpointed = static_cast<double>(totals.checkpointed_elements);
  const auto results = static_cast<double>(totals.checkpoint_result_elements);
  double recomputed = checkpointed / s.tp;
  if (whole != 0 && all != 0) {
    const double share = whole / all;
    recomputed = results + (checkpointed - results) * (share + (1 - share) / s.tp);
  }
  // Checkpointing only some blocks keeps the others' activations: a mix by their share.
  return (1 - s.checkpoint_share) * kept + s.checkpoint_share * recomputed;
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
      activation_elements_per_device(s, totals) * s.saved_bytes / s.cp * in_flight;
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
  const double expert_shards = s.etp * (zero ? s.expert_shards : 1);
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
    // share of its tensors), each split over etp devices, which ZeRO shards over the devices
    // that hold the same experts.
    const bool experts = experts_held_apart(s) && c.expert_params > 0;
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

// The stages' times for one micro-batch of `total_s` (the whole model's forward, backward,
// recompute and collectives). Megatron-Core places P x V chunks in order, chunk c on stage
// c mod P, the embedding with the first chunk and the final norm, output layer and loss with the
// last (get_transformer_layer_offset; pre_process and post_process in the GPT model). It splits
// the blocks evenly over the chunks, or counts the embedding and the loss as a block each, so
// the first and last chunks take a block fewer (pipeline_counts_ends). A split that neither
// divides gives the first chunks a block more.
// A model without attention blocks splits evenly.
struct StageTimes {
  double heaviest_s = 0;
  double sum_s = 0;
  std::int64_t heaviest = 0;
};

StageTimes stage_times(const Step& s, const LayerPass& pass, double total_s) {
  const std::int64_t p = s.workload.pipeline_parallel;
  if (p == 1 || pass.blocks == 0) return {total_s / static_cast<double>(p), total_s, 0};
  const std::int64_t blocks = pass.blocks;
  const std::int64_t chunks = p * s.workload.virtual_stages;
  const double block_s = std::max(0.0, total_s - pass.before_blocks_s - pass.after_blocks_s) /
                         static_cast<double>(blocks);
  const bool accounted = pipeline_counts_ends(blocks, chunks);
  std::vector<double> stage(static_cast<std::size_t>(p), 0.0);
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t n =
        accounted ? (blocks + 2) / chunks - (c == 0 ? 1 : 0) - (c == chunks - 1 ? 1 : 0)
                  : blocks / chunks + (c < blocks % chunks ? 1 : 0);
    stage[static_cast<std::size_t>(c % p)] += static_cast<double>(n) * block_s;
  }
  stage.front() += pass.before_blocks_s;
  stage.back() += pass.after_blocks_s;
  StageTimes t;
  for (std::size_t i = 0; i < stage.size(); ++i) {
    t.sum_s += stage[i];
    if (stage[i] > t.heaviest_s) {
      t.heaviest_s = stage[i];
      t.heaviest = static_cast<std::int64_t>(i);
    }
  }
  return t;
}

}  // namespace

void pipeline_ends(const Step& s, const Estimate& result, LayerPass& pass) {
  const std::vector<Layer>& layers = s.graph.layers;
  // Multi-token-prediction modules run on the last stage, after the output layer
  // (Megatron-Core's MultiTokenPredictionBlock sits in the GPT model's post-process).
  const std::size_t mtp = s.graph.mtp_first_layer >= 0
                              ? static_cast<std::size_t>(s.graph.mtp_first_layer)
                              : layers.size();
  std::set<std::int32_t> blocks;
  for (std::size_t i = 0; i < mtp; ++i) {
    if (layers[i].counts.attention_heads > 0) blocks.insert(layers[i].group);
  }
  if (blocks.empty()) return;
  pass.blocks = static_cast<std::int64_t>(blocks.size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].group < *blocks.begin()) pass.before_blocks_s += result.layers[i].time_s;
    if (layers[i].group > *blocks.rbegin() || i >= mtp) {
      pass.after_blocks_s += result.layers[i].time_s;
    }
  }
}

// A training step: one micro-batch through the whole model (forward, backward, recompute,
// all-reduces), split into the stages' shares (stage_times); micro-batch after micro-batch the
// heaviest stage sets the pace, and the pipeline fills and drains through the others: M
// heaviest stage times + the other stages' times (interleaved: 1/V of those), which is
// (M + P - 1) stage times for an even split; then the exposed gradient sync and the optimizer
// update of the stage.
void training_schedule(const Step& s, const LayerPass& pass, const DeviceParams& params,
                       Estimate& result) {
  const GraphTotals& totals = pass.totals;
  const double backward_s = pass.backward_s;
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
  StageTimes stages = stage_times(s, pass, result.latency_s + result.recompute_s);
  const double sends =
      s.workload.pipeline_parallel > 1 ? pipeline_sends(s, totals, stages.heaviest_s, result) : 0;
  stages.heaviest_s += sends;
  stages.sum_s += s.pp * sends;
  const double stage_s = stages.heaviest_s;
  result.pipeline_imbalance =
      stages.sum_s > 0 ? std::max(1.0, stages.heaviest_s * s.pp / stages.sum_s) : 1;
  result.pipeline_heaviest_stage = stages.heaviest;
  result.pipeline_bubble_s = (stages.sum_s - stages.heaviest_s) / virtual_stages;
  // The sends' share of the step: in every stage time, the bubble's included.
  result.pipeline_send_s = (s.micro_batches + (s.pp - 1) / virtual_stages) * sends;
  data_parallel_sync(s, params, trained, gradient_bytes, backward_s, result);
  result.latency_s = s.micro_batches * stage_s + result.pipeline_bubble_s +
                     result.data_parallel_exposed_s + result.optimizer_s;
  // The device's own work in a step: its stage's share of every micro-batch.
  const double share = s.micro_batches / s.pp;
  result.layer_repeats = share;
  result.flops *= share;
  result.executed_flops *= share;
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

namespace capcalc {

bool pipeline_counts_ends(std::int64_t blocks, std::int64_t chunks) {
  return blocks % chunks != 0 && (blocks + 2) % chunks == 0 && (blocks + 2) / chunks >= 2;
}

}  // namespace capcalc
