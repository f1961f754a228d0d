// Elementwise operators of the native format: normalisations, softmax, broadcasting binary
// operators and learned tokens and positions (the activations are infer_unary, in infer.hpp).
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "checked.hpp"
#include "count_formulas.hpp"
#include "ops/helpers.hpp"
#include "ops/infer.hpp"

namespace capcalc::native_ops {

// ---------------------------------------------------------------------------------------------
// Normalisation

OpResult infer_layernorm(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 1);
  const bool affine = ctx.attrs.flag("affine", true);
  const bool bias = ctx.attrs.flag("bias", true);
  OpResult result = elementwise(ctx, in, formulas::kLayerNormFlops);
  result.counts.params = affine ? checked_mul(in.back(), bias ? 2 : 1) : 0;
  result.counts.weight_elements_read = result.counts.params;
  result.param_tensors = affine ? (bias ? 2 : 1) : 0;
  return result;
}

OpResult infer_rmsnorm(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 1);
  OpResult result = elementwise(ctx, in, formulas::kRmsNormFlops);
  result.counts.params = in.back();
  result.counts.weight_elements_read = result.counts.params;
  return result;
}

OpResult infer_batchnorm(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 2);
  // Inference folds the statistics into one scale and shift per channel.
  OpResult result = elementwise(ctx, in, formulas::kBatchNormFlops);
  result.counts.params = checked_mul(in[1], 2);
  result.param_tensors = 2;                                    // Scale and shift.
  result.counts.weight_elements_read = checked_mul(in[1], 4);  // Scale, shift, mean, variance.
  return result;
}

OpResult infer_groupnorm(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 2);
  const std::int64_t groups = ctx.attrs.positive("groups");
  if (in[1] % groups != 0) {
    ctx.attrs.fail_at("groups", fmt::format("groups = {} must divide the {} channels of {}", groups,
                                            in[1], shape_to_string(in)));
  }
  OpResult result = elementwise(ctx, in, formulas::kGroupNormFlops);
  result.counts.params = checked_mul(in[1], 2);
  result.param_tensors = 2;  // Scale and shift.
  result.counts.weight_elements_read = result.counts.params;
  return result;
}

// ---------------------------------------------------------------------------------------------
// Elementwise

OpResult infer_softmax(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 1);
  axis_index(ctx, "axis", ctx.attrs.integer("axis", -1), in.size());
  return elementwise(ctx, in, formulas::kSoftmaxFlops);
}

OpResult infer_binary(OpContext& ctx) {
  Shape out = *ctx.inputs[0];
  for (std::size_t i = 1; i < ctx.inputs.size(); ++i) {
    const std::optional<Shape> next = broadcast(out, *ctx.inputs[i]);
    if (!next) {
      ctx.fail(fmt::format("shapes {} and {} do not broadcast", shape_to_string(out),
                           shape_to_string(*ctx.inputs[i])));
    }
    out = *next;
  }
  return elementwise(ctx, out, static_cast<std::int64_t>(ctx.inputs.size()) - 1);
}

// ---------------------------------------------------------------------------------------------
// Learned tokens and positions (ViT, BERT, GPT-2)

OpResult infer_class_token(OpContext& ctx) {
  const Shape& in = expect_rank(ctx, 0, 3, "[batch, seq, features]");
  const std::int64_t tokens = ctx.attrs.positive("tokens", 1);
  Shape out = in;
  out[1] = checked_add(out[1], tokens);
  OpResult result = elementwise(ctx, out, 0);
  result.counts.params = checked_mul(tokens, in[2]);
  result.counts.weight_elements_read = result.counts.params;
  return result;
}

OpResult infer_position_embedding(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 2);
  const std::int64_t positions = ctx.attrs.positive("positions");
  const std::int64_t seq = in[in.size() - 2];
  if (seq > positions) {
    ctx.attrs.fail_at("positions", fmt::format("sequence length {} exceeds the {} learned "
                                               "positions",
                                               seq, positions));
  }
  OpResult result = elementwise(ctx, in, 1);
  result.counts.params = checked_mul(positions, in.back());
  result.counts.weight_elements_read = checked_mul(seq, in.back());
  return result;
}

}  // namespace capcalc::native_ops
