// Rendering serving simulations: the table, JSON (data/schema/serve-output.schema.json), CSV and
// the latency-vs-rate curve as SVG.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/serve.hpp"
#include "capcalc/units.hpp"

#include "markup.hpp"
#include "report_json.hpp"
#include "table.hpp"

namespace capcalc {
namespace {

std::string per_s(double value, const std::string& unit) {
  return format_rate(value, unit);
}

std::string slo_name(const SloLimit& limit) {
  return limit.metric + "_" + limit.statistic;
}

nlohmann::ordered_json latency_json(const Latency& l) {
  nlohmann::ordered_json j;
  j["mean_s"] = l.mean;
  j["p50_s"] = l.p50;
  j["p90_s"] = l.p90;
  j["p99_s"] = l.p99;
  j["max_s"] = l.max;
  j["samples"] = l.samples;
  return j;
}

nlohmann::ordered_json result_json(const ServeResult& r) {
  nlohmann::ordered_json j;
  j["scheduler"] = r.llm ? "continuous" : "dynamic";
  j["replicas"] = r.replicas;
  j["attention_ranks"] = r.attention_ranks;
  j["requests"] = r.requests;
  j["offered_rate_per_s"] = std::isfinite(r.offered_rate_per_s) ? r.offered_rate_per_s : 0.0;
  j["duration_s"] = r.duration_s;
  j["saturated"] = r.saturated;
  j["sustained_rate_per_s"] = r.sustained_rate_per_s;
  j["arrival_span_latencies"] = r.arrival_span_latencies;
  j["throughput"] = {{"requests_per_s", r.requests_per_s},
                     {"input_tokens_per_s", r.input_tokens_per_s},
                     {"output_tokens_per_s", r.output_tokens_per_s}};
  nlohmann::ordered_json latency;
  latency["ttft"] = latency_json(r.ttft);
  latency["tpot"] = latency_json(r.tpot);
  latency["itl"] = latency_json(r.itl);
  latency["e2e"] = latency_json(r.e2e);
  latency["queue"] = latency_json(r.queue);
  j["latency"] = latency;
  j["batch"] = {{"mean", r.mean_batch}, {"max", r.max_batch}, {"steps", r.steps}};
  j["kv_cache"] = {{"blocks", r.kv_blocks},
                   {"mean_occupancy", r.mean_kv_occupancy},
                   {"peak_occupancy", r.peak_kv_occupancy},
                   {"preemptions", r.preemptions}};
  j["busy_fraction"] = r.busy_fraction;
  if (r.prefill_replicas > 0) {
    j["disaggregation"] = {{"prefill_replicas", r.prefill_replicas},
                           {"decode_replicas", r.decode_replicas},
                           {"prefill_busy_fraction", r.prefill_busy_fraction},
                           {"decode_busy_fraction", r.decode_busy_fraction},
                           {"kv_link", r.kv_link},
                           {"kv_transfer", latency_json(r.kv_transfer)}};
  }
  j["mean_in_system"] = r.mean_in_system;
  j["littles_law_ratio"] = r.littles_law_ratio;
  nlohmann::ordered_json slo = nlohmann::ordered_json::array();
  for (const SloLimit& limit : r.slo) {
    slo.push_back({{"name", slo_name(limit)},
                   {"limit_s", limit.limit_s},
                   {"value_s", slo_value(r, limit)},
                   {"met", slo_value(r, limit) <= limit.limit_s}});
  }
  j["slo"] = {{"limits", slo}, {"met", r.slo_met}, {"goodput_per_s", r.goodput_per_s}};
  nlohmann::ordered_json cost;
  cost["usd_per_hour"] = r.usd_per_hour;
  cost["usd_per_million_output_tokens"] = r.usd_per_million_output_tokens;
  j["cost"] = cost;
  return j;
}

std::string ms(double seconds) {
  return format_duration(seconds);
}

// The table's title lines as one line for JSON.
std::string one_line(std::string title) {
  for (std::size_t at = title.find("\n  "); at != std::string::npos; at = title.find("\n  ")) {
    title.replace(at, 3, "; ");
  }
  return title;
}

}  // namespace

std::string render_serve_text(const ServeResult& r, const std::string& title) {
  std::string out = title + "\n";
  const std::string saturated =
      r.saturated ? "  (saturated: below the offered rate; the queue keeps growing, so latencies "
                    "depend on --requests)"
                  : "";
  out += fmt::format("  served       {} request{} in {} over {} replica{}\n",
                     format_grouped(r.requests), r.requests == 1 ? "" : "s", ms(r.duration_s),
                     r.replicas, r.replicas == 1 ? "" : "s");
  out += fmt::format("  throughput   {}", per_s(r.requests_per_s, "req/s"));
  if (r.llm) {
    out += fmt::format(", {} in, {} out", per_s(r.input_tokens_per_s, "tok/s"),
                       per_s(r.output_tokens_per_s, "tok/s"));
  }
  out += saturated + "\n";
  // The condition the run misses: its span in latencies, else its count of requests.
  if (r.short_run() && r.requests > 1) {
    const std::string why =
        r.arrival_span_latencies < kSteadySpanLatencies
            ? fmt::format("the arrivals span {:.2g} mean E2E latencies, under the {:g}",
                          r.arrival_span_latencies, kSteadySpanLatencies)
            : fmt::format("{} requests, under the {}", format_grouped(r.requests),
                          format_grouped(kSteadyRequests));
    out += fmt::format(
        "  short run    {} that tell a steady state from a growing queue: try --requests {}\n", why,
        format_grouped(steady_run_requests(r)));
  }
  out += "\n";
  TextTable table;
  table.add_column("latency", TextTable::Align::kLeft);
  for (const char* h : {"mean", "P50", "P90", "P99", "max"})
    table.add_column(h, TextTable::Align::kRight);
  const auto row = [&](const std::string& name, const Latency& l) {
    if (l.samples == 0) return;
    table.add_row({name, ms(l.mean), ms(l.p50), ms(l.p90), ms(l.p99), ms(l.max)});
  };
  row(r.llm ? "TTFT" : "latency", r.ttft);
  if (r.llm) {
    row("TPOT", r.tpot);
    row("ITL", r.itl);
    row("E2E", r.e2e);
  }
  row("queueing", r.queue);
  out += table.render("  ");
  out += r.llm ? "  TTFT: arrival to first token; TPOT: per output token after the first; ITL: "
                 "every gap between tokens\n\n"
               : "\n";
  const bool ranks = r.attention_ranks > 1;
  out +=
      fmt::format("  batch        {:.1f} {} mean (time-weighted), {} max, {} steps\n", r.mean_batch,
                  !r.llm  ? "requests per batch"
                  : ranks ? "sequences per rank's step"
                          : "sequences per step",
                  r.max_batch, format_grouped(r.steps));
  if (r.llm) {
    out += fmt::format(
        "  KV cache     {:.0f} % of {}{} blocks mean, {:.0f} % peak; {} preemption{}\n",
        r.mean_kv_occupancy * 100, ranks ? "each rank's " : "", format_grouped(r.kv_blocks),
        r.peak_kv_occupancy * 100, format_grouped(r.preemptions), r.preemptions == 1 ? "" : "s");
  }
  out += fmt::format(
      "  busy         {:.0f} % of the time; {:.2f} requests in the system on "
      "average (Little: {:.3f} x throughput x mean E2E)\n",
      r.busy_fraction * 100, r.mean_in_system, r.littles_law_ratio);
  if (r.prefill_replicas > 0) {
    out += fmt::format(
        "  pools        {} prefill + {} decode replicas, busy {:.0f} % and {:.0f} %; KV transfer "
        "over {}: mean {}, P99 {}\n",
        r.prefill_replicas, r.decode_replicas, r.prefill_busy_fraction * 100,
        r.decode_busy_fraction * 100, r.kv_link, ms(r.kv_transfer.mean), ms(r.kv_transfer.p99));
  }
  if (!r.slo.empty()) {
    std::vector<std::string> parts;
    for (const SloLimit& limit : r.slo) {
      const double value = slo_value(r, limit);
      parts.push_back(fmt::format("{} {} {} {}", slo_name(limit), ms(value),
                                  value <= limit.limit_s ? "<=" : ">", ms(limit.limit_s)));
    }
    out += fmt::format("  SLO          {}: {}; goodput {}\n", r.slo_met ? "met" : "MISSED",
                       fmt::join(parts, ", "), per_s(r.goodput_per_s, "req/s"));
  }
  if (r.usd_per_hour > 0) {
    out += fmt::format("  cost         {}/h", format_usd(r.usd_per_hour));
    if (r.usd_per_million_output_tokens > 0) {
      out += fmt::format(", {} per million output tokens",
                         format_usd(r.usd_per_million_output_tokens));
    } else if (r.requests_per_s > 0) {
      out += fmt::format(", {} per million requests",
                         format_usd(r.usd_per_hour / (r.requests_per_s * 3600) * 1e6));
    }
    out += " (the table's indicative price)\n";
  }
  return out;
}

std::string render_serve_json(const ServeResult& r, const std::string& title) {
  nlohmann::ordered_json doc;
  doc["schema_version"] = 1;
  doc["title"] = one_line(title);
  doc["result"] = result_json(r);
  return json_text(doc);
}

std::string render_split_text(const SplitSearch& search) {
  TextTable table;
  table.add_column("prefill:decode", TextTable::Align::kLeft);
  table.add_column("max rate", TextTable::Align::kRight);
  table.add_column("TTFT P99", TextTable::Align::kRight);
  table.add_column("TPOT P99", TextTable::Align::kRight);
  table.add_column("requests a run", TextTable::Align::kRight);
  for (std::size_t i = 0; i < search.splits.size(); ++i) {
    const SplitSearch::Split& split = search.splits[i];
    const ServeResult& r = split.search.at_rate;
    const std::string name = split.prefill == 0
                                 ? fmt::format("colocated x{}", r.replicas)
                                 : fmt::format("{}:{}{}", split.prefill, split.decode,
                                               i == search.best ? " (best)" : "");
    table.add_row({name, per_s(split.search.rate_per_s, "req/s"), ms(r.ttft.p99), ms(r.tpot.p99),
                   format_grouped(split.search.requests)});
  }
  const SplitSearch::Split& best = search.splits[search.best];
  const double colocated = search.splits.front().search.rate_per_s;
  std::string out = fmt::format(
      "  split        {}:{} meets the SLO up to {}{} ({} runs)\n", best.prefill, best.decode,
      per_s(best.search.rate_per_s, "req/s"),
      colocated > 0 ? fmt::format(", {:.2f}x the colocated replicas' {}",
                                  best.search.rate_per_s / colocated, per_s(colocated, "req/s"))
                    : std::string(", where colocated replicas meet it at no rate"),
      search.runs);
  out += table.render("  ") + "\n";
  return out;
}

std::string render_split_json(const SplitSearch& search, const std::string& title) {
  nlohmann::ordered_json doc;
  doc["schema_version"] = 1;
  doc["title"] = one_line(title);
  doc["result"] = result_json(search.splits[search.best].search.at_rate);
  nlohmann::ordered_json splits = nlohmann::ordered_json::array();
  for (const SplitSearch::Split& split : search.splits) {
    splits.push_back({{"prefill_replicas", split.prefill},
                      {"decode_replicas", split.decode},
                      {"max_rate_per_s", split.search.rate_per_s},
                      {"result", result_json(split.search.at_rate)}});
  }
  doc["splits"] = splits;
  return json_text(doc);
}

std::string render_sweep_json(const std::vector<ServeResult>& results, const std::string& title) {
  nlohmann::ordered_json doc;
  doc["schema_version"] = 1;
  doc["title"] = one_line(title);
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const ServeResult& r : results)
    runs.push_back(result_json(r));
  doc["sweep"] = runs;
  return json_text(doc);
}

