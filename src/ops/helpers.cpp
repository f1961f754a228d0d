// Helpers the operator families share (see helpers.hpp).
#include "ops/helpers.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "checked.hpp"
#include "count_formulas.hpp"

namespace capcalc::native_ops {

std::size_t axis_index(OpContext& ctx, std::string_view key, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  const std::int64_t normal = axis < 0 ? axis + r : axis;
  if (normal < 0 || normal >= r) {
    ctx.attrs.fail_at(key,
                      fmt::format("axis {} is out of range for a tensor of rank {}", axis, rank));
  }
  return static_cast<std::size_t>(normal);
}

const Shape& expect_rank(OpContext& ctx, std::size_t input, std::size_t rank,
                         std::string_view layout) {
  const Shape& shape = *ctx.inputs[input];
  if (shape.size() != rank) {
    ctx.fail(fmt::format("expected an input of rank {} {}, got {}", rank, layout,
                         shape_to_string(shape)));
  }
  return shape;
}

const Shape& expect_min_rank(OpContext& ctx, std::size_t input, std::size_t rank) {
  const Shape& shape = *ctx.inputs[input];
  if (shape.size() < rank) {
    ctx.fail(
        fmt::format("expected an input of rank {} or more, got {}", rank, shape_to_string(shape)));
  }
  return shape;
}

std::int64_t sum_input_elements(const OpContext& ctx) {
  std::int64_t total = 0;
  for (const Shape* shape : ctx.inputs)
    total = checked_add(total, element_count(*shape));
  return total;
}

// Counts for an op that reads its inputs, writes its output and does `per_output` non-MAC
// FLOPs per output element; the backward pass costs twice the other FLOPs.
OpResult elementwise(OpContext& ctx, Shape output, std::int64_t per_output) {
  OpResult result;
  result.counts =
      formulas::elementwise_counts(sum_input_elements(ctx), element_count(output), per_output);
  result.output = std::move(output);
  return result;
}

OpResult view_of(Shape output) {
  OpResult result;
  result.output = std::move(output);
  result.view = true;
  return result;
}

// Backward of a layer with weights: the weight gradient costs the forward MACs, the input
// gradient costs them again unless no input needs a gradient.
void weighted_backward(const OpContext& ctx, LayerCounts& counts) {
  formulas::add_weighted_backward(counts, ctx.any_input_needs_grad());
}

// Output length of a convolution or pooling window along one axis (PyTorch's formula).
std::int64_t window_output(OpContext& ctx, std::int64_t in, std::int64_t kernel,
                           std::int64_t stride, std::int64_t pad_total, std::int64_t dilation,
                           bool ceil_mode) {
  const std::int64_t span = dilation * (kernel - 1) + 1;
  const std::int64_t room = in + pad_total - span;
  if (room < 0) {
    ctx.fail(
        fmt::format("window of {} (kernel {}, dilation {}) is larger than the padded input "
                    "of {}",
                    span, kernel, dilation, in + pad_total));
  }
  std::int64_t out = room / stride + 1;
  if (ceil_mode && room % stride != 0) {
    ++out;
    // PyTorch: the last window must start inside the input or the left padding.
    if ((out - 1) * stride >= in + pad_total / 2) --out;
  }
  return out;
}

// NumPy broadcasting of two shapes; empty optional if they do not broadcast.
std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[out.size() - 1 - i] = std::max(x, y);
  }
  return out;
}

}  // namespace capcalc::native_ops
