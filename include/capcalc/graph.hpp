// capcalc::Graph — a model after loading: every layer with its inferred output shape and its
// exact per-layer counts (parameters, MACs, other FLOPs, elements moved, backward work).
//
// Conventions: 1 MAC (multiply-accumulate) = 2 FLOPs. "Other FLOPs" are the FLOPs that are not
// MACs (elementwise, normalisation, softmax, pooling) and are kept apart so both are visible:
// flops = 2 * macs + other_flops. Counts are for the whole batch the graph was built with and
// are exact 64-bit integers; an overflow is an error, never a wrap.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace capcalc {

/// A tensor shape, outermost axis first (NCHW for images, [batch, seq, features] for sequences).
using Shape = std::vector<std::int64_t>;

/// "[1, 3, 224, 224]".
std::string shape_to_string(const Shape& shape);

/// Number of elements (checked; throws std::overflow_error when it does not fit in 64 bits).
std::int64_t element_count(const Shape& shape);

/// Work inside a layer that selective recomputation can drop and redo in backward: the elements
/// no longer kept, the forward work that makes them again, and the elements it moves (weights
/// included). All 0: nothing.
struct RecomputableWork {
  std::int64_t elements = 0;
  std::int64_t macs = 0;
  std::int64_t other_flops = 0;
  std::int64_t moved_elements = 0;
};

/// Work and traffic of one layer, for the batch the graph was built with. Element counts are
/// precision-free; multiply by bytes per element to get bytes.
struct LayerCounts {
  std::int64_t params = 0;                ///< Trainable parameters owned by this layer.
  std::int64_t active_params = 0;         ///< Of `params`: those each token uses. The loader sets
                                          ///< it to `params` except for `moe` (the router and the
                                          ///< experts_per_token chosen experts).
  std::int64_t macs = 0;                  ///< Forward multiply-accumulates (matrix-unit work).
  std::int64_t score_macs = 0;            ///< Of `macs`: products of two activations (QKᵀ, AV,
                                          ///< matmul), which carry no weights.
  std::int64_t other_flops = 0;           ///< Forward FLOPs that are not MACs (vector-unit work).
  std::int64_t input_elements = 0;        ///< Activation elements read.
  std::int64_t weight_elements_read = 0;  ///< Parameter elements read (an embedding reads rows).
  std::int64_t output_elements = 0;       ///< Elements written.
  std::int64_t backward_macs = 0;         ///< MACs of the gradients (inputs and weights).
  std::int64_t backward_other_flops = 0;  ///< Non-MAC FLOPs of the backward pass.
  std::int64_t saved_elements = 0;        ///< Kept for backward beyond the output (attention's
                                          ///< Q, K, V and context).
  std::int64_t kv_cache_per_token = 0;    ///< Self-attention: K and V elements cached per token.
  std::int64_t kv_cache_window = 0;       ///< Sliding window of that cache (0: the whole context).
  std::int64_t kv_cache_read_elements = 0;  ///< Decode: cached K, V elements read.
  /// Of `score_macs`: the products of causal attention's masked pairs (a key after its query,
  /// or outside its window or chunk), present only where the counting option counts every
  /// pair ("causal: full"). Kernels that skip masked tiles (FlashAttention, a runtime's
  /// `flash_attention`) do not run them; the backward has twice as many.
  std::int64_t masked_score_macs = 0;
  /// Of `other_flops`: the masked pairs' scale and softmax (the backward has twice as many).
  std::int64_t masked_other_flops = 0;
  /// How many devices tensor parallelism can split this layer's cache over: its key/value
  /// heads (1 for latent attention, whose one latent every device keeps); 0: any number.
  std::int64_t kv_cache_heads = 0;
  /// Attention: its query heads and key/value heads, which tensor parallelism splits among its
  /// devices (0: not an attention layer, or no constraint, as for latent attention's KV).
  std::int64_t attention_heads = 0;
  std::int64_t attention_kv_heads = 0;
  /// Attention: key and value elements per key token, as its scores read them (what context
  /// parallelism's ring sends); 0 for other layers.
  std::int64_t attention_kv_per_token = 0;
  /// Mixture of experts: its routed experts, the experts each token goes to, and the routed
  /// experts' parameters (of `params`: all of them, the router's and any shared expert's not
  /// included), what expert parallelism splits; 0 for other layers.
  std::int64_t experts = 0;
  std::int64_t experts_per_token = 0;
  /// Group-limited routing (DeepSeek's n_group, topk_group): the experts in `expert_groups`
  /// equal groups, a token's experts all in `expert_groups_per_token` of them; 0: no limit.
  std::int64_t expert_groups = 0;
  std::int64_t expert_groups_per_token = 0;
  std::int64_t expert_params = 0;
  /// Mixture of experts whose experts carry biases (gpt-oss): the routed pairs' output
  /// elements (pairs x features) whose down-projection bias a runtime may add apart from the
  /// product, per expert (Megatron-Core's TEGroupedMLP: `t + b * p`); 0 for other layers.
  std::int64_t expert_bias_elements = 0;
  /// What selective recomputation (Megatron-Core's `recompute_modules`) can drop inside this
  /// layer and redo in backward: a moe layer's expert activation (`moe_act`: the gated
  /// product, a pair's hidden elements) or latent attention's up-projections (`mla_up_proj`:
  /// the queries and the expanded keys and values).
  RecomputableWork recomputable{};
  /// The same for a moe layer's shared expert (`shared_experts`: checkpointed whole, its gate
  /// and up outputs and their product dropped and its three products run again).
  RecomputableWork shared_recomputable{};

