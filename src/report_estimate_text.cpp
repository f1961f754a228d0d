// `capcalc estimate`'s text report: the workload, the model, the device, the time and memory,
// the bounds and the heaviest layers, with the training run and LLM serving sections.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "capcalc/ranges.hpp"
#include "capcalc/report.hpp"
#include "capcalc/units.hpp"

#include "collectives.hpp"
#include "report_json.hpp"
#include "report_parts.hpp"
#include "report_words.hpp"
#include "table.hpp"

namespace capcalc {
namespace {

using Align = TextTable::Align;

// Share of the total time spent in layers of each bound.
struct BoundShare {
  std::size_t layers = 0;
  double time_s = 0;
};

std::string price_text(const ReportInput& in, const TrainingRun& run) {
  const Device& d = *in.device;
  if (!run.price_per_device_hour_usd) return "";
  if (d.price && *run.price_per_device_hour_usd == d.price->usd_per_hour) {
    return fmt::format("${:.2f}/h ({}, {})", d.price->usd_per_hour, d.price->source, d.price->date);
  }
  return fmt::format("${:.2f}/h ({})", *run.price_per_device_hour_usd,
                     setting(in, "price_per_hour_usd"));
}

// "  all-reduce   1.2 ms: 64 all-reduces of 512 MB in all over NVLink 4\n".
std::string communication_text(std::string_view label, const Estimate& e) {
  return fmt::format("  {:<12} {}\n", label, allreduce_summary(e));
}

// GFLOPs to the MFLOP, the whole part grouped: "0.236", "2,147.484".
std::string gflops_text(double flops) {
  std::string text = fmt::format("{:.3f}", flops / 1e9);
  for (std::size_t i = text.find('.');
       i > 3 && std::isdigit(static_cast<unsigned char>(text[i - 4])) != 0; i -= 3) {
    text.insert(i - 3, ",");
  }
  return text;
}

std::string render_training_text(const ReportInput& in) {
  const TrainingTotals& t = *in.training;
  const TrainingRun& run = *in.run;
  // Whole counts below 1,000 as they are ("1 sample", "640 samples"), larger ones with a suffix.
  const bool small = run.samples < 999.5 && run.samples == std::floor(run.samples);
  std::string out =
      fmt::format("\nTraining run ({} sample{})\n",
                  small ? fmt::format("{:.0f}", run.samples) : format_count(run.samples),
                  run.samples == 1 ? "" : "s");
  const std::int64_t replicas = data_parallel_replicas(in.workload);
  const std::int64_t micro = in.workload.micro_batches;
  const bool groups = in.workload.tensor_parallel * in.workload.pipeline_parallel > 1;
  out += fmt::format(
      "  steps        {} of {}{} x {} {}\n", whole_count(t.steps), in.graph.batch,
      micro > 1 ? fmt::format(" x {} micro-batches", micro) : "", replicas,
      groups ? (replicas == 1 ? "replica" : "replicas") : (replicas == 1 ? "device" : "devices"));
  out += fmt::format("  time         {}\n", format_duration(t.time_s));
  out += fmt::format("  device-time  {} device-hours\n", format_amount(t.device_hours));
  if (t.cost_usd) {
    out += fmt::format("  cost         {} at {}\n", format_usd(*t.cost_usd), price_text(in, run));
  } else {
    out += fmt::format("  cost         unknown: the table has no price for this device ({})\n",
                       setting(in, "price_per_hour_usd"));
  }
  if (t.energy_kwh) {
    out += fmt::format("  energy       {} kWh at {:.0f} W TDP per device (an upper bound)\n",
                       format_amount(*t.energy_kwh), run.power_w);
  } else {
    out += "  energy       unknown: the table has no TDP for this device\n";
  }
  return out;
}

std::string render_serving_text(const ReportInput& in) {
  const ServingEstimate& s = *in.serving;
  const ServingRequest& r = *in.request;
  const std::int64_t batch = in.graph.batch;
  std::string out = fmt::format("\nLLM serving ({} x {} prompt + {} generated tokens)\n",
                                counted(batch, "sequence"), format_grouped(r.prompt_tokens),
                                format_grouped(r.output_tokens));
  out += fmt::format(
      "  prefill      {} ({}-bound, {} of the {} peak)\n", format_duration(s.ttft_s),
      s.prefill.achieved_flops_per_s >= 0 ? std::string(bound_name(dominant_bound(s.prefill)))
                                          : "-",
      percent(s.prefill.achieved_flops_per_s / matrix_peak(*in.device, in.workload.precision)),
      precision_name(in.workload.precision));
  out += fmt::format("  TTFT         {}{}\n", format_duration(s.ttft_s),
                     time_range_text(in, s.prefill, s.ttft_s));
  out += fmt::format("  decode step  {} per token at {} cached tokens ({}-bound){}\n",
                     format_duration(s.decode_step_s), format_grouped(s.mean_context),
                     bound_name(dominant_bound(s.decode)),
                     time_range_text(in, s.decode, s.decode_step_s));
  out += fmt::format("  decode       {} tokens/s per sequence, {} tokens/s in total\n",
                     format_count(s.tokens_per_s_per_sequence), format_count(s.tokens_per_s));
  if (in.workload.tensor_parallel > 1) {
    out += communication_text("prefill comm", s.prefill);
    out += communication_text("decode comm", s.decode);
  }
  // Expert parallelism's token exchanges, which the prefill and the decode step include.
  if (in.workload.expert_parallel > 1) {
    const bool a2a = s.prefill.expert_collective == "all-to-all";
    out += fmt::format("  {}  {}\n", a2a ? "prefill a2a" : "prefill EP ",
                       expert_exchange_summary(s.prefill));
    out += fmt::format("  {}  {}\n", a2a ? "decode a2a " : "decode EP  ",
                       expert_exchange_summary(s.decode));
  }
  out += fmt::format("  request      {} end to end\n", format_duration(s.request_latency_s));
  out += fmt::format("  KV cache     {} per token, {} for the batch at full context\n",
                     format_bytes(s.kv_bytes_per_token), format_bytes(s.kv_bytes));
  if (s.kv_bytes_per_token <= 0) {
    // An ONNX decoder exported without past_key_values inputs (Optimum's decoder_model.onnx).
    out +=
        "  note         the model keeps no KV cache (no attention layers, no past key/value\n"
        "               inputs): a decode step is the model on one token attending to nothing\n"
        "               cached; an export with past inputs (decoder_with_past_model.onnx,\n"
        "               decoder_model_merged.onnx) gives real decode figures\n";
  }
  out += fmt::format("  memory       {} of {}: {} (weights + KV cache + prefill activations)\n",
                     format_bytes(s.memory_bytes), format_bytes(in.device->memory_bytes),
                     s.fits ? "fits" : "DOES NOT FIT");
  out += fmt::format("  capacity     {} of {} tokens, or {} in all\n",
                     counted(s.max_batch, "sequence"),
                     format_grouped(r.prompt_tokens + r.output_tokens),
                     counted(s.max_cached_tokens, "cached token"));
  return out;
}

}  // namespace

std::string allreduce_summary(const Estimate& e) {
  if (!e.communication_modelled) return "not modelled (no link in the table for this group)";
  return fmt::format("{}: {} of {} in all over {}", format_duration(e.communication_s),
                     e.sequence_parallel ? counted(e.allreduces, "reduce-scatter + all-gather pair")
                                         : counted(e.allreduces, "all-reduce"),
                     format_bytes(e.allreduce_bytes), e.communication_link);
}

std::string stage_sends_summary(const Estimate& e) {
  if (!e.pipeline_sends_modelled) return "not modelled (no link in the table between the stages)";
  return fmt::format("{} of the step ({} per send over {})", format_duration(e.pipeline_send_s),
                     format_bytes(e.pipeline_send_bytes), e.pipeline_link);
}

bool stages_uneven(const Estimate& e) {
  return e.pipeline_imbalance > 1.0005;
}

std::string stage_imbalance_summary(const Estimate& e, std::int64_t stages) {
  const std::int64_t heaviest = e.pipeline_heaviest_stage;
  const char* what = heaviest == stages - 1 ? " (the last: output layer and loss)"
                     : heaviest == 0        ? " (the first: embedding)"
                                            : "";
  return fmt::format("the heaviest, stage {} of {}{}, {:.2f}x the mean", heaviest + 1, stages, what,
                     e.pipeline_imbalance);
}

std::string grad_sync_summary(const Estimate& e, int zero_stage) {
  if (!e.data_parallel_modelled) {
    return "not modelled (no link in the table for this many devices)";
  }
  return fmt::format("{} exposed of {} ({} of gradients{} over {})",
                     format_duration(e.data_parallel_exposed_s), format_duration(e.data_parallel_s),
                     format_bytes(e.data_parallel_bytes), zero_stage >= 2 ? " and weights" : "",
                     e.data_parallel_link);
}

std::string expert_exchange_summary(const Estimate& e) {
  if (!e.expert_parallel_modelled) return "not modelled (no link in the table for this group)";
  return fmt::format("{}: {} of {} sent in all among {} devices over {}",
                     format_duration(e.expert_parallel_s),
                     counted(e.alltoalls, e.expert_collective), format_bytes(e.alltoall_bytes),
                     e.expert_parallel_group, e.expert_parallel_link);
}

std::string_view expert_exchange_label(const Estimate& e) {
  return e.expert_collective == "all-to-all" ? "all-to-all" : "EP comm";
}

std::string alignment_summary(const MisalignedLayer& m, Precision precision) {
  return fmt::format("{}: {} {} not a multiple of {} ({} tensor cores; {} of the MACs): pad to {}",
                     m.name, format_grouped(m.size), m.dimension, m.multiple,
                     precision_name(precision), percent(m.share_of_macs), format_grouped(m.padded));
}

std::string alignment_timing(const PerformanceParams* params) {
  if (params == nullptr || params->misaligned_matrix_efficiency <= 0) {
    return "not timed by the estimate";
  }
  return fmt::format("timed at {} of the dense matrix peak",
                     percent(params->misaligned_matrix_efficiency));
}

namespace {

// Linear layers whose products miss the tensor cores' granularity: up to three named, the
// heaviest first, with the size to pad to, and how the estimate times their slower kernels.
std::string alignment_text(const std::vector<MisalignedLayer>& misaligned, Precision precision,
                           const PerformanceParams* params) {
  if (misaligned.empty()) return {};
  std::string out;
  const std::size_t named = std::min<std::size_t>(misaligned.size(), 3);
  for (std::size_t k = 0; k < named; ++k) {
    out += fmt::format("  {:<12} {}\n", k == 0 ? "alignment" : "",
                       alignment_summary(misaligned[k], precision));
  }
  if (misaligned.size() > named) {
    out += fmt::format("               and {} more linear layers\n", misaligned.size() - named);
  }
  out += fmt::format("               cuBLAS runs such products with slower kernels, {}\n",
                     alignment_timing(params));
  return out;
}

// The title and the workload: what runs, how, where.
std::string estimate_workload_text(const ReportInput& in) {
  const Graph& g = in.graph;
  const Device& d = *in.device;
  const Estimate& e = *in.estimate;
  const Precision precision = in.workload.precision;
  std::string out;
  out += fmt::format("{} on {} ({})\n", g.name, d.name, d.id);
  // A named runtime is said with its profile; without one, the profile alone.
  // Without either, say where the profile came from: ONNX files default to compiled, other
  // models to the device type's default.
  std::string runner;
  if (in.workload.runtime) {
    runner = fmt::format("{} ({} profile)", in.workload.runtime->name, profile_name(e.profile));
  } else if (in.workload.profile) {
    runner = fmt::format("{} profile", profile_name(e.profile));
  } else {
    runner =
        fmt::format("{} profile ({} default)", profile_name(e.profile),
                    g.runs_fused ? std::string("ONNX") : std::string(device_type_name(d.type)));
  }
  std::string workload = fmt::format("{}, {}, batch {}{}{}, {}", mode_name(in.workload.mode),
                                     precision_text(precision, in.workload.fp8_recipe), g.batch,
                                     in.batch_note.empty() ? "" : " (" + in.batch_note + ")",
                                     context_text(in), runner);
  if (in.workload.devices > 1) workload += ", " + counted(in.workload.devices, "device");
  workload += parallelism_text(in.workload);
  out += fmt::format("  workload     {}\n", workload);
  if (!in.batch_source.empty()) {
    out += "  batch from   " + wrap_text(in.batch_source, 84, 15);
  }
  if (in.workload.sparsity == Sparsity::kUnstructured) {
    out += "  sparsity     unstructured: no speedup on dense hardware, counted as dense\n";
  }
  if (in.workload.sparsity == Sparsity::k2of4) {
    out += e.sparsity_speedup > 1
               ? fmt::format(
                     "  sparsity     2:4 on conv/linear weights: {:.1f}x on their matrix "
                     "MACs\n",
                     e.sparsity_speedup)
           : in.device != nullptr && in.device->sparsity_2_4_speedup > 1
               ? fmt::format(
                     "  sparsity     2:4 requested, but it runs on matrix units and this device "
                     "has none at {}: no speedup\n",
                     precision_name(in.workload.precision))
               : std::string(
                     "  sparsity     2:4 requested, but this device has no 2:4 support: "
                     "no speedup\n");
  }
  return out;
}

// The model's size and work per sample.
std::string estimate_model_text(const ReportInput& in) {
  const Graph& g = in.graph;
  const GraphTotals& t = in.totals;
  const Estimate& e = *in.estimate;
  const Precision precision = in.workload.precision;
  const bool training = in.workload.mode == Mode::kTraining;
  std::string out;
  out += "\nModel (per sample; 1 MAC = 2 FLOPs)\n";
  out += fmt::format("  parameters   {} ({}){}\n", format_grouped(t.params),
                     format_count(static_cast<double>(t.params)),
                     active_params_text(t.params, t.active_params));
  if (g.mtp_modules > 0) {
    std::int64_t mtp_params = 0;
    for (std::size_t i = static_cast<std::size_t>(g.mtp_first_layer); i < g.layers.size(); ++i)
      mtp_params += g.layers[i].counts.params;
    out += fmt::format(
        "  MTP          {} multi-token-prediction module{} of {} parameters, "
        "trained beside the model (counted above)\n",
        g.mtp_modules, g.mtp_modules == 1 ? "" : "s",
        format_count(static_cast<double>(mtp_params)));
  }
  out += fmt::format("  MACs         {} ({} forward)\n", format_count(per_sample(t.macs, g.batch)),
                     format_grouped(t.macs / g.batch));
  out += fmt::format("  FLOPs        {} forward = 2 x MACs + {} other (elementwise, norms)\n",
                     format_count(per_sample(t.flops, g.batch)),
                     format_count(per_sample(t.other_flops, g.batch)));
  if (training) {
    out += fmt::format("  backward     {} FLOPs\n",
                       format_count(per_sample(t.backward_flops, g.batch)));
  }
  // The whole model's weights at their storage precision; per device what its share holds
  // (tensor and pipeline splits, ZeRO-3 shards).
  const Precision stored = in.workload.weight_precision.value_or(precision);
  const std::optional<Precision> experts = in.workload.expert_weight_precision;
  const auto expert_params = static_cast<double>(experts ? t.expert_params : 0);
  const double expert_bytes = experts ? expert_params * weight_bytes_per_element(*experts) : 0;
  const double all_weights =
      (static_cast<double>(t.params) - expert_params) * weight_bytes_per_element(stored) +
      expert_bytes;
  const bool split = in.workload.tensor_parallel * in.workload.pipeline_parallel > 1 ||
                     (training && in.workload.zero_stage >= 3);
  const bool sparse = in.workload.sparsity == Sparsity::k2of4;
  // Routed experts at their own storage: "63.4 GB: the routed experts' 59.1 GB at int4, the
  // rest at bf16".
  const std::string storage = experts
                                  ? fmt::format(": the routed experts' {} at {}, the rest at {}",
                                                format_bytes(expert_bytes),
                                                precision_name(*experts), precision_name(stored))
                                  : fmt::format(" at {}", precision_name(stored));
  out += fmt::format(
      "  weights      {}{}{}\n", format_bytes(all_weights), storage,
      split    ? fmt::format(", {} per device", format_bytes(e.memory.weight_bytes))
      : sparse ? fmt::format(", {} stored 2:4 sparse", format_bytes(e.memory.weight_bytes))
               : std::string());
  return out;
}

// The device's peaks and memory.
std::string estimate_device_text(const ReportInput& in) {
  const Device& d = *in.device;
  const Precision precision = in.workload.precision;
  std::string out;
  out += "\nDevice\n";
  out += fmt::format("  compute      {}\n", describe_peak(d, precision));
  const std::string clock = sustained_clock_text(d, precision);
  if (!clock.empty()) out += "  clock        " + clock + "\n";
  for (const std::string& line : estimate_flags(d, precision))
    out += "  ESTIMATE     " + line + "\n";
  out += fmt::format("  memory       {} at {}\n", format_bytes(d.memory_bytes),
                     format_rate(d.memory_bandwidth_bytes_per_s, "B/s"));
  return out;
}

// Time, throughput and what the step spends it on.
std::string estimate_time_text(const ReportInput& in) {
  const Graph& g = in.graph;
  const Device& d = *in.device;
  const Estimate& e = *in.estimate;
  const PerformanceParams& p = *in.params;
  const Precision precision = in.workload.precision;
  const bool training = in.workload.mode == Mode::kTraining;
  std::string out;
  out += fmt::format(
      "\nEstimate (roofline per layer)\n  model        matrix {:.0f} %, vector {:.0f} %, "
      "memory {:.0f} % of peak; {} floor\n",
      100 * p.matrix_efficiency, 100 * p.vector_efficiency, 100 * p.memory_efficiency,
      format_duration(e.floor_s));
  const std::int64_t micro = in.workload.micro_batches;
  out += fmt::format("  {:<12} {} per {} of {}{}{}\n", training ? "step time" : "latency",
                     format_duration(e.latency_s), training ? "step" : "batch", g.batch,
                     micro > 1 ? fmt::format(" x {} micro-batches", micro) : "",
                     time_range_text(in, e, e.latency_s));
  if (in.workload.pipeline_parallel > 1) {
    const std::int64_t v = in.workload.virtual_stages;
    const std::int64_t others = in.workload.pipeline_parallel - 1;
    // An even split fills and drains in P - 1 stage times; else in the other stages' times.
    const bool uneven = stages_uneven(e);
    const std::string fill = !uneven ? (v > 1 ? fmt::format("{}/{} stage times", others, v)
                                              : fmt::format("{} stage times", others))
                                     : fmt::format("{}the other {} stages' times",
                                                   v > 1 ? fmt::format("1/{} of ", v) : "", others);
    out += fmt::format("  pipeline     {} stages{}: {} of bubble ({}, {} of the step)\n",
                       in.workload.pipeline_parallel,
                       v > 1 ? fmt::format(" x {} chunks, interleaved 1F1B", v) : ", 1F1B",
                       format_duration(e.pipeline_bubble_s), fill,
                       percent(e.pipeline_bubble_s / e.latency_s));
    if (uneven)
      out += "               " + stage_imbalance_summary(e, in.workload.pipeline_parallel) + "\n";
    out += "  stage sends  " + stage_sends_summary(e) + "\n";
  }
  if (in.workload.tensor_parallel > 1) out += communication_text("all-reduce", e);
  if (in.workload.context_parallel > 1) {
    out += "  ring         " +
           (e.context_parallel_modelled
                ? fmt::format("{} exposed of {} of K and V sends round {} devices over {}",
                              format_duration(e.context_parallel_s),
                              format_duration(e.context_parallel_send_s),
                              in.workload.context_parallel, e.context_parallel_link)
                : std::string("not modelled (no link in the table for the ring)")) +
           "\n";
  }
  if (in.workload.expert_parallel > 1) {
    out += fmt::format("  {:<12} {}\n", expert_exchange_label(e), expert_exchange_summary(e));
  }
  if (training && data_parallel_shards(in.workload) > 1) {
    out += "  grad sync    " + grad_sync_summary(e, in.workload.zero_stage) + "\n";
  }
  if (training) {
    out += fmt::format("  optimizer    {} ({} update)\n", format_duration(e.optimizer_s),
                       optimizer_name(in.workload.optimizer));
    if (in.workload.lora_rank > 0) {
      out += fmt::format(
          "  LoRA         rank {} on {}: {} trainable parameters ({} of the model's), frozen "
          "weights take no gradient\n",
          in.workload.lora_rank,
          in.workload.lora_attention_only ? "attention's projections"
          : in.totals.expert_params > 0   ? "every linear layer but the output and the experts"
                                          : "every linear layer but the output",
          format_count(e.lora_params),
          percent(e.lora_params /
                  static_cast<double>(std::max<std::int64_t>(1, in.totals.params))));
    }
    if (in.workload.checkpointing) {
      out += fmt::format("  recompute    {} (activation checkpointing{}: the forward again)\n",
                         format_duration(e.recompute_s),
                         in.workload.checkpoint_layers > 0
                             ? fmt::format(" of the first {} block{} of each pipeline chunk",
                                           in.workload.checkpoint_layers,
                                           in.workload.checkpoint_layers == 1 ? "" : "s")
                             : "");
    } else if (in.workload.recompute != 0) {
      out += fmt::format("  recompute    {} (selective: {}, their forward again)\n",
                         format_duration(e.recompute_s),
                         recompute_modules_text(in.workload.recompute));
    }
  }
  if (const std::optional<std::int64_t> seq = sequence_length(g)) {
    // A language model's sample is a sequence: its rate in tokens, as serving states it.
    const double tokens = e.throughput_per_s * static_cast<double>(*seq);
    out += fmt::format("  throughput   {} tokens/s, {} sequences/s of {} tokens{}{}\n",
                       format_count(tokens), format_count(e.throughput_per_s), format_grouped(*seq),
                       in.serving != nullptr ? " (the prefill)" : "",
                       rate_range_text(in, e, tokens, "tokens/s"));
  } else {
    out += fmt::format("  throughput   {} samples/s{}\n", format_count(e.throughput_per_s),
                       rate_range_text(in, e, e.throughput_per_s, "samples/s"));
  }
  if (e.input_s > 0) {
    // The input pipeline's pace: what the step waits for its samples, if anything.
    const double own = e.latency_s - e.input_wait_s;
    out += fmt::format("  input        {} samples/s a replica: {} for the {}'s samples\n",
                       format_figure(in.workload.input_rate_per_s), format_duration(e.input_s),
                       training ? "step" : "batch");
    out += e.input_wait_s > 0
               ? fmt::format("               {} waiting beyond its own {}: input-bound\n",
                             format_duration(e.input_wait_s), format_duration(own))
               : fmt::format("               within its own {}: not input-bound\n",
                             format_duration(own));
  }
  out += fmt::format("  kernels      {} launched per {}\n", whole_count(e.kernels),
                     training ? "step" : "pass");
  const double peak = matrix_peak(d, precision);
  out += fmt::format("  achieved     {} ({} of the {} peak)\n",
                     format_rate(e.achieved_flops_per_s, "FLOP/s"),
                     percent(e.achieved_flops_per_s / peak), precision_name(precision));
  return out;
}

// Memory per device, and what would fit.
std::string estimate_memory_text(const ReportInput& in) {
  const Device& d = *in.device;
  const Estimate& e = *in.estimate;
  const bool training = in.workload.mode == Mode::kTraining;
  std::string out;
  const MemoryEstimate& m = e.memory;
  std::string breakdown = fmt::format("weights {}", format_bytes(m.weight_bytes));
  if (training) {
    breakdown += fmt::format(" + gradients {}\n                 + optimizer {} + {} {}",
                             format_bytes(m.gradient_bytes), format_bytes(m.optimizer_bytes),
                             in.workload.checkpointing ? "checkpoints" : "saved activations",
                             format_bytes(m.activation_bytes));
  } else {
    breakdown += fmt::format(" + peak activations {}", format_bytes(m.activation_bytes));
  }
  out += fmt::format("  memory       {} of {}: {}\n", format_bytes(m.total_bytes),
                     format_bytes(d.memory_bytes), e.fits ? "fits" : "DOES NOT FIT");
  out += fmt::format("               = {}\n", breakdown);
  if (e.max_batch > 0) {
    out += fmt::format("  max batch    {} fits in {}\n", format_grouped(e.max_batch),
                       format_bytes(d.memory_bytes));
  } else if (e.max_batch == 0) {
    out += "  max batch    none: the weights and state alone do not fit\n";
  }
  if (in.fit != nullptr && !e.fits) {
    out += "  to fit       " + wrap_text(fit_advice_text(*in.fit, d, in.workload.mode), 100, 15);
  }
  return out;
}

// Time by bound, and the hint to amortise floors with a larger batch.
std::string estimate_bounds_text(const ReportInput& in) {
  const Graph& g = in.graph;
  const Estimate& e = *in.estimate;
  std::string out;
  std::array<BoundShare, 5> shares{};
  for (const LayerEstimate& layer : e.layers) {
    if (layer.bound == Bound::kNone) continue;
    shares[static_cast<std::size_t>(layer.bound)].layers++;
    shares[static_cast<std::size_t>(layer.bound)].time_s += layer.time_s;
  }
  std::vector<std::string> parts;
  for (Bound b : {Bound::kCompute, Bound::kMemory, Bound::kHost, Bound::kFused}) {
    const BoundShare& s = shares[static_cast<std::size_t>(b)];
    if (s.layers == 0) continue;
    parts.push_back(fmt::format("{:<8} {:>5} {:<7} {:>7} of the time", bound_name(b),
                                format_grouped(static_cast<std::int64_t>(s.layers)),
                                s.layers == 1 ? "layer," : "layers,",
                                percent(s.time_s * e.layer_repeats / e.latency_s)));
  }
  if (e.input_wait_s > 0) {
    parts.push_back(fmt::format("{:<8} {:>15} {:>7} of the time (waiting for samples)",
                                bound_name(Bound::kInput), "",
                                percent(e.input_wait_s / e.latency_s)));
  }
  for (std::size_t k = 0; k < parts.size(); ++k) {
    out += fmt::format("  {:<12} {}\n", k == 0 ? "bound" : "", parts[k]);
  }
  // Per-kernel floors that dominate are the batch's to amortise, when a larger one fits.
  const double overhead_share =
      shares[static_cast<std::size_t>(Bound::kHost)].time_s * e.layer_repeats / e.latency_s;
  const auto batch = g.dims.find("batch");
  if (overhead_share > 0.5 && batch != g.dims.end() && e.max_batch > batch->second &&
      in.serving == nullptr) {
    out += fmt::format(
        "  hint         per-kernel floors take {} of the time at batch {}:\n"
        "               a larger {} (up to {} fits) spreads them out\n",
        percent(overhead_share), batch->second, setting(in, "batch"), format_grouped(e.max_batch));
  }
  return out;
}

// The layers that dominate, `top_layers` at most.
std::string heaviest_layers_text(const ReportInput& in, std::size_t top_layers) {
  const Graph& g = in.graph;
  const Estimate& e = *in.estimate;
  std::string out;
  std::vector<std::size_t> order(g.layers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  // By time, then by FLOPs: at batch 1 many layers sit at the same floor, and the heaviest of
  // them are the ones worth showing, not the first in the model.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (e.layers[a].time_s != e.layers[b].time_s) return e.layers[a].time_s > e.layers[b].time_s;
    return e.layers[a].flops > e.layers[b].flops;
  });
  const std::size_t shown = std::min(top_layers, order.size());
  if (shown > 0) {
    out +=
        fmt::format("\nHeaviest layers (top {} of {}{}; `capcalc layers` lists all)\n", shown,
                    g.layers.size(), in.workload.tensor_parallel > 1 ? ", FLOPs per device" : "");
    TextTable table;
    table.add_column("layer", Align::kLeft);
    table.add_column("op", Align::kLeft);
    table.add_column("output", Align::kLeft);
    table.add_column("GFLOPs", Align::kRight);
    table.add_column("time", Align::kRight);
    table.add_column("share", Align::kRight);
    table.add_column("bound", Align::kLeft);
    for (std::size_t k = 0; k < shown; ++k) {
      const std::size_t i = order[k];
      const LayerEstimate& le = e.layers[i];
      table.add_row({g.layers[i].name, g.layers[i].op, shape_to_string(g.layers[i].output),
                     gflops_text(le.flops), format_duration(le.time_s),
                     percent(le.time_s * e.layer_repeats / e.latency_s),
                     std::string(bound_name(le.bound))});
    }
    out += table.render("  ");
  }
  return out;
}

}  // namespace

std::string render_estimate_text(const ReportInput& in, std::size_t top_layers) {
  const Precision precision = in.workload.precision;
  std::string out = estimate_workload_text(in) + estimate_model_text(in) +
                    estimate_device_text(in) + estimate_time_text(in) + estimate_memory_text(in) +
                    estimate_bounds_text(in);
  out +=
      alignment_text(misaligned_matrix_layers(in.graph, *in.device, precision, in.workload.runtime),
                     precision, in.params);
  if (in.training != nullptr) out += render_training_text(in);
  if (in.serving != nullptr) out += render_serving_text(in);

  out += heaviest_layers_text(in, top_layers);
  if (in.explain) out += render_explain_text(in);
  return out;
}

}  // namespace capcalc
