// Partial checkpointing in the planner's search: the fewest blocks a layout must recompute to
// fit (Megatron-Core's recompute_method block, recompute_num_layers N).
#pragma once

#include <functional>
#include <optional>

#include "capcalc/plan.hpp"
#include "capcalc/predict.hpp"

namespace capcalc::detail {

/// For `layout`, which checkpoints every block (`full` its pass, needing `checked_bytes` a
/// device; `none` the same layout's pass without checkpointing, needing `unchecked_bytes`):
/// the fewest blocks of each chunk whose checkpointing makes it fit `usable` bytes (time rises
/// with the blocks). The kept activations fall linearly with the share of blocks checkpointed
/// (make_step), so the share that fits is read off the two ends; `add` times each candidate
/// from there (the search's row) and returns the bytes it needs, and the next block is taken
/// while it does not fit. Nothing where the layout fits without checkpointing (that row is
/// faster), does not fit with it, or has one block a chunk.
std::optional<Layout> fewest_checkpointed_blocks(
    const LayerPass& none, double unchecked_bytes, const LayerPass& full, double checked_bytes,
    double usable, const Layout& layout,
    const std::function<double(const LayerPass&, const Layout&)>& add);

}  // namespace capcalc::detail
