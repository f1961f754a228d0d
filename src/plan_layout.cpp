// A layout: its description, the workload it runs, the shape of a graph that bounds the
// search, and partial checkpointing's fewest blocks (plan.hpp, plan_checkpoint.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <set>
#include <string>

#include <fmt/format.h>

#include "plan_checkpoint.hpp"

namespace capcalc {

std::string layout_text(const Layout& l) {
  std::string text = fmt::format("TP {}, PP {}, ", l.tensor_parallel, l.pipeline_parallel);
  if (l.context_parallel > 1) text += fmt::format("CP {}, ", l.context_parallel);
  if (l.expert_parallel > 1) {
    text += fmt::format("EP {}{}, ", l.expert_parallel, l.whole_experts ? " (whole experts)" : "");
  }
  text += fmt::format("DP {}", l.data_parallel);
  if (l.virtual_stages > 1) text += fmt::format(", V {}", l.virtual_stages);
  if (l.zero_stage > 0) text += fmt::format(", ZeRO-{}", l.zero_stage);
  text += fmt::format(", mb {} x {}", l.micro_batch_size, l.micro_batches);
  if (l.checkpointing) {
    text += l.checkpoint_layers > 0 ? fmt::format(", ckpt {} block{}", l.checkpoint_layers,
                                                  l.checkpoint_layers == 1 ? "" : "s")
                                    : std::string(", ckpt");
  }
  if (l.selective_recompute) text += ", selective";
  return text;
}

PlanShape plan_shape(const Graph& graph) {
  PlanShape shape;
  std::set<std::int32_t> attention_groups;
  std::set<std::int32_t> groups;
  for (const Layer& layer : graph.layers) {
    groups.insert(layer.group);
    if (layer.counts.attention_heads <= 0) continue;
    attention_groups.insert(layer.group);
    shape.heads = std::gcd(shape.heads, layer.counts.attention_heads);
    // Latent attention keeps one latent (kv_cache_heads 1) that every device holds whole: it
    // does not constrain the split; cross-attention without a cache counts its heads.
    const std::int64_t kv = layer.counts.kv_cache_heads;
    if (kv > 1) shape.kv_heads = std::gcd(shape.kv_heads, kv);
  }
  for (const Layer& layer : graph.layers) {
    if (layer.counts.experts > 0) shape.experts = std::gcd(shape.experts, layer.counts.experts);
  }
  if (shape.heads > 0 && shape.kv_heads == 0) shape.kv_heads = shape.heads;
  const auto blocks =
      static_cast<std::int64_t>(attention_groups.empty() ? groups.size() : attention_groups.size());
  shape.blocks = std::max<std::int64_t>(blocks, 1);
  return shape;
}

Workload plan_workload(const PlanRequest& request, const Layout& layout) {
  Workload w;
  w.precision = layout.precision;
  w.mode = Mode::kTraining;
  w.profile = request.profile;
  w.runtime = request.runtime;
  if (layout.precision == Precision::kFp8) w.fp8_recipe = request.fp8_recipe;
  w.optimizer = request.optimizer;
  w.devices = layout.devices;
  w.tensor_parallel = layout.tensor_parallel;
  w.pipeline_parallel = layout.pipeline_parallel;
  w.context_parallel = layout.context_parallel;
  w.expert_parallel = layout.expert_parallel;
  if (layout.whole_experts) w.expert_tensor_parallel = 1;
  w.moe_imbalance = request.moe_imbalance;
  if (layout.expert_parallel > 1) w.moe_dispatcher = request.moe_dispatcher;
  w.lora_rank = request.lora_rank;
  w.lora_attention_only = request.lora_attention_only;
  w.virtual_stages = layout.virtual_stages;
  w.micro_batches = layout.micro_batches;
  w.zero_stage = layout.zero_stage;
  w.checkpointing = layout.checkpointing;
  w.checkpoint_layers = layout.checkpoint_layers;
  if (layout.selective_recompute) w.recompute = request.recompute;
  return w;
}

namespace detail {

std::optional<Layout> fewest_checkpointed_blocks(
    const LayerPass& none, double unchecked_bytes, const LayerPass& full, double checked_bytes,
    double usable, const Layout& layout,
    const std::function<double(const LayerPass&, const Layout&)>& add) {
  if (!(unchecked_bytes > usable && std::isfinite(unchecked_bytes) && checked_bytes <= usable &&
        checked_bytes < unchecked_bytes)) {
    return std::nullopt;
  }
  // The first N blocks of each of the P x V chunks of an even split: the share make_step()
  // takes for --checkpoint-layers N.
  const std::int64_t blocks = std::max<std::int64_t>(1, full.checkpoint_blocks);
  const std::int64_t chunks = layout.pipeline_parallel * layout.virtual_stages;
  // At most all but one of a chunk's blocks (n x chunks < blocks: a share under 1).
  const std::int64_t most = (blocks + chunks - 1) / chunks - 1;
  if (most < 1) return std::nullopt;
  const double share = (unchecked_bytes - usable) / (unchecked_bytes - checked_bytes);
  const auto first = static_cast<std::int64_t>(
      std::ceil(share * static_cast<double>(blocks) / static_cast<double>(chunks) - 1e-9));
  for (std::int64_t n = std::max<std::int64_t>(1, first); n <= most; ++n) {
    Layout partial = layout;
    partial.checkpoint_layers = n;
    const LayerPass pass = mix_checkpoint_passes(
        none, full, static_cast<double>(n * chunks) / static_cast<double>(blocks));
    if (add(pass, partial) <= usable) return partial;
  }
  return std::nullopt;
}

}  // namespace detail
}  // namespace capcalc