  /// Forward FLOPs: 2 per MAC plus the other FLOPs (checked).
  std::int64_t flops() const;
  /// Backward FLOPs: 2 per backward MAC plus the backward other FLOPs (checked).
  std::int64_t backward_flops() const;
  /// Elements moved by the forward pass: inputs and weights read, outputs written (checked).
  std::int64_t moved_elements() const;
};

/// The kind of work a layer does. Its operator's row sets it (native operators and ONNX rules
/// alike); the performance model reads classes and traits, never operator names.
enum class OpClass {
  kMatrix,         ///< Products with weights or of activations (conv, linear, matmul, experts).
  kAttention,      ///< Scores, softmax and context of attention heads in one layer.
  kElementwise,    ///< Per-element arithmetic (activations, add, mul, casts with work).
  kNormalization,  ///< Row or channel statistics then scaling (LayerNorm, RMSNorm, softmax).
  kPooling,        ///< Windows reduced to one value (max/average pooling, reductions).
  kDataMovement,   ///< Copies and lookups without arithmetic (concat, pad, embedding rows).
  kView,           ///< Aliases its input (reshape, transpose, slice): no kernel.
  kUnknown,        ///< An operator the importer did not know; counted as zero.
};
inline constexpr std::size_t kOpClassCount = 8;
/// Every class, in the order above.
inline constexpr std::array<OpClass, kOpClassCount> kOpClasses = {
    OpClass::kMatrix,  OpClass::kAttention,    OpClass::kElementwise, OpClass::kNormalization,
    OpClass::kPooling, OpClass::kDataMovement, OpClass::kView,        OpClass::kUnknown};

/// "matrix", "attention", "elementwise", "normalization", "pooling", "data_movement", "view",
/// "unknown".
std::string_view op_class_name(OpClass op_class);

/// When a compiler may fuse the layer into a neighbouring kernel (its traffic and launch vanish,
/// its arithmetic stays).
enum class Fusion {
  kNever,
  kAlways,         ///< Elementwise work and normalisation (TensorRT, XLA, Inductor fuse them).
  kInferenceOnly,  ///< Batch normalisation: folded into the convolution before it at inference.
};

/// A matrix layer as the matrix units see it: `count` independent products of an [m, k] by a
/// [k, n] matrix. A linear or MatMul layer takes m as the product of its leading axes; a
/// convolution is an implicit GEMM with m = batch x output pixels, n = output channels / groups,
/// k = input channels / groups x kernel elements, count = groups.
struct GemmView {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t count = 1;
};

/// LoRA adapters on a layer's weight matrices, per unit of rank: each matrix W (in -> out)
/// gets A (in x rank) and B (rank x out), so rank x (in + out) parameters and, over its
/// tokens, tokens x rank x (in + out) forward MACs. Summed over the layer's matrices.
struct AdapterShape {
  std::int64_t params_per_rank = 0;
  std::int64_t macs_per_rank = 0;
};