std::string render_serve_csv(const std::vector<ServeResult>& results) {
  std::string out =
      "offered_rate_per_s,replicas,requests,requests_per_s,input_tokens_per_s,"
      "output_tokens_per_s,ttft_mean_s,ttft_p50_s,ttft_p90_s,ttft_p99_s,tpot_mean_s,tpot_p50_s,"
      "tpot_p90_s,tpot_p99_s,itl_p50_s,itl_p99_s,e2e_mean_s,e2e_p50_s,e2e_p90_s,e2e_p99_s,"
      "queue_mean_s,queue_p99_s,mean_batch,mean_kv_occupancy,preemptions,slo_met,goodput_per_s,"
      "usd_per_million_output_tokens,saturated,prefill_replicas,decode_replicas\n";
  for (const ServeResult& r : results) {
    // Integers exactly, fractions in their shortest round-trip form (csv_number).
    std::vector<std::string> cells = {
        csv_number(std::isfinite(r.offered_rate_per_s) ? r.offered_rate_per_s : 0.0),
        std::to_string(r.replicas), std::to_string(r.requests)};
    for (double v : {r.requests_per_s,
                     r.input_tokens_per_s,
                     r.output_tokens_per_s,
                     r.ttft.mean,
                     r.ttft.p50,
                     r.ttft.p90,
                     r.ttft.p99,
                     r.tpot.mean,
                     r.tpot.p50,
                     r.tpot.p90,
                     r.tpot.p99,
                     r.itl.p50,
                     r.itl.p99,
                     r.e2e.mean,
                     r.e2e.p50,
                     r.e2e.p90,
                     r.e2e.p99,
                     r.queue.mean,
                     r.queue.p99,
                     r.mean_batch,
                     r.mean_kv_occupancy}) {
      cells.push_back(csv_number(v));
    }
    cells.insert(
        cells.end(),
        {std::to_string(r.preemptions), r.slo_met ? "true" : "false", csv_number(r.goodput_per_s),
         csv_number(r.usd_per_million_output_tokens), r.saturated ? "true" : "false",
         std::to_string(r.prefill_replicas), std::to_string(r.decode_replicas)});
    out += fmt::format("{}\n", fmt::join(cells, ","));
  }
  return out;
}

