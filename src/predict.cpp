// The performance model's entry points: the workload's checks (data_parallel_replicas, the
// tensor- and expert-parallel problems), estimate_layers and estimate_schedule, which run the
// stages of src/predict_step.hpp in order, serving and training totals, and the names of its
// enums.
#include "capcalc/predict.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/names.hpp"
#include "capcalc/units.hpp"

#include "checked.hpp"
#include "predict_rates.hpp"
#include "predict_step.hpp"

namespace capcalc {
namespace {

constexpr auto kBounds = name_table<Bound>({{Bound::kCompute, "compute"},
                                            {Bound::kMemory, "memory"},
                                            {Bound::kHost, "host"},
                                            {Bound::kInput, "input"},
                                            {Bound::kFused, "fused"},
                                            {Bound::kNone, "-"}});
constexpr auto kModes =
    name_table<Mode>({{Mode::kInference, "inference"}, {Mode::kTraining, "training"}});
constexpr auto kOptimizers = name_table<Optimizer>({{Optimizer::kSgd, "sgd"},
                                                    {Optimizer::kMomentum, "momentum"},
                                                    {Optimizer::kAdam, "adam"},
                                                    {Optimizer::kAdam, "adamw", true}});
constexpr auto kSparsities = name_table<Sparsity>({{Sparsity::kDense, "dense"},
                                                   {Sparsity::k2of4, "2:4"},
                                                   {Sparsity::kUnstructured, "unstructured"}});

}  // namespace

std::string_view bound_name(Bound bound) {
  return kBounds.name(bound);
}

std::string_view mode_name(Mode mode) {
  return kModes.name(mode);
}

std::optional<Mode> parse_mode(std::string_view name) {
  return kModes.parse(name);
}

std::vector<std::string_view> mode_names() {
  return kModes.names();
}

std::string_view optimizer_name(Optimizer optimizer) {
  return kOptimizers.name(optimizer);
}

std::optional<Optimizer> parse_optimizer(std::string_view name) {
  return kOptimizers.parse(name);
}

std::vector<std::string_view> optimizer_names(bool with_aliases) {
  return kOptimizers.names(with_aliases);
}

std::string_view sparsity_name(Sparsity sparsity) {
  return kSparsities.name(sparsity);
}

std::optional<Sparsity> parse_sparsity(std::string_view name) {
  return kSparsities.parse(name);
}

std::vector<std::string_view> sparsity_names() {
  return kSparsities.names();
}

// fp32 state: momentum keeps one buffer, Adam two.
double optimizer_state_bytes(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::kSgd:
      return 0;
    case Optimizer::kMomentum:
      return 4;
    case Optimizer::kAdam:
      break;
  }
  return 8;
}

// One fused pass over fp32 tensors: SGD reads weights and gradients and writes weights (3 x 4
// bytes); momentum also reads and writes its buffer (5 x 4); Adam both moments (7 x 4).
double optimizer_update_bytes(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::kSgd:
      return 12;
    case Optimizer::kMomentum:
      return 20;
    case Optimizer::kAdam:
      break;
  }
  return 28;
}

