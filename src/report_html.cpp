// `capcalc report`: one self-contained HTML5 page. Everything is inline (CSS, the roofline SVG)
// and nothing is fetched: no scripts, links, fonts or images, so the file can be mailed or
// attached to a CI run and opens offline. All text from models and the hardware table is
// escaped; the hardware sources are printed as plain text, never as links.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "capcalc/ranges.hpp"
#include "capcalc/report.hpp"
#include "capcalc/roofline.hpp"
#include "capcalc/units.hpp"

#include "markup.hpp"
#include "report_json.hpp"
#include "report_parts.hpp"
#include "report_words.hpp"

namespace capcalc {
namespace {

constexpr std::string_view kStyle = R"(
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; color: #222; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 1.8em; }
p.sub { color: #555; margin-top: 0; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #e6e6e6; text-align: left;
         vertical-align: top; }
th { background: #f3f3f3; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.kv th { background: none; font-weight: normal; color: #555; white-space: nowrap; }
tr.total td { font-weight: bold; border-top: 2px solid #999; }
.bar { display: inline-block; height: 0.7em; background: #1f77b4; vertical-align: middle;
       margin-right: 0.4em; }
.compute { color: #1f77b4; } .memory { color: #d35400; } .host { color: #666; }
.fits { color: #1e7b34; font-weight: bold; } .nofit { color: #c0392b; font-weight: bold; }
figure { margin: 0; } figcaption { color: #555; font-size: 0.9em; max-width: 960px; }
svg { max-width: 100%; height: auto; }
ul.sources { font-size: 0.85em; color: #555; word-break: break-all; }
footer { margin-top: 2em; color: #777; font-size: 0.85em; }
)";

std::string esc(std::string_view text) {
  return escape_markup(text);
}

// A row of a two-column table; `value` is HTML already.
std::string kv_row(std::string_view key, const std::string& value) {
  return fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", esc(key), value);
}

std::string bound_span(Bound bound) {
  if (bound == Bound::kNone) return "-";
  return fmt::format("<span class=\"{0}\">{0}</span>", bound_name(bound));
}

// Time and layers per bound, and the bound with the most time.
struct BoundShares {
  std::array<double, 5> time_s{};
  std::array<std::size_t, 5> layers{};
};

BoundShares bound_shares(const Estimate& e) {
  BoundShares s;
  for (const LayerEstimate& layer : e.layers) {
    if (layer.bound == Bound::kNone) continue;
    s.time_s[static_cast<std::size_t>(layer.bound)] += layer.time_s;
    s.layers[static_cast<std::size_t>(layer.bound)]++;
  }
  return s;
}

// LLM serving: the prefill and the decode step, as `estimate` prints them.
std::string serving_rows(const ReportInput& in) {
  const ServingEstimate& s = *in.serving;
  std::string out;
  out += kv_row("prefill (TTFT)", fmt::format("{}, mostly {}-bound", esc(format_duration(s.ttft_s)),
                                              bound_name(dominant_bound(s.prefill))));
  out += kv_row("decode step",
                fmt::format("{} per token at {} cached tokens, mostly {}-bound",
                            esc(format_duration(s.decode_step_s)), format_grouped(s.mean_context),
                            bound_name(dominant_bound(s.decode))));
  out += kv_row("decode", fmt::format("{} tokens/s per sequence, {} tokens/s in total",
                                      esc(format_count(s.tokens_per_s_per_sequence)),
                                      esc(format_count(s.tokens_per_s))));
  out += kv_row("request", esc(format_duration(s.request_latency_s)) + " end to end");
  out += kv_row("KV cache", fmt::format("{} per token, {} for the batch at full context",
                                        esc(format_bytes(s.kv_bytes_per_token)),
                                        esc(format_bytes(s.kv_bytes))));
  out += kv_row(
      "serving memory",
      fmt::format("{} of {}: {} (weights + KV cache + prefill activations)",
                  esc(format_bytes(s.memory_bytes)), esc(format_bytes(in.device->memory_bytes)),
                  s.fits ? "<span class=\"fits\">fits</span>"
                         : "<span class=\"nofit\">does not fit</span>"));
  return out;
}

std::string summary_section(const ReportInput& in) {
  const Graph& g = in.graph;
  const GraphTotals& t = in.totals;
  const Device& d = *in.device;
  const Estimate& e = *in.estimate;
  const Precision precision = in.workload.precision;
  const bool training = in.workload.mode == Mode::kTraining;
  std::string out = "<h2>Summary</h2>\n<table class=\"kv\">\n";
  out += kv_row("model", esc(g.name));
  out += kv_row("parameters", fmt::format("{} ({}){}", format_grouped(t.params),
                                          esc(format_count(static_cast<double>(t.params))),
                                          esc(active_params_text(t.params, t.active_params))));
  out += kv_row("MACs per sample",
                fmt::format("{} forward ({})", esc(format_count(per_sample(t.macs, g.batch))),
                            format_grouped(t.macs / g.batch)));
  out += kv_row("FLOPs per sample",
                fmt::format("{} forward = 2 &#215; MACs + {} other (1 MAC = 2 FLOPs)",
                            esc(format_count(per_sample(t.flops, g.batch))),
                            esc(format_count(per_sample(t.other_flops, g.batch)))));
  if (training) {
    out += kv_row("backward FLOPs",
                  esc(format_count(per_sample(t.backward_flops, g.batch))) + " per sample");
  }
  out += kv_row("device", fmt::format("{} ({})", esc(d.name), esc(d.id)));
  out += kv_row("precision", esc(precision_name(precision)));
  out += kv_row("batch", fmt::format("{}", g.batch));
  if (in.request != nullptr) {
    out += kv_row("context", fmt::format("prompt {} + {} generated tokens",
                                         format_grouped(in.request->prompt_tokens),
                                         format_grouped(in.request->output_tokens)));
  } else if (const std::optional<std::int64_t> seq = sequence_length(g)) {
    out += kv_row("context", fmt::format("seq {}", format_grouped(*seq)));
  }
  std::string mode(mode_name(in.workload.mode));
  if (training) mode += fmt::format(" ({} optimizer)", optimizer_name(in.workload.optimizer));
  if (in.workload.devices > 1) mode += ", " + counted(in.workload.devices, "device");
  mode += parallelism_text(in.workload);
  out += kv_row("mode", esc(mode));
  out += kv_row("profile", esc(profile_name(e.profile)));
  const std::int64_t micro = in.workload.micro_batches;
  out += kv_row(training ? "step time" : "latency",
                fmt::format("{} per {} of {}{}", esc(format_duration(e.latency_s)),
                            training ? "step" : "batch", g.batch,
                            micro > 1 ? fmt::format(" x {} micro-batches", micro) : ""));
  if (in.workload.pipeline_parallel > 1) {
    out += kv_row(
        "pipeline",
        fmt::format("{} stages, {}: {} of bubble ({} of the step)", in.workload.pipeline_parallel,
                    in.workload.virtual_stages > 1 ? fmt::format("{} chunks each, interleaved 1F1B",
                                                                 in.workload.virtual_stages)
                                                   : std::string("1F1B"),
                    esc(format_duration(e.pipeline_bubble_s)),
                    esc(percent(e.pipeline_bubble_s / e.latency_s))));
    if (stages_uneven(e)) {
      out += kv_row("", esc(stage_imbalance_summary(e, in.workload.pipeline_parallel)));
    }
    out += kv_row("stage sends", esc(stage_sends_summary(e)));
  }
  if (in.workload.tensor_parallel > 1) out += kv_row("all-reduce", esc(allreduce_summary(e)));
  if (in.workload.expert_parallel > 1) {
    out += kv_row(expert_exchange_label(e), esc(expert_exchange_summary(e)));
  }
  if (training && data_parallel_shards(in.workload) > 1) {
    out += kv_row("grad sync", esc(grad_sync_summary(e, in.workload.zero_stage)));
  }
  // Products off the tensor cores' granularity, as the text report names them.
  const std::vector<MisalignedLayer> misaligned =
      misaligned_matrix_layers(g, d, precision, in.workload.runtime);
  for (std::size_t k = 0; k < std::min<std::size_t>(misaligned.size(), 3); ++k) {
    out +=
        kv_row(k == 0 ? "alignment" : "",
               esc(alignment_summary(misaligned[k], precision)) +
                   (k == 0 ? esc(fmt::format(" (slower kernels, {})", alignment_timing(in.params)))
                           : std::string()));
  }
  if (const std::optional<std::int64_t> seq = sequence_length(g)) {
    out += kv_row("throughput",
                  fmt::format("{} tokens/s ({} sequences/s of {} tokens{})",
                              esc(format_count(e.throughput_per_s * static_cast<double>(*seq))),
                              esc(format_count(e.throughput_per_s)), format_grouped(*seq),
                              in.serving != nullptr ? ", the prefill" : ""));
  } else {
    out += kv_row("throughput", esc(format_count(e.throughput_per_s)) + " samples/s");
  }
  if (in.serving != nullptr) out += serving_rows(in);
  const PeakRate& peak = d.peak(precision);
  const double top = std::max(peak.matrix_flops_per_s, peak.vector_flops_per_s);
  out += kv_row("achieved", fmt::format("{} ({} of the {} dense peak)",
                                        esc(format_rate(e.achieved_flops_per_s, "FLOP/s")),
                                        esc(percent(e.achieved_flops_per_s / top)),
                                        esc(precision_name(precision))));
  const BoundShares shares = bound_shares(e);
  std::vector<std::string> parts;
  Bound dominant = Bound::kCompute;
  for (Bound b : {Bound::kCompute, Bound::kMemory, Bound::kHost, Bound::kFused}) {
    const auto i = static_cast<std::size_t>(b);
    if (shares.layers[i] == 0) continue;
    if (shares.time_s[i] > shares.time_s[static_cast<std::size_t>(dominant)]) dominant = b;
    parts.push_back(fmt::format("{} {} of the time ({})", bound_span(b),
                                esc(percent(shares.time_s[i] * e.layer_repeats / e.latency_s)),
                                counted(static_cast<std::int64_t>(shares.layers[i]), "layer")));
  }
  if (e.input_wait_s > 0) {
    parts.push_back(fmt::format("{} {} of the time (waiting for samples)",
                                bound_span(Bound::kInput),
                                esc(percent(e.input_wait_s / e.latency_s))));
  }
  out += kv_row("bound",
                fmt::format("mostly {}-bound: {}", bound_span(dominant), fmt::join(parts, "; ")));
  out += kv_row("memory", fmt::format("{} of {}: {}", esc(format_bytes(e.memory.total_bytes)),
                                      esc(format_bytes(d.memory_bytes)),
                                      e.fits ? "<span class=\"fits\">fits</span>"
                                             : "<span class=\"nofit\">does not fit</span>"));
  out += "</table>\n";
  return out;
}

std::string roofline_section(const ReportInput& in, std::size_t labels) {
  const Roofline r =
      in.serving != nullptr && in.decode_graph != nullptr
          ? build_serving_roofline(in.graph, *in.decode_graph, *in.device, *in.params, in.workload,
                                   *in.request, *in.serving)
          : build_roofline(in.graph, *in.device, *in.params, in.workload, *in.estimate);
  RooflineSvgOptions options;
  options.labels = labels;
  options.standalone = false;
  std::string out = "<h2>Roofline</h2>\n<figure>\n";
  out += render_roofline_svg(r, options);
  out += fmt::format(
      "<figcaption>Each layer at its arithmetic intensity (FLOPs per byte moved) and attained "
      "rate (FLOPs per predicted time). The solid slope is the peak bandwidth ({}), the dashed "
      "one the achievable bandwidth ({}); horizontal lines are the dense peaks of each precision, "
      "the {} roof highlighted. The ridge is at {:.3g} FLOP/byte: layers left of it are "
      "memory-bound.{}</figcaption>\n</figure>\n",
      esc(format_rate(r.bandwidth_bytes_per_s, "B/s")),
      esc(format_rate(r.achievable_bandwidth_bytes_per_s, "B/s")), esc(precision_name(r.precision)),
      r.ridge_flops_per_byte(),
      r.serving ? " Serving: the prefill's layers are circles, the decode step's squares, and the "
                  "two rings are each pass whole."
                : "");
  return out;
}

std::string memory_section(const ReportInput& in) {
  const MemoryEstimate& m = in.estimate->memory;
  const Device& d = *in.device;
  const bool training = in.workload.mode == Mode::kTraining;
  std::string out =
      "<h2>Memory</h2>\n<table>\n<tr><th>part</th><th class=\"num\">bytes</th>"
      "<th class=\"num\">of device memory</th></tr>\n";
  const auto row = [&](std::string_view name, double bytes, const char* css) {
    return fmt::format("<tr{}><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                       css, esc(name), esc(format_bytes(bytes)),
                       esc(percent(bytes / d.memory_bytes)));
  };
  out +=
      row(fmt::format("weights ({})",
                      precision_name(in.workload.weight_precision.value_or(in.workload.precision))),
          m.weight_bytes, "");
  if (training) {
    out += row("gradients", m.gradient_bytes, "");
    out += row(fmt::format("optimizer state ({})", optimizer_name(in.workload.optimizer)),
               m.optimizer_bytes, "");
    out += row(in.workload.checkpointing ? "activations (checkpoints)"
                                         : "activations (saved for backward)",
               m.activation_bytes, "");
  } else {
    out += row("activations (peak live)", m.activation_bytes, "");
  }
  out += row("total", m.total_bytes, " class=\"total\"");
  out += "</table>\n";
  out += fmt::format("<p>Device memory {}: {}.", esc(format_bytes(d.memory_bytes)),
                     in.estimate->fits ? "<span class=\"fits\">fits</span>"
                                       : "<span class=\"nofit\">does not fit</span>");
  if (in.estimate->max_batch > 0) {
    out +=
        fmt::format(" The largest batch that fits is {}.", format_grouped(in.estimate->max_batch));
  } else if (in.estimate->max_batch == 0) {
    out += " The weights and state alone do not fit.";
  }
  out += "</p>\n";
  return out;
}

std::string layers_section(const ReportInput& in) {
  const Graph& g = in.graph;
  const Estimate& e = *in.estimate;
  double max_share = 0;
  for (const LayerEstimate& le : e.layers)
    max_share = std::max(max_share, le.time_s * e.layer_repeats / e.latency_s);
  std::string out = fmt::format(
      "<h2>Layers</h2>\n<p>{} in graph order; time is per step of the batch "
      "(forward{}).</p>\n<table>\n<tr><th class=\"num\">#</th><th>layer</th><th>op</th><th>output "
      "shape</th><th class=\"num\">params</th><th class=\"num\">MACs</th><th "
      "class=\"num\">time</th><th>bound</th><th>share of time</th></tr>\n",
      counted(static_cast<std::int64_t>(g.layers.size()), "layer"),
      in.workload.mode == Mode::kTraining ? " and backward"
      : in.serving != nullptr             ? " of the prefill"
                                          : "");
  for (std::size_t i = 0; i < g.layers.size(); ++i) {
    const Layer& layer = g.layers[i];
    const LayerEstimate& le = e.layers[i];
    const double share = e.latency_s > 0 ? le.time_s * e.layer_repeats / e.latency_s : 0;
    const double bar = max_share > 0 ? 100 * share / max_share : 0;
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td "
        "class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td>"
        "<td class=\"num\"><span class=\"bar\" style=\"width:{:.1f}px\"></span>{}</td></tr>\n",
        i, esc(layer.name), esc(layer.op), esc(shape_to_string(layer.output)),
        layer.counts.params > 0 ? esc(format_count(static_cast<double>(layer.counts.params))) : "-",
        layer.counts.macs > 0 ? esc(format_count(static_cast<double>(layer.counts.macs))) : "-",
        layer.view ? "-" : esc(format_duration(le.time_s)), bound_span(le.bound), bar * 0.8,
        layer.view ? "-" : esc(percent(share)));
  }
  out += "</table>\n";
  return out;
}

std::string device_section(const ReportInput& in) {
  const Device& d = *in.device;
  const PerformanceParams& p = *in.params;
  std::string out =
      "<h2>Device</h2>\n<table>\n<tr><th>precision</th><th class=\"num\">matrix (dense)</th>"
      "<th class=\"num\">vector (dense)</th></tr>\n";
  for (Precision precision : d.precisions()) {
    const PeakRate& peak = d.peak(precision);
    const auto rate = [](double r) { return r > 0 ? esc(format_rate(r, "FLOP/s")) : "-"; };
    out += fmt::format("<tr{}><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                       precision == in.workload.precision ? " class=\"total\"" : "",
                       esc(precision_name(precision)), rate(peak.matrix_flops_per_s),
                       rate(peak.vector_flops_per_s));
  }
  out += "</table>\n<table class=\"kv\">\n";
  out += kv_row("memory", fmt::format("{} at {}", esc(format_bytes(d.memory_bytes)),
                                      esc(format_rate(d.memory_bandwidth_bytes_per_s, "B/s"))));
  out += kv_row("performance model",
                fmt::format("matrix {:.0f} %, vector {:.0f} %, memory {:.0f} % of peak; {} per "
                            "kernel ({} profile)",
                            100 * p.matrix_efficiency, 100 * p.vector_efficiency,
                            100 * p.memory_efficiency, esc(format_duration(in.estimate->floor_s)),
                            esc(profile_name(in.estimate->profile))));
  for (const std::string& line : estimate_lines(d, in.workload.precision))
    out += kv_row("ESTIMATE", esc(line));
  if (!d.notes.empty()) out += kv_row("notes", esc(d.notes));
  out += "</table>\n";
  if (!d.sources.empty()) {
    // Plain text: the page must not fetch or link anything.
    out += "<p>Sources of the figures:</p>\n<ul class=\"sources\">\n";
    for (const std::string& source : d.sources)
      out += fmt::format("<li>{}</li>\n", esc(source));
    out += "</ul>\n";
  }
  if (!d.corroboration.empty()) {
    out +=
        "<p>Corroboration (secondary copies that agree; not sources):</p>\n"
        "<ul class=\"sources\">\n";
    for (const std::string& copy : d.corroboration)
      out += fmt::format("<li>{}</li>\n", esc(copy));
    out += "</ul>\n";
  }
  return out;
}

}  // namespace

std::string render_report_html(const ReportInput& in, std::size_t roofline_labels) {
  const std::string title = fmt::format("{} on {}", in.graph.name, in.device->name);
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += fmt::format("<title>capcalc: {}</title>\n", esc(title));
  out += fmt::format("<style>{}</style>\n</head>\n<body>\n", kStyle);
  out += fmt::format("<h1>{}</h1>\n", esc(title));
  out += fmt::format(
      "<p class=\"sub\">{}, {}, batch {}{}, {} profile: predicted by capcalc</p>\n",
      esc(mode_name(in.workload.mode)),
      esc(precision_text(in.workload.precision, in.workload.fp8_recipe)), in.graph.batch,
      in.request != nullptr ? fmt::format(", serving {} prompt + {} generated tokens",
                                          format_grouped(in.request->prompt_tokens),
                                          format_grouped(in.request->output_tokens))
                            : std::string(),
      esc(profile_name(in.estimate->profile)));
  out += summary_section(in);
  out += roofline_section(in, roofline_labels);
  out += memory_section(in);
  out += layers_section(in);
  out += device_section(in);
  out +=
      "<footer>Generated by capcalc. Each layer's time is max(compute, memory, per-kernel floor) "
      "on this device; <code>capcalc estimate --explain</code> shows the formulas.</footer>\n";
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace capcalc
