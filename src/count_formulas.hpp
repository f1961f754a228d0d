// The counting rules of docs/model-format.md ("Operators") as plain functions of sizes, shared by
// the native operators (src/ops/) and the importers (import/onnx_rules.cpp), so that the same
// layer counts the same whichever file it comes from. All arithmetic is checked.
#pragma once

#include <algorithm>
#include <cstdint>

#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

#include "checked.hpp"

namespace capcalc::formulas {

// Other FLOPs per output element of the elementwise operators (docs/model-format.md's table).
constexpr std::int64_t kReluFlops = 1;
constexpr std::int64_t kGeluFlops = 8;     // tanh form: x³, 3 mul, 2 add, tanh.
constexpr std::int64_t kSiluFlops = 5;     // Sigmoid (4) and a multiply.
constexpr std::int64_t kSigmoidFlops = 4;  // Negate, exp, add, divide.
constexpr std::int64_t kTanhFlops = 5;
constexpr std::int64_t kSoftmaxFlops = 5;                // Max, subtract, exp, sum, divide.
constexpr std::int64_t kScoreFlops = 1 + kSoftmaxFlops;  // An attention score's scale and softmax.
constexpr std::int64_t kLayerNormFlops = 8;
constexpr std::int64_t kRmsNormFlops = 4;
constexpr std::int64_t kBatchNormFlops = 2;  // Inference: one scale and shift per element.
constexpr std::int64_t kGroupNormFlops = 8;
constexpr std::int64_t kBilinearFlops = 7;  // 4 weights applied and summed.

/// An op that reads `input_elements`, writes `output_elements` and does `per_output` non-MAC
/// FLOPs per output element; backward costs twice the other FLOPs.
inline LayerCounts elementwise_counts(std::int64_t input_elements, std::int64_t output_elements,
                                      std::int64_t per_output) {
  LayerCounts c;
  c.input_elements = input_elements;
  c.output_elements = output_elements;
  c.other_flops = checked_mul(output_elements, per_output);
  c.backward_other_flops = checked_mul(c.other_flops, 2);
  return c;
}

/// Backward of a layer with weights: the weight gradient costs the forward MACs, the input
/// gradient costs them again unless no input needs a gradient.
inline void add_weighted_backward(LayerCounts& c, bool any_input_needs_grad) {
  c.backward_macs = any_input_needs_grad ? checked_mul(c.macs, 2) : c.macs;
  c.backward_other_flops = checked_mul(c.other_flops, 2);
}

/// A convolution's forward counts. Direct: MACs = out · (C_in/groups) · k; transposed: each
/// input element scatters into (C_out/groups) · k outputs. Params are the formula's (weights
/// plus C_out with bias); the bias adds 1 FLOP per output.
struct ConvSizes {
  std::int64_t input_elements = 0;
  std::int64_t output_elements = 0;
  std::int64_t in_channels = 0;
  std::int64_t out_channels = 0;
  std::int64_t groups = 1;
  std::int64_t kernel_elements = 1;  ///< Product of the kernel's spatial sizes.
  bool bias = false;
  bool transposed = false;
};

inline LayerCounts conv_counts(const ConvSizes& s) {
  LayerCounts c;
  if (s.transposed) {
    c.macs = checked_mul(s.input_elements, s.out_channels / s.groups, s.kernel_elements);
    c.params = checked_mul(s.in_channels, s.out_channels / s.groups, s.kernel_elements);
  } else {
    c.macs = checked_mul(s.output_elements, s.in_channels / s.groups, s.kernel_elements);
    c.params = checked_mul(s.out_channels, s.in_channels / s.groups, s.kernel_elements);
  }
  if (s.bias) {
    c.params = checked_add(c.params, s.out_channels);
    c.other_flops = s.output_elements;
  }
  c.input_elements = s.input_elements;
  c.weight_elements_read = c.params;
  c.output_elements = s.output_elements;
  return c;
}

/// A dense layer applied to `rows` vectors of `in_features`: MACs = rows · in · out; params
/// in · out (0 for a tied weight) plus out with bias, which adds 1 FLOP per output.
inline LayerCounts linear_counts(std::int64_t rows, std::int64_t in_features,
                                 std::int64_t out_features, bool bias, bool tied) {
  LayerCounts c;
  c.output_elements = checked_mul(rows, out_features);
  c.macs = checked_mul(rows, in_features, out_features);
  c.weight_elements_read = checked_mul(in_features, out_features);
  c.params = tied ? 0 : c.weight_elements_read;
  if (bias) {
    c.params = checked_add(c.params, out_features);
    c.weight_elements_read = checked_add(c.weight_elements_read, out_features);
    c.other_flops = c.output_elements;
  }
  c.input_elements = checked_mul(rows, in_features);
  return c;
}

/// A product of two activations, [..., m, k] @ [..., k, n]: MACs = batch · m · n · k, all of
/// them score MACs; each operand that needs a gradient costs one product of the same size.
inline LayerCounts matmul_counts(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k,
                                 std::int64_t input_elements, std::int64_t output_elements,
                                 int operands_needing_grad) {
  LayerCounts c;
  c.macs = checked_mul(batch, m, n, k);
  c.score_macs = c.macs;
  c.input_elements = input_elements;
  c.output_elements = output_elements;
  c.backward_macs = checked_mul(c.macs, operands_needing_grad);
  return c;
}

// Query/key pairs scored by one head, given query length s, key length s_kv (the last s
// queries of s_kv positions when s < s_kv, as with a KV cache) and the counting option.
inline std::int64_t attention_pairs(std::int64_t s, std::int64_t s_kv, bool causal,
                                    std::int64_t window, CausalCounting counting) {
  if (!causal || counting == CausalCounting::kFull) return checked_mul(s, s_kv);
  // Query i (0-based) sees positions up to offset + i, the last `window` of them.
  const std::int64_t offset = s_kv - s;
  const std::int64_t w = window > 0 ? window : s_kv;
  // Queries with offset + i + 1 <= w see offset + i + 1 keys; the rest see w.
  const std::int64_t growing = std::clamp<std::int64_t>(w - offset, 0, s);
  const std::int64_t ramp =
      checked_add(checked_mul(growing, offset), checked_mul(growing, growing + 1) / 2);
  return checked_add(ramp, checked_mul(s - growing, w));
}

// Query/key pairs of chunked local attention (Llama 4's chunked_attention layers): position p
// sees the positions of its own chunk of `chunk` up to itself, p mod chunk + 1 keys; the s
// queries are the last of s_kv positions.
inline std::int64_t chunked_attention_pairs(std::int64_t s, std::int64_t s_kv, std::int64_t chunk,
                                            CausalCounting counting) {
  if (counting == CausalCounting::kFull) return checked_mul(s, s_kv);
  // Pairs of positions 0 .. n-1: whole chunks of chunk (chunk + 1) / 2, then the partial one.
  const auto upto = [chunk](std::int64_t n) {
    const std::int64_t rest = n % chunk;
    return checked_add(checked_mul(n / chunk, checked_mul(chunk, chunk + 1) / 2),
                       checked_mul(rest, rest + 1) / 2);
  };
  return upto(s_kv) - upto(s_kv - s);
}

// An attention layer's masked scores (batch x heads x masked pairs) kept apart in its counts:
// their products, `macs_per_score` each (QKᵀ and AV together), and their scale and softmax.
inline void mark_masked_scores(LayerCounts& c, std::int64_t masked_scores,
                               std::int64_t macs_per_score) {
  c.masked_score_macs = checked_mul(masked_scores, macs_per_score);
  c.masked_other_flops = checked_mul(masked_scores, kScoreFlops);
}

// Of the pairs counted under `counting`, those a causal mask hides (a key after its query, or
// outside the window or chunk): what kernels that skip masked tiles leave out. 0 unless every
// pair is counted.
inline std::int64_t masked_attention_pairs(std::int64_t s, std::int64_t s_kv, bool causal,
                                           std::int64_t window, std::int64_t chunk,
                                           CausalCounting counting) {
  if (!causal || counting != CausalCounting::kFull) return 0;
  const std::int64_t seen = chunk > 0
                                ? chunked_attention_pairs(s, s_kv, chunk, CausalCounting::kHalf)
                                : attention_pairs(s, s_kv, true, window, CausalCounting::kHalf);
  return checked_mul(s, s_kv) - seen;
}

}  // namespace capcalc::formulas