namespace {

// Megatron-Core's expert parallelism splits the experts over devices that hold the same other
// weights ("expert_model_parallel_size" divides the data-parallel x context-parallel size).
void check_expert_parallel(const Workload& workload, std::int64_t replicas) {
  if (workload.expert_parallel < 1) {
    throw Error({}, "the expert-parallel degree must be at least 1");
  }
  if (!(workload.moe_imbalance >= 1 && workload.moe_imbalance <= 1000)) {
    throw Error({}, fmt::format("--moe-imbalance must be between 1 and 1000 (got {:g})",
                                workload.moe_imbalance));
  }
  // replicas x context_parallel is at most devices: no overflow.
  const std::int64_t shards = replicas * workload.context_parallel;
  const std::int64_t etp = expert_tensor_parallel(workload);
  if (etp != 1 && etp != workload.tensor_parallel) {
    throw Error({}, fmt::format("--expert-tensor-parallel must be 1 or the tensor parallelism "
                                "({}), got {}",
                                workload.tensor_parallel, etp));
  }
  if (workload.moe_dispatcher != MoeDispatcher::kAllToAll && workload.expert_parallel <= 1) {
    throw Error({}, fmt::format("the {} dispatcher sends tokens to experts on other devices: add "
                                "--expert-parallel",
                                moe_dispatcher_title(workload.moe_dispatcher)));
  }
  if (etp == workload.tensor_parallel && shards % workload.expert_parallel != 0) {
    throw Error({},
                fmt::format("--expert-parallel {} does not divide the {} devices that hold the "
                            "same weights ({} data-parallel replicas x context-parallel {})",
                            workload.expert_parallel, shards, replicas, workload.context_parallel));
  }
  // Whole experts: the expert grid folds over tensor-parallel x replicas x context-parallel.
  const std::int64_t folded = shards * workload.tensor_parallel;
  if (etp == 1 && folded % workload.expert_parallel != 0) {
    throw Error({}, fmt::format("--expert-parallel {} does not divide the {} devices "
                                "whole experts fold over (tensor-parallel {} x {} data-parallel "
                                "replicas x context-parallel {})",
                                workload.expert_parallel, folded, workload.tensor_parallel,
                                replicas, workload.context_parallel));
  }
}

// Selective recomputation: training only, not with checkpointing, and each module recomputes
// some layer of the model.
void check_recompute(const Graph& graph, const Workload& workload) {
  if (workload.checkpoint_layers < 0) {
    throw Error({}, "--checkpoint-layers must be at least 1");
  }
  if (workload.checkpoint_layers > 0 && !workload.checkpointing) {
    throw Error({},
                "--checkpoint-layers picks the blocks --checkpointing recomputes: turn on "
                "--checkpointing");
  }
  if (workload.recompute == 0) return;
  if (workload.mode != Mode::kTraining) {
    throw Error({}, "--recompute is for training: add --mode training");
  }
  if (workload.checkpointing) {
    throw Error({},
                "--recompute selects modules to recompute, --checkpointing recomputes every "
                "block: give one of them");
  }
  if (auto problem = recompute_problem(graph, workload.recompute)) throw Error({}, *problem);
}

}  // namespace

std::optional<std::string> recompute_problem(const Graph& graph, unsigned modules) {
  for (std::string_view name : recompute_modules_of(modules)) {
    const RecomputeModule module = *parse_recompute_module(name);
    const auto bits = static_cast<unsigned>(module);
    const std::vector<detail::Recomputed> layers = detail::recomputed_layers(graph, bits);
    const bool found = std::any_of(layers.begin(), layers.end(), [](detail::Recomputed r) {
      return r != detail::Recomputed::kNo;
    });
    if (found) continue;
    std::string_view what =
        "norm that Megatron-Core keeps apart from the next linear (one a moe layer or latent "
        "attention reads)";
    if (module == RecomputeModule::kMlp) what = "dense MLP (layers named <...>.mlp.<...>)";
    if (module == RecomputeModule::kMoeAct || module == RecomputeModule::kMoe) {
      what = "\"moe\" layer";
    }
    if (module == RecomputeModule::kMlaUpProj) what = "latent attention (\"mla_attention\")";
    if (module == RecomputeModule::kSharedExperts) {
      what = "shared expert (a \"moe\" layer's shared_hidden)";
    }
    return fmt::format("--recompute {}: the model has no {} to recompute", name, what);
  }
  return std::nullopt;
}

