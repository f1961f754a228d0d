// Helpers the native operator families (src/ops/*.cpp) share: checked axes and ranks, the
// counts of elementwise ops and views, window sizes and broadcasting. Internal to them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "capcalc/graph.hpp"

#include "ops.hpp"

namespace capcalc::native_ops {

/// `axis` (negative counts from the end) as an index into a shape of `rank`; fails at `key`.
std::size_t axis_index(OpContext& ctx, std::string_view key, std::int64_t axis, std::size_t rank);
/// Input `input`'s shape, which must have rank `rank`; `layout` names the axes in the message.
const Shape& expect_rank(OpContext& ctx, std::size_t input, std::size_t rank,
                         std::string_view layout);
/// Input `input`'s shape, which must have rank `rank` or more.
const Shape& expect_min_rank(OpContext& ctx, std::size_t input, std::size_t rank);
/// Elements of all inputs together.
std::int64_t sum_input_elements(const OpContext& ctx);

/// Counts for an op that reads its inputs, writes `output` and does `per_output` non-MAC FLOPs
/// per output element.
OpResult elementwise(OpContext& ctx, Shape output, std::int64_t per_output);
/// A view: `output` with no traffic and no time.
OpResult view_of(Shape output);
/// Adds the backward pass of a layer with weights to `counts`.
void weighted_backward(const OpContext& ctx, LayerCounts& counts);

/// Output length of a convolution or pooling window along one axis (PyTorch's formula).
std::int64_t window_output(OpContext& ctx, std::int64_t in, std::int64_t kernel,
                           std::int64_t stride, std::int64_t pad_total, std::int64_t dilation,
                           bool ceil_mode);
/// NumPy broadcasting of two shapes; empty optional if they do not broadcast.
std::optional<Shape> broadcast(const Shape& a, const Shape& b);

}  // namespace capcalc::native_ops
