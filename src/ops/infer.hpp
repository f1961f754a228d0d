// The count functions of the native operators, one per row of the table in src/ops.cpp, by the
// file that defines them. Each reads its layer's attributes, infers the output shape and counts
// the layer exactly. Internal to the operator table.
#pragma once

#include <cstdint>

#include "ops.hpp"
#include "ops/helpers.hpp"

namespace capcalc::native_ops {

// src/ops/matrix.cpp
OpResult infer_conv1d(OpContext& ctx);
OpResult infer_conv2d(OpContext& ctx);
OpResult infer_conv_transpose2d(OpContext& ctx);
OpResult infer_linear(OpContext& ctx);
OpResult infer_matmul(OpContext& ctx);
OpResult infer_embedding(OpContext& ctx);
OpResult infer_moe(OpContext& ctx);

// src/ops/attention.cpp
OpResult infer_attention(OpContext& ctx);
OpResult infer_mla_attention(OpContext& ctx);

// src/ops/elementwise.cpp
OpResult infer_layernorm(OpContext& ctx);
OpResult infer_rmsnorm(OpContext& ctx);
OpResult infer_batchnorm(OpContext& ctx);
OpResult infer_groupnorm(OpContext& ctx);
OpResult infer_softmax(OpContext& ctx);
OpResult infer_binary(OpContext& ctx);
OpResult infer_class_token(OpContext& ctx);
OpResult infer_position_embedding(OpContext& ctx);

// Activations: kFlopsPerElement (count_formulas.hpp) per element.
template <std::int64_t kFlopsPerElement>
OpResult infer_unary(OpContext& ctx) {
  return elementwise(ctx, *ctx.inputs[0], kFlopsPerElement);
}

// src/ops/pooling.cpp
OpResult infer_maxpool2d(OpContext& ctx);
OpResult infer_avgpool2d(OpContext& ctx);
OpResult infer_adaptive_avgpool2d(OpContext& ctx);
OpResult infer_global_avgpool(OpContext& ctx);

// src/ops/shape.cpp
OpResult infer_concat(OpContext& ctx);
OpResult infer_flatten(OpContext& ctx);
OpResult infer_reshape(OpContext& ctx);
OpResult infer_transpose(OpContext& ctx);
OpResult infer_permute(OpContext& ctx);
OpResult infer_select(OpContext& ctx);
OpResult infer_slice(OpContext& ctx);
OpResult infer_identity(OpContext& ctx);  // identity and dropout.
OpResult infer_upsample(OpContext& ctx);

}  // namespace capcalc::native_ops