std::string render_sweep_text(const std::vector<ServeResult>& results, const std::string& title) {
  std::string out = title + "\n";
  TextTable table;
  const bool llm = !results.empty() && results.front().llm;
  for (const char* h : {"offered", "served"})
    table.add_column(h, TextTable::Align::kRight);
  std::vector<const char*> columns = {"TTFT P50", "TTFT P99"};
  if (llm) columns = {"TTFT P50", "TTFT P99", "TPOT P50", "TPOT P99", "out tok/s"};
  for (const char* h : columns)
    table.add_column(h, TextTable::Align::kRight);
  table.add_column("E2E P99", TextTable::Align::kRight);
  table.add_column("batch", TextTable::Align::kRight);
  const bool slo = !results.empty() && !results.front().slo.empty();
  if (slo) table.add_column("SLO", TextTable::Align::kLeft);
  for (const ServeResult& r : results) {
    std::vector<std::string> cells = {fmt::format("{:.3g}/s", r.offered_rate_per_s),
                                      fmt::format("{:.3g}/s", r.requests_per_s), ms(r.ttft.p50),
                                      ms(r.ttft.p99)};
    if (llm) {
      cells.push_back(ms(r.tpot.p50));
      cells.push_back(ms(r.tpot.p99));
      cells.push_back(format_count(r.output_tokens_per_s));
    }
    cells.push_back(ms(r.e2e.p99));
    cells.push_back(fmt::format("{:.1f}", r.mean_batch));
    if (slo) cells.push_back(r.slo_met ? "met" : "missed");
    table.add_row(cells);
  }
  out += table.render("  ");
  if (llm) out += "  TPOT excludes the first token; latencies are over all requests of each run\n";
  return out;
}

