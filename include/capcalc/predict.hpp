// Predicting time and memory of a model (a Graph) on a device, with a roofline per layer.
//
// Each layer (kernel) takes
//   time = max(compute time, memory time, overhead floor)
//   compute time = 2·MACs / (matrix peak · matrix_efficiency) + other FLOPs / (vector peak ·
//                  vector_efficiency)
//   memory time  = bytes moved / (bandwidth · memory_efficiency)
// MACs run on matrix units (tensor cores, MXU, AMX) when the device has them for the precision
// and the layer's reduction length (MACs per output element) is at least kMinMatrixReduction;
// depthwise convolutions run on vector units. On matrix units the rate is scaled by tile
// utilisation: output widths and reductions that are not multiples of the tile waste it. The floor
// is the per-kernel dispatch and launch cost of the implementation profile: framework eager
// (PyTorch) or compiled (TensorRT, torch.compile, XLA). Compiled also fuses elementwise layers into
// their neighbours: their traffic and floor vanish, their arithmetic stays. The efficiencies and
// floors are the few global parameters per device type, stored in the hardware table.
//
// Training adds the backward pass (its own FLOPs, twice the forward traffic, two kernels per
// layer; in the eager profile at the graph floor, since the autograd engine launches them from
// C++) and the optimizer update (memory-bound), per device. Tensor
// parallelism splits each layer's work, weights, state, activations and KV cache evenly over the
// replica's devices; each device still launches every kernel. Its communication is Megatron's:
// each attention layer and the feed-forward block after it end in an all-reduce of the block's
// output over the group (two per attention layer forward, two more backward), timed as a ring
// over the device's scale-up link: latency + 2(n-1)/n · bytes / (efficiency · bandwidth per
// direction). Data-parallel replicas all-reduce their gradients once a step by the same ring,
// over the scale-up link within its domain, else the network; it overlaps with the last
// micro-batch's backward and only the rest adds to the step.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/runtime.hpp"