std::int64_t data_parallel_replicas(const Workload& workload) {
  if (workload.devices < 1) throw Error({}, "the number of devices must be at least 1");
  if (workload.tensor_parallel < 1)
    throw Error({}, "the tensor-parallel degree must be at least 1");
  if (workload.pipeline_parallel < 1 || workload.micro_batches < 1) {
    throw Error({}, "pipeline stages and micro-batches must be at least 1");
  }
  if ((workload.pipeline_parallel > 1 || workload.micro_batches > 1) &&
      workload.mode != Mode::kTraining) {
    throw Error({}, "pipeline stages and micro-batches are for training: add --mode training");
  }
  if (workload.context_parallel < 1) {
    throw Error({}, "the context-parallel degree must be at least 1");
  }
  if (workload.context_parallel > 1 && workload.mode != Mode::kTraining) {
    throw Error({}, "context parallelism splits training sequences: add --mode training");
  }
  std::int64_t group = 0;
  if (__builtin_mul_overflow(workload.tensor_parallel, workload.pipeline_parallel, &group) ||
      __builtin_mul_overflow(group, workload.context_parallel, &group)) {
    throw Error({}, fmt::format("tensor-parallel {} x pipeline {}: a count does not fit in a "
                                "64-bit integer",
                                workload.tensor_parallel, workload.pipeline_parallel));
  }
  if (workload.devices % group != 0 && workload.context_parallel > 1) {
    throw Error({}, fmt::format("{} devices do not split into model replicas of {} "
                                "(tensor-parallel {} x pipeline {} x context-parallel {})",
                                workload.devices, group, workload.tensor_parallel,
                                workload.pipeline_parallel, workload.context_parallel));
  }
  if (workload.devices % group != 0) {
    throw Error({}, workload.pipeline_parallel == 1
                        ? fmt::format("{} devices do not split into tensor-parallel groups of {}",
                                      workload.devices, workload.tensor_parallel)
                        : fmt::format("{} devices do not split into model replicas of {} "
                                      "(tensor-parallel {} x pipeline {})",
                                      workload.devices, group, workload.tensor_parallel,
                                      workload.pipeline_parallel));
  }
  if (workload.virtual_stages < 1) throw Error({}, "virtual stages must be at least 1");
  if (workload.virtual_stages > 1) {
    if (workload.pipeline_parallel < 2) {
      throw Error({}, "virtual stages interleave a pipeline: add --pipeline-parallel 2 or more");
    }
    // Megatron-LM: "number of microbatches ... should be divisible by pipeline-parallel size
    // when using interleaved schedule".
    if (workload.micro_batches % workload.pipeline_parallel != 0) {
      throw Error({}, fmt::format("the interleaved schedule needs micro-batches ({}) to be a "
                                  "multiple of the pipeline stages ({})",
                                  workload.micro_batches, workload.pipeline_parallel));
    }
  }
  if (workload.zero_stage < 0 || workload.zero_stage > 3) {
    throw Error(
        {}, fmt::format("ZeRO stage {} does not exist: 0 (none) to 3 (FSDP)", workload.zero_stage));
  }
  if (workload.fp8_recipe != Fp8Recipe::kDelayed && workload.precision != Precision::kFp8) {
    throw Error(
        {}, fmt::format("the FP8 recipe {} scales FP8 tensors: not with {} precision",
                        fp8_recipe_name(workload.fp8_recipe), precision_name(workload.precision)));
  }
  if (workload.zero_stage > 0 && workload.mode != Mode::kTraining) {
    throw Error({}, "ZeRO shards training state: add --mode training");
  }
  // 0 is no input pipeline to wait for.
  if (!(workload.input_rate_per_s >= 0 && workload.input_rate_per_s <= kMaxInputRate)) {
    throw Error({}, fmt::format("--input-rate must be above 0 and at most 1e9/s (got {:g}/s)",
                                workload.input_rate_per_s));
  }
  const std::int64_t replicas = workload.devices / group;
  check_expert_parallel(workload, replicas);
  return replicas;
}

std::int64_t data_parallel_shards(const Workload& workload) {
  return data_parallel_replicas(workload) * workload.context_parallel;
}

std::int64_t expert_tensor_parallel(const Workload& workload) {
  return workload.expert_tensor_parallel.value_or(workload.tensor_parallel);
}

bool whole_experts(const Workload& workload) {
  return expert_tensor_parallel(workload) != workload.tensor_parallel;
}

std::string precision_text(Precision precision, Fp8Recipe recipe) {
  if (precision != Precision::kFp8) return std::string(precision_name(precision));
  return fmt::format("fp8 ({})", fp8_recipe_name(recipe));
}

std::string parallelism_text(const Workload& workload) {
  std::string text;
  if (workload.tensor_parallel > 1) {
    const bool sequence = workload.sequence_parallel.value_or(workload.mode == Mode::kTraining);
    text += fmt::format(" (tensor-parallel {}{})", workload.tensor_parallel,
                        sequence ? ", sequence-parallel" : "");
  }
  if (workload.context_parallel > 1) {
    text += fmt::format(" (context-parallel {})", workload.context_parallel);
  }
  if (workload.expert_parallel > 1 || whole_experts(workload)) {
    text += fmt::format(
        " (expert-parallel {}{}{})", workload.expert_parallel,
        whole_experts(workload) ? ", whole experts" : "",
        workload.moe_dispatcher != MoeDispatcher::kAllToAll
            ? fmt::format(", {} dispatch", moe_dispatcher_title(workload.moe_dispatcher))
            : "");
  }
  if (workload.pipeline_parallel > 1 || workload.micro_batches > 1) {
    text += fmt::format(" (pipeline {} x {} micro-batch{}{})", workload.pipeline_parallel,
                        workload.micro_batches, workload.micro_batches == 1 ? "" : "es",
                        workload.virtual_stages > 1
                            ? fmt::format(", {} virtual stages", workload.virtual_stages)
                            : "");
  }
  if (workload.zero_stage > 0) text += fmt::format(", ZeRO-{}", workload.zero_stage);
  if (workload.moe_imbalance != 1) {
    text += fmt::format(", MoE load imbalance {:g}", workload.moe_imbalance);
  }
  if (workload.input_rate_per_s > 0) {
    text += fmt::format(", input {} samples/s a replica", format_figure(workload.input_rate_per_s));
  }
  return text;
}

