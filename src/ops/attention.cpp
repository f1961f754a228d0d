// Attention operators of the native format: multi-head (grouped-query, windowed, chunked) and
// multi-head latent attention.
#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "checked.hpp"
#include "count_formulas.hpp"
#include "ops/helpers.hpp"
#include "ops/infer.hpp"

namespace capcalc::native_ops {

namespace {

// An attention layer's attributes and input sizes, checked.
struct AttentionSpec {
  std::int64_t batch = 0;
  std::int64_t s = 0;        // Queries per sample.
  std::int64_t d_model = 0;  // Query features.
  std::int64_t s_kv = 0;     // Keys per sample.
  std::int64_t d_kv = 0;     // Key/value features.
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t d_out = 0;
  bool causal = false;
  std::int64_t window = 0;
  std::int64_t chunk = 0;
  bool qkv_bias = false;
  bool out_bias = false;
  bool qk_norm = false;
  bool qk_norm_affine = false;
  bool sinks = false;
  bool rotary = false;
};

AttentionSpec read_attention(OpContext& ctx) {
  AttentionSpec a;
  const Shape& x = expect_rank(ctx, 0, 3, "[batch, seq, features]");
  const Shape& kv = ctx.inputs.size() > 1 ? expect_rank(ctx, 1, 3, "[batch, seq, features]") : x;
  if (kv[0] != x[0]) {
    ctx.fail(fmt::format("query {} and key/value {} have different batch sizes", shape_to_string(x),
                         shape_to_string(kv)));
  }
  a.batch = x[0];
  a.s = x[1];
  a.d_model = x[2];
  a.s_kv = kv[1];
  a.d_kv = kv[2];
  a.heads = ctx.attrs.positive("heads");
  a.kv_heads = ctx.attrs.positive("kv_heads", a.heads);
  if (a.heads % a.kv_heads != 0) {
    ctx.attrs.fail_at("kv_heads",
                      fmt::format("kv_heads = {} must divide heads = {}", a.kv_heads, a.heads));
  }
  if (!ctx.attrs.has("head_dim") && a.d_model % a.heads != 0) {
    ctx.attrs.fail_at("heads", fmt::format("features {} are not divisible by heads = {}; give "
                                           "head_dim",
                                           a.d_model, a.heads));
  }
  a.head_dim = ctx.attrs.positive("head_dim", a.d_model / a.heads);
  a.d_out = ctx.attrs.positive("out_features", a.d_model);
  a.causal = ctx.attrs.flag("causal", false);
  a.window = ctx.attrs.non_negative("window", 0);
  // Llama 4: chunked local attention, each query over its own chunk of `chunk` positions.
  a.chunk = ctx.attrs.non_negative("chunk", 0);
  const bool bias = ctx.attrs.flag("bias", true);
  // Qwen2 has biases on the Q, K and V projections but none on the output projection.
  a.qkv_bias = ctx.attrs.flag("qkv_bias", bias);
  a.out_bias = ctx.attrs.flag("out_bias", bias);
  // Qwen3 normalises each head's queries and keys (RMSNorm over head_dim, one scale vector for
  // the queries and one for the keys) before the product.
  a.qk_norm = ctx.attrs.flag("qk_norm", false);
  // Llama 4's is an L2 norm without scales (Llama4TextL2Norm).
  a.qk_norm_affine = ctx.attrs.flag("qk_norm_affine", true);
  // gpt-oss: a learned "sink" logit per head joins every query's softmax (one parameter per
  // head, one more logit per query and head).
  a.sinks = ctx.attrs.flag("sinks", false);
  // Rotary position embedding applied to Q and K (Llama, GPT-NeoX): not counted in FLOPs, as
  // the counters the counts are checked against leave it out; runtimes launch kernels for it.
  a.rotary = ctx.attrs.flag("rotary", false);
  if (a.window > 0 && !a.causal) ctx.attrs.fail_at("window", "a window needs \"causal\": true");
  if (a.chunk > 0 && !a.causal)
    ctx.attrs.fail_at("chunk", "chunked attention needs \"causal\": true");
  if (a.chunk > 0 && a.window > 0) ctx.attrs.fail_at("chunk", "give a window or a chunk, not both");
  if (a.causal && a.s > a.s_kv) {
    ctx.fail(fmt::format("causal attention with {} queries over {} keys", a.s, a.s_kv));
  }
  return a;
}

// Biases, query/key norms and sinks: parameters and elementwise FLOPs.
void add_attention_extras(const AttentionSpec& a, std::int64_t q_width, std::int64_t kv_width,
                          LayerCounts& c) {
  if (a.qkv_bias) {
    c.params = checked_add(c.params, checked_add(q_width, checked_mul(2, kv_width)));
    c.other_flops = checked_add(
        c.other_flops,
        checked_add(checked_mul(a.batch, a.s, q_width), checked_mul(a.batch, a.s_kv, 2, kv_width)));
  }
  if (a.out_bias) {
    c.params = checked_add(c.params, a.d_out);
    c.other_flops = checked_add(c.other_flops, checked_mul(a.batch, a.s, a.d_out));
  }
  if (a.qk_norm) {
    if (a.qk_norm_affine) c.params = checked_add(c.params, checked_mul(2, a.head_dim));
    c.other_flops = checked_add(
        c.other_flops,
        checked_mul(formulas::kRmsNormFlops, checked_add(checked_mul(a.batch, a.s, q_width),
                                                         checked_mul(a.batch, a.s_kv, kv_width))));
  }
  if (a.sinks) {
    c.params = checked_add(c.params, a.heads);
    c.other_flops = checked_add(c.other_flops, checked_mul(a.batch, a.heads, a.s, 5));
  }
}

}  // namespace

OpResult infer_attention(OpContext& ctx) {
  const AttentionSpec a = read_attention(ctx);
  const std::int64_t q_width = checked_mul(a.heads, a.head_dim);
  const std::int64_t kv_width = checked_mul(a.kv_heads, a.head_dim);
  // With a KV cache (LLM decode), self-attention's keys are the cached positions plus the new
  // ones; only the new tokens are projected, and kernels read exactly the cached keys (inside
  // the window), so pairs are counted exactly.
  // Only causal self-attention caches: an encoder's (an image's, BERT's) runs once.
  const bool self_attention = ctx.inputs.size() == 1 && a.causal;
  const std::int64_t cached = self_attention ? ctx.options.kv_cache_length : 0;
  const std::int64_t keys = checked_add(a.s_kv, cached);
  const CausalCounting counting = cached > 0 ? CausalCounting::kHalf : ctx.options.causal;
  const std::int64_t pairs =
      a.chunk > 0 ? formulas::chunked_attention_pairs(a.s, keys, a.chunk, counting)
                  : formulas::attention_pairs(a.s, keys, a.causal, a.window, counting);
  const std::int64_t q_macs = checked_mul(a.batch, a.s, a.d_model, q_width);
  const std::int64_t kv_macs = checked_mul(2, a.batch, a.s_kv, a.d_kv, kv_width);
  const std::int64_t out_macs = checked_mul(a.batch, a.s, q_width, a.d_out);
  const std::int64_t projection_macs = checked_add(checked_add(q_macs, kv_macs), out_macs);
  const std::int64_t score_macs =
      checked_mul(a.batch, a.heads, pairs, a.head_dim);  // Q·Kᵀ; AV same.
  const std::int64_t scores = checked_mul(a.batch, a.heads, pairs);
  const std::int64_t masked = checked_mul(
      a.batch, a.heads,
      formulas::masked_attention_pairs(a.s, keys, a.causal, a.window, a.chunk, counting));

  Shape out{a.batch, a.s, a.d_out};
  OpResult result;
  LayerCounts& c = result.counts;
  c.attention_heads = a.heads;
  c.params =
      checked_add(checked_add(checked_mul(a.d_model, q_width), checked_mul(2, a.d_kv, kv_width)),
                  checked_mul(q_width, a.d_out));
  // Scale and softmax on every score: 1 + 5 FLOPs.
  c.other_flops = checked_mul(scores, formulas::kScoreFlops);
  add_attention_extras(a, q_width, kv_width, c);
  c.macs = checked_add(projection_macs, checked_mul(score_macs, 2));
  c.score_macs = checked_mul(score_macs, 2);
  formulas::mark_masked_scores(c, masked, checked_mul(2, a.head_dim));
  c.input_elements = sum_input_elements(ctx);
  c.weight_elements_read = c.params;
  c.output_elements = element_count(out);
  // Q, K, V and the attention output are written and read once each; the scores stay on chip
  // (fused attention kernels).
  const std::int64_t intermediates =
      checked_add(checked_mul(2, a.batch, a.s, q_width), checked_mul(2, a.batch, a.s_kv, kv_width));
  c.input_elements = checked_add(c.input_elements, intermediates);
  c.output_elements = checked_add(c.output_elements, intermediates);
  c.saved_elements = intermediates / 2;  // Q, K, V and context, once each.
  c.attention_heads = a.heads;
  c.attention_kv_heads = a.kv_heads;
  c.attention_kv_per_token = checked_mul(2, kv_width);
  if (self_attention) {
    c.kv_cache_per_token = checked_mul(2, kv_width);
    // A chunked layer keeps at most one chunk (transformers' and vLLM's chunked caches).
    c.kv_cache_window = a.chunk > 0 ? a.chunk : a.window;
    c.kv_cache_heads = a.kv_heads;
  }
  if (cached > 0) {
    // Read the cache (the last `window` positions at most, the current chunk's); the new K, V
    // are already counted.
    const std::int64_t read = a.chunk > 0    ? cached % a.chunk
                              : a.window > 0 ? std::min(cached, a.window)
                                             : cached;
    c.kv_cache_read_elements = checked_mul(a.batch, read, 2, kv_width);
  }
  // Projections: the weight gradient always; the input gradient of the Q (K, V) projection
  // only if the query (key/value) input needs one. The output projection's input gradient is
  // always needed: it flows back into the Q, K and V weights. Q·Kᵀ and AV: 2 operands each.
  const bool q_grad = ctx.input_needs_grad[0];
  const bool kv_grad = ctx.input_needs_grad.size() > 1 ? ctx.input_needs_grad[1] : q_grad;
  c.backward_macs = checked_add(
      checked_add(checked_mul(q_macs, q_grad ? 2 : 1), checked_mul(kv_macs, kv_grad ? 2 : 1)),
      checked_add(checked_mul(out_macs, 2), checked_mul(score_macs, 4)));
  c.backward_other_flops = checked_mul(c.other_flops, 2);
  result.output = std::move(out);
  result.rotary = a.rotary;
  result.weight_tensors = 4 + (a.qkv_bias ? 3 : 0) + (a.out_bias ? 1 : 0);
  // LoRA on the four projections: d_model -> q, d_kv -> k and v, q -> d_out.
  const std::int64_t q_sides = checked_add(a.d_model, q_width);
  const std::int64_t kv_sides = checked_mul(2, checked_add(a.d_kv, kv_width));
  const std::int64_t out_sides = checked_add(q_width, a.d_out);
  result.adapters.params_per_rank = checked_add(checked_add(q_sides, kv_sides), out_sides);
  result.adapters.macs_per_rank = checked_add(
      checked_add(checked_mul(a.batch, a.s, q_sides), checked_mul(a.batch, a.s_kv, kv_sides)),
      checked_mul(a.batch, a.s, out_sides));
  result.bias_tensors = (a.qkv_bias ? 3 : 0) + (a.out_bias ? 1 : 0);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Latent attention (DeepSeek)

// Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): queries through an optional low-rank
// pair (q_a_proj to q_lora_rank, RMSNorm, q_b_proj to heads x (nope + rope)), keys and values
// through one shared latent (kv_a_proj_with_mqa to kv_lora_rank plus a shared rope key,
// RMSNorm, kv_b_proj up to heads x (nope + v)), output projection from heads x v.
// The cache keeps the latent and the rope key, kv_lora_rank + rope per token, as serving
// engines do (vLLM, SGLang, FlashMLA). Without a cache (training, prefill) keys and values are
// expanded and attention runs per head over nope + rope; with one (decode) kv_b_proj is
// absorbed: queries map into the latent, attention runs over kv_lora_rank + rope per key and
// kv_lora_rank per value, and the context maps back out (DeepSeek-V2 paper, section 2.1.2).
OpResult infer_mla_attention(OpContext& ctx) {
  const Shape& x = expect_rank(ctx, 0, 3, "[batch, seq, features]");
  const std::int64_t batch = x[0];
  const std::int64_t s = x[1];
  const std::int64_t d = x[2];
  const std::int64_t heads = ctx.attrs.positive("heads");
  const std::int64_t q_rank = ctx.attrs.non_negative("q_lora_rank", 0);
  const std::int64_t kv_rank = ctx.attrs.positive("kv_lora_rank");
  const std::int64_t nope = ctx.attrs.positive("qk_nope_head_dim");
  const std::int64_t rope = ctx.attrs.positive("qk_rope_head_dim");
  const std::int64_t v_dim = ctx.attrs.positive("v_head_dim");
  const std::int64_t d_out = ctx.attrs.positive("out_features", d);
  const bool causal = ctx.attrs.flag("causal", true);
  const std::int64_t window = ctx.attrs.non_negative("window", 0);
  if (window > 0 && !causal) ctx.attrs.fail_at("window", "a window needs \"causal\": true");

  const std::int64_t qk_dim = checked_add(nope, rope);
  const std::int64_t q_width = checked_mul(heads, qk_dim);
  const std::int64_t latent = checked_add(kv_rank, rope);  // Cached per token.
  const std::int64_t up_width = checked_mul(heads, checked_add(nope, v_dim));
  const std::int64_t cached = causal ? ctx.options.kv_cache_length : 0;
  const std::int64_t keys = checked_add(s, cached);
  const CausalCounting counting = cached > 0 ? CausalCounting::kHalf : ctx.options.causal;
  const std::int64_t pairs = formulas::attention_pairs(s, keys, causal, window, counting);
  const std::int64_t masked = checked_mul(
      batch, heads, formulas::masked_attention_pairs(s, keys, causal, window, 0, counting));
  const std::int64_t tokens = checked_mul(batch, s);

  OpResult result;
  LayerCounts& c = result.counts;
  // Weights: the query path, the latent down-projection and its norm, the up-projection, out.
  const std::int64_t q_params =
      q_rank > 0
          ? checked_add(checked_add(checked_mul(d, q_rank), q_rank), checked_mul(q_rank, q_width))
          : checked_mul(d, q_width);
  c.params =
      checked_add(checked_add(q_params, checked_add(checked_mul(d, latent), kv_rank)),
                  checked_add(checked_mul(kv_rank, up_width), checked_mul(heads, v_dim, d_out)));
  const std::int64_t q_macs =
      q_rank > 0
          ? checked_mul(tokens, checked_add(checked_mul(d, q_rank), checked_mul(q_rank, q_width)))
          : checked_mul(tokens, d, q_width);
  const std::int64_t down_macs = checked_mul(tokens, d, latent);
  const std::int64_t out_macs = checked_mul(tokens, heads, v_dim, d_out);
  std::int64_t up_macs = 0;  // kv_b_proj: expanding the new keys and values, or absorbed.
  std::int64_t qk_macs = 0;
  std::int64_t av_macs = 0;
  if (cached == 0) {
    up_macs = checked_mul(tokens, kv_rank, up_width);
    qk_macs = checked_mul(batch, heads, pairs, qk_dim);
    av_macs = checked_mul(batch, heads, pairs, v_dim);
  } else {
    // Queries' nope part into the latent, and the latent context out to v per head.
    up_macs = checked_mul(tokens, heads, kv_rank, checked_add(nope, v_dim));
    qk_macs = checked_mul(batch, heads, pairs, latent);
    av_macs = checked_mul(batch, heads, pairs, kv_rank);
  }
  const std::int64_t projection_macs =
      checked_add(checked_add(q_macs, down_macs), checked_add(up_macs, out_macs));
  c.attention_heads = heads;
  // The expanded keys (with their rotary part) and values each head's scores read.
  c.attention_kv_per_token = checked_mul(heads, checked_add(qk_dim, v_dim));
  c.score_macs = checked_add(qk_macs, av_macs);
  c.macs = checked_add(projection_macs, c.score_macs);
  const std::int64_t scores = checked_mul(batch, heads, pairs);
  // Scale and softmax on every score (1 + 5), RMSNorm of the latents.
  c.other_flops =
      checked_add(checked_mul(scores, formulas::kScoreFlops),
                  checked_mul(formulas::kRmsNormFlops, tokens, checked_add(q_rank, kv_rank)));
  // Masked pairs only without a cache (a cache counts pairs exactly): over qk_dim and v_dim.
  formulas::mark_masked_scores(c, masked, checked_add(qk_dim, v_dim));
  c.weight_elements_read = c.params;
  // Written once and read once each: the latents, the queries, the expanded keys and values
  // (without a cache) and the context.
  const std::int64_t intermediates = checked_mul(
      tokens, checked_add(checked_add(q_rank, latent),
                          checked_add(q_width, checked_add(cached == 0 ? up_width : 0,
                                                           checked_mul(heads, v_dim)))));
  c.input_elements = checked_add(sum_input_elements(ctx), intermediates);
  Shape out{batch, s, d_out};
  c.output_elements = checked_add(element_count(out), intermediates);
  c.saved_elements = intermediates;
  if (cached == 0) {
    // Megatron-Core's mla_up_proj recomputation drops the queries and the expanded keys and
    // values after the scores have read them and makes them again from the latents in backward
    // (multi_latent_attention.py, qkv_up_proj_and_rope_apply): the query projection from its
    // input (the query latent, or the layer's input without one) and kv_b_proj.
    const std::int64_t q_in = q_rank > 0 ? q_rank : d;
    const std::int64_t q_up_params = checked_mul(q_in, q_width);
    const std::int64_t kv_up_params = checked_mul(kv_rank, up_width);
    c.recomputable.elements = checked_mul(tokens, checked_add(q_width, up_width));
    c.recomputable.macs = checked_mul(tokens, checked_add(q_up_params, kv_up_params));
    c.recomputable.moved_elements = checked_add(
        checked_add(checked_mul(tokens, checked_add(q_in, kv_rank)), c.recomputable.elements),
        checked_add(q_up_params, kv_up_params));
  }
  if (causal) {
    c.kv_cache_per_token = latent;
    c.kv_cache_window = window;
    c.kv_cache_heads = 1;  // One latent for all heads: every tensor-parallel device keeps it.
  }
  c.attention_heads = heads;
  if (cached > 0) {
    const std::int64_t read = window > 0 ? std::min(cached, window) : cached;
    c.kv_cache_read_elements = checked_mul(batch, read, latent);
  }
  // Weight and input gradients of every projection (the first one's input gradient only if
  // the input needs one); both operands of the two products.
  const std::int64_t reads_input =
      checked_add(q_rank > 0 ? checked_mul(tokens, d, q_rank) : q_macs, down_macs);
  c.backward_macs =
      checked_add(checked_mul(projection_macs, 2) - (ctx.input_needs_grad[0] ? 0 : reads_input),
                  checked_mul(c.score_macs, 2));
  c.backward_other_flops = checked_mul(c.other_flops, 2);
  // q (or q_a and q_b), kv_a, kv_b and o: DeepSeek's projections have no biases.
  result.weight_tensors = q_rank > 0 ? 5 : 4;
  result.output = std::move(out);
  return result;
}

}  // namespace capcalc::native_ops