/// What a layer's operator says about how it runs.
struct LayerTraits {
  OpClass op_class = OpClass::kUnknown;
  Fusion fusion = Fusion::kNever;
  std::optional<GemmView> gemm;  ///< Matrix layers with one plain product shape; unset for
                                 ///< attention and experts, whose products are mixed.
  bool rotary = false;           ///< Attention that applies a rotary position embedding to Q and K.
  /// Weight matrices and biases its products read (a linear with bias 2, attention's four
  /// projections and their biases): what mixed precision casts to 16 bits.
  std::int64_t weight_tensors = 0;
  /// Of weight_tensors, the biases: training reduces each one's gradient over the batch.
  std::int64_t bias_tensors = 0;
  /// All its learnable tensors (weights, biases, norm scales, embeddings): what an
  /// optimizer's multi-tensor kernels iterate over. 0 with parameters: one tensor.
  std::int64_t param_tensors = 0;
  /// LoRA adapters for layers whose matrices the GEMM view does not give (attention's four
  /// projections); layers with a GEMM view and weights take theirs from it.
  AdapterShape adapters{};
};

/// One node of the graph.
struct Layer {
  std::string name;                  ///< Full name, e.g. "layer1.0.conv1".
  std::string op;                    ///< Operator, e.g. "conv2d".
  std::vector<std::int32_t> inputs;  ///< Value ids (see Graph::value_shape).
  Shape output;                      ///< Inferred output shape.
  LayerCounts counts;                ///< Exact counts for this layer.
  bool view = false;       ///< Costs nothing: a reshape/flatten/dropout aliases its input.
  std::string definition;  ///< JSON pointer of its definition (for messages).
  std::int32_t group = 0;  ///< The top-level entry (block call instance) it comes from:
                           ///< the unit of activation checkpointing.
  LayerTraits traits{};    ///< Set from the operator's row.
};

/// A named model input.
struct GraphInput {
  std::string name;
  Shape shape;
  /// LLM serving: read at prefill only (an image): decode steps skip the layers computed from
  /// such inputs alone.
  bool prefill_only = false;
  /// The model runs without it (ModelOptions::omitted_inputs): an image left out of a prompt.
  bool optional = false;
  bool omitted = false;
};

/// Operators an importer did not know, counted as zero (never silently: the CLI warns).
struct UnknownOperator {
  std::string op;          ///< As the file names it, e.g. "com.example.Foo" or "NonMaxSuppression".
  std::int64_t nodes = 0;  ///< How many nodes use it.
  std::string first_node;  ///< JSON pointer of the first node that uses it ("/graph/node/12").
};

/// The whole model. Values are numbered inputs first (0 .. inputs.size()-1), then one per layer.
struct Graph {
  std::string name;
  std::string description;
  std::string source;
  std::vector<GraphInput> inputs;
  std::vector<Layer> layers;
  std::vector<std::int32_t> outputs;         ///< Value ids of the model's outputs.
  std::map<std::string, std::int64_t> dims;  ///< Symbolic dimensions as resolved.
  std::int64_t batch = 1;                    ///< dims["batch"], or 1 if the model has none.
  /// The model's format runs, as a rule, in runtimes that fuse elementwise chains (ONNX files
  /// in ONNX Runtime, whose default optimisations fuse LayerNorm, GELU and attention, or in
  /// TensorRT): estimates without a --profile take the compiled profile.
  bool runs_fused = false;
  /// Unknown operators (ONNX import), in order of first use; their layers count zero.
  std::vector<UnknownOperator> unknown_ops;
  /// What the importer read but doubts, located and ready for the CLI to print as warnings
  /// ("m.onnx: opset 99 is newer than this build knows (up to 17)").
  std::vector<std::string> warnings;
  /// KV-cache elements per cached token of one sequence held in the model's past inputs (ONNX
  /// decoder exports: past_key_values.*), for graphs whose layers do not say it themselves.
  std::int64_t past_elements_per_token = 0;
  /// The routed experts' weight storage in the model's checkpoint where it differs from the
  /// other weights' (a Hugging Face config whose quantization_config is MXFP4, as gpt-oss's:
  /// int4), a precision name; empty: none stated. It sets nothing: `estimate` offers it where
  /// the model does not fit (--expert-weight-precision).
  std::string expert_weight_storage;
  /// The first layer of the multi-token-prediction modules (ModelOptions::mtp_layers), which
  /// train beside the model on its last pipeline stage; -1: none.
  std::int64_t mtp_first_layer = -1;
  std::int64_t mtp_modules = 0;  ///< How many (each "mtp.<k>.*").

