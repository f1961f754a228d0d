// The layers of a step: each layer's roofline forward (and, in training, backward and
// recompute) on one device, with its kernels, tiles, alignment, fusion and expert imbalance
// (layer_time), summed over the model (layer_times).
#include <algorithm>
#include <optional>

#include "predict_step.hpp"

namespace capcalc::detail {
namespace {

// Whether a compiler fuses the layer into a neighbouring kernel (the operator's trait).
bool fusable(const Layer& layer, Mode mode) {
  switch (layer.traits.fusion) {
    case Fusion::kAlways:
      return true;
    case Fusion::kInferenceOnly:
      return mode == Mode::kInference;
    case Fusion::kNever:
      break;
  }
  return false;
}

// 2:4 sparsity applies to weights: layers with parameters and weight MACs.
bool has_sparse_weights(const Layer& layer) {
  return layer.counts.params > 0 && layer.counts.macs > layer.counts.score_macs;
}

struct Work {
  double macs = 0;        // Weight MACs.
  double score_macs = 0;  // Activation x activation MACs.
  double other_flops = 0;
  // Of score_macs and other_flops: causal attention's masked pairs, counted but skipped by the
  // runtime's kernels (no time).
  double skipped_score_macs = 0;
  double skipped_other_flops = 0;
  // Products the kernels run beyond the count (FlashAttention's backward recomputing QKᵀ):
  // time, no counted FLOPs.
  double recomputed_score_macs = 0;
  double bytes = 0;
  double kernels = 1;
};

LayerEstimate roofline(const Work& w, bool matrix, double matrix_speed, bool fused,
                       const Rates& rates, double floor_s) {
  LayerEstimate e;
  e.matrix_units = matrix;
  e.flops = 2 * (w.macs + w.score_macs) + w.other_flops;
  // A FlashAttention-style runtime's skipped pairs out, its recomputed QKᵀ in.
  e.executed_flops =
      e.flops + 2 * (w.recomputed_score_macs - w.skipped_score_macs) - w.skipped_other_flops;
  e.bytes = fused ? 0 : w.bytes;
  const double mac_rate =
      matrix ? rates.matrix_flops_per_s * matrix_speed : rates.vector_flops_per_s;
  const double score_rate = matrix ? rates.score_flops_per_s : rates.vector_flops_per_s;
  e.compute_s = 2 * w.macs / mac_rate +
                2 * (w.score_macs - w.skipped_score_macs + w.recomputed_score_macs) / score_rate +
                (w.other_flops - w.skipped_other_flops) / rates.vector_flops_per_s;
  e.memory_s = e.bytes / rates.bytes_per_s;
  if (fused) {
    e.time_s = e.compute_s;
    e.bound = Bound::kFused;
    return e;
  }
  e.kernels = w.kernels;
  e.overhead_s = w.kernels * floor_s;
  e.time_s = std::max({e.compute_s, e.memory_s, e.overhead_s});
  if (e.overhead_s >= std::max(e.compute_s, e.memory_s)) {
    e.bound = Bound::kHost;
  } else {
    e.bound = e.compute_s >= e.memory_s ? Bound::kCompute : Bound::kMemory;
  }
  return e;
}

void add(LayerEstimate& total, const LayerEstimate& part) {
  total.flops += part.flops;
  total.executed_flops += part.executed_flops;
  total.bytes += part.bytes;
  total.compute_s += part.compute_s;
  total.memory_s += part.memory_s;
  total.overhead_s += part.overhead_s;
  total.kernels += part.kernels;
  total.time_s += part.time_s;
}

// Kernels a training step adds to a layer, forward and backward.
struct ExtraKernels {
  double forward = 0;
  double backward = 0;
};

// The loss reads the last layer's output. PyTorch's 16-bit batch norm runs channels-last (as its
// memory-format tutorial recommends for convolutional networks under autocast): its statistics
// (forward) and gradient (backward) reductions zero their grid semaphores where the grid has
// several rows (Normalization.cuh, at::zeros). Under autocast, gradients of 16-bit inputs read
// beside fp32 ones are cast back (backward).
ExtraKernels training_extra_kernels(const Step& s, std::size_t index) {
  const Layer& layer = s.graph.layers[index];
  const TrainingKernels& t = s.runtime.training;
  ExtraKernels extra;
  if (index == s.loss_layer) {
    extra.forward += t.loss_forward;
    extra.backward += t.loss_backward;
  }
  if (t.batchnorm_semaphore_zeroing > 0 && s.act_bytes < 4 && layer.op == "batchnorm" &&
      layer.output.size() >= 2) {
    const auto elements = static_cast<double>(element_count(layer.output));
    const auto channels = static_cast<double>(layer.output[1]);
    if (channels_last_reduction_rows(elements / channels, channels) > 1) {
      extra.forward += t.batchnorm_semaphore_zeroing;
      extra.backward += t.batchnorm_semaphore_zeroing;
    }
  }
  if (!s.mixed_gradient_casts.empty()) extra.backward += s.mixed_gradient_casts[index];
  // Self-attention's Q, K and V projections read one input: autograd sums their gradients.
  if (layer.traits.op_class == OpClass::kAttention && layer.inputs.size() == 1)
    extra.backward += t.attention_input_gradient_sums;
  return extra;
}

// A moe layer's routed-expert weights that the tokens reach among `held` of its experts
// (balanced routing: at most one expert per token-expert pair); 0 for other layers.
double expert_elements_reached(const Layer& layer, double held) {
  const LayerCounts& c = layer.counts;
  if (c.experts == 0 || layer.output.empty() || layer.output.back() == 0) return 0;
  const auto experts = static_cast<double>(c.experts);
  const double pairs = static_cast<double>(element_count(layer.output)) /
                       static_cast<double>(layer.output.back()) *
                       static_cast<double>(c.experts_per_token);
  return static_cast<double>(c.expert_params) / experts * std::min(held, pairs);
}

// The routed-expert weights a device reads: of the 1/ep of the experts it holds, those the
// tokens reach (a device gets as many token-expert pairs as it sends).
double expert_elements_read(const Step& s, const Layer& layer) {
  return expert_elements_reached(layer, static_cast<double>(layer.counts.experts) / s.ep);
}

// Parameter elements a device reads for a layer (1/tp of them aside): of a moe layer's routed
// experts only those it holds (expert_elements_read), beside the router and any shared expert.
double weight_elements_read(const Step& s, const Layer& layer) {
  const auto read = static_cast<double>(layer.counts.weight_elements_read);
  if (s.ep <= 1) return read;
  return read - expert_elements_reached(layer, static_cast<double>(layer.counts.experts)) +
         expert_elements_read(s, layer);
}

// A pass over `bytes` of its own, beside the layer's kernels (FP8 quantization).
void add_memory_pass(LayerEstimate& e, double bytes, const Rates& rates) {
  const double s = bytes / rates.bytes_per_s;
  e.bytes += bytes;
  e.memory_s += s;
  e.time_s += s;
}

void slow_down(LayerEstimate& e, double factor) {
  e.compute_s *= factor;
  e.memory_s *= factor;
  e.time_s *= factor;
}

// Whether the runtime's FlashAttention-style kernels run this layer: an attention layer's
// masked pairs take no time, and its backward recomputes QKᵀ.
bool flash_attention(const Step& s, const Layer& layer) {
  return s.runtime.flash_attention && layer.traits.op_class == OpClass::kAttention;
}

// FP8 training quantizes each weighted product's input (forward) and output gradient
// (backward) in kernels of their own: the runtime's bytes per element (0 otherwise).
double fp8_quantize_bytes(const Step& s, const Layer& layer) {
  const bool quantized = s.training && s.workload.precision == Precision::kFp8 &&
                         layer.traits.op_class == OpClass::kMatrix && layer.counts.params > 0;
  return quantized ? s.runtime.fp8_quantize_bytes : 0;
}

// A layer's backward products and vector work on one device (its `work` share), given its
// forward's; `adapter_macs`: LoRA's forward adapter products.
Work backward_work(const Step& s, const Layer& layer, const Work& forward, double work,
                   double adapter_macs) {
  const LayerCounts& c = layer.counts;
  Work backward;
  // Each product of two activations needs both operands' gradients: twice its forward.
  backward.score_macs =
      std::min(static_cast<double>(c.backward_macs) / work, 2 * forward.score_macs);
  backward.macs = static_cast<double>(c.backward_macs) / work - backward.score_macs;
  if (s.lora_rank > 0) {
    // Frozen weights take no gradient: the weight-gradient product (as many MACs as the forward
    // product with the weights) goes; the adapters' input and weight gradients come.
    const double weight_gradient = static_cast<double>(c.macs - c.score_macs) / work;
    backward.macs = std::max(0.0, backward.macs - weight_gradient) + 2 * adapter_macs;
  }
  backward.other_flops = static_cast<double>(c.backward_other_flops) / work;
  // Both operands' gradients of the products, and the softmax's, skip the same tiles.
  backward.skipped_score_macs = std::min(backward.score_macs, 2 * forward.skipped_score_macs);
  backward.skipped_other_flops = std::min(backward.other_flops, 2 * forward.skipped_other_flops);
  // FlashAttention's backward recomputes QKᵀ from the saved Q and K (the scores are never
  // stored): 2.5 forward products' worth in all, not 2 (its benchmark counts so).
  if (flash_attention(s, layer)) {
    backward.recomputed_score_macs = 0.5 * (forward.score_macs - forward.skipped_score_macs);
  }
  return backward;
}

// Selective recomputation's forward again: the whole layer's (`forward`, with the experts'
// imbalance), or its recomputable parts alone: a moe layer's expert activation (one kernel, at
// the busiest expert's pace) and its shared expert, or latent attention's two up-projections,
// their weights counted at the activations' precision.
double selective_recompute_s(const Step& s, std::size_t index, const LayerEstimate& forward,
                             double work, const Rates& rates, double imbalance) {
  switch (s.recomputed[index]) {
    case Recomputed::kNo:
      return 0;
    case Recomputed::kWhole:
      return forward.time_s;
    case Recomputed::kPart:
      break;
  }
  const Layer& layer = s.graph.layers[index];
  const LayerCounts& c = layer.counts;
  const RecomputedParts parts = recomputed_parts(layer, s.workload.recompute);
  const auto time = [&](const RecomputableWork& w, double kernels) {
    Work part;
    part.macs = static_cast<double>(w.macs) / work;
    part.other_flops = static_cast<double>(w.other_flops) / work;
    part.bytes = static_cast<double>(w.moved_elements) * s.act_bytes / work;
    part.kernels = kernels;
    const bool matrix = part.macs > 0 && rates.matrix_flops_per_s > 0;
    return roofline(part, matrix, 1, false, rates, s.floor_s).time_s;
  };
  double total = 0;
  if (parts.own) total += time(c.recomputable, c.recomputable.macs > 0 ? 2 : 1) * imbalance;
  // The shared expert runs on every token: no imbalance. Its gate and up, SiLU and the
  // multiply, and its down: three kernels.
  if (parts.shared) total += time(c.shared_recomputable, 3);
  return total;
}

// How fast a matrix layer's product runs against the matrix peak's efficiency: tiles are cut
// from the product the matrix units see (the layer's GEMM view; layers that mix products,
// attention and experts, have none and take no penalty), context parallelism gives each device
// 1/cp of the rows (tokens), and cuBLAS runs a product whose features are not a multiple of 16
// bytes on slower kernels (a runtime that pads the vocabulary, Megatron, aligns the output
// layer's).
double matrix_speed(const Step& s, std::size_t index) {
  const Layer& layer = s.graph.layers[index];
  std::optional<GemmView> gemm = layer.traits.gemm;
  if (gemm && s.cp > 1) gemm->m = std::max<std::int64_t>(1, gemm->m / s.workload.context_parallel);
  const double utilisation =
      gemm ? tile_utilisation(static_cast<double>(gemm->n), static_cast<double>(gemm->k)) *
                 wave_utilisation(*gemm, s.device)
           : 1;
  const bool padded = index == s.loss_layer && pads_to(s.runtime.vocab_padding, s.align_elements);
  const double aligned =
      s.params.misaligned_matrix_efficiency > 0 && misalignment(layer, s.align_elements, padded)
          ? s.params.misaligned_matrix_efficiency / s.params.matrix_efficiency
          : 1;
  return utilisation * aligned;
}

// Kernels a moe layer adds per routed expert this device holds (forward; backward, as for any
// layer, twice the forward's unless the runtime says otherwise).
struct ExpertKernels {
  double products = 0;  // A runtime that launches each expert's products apart.
  double bias = 0;      // Biased experts whose output bias the runtime adds apart.
  double quantize = 0;  // FP8: each expert's inputs (the two products') quantized apart.
};

ExpertKernels expert_kernels(const Step& s, const LayerCounts& c) {
  ExpertKernels k;
  if (c.experts == 0) return k;
  const double local_experts = static_cast<double>(c.experts) / s.ep;
  k.products = s.runtime.local_expert_kernels * local_experts;
  if (c.expert_bias_elements > 0) k.bias = s.runtime.expert_bias_kernels * local_experts;
  // As the runtime's recipe row says (output gradients backward).
  if (s.workload.precision == Precision::kFp8) {
    k.quantize =
        2 * local_experts *
        s.runtime.fp8_expert_quantize_kernels[static_cast<std::size_t>(s.workload.fp8_recipe)];
  }
  return k;
}

// One layer's forward (and, in training, backward) on one device.
LayerEstimate layer_time(const Step& s, std::size_t index, double sparsity_speedup,
                         double& backward_s, double& recompute_s) {
  const Layer& layer = s.graph.layers[index];
  const LayerCounts& c = layer.counts;
  const double outputs = static_cast<double>(element_count(layer.output));
  const bool tf32 = s.tf32 && std::find(s.runtime.tf32_ops.begin(), s.runtime.tf32_ops.end(),
                                        layer.op) != s.runtime.tf32_ops.end();
  const Rates& rates = tf32 ? s.tf32_rates : s.rates;
  const bool matrix = rates.matrix_flops_per_s > 0 && c.macs > 0 &&
                      static_cast<double>(c.macs) / outputs >= kMinMatrixReduction;
  const bool sparse_layer = s.sparse && has_sparse_weights(layer);
  const double speed = matrix ? matrix_speed(s, index) * (sparse_layer ? sparsity_speedup : 1) : 1;
  const bool fused = s.fusing && fusable(layer, s.workload.mode) && s.runtime.fuses(layer);
  const double layer_weight_bytes = sparse_layer ? s.sparse_weight_bytes : s.weight_bytes;

  // Mixed-precision training casts each fp32 master weight to 16 bits once per forward
  // (autocast caches the cast: aten/src/ATen/autocast_mode.cpp, cached_cast) and its gradient
  // back in backward.
  // LoRA keeps the frozen weights in their storage precision: no master copy to cast.
  const double casts =
      s.training && s.weight_bytes < 4 && s.lora_rank <= 0
          ? s.runtime.autocast_weight_casts * static_cast<double>(layer.traits.weight_tensors)
          : 0;
  const double input_casts = s.autocast_input_casts.empty() ? 0 : s.autocast_input_casts[index];
  const ExpertKernels experts = expert_kernels(s, c);
  const double kernels =
      s.runtime.kernels(layer, s.act_bytes < 4, s.training) + experts.products + experts.bias;
  const ExtraKernels extra = s.training ? training_extra_kernels(s, index) : ExtraKernels{};
  Work forward;
  forward.kernels = kernels + casts + input_casts + extra.forward + experts.quantize;
  // Each device's share: 1/tp, or all of it for a layer every device runs whole; context
  // parallelism splits every layer's tokens (`work`), not its weights (`split`).
  const double split = s.replicated.empty() || s.replicated[index] == 0 ? s.tp : 1;
  const double work = split * s.cp;
  forward.macs = static_cast<double>(c.macs - c.score_macs) / work;
  // LoRA: each adapted matrix's two adapter products, tokens x rank x (in + out) MACs.
  const double adapter_macs = s.lora_rank * lora_adapters(s, index).macs / work;
  forward.macs += adapter_macs;
  forward.score_macs = static_cast<double>(c.score_macs) / work;
  forward.other_flops = static_cast<double>(c.other_flops) / work;
  if (flash_attention(s, layer)) {
    forward.skipped_score_macs = static_cast<double>(c.masked_score_macs) / work;
    forward.skipped_other_flops = static_cast<double>(c.masked_other_flops) / work;
  }
  // The routed experts' weights at their own storage (expert_weight_precision), each split over
  // etp devices (whole where the experts are not split by tensor parallelism). Each device
  // reads its share of the cache: all of it where there are fewer key/value heads (one latent)
  // than devices.
  const double experts_read = c.experts > 0 ? expert_elements_read(s, layer) : 0;
  const double expert_bytes =
      s.workload.expert_weight_precision ? s.expert_weight_bytes : layer_weight_bytes;
  forward.bytes = (static_cast<double>(c.input_elements + c.output_elements) * s.act_bytes / s.cp +
                   (weight_elements_read(s, layer) - experts_read) * layer_weight_bytes) /
                      split +
                  experts_read * expert_bytes / (split > 1 ? s.etp : 1) +
                  static_cast<double>(c.kv_cache_read_elements) * s.kv_bytes *
                      kv_cache_share(c, s.workload.tensor_parallel);
  // An elementwise operator that the runtime launches as several kernels (NewGELUActivation's
  // eight in eager PyTorch) passes its tensors once per kernel.
  if (layer.traits.op_class == OpClass::kElementwise && kernels > 1) forward.bytes *= kernels;
  // Backward reads saved activations, long gone from the cache: twice the uncached traffic.
  const double uncached_bytes = forward.bytes;
  const double cached =
      std::min(s.cached_input_elements[index], static_cast<double>(c.input_elements));
  forward.bytes -= cached * s.act_bytes / work;
  LayerEstimate e = roofline(forward, matrix, speed, fused, rates, s.floor_s);
  const double quantize_bytes = fp8_quantize_bytes(s, layer) / work;
  add_memory_pass(e, quantize_bytes * static_cast<double>(c.input_elements), rates);
  // Kernels of their own after the products: each bias kernel reads and writes its expert's
  // output rows once (Megatron-Core: the multiply writes b x p, the add reads it and the
  // product's output and writes the sum); backward, as for any layer, twice the traffic.
  const double bias_bytes = s.runtime.expert_bias_kernels * 2 *
                            static_cast<double>(c.expert_bias_elements) * s.act_bytes / work;
  add_memory_pass(e, bias_bytes, rates);
  // The step waits for the busiest expert: the moe layers take the imbalance times as long.
  const double imbalance = c.experts > 0 ? s.workload.moe_imbalance : 1;
  slow_down(e, imbalance);
  if (!s.training) return e;
  recompute_s += s.checkpoint_share * e.time_s;
  if (!s.recomputed.empty()) {
    recompute_s += selective_recompute_s(s, index, e, work, rates, imbalance);
  }
  // Backward: its own FLOPs, about twice the forward traffic (read the output gradient and the
  // saved inputs, write the input and weight gradients).
  Work backward = backward_work(s, layer, forward, work, adapter_macs);
  backward.bytes = 2 * uncached_bytes;
  // Autograd's kernels for the layer (the runtime's table; else one per forward kernel and one
  // for weight gradients), a reduction per bias gradient, and the casts' backward.
  backward.kernels =
      s.runtime.backward_kernels(layer, kernels) + casts + input_casts + extra.backward +
      experts.quantize +
      s.runtime.training.bias_gradient * static_cast<double>(layer.traits.bias_tensors);
  // A fused forward still leaves a backward that reads what it saved: not fused.
  LayerEstimate b = roofline(backward, matrix, speed, false, rates, s.backward_floor_s);
  add_memory_pass(b, quantize_bytes * static_cast<double>(c.output_elements), rates);
  add_memory_pass(b, 2 * bias_bytes, rates);
  slow_down(b, imbalance);
  backward_s += b.time_s;
  add(e, b);
  return e;
}

}  // namespace

// Every layer's time; returns one micro-batch's backward through the whole model.
double layer_times(const Step& s, Estimate& result) {
  double backward_s = 0;
  result.layers.reserve(s.graph.layers.size());
  for (std::size_t i = 0; i < s.graph.layers.size(); ++i) {
    result.layers.push_back(s.graph.layers[i].view ? LayerEstimate{}
                                                   : layer_time(s, i, result.sparsity_speedup,
                                                                backward_s, result.recompute_s));
  }
  for (const LayerEstimate& e : result.layers) {
    result.kernels += e.kernels;
    result.latency_s += e.time_s;
    result.flops += e.flops;
    result.executed_flops += e.executed_flops;
    result.bytes += e.bytes;
  }
  return backward_s;
}

}  // namespace capcalc::detail