namespace {

// The sweep plot's frame: log-scaled latency (y) against the offered rate (x, linear).
struct SweepPlot {
  double width = 720;
  double height = 440;
  double left = 70;
  double right = 160;
  double top = 40;
  double bottom = 50;
  double x_max = 1;
  double lo = -3;  // log10 of the y axis' ends.
  double hi = 0;

  double px(double x) const { return left + x / x_max * (width - left - right); }
  double py(double y) const {
    return top + (hi - std::log10(y)) / (hi - lo) * (height - top - bottom);
  }
};

// The axes' ranges: every latency drawn and every SLO limit.
SweepPlot sweep_plot(const std::vector<ServeResult>& results, const std::vector<SloLimit>& slo,
                     bool llm) {
  double x_max = 0;
  double y_min = std::numeric_limits<double>::infinity();
  double y_max = 0;
  const auto consider = [&](double v) {
    if (v > 0) {
      y_min = std::min(y_min, v);
      y_max = std::max(y_max, v);
    }
  };
  for (const ServeResult& r : results) {
    x_max = std::max(x_max, r.offered_rate_per_s);
    consider(r.ttft.p50);
    consider(r.ttft.p99);
    if (llm) {
      consider(r.tpot.p50);
      consider(r.tpot.p99);
    }
  }
  for (const SloLimit& limit : slo)
    consider(limit.limit_s);
  if (!(y_max > 0) || !(x_max > 0)) {
    y_min = 1e-3;
    y_max = 1;
    x_max = 1;
  }
  SweepPlot p;
  p.x_max = x_max;
  p.lo = std::floor(std::log10(y_min));
  p.hi = std::max(p.lo + 1, std::ceil(std::log10(y_max)));
  return p;
}

// The opening tag, the title, the axes and their ticks.
std::string sweep_axes(const SweepPlot& p, const std::string& title) {
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{2}\" y=\"22\" font-size=\"14\">{3}</text>\n",
      p.width, p.height, p.left, escape_markup(title));
  svg += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n<line x1=\"{0}\" "
      "y1=\"{3}\" x2=\"{0}\" y2=\"{1}\" stroke=\"black\"/>\n",
      p.left, p.height - p.bottom, p.width - p.right, p.top);
  for (double e = p.lo; e <= p.hi; ++e) {
    const double y = p.py(std::pow(10.0, e));
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>\n<text "
        "x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        p.left, y, p.width - p.right, p.left - 6, y + 4,
        escape_markup(format_duration(std::pow(10.0, e))));
  }
  for (int i = 0; i <= 4; ++i) {
    const double x = p.x_max * i / 4;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.3g}</text>\n",
                       p.px(x), p.height - p.bottom + 18, x);
  }
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">offered rate "
      "(requests/s)</text>\n",
      (p.left + p.width - p.right) / 2, p.height - 10);
  return svg;
}

