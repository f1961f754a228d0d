// The communication of a step: tensor, context and expert parallelism's collectives over a
// micro-batch's layers, the sends between pipeline stages, and the data-parallel gradient sync
// with ZeRO's gathers and scatters.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "collectives.hpp"
#include "predict_step.hpp"

namespace capcalc::detail {
namespace {

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

// Tensor parallelism: two all-reduces of each attention layer's output (after the attention
// output projection and after the feed-forward block's last projection), forward; backward
// all-reduces the gradients of the same activations. With sequence parallelism each is a
// reduce-scatter (into the sequence-split region) and an all-gather (out of it): the same bytes
// as the all-reduce's two ring phases, with a latency each. A moe layer whose experts are whole
// (etp 1) has no collective of its own: its tokens go to the experts by the all-to-all from
// each device's sequence share and come back to it (Megatron-Core's token dispatcher gathers
// over the experts' own tensor-parallel group only), so its block drops one of the two. Nor
// has one under the all-gather dispatcher, whose gather and reduce-scatter span the
// tensor-parallel devices too (expert_parallel_communication).
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
  const double passes = s.training ? 2 + s.checkpoint_share : 1;
  const auto collective = [&](const Layer& layer, double& bytes) {
    bytes = static_cast<double>(element_count(layer.output)) * s.comm_bytes / s.cp;
    return s.sequence_parallel
               ? collective_s(group, s.params, result.profile, Collective::kReduceScatter, bytes) +
                     collective_s(group, s.params, result.profile, Collective::kAllGather, bytes)
               : collective_s(group, s.params, result.profile, Collective::kAllReduce, bytes);
  };
  for (const Layer& layer : s.graph.layers) {
    const bool attention = layer.traits.op_class == OpClass::kAttention;
    const bool whole = layer.counts.experts > 0 && moe_without_tp_collective(s.workload);
    if (layer.view || (!attention && !whole)) continue;
    double bytes = 0;
    const double t = collective(layer, bytes);
    const double count = attention ? 2 : -1;
    result.communication_s += count * passes * t;
    result.allreduces += static_cast<int>(std::lround(count * passes));
    result.allreduce_bytes += count * passes * bytes;
  }
  // Selective recomputation of a dense MLP or a moe layer runs its forward again, the
  // collective after its last projection with it (a moe layer of whole experts has none).
  for (std::size_t i = 0; i < s.recomputed.size(); ++i) {
    const Layer& layer = s.graph.layers[i];
    const bool last = i + 1 == s.graph.layers.size() || !in_mlp(s.graph.layers[i + 1]);
    const bool moe = layer.counts.experts > 0 && !moe_without_tp_collective(s.workload);
    if (s.recomputed[i] != Recomputed::kWhole || !((in_mlp(layer) && last) || moe)) continue;
    double bytes = 0;
    result.communication_s += collective(layer, bytes);
    result.allreduces += 1;
    result.allreduce_bytes += bytes;
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
  const double passes = 3 + s.checkpoint_share;
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

namespace {

// The all-gather dispatcher (Megatron-Core's MoEAllGatherTokenDispatcher, its default
// `moe_token_dispatcher_type`; vLLM's expert parallelism): each moe layer gathers the tokens of
// all etp x ep devices of its expert and tensor-parallel group ("this allgather spans the
// communication domain of TP*EP", token_dispatcher.py, core 0.15), each device runs its own
// experts over those routed to them, and a reduce-scatter over the same group sums the
// experts' outputs, and the partial products of split experts, back to the devices the tokens
// came from; backward runs the two the other way, recompute the forward's again. The group is
// etp x ep devices side by side (the expert grid's tp-ep order). Where it is a replica's
// tensor-parallel devices without sequence parallelism (inference, experts whole, EP = TP:
// vLLM's --enable-expert-parallel without data parallelism), they hold the same tokens
// already: nothing is gathered, and the outputs are all-reduced, one collective.
void gathered_tokens_communication(const Step& s, Estimate& result) {
  const std::int64_t members = static_cast<std::int64_t>(s.etp) * s.workload.expert_parallel;
  result.expert_parallel_group = members;
  const CollectiveGroup group = collective_group(s.device, 1, members);
  if (!group.modelled) {
    result.expert_parallel_modelled = false;
    return;
  }
  result.expert_parallel_link = group.link_name();
  const bool replicated = !s.sequence_parallel && s.etp == 1 && s.cp == 1 &&
                          s.workload.expert_parallel == s.workload.tensor_parallel;
  result.expert_collective = replicated ? "all-reduce" : "all-gather + reduce-scatter pair";
  const double base_pairs = s.training ? 2 + s.checkpoint_share : 1;
  const auto n = static_cast<double>(members);
  for (std::size_t i = 0; i < s.graph.layers.size(); ++i) {
    const Layer& layer = s.graph.layers[i];
    if (layer.view || layer.counts.experts == 0) continue;
    const bool again = !s.recomputed.empty() && s.recomputed[i] == Recomputed::kWhole;
    const double pairs = base_pairs + (again ? 1 : 0);
    // What the group's members hold together: each its 1/tp (sequence parallelism) of 1/cp.
    const double gathered =
        static_cast<double>(element_count(layer.output)) * s.comm_bytes / s.tp / s.cp * n;
    const double once =
        replicated
            ? collective_s(group, s.params, result.profile, Collective::kAllReduce, gathered)
            : collective_s(group, s.params, result.profile, Collective::kAllGather, gathered) +
                  collective_s(group, s.params, result.profile, Collective::kReduceScatter,
                               gathered);
    result.expert_parallel_s += pairs * once;
    result.alltoalls += static_cast<int>(std::lround(pairs));
    // A ring's all-gather and its reduce-scatter each send (n-1)/n of the gathered bytes.
    result.alltoall_bytes += pairs * 2 * (n - 1) / n * gathered;
  }
  result.latency_s += result.expert_parallel_s;
}

}  // namespace

// Expert parallelism (Megatron-Core's token dispatchers): each moe layer sends its tokens to
// the devices holding their experts (dispatch) and the experts' outputs back (combine),
// forward; backward sends their gradients the two ways again, and checkpointing's recompute
// repeats the forward's. The all-to-all dispatcher sends a token once for each of its experts,
// DeepEP and HybridEP once for each device or node holding any (dispatch_copies). A device
// dispatches its 1/tp of its tokens (sequence parallelism, which Megatron-Core requires with
// experts and tensor parallelism), 1/cp of the sequence's. The group is ep devices etp apart
// (tp apart unless the experts are whole): Megatron-Core lays the experts out on a grid of its
// own (parallel_state.py: RankGenerator(tp=expert tensor parallel, ep, dp, pp, cp=1)), context
// parallelism's devices folded into the expert-parallel ones. Not overlapped with compute
// (Megatron-Core's default). A moe layer that selective recomputation runs again (`moe`)
// exchanges its tokens forward once more.
void expert_parallel_communication(const Step& s, Estimate& result) {
  if (s.workload.expert_parallel <= 1) return;
  if (s.workload.moe_dispatcher == MoeDispatcher::kAllGather) {
    gathered_tokens_communication(s, result);
    return;
  }
  result.expert_parallel_group = s.workload.expert_parallel;
  const CollectiveGroup group =
      collective_group(s.device, static_cast<std::int64_t>(s.etp), s.workload.expert_parallel);
  if (!group.modelled) {
    result.expert_parallel_modelled = false;
    return;
  }
  result.expert_parallel_link = group.link_name();
  const double base_passes = s.training ? 4 + 2 * s.checkpoint_share : 2;
  const bool deduplicated = s.workload.moe_dispatcher != MoeDispatcher::kAllToAll;
  for (std::size_t i = 0; i < s.graph.layers.size(); ++i) {
    const Layer& layer = s.graph.layers[i];
    const LayerCounts& c = layer.counts;
    if (layer.view || c.experts == 0) continue;
    const bool again = !s.recomputed.empty() && s.recomputed[i] == Recomputed::kWhole;
    const double passes = base_passes + (again ? 2 : 0);
    const double token_bytes =
        static_cast<double>(element_count(layer.output)) * s.comm_bytes / s.tp / s.cp;
    const Routing routing{c.experts, c.experts_per_token, c.expert_groups,
                          c.expert_groups_per_token};
    const TokenCopies copies = dispatch_copies(group, routing, deduplicated);
    result.expert_parallel_s +=
        passes * token_exchange_s(group, s.params, result.profile, copies, token_bytes);
    result.alltoalls += static_cast<int>(std::lround(passes));
    result.alltoall_bytes += passes * token_bytes * (copies.intra + copies.network);
  }
  result.latency_s += result.expert_parallel_s;
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
void data_parallel_sync(const Step& s, const DeviceParams& params, const DeviceParams& trained,
                        double gradient_bytes, double backward_s, Estimate& result) {
  if (s.shards <= 1) return;
  const CollectiveGroup dp =
      collective_group(s.device, s.workload.tensor_parallel, static_cast<std::int64_t>(s.shards));
  // With expert parallelism, or whole experts, the routed experts' gradients reduce apart,
  // over the expert_shards devices that hold the same experts, etp x ep apart on the expert
  // grid.
  const bool expert_sync = experts_held_apart(s) && s.expert_shards > 1;
  const CollectiveGroup experts =
      expert_sync ? collective_group(s.device,
                                     static_cast<std::int64_t>(s.etp) * s.workload.expert_parallel,
                                     static_cast<std::int64_t>(s.expert_shards))
                  : CollectiveGroup{};
  const int zero = s.workload.zero_stage;
  // ZeRO-3 gathers every weight it holds a shard of; ZeRO-2 gathers those the update changed
  // (with LoRA, the adapters only).
  const double weight_bytes = params.all * s.weight_bytes;
  const double updated_bytes = trained.all * s.weight_bytes;
  const double grad_bytes = trained.all * gradient_bytes;
  // As an all-reduce's operand: a reduce-scatter or an all-gather counts half of its bytes.
  result.data_parallel_bytes = zero >= 3   ? s.micro_batches * (2 * weight_bytes + grad_bytes) / 2
                               : zero == 2 ? (s.micro_batches * grad_bytes + updated_bytes) / 2
                                           : grad_bytes;
  if (!dp.modelled || (expert_sync && !experts.modelled)) {
    result.data_parallel_modelled = false;
    return;
  }
  result.data_parallel_link = dp.link_name();
  result.data_parallel_bandwidth = dp.per_direction();
  // A collective of `per_param` bytes of each of parameters `p` (held or trained).
  const auto time = [&](Collective kind, const DeviceParams& p, double per_param) {
    const double dense = experts_held_apart(s) ? p.all - p.experts : p.all;
    const double t = collective_s(dp, s.params, result.profile, kind, dense * per_param);
    return expert_sync
               ? t + collective_s(experts, s.params, result.profile, kind, p.experts * per_param)
               : t;
  };
  const double backward_stage_s = (backward_s + result.recompute_s) / s.pp;
  if (zero <= 1) {
    result.data_parallel_s = time(Collective::kAllReduce, trained, gradient_bytes);
    result.data_parallel_exposed_s = std::max(0.0, result.data_parallel_s - backward_s / s.pp);
    return;
  }
  const double scatter_s = time(Collective::kReduceScatter, trained, gradient_bytes);
  if (zero == 2) {
    const double gather_s = time(Collective::kAllGather, trained, s.weight_bytes);
    result.data_parallel_s = s.micro_batches * scatter_s + gather_s;
    result.data_parallel_exposed_s =
        s.micro_batches * std::max(0.0, scatter_s - backward_stage_s) + gather_s;
    return;
  }
  const double gather_s = time(Collective::kAllGather, params, s.weight_bytes);
  const double forward_stage_s = (result.latency_s - backward_s) / s.pp;
  result.data_parallel_s = s.micro_batches * (2 * gather_s + scatter_s);
  result.data_parallel_exposed_s =
      s.micro_batches * (std::max(0.0, gather_s - forward_stage_s) +
                         std::max(0.0, gather_s + scatter_s - backward_stage_s));
}

}  // namespace capcalc::detail
