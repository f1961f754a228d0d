// Matrix operators of the native format: convolutions, linear, matmul, embedding and the
// mixture of experts.
#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "checked.hpp"
#include "count_formulas.hpp"
#include "ops/helpers.hpp"
#include "ops/infer.hpp"
#include "spellcheck.hpp"

namespace capcalc::native_ops {

// ---------------------------------------------------------------------------------------------
// Convolutions

namespace {

struct Padding {
  std::vector<std::int64_t> total;  // Both sides together, per spatial axis.
  bool same = false;
};

Padding read_padding(OpContext& ctx, std::size_t spatial) {
  Padding padding;
  if (ctx.attrs.is_string("padding")) {
    const std::string mode = ctx.attrs.text("padding", "");
    if (mode == "same" || mode == "valid") {
      padding.same = mode == "same";
      padding.total.assign(spatial, 0);
      return padding;
    }
    // Any other string is an integer expression.
  }
  for (std::int64_t p : ctx.attrs.per_axis("padding", spatial, 0, 0))
    padding.total.push_back(2 * p);
  return padding;
}

// conv1d / conv2d / conv_transpose2d share this: `spatial` axes after [N, C].
OpResult convolution(OpContext& ctx, std::size_t spatial, bool transposed) {
  const std::string layout = spatial == 1 ? "[N, C, L]" : "[N, C, H, W]";
  const Shape& in = expect_rank(ctx, 0, spatial + 2, layout);
  const std::int64_t out_channels = ctx.attrs.positive("out_channels");
  if (!ctx.attrs.has("kernel")) ctx.attrs.integer("kernel");  // Reports it as missing.
  const std::vector<std::int64_t> kernel = ctx.attrs.per_axis("kernel", spatial, 1, 1);
  const std::vector<std::int64_t> stride = ctx.attrs.per_axis("stride", spatial, 1, 1);
  const std::vector<std::int64_t> dilation = ctx.attrs.per_axis("dilation", spatial, 1, 1);
  const std::int64_t groups = ctx.attrs.positive("groups", 1);
  const bool bias = ctx.attrs.flag("bias", true);
  std::vector<std::int64_t> output_padding(spatial, 0);
  if (transposed) output_padding = ctx.attrs.per_axis("output_padding", spatial, 0, 0);
  const Padding padding = transposed ? Padding{[&] {
    std::vector<std::int64_t> total;
    for (std::int64_t p : ctx.attrs.per_axis("padding", spatial, 0, 0))
      total.push_back(2 * p);
    return total;
  }()}
                                     : read_padding(ctx, spatial);

  const std::int64_t in_channels = in[1];
  if (auto declared = ctx.attrs.optional_positive("in_channels");
      declared && *declared != in_channels) {
    ctx.attrs.fail_at("in_channels", fmt::format("in_channels is {} but the input {} has {}",
                                                 *declared, shape_to_string(in), in_channels));
  }
  if (in_channels % groups != 0 || out_channels % groups != 0) {
    ctx.attrs.fail_at("groups", fmt::format("groups = {} must divide both in_channels ({}) and "
                                            "out_channels ({})",
                                            groups, in_channels, out_channels));
  }

  Shape out{in[0], out_channels};
  for (std::size_t a = 0; a < spatial; ++a) {
    const std::int64_t size = in[a + 2];
    if (transposed) {
      if (output_padding[a] >= std::max(stride[a], dilation[a])) {
        ctx.attrs.fail_at("output_padding",
                          "output_padding must be smaller than stride or "
                          "dilation");
      }
      const std::int64_t o = (size - 1) * stride[a] - padding.total[a] +
                             dilation[a] * (kernel[a] - 1) + output_padding[a] + 1;
      if (o <= 0) ctx.fail(fmt::format("output size {} along axis {} is not positive", o, a + 2));
      out.push_back(o);
    } else if (padding.same) {
      out.push_back((size + stride[a] - 1) / stride[a]);  // TensorFlow's "same": ceil(in / s).
    } else {
      out.push_back(
          window_output(ctx, size, kernel[a], stride[a], padding.total[a], dilation[a], false));
    }
  }

  std::int64_t kernel_elements = 1;
  for (std::int64_t k : kernel)
    kernel_elements = checked_mul(kernel_elements, k);

  OpResult result;
  LayerCounts& c = result.counts;
  c = formulas::conv_counts({element_count(in), element_count(out), in_channels, out_channels,
                             groups, kernel_elements, bias, transposed});
  weighted_backward(ctx, c);
  // Implicit GEMM per group; a transposed convolution scatters each input pixel's product with
  // the kernel (col2im), so its rows are input pixels and its columns channels x kernel.
  const std::int64_t per_group_in = in_channels / groups;
  const std::int64_t per_group_out = out_channels / groups;
  result.weight_tensors = bias ? 2 : 1;
  result.bias_tensors = bias ? 1 : 0;
  result.gemm = transposed
                    ? GemmView{element_count(in) / in_channels,
                               checked_mul(per_group_out, kernel_elements), per_group_in, groups}
                    : GemmView{element_count(out) / out_channels, per_group_out,
                               checked_mul(per_group_in, kernel_elements), groups};
  result.output = std::move(out);
  return result;
}

}  // namespace

OpResult infer_conv1d(OpContext& ctx) {
  return convolution(ctx, 1, false);
}
OpResult infer_conv2d(OpContext& ctx) {
  return convolution(ctx, 2, false);
}
OpResult infer_conv_transpose2d(OpContext& ctx) {
  return convolution(ctx, 2, true);
}

// ---------------------------------------------------------------------------------------------
// Dense layers

OpResult infer_linear(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 1);
  const std::int64_t in_features = in.back();
  const std::int64_t out_features = ctx.attrs.positive("out_features");
  const bool bias = ctx.attrs.flag("bias", true);
  if (auto declared = ctx.attrs.optional_positive("in_features");
      declared && *declared != in_features) {
    ctx.attrs.fail_at("in_features", fmt::format("in_features is {} but the input {} has {}",
                                                 *declared, shape_to_string(in), in_features));
  }
  bool tied = false;
  if (auto target = ctx.attrs.optional_text("tied_to")) {
    const Layer* layer = ctx.find_layer(*target);
    if (layer == nullptr || (layer->op != "embedding" && layer->op != "linear")) {
      ctx.attrs.fail_at("tied_to",
                        fmt::format("tied_to must name an earlier embedding or linear layer, got "
                                    "\"{}\"",
                                    *target));
    }
    // A linear shares another's weight (a multi-token-prediction head, the model's own): the
    // same product, in features by out features.
    if (layer->op == "linear") {
      if (!layer->traits.gemm || layer->traits.gemm->k != in_features ||
          layer->traits.gemm->n != out_features) {
        ctx.attrs.fail_at("tied_to", fmt::format("cannot tie a {}x{} linear to linear \"{}\" of "
                                                 "another shape",
                                                 in_features, out_features, *target));
      }
    } else if (const std::int64_t rows = layer->counts.params / layer->output.back();
               layer->output.back() != in_features || rows != out_features) {
      ctx.attrs.fail_at(
          "tied_to", fmt::format("cannot tie a {}x{} linear to embedding \"{}\" of "
                                 "{}x{}",
                                 in_features, out_features, *target, rows, layer->output.back()));
    }
    tied = true;
  }