namespace {

using detail::DeviceParams;
using detail::Step;

// The stages of a step (src/predict_step.hpp).
using detail::context_parallel_communication;
using detail::device_params;
using detail::expert_parallel_communication;
using detail::layer_times;
using detail::make_step;
using detail::pipeline_ends;
using detail::tensor_parallel_communication;
using detail::training_schedule;

// Memory totals and the largest batch that fits: activations are linear in the batch,
// everything else does not depend on it.
void memory_fit(const Step& s, Estimate& result) {
  MemoryEstimate& memory = result.memory;
  memory.total_bytes = memory.weight_bytes + memory.gradient_bytes + memory.optimizer_bytes +
                       memory.activation_bytes;
  const auto batch = static_cast<double>(s.graph.batch);
  memory.per_sample_bytes = memory.activation_bytes / batch;
  result.fits = memory.total_bytes <= s.device.memory_bytes;
  if (s.graph.dims.count("batch") == 0) {
    result.max_batch = -1;
    return;
  }
  const double fixed = memory.total_bytes - memory.activation_bytes;
  result.max_batch =
      fixed >= s.device.memory_bytes || memory.per_sample_bytes <= 0
          ? 0
          : clamp_to_int64(std::floor((s.device.memory_bytes - fixed) / memory.per_sample_bytes));
}

}  // namespace

std::optional<std::string> tensor_parallel_problem(const Graph& graph,
                                                   std::int64_t tensor_parallel) {
  const std::int64_t t = tensor_parallel;
  if (t <= 1) return std::nullopt;
  for (const Layer& layer : graph.layers) {
    const std::int64_t heads = layer.counts.attention_heads;
    const std::int64_t kv = layer.counts.attention_kv_heads;
    if (heads > 0 && heads % t != 0) {
      return fmt::format("--tensor-parallel {} does not divide the {} attention heads of \"{}\"", t,
                         heads, layer.name);
    }
    // Megatron-LM and vLLM split the KV heads evenly, or replicate them when the degree is a
    // multiple of their number.
    if (kv > 0 && kv % t != 0 && t % kv != 0) {
      return fmt::format(
          "--tensor-parallel {} and the {} KV heads of \"{}\" do not divide "
          "each other (KV heads split evenly, or are replicated over a multiple)",
          t, kv, layer.name);
    }
  }
  return std::nullopt;
}

std::optional<std::string> expert_parallel_problem(const Graph& graph, std::int64_t expert_parallel,
                                                   double moe_imbalance) {
  if (expert_parallel <= 1 && moe_imbalance == 1) return std::nullopt;
  const Layer* moe = nullptr;
  for (const Layer& layer : graph.layers) {
    const std::int64_t experts = layer.counts.experts;
    if (experts == 0) continue;
    if (moe == nullptr) moe = &layer;
    if (experts % expert_parallel != 0) {
      return fmt::format("--expert-parallel {} does not divide the {} experts of \"{}\"",
                         expert_parallel, experts, layer.name);
    }
  }
  if (moe != nullptr) return std::nullopt;
  return fmt::format("{}: the model has no \"moe\" layer",
                     expert_parallel > 1 ? "--expert-parallel" : "--moe-imbalance");
}