  const Shape& value_shape(std::int32_t value) const;
  std::string value_name(std::int32_t value) const;
  std::int32_t layer_value(std::size_t layer_index) const {
    return static_cast<std::int32_t>(inputs.size() + layer_index);
  }
};

/// Sums over all layers (for the whole batch).
struct GraphTotals {
  std::int64_t params = 0;
  std::int64_t active_params = 0;  ///< Parameters used per token (= params unless the model has
                                   ///< mixture-of-experts layers).
  std::int64_t expert_params = 0;  ///< Of `params`: the MoE layers' routed experts'.
  std::int64_t macs = 0;
  std::int64_t other_flops = 0;
  std::int64_t flops = 0;
  std::int64_t backward_macs = 0;
  std::int64_t backward_flops = 0;
  std::int64_t moved_elements = 0;
  std::int64_t activation_elements = 0;  ///< Non-view outputs + saved elements (for backward).
  std::int64_t peak_live_elements = 0;   ///< Largest set of activations alive at once (inference).
  /// With activation checkpointing per top-level entry: the entries' outputs, plus the
  /// internals of the largest entry while it is recomputed.
  std::int64_t checkpointed_elements = 0;
  std::int64_t checkpoint_result_elements = 0;  ///< The entries' outputs alone.
  /// The largest output of a top-level entry but the last: what a pipeline stage boundary,
  /// placed between entries, sends (a transformer block's hidden states).
  std::int64_t boundary_elements = 0;
};

/// Elements of the KV cache of one sequence of `context` tokens (each layer keeps at most its
/// window; without such layers, the past inputs' elements per token).
std::int64_t kv_cache_elements(const Graph& graph, std::int64_t context);

/// The same on one device of a tensor-parallel group of `tp`: each layer's cache split over
/// min(tp, its kv_cache_heads) devices, replicated beyond that (as serving engines do).
double kv_cache_elements_per_device(const Graph& graph, std::int64_t context, std::int64_t tp);

/// The share of `heads` (key/value heads; 0: any number) one device of a tensor-parallel group
/// of `tp` holds: split over min(tp, heads) devices, replicated beyond that.
double head_share(std::int64_t heads, std::int64_t tp);

/// The share of a layer's cache one device of a tensor-parallel group of `tp` keeps.
double kv_cache_share(const LayerCounts& counts, std::int64_t tp);

/// LLM decode: layers computed from prefill-only inputs alone (an image's encoder) ran once, at
/// prefill; they become views without counts, so that a decode step does not count them again.
/// Returns how many layers it dropped.
std::int64_t drop_prefill_only_layers(Graph& graph);

/// LLM serving prefill: runtimes compute the logits of each sequence's last prompt token only,
/// the one the next token is sampled from (vLLM's logits_indices, SGLang's LogitsProcessor,
/// TensorRT-LLM's gather_last_token_logits, transformers' generate with logits_to_keep = 1).
/// Each model output that a matrix layer with weights makes from token rows ([..., tokens,
/// features], tokens > 1, its GEMM rows all the leading axes) is recounted for one token per
/// sequence: its per-row counts divided by the tokens, its output's token axis 1. Outputs
/// computed from prefill-only inputs alone (an image's projector) and outputs whose token axis
/// is folded into another (a [tokens, vocab] MatMul) keep theirs. Returns how many layers it
/// changed; a second call changes none.
std::int64_t last_token_logits(Graph& graph);

/// Whether the model has routed experts: a `moe` layer.
bool has_experts(const Graph& graph);

/// Inputs left out of a run: every layer computed from omitted inputs alone becomes a view that
/// does no work; its parameters stay (the weights are still loaded). Returns how many layers.
std::int64_t omit_input_layers(Graph& graph);

/// Totals, with liveness for the peak: a value is alive from the layer that makes it to its
/// last reader (model outputs to the end); views share their input's storage; a layer's own
/// workspace (saved_elements) counts while it runs.
GraphTotals graph_totals(const Graph& graph);

}  // namespace capcalc
