// A workload as a user writes it — command-line flags, a budget file, a measurement file — and
// the one validation that turns it into a Workload. Each setting has the key that the JSON
// output's "workload" object gives it; every message names settings by key
// (Error::naming_keys), which a file reader places at the key and the CLI spells as its flag.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "capcalc/error.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/predict.hpp"

namespace capcalc {

/// The largest figures a training run may be given (flags and file keys), far past any run
/// made (2025's largest: some 4e13 tokens): past them its time, energy and cost stop being
/// finite numbers.
inline constexpr double kMaxDatasetSize = 1e15;     ///< Samples per epoch.
inline constexpr double kMaxEpochs = 1e6;           ///< Epochs.
inline constexpr double kMaxTrainingTokens = 1e18;  ///< Tokens.
inline constexpr double kMaxPricePerHourUsd = 1e6;  ///< USD per device-hour.
/// Devices of one workload (all replicas' and stages'), a hundred times 2025's largest
/// clusters: past it the run's device-hours, cost and energy are figures of no machine.
inline constexpr std::int64_t kMaxDevices = 10'000'000;

/// A training run described by the user: dataset size × epochs, or tokens.
struct RunSize {
  std::optional<double> dataset_size;  ///< Samples per epoch.
  std::optional<double> epochs;        ///< Default 1; needs dataset_size.
  std::optional<double> tokens;        ///< Total tokens; samples = tokens / the "seq" dimension.
  bool empty() const { return !dataset_size && !epochs && !tokens; }
};

/// Samples in the run for this graph; nullopt if `size` is empty. Throws capcalc::Error if
/// both tokens and dataset_size are given, epochs come without dataset_size, or tokens are
/// given for a graph without a "seq" dimension (`model_file` names it in the message).
std::optional<double> run_samples(const RunSize& size, const Graph& graph,
                                  const std::string& model_file);

/// LoRA's largest rank (`lora_rank`, --lora-rank): adapters past it would outgrow any weight
/// matrix they adapt.
inline constexpr std::int64_t kMaxLoraRank = 65536;

/// Every workload setting as written; names are checked by workload_from(). Defaults are
/// Workload's.
struct WorkloadSpec {
  /// `precision`: weights, activations and math; "": bf16 for LLM serving (`prompt_tokens`,
  /// Workload::serving_default_precision), else fp32.
  std::string precision;
  std::string mode = "inference";  ///< `mode`: "inference" or "training".
  std::string profile;             ///< `profile`; "": the device type's default.
  /// `runtime`: an id or alias, resolved by the caller; "": none. Its profile replaces
  /// `profile` (a measurement names both; the CLI and budget files take one).
  std::string runtime;
  std::string sparsity = "dense";  ///< `sparsity`: "dense", "2:4" or "unstructured".
  std::string optimizer;           ///< `optimizer` (training); "": Adam.
  /// `fp8_recipe` (fp8 precision only): "delayed", "tensorwise", "blockwise" or "mxfp8";
  /// "": delayed.
  std::string fp8_recipe;
  /// `devices`: devices in all; 1 (the default) means one replica of
  /// tensor_parallel × pipeline_parallel devices.
  std::int64_t devices = 1;
  /// `data_parallel` (budget files): replicas, each tensor_parallel × pipeline_parallel
  /// devices; not with `devices` above 1.
  std::optional<std::int64_t> data_parallel;
  std::int64_t tensor_parallel = 1;         ///< `tensor_parallel`: devices per pipeline stage.
  std::int64_t pipeline_parallel = 1;       ///< `pipeline_parallel` (training): stages per replica.
  std::int64_t context_parallel = 1;        ///< `context_parallel` (training): sequence splits.
  std::int64_t expert_parallel = 1;         ///< `expert_parallel`: devices splitting the experts.
  double moe_imbalance = 1;                 ///< `moe_imbalance`: busiest expert's load / mean.
  std::string input_rate;                   ///< `input_rate`: a replica's input, "3000/s".
  std::int64_t micro_batches = 1;           ///< `micro_batches` (training): per optimizer step.
  std::int64_t virtual_stages = 1;          ///< `virtual_stages` (training): chunks per stage.
  int zero_stage = 0;                       ///< `zero_stage` (training): 0 to 3.
  bool checkpointing = false;               ///< `checkpointing` (training).
  std::int64_t checkpoint_layers = 0;       ///< `checkpoint_layers` (with checkpointing).
  std::int64_t lora_rank = 0;               ///< `lora_rank` (training): LoRA's rank; 0: none.
  std::string lora_targets = "all-linear";  ///< `lora_targets`: "all-linear" or "attention".
  std::optional<bool> sequence_parallel;    ///< `sequence_parallel`: with tensor_parallel.
  std::string weight_precision;             ///< `weight_precision`; "": `precision`.
  std::string expert_weight_precision;      ///< `expert_weight_precision`; "": `weight_precision`.
  std::string kv_precision;                 ///< `kv_precision` (LLM serving); "": activations'.
  bool allow_tf32 = true;                   ///< `allow_tf32` (measurements): false is strict fp32.
  RunSize run;                              ///< `dataset_size`, `epochs`, `tokens` (training).
  std::optional<double> price_per_hour_usd;   ///< `price_per_hour_usd`: USD per device-hour.
  std::optional<std::int64_t> prompt_tokens;  ///< `prompt_tokens`: LLM serving (inference).
  std::optional<std::int64_t> output_tokens;  ///< `output_tokens`: LLM serving.
  /// `expert_tensor_parallel`: devices splitting each expert, 1 or `tensor_parallel`; unset:
  /// `tensor_parallel`.
  std::optional<std::int64_t> expert_tensor_parallel;
  /// `moe_dispatcher` (expert parallelism only): "alltoall", "deepep" or "hybridep"; "":
  /// alltoall.
  std::string moe_dispatcher;
  /// `recompute` (training, not with `checkpointing`): Megatron-Core's recompute_modules,
  /// "core_attn" (what every run assumes), "layernorm", "mlp", "moe_act", "mla_up_proj".
  std::vector<std::string> recompute;
};

/// Where each setting of a spec was read: a file reader fills it, so that workload_from()
/// places each error at the key it blames (the object itself for a key not given).
struct SpecLocations {
  SourceLocation object;                                    ///< The object read.
  std::map<std::string, SourceLocation, std::less<>> keys;  ///< By the spec's key.
  std::string devices_key = "devices";  ///< The file's key for `devices` (in messages).
};

/// Checks the settings against each other and builds the Workload; `runtime` is left unset for
/// the caller to resolve spec.runtime. Refuses: unknown names; a `devices` count that is not a
/// multiple of tensor_parallel × pipeline_parallel, `devices` with `data_parallel`, counts past
/// 64 bits; an expert_parallel that does not divide the devices holding the same weights, a
/// moe_imbalance outside 1 to 1000; optimizer, checkpointing, pipelines, micro-batches and ZeRO
/// outside training; virtual stages without a pipeline; `kv_precision` without `prompt_tokens`; a
/// run given as both tokens and dataset_size, `epochs` without `dataset_size`, a run outside
/// training; serving in training. Throws capcalc::Error naming keys; with `where`, located at the
/// key and with the keys quoted ("dataset_size").
Workload workload_from(const WorkloadSpec& spec, const SpecLocations* where = nullptr);

}  // namespace capcalc
