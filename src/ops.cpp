// The operator table of the native model format (declared in ops.hpp). Each row names its
// count function; the functions live by family in src/ops/ and are declared in ops/infer.hpp.
#include "ops.hpp"

#include <array>

#include "count_formulas.hpp"
#include "ops/infer.hpp"

namespace capcalc {

namespace native_ops {
namespace {

constexpr int kAny = -1;

constexpr std::array kOps = {
    OpKind{"conv1d", 1, 1, infer_conv1d, OpClass::kMatrix, Fusion::kNever},
    OpKind{"conv2d", 1, 1, infer_conv2d, OpClass::kMatrix, Fusion::kNever},
    OpKind{"conv_transpose2d", 1, 1, infer_conv_transpose2d, OpClass::kMatrix, Fusion::kNever},
    OpKind{"linear", 1, 1, infer_linear, OpClass::kMatrix, Fusion::kNever},
    OpKind{"matmul", 2, 2, infer_matmul, OpClass::kMatrix, Fusion::kNever},
    OpKind{"embedding", 1, 1, infer_embedding, OpClass::kDataMovement, Fusion::kNever},
    OpKind{"attention", 1, 2, infer_attention, OpClass::kAttention, Fusion::kNever},
    OpKind{"mla_attention", 1, 1, infer_mla_attention, OpClass::kAttention, Fusion::kNever},
    OpKind{"layernorm", 1, 1, infer_layernorm, OpClass::kNormalization, Fusion::kAlways},
    OpKind{"rmsnorm", 1, 1, infer_rmsnorm, OpClass::kNormalization, Fusion::kAlways},
    OpKind{"batchnorm", 1, 1, infer_batchnorm, OpClass::kNormalization, Fusion::kInferenceOnly},
    OpKind{"groupnorm", 1, 1, infer_groupnorm, OpClass::kNormalization, Fusion::kNever},
    OpKind{"relu", 1, 1, infer_unary<formulas::kReluFlops>, OpClass::kElementwise, Fusion::kAlways},
    OpKind{"gelu", 1, 1, infer_unary<formulas::kGeluFlops>, OpClass::kElementwise, Fusion::kAlways},
    // GELU's tanh form as Python operators (Hugging Face's NewGELUActivation, "gelu_new"): the
    // same FLOPs; eager runtimes launch each operator apart (data/runtimes.json).
    OpKind{"gelu_new", 1, 1, infer_unary<formulas::kGeluFlops>, OpClass::kElementwise,
           Fusion::kAlways},
    OpKind{"silu", 1, 1, infer_unary<formulas::kSiluFlops>, OpClass::kElementwise, Fusion::kAlways},
    OpKind{"sigmoid", 1, 1, infer_unary<formulas::kSigmoidFlops>, OpClass::kElementwise,
           Fusion::kAlways},
    OpKind{"tanh", 1, 1, infer_unary<formulas::kTanhFlops>, OpClass::kElementwise, Fusion::kAlways},
    OpKind{"softmax", 1, 1, infer_softmax, OpClass::kNormalization, Fusion::kAlways},
    OpKind{"add", 2, kAny, infer_binary, OpClass::kElementwise, Fusion::kAlways},
    OpKind{"mul", 2, kAny, infer_binary, OpClass::kElementwise, Fusion::kAlways},
    OpKind{"concat", 1, kAny, infer_concat, OpClass::kDataMovement, Fusion::kNever},
    OpKind{"maxpool2d", 1, 1, infer_maxpool2d, OpClass::kPooling, Fusion::kNever},
    OpKind{"avgpool2d", 1, 1, infer_avgpool2d, OpClass::kPooling, Fusion::kNever},
    OpKind{"adaptive_avgpool2d", 1, 1, infer_adaptive_avgpool2d, OpClass::kPooling, Fusion::kNever},
    OpKind{"global_avgpool", 1, 1, infer_global_avgpool, OpClass::kPooling, Fusion::kNever},
    OpKind{"flatten", 1, 1, infer_flatten, OpClass::kView, Fusion::kNever},
    OpKind{"reshape", 1, 1, infer_reshape, OpClass::kView, Fusion::kNever},
    OpKind{"transpose", 1, 1, infer_transpose, OpClass::kView, Fusion::kNever},
    OpKind{"permute", 1, 1, infer_permute, OpClass::kView, Fusion::kNever},
    OpKind{"select", 1, 1, infer_select, OpClass::kView, Fusion::kNever},
    OpKind{"slice", 1, 1, infer_slice, OpClass::kView, Fusion::kNever},
    OpKind{"dropout", 1, 1, infer_identity, OpClass::kView, Fusion::kNever},
    OpKind{"identity", 1, 1, infer_identity, OpClass::kView, Fusion::kNever},
    OpKind{"upsample", 1, 1, infer_upsample, OpClass::kDataMovement, Fusion::kNever},
    OpKind{"class_token", 1, 1, infer_class_token, OpClass::kDataMovement, Fusion::kNever},
    OpKind{"position_embedding", 1, 1, infer_position_embedding, OpClass::kElementwise,
           Fusion::kAlways},
    OpKind{"moe", 1, 1, infer_moe, OpClass::kMatrix, Fusion::kNever},
};

}  // namespace
}  // namespace native_ops

const OpKind* find_op(std::string_view name) {
  for (const OpKind& kind : native_ops::kOps) {
    if (kind.name == name) return &kind;
  }
  return nullptr;
}

std::vector<std::string_view> op_names() {
  std::vector<std::string_view> names;
  names.reserve(native_ops::kOps.size());
  for (const OpKind& kind : native_ops::kOps)
    names.push_back(kind.name);
  return names;
}

}  // namespace capcalc
