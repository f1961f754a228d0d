// Rendering of `capcalc validate`.
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/report.hpp"
#include "capcalc/units.hpp"

#include "report_json.hpp"
#include "report_words.hpp"
#include "table.hpp"

namespace capcalc {
namespace {

std::string format_value(Metric metric, double value) {
  switch (metric) {
    case Metric::kLatency:
    case Metric::kTtft:
    case Metric::kInterTokenLatency:
    case Metric::kRequestLatency:
      return format_duration(value);
    case Metric::kMfu:
      return fmt::format("{:.1f} %", 100 * value);
    case Metric::kGpuHours:
      return format_count(value) + " h";
    case Metric::kTflopsPerDevice:
      return fmt::format("{:.0f} TF/s", value);
    case Metric::kThroughput:
    case Metric::kTokensPerSecond:
    case Metric::kOutputTokensPerSecond:
      break;
  }
  return format_count(value) + "/s";
}

std::string_view short_metric(Metric metric) {
  switch (metric) {
    case Metric::kThroughput:
      return "samples/s";
    case Metric::kLatency:
      return "latency";
    case Metric::kTokensPerSecond:
      return "tokens/s";
    case Metric::kMfu:
      return "MFU";
    case Metric::kTflopsPerDevice:
      return "TFLOP/s";
    case Metric::kGpuHours:
      return "GPU-hours";
    case Metric::kTtft:
      return "TTFT";
    case Metric::kInterTokenLatency:
      return "ITL";
    case Metric::kRequestLatency:
      return "request";
    case Metric::kOutputTokensPerSecond:
      return "out tok/s";
  }
  return "?";
}

}  // namespace

std::string render_validation_text(const ValidationSummary& summary) {
  using Align = TextTable::Align;
  TextTable table;
  table.add_column("case", Align::kLeft);
  table.add_column("metric", Align::kLeft);
  table.add_column("measured", Align::kRight);
  table.add_column("predicted", Align::kRight);
  table.add_column("error", Align::kRight);
  for (const ValidationResult& r : summary.results) {
    const Measurement& m = *r.measurement;
    table.add_row({m.id, std::string(short_metric(m.metric)), format_value(m.metric, m.value),
                   format_value(m.metric, r.predicted),
                   fmt::format("{:+.0f} %", 100 * (r.ratio - 1))});
  }
  std::string out = table.render();
  out += fmt::format("{}: median |error| {:.1f} %, worst {:.2f}x, {} within 2x\n",
                     counted(static_cast<std::int64_t>(summary.results.size()), "case"),
                     100 * summary.median_abs_error, summary.worst_factor, summary.within_2x);
  if (summary.held_out > 0) {
    out += fmt::format("{} held out (never used to set a parameter): median |error| {:.1f} %\n",
                       summary.held_out, 100 * summary.held_out_median_abs_error);
  }
  return out;
}

std::string render_calibration_text(const CalibrationResult& result) {
  using Align = TextTable::Align;
  TextTable fits;
  fits.add_column("device", Align::kLeft);
  fits.add_column("records", Align::kRight);
  fits.add_column("speed", Align::kRight);
  fits.add_column("matrix", Align::kRight);
  fits.add_column("vector", Align::kRight);
  fits.add_column("memory", Align::kRight);
  fits.add_column("floor", Align::kRight);
  for (const CalibrationFit& f : result.fits) {
    fits.add_row({f.device_id, std::to_string(f.records), fmt::format("{:.3f}x", f.speed_factor),
                  fmt::format("{:.3f}", f.fitted.matrix_efficiency.value_or(0)),
                  fmt::format("{:.3f}", f.fitted.vector_efficiency.value_or(0)),
                  fmt::format("{:.3f}", f.fitted.memory_efficiency.value_or(0)),
                  fmt::format("{:.3f}x", f.floor_factor)});
  }
  TextTable records;
  records.add_column("record", Align::kLeft);
  records.add_column("measured", Align::kRight);
  records.add_column("before", Align::kRight);
  records.add_column("after", Align::kRight);
  for (std::size_t i = 0; i < result.before.results.size(); ++i) {
    const ValidationResult& b = result.before.results[i];
    const ValidationResult& a = result.after.results[i];
    const Measurement& m = *b.measurement;
    records.add_row({m.id, format_value(m.metric, m.value),
                     fmt::format("{:+.1f} %", 100 * (b.ratio - 1)),
                     fmt::format("{:+.1f} %", 100 * (a.ratio - 1))});
  }
  std::string out =
      "Fitted (speed: measured / predicted before the fit; efficiencies after;\n"
      "        floor: the per-kernel floors' own factor)\n";
  out += fits.render("  ");
  out += "\nRecords (error of the prediction, before and after)\n";
  out += records.render("  ");
  out += fmt::format(
      "fit error: median |error| {:.1f} % before, {:.1f} % after; worst {:.2f}x "
      "before, {:.2f}x after\n",
      100 * result.before.median_abs_error, 100 * result.after.median_abs_error,
      result.before.worst_factor, result.after.worst_factor);
  return out;
}

std::string render_validation_json(const ValidationSummary& summary) {
  nlohmann::ordered_json doc;
  doc["schema_version"] = kOutputSchemaVersion;
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  for (const ValidationResult& r : summary.results) {
    const Measurement& m = *r.measurement;
    nlohmann::ordered_json row;
    row["id"] = m.id;
    row["metric"] = std::string(metric_name(m.metric));
    row["measured"] = m.value;
    row["predicted"] = r.predicted;
    row["ratio"] = r.ratio;
    row["held_out"] = m.held_out;
    row["source"] = m.source;
    cases.push_back(row);
  }
  doc["cases"] = cases;
  doc["median_abs_error"] = summary.median_abs_error;
  doc["worst_factor"] = summary.worst_factor;
  doc["within_2x"] = summary.within_2x;
  doc["held_out"] = summary.held_out;
  doc["held_out_median_abs_error"] = summary.held_out_median_abs_error;
  return json_text(doc);
}

}  // namespace capcalc