LayerPass estimate_layers(const Graph& graph, const Device& device, const PerformanceParams& params,
                          const Workload& workload) {
  if (auto problem = tensor_parallel_problem(graph, workload.tensor_parallel)) {
    throw Error({}, *problem);
  }
  if (auto problem =
          expert_parallel_problem(graph, workload.expert_parallel, workload.moe_imbalance)) {
    throw Error({}, *problem);
  }
  if (graph.mtp_modules > 0 && workload.mode != Mode::kTraining) {
    throw Error({},
                "--mtp-layers: multi-token-prediction modules train beside the model: add "
                "--mode training");
  }
  if (whole_experts(workload) && !has_experts(graph)) {
    throw Error({}, "--expert-tensor-parallel: the model has no \"moe\" layer");
  }
  if (workload.expert_weight_precision) {
    if (workload.mode == Mode::kTraining) {
      throw Error({},
                  "--expert-weight-precision is for inference (weight-only quantised "
                  "experts)");
    }
    if (!has_experts(graph))
      throw Error({}, "--expert-weight-precision: the model has no \"moe\" layer");
  }
  check_recompute(graph, workload);
  const Step s = make_step(graph, device, params, workload);
  if (s.lora_rank > 0 && s.adapter_params <= 0) {
    throw Error({}, workload.lora_attention_only
                        ? "--lora-targets attention: the model has no attention layer to adapt "
                          "(an export that computes attention as MatMuls has none): use "
                          "--lora-targets all-linear"
                        : "--lora-rank: the model has no linear layer with weights to adapt "
                          "besides its output layer");
  }
  LayerPass pass;
  Estimate& result = pass.partial;
  result.profile = s.runtime.profile;
  result.runtime = s.runtime.id;
  result.floor_s = s.floor_s;
  result.sparsity_speedup = s.sparse && s.has_matrix ? device.sparsity_2_4_speedup : 1;
  pass.backward_s = layer_times(s, result);
  if (s.training) pipeline_ends(s, result, pass);
  tensor_parallel_communication(s, result);
  context_parallel_communication(s, result);
  expert_parallel_communication(s, result);
  pass.totals = graph_totals(graph);
  pass.checkpoint_blocks = detail::block_count(graph);
  return pass;
}

namespace {

// Everything of a pass's estimate but the per-layer vector, which a search over layouts never
// reads.
Estimate without_layers(const Estimate& e) {
  Estimate out;
  out.profile = e.profile;
  out.runtime = e.runtime;
  out.floor_s = e.floor_s;
  out.sparsity_speedup = e.sparsity_speedup;
  out.kernels = e.kernels;
  out.latency_s = e.latency_s;
  out.flops = e.flops;
  out.executed_flops = e.executed_flops;
  out.bytes = e.bytes;
  out.recompute_s = e.recompute_s;
  out.communication_s = e.communication_s;
  out.communication_modelled = e.communication_modelled;
  out.communication_link = e.communication_link;
  out.communication_bandwidth = e.communication_bandwidth;
  out.allreduces = e.allreduces;
  out.allreduce_bytes = e.allreduce_bytes;
  out.context_parallel_send_s = e.context_parallel_send_s;
  out.context_parallel_s = e.context_parallel_s;
  out.context_parallel_link = e.context_parallel_link;
  out.context_parallel_modelled = e.context_parallel_modelled;
  out.expert_parallel_s = e.expert_parallel_s;
  out.alltoalls = e.alltoalls;
  out.alltoall_bytes = e.alltoall_bytes;
  out.expert_collective = e.expert_collective;
  out.expert_parallel_link = e.expert_parallel_link;
  out.expert_parallel_modelled = e.expert_parallel_modelled;
  return out;
}

}  // namespace

Estimate estimate_schedule(const LayerPass& pass, const Graph& graph, const Device& device,
                           const PerformanceParams& params, const Workload& workload,
                           bool keep_layers) {
  const Step s = make_step(graph, device, params, workload, false, pass.checkpoint_blocks);
  Estimate result;
  if (keep_layers) {
    result = pass.partial;
  } else {
    result = without_layers(pass.partial);
  }
  const GraphTotals& totals = pass.totals;
  const DeviceParams params_on_device = device_params(s, totals);
  // The routed experts at their own storage where it differs (expert_weight_precision).
  const double stored = s.sparse ? s.sparse_weight_bytes : s.weight_bytes;
  const double experts_stored = workload.expert_weight_precision ? s.expert_weight_bytes : stored;
  result.memory.weight_bytes = (params_on_device.all - params_on_device.experts) * stored +
                               params_on_device.experts * experts_stored;
  if (s.training) {
    result.lora_params = s.adapter_params;
    training_schedule(s, pass, params_on_device, result);
  } else {
    result.memory.activation_bytes =
        static_cast<double>(totals.peak_live_elements) * s.act_bytes / s.tp;
  }
  memory_fit(s, result);
  const auto batch = static_cast<double>(graph.batch);
  // A replica's step waits for its samples where its input pipeline delivers them slower than
  // the step consumes them (the pipeline runs ahead of the step, so only the excess shows).
  if (workload.input_rate_per_s > 0) {
    result.input_s = batch * s.micro_batches / workload.input_rate_per_s;
    result.input_wait_s = std::max(0.0, result.input_s - result.latency_s);
    result.latency_s += result.input_wait_s;
  }
  result.throughput_per_s =
      result.latency_s > 0 ? batch * s.micro_batches * s.replicas / result.latency_s : 0;
  result.achieved_flops_per_s = result.latency_s > 0 ? result.flops / result.latency_s : 0;
  return result;
}

