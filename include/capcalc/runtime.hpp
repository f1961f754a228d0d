// The runtime table: how the frameworks and engines people run (PyTorch eager, torch.compile,
// TensorRT, ONNX Runtime, vLLM, llama.cpp, ...) execute a model's layers. A runtime is data
// (data/runtimes.json, documented in docs/runtimes.md): its execution profile (per-kernel floor,
// fusion, collective latency) and how many kernels each layer class becomes. Every figure cites
// the runtime's docs or source code.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"

namespace capcalc {

/// A memory tier of a runtime's serving defaults: on a device with at least `min_memory_bytes`
/// whose id or name contains none of `except_names`, its values replace the base ones (0: keep
/// the base value).
struct ServingTier {
  double min_memory_bytes = 0;
  std::vector<std::string> except_names;  ///< Lower case.
  std::int64_t max_num_batched_tokens = 0;
  std::int64_t max_num_seqs = 0;
  double memory_utilization = 0;
  double reserved_memory_bytes = 0;
};

/// How FP8 tensors are scaled (Megatron-Core's --fp8-recipe, Transformer Engine's recipes):
/// delayed scaling from an amax history, per-tensor current scaling ("tensorwise", NeMo's
/// FP8-CS), 128-element blocks ("blockwise") or MXFP8's 32-element blocks (Blackwell).
enum class Fp8Recipe { kDelayed, kTensorwise, kBlockwise, kMxfp8 };
inline constexpr std::size_t kFp8RecipeCount = 4;
std::string_view fp8_recipe_name(Fp8Recipe recipe);  ///< "delayed", "tensorwise", ...
std::optional<Fp8Recipe> parse_fp8_recipe(std::string_view name);
std::vector<std::string_view> fp8_recipe_names();

/// How a moe layer's tokens reach the devices holding their experts (Megatron-Core's
/// --moe-token-dispatcher-type and --moe-flex-dispatcher-backend): NCCL's all-to-all, one copy
/// of a token for each of its experts; DeepEP or HybridEP, one copy for each device holding at
/// least one of them, and across nodes one copy for each node, sent over the network to the
/// device of the same local rank there and forwarded over the scale-up link; or all-gather
/// (Megatron-Core's own default, `allgather`; vLLM's expert parallelism), every token gathered
/// to every device of the expert group and the outputs reduce-scattered back (all-reduced where
/// the group is a replica's tensor-parallel devices, which hold the same tokens).
enum class MoeDispatcher { kAllToAll, kDeepEP, kHybridEP, kAllGather };
std::string_view moe_dispatcher_name(MoeDispatcher dispatcher);   ///< "alltoall", "deepep", ...
std::string_view moe_dispatcher_title(MoeDispatcher dispatcher);  ///< "all-to-all", "DeepEP", ...
std::optional<MoeDispatcher> parse_moe_dispatcher(std::string_view name);
std::vector<std::string_view> moe_dispatcher_names();

/// Megatron-Core's selective recomputation modules (`recompute_modules`) beyond core attention,
/// whose recomputation capcalc assumes in every run (FlashAttention-style kernels keep no
/// scores). Each drops activations a training step would keep and runs their forward again
/// in backward; a Workload holds a set of them as bits.
enum class RecomputeModule : unsigned {
  kCoreAttn = 0,        ///< Core attention: what every run assumes (accepted; it adds nothing).
  kLayernorm = 1,       ///< The norms before a moe layer or latent attention: their outputs.
  kMlp = 2,             ///< A dense MLP (the layers named `<...>.mlp.<...>`): all their outputs.
  kMoeAct = 4,          ///< A moe layer's expert activation (LayerCounts::recomputable).
  kMlaUpProj = 8,       ///< Latent attention's up-projections (LayerCounts::recomputable).
  kMoe = 16,            ///< A moe layer whole, its token exchange included.
  kSharedExperts = 32,  ///< A moe layer's shared expert (LayerCounts::shared_recomputable).
};
std::string_view recompute_module_name(RecomputeModule module);  ///< "layernorm", "moe_act", ...
/// Megatron-Core's name (a hyphen for an underscore also reads), or none.
std::optional<RecomputeModule> parse_recompute_module(std::string_view name);
std::vector<std::string_view> recompute_module_names();
/// The modules of a set, in the order above; and joined: "layernorm, moe_act" ("" for none).
std::vector<std::string_view> recompute_modules_of(unsigned modules);
std::string recompute_modules_text(unsigned modules);

/// What a runtime's memory fraction is a fraction of, and what it holds.
enum class MemoryFraction {
  kDevice,  ///< Of device memory: weights, activations and KV cache (vLLM).
  kFree,    ///< Of what the weights and activations leave free (TensorRT-LLM).
  /// Of device memory: weights and KV cache only, activations and CUDA graphs outside it
  /// (SGLang's mem_fraction_static).
  kStatic,
};

/// How a continuous-batching replica forms its steps: the runtime's scheduler.
enum class Scheduler {
  /// vLLM's V1 scheduler: running requests' tokens first, then waiting prompts (or chunks) in
  /// the same step while the budget and blocks allow; when the cache is full the last running
  /// request is preempted (recomputed later).
  kVllm,
  /// SGLang's: a step is a prefill batch or a decode batch, never both (mixed chunks off by
  /// default). Prefill comes first while waiting requests can be admitted; admission reserves
  /// each request's output (clipped at 4,096 tokens) in full for the new ones and times a
  /// ratio for the running ones (0.7, falling by a 600th of 0.602 per decode step to 0.098); a
  /// decode step short of cache retracts requests (fewest tokens generated first, then the
  /// longest prompt) to the back of the queue and raises the ratio (docs/serving.md).
  kSglang,
};

/// Continuous-batching defaults of an LLM serving runtime, from its own source or docs (used
/// by `capcalc serve`).
struct ServingDefaults {
  std::int64_t max_num_batched_tokens = 2048;  ///< Token budget per step.
  std::int64_t max_num_seqs = 256;             ///< Sequences per step.
  std::int64_t block_size = 16;                ///< Tokens per KV-cache block.
  double memory_utilization = 0.9;             ///< Fraction of device memory the runtime takes.
  MemoryFraction fraction_of = MemoryFraction::kDevice;
  /// Memory kept outside the fraction, in bytes (SGLang); when above 0, serving_defaults_for()
  /// sets memory_utilization to round((memory - reserved) / memory, 3). 0: unused.
  double reserved_memory_bytes = 0;
  bool chunked_prefill = true;
  /// A request is admitted only with blocks for its whole length, and never preempted
  /// (TensorRT-LLM's GUARANTEED_NO_EVICT capacity policy).
  bool reserve_full_request = false;
  /// The runtime's scheduler ("scheduler" in the table; default vLLM's).
  Scheduler scheduler = Scheduler::kVllm;
  /// Tiers by device memory, ascending: the last that applies replaces the base values
  /// (vLLM: 70 GiB, not A100).
  std::vector<ServingTier> tiers;
};

/// `defaults` on `device`: the base values with those of the last tier that applies (none:
/// the base values), the tiers cleared; a reserve becomes the memory fraction.
ServingDefaults serving_defaults_for(const ServingDefaults& defaults, const Device& device);

/// The runtime table's names: "device", "free", "static"; "vllm", "sglang".
std::string_view memory_fraction_name(MemoryFraction fraction);
std::string_view scheduler_name(Scheduler scheduler);

/// PyTorch's multi-tensor apply (aten/src/ATen/native/cuda/MultiTensorApply.cuh): a foreach
/// op over a list of tensors launches one kernel per batch of chunks; a batch closes at
/// max_blocks chunks or at the depth's tensor limit (depth: the lists the op reads and writes).
struct MultiTensorApply {
  double chunk_elements = 0;                 ///< Elements per chunk (kChunkSize); 0: unused.
  double max_blocks = 0;                     ///< Chunks per launch (depth_to_max_blocks).
  std::vector<double> max_tensors_by_depth;  ///< Tensors per launch, depth 1 first.
};

/// What a training step launches beyond one kernel per forward kernel, where the runtime's
/// source says (PyTorch's autograd, autocast and foreach optimizers).
struct TrainingKernels {
  /// Backward kernels of a layer of each class (indexed by OpClass); 0: twice its forward's.
  std::array<double, kOpClassCount> backward_per_class{};
  /// Per native operator, where it differs from its class.
  std::vector<std::pair<std::string, double>> backward_per_op;
  double bias_gradient = 0;  ///< Per bias tensor: the reduction of its gradient over the batch.
  /// Mixed precision: native operators autocast runs in fp32; each matrix product reading
  /// one's output casts it to 16 bits (autocast_input_casts kernels forward, as many backward).
  std::vector<std::string> autocast_fp32_ops;
  double autocast_input_casts = 0;
  /// Kernels of the step's cross-entropy loss on the model's output, forward and backward
  /// (log_softmax and nll_loss; the seed gradient, nll_loss's and log_softmax's backward).
  double loss_forward = 0;
  double loss_backward = 0;
  /// Mixed precision: kernels per 16-bit input of an op whose other inputs are fp32 (autograd
  /// casts that input's gradient back to its dtype).
  double mixed_dtype_gradient_casts = 0;
  /// 16-bit (channels-last) batch norm: kernels zeroing the grid semaphores of each
  /// statistics and gradient reduction whose grid has several rows.
  double batchnorm_semaphore_zeroing = 0;
  /// Backward kernels of a self-attention layer summing its input's gradients from the Q, K
  /// and V projections that read it.
  double attention_input_gradient_sums = 0;
  MultiTensorApply multi_tensor;
  /// Per optimizer name ("sgd", "momentum", "adam"): the depth of each foreach op of a step.
  std::vector<std::pair<std::string, std::vector<int>>> optimizer_foreach_depths;
};

/// One runtime.
struct Runtime {
  std::string id;                        ///< Kebab-case, e.g. "pytorch-eager".
  std::string name;                      ///< As its makers write it, e.g. "PyTorch eager".
  std::vector<std::string> aliases;      ///< Other names --runtime takes (the old profile names).
  Profile profile = Profile::kEager;     ///< Floor per kernel, fusion and collective latency.
  std::vector<DeviceType> device_types;  ///< Where it runs; empty: anywhere.
  /// Kernels a layer of each class becomes (indexed by OpClass; views 0, others 1 unless the
  /// table says otherwise).
  std::array<double, kOpClassCount> kernels_per_class{};
  /// Per native operator, where it differs from its class (Hugging Face's eager RMSNorm is
  /// eight kernels): pairs of operator name and kernels.
  std::vector<std::pair<std::string, double>> kernels_per_op;
  /// Kernels a rotary position embedding adds to an attention layer that applies one.
  double rotary_kernels = 0;
  /// Kernels the KV-cache update adds to each causal self-attention layer in inference: the
  /// prefill fills the cache as a decode step extends it (transformers' DynamicCache.update
  /// concatenates in both); training keeps no cache.
  double cache_update_kernels = 0;
  /// Kernels a mixture-of-experts layer adds per routed expert the device holds (experts /
  /// expert-parallel size): runtimes that launch each expert's products apart (Transformer
  /// Engine's GroupedLinear, one cuBLAS GEMM per expert) rather than as one grouped kernel.
  double local_expert_kernels = 0;
  /// Kernels a mixture-of-experts layer whose experts carry biases adds per routed expert the
  /// device holds, applying each expert's output bias apart from its product (Megatron-Core's
  /// TEGroupedMLP._apply_bias: a multiply and an add per expert); each passes the expert's
  /// output rows, read and written once. 0: the bias rides in the product's epilogue.
  double expert_bias_kernels = 0;
  /// FP8 math (indexed by Fp8Recipe): kernels that quantize one routed expert's input, per
  /// expert the device holds and per quantized tensor (the two expert products' inputs
  /// forward, their output gradients backward). Transformer Engine's GroupedLinear quantizes
  /// each expert's rows apart except under delayed scaling, which has one fused cast.
  std::array<double, kFp8RecipeCount> fp8_expert_quantize_kernels{};
  /// The output layer's features (the vocabulary) padded to a multiple of this on each
  /// tensor-parallel device (Megatron's make_vocab_size_divisible_by); 0: not padded.
  std::int64_t vocab_padding = 0;
  /// Its attention kernels skip the tiles a causal mask hides (FlashAttention's loop over key
  /// blocks stops at the diagonal): a layer's masked pairs (LayerCounts::masked_score_macs)
  /// take no time. False: every counted pair is computed, as a dense product plus a mask.
  bool flash_attention = false;
  /// FP8 training: bytes the quantize kernels move per element of each weighted product's
  /// input (forward) and output gradient (backward), beside the product (Transformer Engine
  /// reads the 16-bit tensor and writes row-wise and transposed FP8 copies: 2 + 1 + 1); 0:
  /// none counted.
  double fp8_quantize_bytes = 0;
  /// Mixed-precision training (16-bit math over fp32 master weights): kernels per weight
  /// tensor of a layer's products in each direction (the cast to 16 bits forward, its
  /// gradient's cast back to fp32 backward).
  double autocast_weight_casts = 0;
  /// Per native operator, forward kernels when the activations are 16-bit, where they differ
  /// (PyTorch's batch norm leaves cuDNN for its native kernels).
  std::vector<std::pair<std::string, double>> kernels_per_op_16bit;
  TrainingKernels training;
  /// Native operators whose fp32 products run on TF32 tensor cores by default where the
  /// device has a TF32 peak (PyTorch: convolutions, torch.backends.cudnn.allow_tf32 = True;
  /// not matmuls, torch.backends.cuda.matmul.allow_tf32 = False since 1.12).
  std::vector<std::string> tf32_ops;
  /// Native operators that a fusing profile would fold into a neighbour but this runtime runs
  /// as kernels of their own (ONNX Runtime's SkipLayerNormalization and FastGelu: the norm and
  /// the activation stay, the residual and bias adds fold into them).
  std::vector<std::string> unfused_ops;
  /// Host cost per kernel launch on each device type (indexed by DeviceType, seconds), where
  /// the table gives one; 0: the hardware table's floor for the profile.
  std::array<double, kDeviceTypeCount> host_overhead_s{};
  std::vector<std::string> sources;  ///< URLs of the figures.
  std::string notes;
  std::optional<ServingDefaults> serving;  ///< LLM serving runtimes only.