namespace capcalc {

enum class Mode { kInference, kTraining };
enum class Optimizer { kSgd, kMomentum, kAdam };
/// Weight sparsity. Only 2:4 structured sparsity speeds up hardware that supports it;
/// unstructured pruning runs at dense speed on dense hardware (counted as dense, said so).
enum class Sparsity { kDense, k2of4, kUnstructured };

/// The fastest input pipeline a workload may name (samples per second a replica).
inline constexpr double kMaxInputRate = 1e9;

/// What limits a layer.
enum class Bound {
  kCompute,  ///< Arithmetic takes longest.
  kMemory,   ///< Memory traffic takes longest.
  kHost,     ///< The host's per-kernel launch cost exceeds both (small layers).
  kInput,    ///< A step's wait for its samples from the input pipeline (Workload::input_rate).
  kFused,    ///< Fused into a neighbour (compiled profile): arithmetic only.
  kNone,     ///< A view (reshape, flatten, dropout): no work.
};

std::string_view bound_name(Bound bound);  ///< "compute", "memory", "host", "input", "fused", "-".
std::string_view mode_name(Mode mode);     ///< "inference", "training".
std::optional<Mode> parse_mode(std::string_view name);
std::vector<std::string_view> mode_names();
std::string_view optimizer_name(Optimizer optimizer);             ///< "sgd", "momentum", "adam".
std::optional<Optimizer> parse_optimizer(std::string_view name);  ///< Also takes "adamw".
/// What a reader accepts: "sgd", "momentum", "adam" and the alias "adamw" (without it when
/// `with_aliases` is false: the printed names).
std::vector<std::string_view> optimizer_names(bool with_aliases = true);
std::string_view sparsity_name(Sparsity sparsity);  ///< "dense", "2:4", "unstructured".
std::optional<Sparsity> parse_sparsity(std::string_view name);
std::vector<std::string_view> sparsity_names();

/// A matrix product with fewer MACs per output than this runs on vector units (tensor cores
/// need a reduction of a few tiles; depthwise 3x3 convolutions have 9).
inline constexpr double kMinMatrixReduction = 16;

/// Tile sizes of matrix units: a product's output width is computed in tiles of kMatrixTileN
/// and its reduction in slices of kMatrixTileK; partial tiles waste the rest.
inline constexpr double kMatrixTileN = 128;
inline constexpr double kMatrixTileK = 64;

/// Optimizer state bytes per parameter (fp32 moments) and bytes moved per parameter by one
/// fused update (read weights, gradients and state; write weights and state).
double optimizer_state_bytes(Optimizer optimizer);
double optimizer_update_bytes(Optimizer optimizer);

/// How the model is run.
struct Workload {
  Precision precision = Precision::kFp32;  ///< Weights, activations and math.
  /// `precision` was not given to an LLM-serving workload, which took bf16: precision_on()
  /// makes it fp16 on a device without a bf16 peak.
  bool serving_default_precision = false;
  Mode mode = Mode::kInference;
  std::optional<Profile> profile;  ///< Unset: the device type's default.
  /// The runtime that runs the model (its profile replaces `profile`, its kernel counts the
  /// one kernel per layer); unset: a generic runtime of `profile`.
  std::optional<Runtime> runtime;
  Sparsity sparsity = Sparsity::kDense;    ///< 2:4 structured sparsity of conv/linear weights.
  Optimizer optimizer = Optimizer::kAdam;  ///< Training only.
  /// FP8 precision only: how FP8 tensors are scaled. Delayed scaling is Megatron-Core's
  /// default (--fp8-recipe) and Transformer Engine's.
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;
  std::int64_t devices = 1;          ///< All devices: tensor × pipeline × replicas.
  std::int64_t tensor_parallel = 1;  ///< Devices per model replica. Each layer's work,
                                     ///< weights, state, activations and KV cache split
                                     ///< evenly over them, with all-reduces per block;
                                     ///< the per-kernel floor does not split.
  /// Training: pipeline stages per replica, a 1F1B schedule (Narayanan et al. 2021): each
  /// stage holds and computes an even 1/pipeline_parallel of the layers, weights and state;
  /// a step runs micro_batches micro-batches through, and the pipeline fills and drains
  /// (pipeline_parallel - 1 stage times of bubble). Each micro-batch's activation goes to the
  /// next stage and its gradient comes back, over the link that joins the stages.
  std::int64_t pipeline_parallel = 1;
  /// Training: devices that split each sequence (Megatron's context parallelism, ring
  /// attention): each holds 1/context_parallel of every sample's tokens, so of every layer's
  /// work and activations, and the whole weights of its stage; the K and V chunks of each
  /// self-attention layer go round the ring, overlapped with its attention. The gradients are
  /// reduced and ZeRO shards over the data-parallel replicas x context_parallel.
  std::int64_t context_parallel = 1;
  /// Devices that split each mixture-of-experts layer's routed experts (Megatron-Core's expert
  /// parallelism; the experts' own tensor parallelism is expert_tensor_parallel below): each
  /// holds 1/E of them, with their gradients and optimizer state, and the tokens routed to them
  /// come and go by all-to-all (dispatch and combine) over the link joining devices
  /// expert_tensor_parallel apart (Megatron-Core's expert grid folds context parallelism into
  /// it). With the experts split like the other weights, E divides the devices that hold the
  /// same weights (replicas x context_parallel), which reduce, and ZeRO shards, the experts'
  /// gradients in groups of that / E; and it divides every moe layer's experts.
  std::int64_t expert_parallel = 1;
  /// Devices that split each routed expert's products (Megatron-Core's
  /// expert_tensor_parallel_size, "MoE parallel folding"); unset: tensor_parallel, as above.
  /// 1: every expert whole on one device; the expert grid is then expert_tensor_parallel x
  /// expert_parallel x the rest, folded over the same tensor_parallel x replicas x
  /// context_parallel devices (parallel_state.py's expert RankGenerator), so the all-to-all
  /// group is the expert_parallel devices expert_tensor_parallel apart, the experts' gradients
  /// reduce over tensor_parallel x replicas x context_parallel / (expert_tensor_parallel x
  /// expert_parallel) devices, and a moe layer needs no tensor-parallel collective of its own.
  /// 1 or tensor_parallel; expert_parallel x it divides tensor_parallel x replicas x
  /// context_parallel.
  std::optional<std::int64_t> expert_tensor_parallel;
  /// How the moe layers' tokens reach their experts and come back (MoeDispatcher): NCCL's
  /// all-to-all (Megatron-Core's default) sends a token once for each of its experts; DeepEP
  /// and HybridEP once for each device holding any of them, across nodes once for each node.
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  /// MoE expert load imbalance: the busiest expert's tokens over the mean (1 to 1000; 1,
  /// balanced routing, as the per-layer counts assume). The moe layers take this many times
  /// their time: the step waits for the busiest expert.
  double moe_imbalance = 1;
  /// Samples per second each replica's input pipeline delivers (a data loader decoding images,
  /// say), 0: as fast as the step consumes them. A step that consumes its samples faster waits
  /// for them: the step takes samples / input_rate_per_s at least, and is input-bound.
  double input_rate_per_s = 0;
  /// Training with pipeline stages: model chunks per stage, Megatron's interleaved 1F1B: each
  /// device holds virtual_stages chunks of 1/(P x V) of the layers; the bubble is 1/V of
  /// 1F1B's, the sends V times as many (overlapped with the chunks' compute). Needs
  /// micro_batches a multiple of pipeline_parallel.
  std::int64_t virtual_stages = 1;
  /// Training: micro-batches (of the model's batch) per optimizer step: gradient accumulation,
  /// and the number of micro-batches a pipeline runs per step.
  std::int64_t micro_batches = 1;
  int zero_stage = 0;          ///< Training: ZeRO sharding over the data-parallel replicas: 1
                               ///< optimizer state and its update, 2 also gradients, 3 (FSDP) also
                               ///< weights.
  bool checkpointing = false;  ///< Training: recompute activations per top-level
                               ///< entry (block) instead of keeping them all.
  /// With checkpointing: only the first N blocks of each pipeline chunk (Megatron-Core's
  /// recompute_method "block" with recompute_num_layers N), the others keeping everything;
  /// 0: every block.
  std::int64_t checkpoint_layers = 0;
  /// Training: selective recomputation, a set of RecomputeModule bits (Megatron-Core's
  /// recompute_modules beyond core attention); 0: none. Not with `checkpointing`.
  unsigned recompute = 0;
  /// Training: LoRA fine-tuning (Hu et al. 2021) with adapters of this rank; 0: every weight
  /// trains. The model's weights stay frozen, stored at the weight precision: backward computes
  /// no weight gradient for them, and gradients, optimizer state, the data-parallel sync and
  /// the update cover only the adapters. Each linear layer and each of attention's projections
  /// (a product of W: in -> out) gets A (in x rank) and B (rank x out), rank x (in + out)
  /// parameters and tokens x rank x (in + out) MACs; not the layer the loss reads (the output
  /// layer, as PEFT's "all-linear"), embeddings, routed experts or latent attention.
  std::int64_t lora_rank = 0;
  /// LoRA on attention layers' projections only (NeMo's target "attention": QKV and output),
  /// not on the other linear layers.
  bool lora_attention_only = false;
  /// With tensor parallelism: Megatron's sequence parallelism (Korthikanti et al. 2022) splits
  /// the layers between the tensor-parallel regions (norms, residual adds and other
  /// elementwise layers on the model's width) along the sequence, their work and activations
  /// 1/tensor_parallel per device, and turns each all-reduce into a reduce-scatter and an
  /// all-gather. Off, every device runs those layers whole and keeps their activations. Unset:
  /// on in training (Megatron-Core's and NeMo's recipes with tensor parallelism), off in
  /// inference (vLLM and TensorRT-LLM replicate them).
  std::optional<bool> sequence_parallel;
  std::optional<Precision> weight_precision;  ///< Weight storage (int4/int8 weight-only
                                              ///< quantisation); unset: `precision`.
  /// Inference: the routed experts' weight storage where it differs from the other weights'
  /// (gpt-oss ships its experts in MXFP4 and the rest in bf16); unset: `weight_precision`.
  std::optional<Precision> expert_weight_precision;
  std::optional<Precision> kv_precision;  ///< KV cache storage; unset: activations'.
  /// fp32 products stay in fp32 where the runtime would run them on TF32 tensor cores by
  /// default (PyTorch's convolutions: torch.backends.cudnn.allow_tf32 = False).
  bool strict_fp32 = false;
};

/// The precision LLM serving takes where none is given: bf16, as the checkpoints people serve
/// are stored, or fp16 on a device without a bf16 peak (T4, V100).
Precision llm_serving_precision(const Device& device);

/// The workload's precision on `device`: llm_serving_precision() where the workload took
/// serving's default (serving_default_precision), else its own.
Precision precision_on(const Workload& workload, const Device& device);

/// Time of one layer for one step (forward; forward + backward in training).
struct LayerEstimate {
  double flops = 0;  ///< FLOPs counted (the model's, by the counting options).
  /// FLOPs its kernels run: `flops` less the causally masked pairs a FlashAttention-style
  /// runtime skips, plus the QKᵀ its backward recomputes.
  double executed_flops = 0;
  double bytes = 0;  ///< Bytes moved.
  double compute_s = 0;
  double memory_s = 0;
  double overhead_s = 0;  ///< The floor that applied.
  double kernels = 0;     ///< Kernels it launches (forward; with backward in training).
  double time_s = 0;
  bool matrix_units = false;  ///< Whether its MACs ran on matrix units.
  Bound bound = Bound::kNone;
};

/// Memory needed on one device (a 1/tensor_parallel share of a replica), in bytes.
struct MemoryEstimate {
  double weight_bytes = 0;
  double gradient_bytes = 0;    ///< Training only.
  double optimizer_bytes = 0;   ///< Training only: optimizer state plus fp32 master weights.
  double activation_bytes = 0;  ///< Peak live (inference) or saved for backward (training).
  double total_bytes = 0;
  double per_sample_bytes = 0;  ///< The part that grows with the batch.
};

/// The prediction for one step over the graph's batch on one device.
struct Estimate {
  std::vector<LayerEstimate> layers;  ///< Parallel to Graph::layers.
  Profile profile = Profile::kEager;  ///< The profile used.
  std::string runtime;                ///< The runtime's id ("eager" etc. for a generic one).
  double kernels = 0;                 ///< Kernels launched per step per device.
  double floor_s = 0;                 ///< Host cost per kernel that applied (runtime or profile).
  double optimizer_s = 0;             ///< Training: the optimizer update.
  double lora_params = 0;             ///< Training with LoRA: the adapters' parameters (all).
  double recompute_s = 0;             ///< Training with checkpointing or selective
                                      ///< recomputation: the forward (of those) again.
  double communication_s = 0;         ///< Tensor-parallel all-reduces (in latency_s).
  double pipeline_bubble_s = 0;       ///< Training with pipeline stages: fill and drain.
  /// Training with pipeline stages: the heaviest stage's time over the stages' mean (1: an even
  /// split), the first stage holding the layers before the blocks (the embedding), the last
  /// those after them (final norm, output layer, loss), as Megatron-Core places them.
  double pipeline_imbalance = 1;
  std::int64_t pipeline_heaviest_stage = 0;  ///< Which stage it is, from 0.
  /// Training with pipeline stages: what the sends between stages add to the step (in
  /// latency_s); one send of each is the boundary activation's bytes / tensor_parallel.
  double pipeline_send_s = 0;
  double pipeline_send_bytes = 0;       ///< One send: a micro-batch's boundary activation.
  std::string pipeline_link;            ///< The link between stages ("" when not modelled).
  bool pipeline_sends_modelled = true;  ///< False: no link in the table for the stages.
  /// Training with context parallelism: the ring attention's K and V sends of the device's step
  /// (forward, backward and any recompute of each of its micro-batches) and what the attention
  /// layers' own time does not hide of them (in latency_s).
  double context_parallel_send_s = 0;
  double context_parallel_s = 0;
  std::string context_parallel_link;      ///< "" when not modelled.
  bool context_parallel_modelled = true;  ///< False: no link in the table for the ring.
  /// With expert parallelism: the moe layers' token exchanges of the device's step (dispatch and
  /// combine forward, their gradients backward, again on recompute; not overlapped, in
  /// latency_s), how many, and the bytes a device sends to the others in them. Each is an
  /// `expert_collective`: an all-to-all, or under the all-gather dispatcher an all-gather +
  /// reduce-scatter pair (an all-reduce where the group holds the same tokens).
  double expert_parallel_s = 0;
  int alltoalls = 0;
  double alltoall_bytes = 0;
  /// The exchange, singular, as a string literal.
  std::string_view expert_collective = "all-to-all";
  std::string expert_parallel_link;        ///< "" when not modelled.
  std::int64_t expert_parallel_group = 0;  ///< Devices of an exchange: E, or T_e x E gathered.
  bool expert_parallel_modelled = true;    ///< False: no link in the table for the group.
  /// How often each layer's time recurs in a device's step, on average: micro-batches /
  /// pipeline stages (1 without either). A layer's share of the step is time x this / latency.
  double layer_repeats = 1;
  int allreduces = 0;                  ///< How many per step (with sequence parallelism,
                                       ///< reduce-scatter + all-gather pairs).
  double allreduce_bytes = 0;          ///< Bytes per device all-reduced per step.
  bool sequence_parallel = false;      ///< Tensor parallelism with sequence parallelism.
  bool communication_modelled = true;  ///< False: tensor parallel on a device with no link.
  /// The link the tensor-parallel all-reduces cross; both ("NVLink 4 + InfiniBand ...") when
  /// the group spans nodes and reduces in two levels.
  std::string communication_link;
  double communication_bandwidth = 0;  ///< Bytes/s per direction a device gets (network: across).
  /// Training with data-parallel replicas: one all-reduce of the device's gradients per step,
  /// overlapped with the backward pass of the step's last micro-batch. ZeRO-2: a reduce-scatter
  /// of the gradients per micro-batch, overlapped with its backward, and one all-gather of the
  /// weights after the optimizer step. ZeRO-3: per micro-batch two all-gathers of the weights
  /// (forward, backward) and a reduce-scatter of the gradients, overlapped with that
  /// micro-batch's forward and backward.
  double data_parallel_s = 0;
  double data_parallel_exposed_s = 0;  ///< The part compute does not hide (in latency_s).
  /// Bytes per device as an all-reduce's operand (a ring moves 2(n-1)/n of them): the
  /// gradients; ZeRO-2: (micro-batches x gradients + weights) / 2; ZeRO-3: micro-batches x
  /// (weights + gradients / 2).
  double data_parallel_bytes = 0;
  std::string data_parallel_link;      ///< The link(s) it is timed on ("" when none).
  double data_parallel_bandwidth = 0;  ///< Bytes/s per direction a device gets (network: across).
  bool data_parallel_modelled = true;  ///< False: replicas but no link in the table.
  /// With an input rate: the time a replica's input pipeline takes for the step's samples, and
  /// what the step waits for them beyond its own time (in latency_s; 0: not input-bound).
  double input_s = 0;
  double input_wait_s = 0;
  double latency_s = 0;  ///< Inference: one forward pass; training: one step (all micro-batches).
  double throughput_per_s = 0;      ///< Samples per second over all replicas.
  double flops = 0;                 ///< FLOPs counted per step per device.
  double executed_flops = 0;        ///< FLOPs its kernels run (LayerEstimate::executed_flops).
  double bytes = 0;                 ///< Bytes moved per step per device.
  double achieved_flops_per_s = 0;  ///< flops / latency, per device.
  double sparsity_speedup = 1;      ///< The 2:4 factor applied to weight MACs (1: none).
  MemoryEstimate memory;
  bool fits = false;           ///< memory.total_bytes <= device memory.
  std::int64_t max_batch = 0;  ///< Largest batch that fits (0: none; -1: no batch dim).
};

/// Data-parallel replicas: devices / (tensor_parallel × pipeline_parallel × context_parallel).
/// FLOPs of one training micro-batch of `graph` as `workload` trains it, recompute aside: the
/// forward and backward passes; with LoRA without the frozen weights' gradient products and
/// with the adapters' products (the model FLOPs of MFU).
double training_model_flops(const Graph& graph, const Workload& workload);

/// Throws capcalc::Error unless all are at least 1, the groups divide devices, zero_stage is 0 to 3
/// (above 0 only in training) and pipelines and micro-batches are asked for in training only,
/// expert_parallel divides the replicas x context_parallel (with whole experts,
/// expert_tensor_parallel 1: tensor_parallel x those), expert_tensor_parallel is 1 or
/// tensor_parallel and moe_imbalance is 1 to 1000.
std::int64_t data_parallel_replicas(const Workload& workload);
/// The devices that hold the same weights: the replicas × context_parallel. Training reduces
/// the gradients, and ZeRO shards, over them. Throws as data_parallel_replicas.
std::int64_t data_parallel_shards(const Workload& workload);
/// The devices that split each routed expert: expert_tensor_parallel, else tensor_parallel.
std::int64_t expert_tensor_parallel(const Workload& workload);
/// Each routed expert whole on one device while tensor parallelism splits the other weights
/// (expert_tensor_parallel 1 with tensor_parallel above 1).
bool whole_experts(const Workload& workload);

/// " (tensor-parallel T)", " (pipeline P x M micro-batches)" and ", ZeRO-S" where they apply,
/// for workload descriptions.
std::string parallelism_text(const Workload& workload);

/// `precision`'s name, with the FP8 recipe for fp8: "bf16", "fp8 (tensorwise)".
std::string precision_text(Precision precision, Fp8Recipe recipe);

/// Why `tensor_parallel` devices cannot split the model's attention: a degree that does not
/// divide a layer's query heads, or its KV heads neither divide nor are divided by ("--tensor-
/// parallel 3 does not divide the 32 attention heads of \"layers.0.self_attn\""); none if they can.
std::optional<std::string> tensor_parallel_problem(const Graph& graph,
                                                   std::int64_t tensor_parallel);

/// Why the model's experts do not take `expert_parallel` devices and `moe_imbalance`: a degree
/// that does not divide a moe layer's experts ("--expert-parallel 3 does not divide the 8
/// experts of \"layers.0.moe\""), or either setting for a model with no moe layer; none if they do.
std::optional<std::string> expert_parallel_problem(const Graph& graph, std::int64_t expert_parallel,
                                                   double moe_imbalance = 1);

/// Why selective recomputation of `modules` (RecomputeModule bits) does not apply to `graph`:
/// a module that recomputes none of its layers; nullopt when each recomputes some.
std::optional<std::string> recompute_problem(const Graph& graph, unsigned modules);

/// Predicts one step. Throws capcalc::Error if the device cannot compute in the precision, or
/// with tensor_parallel_problem's or expert_parallel_problem's message.
Estimate estimate(const Graph& graph, const Device& device, const PerformanceParams& params,
                  const Workload& workload);

/// The per-layer half of estimate(): what depends on the layers, the device, the precision,
/// the runtime, tensor parallelism and checkpointing, but not on pipeline stages,
/// micro-batches, replicas or ZeRO. A layout search computes it once per shape and prices each
/// layout with estimate_schedule().
struct LayerPass {
  Estimate partial;       ///< Layers, their sums and the tensor-parallel all-reduces.
  double backward_s = 0;  ///< Training: one micro-batch's backward through the whole model.
  GraphTotals totals;     ///< graph_totals() of the graph.
  /// For pipeline stages: the blocks (top-level entries with attention; 0 in a model without
  /// attention, whose layers split evenly), and one micro-batch's time (forward and backward)
  /// of the layers before the first block and after the last.
  std::int64_t blocks = 0;
  double before_blocks_s = 0;
  double after_blocks_s = 0;
  /// The blocks --checkpoint-layers counts (top-level entries of more than one layer), once.
  std::int64_t checkpoint_blocks = 0;
};

/// Whether Megatron-Core splits `blocks` over `chunks` pipeline chunks (P x V) counting the
/// embedding and the loss as a block each (account_for_embedding_in_pipeline_split and
/// account_for_loss_in_pipeline_split, as Megatron-Bridge's Llama 3.1 405B recipes set): the
/// blocks do not divide, the blocks + 2 do, at least two units a chunk.
bool pipeline_counts_ends(std::int64_t blocks, std::int64_t chunks);

LayerPass estimate_layers(const Graph& graph, const Device& device, const PerformanceParams& params,
                          const Workload& workload);

/// The schedule half: pipeline, data parallelism, optimizer, memory and fit, for `workload`,
/// which must agree with the pass's in everything estimate_layers() reads. `keep_layers`:
/// copy the per-layer estimates into the result (a search leaves them out).
Estimate estimate_schedule(const LayerPass& pass, const Graph& graph, const Device& device,
                           const PerformanceParams& params, const Workload& workload,
                           bool keep_layers);

/// The pass for checkpointing `share` of the blocks (--checkpoint-layers): `full`'s (every block)
/// with its recompute, and the collectives recompute repeats, taken `share` of the way from
/// `none`'s (the same workload without checkpointing). That is what estimate_layers() gives
/// for that share (each is linear in it) but for context parallelism's exposed sends, whose
/// part that outlasts each layer is not. Without the per-layer vector: for
/// estimate_schedule(..., false), with the workload checkpointing the blocks that make `share`.
LayerPass mix_checkpoint_passes(const LayerPass& none, const LayerPass& full, double share);

/// An LLM serving request: `batch` concurrent sequences of a prompt and generated tokens.
struct ServingRequest {
  std::int64_t prompt_tokens = 512;
  std::int64_t output_tokens = 128;
};

/// Prefill and decode of a request.
struct ServingEstimate {
  Estimate prefill;                      ///< The prompt, all sequences at once.
  Estimate decode;                       ///< One decode step at the mean context.
  std::int64_t mean_context = 0;         ///< Cached tokens in the mean decode step.
  double ttft_s = 0;                     ///< Time to first token: the prefill.
  double decode_step_s = 0;              ///< Per generated token, all sequences.
  double tokens_per_s_per_sequence = 0;  ///< Decode tokens per second of one sequence.
  double tokens_per_s = 0;               ///< Decode tokens per second of all replicas' batches.
  double request_latency_s = 0;          ///< Prefill + (output_tokens - 1) decode steps.
  double kv_bytes_per_token = 0;         ///< One token of one sequence (all layers, K and V).
  double kv_bytes = 0;                   ///< The whole batch at full context, per device.
  double memory_bytes = 0;               ///< Weights + KV cache + prefill activations, per device.
  bool fits = false;
  std::int64_t max_batch = 0;          ///< Sequences of this context that fit.
  std::int64_t max_cached_tokens = 0;  ///< Tokens of KV cache that fit beside the weights.
};

/// Builds the graph for a sequence length and a KV-cache length (the model with its "seq"
/// dimension set and CountOptions::kv_cache_length).
using ServingGraphBuilder = std::function<Graph(std::int64_t seq, std::int64_t cached)>;

/// Predicts prefill (seq = prompt) and decode (seq = 1 over the cache; its cost is affine in
/// the context, so the mean step is the step at the mean context).
ServingEstimate estimate_serving(const ServingGraphBuilder& build, const Device& device,
                                 const PerformanceParams& params, const Workload& workload,
                                 const ServingRequest& request);

/// A linear layer whose matrix product misses the tensor cores' granularity: NVIDIA's Matrix
/// Multiplication Background User's Guide asks for dimensions that are multiples of 16 bytes
/// (8 elements in fp16/bf16, 4 in tf32, 16 in fp8/int8); cuBLAS runs other shapes with slower
/// kernels. capcalc times every product at the same fraction of the peak, so this is a warning
/// beside the estimate, not a part of it (GPT-2's LM head, 50,257 outputs, ran at 13 % of an
/// H200's bf16 peak: data/validation/README.md).
struct MisalignedLayer {
  std::string name;           ///< The layer, e.g. "lm_head".
  std::string dimension;      ///< "output features" or "input features".
  std::int64_t size = 0;      ///< Its size, e.g. 50257.
  std::int64_t multiple = 0;  ///< What it should be a multiple of at the precision, e.g. 8.
  std::int64_t padded = 0;    ///< `size` rounded up to a multiple of 64, e.g. 50304.
  double share_of_macs = 0;   ///< The layer's share of the model's forward MACs.
};

/// The linear layers of `graph` that miss the granularity at `precision` on `device`: only on
/// NVIDIA devices with a matrix peak at that precision (empty otherwise), heaviest first; the
/// output layer's features count as aligned where `runtime` pads the vocabulary.
std::vector<MisalignedLayer> misaligned_matrix_layers(const Graph& graph, const Device& device,
                                                      Precision precision,
                                                      const std::optional<Runtime>& runtime = {});

/// A whole training run.
struct TrainingRun {
  double samples = 0;  ///< Samples processed (dataset size × epochs, or tokens / seq).
  std::optional<double> price_per_device_hour_usd;  ///< Unset: no cost.
  double power_w = 0;                               ///< Per device (TDP); 0: no energy.
};

struct TrainingTotals {
  double steps = 0;         ///< Optimizer steps (global batch = batch × devices).
  double time_s = 0;        ///< Wall-clock time.
  double device_hours = 0;  ///< time × devices.
  std::optional<double> cost_usd;
  std::optional<double> energy_kwh;  ///< At the devices' TDP: an upper bound.
};

/// The run at `step` per optimizer step: the global batch is batch × data-parallel replicas and
/// every device is paid for.
TrainingTotals training_totals(const Estimate& step, std::int64_t batch, const Workload& workload,
                               const TrainingRun& run);

}  // namespace capcalc
