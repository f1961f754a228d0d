// Flags that describe how a model is run (precision, mode, profile, parallelism, ...), bound to
// a WorkloadSpec (capcalc/workload_spec.hpp, which checks them as it checks budget and
// measurement files), for the subcommands that draw a single estimate (`estimate`, `roofline`,
// `report`), and the estimate they share. `compare` and `check` take the parallelism flags too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/report.hpp"
#include "capcalc/workload_spec.hpp"

#include "commands.hpp"
#include "usage.hpp"

namespace capcalc::cli {

// --devices N (all devices), --tensor-parallel T (devices per model replica) and --zero S
// (training state sharded over the replicas).
inline void add_parallel_options(CLI::App& sub, WorkloadSpec& spec) {
  whole_number(sub.add_option("--devices", spec.devices,
                              "Devices in all: tensor-parallel groups x data-parallel replicas "
                              "(training: one gradient all-reduce per step, overlapped with "
                              "backward)"))
      ->capture_default_str();
  whole_number(sub.add_option("--tensor-parallel,--tp", spec.tensor_parallel,
                              "Devices per model replica: layers, weights, state and KV cache "
                              "split over them, two all-reduces per attention layer over the "
                              "scale-up link; --devices defaults to it"))
      ->capture_default_str();
  whole_number(sub.add_option("--zero", spec.zero_stage,
                              "Training: ZeRO stage sharding state over the data-parallel "
                              "replicas: 1 optimizer state, 2 + gradients, 3 (FSDP) + weights"),
               0, 3)
      ->capture_default_str();
}

// --pipeline-parallel P, --micro-batches M, --virtual-stages V (training), --context-parallel C
// (training), --expert-parallel E and --moe-imbalance F.
inline void add_pipeline_options(CLI::App& sub, WorkloadSpec& spec) {
  whole_number(sub.add_option("--pipeline-parallel,--pp", spec.pipeline_parallel,
                              "Training: pipeline stages per replica (1F1B), each with 1/P of the "
                              "layers, weights and state; --devices defaults to T x P"))
      ->capture_default_str();
  whole_number(sub.add_option("--micro-batches", spec.micro_batches,
                              "Training: micro-batches (of --batch) per optimizer step: gradient "
                              "accumulation, the pipeline's M; the bubble is (P-1)/(M+P-1) of the "
                              "step"))
      ->capture_default_str();
  whole_number(sub.add_option("--context-parallel,--cp", spec.context_parallel,
                              "Training: devices that split each sequence (ring attention): 1/C "
                              "of the tokens, work and activations each, whole weights; "
                              "--devices defaults to T x P x C"))
      ->capture_default_str();
  whole_number(sub.add_option("--expert-parallel,--ep", spec.expert_parallel,
                              "MoE: devices that split each moe layer's routed experts (their "
                              "weights, gradients and optimizer state 1/E each); tokens go to "
                              "them and back as --moe-dispatcher says; E divides the replicas x "
                              "C and the experts"))
      ->capture_default_str();
  whole_number(sub.add_option_function<std::int64_t>(
      "--expert-tensor-parallel,--etp",
      [&spec](const std::int64_t& degree) { spec.expert_tensor_parallel = degree; },
      "MoE: devices that split each routed expert, 1 (whole experts, Megatron-Core's "
      "expert_tensor_parallel_size=1: no tensor-parallel collective in a moe layer; E divides "
      "T x replicas x C) or T (the default)"));
  one_of(sub.add_option("--moe-dispatcher", spec.moe_dispatcher,
                        "MoE with --expert-parallel: how tokens reach their experts, alltoall "
                        "(NCCL, a copy for each expert: the default), deepep or hybridep (a "
                        "copy for each device holding any, across nodes one for each node), "
                        "allgather (every token to every device of the expert x tensor-parallel "
                        "group, outputs reduce-scattered back: Megatron-Core's own default, "
                        "vLLM's)"),
         moe_dispatcher_names());
  number_in(sub.add_option("--moe-imbalance", spec.moe_imbalance,
                           "MoE: the busiest expert's load over the mean; the moe layers take "
                           "this many times as long (default 1: balanced, an assumption)"),
            1, 1000);
  whole_number(sub.add_option("--virtual-stages", spec.virtual_stages,
                              "Training: model chunks per pipeline stage (Megatron's interleaved "
                              "1F1B): the bubble is 1/V of 1F1B's, the stage sends V times as "
                              "many; M must be a multiple of P"))
      ->capture_default_str();
}

// --input-rate R: what the input pipeline delivers a replica (a data loader's samples/s).
inline void add_input_rate_option(CLI::App& sub, WorkloadSpec& spec) {
  sub.add_option("--input-rate", spec.input_rate,
                 "Samples per second each replica's input pipeline delivers (a data loader's "
                 "images/s, e.g. 3000/s): a step that consumes them faster waits for them and is "
                 "input-bound (default: never waits)");
}

// --dataset-size N [--epochs E] or --tokens T: a training run, read by run_samples.
inline void add_run_size_options(CLI::App& sub, RunSize& run) {
  count_above(sub.add_option("--dataset-size", run.dataset_size,
                             "Training run: samples per epoch (1.28M: SI suffixes k, M, G, T)"),
              0, kMaxDatasetSize);
  number_above(
      sub.add_option("--epochs", run.epochs, "Training run: epochs of --dataset-size (default 1)"),
      0, kMaxEpochs);
  count_above(sub.add_option("--tokens", run.tokens,
                             "Training run: total tokens, e.g. 2T (samples = tokens / seq); not "
                             "with --dataset-size or --epochs"),
              0, kMaxTrainingTokens);
}

// --optimizer: Adam when not given; an inference pass has no optimizer, so giving one there is an
// error rather than a flag quietly ignored.
inline void add_optimizer_option(CLI::App& sub, std::string& optimizer) {
  one_of(sub.add_option("--optimizer", optimizer, "Training optimizer (default adam)"),
         optimizer_names());
}

// --fp8-recipe: how FP8 tensors are scaled.
inline void add_fp8_recipe_option(CLI::App& sub, std::string& recipe) {
  one_of(sub.add_option("--fp8-recipe", recipe,
                        "With --precision fp8: how FP8 tensors are scaled, delayed (default), "
                        "tensorwise (current scaling, NeMo's FP8-CS), blockwise or mxfp8"),
         fp8_recipe_names());
}

// --weight-precision (weight-only quantisation) and --expert-weight-precision (the routed
// experts' storage where it differs: gpt-oss's MXFP4 experts beside bf16 attention).
inline void add_weight_precision_options(CLI::App& sub, std::string& weights,
                                         std::string& experts) {
  one_of(sub.add_option("--weight-precision", weights,
                        "Weight storage if it differs (int4/int8 weight-only quantisation)"),
         precision_names());
  one_of(sub.add_option("--expert-weight-precision", experts,
                        "Inference: the routed experts' weight storage if it differs from the "
                        "other weights' (int4 for gpt-oss's MXFP4 experts)"),
         precision_names());
}

// --kv-precision: the KV cache's storage. Only LLM serving (--prompt-tokens) keeps a cache.
inline void add_kv_precision_option(CLI::App& sub, std::string& kv_precision) {
  one_of(sub.add_option("--kv-precision", kv_precision,
                        "LLM serving (--prompt-tokens): KV cache storage (default: activations')"),
         precision_names());
}

// The workload of the flags with the LLM serving request's (--prompt-tokens, --output-tokens),
// which workload_from() checks with the rest.
WorkloadSpec with_serving(const WorkloadSpec& spec, const ServingArgs& serving);

// Refuses --kv-precision without --prompt-tokens, as workload_from() does.
void check_kv_precision(const std::string& kv_precision, const ServingArgs& serving);

// --lora-rank R and --lora-targets (training: LoRA fine-tuning), for a workload and for plan.
// --checkpoint-layers N: checkpointing of the first N blocks of each pipeline chunk.
inline void add_checkpoint_layers_option(CLI::App& sub, std::int64_t& layers) {
  whole_number(sub.add_option("--checkpoint-layers", layers,
                              "With --checkpointing: recompute only the first N blocks of each "
                              "pipeline chunk, keeping the others' activations (Megatron-Core's "
                              "recompute_method block, recompute_num_layers N)"));
}

// --recompute layernorm,moe_act: Megatron-Core's selective recomputation modules (a hyphen
// reads as an underscore, any case).
inline void add_recompute_option(CLI::App& sub, std::vector<std::string>& modules) {
  CLI::Option* option =
      sub.add_option("--recompute", modules,
                     "Training: recompute these modules in backward instead of keeping their "
                     "activations (Megatron-Core's recompute_modules), comma-separated: "
                     "layernorm (the norms before moe layers and latent attention), mlp "
                     "(dense MLPs), moe_act (the experts' activation), "
                     "mla_up_proj (latent attention's up-projections), moe (the moe layers "
                     "whole, their token exchange too), shared_experts (the moe layers' shared "
                     "experts); core_attn, Megatron-Core's "
                     "default, is what every run assumes")
          ->delimiter(',');
  one_of(option, recompute_module_names());
  // CLI11 runs the transform added last first.
  option->transform(CLI::Validator(
      [](std::string& text) {
        std::replace(text.begin(), text.end(), '-', '_');
        return std::string();
      },
      ""));
}

inline void add_lora_options(CLI::App& sub, std::int64_t& rank, std::string& targets) {
  whole_number(sub.add_option("--lora-rank", rank,
                              "Training: LoRA fine-tuning with adapters of this rank on every "
                              "linear layer and attention projection but the output layer; the "
                              "model's weights stay frozen (no weight gradients or optimizer "
                              "state for them)"),
               1, kMaxLoraRank);
  one_of(sub.add_option("--lora-targets", targets,
                        "With --lora-rank: all-linear (every linear layer and attention "
                        "projection but the output layer, PEFT's) or attention (attention's "
                        "projections only, NeMo's \"attention\")"),
         {"all-linear", "attention"})
      ->capture_default_str();
}

// The workload flags: the spec, and the files that add runtimes to --runtime's table.
struct WorkloadArgs : WorkloadSpec {
  std::vector<std::string> runtime_files;
};

inline void add_workload_options(CLI::App& sub, WorkloadArgs& args) {
  WorkloadSpec& spec = args;
  one_of(sub.add_option("-p,--precision", spec.precision,
                        "Number format of weights, activations and math (default: bf16 for LLM "
                        "serving, --prompt-tokens, fp16 on a device without bf16; else fp32)"),
         precision_names());
  one_of(sub.add_option("-m,--mode", spec.mode, "inference (a forward pass) or training (a step)"),
         mode_names())
      ->capture_default_str();
  one_of(sub.add_option("--profile", spec.profile,
                        "eager (framework, one kernel per layer), graph (graph executor, no "
                        "fusion), compiled (TensorRT, XLA, CUDA graphs: fused) or inductor "
                        "(torch.compile's default mode: fused, launched from Python); default: "
                        "compiled for ONNX models, else the device type's"),
         profile_names());
  add_runtime_options(sub, spec.runtime, args.runtime_files);
  one_of(sub.add_option("--sparsity", spec.sparsity,
                        "2:4 (structured, where the hardware supports it) or unstructured (no "
                        "speedup)"),
         sparsity_names())
      ->capture_default_str();
  add_fp8_recipe_option(sub, spec.fp8_recipe);
  add_optimizer_option(sub, spec.optimizer);
  add_parallel_options(sub, spec);
  add_pipeline_options(sub, spec);
  add_input_rate_option(sub, spec);
  add_weight_precision_options(sub, spec.weight_precision, spec.expert_weight_precision);
  sub.add_flag("--checkpointing", spec.checkpointing,
               "Training: keep only each top-level block's output, recompute the rest");
  add_checkpoint_layers_option(sub, spec.checkpoint_layers);
  add_recompute_option(sub, spec.recompute);
  add_lora_options(sub, spec.lora_rank, spec.lora_targets);
  one_of(sub.add_option_function<std::string>(
             "--sequence-parallel",
             [&spec](const std::string& v) { spec.sequence_parallel = v == "on"; },
             "With --tp: split norms and residual adds along the sequence (Megatron's sequence "
             "parallelism); default on in training, off in inference"),
         {"on", "off"});
}

// A model on one device under a workload: what `estimate`, `roofline` and `report` take.
struct SingleEstimateArgs {
  ModelArgs model;
  HardwareArgs hardware;
  std::string device;
  WorkloadArgs workload;
};

inline void add_single_estimate_options(CLI::App& sub, SingleEstimateArgs& args) {
  add_model_options(sub, args.model);
  sub.add_option("-g,--gpu,--hw,--device", args.device,
                 "Device id or alias from the hardware table (CPUs and TPUs too)")
      ->required();
  add_hardware_options(sub, args.hardware);
  add_workload_options(sub, args.workload);
}

// The estimate of those arguments, with what it was drawn from.
struct SingleEstimate {
  HardwareTable table;
  const Device* device = nullptr;
  Graph graph;
  Workload workload;
  PerformanceParams params;
  Estimate result;
  GraphTotals totals;