  /// Kernels one forward pass of `layer` launches (0 for views); `narrow`: 16-bit activations;
  /// `training_step`: a training step's forward, which keeps no KV cache.
  double kernels(const Layer& layer, bool narrow = false, bool training_step = false) const;
  /// False for an operator in `unfused_ops`: a fusing profile may fold the others away.
  bool fuses(const Layer& layer) const;
  /// Kernels autograd launches for `layer`'s backward, given its forward's.
  double backward_kernels(const Layer& layer, double forward) const;
  /// Kernels one optimizer step launches over `tensors` parameter tensors holding `chunks`
  /// chunks in all (0 without a multi-tensor rule for the optimizer).
  double optimizer_kernels(std::string_view optimizer, double tensors, double chunks) const;
  bool runs_on(DeviceType type) const;
};

/// Rows of the grid PyTorch's channels-last batch-norm reductions launch over `reduction`
/// elements per channel and `channels` channels (flexible_launch_configs with coop_flag,
/// aten/src/ATen/native/cuda/Normalization.cuh); more than one row needs zeroed semaphores.
int channels_last_reduction_rows(double reduction, double channels);

/// The whole table.
struct RuntimeTable {
  std::string version;
  std::vector<Runtime> runtimes;

  /// By id or alias, ignoring case and treating '-', '_' and ' ' alike; nullptr if none.
  const Runtime* find(std::string_view name) const;
  /// The runtime, or a capcalc::Error naming the closest ("did you mean").
  const Runtime& get(std::string_view name) const;
  /// The runtime a profile name stands for (its alias), or a generic one of that profile.
  Runtime for_profile(Profile profile) const;
};

/// A runtime of `profile` with one kernel per layer and nothing else: what capcalc assumed
/// before runtimes were data, and what it uses when no runtime is named.
Runtime generic_runtime(Profile profile);

/// Parses a runtime table; problems are capcalc::Error with file and JSON pointer.
RuntimeTable parse_runtimes(std::string_view text, const std::string& file);
RuntimeTable load_runtimes(const std::string& path);
/// The table at `path` with the runtimes of each of `overlays` on top (same id replaces).
RuntimeTable load_runtimes(const std::string& path, const std::vector<std::string>& overlays);

}  // namespace capcalc