LayerPass mix_checkpoint_passes(const LayerPass& none, const LayerPass& full, double share) {
  LayerPass mixed;
  mixed.partial = without_layers(full.partial);
  mixed.backward_s = full.backward_s;
  mixed.totals = full.totals;
  mixed.blocks = full.blocks;
  mixed.before_blocks_s = full.before_blocks_s;
  mixed.after_blocks_s = full.after_blocks_s;
  mixed.checkpoint_blocks = full.checkpoint_blocks;
  const Estimate& a = none.partial;
  Estimate& e = mixed.partial;
  const auto mix = [share](double from, double to) { return from + share * (to - from); };
  const auto count = [&mix](int from, int to) {
    return static_cast<int>(std::lround(mix(from, to)));
  };
  e.latency_s = mix(a.latency_s, e.latency_s);
  e.recompute_s = mix(a.recompute_s, e.recompute_s);
  e.communication_s = mix(a.communication_s, e.communication_s);
  e.allreduces = count(a.allreduces, e.allreduces);
  e.allreduce_bytes = mix(a.allreduce_bytes, e.allreduce_bytes);
  e.context_parallel_send_s = mix(a.context_parallel_send_s, e.context_parallel_send_s);
  e.context_parallel_s = mix(a.context_parallel_s, e.context_parallel_s);
  e.expert_parallel_s = mix(a.expert_parallel_s, e.expert_parallel_s);
  e.alltoalls = count(a.alltoalls, e.alltoalls);
  e.alltoall_bytes = mix(a.alltoall_bytes, e.alltoall_bytes);
  return mixed;
}

double training_model_flops(const Graph& graph, const Workload& workload) {
  const GraphTotals totals = graph_totals(graph);
  double flops = static_cast<double>(totals.flops) + static_cast<double>(totals.backward_flops);
  if (workload.lora_rank <= 0) return flops;
  const std::size_t loss_layer = detail::loss_layer_of(graph);
  const auto rank = static_cast<double>(workload.lora_rank);
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    const LayerCounts& c = graph.layers[i].counts;
    // As layer_time: the frozen weight-gradient product goes from the backward products that
    // are not scores (never below zero), the adapters' forward and two backward products come.
    const auto backward = static_cast<double>(c.backward_macs);
    const double products = backward - std::min(backward, 2 * static_cast<double>(c.score_macs));
    const double weight_gradient = std::min(products, static_cast<double>(c.macs - c.score_macs));
    const double adapters = rank * detail::lora_adapters(graph, workload, loss_layer, i).macs;
    flops += 2 * (3 * adapters - weight_gradient);
  }
  return flops;
}

Precision llm_serving_precision(const Device& device) {
  return device.supports(Precision::kBf16) ? Precision::kBf16 : Precision::kFp16;
}

Precision precision_on(const Workload& workload, const Device& device) {
  return workload.serving_default_precision ? llm_serving_precision(device) : workload.precision;
}

Estimate estimate(const Graph& graph, const Device& device, const PerformanceParams& params,
                  const Workload& workload) {
  return estimate_schedule(estimate_layers(graph, device, params, workload), graph, device, params,
                           workload, true);
}