  std::optional<RangeTable> ranges;  // data/ranges.json, where it is installed.
  std::string batch_note;            // Training without --batch: where the batch came from.
  std::string batch_source;

  ReportInput report_input() const {
    ReportInput input{graph, totals, workload, device, &params, &result};
    if (ranges) input.ranges = &*ranges;
    input.batch_note = batch_note;
    input.batch_source = batch_source;
    input.setting_name = flag_for_key;
    return input;
  }
};

// Training without --batch: the zoo's typical training dimensions where the model has them (the
// workload line says so and cites them; --set still wins), else the model file's batch.
ModelArgs training_batch_args(const ModelArgs& model, SingleEstimate& e);

// The same for the commands whose output has no workload line of its own (`compare`, `check`):
// the model with the typical batch where the zoo has one, and a warning on stderr naming the
// batch taken, once `graph` is loaded from it. `model` as given with --batch or outside training.
ModelArgs training_batch_or_given(const ModelArgs& model, const Workload& workload,
                                  std::string& warning_note);
void warn_training_batch(const std::string& warning_note, const Graph& graph);

// `model` replaces args.model where given (estimate sets the prompt length for serving);
// `serving` is the LLM serving request's flags, checked with the workload's.
std::unique_ptr<SingleEstimate> run_single_estimate(const SingleEstimateArgs& args,
                                                    const ModelArgs* model = nullptr,
                                                    const ServingArgs* serving = nullptr);

}  // namespace capcalc::cli
