#include "capcalc/report.hpp"

#include <algorithm>
#include <numeric>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/ranges.hpp"
#include "capcalc/units.hpp"

#include "checked.hpp"
#include "collectives.hpp"
#include "report_json.hpp"
#include "report_words.hpp"
#include "table.hpp"

namespace capcalc {
namespace {

using Json = nlohmann::ordered_json;
using Align = TextTable::Align;

double per_sample(std::int64_t value, std::int64_t batch) {
  return static_cast<double>(value) / static_cast<double>(batch);
}

// Counts are linear in the batch, so a per-sample count is a whole number; JSON keeps it exact.
Json per_sample_json(std::int64_t value, std::int64_t batch) {
  if (value % batch == 0) return value / batch;
  return per_sample(value, batch);
}

// Bytes a layer moves at the workload's precision (activations and weights may differ).
double layer_bytes(const LayerCounts& c, Precision precision) {
  return static_cast<double>(c.input_elements + c.output_elements) *
             activation_bytes_per_element(precision) +
         static_cast<double>(c.weight_elements_read) * weight_bytes_per_element(precision);
}

// A whole number of steps or kernels, digits grouped; past what that shows (a run of 1e300
// samples), with an SI prefix instead.
std::string whole_count(double n) {
  return n < 1e15 ? format_grouped(clamp_to_int64(std::round(n))) : format_count(n);
}

std::string percent(double fraction) {
  return fmt::format("{:.1f} %", 100 * fraction);
}

// The workload line's context of a language model: ", prompt 512 + 128 generated tokens" when
// serving, ", seq 1,024" for a pass over whole sequences; nothing for other models.
std::string context_text(const ReportInput& in) {
  if (in.request != nullptr) {
    return fmt::format(", prompt {} + {} generated tokens",
                       format_grouped(in.request->prompt_tokens),
                       format_grouped(in.request->output_tokens));
  }
  if (const std::optional<std::int64_t> seq = sequence_length(in.graph)) {
    return fmt::format(", seq {}", format_grouped(*seq));
  }
  return "";
}

// The peak the model's MACs run at, for "achieved x % of peak".
double matrix_peak(const Device& device, Precision precision) {
  const PeakRate& peak = device.peak(precision);
  return peak.matrix_flops_per_s > 0 ? peak.matrix_flops_per_s : peak.vector_flops_per_s;
}

std::string describe_peak(const Device& device, Precision precision) {
  const PeakRate& peak = device.peak(precision);
  std::vector<std::string> parts;
  if (peak.matrix_flops_per_s > 0) {
    parts.push_back(format_rate(peak.matrix_flops_per_s, "FLOP/s") + " matrix");
  }
  if (peak.vector_flops_per_s > 0) {
    parts.push_back(format_rate(peak.vector_flops_per_s, "FLOP/s") + " vector");
  }
  return fmt::format("{} dense {}", precision_name(precision), fmt::join(parts, ", "));
}

Json model_json(const ReportInput& in) {
  const Graph& g = in.graph;
  const GraphTotals& t = in.totals;
  const double act = activation_bytes_per_element(in.workload.precision);
  Json model;
  model["name"] = g.name;
  model["params"] = t.params;
  model["active_params"] = t.active_params;
  model["macs"] = per_sample_json(t.macs, g.batch);
  model["flops"] = per_sample_json(t.flops, g.batch);
  model["other_flops"] = per_sample_json(t.other_flops, g.batch);
  model["backward_flops"] = per_sample_json(t.backward_flops, g.batch);
  model["batch"] = g.batch;
  model["macs_per_batch"] = t.macs;
  model["flops_per_batch"] = t.flops;
  model["weight_bytes"] =
      static_cast<double>(t.params) * weight_bytes_per_element(in.workload.precision);
  model["activation_bytes"] = static_cast<double>(t.activation_elements) * act;
  model["peak_activation_bytes"] = static_cast<double>(t.peak_live_elements) * act;
  model["layers"] = g.layers.size();
  model["dims"] = g.dims;
  if (!g.unknown_ops.empty()) {  // Operators counted as zero (ONNX import).
    Json unknown = Json::object();
    for (const UnknownOperator& op : g.unknown_ops)
      unknown[op.op] = op.nodes;
    model["unknown_ops"] = unknown;
  }
  return model;
}

Json device_json(const Device& d) {
  Json device;
  device["id"] = d.id;
  device["name"] = d.name;
  device["type"] = std::string(device_type_name(d.type));
  device["memory_bytes"] = d.memory_bytes;
  device["memory_bandwidth_bytes_per_s"] = d.memory_bandwidth_bytes_per_s;
  device["dense_peak"] = dense_peak_json(d);
  const Json estimates = estimated_peaks_json(d);
  if (!estimates.empty()) device["estimated_peaks"] = estimates;
  return device;
}

Json layer_json(const ReportInput& in, std::size_t i) {
  const Layer& layer = in.graph.layers[i];
  const LayerCounts& c = layer.counts;
  Json row;
  row["name"] = layer.name;
  row["op"] = layer.op;
  row["output_shape"] = layer.output;
  row["params"] = c.params;
  row["macs"] = c.macs;
  row["flops"] = c.flops();
  row["other_flops"] = c.other_flops;
  row["backward_flops"] = c.backward_flops();
  const double bytes = layer_bytes(c, in.workload.precision);
  row["bytes"] = bytes;
  row["intensity_flops_per_byte"] = bytes > 0 ? static_cast<double>(c.flops()) / bytes : 0.0;
  if (in.estimate != nullptr) {
    const LayerEstimate& e = in.estimate->layers[i];
    row["time_s"] = e.time_s;
    row["compute_s"] = e.compute_s;
    row["memory_s"] = e.memory_s;
    row["overhead_s"] = e.overhead_s;
    row["bound"] = std::string(bound_name(e.bound));
  }
  return row;
}

// Share of the total time spent in layers of each bound.
struct BoundShare {
  std::size_t layers = 0;
  double time_s = 0;
};

// A setting named in a hint, as the caller spells it (the CLI: its flag).
std::string setting(const ReportInput& in, std::string_view key) {
  return in.setting_name ? in.setting_name(key) : std::string(key);
}

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

std::string render_training_text(const ReportInput& in) {
  const TrainingTotals& t = *in.training;
  const TrainingRun& run = *in.run;
  std::string out = fmt::format("\nTraining run ({} samples)\n", format_count(run.samples));
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

// The range of a prediction of `e`'s class, if the report has ranges.
std::optional<PredictionRange> range_of(const ReportInput& in, const Estimate& e) {
  if (in.ranges == nullptr) return std::nullopt;
  return in.ranges->range_for({e.profile, dominant_bound(e), in.device->type});
}

// " (8.1-13.0 ms: 80 % of 37 measured cases of eager/host/gpu)" for a time.
std::string time_range_text(const ReportInput& in, const Estimate& e, double time_s) {
  const std::optional<PredictionRange> r = range_of(in, e);
  if (!r) return "";
  const std::string basis =
      r->validated
          ? fmt::format("{:.0f} % of {} of {}", 100 * in.ranges->coverage,
                        counted(static_cast<std::int64_t>(r->cases), "measured case"), r->key)
          : fmt::format("no validated case of {}: the range of all {}",
                        class_key({e.profile, dominant_bound(e), in.device->type}),
                        counted(static_cast<std::int64_t>(r->cases), "case"));
  // "9.85-22.0 ms" when both ends share the unit.
  std::string low = format_duration(time_s * r->low);
  const std::string high = format_duration(time_s * r->high);
  const std::size_t space = low.rfind(' ');
  if (space != std::string::npos && high.size() > space &&
      high.substr(high.rfind(' ')) == low.substr(space)) {
    low.resize(space);
  }
  return fmt::format(" ({}-{}: {})", low, high, basis);
}

// " (75.1-118 samples/s)" for a rate.
std::string rate_range_text(const ReportInput& in, const Estimate& e, double rate,
                            std::string_view unit) {
  const std::optional<PredictionRange> r = range_of(in, e);
  if (!r) return "";
  return fmt::format(" ({}-{} {})", format_count(rate / r->high), format_count(rate / r->low),
                     unit);
}

Json range_json(const ReportInput& in, const Estimate& e, double value, bool time) {
  const PredictionRange r = *range_of(in, e);
  Json j;
  j["low"] = time ? value * r.low : value / r.high;
  j["high"] = time ? value * r.high : value / r.low;
  return j;
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

// The rates, bandwidth and floor each layer's time is computed from.
std::string explain_rates(const ReportInput& in) {
  const Device& d = *in.device;
  const PerformanceParams& p = *in.params;
  const Estimate& e = *in.estimate;
  const Precision precision = in.workload.precision;
  const PeakRate& peak = d.peak(precision);
  const bool training = in.workload.mode == Mode::kTraining;
  std::string out = "\nHow these figures were computed\n";
  out += "  per layer    time = max(compute, memory, floor)\n";
  out += "               compute = 2 x MACs / matrix rate + other FLOPs / vector rate\n";
  out += "               memory = (inputs + weights read + outputs) x bytes / bandwidth\n";
  if (peak.matrix_flops_per_s > 0) {
    out += fmt::format("  matrix rate  {} {} matrix peak x {:.2f} = {}\n",
                       format_rate(peak.matrix_flops_per_s, "FLOP/s"), precision_name(precision),
                       p.matrix_efficiency,
                       format_rate(peak.matrix_flops_per_s * p.matrix_efficiency, "FLOP/s"));
    out += fmt::format("               for layers with >= {:.0f} MACs per output (not depthwise)\n",
                       kMinMatrixReduction);
  } else {
    out += fmt::format("  matrix rate  none for {}: MACs run on vector units\n",
                       precision_name(precision));
  }
  double vector = peak.vector_flops_per_s;
  std::string vector_source = std::string(precision_name(precision));
  if (vector == 0) {
    vector = d.peak(Precision::kFp32).vector_flops_per_s;
    vector_source = "fp32";
  }
  if (vector == 0) {
    vector = peak.matrix_flops_per_s;
    vector_source += " (matrix; no vector peak known)";
  }
  out += fmt::format("  vector rate  {} {} vector peak x {:.2f} = {}\n",
                     format_rate(vector, "FLOP/s"), vector_source, p.vector_efficiency,
                     format_rate(vector * p.vector_efficiency, "FLOP/s"));
  out += fmt::format("  bandwidth    {} x {:.2f} = {}; {} B per activation, {} B per weight\n",
                     format_rate(d.memory_bandwidth_bytes_per_s, "B/s"), p.memory_efficiency,
                     format_rate(d.memory_bandwidth_bytes_per_s * p.memory_efficiency, "B/s"),
                     activation_bytes_per_element(precision), weight_bytes_per_element(precision));
  out += fmt::format("  floor        {} per kernel ({} profile; eager {}, graph {}, compiled {})\n",
                     format_duration(e.floor_s), profile_name(e.profile),
                     format_duration(p.eager_overhead_s), format_duration(p.graph_overhead_s),
                     format_duration(p.compiled_overhead_s));
  if (e.profile == Profile::kCompiled) {
    out += "               compiled: elementwise layers fused (no traffic, no floor)\n";
  } else if (e.profile == Profile::kInductor) {
    out +=
        "               inductor: elementwise layers fused (no traffic, no floor), each\n"
        "               other kernel launched from Python at the eager floor\n";
  }
  if (in.workload.runtime) {
    // What the runtime changes: its kernels per layer (and its own host cost, the floor above).
    const Runtime& r = *in.workload.runtime;
    out += fmt::format(
        "  runtime      {}: {} kernels per {}, from its kernels per layer\n"
        "               (`capcalc runtimes show {}`){}\n",
        r.name, whole_count(e.kernels), training ? "step" : "pass", r.id,
        r.host_overhead_s[static_cast<std::size_t>(d.type)] > 0
            ? "\n               the floor is its host cost per kernel"
            : "");
  }
  return out;
}

// What the memory holds, and for training what a step adds and the 6N check.
std::string explain_memory(const ReportInput& in) {
  const Precision precision = in.workload.precision;
  std::string out;
  if (in.workload.mode == Mode::kTraining) {
    out +=
        "  backward     weight-gradient MACs + input-gradient MACs (none for layers that read\n"
        "               only model inputs), 2 x forward traffic, 2 kernels per forward kernel\n"
        "               (eager: at the graph floor, launched by the autograd engine)\n";
    out += fmt::format("  optimizer    {}: {:.0f} B/param moved at the achievable bandwidth\n",
                       optimizer_name(in.workload.optimizer),
                       optimizer_update_bytes(in.workload.optimizer));
    out +=
        fmt::format("  memory       weights + gradients at {} B/param, {} state {:.0f} B/param{}\n",
                    weight_bytes_per_element(precision), optimizer_name(in.workload.optimizer),
                    optimizer_state_bytes(in.workload.optimizer),
                    weight_bytes_per_element(precision) < 4 ? " + fp32 master 4 B/param" : "");
    out += in.workload.checkpointing
               ? "               + each top-level block's output, and one block's internals\n"
                 "               while it is recomputed (one more forward per step)\n"
               : "               + every layer output saved for backward\n";
    if (auto seq = in.graph.dims.find("seq"); seq != in.graph.dims.end()) {
      // Kaplan et al. 2020 (arXiv:2001.08361, Table 1): training costs about 6 FLOPs per
      // weight per token (forward 2N, backward 4N) plus attention's products of activations,
      // 12 x layers x context x d_attn when counted full. N here is what the products use per
      // token: weight MACs per token (an embedding that is only looked up uses none; a tied
      // head uses its weights again).
      const double tokens = static_cast<double>(in.graph.batch * seq->second);
      double score_macs = 0;
      for (const Layer& layer : in.graph.layers)
        score_macs += static_cast<double>(layer.counts.score_macs);
      const double weight_macs = static_cast<double>(in.totals.macs) - score_macs;
      const double counted =
          static_cast<double>(in.totals.flops + in.totals.backward_flops) / tokens;
      const double six_n = 6 * weight_macs / tokens;
      const double attention = 6 * score_macs / tokens;
      out += fmt::format("  check        {} FLOPs per token counted (forward + backward)\n",
                         format_count(counted));
      out += fmt::format("               6N = {}: N = {} weights used per token (params: {})\n",
                         format_count(six_n), format_count(weight_macs / tokens),
                         format_count(static_cast<double>(in.totals.params)));
      out += fmt::format("               attention = 6 x (QK + AV) MACs per token = {}\n",
                         format_count(attention));
      out += fmt::format("               6N + attention = {}; the count is {:+.1f} % from it\n",
                         format_count(six_n + attention),
                         100 * (counted - six_n - attention) / (six_n + attention));
    }
  } else {
    out += "  memory       weights + the peak of live activations (liveness over the graph)\n";
  }
  return out;
}

// One all-reduce of `bytes` over `group` devices `stride` apart, as estimate() times it
// (collectives.hpp): a ring inside a node; across nodes reduce-scatter and all-gather inside the
// node around an all-reduce of each member's 1/g share over its network port.
std::string allreduce_formula(const ReportInput& in, std::int64_t stride, std::int64_t group,
                              std::string_view bytes) {
  const PerformanceParams& model = *in.params;
  const CollectiveGroup c = collective_group(*in.device, stride, group);
  const std::string latency = format_duration(model.allreduce_latency(in.estimate->profile));
  const auto share = [&](double per_direction) {
    return fmt::format("{:.0f} % of {} per direction", 100 * model.allreduce_efficiency,
                       format_rate(per_direction, "B/s"));
  };
  if (c.network == nullptr) {
    return fmt::format("{} + 2({}-1)/{} x {} / ({})\n               over {}", latency, group, group,
                       bytes, share(c.intra_per_direction), c.link_name());
  }
  const std::string across = fmt::format(
      "{} + 2({}-1)/{} x {}{} / ({})", latency, c.nodes, c.nodes, bytes,
      c.per_node > 1 ? fmt::format("/{}", c.per_node) : "", share(c.network_per_direction));
  if (c.intra == nullptr) {
    return fmt::format("{}\n               over {}, one member a node", across, c.network->name);
  }
  return fmt::format(
      "{} devices a node x {} nodes, in two levels:\n"
      "               2 x [{} + ({}-1)/{} x {} / ({})] over {}\n"
      "               + {}\n"
      "               over {}",
      c.per_node, c.nodes, latency, c.per_node, c.per_node, bytes, share(c.intra_per_direction),
      c.intra->name, across, c.network->name);
}

// Tensor parallelism, ZeRO and pipeline stages: how the work is split.
std::string explain_split(const ReportInput& in) {
  std::string out;
  const std::int64_t tp = in.workload.tensor_parallel;
  if (tp > 1) {
    out += fmt::format(
        "  tensor par.  each layer's work, weights, state, activations{} split over {} devices;\n"
        "               each device still pays every kernel's floor\n",
        in.serving != nullptr ? " and KV cache" : "", tp);
    if (in.estimate->communication_modelled) {
      out += fmt::format(
          "  all-reduce   2 per attention layer (after its output projection and after the\n"
          "               feed-forward block){}; each of S bytes (the layer's output):\n"
          "               {}\n",
          in.workload.mode == Mode::kTraining ? ", as many again in backward" : "",
          allreduce_formula(in, 1, tp, "S"));
    } else {
      out += "  all-reduce   not modelled: the table has no link for this device and group\n";
    }
  }
  const std::int64_t replicas = data_parallel_replicas(in.workload);
  if (const int zero = in.workload.zero_stage; zero > 0) {
    out += fmt::format(
        "  ZeRO-{}       optimizer state{} sharded over {} data-parallel replicas\n"
        "               (reduce-scatter + all-gather: an all-reduce's bytes{})\n",
        zero,
        zero == 1   ? " and its update"
        : zero == 2 ? ", its update and gradients"
                    : ", update, gradients, weights",
        replicas,
        zero == 3 ? ";\n               the one layer gathered at a time is not counted" : "");
  }
  const std::int64_t pp = in.workload.pipeline_parallel;
  const std::int64_t micro = in.workload.micro_batches;
  const std::int64_t v = in.workload.virtual_stages;
  if ((pp > 1 || micro > 1) && v == 1) {
    out += fmt::format(
        "  pipeline     {} stage{} x {} micro-batch{}, 1F1B: each stage holds 1/{} of the layers,\n"
        "               weights and state (an even split); step = (M + P - 1) x (one\n"
        "               micro-batch's forward + backward) / P + optimizer = ({} + {} - 1) x\n"
        "               stage time; at most min(P, M) micro-batches' activations in flight\n",
        pp, pp == 1 ? "" : "s", micro, micro == 1 ? "" : "es", pp, micro, pp);
  } else if (pp > 1) {
    out += fmt::format(
        "  pipeline     {} stages x {} chunks x {} micro-batches, interleaved 1F1B (Megatron):\n"
        "               each stage holds {} chunks of 1/{} of the layers; step = (M + (P - 1) /\n"
        "               V) x stage time + optimizer = ({} + {}/{}) x stage time; activations in\n"
        "               flight: min(2(P-1) + (V-1)P + 1, M V) chunks of 1/(P V)\n",
        pp, v, micro, v, pp * v, micro, pp - 1, v);
  }
  if (pp > 1) {
    out += fmt::format(
        "  stage sends  per micro-batch its boundary activation forward and its gradient back,\n"
        "               1/{} of it per device, each latency + bytes / ({:.0f} % of the link per\n"
        "               direction){}\n",
        in.workload.tensor_parallel, 100 * in.params->allreduce_efficiency,
        v == 1 ? ", blocking (1F1B)"
               : ";\n               once per chunk, overlapped with its compute (only the rest "
                 "shows)");
  }
  return out;
}

// Training replicas' gradient sync, by ZeRO stage.
std::string explain_gradient_sync(const ReportInput& in, std::int64_t replicas) {
  const std::int64_t devices = in.workload.tensor_parallel * in.workload.pipeline_parallel;
  const int zero = in.workload.zero_stage;
  std::string out = fmt::format(
      "  devices      {} data-parallel replicas of {} device{}; per step one all-reduce of\n"
      "               the device's gradients, G bytes, overlapped with the backward of the\n"
      "               step's last micro-batch (exposed: the rest)\n",
      replicas, devices, devices == 1 ? "" : "s");
  if (zero == 2) {
    out +=
        "               (ZeRO-2 instead: a reduce-scatter of the gradients after each\n"
        "               micro-batch's backward, hidden behind it, and one all-gather of the\n"
        "               weights after the optimizer, exposed; each half an all-reduce of its\n"
        "               bytes)\n";
  } else if (zero >= 3) {
    out +=
        "               (ZeRO-3 instead: per micro-batch two all-gathers of the weights and\n"
        "               a reduce-scatter of the gradients, hidden behind its forward and\n"
        "               backward; each half an all-reduce of its bytes)\n";
  }
  if (!in.estimate->data_parallel_modelled) {
    return out + "               not modelled here: no link in the table for this group\n";
  }
  return out + fmt::format("               one all-reduce: {}\n",
                           allreduce_formula(in, in.workload.tensor_parallel, replicas, "G"));
}

// Data-parallel replicas, and a training run's time, cost and energy.
std::string explain_replicas(const ReportInput& in) {
  const std::int64_t replicas = data_parallel_replicas(in.workload);
  const std::int64_t tp = in.workload.tensor_parallel;
  const std::int64_t pp = in.workload.pipeline_parallel;
  std::string out;
  if (replicas > 1 && in.workload.mode != Mode::kTraining) {
    out += fmt::format(
        "  devices      {} data-parallel replica{} of {} device{} (independent: no traffic)\n",
        replicas, replicas == 1 ? "" : "s", tp * pp, tp * pp == 1 ? "" : "s");
  } else if (replicas > 1) {
    out += explain_gradient_sync(in, replicas);
  }
  if (in.training != nullptr) {
    out +=
        "  run          steps = ceil(samples / (batch x micro-batches x replicas));\n"
        "               time = steps x step time\n";
    out += "               device-hours = time x devices; cost = device-hours x price\n";
    out +=
        "               energy = device-hours x TDP (devices rarely run at TDP: an upper bound)\n";
  }
  return out;
}

std::string render_explain_text(const ReportInput& in) {
  return explain_rates(in) + explain_memory(in) + explain_split(in) + explain_replicas(in);
}

}  // namespace

std::string allreduce_summary(const Estimate& e) {
  if (!e.communication_modelled) return "not modelled (no link in the table for this group)";
  return fmt::format("{}: {} of {} in all over {}", format_duration(e.communication_s),
                     counted(e.allreduces, "all-reduce"), format_bytes(e.allreduce_bytes),
                     e.communication_link);
}

std::string stage_sends_summary(const Estimate& e) {
  if (!e.pipeline_sends_modelled) return "not modelled (no link in the table between the stages)";
  return fmt::format("{} of the step ({} per send over {})", format_duration(e.pipeline_send_s),
                     format_bytes(e.pipeline_send_bytes), e.pipeline_link);
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

}  // namespace

namespace {

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
  std::string workload = fmt::format(
      "{}, {}, batch {}{}{}, {}", mode_name(in.workload.mode), precision_name(precision), g.batch,
      in.batch_note.empty() ? "" : " (" + in.batch_note + ")", context_text(in), runner);
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
  const double all_weights = static_cast<double>(t.params) * weight_bytes_per_element(stored);
  const bool split = in.workload.tensor_parallel * in.workload.pipeline_parallel > 1 ||
                     (training && in.workload.zero_stage >= 3);
  const bool sparse = in.workload.sparsity == Sparsity::k2of4;
  out += fmt::format(
      "  weights      {} at {}{}\n", format_bytes(all_weights), precision_name(stored),
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
  for (const std::string& line : estimate_lines(d, precision))
    out += "  ESTIMATE     " + wrap_text(line, 100, 15);
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
    out +=
        fmt::format("  pipeline     {} stages{}: {} of bubble ({} stage times, {} of the step)\n",
                    in.workload.pipeline_parallel,
                    v > 1 ? fmt::format(" x {} chunks, interleaved 1F1B", v) : ", 1F1B",
                    format_duration(e.pipeline_bubble_s),
                    v > 1 ? fmt::format("{}/{}", in.workload.pipeline_parallel - 1, v)
                          : fmt::format("{}", in.workload.pipeline_parallel - 1),
                    percent(e.pipeline_bubble_s / e.latency_s));
    out += "  stage sends  " + stage_sends_summary(e) + "\n";
  }
  if (in.workload.tensor_parallel > 1) out += communication_text("all-reduce", e);
  if (training && data_parallel_replicas(in.workload) > 1) {
    out += "  grad sync    " + grad_sync_summary(e, in.workload.zero_stage) + "\n";
  }
  if (training) {
    out += fmt::format("  optimizer    {} ({} update)\n", format_duration(e.optimizer_s),
                       optimizer_name(in.workload.optimizer));
    if (in.workload.checkpointing) {
      out += fmt::format("  recompute    {} (activation checkpointing: the forward again)\n",
                         format_duration(e.recompute_s));
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
                     fmt::format("{:.3f}", le.flops / 1e9), format_duration(le.time_s),
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
  out += alignment_text(misaligned_matrix_layers(in.graph, *in.device, precision), precision,
                        in.params);
  if (in.training != nullptr) out += render_training_text(in);
  if (in.serving != nullptr) out += render_serving_text(in);

  out += heaviest_layers_text(in, top_layers);
  if (in.explain) out += render_explain_text(in);
  return out;
}

namespace {

// The workload as the JSON output names it: the keys of budget and measurement files.
Json workload_json(const ReportInput& in) {
  const Estimate& e = *in.estimate;
  Json workload;
  workload["mode"] = std::string(mode_name(in.workload.mode));
  workload["precision"] = std::string(precision_name(in.workload.precision));
  workload["batch"] = in.graph.batch;
  if (!in.batch_note.empty()) workload["batch_note"] = in.batch_note;
  workload["profile"] = std::string(profile_name(e.profile));
  workload["runtime"] = e.runtime;
  workload["devices"] = in.workload.devices;
  workload["tensor_parallel"] = in.workload.tensor_parallel;
  workload["pipeline_parallel"] = in.workload.pipeline_parallel;
  workload["micro_batches"] = in.workload.micro_batches;
  workload["virtual_stages"] = in.workload.virtual_stages;
  workload["zero_stage"] = in.workload.zero_stage;
  workload["checkpointing"] = in.workload.checkpointing;
  workload["weight_precision"] =
      std::string(precision_name(in.workload.weight_precision.value_or(in.workload.precision)));
  if (in.workload.kv_precision) {
    workload["kv_precision"] = std::string(precision_name(*in.workload.kv_precision));
  }
  workload["sparsity"] = in.workload.sparsity == Sparsity::k2of4           ? "2:4"
                         : in.workload.sparsity == Sparsity::kUnstructured ? "unstructured"
                                                                           : "dense";
  if (in.workload.mode == Mode::kTraining) {
    workload["optimizer"] = std::string(optimizer_name(in.workload.optimizer));
  }
  return workload;
}

// Why the model does not fit, and the splits that would make it.
Json fit_json(const ReportInput& in) {
  Json fit;
  fit["message"] = fit_advice_text(*in.fit, *in.device, in.workload.mode);
  fit["state_bytes"] = in.fit->state_bytes;
  fit["replicas_do_not_split"] = in.fit->replicas_do_not_split;
  Json options = Json::array();
  for (const FitOption& o : in.fit->options) {
    options.push_back({{"flags", o.flags}, {"devices", o.devices}});
  }
  fit["options"] = options;
  return fit;
}

// The matrix layers whose dimensions miss the device's tile multiple.
Json misaligned_json(const ReportInput& in) {
  nlohmann::json misaligned = nlohmann::json::array();
  const std::vector<MisalignedLayer> unaligned =
      in.device != nullptr ? misaligned_matrix_layers(in.graph, *in.device, in.workload.precision)
                           : std::vector<MisalignedLayer>{};
  for (const MisalignedLayer& m : unaligned) {
    misaligned.push_back({{"layer", m.name},
                          {"dimension", m.dimension},
                          {"size", m.size},
                          {"multiple", m.multiple},
                          {"padded", m.padded},
                          {"share_of_macs", m.share_of_macs}});
  }
  return misaligned;
}

// LLM serving: time to first token, decode and the KV cache.
Json llm_json(const ReportInput& in) {
  const ServingEstimate& sv = *in.serving;
  Json llm;
  llm["prompt_tokens"] = in.request->prompt_tokens;
  llm["output_tokens"] = in.request->output_tokens;
  llm["prefill_s"] = sv.prefill.latency_s;
  llm["prefill_communication_s"] = sv.prefill.communication_s;
  llm["decode_step_communication_s"] = sv.decode.communication_s;
  llm["ttft_s"] = sv.ttft_s;
  if (in.ranges != nullptr) llm["ttft_range_s"] = range_json(in, sv.prefill, sv.ttft_s, true);
  llm["decode_step_s"] = sv.decode_step_s;
  if (in.ranges != nullptr) {
    llm["decode_step_range_s"] = range_json(in, sv.decode, sv.decode_step_s, true);
  }
  llm["mean_context_tokens"] = sv.mean_context;
  llm["decode_tokens_per_s_per_sequence"] = sv.tokens_per_s_per_sequence;
  llm["decode_tokens_per_s"] = sv.tokens_per_s;
  llm["request_latency_s"] = sv.request_latency_s;
  llm["kv_cache_bytes_per_token"] = sv.kv_bytes_per_token;
  llm["kv_cache_modelled"] = sv.kv_bytes_per_token > 0;
  llm["kv_cache_bytes"] = sv.kv_bytes;
  llm["memory_bytes"] = sv.memory_bytes;
  llm["fits"] = sv.fits;
  llm["max_batch"] = sv.max_batch;
  llm["max_cached_tokens"] = sv.max_cached_tokens;
  return llm;
}

// A training run: steps, time, device-hours, cost and energy.
Json training_run_json(const ReportInput& in) {
  Json run;
  run["samples"] = in.run->samples;
  run["steps"] = in.training->steps;
  run["time_s"] = in.training->time_s;
  run["device_hours"] = in.training->device_hours;
  run["cost_usd"] = in.training->cost_usd ? Json(*in.training->cost_usd) : Json(nullptr);
  run["price_per_device_hour_usd"] =
      in.run->price_per_device_hour_usd ? Json(*in.run->price_per_device_hour_usd) : Json(nullptr);
  run["energy_kwh"] = in.training->energy_kwh ? Json(*in.training->energy_kwh) : Json(nullptr);
  return run;
}

// The "estimate" object: time, memory and the performance model.
Json estimate_json(const ReportInput& in) {
  const Estimate& e = *in.estimate;
  Json est;
  est["latency_s"] = e.latency_s;
  if (in.ranges != nullptr) est["latency_range_s"] = range_json(in, e, e.latency_s, true);
  est["kernels"] = e.kernels;
  est["throughput_per_s"] = e.throughput_per_s;
  if (in.ranges != nullptr) {
    est["throughput_range_per_s"] = range_json(in, e, e.throughput_per_s, false);
    const PredictionRange r = *range_of(in, e);
    est["range_basis"] = {{"class", class_key({e.profile, dominant_bound(e), in.device->type})},
                          {"validated", r.validated},
                          {"cases", r.cases},
                          {"coverage", in.ranges->coverage}};
  }
  est["flops_per_step"] = e.flops;
  est["bytes_per_step"] = e.bytes;
  est["achieved_flops_per_s"] = e.achieved_flops_per_s;
  est["optimizer_s"] = e.optimizer_s;
  est["recompute_s"] = e.recompute_s;
  est["pipeline_bubble_s"] = e.pipeline_bubble_s;
  if (in.workload.pipeline_parallel > 1) {
    est["pipeline_sends"] = {
        {"time_s", e.pipeline_send_s},
        {"bytes", e.pipeline_send_bytes},
        {"link", e.pipeline_sends_modelled ? Json(e.pipeline_link) : Json(nullptr)},
        {"modelled", e.pipeline_sends_modelled}};
  }
  est["communication_s"] = e.communication_s;
  est["allreduces"] = e.allreduces;
  est["allreduce_bytes"] = e.allreduce_bytes;
  est["communication_modelled"] = e.communication_modelled;
  if (in.workload.mode == Mode::kTraining && data_parallel_replicas(in.workload) > 1) {
    Json dp;
    dp["allreduce_s"] = e.data_parallel_s;
    dp["exposed_s"] = e.data_parallel_exposed_s;
    dp["bytes"] = e.data_parallel_bytes;
    dp["link"] = e.data_parallel_modelled ? Json(e.data_parallel_link) : Json(nullptr);
    dp["modelled"] = e.data_parallel_modelled;
    est["data_parallel"] = dp;
  }
  est["memory_bytes"] = e.memory.total_bytes;
  est["fits"] = e.fits;
  if (in.fit != nullptr && !e.fits) est["to_fit"] = fit_json(in);
  Json memory;
  memory["weight_bytes"] = e.memory.weight_bytes;
  memory["gradient_bytes"] = e.memory.gradient_bytes;
  memory["optimizer_bytes"] = e.memory.optimizer_bytes;
  memory["activation_bytes"] = e.memory.activation_bytes;
  est["memory"] = memory;
  Json params;
  params["matrix_efficiency"] = in.params->matrix_efficiency;
  params["vector_efficiency"] = in.params->vector_efficiency;
  params["memory_efficiency"] = in.params->memory_efficiency;
  params["overhead_s"] = e.floor_s;
  est["performance_model"] = params;
  est["max_batch"] = e.max_batch;
  est["sparsity_speedup"] = e.sparsity_speedup;
  est["misaligned_layers"] = misaligned_json(in);
  if (in.serving != nullptr) est["llm"] = llm_json(in);
  if (in.training != nullptr) est["training"] = training_run_json(in);
  return est;
}

}  // namespace

std::string render_estimate_json(const ReportInput& in) {
  Json doc;
  doc["schema_version"] = kOutputSchemaVersion;
  doc["model"] = model_json(in);
  doc["device"] = device_json(*in.device);
  doc["workload"] = workload_json(in);
  doc["estimate"] = estimate_json(in);
  Json layers = Json::array();
  for (std::size_t i = 0; i < in.graph.layers.size(); ++i)
    layers.push_back(layer_json(in, i));
  doc["layers"] = layers;
  return json_text(doc);
}

std::string render_layers_text(const ReportInput& in) {
  const Graph& g = in.graph;
  TextTable table;
  table.add_column("layer", Align::kLeft);
  table.add_column("op", Align::kLeft);
  table.add_column("output", Align::kLeft);
  table.add_column("params", Align::kRight);
  table.add_column("MACs", Align::kRight);
  table.add_column("bytes", Align::kRight);
  table.add_column("FLOP/B", Align::kRight);
  if (in.estimate != nullptr) {
    table.add_column("time", Align::kRight);
    table.add_column("bound", Align::kLeft);
  }
  for (std::size_t i = 0; i < g.layers.size(); ++i) {
    const Layer& layer = g.layers[i];
    const LayerCounts& c = layer.counts;
    const double bytes = layer_bytes(c, in.workload.precision);
    std::vector<std::string> row{
        layer.name,
        layer.op,
        shape_to_string(layer.output),
        c.params > 0 ? format_count(static_cast<double>(c.params)) : "-",
        c.macs > 0 ? format_count(static_cast<double>(c.macs)) : "-",
        layer.view ? "-" : format_bytes(bytes),
        bytes > 0 ? fmt::format("{:.1f}", static_cast<double>(c.flops()) / bytes) : "-"};
    if (in.estimate != nullptr) {
      const LayerEstimate& e = in.estimate->layers[i];
      row.push_back(layer.view ? "-" : format_duration(e.time_s));
      row.emplace_back(bound_name(e.bound));
    }
    table.add_row(std::move(row));
  }
  const GraphTotals& t = in.totals;
  std::string out =
      fmt::format("{}: {}, batch {}, {} (bytes at {})\n", g.name,
                  counted(static_cast<std::int64_t>(g.layers.size()), "layer"), g.batch,
                  in.device ? in.device->name : "no device", precision_name(in.workload.precision));
  out += table.render();
  out += fmt::format("total: {} params, {} MACs, {} FLOPs\n", format_grouped(t.params),
                     format_grouped(t.macs), format_grouped(t.flops));
  return out;
}

std::string render_layers_json(const ReportInput& in) {
  Json doc;
  doc["schema_version"] = kOutputSchemaVersion;
  doc["model"] = model_json(in);
  doc["precision"] = std::string(precision_name(in.workload.precision));
  if (in.device != nullptr) doc["device"] = device_json(*in.device);
  Json layers = Json::array();
  for (std::size_t i = 0; i < in.graph.layers.size(); ++i)
    layers.push_back(layer_json(in, i));
  doc["layers"] = layers;
  return json_text(doc);
}

std::string render_layers_csv(const ReportInput& in) {
  std::string out = "name,op,output_shape,params,macs,flops,bytes";
  if (in.estimate != nullptr) out += ",time_s,bound";
  out += "\n";
  for (std::size_t i = 0; i < in.graph.layers.size(); ++i) {
    const Layer& layer = in.graph.layers[i];
    const LayerCounts& c = layer.counts;
    // Shapes are written 1x3x224x224, so only names may need quoting.
    out += fmt::format("{},{},{},{},{},{},{:.0f}", csv_field(layer.name), layer.op,
                       fmt::join(layer.output, "x"), c.params, c.macs, c.flops(),
                       layer_bytes(c, in.workload.precision));
    if (in.estimate != nullptr) {
      out += fmt::format(",{},{}", csv_number(in.estimate->layers[i].time_s),
                         bound_name(in.estimate->layers[i].bound));
    }
    out += "\n";
  }
  return out;
}

}  // namespace capcalc
