// `capcalc estimate --explain`: the formulas and assumptions behind each figure.
#include <algorithm>

#include <fmt/format.h>

#include "capcalc/ranges.hpp"
#include "capcalc/report.hpp"
#include "capcalc/units.hpp"

#include "checked.hpp"
#include "collectives.hpp"
#include "report_parts.hpp"
#include "report_words.hpp"

namespace capcalc {
namespace {

// What a FlashAttention-style runtime leaves out of the counted attention, and what FP8
// training's quantize passes add ("" where neither applies).
std::string explain_attention_kernels(const Graph& graph, const Runtime& r, Precision precision,
                                      bool training) {
  std::string out;
  double score = 0;
  double masked = 0;
  for (const Layer& layer : graph.layers) {
    if (layer.traits.op_class != OpClass::kAttention) continue;
    score += static_cast<double>(layer.counts.score_macs);
    masked += static_cast<double>(layer.counts.masked_score_macs);
  }
  if (r.flash_attention && masked > 0) {
    out += fmt::format(
        "  attention    {:.0f} % of the attention products counted are causally masked: its\n"
        "               FlashAttention-style kernels skip them{}\n",
        100 * masked / score, training ? "; the backward recomputes QKᵀ" : "");
  }
  if (training && precision == Precision::kFp8 && r.fp8_quantize_bytes > 0) {
    out += fmt::format(
        "  fp8          quantize passes of {:g} B per element over each weighted product's\n"
        "               input (forward) and output gradient (backward), at the bandwidth\n",
        r.fp8_quantize_bytes);
  }
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
    const double clock = d.matrix_clock_fraction(precision);
    out += fmt::format(
        "  matrix rate  {} {} matrix peak{} x {:.2f} = {}\n",
        format_rate(peak.matrix_flops_per_s, "FLOP/s"), precision_name(precision),
        clock < 1 ? fmt::format(" x {:.3f} (sustained clock)", clock) : "", p.matrix_efficiency,
        format_rate(peak.matrix_flops_per_s * clock * p.matrix_efficiency, "FLOP/s"));
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
    out += explain_attention_kernels(in.graph, r, precision, training);
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
           : in.workload.recompute != 0
               ? fmt::format(
                     "               + every layer output saved for backward, but for\n"
                     "               what selective recomputation ({}) makes again\n"
                     "               in backward: its forward once more\n",
                     recompute_modules_text(in.workload.recompute))
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
// node around an all-reduce of each member's 1/g share over its network port, whose network
// steps each add NCCL's step latency.
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
  // The ring's form; NCCL's tree (2 log2 m steps at 0.46 of the bandwidth) where faster.
  const std::string across = fmt::format(
      "{} + 2({}-1) x {} + 2({}-1)/{} x {}{} / ({})\n"
      "               (NCCL's ring, a latency per network step; its tree where faster)",
      latency, c.nodes, format_duration(model.network_step_latency_s), c.nodes, c.nodes, bytes,
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
  // ZeRO shards over every device holding the same weights: the replicas x context_parallel.
  const std::int64_t shards = data_parallel_shards(in.workload);
  if (const int zero = in.workload.zero_stage; zero > 0) {
    out += fmt::format(
        "  ZeRO-{}       optimizer state{} sharded over {} devices holding the same weights{}\n"
        "               (reduce-scatter + all-gather: an all-reduce's bytes{})\n",
        zero,
        zero == 1   ? " and its update"
        : zero == 2 ? ", its update and gradients"
                    : ", update, gradients, weights",
        shards,
        in.workload.context_parallel > 1
            ? fmt::format(" ({} replicas x CP {})", data_parallel_replicas(in.workload),
                          in.workload.context_parallel)
            : std::string(),
        zero == 3 ? ";\n               the one layer gathered at a time is not counted" : "");
  }
  if (const std::int64_t ep = in.workload.expert_parallel; ep > 1) {
    const std::string link = in.estimate->expert_parallel_modelled
                                 ? in.estimate->expert_parallel_link
                                 : std::string("no link in the table (not modelled)");
    // Whole experts (expert tensor-parallel 1) fold the expert grid over the T devices too.
    const std::int64_t etp = expert_tensor_parallel(in.workload);
    const std::int64_t holders =
        data_parallel_shards(in.workload) * in.workload.tensor_parallel / (ep * etp);
    out += in.workload.mode == Mode::kTraining
               ? fmt::format(
                     "  expert par.  each device holds 1/{} of every moe layer's routed experts{}, "
                     "with their\n"
                     "               gradients and state (reduced and ZeRO-sharded over the {} "
                     "devices that hold\n"
                     "               the same experts); per moe layer a dispatch and a combine "
                     "all-to-all (as\n"
                     "               many again in backward), each sending (E-1)/E of the "
                     "device's 1/(T x C) of\n"
                     "               the tokens x experts per token x width, over {}\n",
                     ep, whole_experts(in.workload) ? ", whole" : "", holders, link)
               : fmt::format(
                     "  expert par.  each device holds 1/{} of every moe layer's routed experts; "
                     "per moe layer a\n"
                     "               dispatch and a combine all-to-all, each sending (E-1)/E of "
                     "the device's\n"
                     "               1/T of the tokens x experts per token x width, over {}\n",
                     ep, link);
    if (in.workload.moe_dispatcher == MoeDispatcher::kAllGather) {
      out += fmt::format(
          "               the all-gather dispatcher instead gathers every token of the {} devices\n"
          "               of the expert x tensor-parallel group to each, and reduce-scatters the\n"
          "               experts' outputs back (one all-reduce where they are a replica's\n"
          "               tensor-parallel devices holding the same tokens)\n",
          in.estimate->expert_parallel_group);
    } else if (in.workload.moe_dispatcher != MoeDispatcher::kAllToAll) {
      out += fmt::format(
          "               {} instead sends a token once to each device holding any of its\n"
          "               experts, and across nodes once to each such node (to the device of\n"
          "               the same local rank, which forwards it to its node mates), routing\n"
          "               taken as uniform over the experts\n",
          moe_dispatcher_title(in.workload.moe_dispatcher));
    }
  }
  const std::int64_t pp = in.workload.pipeline_parallel;
  const std::int64_t micro = in.workload.micro_batches;
  const std::int64_t v = in.workload.virtual_stages;
  if ((pp > 1 || micro > 1) && v == 1) {
    out += fmt::format(
        "  pipeline     {} stage{} x {} micro-batch{}, 1F1B: each stage holds 1/{} of the weights\n"
        "               and state; step = (M + P - 1) x (one micro-batch's forward + backward)\n"
        "               / P + optimizer = ({} + {} - 1) x stage time for an even split, else M\n"
        "               x the heaviest stage + the others (the embedding on the first, the\n"
        "               output layer and loss on the last); at most min(P, M) micro-batches'\n"
        "               activations in flight\n",
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

}  // namespace

// LLM serving: what the prefill and the decode step are estimates of.
std::string explain_serving(const ReportInput& in) {
  if (in.request == nullptr || in.serving == nullptr) return "";
  return fmt::format(
      "  prefill      the {} prompt tokens of each sequence through every layer; the model's\n"
      "               output product (its LM head) on the last token only, as serving\n"
      "               runtimes compute no other logits\n"
      "  decode step  one token per sequence over a KV cache of {} tokens, the mean context\n"
      "               of the {} steps after the first token; TTFT is the prefill\n",
      format_grouped(in.request->prompt_tokens), format_grouped(in.serving->mean_context),
      format_grouped(in.request->output_tokens - 1));
}

std::string render_explain_text(const ReportInput& in) {
  return explain_rates(in) + explain_memory(in) + explain_serving(in) + explain_split(in) +
         explain_replicas(in);
}

}  // namespace capcalc