  Shape out = in;
  out.back() = out_features;
  OpResult result;
  LayerCounts& c = result.counts;
  const std::int64_t rows = element_count(in) / in_features;
  c = formulas::linear_counts(rows, in_features, out_features, bias, tied);
  weighted_backward(ctx, c);
  result.gemm = GemmView{rows, out_features, in_features, 1};
  result.weight_tensors = bias ? 2 : 1;
  result.bias_tensors = bias ? 1 : 0;
  result.output = std::move(out);
  return result;
}

OpResult infer_matmul(OpContext& ctx) {
  const Shape& a = expect_min_rank(ctx, 0, 2);
  const Shape& b = expect_min_rank(ctx, 1, 2);
  const bool transpose_b = ctx.attrs.flag("transpose_b", false);
  const std::int64_t m = a[a.size() - 2];
  const std::int64_t k = a.back();
  const std::int64_t kb = transpose_b ? b.back() : b[b.size() - 2];
  const std::int64_t n = transpose_b ? b[b.size() - 2] : b.back();
  if (k != kb) {
    ctx.fail(fmt::format("cannot multiply {} by {}{}: inner sizes {} and {} differ",
                         shape_to_string(a), shape_to_string(b), transpose_b ? " (transposed)" : "",
                         k, kb));
  }
  const Shape batch_a(a.begin(), a.end() - 2);
  const Shape batch_b(b.begin(), b.end() - 2);
  const std::optional<Shape> batch = broadcast(batch_a, batch_b);
  if (!batch) {
    ctx.fail(fmt::format("batch axes of {} and {} do not broadcast", shape_to_string(a),
                         shape_to_string(b)));
  }
  Shape out = *batch;
  out.push_back(m);
  out.push_back(n);

  OpResult result;
  const auto needing_grad =
      static_cast<int>(std::count(ctx.input_needs_grad.begin(), ctx.input_needs_grad.end(), true));
  result.counts = formulas::matmul_counts(element_count(*batch), m, n, k, sum_input_elements(ctx),
                                          element_count(out), needing_grad);
  result.gemm = GemmView{m, n, k, element_count(*batch)};
  result.output = std::move(out);
  return result;
}