// One line per latency statistic, with its legend entry.
std::string sweep_series(const SweepPlot& p, const std::vector<ServeResult>& results, bool llm) {
  std::string svg;
  struct Series {
    std::string name;
    std::string color;
    std::string dash;
    double (*value)(const ServeResult&);
  };
  std::vector<Series> series = {
      {"TTFT P50", "#1f77b4", "", [](const ServeResult& r) { return r.ttft.p50; }},
      {"TTFT P99", "#1f77b4", "6 3", [](const ServeResult& r) { return r.ttft.p99; }}};
  if (llm) {
    series.push_back({"TPOT P50", "#d62728", "", [](const ServeResult& r) { return r.tpot.p50; }});
    series.push_back(
        {"TPOT P99", "#d62728", "6 3", [](const ServeResult& r) { return r.tpot.p99; }});
  }
  double legend_y = p.top + 10;
  for (const Series& s : series) {
    std::string points;
    for (const ServeResult& r : results) {
      if (s.value(r) > 0) {
        points += fmt::format("{:.1f},{:.1f} ", p.px(r.offered_rate_per_s), p.py(s.value(r)));
      }
    }
    svg += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} points=\"{}\"/>\n", s.color,
        s.dash.empty() ? "" : fmt::format(" stroke-dasharray=\"{}\"", s.dash), points);
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" fill=\"{}\">{}</text>\n",
                       p.width - p.right + 10, legend_y, s.color, s.name);
    legend_y += 18;
  }
  return svg;
}

// The SLO limits, and the knee: the highest rate that still meets them.
std::string sweep_slo(const SweepPlot& p, const std::vector<ServeResult>& results,
                      const std::vector<SloLimit>& slo) {
  std::string svg;
  for (const SloLimit& limit : slo) {
    const double y = p.py(limit.limit_s);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#2ca02c\" "
        "stroke-dasharray=\"2 3\"/>\n<text x=\"{3}\" y=\"{4:.1f}\" fill=\"#2ca02c\">SLO "
        "{5}</text>\n",
        p.left, y, p.width - p.right, p.width - p.right + 10, y + 4,
        escape_markup(slo_name(limit)));
  }
  // The knee: the highest rate that still meets the SLO.
  const ServeResult* knee = nullptr;
  for (const ServeResult& r : results) {
    if (!slo.empty() && r.slo_met &&
        (knee == nullptr || r.offered_rate_per_s > knee->offered_rate_per_s)) {
      knee = &r;
    }
  }
  if (knee != nullptr) {
    const double x = p.px(knee->offered_rate_per_s);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#555\" "
        "stroke-dasharray=\"4 4\"/>\n<text x=\"{3:.1f}\" y=\"{4}\" fill=\"#555\">knee "
        "{5:.3g}/s</text>\n",
        x, p.top, p.height - p.bottom, x + 4, p.top + 12, knee->offered_rate_per_s);
  }
  return svg;
}

}  // namespace

std::string render_sweep_svg(const std::vector<ServeResult>& results, const std::string& title) {
  const bool llm = !results.empty() && results.front().llm;
  const std::vector<SloLimit> slo = results.empty() ? std::vector<SloLimit>{} : results[0].slo;
  const SweepPlot plot = sweep_plot(results, slo, llm);
  return sweep_axes(plot, title) + sweep_series(plot, results, llm) +
         sweep_slo(plot, results, slo) + "</svg>\n";
}

}  // namespace capcalc