ServingEstimate estimate_serving(const ServingGraphBuilder& build, const Device& device,
                                 const PerformanceParams& params, const Workload& workload,
                                 const ServingRequest& request) {
  if (request.prompt_tokens < 1 || request.output_tokens < 1) {
    throw Error({}, "prompt and output tokens must be at least 1");
  }
  if (workload.mode != Mode::kInference) {
    throw Error({}, "--prompt-tokens and --output-tokens describe serving: use --mode inference");
  }
  ServingEstimate s;
  Graph prefill = build(request.prompt_tokens, 0);
  last_token_logits(prefill);
  s.prefill = estimate(prefill, device, params, workload);
  // Decode steps 1 .. output-1 read caches of prompt .. prompt + output - 2 tokens.
  s.mean_context = request.prompt_tokens + (request.output_tokens - 1) / 2;
  Graph decode = build(1, s.mean_context);
  drop_prefill_only_layers(decode);
  s.decode = estimate(decode, device, params, workload);
  const auto batch = static_cast<double>(prefill.batch);
  s.ttft_s = s.prefill.latency_s;
  s.decode_step_s = s.decode.latency_s;
  s.tokens_per_s_per_sequence = 1 / s.decode_step_s;
  const auto replicas = static_cast<double>(data_parallel_replicas(workload));
  s.tokens_per_s = batch * replicas / s.decode_step_s;
  s.request_latency_s = s.ttft_s + static_cast<double>(request.output_tokens - 1) * s.decode_step_s;

  const double kv_bytes =
      stored_activation_bytes(workload.kv_precision.value_or(workload.precision));
  const std::int64_t context = request.prompt_tokens + request.output_tokens;
  // Tensor parallelism splits the heads, and the cache with them, over the group (at most
  // over as many devices as a layer has key/value heads).
  s.kv_bytes_per_token =
      kv_cache_elements_per_device(prefill, 1, workload.tensor_parallel) * kv_bytes;
  const double kv_per_sequence =
      kv_cache_elements_per_device(prefill, context, workload.tensor_parallel) * kv_bytes;
  s.kv_bytes = kv_per_sequence * batch;
  const double weights = s.prefill.memory.weight_bytes;
  const double activations = s.prefill.memory.activation_bytes;
  s.memory_bytes = weights + s.kv_bytes + activations;
  s.fits = s.memory_bytes <= device.memory_bytes;
  const double free_bytes = device.memory_bytes - weights;
  const double per_sequence = kv_per_sequence + activations / batch;
  s.max_batch = free_bytes > 0 && per_sequence > 0
                    ? clamp_to_int64(std::floor(free_bytes / per_sequence))
                    : 0;
  s.max_cached_tokens = free_bytes > 0 && s.kv_bytes_per_token > 0
                            ? clamp_to_int64(std::floor(free_bytes / s.kv_bytes_per_token))
                            : 0;
  return s;
}

TrainingTotals training_totals(const Estimate& step, std::int64_t batch, const Workload& workload,
                               const TrainingRun& run) {
  TrainingTotals totals;
  const auto devices = workload.devices;
  const double global_batch = static_cast<double>(batch) *
                              static_cast<double>(workload.micro_batches) *
                              static_cast<double>(data_parallel_replicas(workload));
  totals.steps = std::ceil(run.samples / global_batch);
  totals.time_s = totals.steps * step.latency_s;
  totals.device_hours = totals.time_s * static_cast<double>(devices) / 3600;
  if (run.price_per_device_hour_usd) {
    totals.cost_usd = totals.device_hours * *run.price_per_device_hour_usd;
  }
  if (run.power_w > 0) totals.energy_kwh = totals.device_hours * run.power_w / 1000;
  return totals;
}

std::vector<MisalignedLayer> misaligned_matrix_layers(const Graph& graph, const Device& device,
                                                      Precision precision,
                                                      const std::optional<Runtime>& runtime) {
  const std::int64_t multiple = alignment_multiple(device, precision);
  if (multiple == 0) return {};
  const std::int64_t total_macs = graph_totals(graph).macs;
  const bool padded = runtime && pads_to(runtime->vocab_padding, multiple);
  const std::size_t output_layer = detail::loss_layer_of(graph);
  std::vector<MisalignedLayer> result;
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    const Layer& layer = graph.layers[i];
    const std::optional<Misalignment> found =
        misalignment(layer, multiple, padded && i == output_layer);
    if (!found) continue;
    MisalignedLayer m;
    m.name = layer.name;
    m.dimension = found->dimension;
    m.size = found->size;
    m.multiple = multiple;
    m.padded = (found->size + 63) / 64 * 64;
    m.share_of_macs = total_macs > 0
                          ? static_cast<double>(layer.counts.macs) / static_cast<double>(total_macs)
                          : 0;
    result.push_back(std::move(m));
  }
  std::stable_sort(result.begin(), result.end(),
                   [](const auto& a, const auto& b) { return a.share_of_macs > b.share_of_macs; });
  return result;
}

}  // namespace capcalc
