// Flags that describe how a model is run (precision, mode, profile, parallelism, ...), for the
// subcommands that draw a single estimate (`estimate`, `roofline`, `report`), and the estimate
// they share. `compare` and `check` take the parallelism flags too.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/report.hpp"

#include "commands.hpp"
#include "usage.hpp"

namespace capcalc::cli {

// --devices N (all devices), --tensor-parallel T (devices per model replica) and --zero S
// (training state sharded over the replicas).
inline void add_parallel_options(CLI::App& sub, std::int64_t& devices,
                                 std::int64_t& tensor_parallel, int& zero_stage) {
  whole_number(sub.add_option("--devices", devices,
                              "Devices in all: tensor-parallel groups x data-parallel replicas "
                              "(training: one gradient all-reduce per step, overlapped with "
                              "backward)"))
      ->capture_default_str();
  whole_number(sub.add_option("--tensor-parallel,--tp", tensor_parallel,
                              "Devices per model replica: layers, weights, state and KV cache "
                              "split over them, two all-reduces per attention layer over the "
                              "scale-up link; --devices defaults to it"))
      ->capture_default_str();
  whole_number(sub.add_option("--zero", zero_stage,
                              "Training: ZeRO stage sharding state over the data-parallel "
                              "replicas: 1 optimizer state, 2 + gradients, 3 (FSDP) + weights"),
               0, 3)
      ->capture_default_str();
}

// --pipeline-parallel P, --micro-batches M and --virtual-stages V (training).
inline void add_pipeline_options(CLI::App& sub, std::int64_t& pipeline_parallel,
                                 std::int64_t& micro_batches, std::int64_t& virtual_stages) {
  whole_number(sub.add_option("--pipeline-parallel,--pp", pipeline_parallel,
                              "Training: pipeline stages per replica (1F1B), each with 1/P of the "
                              "layers, weights and state; --devices defaults to T x P"))
      ->capture_default_str();
  whole_number(sub.add_option("--micro-batches", micro_batches,
                              "Training: micro-batches (of --batch) per optimizer step: gradient "
                              "accumulation, the pipeline's M; the bubble is (P-1)/(M+P-1) of the "
                              "step"))
      ->capture_default_str();
  whole_number(sub.add_option("--virtual-stages", virtual_stages,
                              "Training: model chunks per pipeline stage (Megatron's interleaved "
                              "1F1B): the bubble is 1/V of 1F1B's, the stage sends V times as "
                              "many; M must be a multiple of P"))
      ->capture_default_str();
}

// A replica is T x P devices: --tensor-parallel (and --pipeline-parallel) alone mean one
// replica; otherwise --devices must count whole replicas.
inline void set_parallelism(Workload& workload, std::int64_t devices, std::int64_t tensor_parallel,
                            std::int64_t pipeline_parallel, std::int64_t micro_batches,
                            int zero_stage, std::int64_t virtual_stages = 1) {
  workload.tensor_parallel = tensor_parallel;
  workload.pipeline_parallel = pipeline_parallel;
  workload.micro_batches = micro_batches;
  workload.virtual_stages = virtual_stages;
  workload.zero_stage = zero_stage;
  std::int64_t replica = 0;
  if (__builtin_mul_overflow(tensor_parallel, pipeline_parallel, &replica)) {
    throw Error({}, fmt::format("--tensor-parallel {} x --pipeline-parallel {}: a count does not "
                                "fit in a 64-bit integer",
                                tensor_parallel, pipeline_parallel));
  }
  workload.devices = devices == 1 ? replica : devices;
  if (workload.devices % replica != 0) {
    throw Error({}, pipeline_parallel == 1
                        ? fmt::format("--devices {} is not a multiple of --tensor-parallel {}",
                                      devices, tensor_parallel)
                        : fmt::format("--devices {} is not a multiple of --tensor-parallel {} x "
                                      "--pipeline-parallel {} ({})",
                                      devices, tensor_parallel, pipeline_parallel, replica));
  }
}

// --dataset-size N [--epochs E] or --tokens T: a training run, read by run_samples (compare.hpp).
inline void add_run_size_options(CLI::App& sub, RunSize& run) {
  number_above(
      sub.add_option("--dataset-size", run.dataset_size, "Training run: samples per epoch"), 0,
      kMaxDatasetSize);
  number_above(
      sub.add_option("--epochs", run.epochs, "Training run: epochs of --dataset-size (default 1)"),
      0, kMaxEpochs);
  number_above(sub.add_option("--tokens", run.tokens,
                              "Training run: total tokens (samples = tokens / seq); not with "
                              "--dataset-size or --epochs"),
               0, kMaxTrainingTokens);
}

// --optimizer: Adam when not given; an inference pass has no optimizer, so giving one there is an
// error rather than a flag quietly ignored.
inline void add_optimizer_option(CLI::App& sub, std::string& optimizer) {
  one_of(sub.add_option("--optimizer", optimizer, "Training optimizer (default adam)"),
         {"sgd", "momentum", "adam", "adamw"});
}

inline Optimizer optimizer_from(const std::string& name, Mode mode) {
  if (name.empty()) return Optimizer::kAdam;
  if (mode != Mode::kTraining) throw Error({}, "--optimizer is for training: add --mode training");
  return parse_optimizer(name).value_or(Optimizer::kAdam);
}

// --kv-precision: the KV cache's storage. Only LLM serving (--prompt-tokens) keeps a cache.
inline void add_kv_precision_option(CLI::App& sub, std::string& kv_precision) {
  one_of(sub.add_option("--kv-precision", kv_precision,
                        "LLM serving (--prompt-tokens): KV cache storage (default: activations')"),
         precision_names());
}

inline void check_kv_precision(const std::string& kv_precision, const ServingArgs& serving) {
  if (!kv_precision.empty() && !serving.prompt_tokens) {
    throw Error({},
                "--kv-precision sets the KV cache's storage: add --prompt-tokens (LLM serving)");
  }
}

struct WorkloadArgs {
  std::string precision = "fp32";
  std::string mode = "inference";
  std::string profile;  // Empty: the device type's default.
  std::string runtime;  // Empty: a generic runtime of the profile.
  std::vector<std::string> runtime_files;
  std::string sparsity = "dense";
  std::string optimizer;  // Empty: Adam; given in inference, an error.
  std::int64_t devices = 1;
  std::int64_t tensor_parallel = 1;
  std::int64_t pipeline_parallel = 1;
  std::int64_t micro_batches = 1;
  std::int64_t virtual_stages = 1;
  int zero_stage = 0;
  bool checkpointing = false;
  std::string weight_precision;
  std::string kv_precision;  // `estimate` only, with --prompt-tokens: nothing else has a KV cache.
};

inline void add_workload_options(CLI::App& sub, WorkloadArgs& args) {
  one_of(sub.add_option("-p,--precision", args.precision,
                        "Number format of weights, activations and math"),
         precision_names())
      ->capture_default_str();
  one_of(sub.add_option("-m,--mode", args.mode, "inference (a forward pass) or training (a step)"),
         {"inference", "training"})
      ->capture_default_str();
  one_of(sub.add_option("--profile", args.profile,
                        "eager (framework, one kernel per layer), graph (graph executor, no "
                        "fusion), compiled (TensorRT, XLA, CUDA graphs: fused) or inductor "
                        "(torch.compile's default mode: fused, launched from Python); default: "
                        "compiled for ONNX models, else the device type's"),
         profile_names());
  add_runtime_options(sub, args.runtime, args.runtime_files);
  one_of(sub.add_option("--sparsity", args.sparsity,
                        "2:4 (structured, where the hardware supports it) or unstructured (no "
                        "speedup)"),
         {"dense", "2:4", "unstructured"})
      ->capture_default_str();
  add_optimizer_option(sub, args.optimizer);
  add_parallel_options(sub, args.devices, args.tensor_parallel, args.zero_stage);
  add_pipeline_options(sub, args.pipeline_parallel, args.micro_batches, args.virtual_stages);
  one_of(sub.add_option("--weight-precision", args.weight_precision,
                        "Weight storage if it differs (int4/int8 weight-only quantisation)"),
         precision_names());
  sub.add_flag("--checkpointing", args.checkpointing,
               "Training: keep only each top-level block's output, recompute the rest");
}

inline Workload workload_from(const WorkloadArgs& args) {
  Workload workload;
  workload.precision = precision_from(args.precision);
  workload.mode = args.mode == "training" ? Mode::kTraining : Mode::kInference;
  if (!args.profile.empty()) workload.profile = parse_profile(args.profile);
  workload.sparsity = args.sparsity == "2:4"            ? Sparsity::k2of4
                      : args.sparsity == "unstructured" ? Sparsity::kUnstructured
                                                        : Sparsity::kDense;
  workload.optimizer = optimizer_from(args.optimizer, workload.mode);
  set_parallelism(workload, args.devices, args.tensor_parallel, args.pipeline_parallel,
                  args.micro_batches, args.zero_stage, args.virtual_stages);
  workload.checkpointing = args.checkpointing;
  if (!args.weight_precision.empty()) {
    workload.weight_precision = precision_from(args.weight_precision);
  }
  if (!args.kv_precision.empty()) workload.kv_precision = precision_from(args.kv_precision);
  if (args.checkpointing && workload.mode != Mode::kTraining) {
    throw Error({}, "--checkpointing is for training: add --mode training");
  }
  return workload;
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
inline ModelArgs training_batch_args(const ModelArgs& model, SingleEstimate& e) {
  if (model.batch) return model;
  ModelArgs args = model;
  const std::optional<ZooModel> zoo = zoo_model_for(model.path);
  if (!zoo || !zoo->training_batch) {
    e.batch_note = "no --batch: the model file's";
    return args;
  }
  for (const auto& [name, value] : zoo->training_batch->dims) {
    if (name == "batch") {
      args.batch = value;
    } else {
      args.sets.insert(args.sets.begin(), fmt::format("{}={}", name, value));
    }
  }
  e.batch_note = fmt::format("no --batch: {}'s typical training batch", zoo->name);
  e.batch_source = zoo->training_batch->source;
  return args;
}

// `model` replaces args.model where given (estimate sets the prompt length for serving).
inline std::unique_ptr<SingleEstimate> run_single_estimate(const SingleEstimateArgs& args,
                                                           const ModelArgs* model = nullptr) {
  auto e = std::make_unique<SingleEstimate>();
  e->table = load_table(args.hardware);
  e->device = &e->table.get(args.device);
  e->workload = workload_from(args.workload);
  const ModelArgs& given = model != nullptr ? *model : args.model;
  e->graph =
      load_model_from(e->workload.mode == Mode::kTraining ? training_batch_args(given, *e) : given);
  if (e->batch_note == "no --batch: the model file's") {
    fmt::print(stderr,
               "warning: training without --batch: batch {}, the model file's; give --batch N\n",
               e->graph.batch);
  }
  e->workload.runtime =
      runtime_from(args.workload.runtime, args.workload.runtime_files, *e->device);
  e->params = e->table.performance_for(*e->device);
  e->result = estimate(e->graph, *e->device, e->params, e->workload);
  e->totals = graph_totals(e->graph);
  e->ranges = load_default_ranges();
  return e;
}

}  // namespace capcalc::cli