OpResult infer_embedding(OpContext& ctx) {
  const Shape& ids = *ctx.inputs[0];
  const std::int64_t rows = ctx.attrs.positive("num_embeddings");
  const std::int64_t dim = ctx.attrs.positive("embedding_dim");
  Shape out = ids;
  out.push_back(dim);
  OpResult result;
  LayerCounts& c = result.counts;
  c.params = checked_mul(rows, dim);
  c.input_elements = element_count(ids);
  c.output_elements = element_count(out);
  c.weight_elements_read = c.output_elements;  // A gather reads one row per id.
  c.backward_other_flops = c.output_elements;  // The weight gradient scatter-adds each row.
  result.output = std::move(out);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Mixture of experts (Mixtral's sparse MoE block)

namespace {

// DeepSeek's group-limited routing: a token's experts all in groups_per_token of `groups`
// equal groups (n_group, topk_group); it changes no count, only where the tokens go.
void set_routing_groups(OpContext& ctx, LayerCounts& c) {
  const std::int64_t experts = c.experts;
  const std::int64_t top_k = c.experts_per_token;
  const std::int64_t groups = ctx.attrs.positive("groups", 1);
  const std::int64_t groups_per_token = ctx.attrs.positive("groups_per_token", groups);
  if (experts % groups != 0) {
    ctx.attrs.fail_at("groups",
                      fmt::format("groups = {} does not divide experts = {}", groups, experts));
  }
  if (groups_per_token > groups) {
    ctx.attrs.fail_at("groups_per_token", fmt::format("groups_per_token = {} exceeds groups = {}",
                                                      groups_per_token, groups));
  }
  if (top_k > groups_per_token * (experts / groups)) {
    ctx.attrs.fail_at("groups_per_token",
                      fmt::format("{} groups of {} experts hold fewer than experts_per_token = {}",
                                  groups_per_token, experts / groups, top_k));
  }
  if (groups_per_token < groups) {
    c.expert_groups = groups;
    c.expert_groups_per_token = groups_per_token;
  }
}

}  // namespace

// A router (Linear d -> experts, no bias unless router_bias) picks experts_per_token experts
// per token; each expert is a SwiGLU MLP down(silu(gate(x)) * up(x)) with `hidden` units, no
// biases unless expert_bias. Shazeer et
// al. 2017 (arXiv:1701.06538); Jiang et al. 2024, Mixtral of Experts (arXiv:2401.04088), and
// Hugging Face's MixtralSparseMoeBlock. Params count every expert; MACs only the chosen ones.
OpResult infer_moe(OpContext& ctx) {
  const Shape& in = expect_min_rank(ctx, 0, 1);
  const std::int64_t experts = ctx.attrs.positive("experts");
  const std::int64_t top_k = ctx.attrs.positive("experts_per_token");
  const std::int64_t hidden = ctx.attrs.positive("hidden");
  const std::string kind = ctx.attrs.text("kind", "swiglu");
  if (kind != "swiglu") {
    ctx.attrs.fail_at(
        "kind", with_suggestion(fmt::format("unknown expert kind \"{}\"", kind), kind, {"swiglu"}));
  }
  if (top_k > experts) {
    ctx.attrs.fail_at("experts_per_token",
                      fmt::format("experts_per_token = {} exceeds experts = {}", top_k, experts));
  }
  // DeepSeek's MoE: an always-on shared SwiGLU MLP of shared_hidden beside the routed
  // experts. A per-expert router bias: DeepSeek-V3's e_score_correction_bias, gpt-oss's.
  const std::int64_t shared_hidden = ctx.attrs.non_negative("shared_hidden", 0);
  // Qwen2-MoE: the shared MLP's output scaled by sigmoid(x · w), w of d.
  const bool shared_gate = ctx.attrs.flag("shared_gate", false);
  if (shared_gate && shared_hidden == 0) {
    ctx.attrs.fail_at("shared_gate", "a shared_gate needs a shared expert (shared_hidden)");
  }
  const bool router_bias = ctx.attrs.flag("router_bias", false);
  // gpt-oss: biases on each expert's gate/up (2 x hidden) and down (d) projections.
  const bool expert_bias = ctx.attrs.flag("expert_bias", false);
  const std::int64_t d = in.back();
  const std::int64_t tokens = element_count(in) / d;
  const std::int64_t router = checked_add(checked_mul(d, experts), router_bias ? experts : 0);
  // gate, up (d x hidden), down (+ their biases).
  const std::int64_t expert = checked_add(checked_mul(3, d, hidden),
                                          expert_bias ? checked_add(checked_mul(2, hidden), d) : 0);
  const std::int64_t shared = checked_add(checked_mul(3, d, shared_hidden), shared_gate ? d : 0);
  const std::int64_t routed = checked_mul(tokens, top_k);  // Token-expert pairs.

  OpResult result;
  LayerCounts& c = result.counts;
  c.params = checked_add(checked_add(checked_mul(experts, expert), router), shared);
  result.active_params = checked_add(checked_add(checked_mul(top_k, expert), router), shared);
  c.experts = experts;
  c.experts_per_token = top_k;
  set_routing_groups(ctx, c);
  c.expert_params = checked_mul(experts, expert);
  if (expert_bias) c.expert_bias_elements = checked_mul(routed, d);
  const std::int64_t router_macs = checked_mul(tokens, d, experts);
  // The shared MLP's gate and up, then its down: on every token.
  const std::int64_t gate_up_macs =
      checked_add(checked_mul(routed, 2, d, hidden), checked_mul(tokens, 2, d, shared_hidden));
  const std::int64_t down_macs = checked_add(
      checked_add(checked_mul(routed, d, hidden), checked_mul(tokens, d, shared_hidden)),
      shared_gate ? checked_mul(tokens, d) : 0);
  c.macs = checked_add(router_macs, checked_add(gate_up_macs, down_macs));
  // Softmax over the router logits (5 per expert), then per token-expert pair SiLU (5) and the
  // gating multiply (1) per hidden unit, and the routing weight's scale and the sum (2) per
  // output feature; the shared MLP's SiLU and multiply, and its sum.
  c.other_flops = checked_add(
      checked_add(checked_mul(tokens, experts, 5),
                  checked_mul(routed, checked_add(checked_mul(6, hidden), checked_mul(2, d)))),
      checked_add(
          shared_hidden > 0
              ? checked_mul(tokens, checked_add(checked_add(checked_mul(6, shared_hidden), d),
                                                shared_gate ? formulas::kSigmoidFlops + d : 0))
              : 0,
          expert_bias ? checked_mul(routed, checked_add(checked_mul(2, hidden), d)) : 0));
  // The experts a batch touches: at most one per token-expert pair (balanced routing).
  c.weight_elements_read =
      checked_add(checked_add(router, checked_mul(std::min(experts, routed), expert)), shared);
  // Router logits, per pair (and per token for the shared MLP) the gate and up outputs and their
  // product, and per pair the down projection's output, which the weighted sum reads (vLLM's
  // fused_moe writes it per pair and moe_sum adds them; Hugging Face's loop and Megatron's
  // unpermute alike): written once, read once, and kept for backward.
  const std::int64_t intermediates = checked_add(
      checked_add(checked_mul(tokens, experts), checked_mul(routed, checked_add(3 * hidden, d))),
      checked_mul(tokens, 3, shared_hidden));
  c.output_elements = checked_add(element_count(in), intermediates);
  // Each pair's gate and up products read its token's row: the input once per chosen expert,
  // and once for the router and the shared MLP.
  c.input_elements =
      checked_add(checked_add(element_count(in), checked_mul(routed, d)), intermediates);
  c.saved_elements = intermediates;
  // Megatron-Core's moe_act recomputation drops each pair's gated product (the experts'
  // activation output) once the down projection has read it, and makes it again from the gate
  // and up outputs in backward (moe/experts.py, CheckpointWithoutOutput): SiLU and the multiply
  // (6 FLOPs), two reads and a write per hidden unit.
  c.recomputable.elements = checked_mul(routed, hidden);
  c.recomputable.other_flops = checked_mul(routed, 6, hidden);
  c.recomputable.moved_elements = checked_mul(routed, 3, hidden);
  // Megatron-Core's shared_experts recomputation checkpoints the shared MLP whole
  // (moe/moe_layer.py, shared_experts_compute): per token its gate and up outputs and their
  // product are dropped; backward runs its gate, up and down products (and the gate's
  // sigmoid), SiLU and the multiply again, reading the weights (at the activations' precision)
  // and per token the input twice, writing and reading the intermediates, writing the output.
  if (shared_hidden > 0) {
    c.shared_recomputable.elements = checked_mul(tokens, 3, shared_hidden);
    c.shared_recomputable.macs = checked_add(checked_mul(tokens, 3, d, shared_hidden),
                                             shared_gate ? checked_mul(tokens, d) : 0);
    c.shared_recomputable.other_flops = checked_mul(
        tokens,
        checked_add(checked_mul(6, shared_hidden), shared_gate ? formulas::kSigmoidFlops + d : 0));
    c.shared_recomputable.moved_elements = checked_add(
        shared, checked_mul(tokens, checked_add(checked_mul(2, d), checked_mul(6, shared_hidden))));
  }
  // Weight gradients always; the router's and the gate/up input gradients only if the input
  // needs one; the down projection's input gradient always (it leads to the gate/up weights).
  const std::int64_t input_side = checked_add(router_macs, gate_up_macs);
  c.backward_macs = checked_add(checked_mul(input_side, ctx.any_input_needs_grad() ? 2 : 1),
                                checked_mul(down_macs, 2));
  c.backward_other_flops = checked_mul(c.other_flops, 2);
  // Gate, up and down per expert (with their biases), the router (and its bias), the shared
  // MLP's three and its gate.
  result.weight_tensors =
      checked_add(checked_mul(experts, expert_bias ? 6 : 3),
                  (router_bias ? 2 : 1) + (shared_hidden > 0 ? 3 : 0) + (shared_gate ? 1 : 0));
  result.output = in;
  return result;
}

}  // namespace capcalc::native_ops
