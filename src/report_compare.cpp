// Rendering of `capcalc compare` and `capcalc check`.
#include "capcalc/report_compare.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/report.hpp"
#include "capcalc/units.hpp"

#include "checked.hpp"
#include "markup.hpp"
#include "report_json.hpp"
#include "report_words.hpp"
#include "table.hpp"

namespace capcalc {
namespace {

using Json = nlohmann::ordered_json;
using Align = TextTable::Align;

std::string fits_text(const CompareRow& row) {
  if (row.fits) return "yes";
  if (!row.fit_flags.empty())
    return fmt::format("no ({} with {})", row.devices_to_fit, row.fit_flags);
  return fmt::format("no (at least {})", row.devices_to_fit);
}

std::string csv_number(const std::optional<double>& value) {
  return value ? capcalc::csv_number(*value) : "";
}

Json json_number(const std::optional<double>& value) {
  return value ? Json(*value) : Json(nullptr);
}

std::string time_header(const CompareTable& table) {
  if (table.serving) return "request";
  return table.mode == Mode::kTraining ? "step" : "latency";
}

std::string cost_header(const CompareTable& table) {
  switch (table.cost_basis) {
    case CostBasis::kPerRun:
      return "$/run";
    case CostBasis::kPerMillionTokens:
      return "$/1M tok";
    case CostBasis::kPerMillionSamples:
      break;
  }
  return "$/1M";
}

// The cells of one row, in column order; `columns` decides which optional ones appear.
struct Columns {
  bool batch = false;
  bool precision = false;
  bool run = false;
  bool device = true;    ///< Off in sweep text tables: the device heads its group of rows.
  bool serving = false;  ///< LLM serving: TTFT before the request time, tokens/s.
  /// A language model's pass (not serving): throughput in tokens/s, samples/s x this.
  std::int64_t tokens_per_sample = 0;
};

Columns columns_of(const CompareTable& table) {
  Columns c{table.batch_sweep, table.precision_sweep, table.cost_basis == CostBasis::kPerRun};
  c.serving = table.serving.has_value();
  if (!c.serving && table.seq) c.tokens_per_sample = *table.seq;
  return c;
}

std::vector<std::string> headers(const CompareTable& table, const Columns& c) {
  std::vector<std::string> h;
  if (c.device) h.emplace_back("device");
  if (c.batch) h.emplace_back("batch");
  if (c.precision) h.emplace_back("prec");
  if (c.serving) h.emplace_back("TTFT");
  h.push_back(time_header(table));
  h.emplace_back(c.serving || c.tokens_per_sample > 0 ? "tokens/s" : "samples/s");
  if (c.run) h.emplace_back("run");
  h.emplace_back("memory");
  if (c.device) h.emplace_back("of GB");
  h.insert(h.end(), {"fits", "bound", cost_header(table), "kWh"});
  return h;
}

std::vector<std::string> cells(const CompareRow& row, const Columns& c) {
  std::vector<std::string> out;
  if (c.device) out.push_back(row.device->id);
  if (c.batch) out.push_back(std::to_string(row.batch));
  if (c.precision) out.emplace_back(precision_name(row.precision));
  const std::string of = format_figure(row.device_memory_bytes / 1e9);
  if (!row.supported) {
    if (c.serving) out.emplace_back("-");
    out.insert(out.end(), {"-", "-"});
    if (c.run) out.emplace_back("-");
    out.emplace_back("-");
    if (c.device) out.push_back(of);
    out.insert(out.end(), {"-", "-", "-", "-"});
    return out;
  }
  if (c.serving) out.push_back(row.ttft_s ? format_duration(*row.ttft_s) : "-");
  out.push_back(format_duration(row.latency_s));
  out.push_back(format_count(c.tokens_per_sample > 0
                                 ? row.throughput_per_s * static_cast<double>(c.tokens_per_sample)
                                 : row.throughput_per_s));
  if (c.run) out.push_back(row.run_time_s ? format_duration(*row.run_time_s) : "-");
  out.push_back(format_bytes(row.memory_bytes));
  if (c.device) out.push_back(of);
  out.push_back(fits_text(row));
  out.emplace_back(bound_name(row.bound));
  out.push_back(row.cost_usd ? format_usd(*row.cost_usd) : "-");
  out.push_back(row.energy_kwh ? format_amount(*row.energy_kwh) : "-");  // kWh: the header has it.
  return out;
}

std::string title(const CompareTable& table) {
  std::string text = fmt::format(
      "{} ({} params{}), {}", table.model, format_count(static_cast<double>(table.params)),
      active_params_text(table.params, table.active_params), mode_name(table.mode));
  if (!table.rows.empty()) {
    const CompareRow& first = table.rows.front();
    if (!table.precision_sweep) {
      text += fmt::format(", {}", precision_text(first.precision, table.fp8_recipe));
    } else if (table.fp8_recipe != Fp8Recipe::kDelayed) {
      text += fmt::format(", fp8 rows {}", fp8_recipe_name(table.fp8_recipe));
    }
    if (!table.batch_sweep) text += fmt::format(", batch {}", first.batch);
  }
  if (table.seq && !table.serving) text += fmt::format(", seq {}", format_grouped(*table.seq));
  if (table.devices > 1) text += fmt::format(", {} of each", table.devices);
  Workload parallel;
  parallel.tensor_parallel = table.tensor_parallel;
  parallel.pipeline_parallel = table.pipeline_parallel;
  parallel.micro_batches = table.micro_batches;
  parallel.virtual_stages = table.virtual_stages;
  parallel.zero_stage = table.zero_stage;
  parallel.input_rate_per_s = table.input_rate_per_s;
  text += parallelism_text(parallel);
  if (!table.runtime.empty()) text += fmt::format(", {}", table.runtime);
  if (table.run_samples) {
    text += fmt::format(", run of {} samples", format_count(*table.run_samples));
  }
  if (table.serving) {
    text += fmt::format(", serving {} prompt + {} generated tokens a sequence",
                        format_grouped(table.serving->prompt_tokens),
                        format_grouped(table.serving->output_tokens));
  }
  std::map<std::string, bool> devices;
  for (const CompareRow& row : table.rows)
    devices[row.device->id] = true;
  text += ": " + counted(static_cast<std::int64_t>(devices.size()), "device");
  if (table.sort != CompareSort::kTable) {
    text += fmt::format(", by {}", compare_sort_name(table.sort));
  }
  return text + "\n";
}

Json row_json(const CompareRow& row, Mode mode) {
  Json j;
  j["device"] = row.device->id;
  j["device_name"] = row.device->name;
  j["type"] = std::string(device_type_name(row.device->type));
  j["batch"] = row.batch;
  j["precision"] = std::string(precision_name(row.precision));
  j["mode"] = std::string(mode_name(mode));
  j["supported"] = row.supported;
  j["note"] = row.note.empty() ? Json(nullptr) : Json(row.note);
  const auto known = [&](double value) { return row.supported ? Json(value) : Json(nullptr); };
  j["latency_s"] = known(row.latency_s);
  j["ttft_s"] = json_number(row.ttft_s);
  j["throughput_per_s"] = known(row.throughput_per_s);
  j["run_time_s"] = json_number(row.run_time_s);
  j["memory_bytes"] = known(row.memory_bytes);
  j["device_memory_bytes"] = row.device_memory_bytes;
  j["fits"] = row.supported ? Json(row.fits) : Json(nullptr);
  j["devices_to_fit"] = row.supported ? Json(row.devices_to_fit) : Json(nullptr);
  j["fit_flags"] = row.fit_flags.empty() ? Json(nullptr) : Json(row.fit_flags);
  j["bound"] = row.supported ? Json(std::string(bound_name(row.bound))) : Json(nullptr);
  j["price_per_device_hour_usd"] = json_number(row.price_per_device_hour_usd);
  j["cost_usd"] = json_number(row.cost_usd);
  j["energy_kwh"] = json_number(row.energy_kwh);
  return j;
}

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// "all 3 budgets hold", "1 budget holds", "1 of 2 budgets exceeded", "1 of 1 budget exceeded".
std::string check_summary(const CheckReport& report) {
  const auto checks = static_cast<std::int64_t>(report.results.size());
  const auto failures = static_cast<std::int64_t>(report.failures());
  if (failures == 0) {
    return checks == 1 ? "1 budget holds" : fmt::format("all {} hold", counted(checks, "budget"));
  }
  return fmt::format("{} of {} exceeded", format_grouped(failures), counted(checks, "budget"));
}

std::string check_line(const CheckResult& r) {
  return fmt::format("{} on {} ({}): {}", r.budget, r.device, r.workload, r.message);
}

}  // namespace

std::string render_compare_text(const CompareTable& table) {
  Columns c = columns_of(table);
  // A sweep repeats each device over its batches and precisions: the device and its memory
  // head the group instead of filling two columns of every row (80 columns).
  c.device = !(c.batch || c.precision);
  TextTable text;
  const std::vector<std::string> h = headers(table, c);
  for (std::size_t i = 0; i < h.size(); ++i) {
    const bool left = h[i] == "device" || h[i] == "prec" || h[i] == "fits" || h[i] == "bound";
    text.add_column(h[i], left ? Align::kLeft : Align::kRight);
  }
  std::vector<std::string> notes;
  bool any_misfit = false;
  const Device* group = nullptr;
  for (const CompareRow& row : table.rows) {
    if (!c.device && row.device != group) {
      group = row.device;
      text.add_section(
          fmt::format("{} ({} GB)", row.device->id, format_figure(row.device_memory_bytes / 1e9)));
    }
    text.add_row(cells(row, c));
    const std::string note = fmt::format("{}: {}", row.device->id, row.note);
    if (!row.supported && std::find(notes.begin(), notes.end(), note) == notes.end()) {
      notes.push_back(note);  // Once per device, not once per sweep row.
    }
    if (row.supported && !row.fits) any_misfit = true;
  }
  std::string footer = c.device ? "memory: needed on one device, of the device's memory"
                                : "memory: needed on one device (its memory beside its name)";
  if (any_misfit) {
    footer +=
        "; fits \"no (N with FLAGS)\": fits on N devices split so (predicted), \"no (at "
        "least N)\": by memory alone (a lower bound)";
  }
  if (c.tokens_per_sample > 0) {
    footer +=
        fmt::format(". tokens/s: sequences/s x {} tokens", format_grouped(c.tokens_per_sample));
  }
  if (c.serving) {
    footer +=
        ". request: prefill and every decode step of the batch; tokens/s: generated tokens over "
        "that time, all replicas";
  }
  footer += table.cost_basis == CostBasis::kPerRun ? ". Cost and energy of the whole run"
            : table.cost_basis == CostBasis::kPerMillionTokens
                ? ". Cost and energy per 1M generated tokens"
            : c.tokens_per_sample > 0 ? ". Cost and energy per 1M sequences"
                                      : ". Cost and energy per 1M samples";
  footer += " at indicative prices and at TDP (an upper bound); \"-\": unknown.";
  std::string out = title(table) + text.render() + wrap_text(footer, 80);
  for (const std::string& note : notes)
    out += "  " + note + "\n";
  return out;
}

std::string render_compare_json(const CompareTable& table) {
  Json j;
  j["schema_version"] = kOutputSchemaVersion;
  j["model"] = {{"name", table.model}, {"params", table.params}};
  j["mode"] = std::string(mode_name(table.mode));
  put_parallelism_json(j, table);
  if (!table.runtime.empty()) j["runtime"] = table.runtime;
  j["sort"] = std::string(compare_sort_name(table.sort));
  j["cost_basis"] = std::string(cost_basis_name(table.cost_basis));
  j["run_samples"] = json_number(table.run_samples);
  j["serving"] = table.serving ? Json{{"prompt_tokens", table.serving->prompt_tokens},
                                      {"output_tokens", table.serving->output_tokens}}
                               : Json(nullptr);
  Json rows = Json::array();
  for (const CompareRow& row : table.rows)
    rows.push_back(row_json(row, table.mode));
  j["rows"] = rows;
  return json_text(j);
}

std::string render_compare_csv(const CompareTable& table) {
  std::string out =
      "model,device,device_name,type,batch,precision,mode,supported,note,latency_s,"
      "throughput_per_s,run_time_s,memory_bytes,device_memory_bytes,fits,devices_to_fit,bound,"
      "price_per_device_hour_usd,cost_basis,cost_usd,energy_kwh,ttft_s,fit_flags\n";
  for (const CompareRow& r : table.rows) {
    const auto known = [&](double value) {
      return r.supported ? csv_number(value) : std::string();
    };
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                       csv_field(table.model), r.device->id, csv_field(r.device->name),
                       device_type_name(r.device->type), r.batch, precision_name(r.precision),
                       mode_name(table.mode), r.supported ? "true" : "false", csv_field(r.note),
                       known(r.latency_s), known(r.throughput_per_s), csv_number(r.run_time_s),
                       known(r.memory_bytes), csv_number(r.device_memory_bytes),
                       r.supported ? (r.fits ? "true" : "false") : "",
                       r.supported ? std::to_string(r.devices_to_fit) : "",
                       r.supported ? std::string(bound_name(r.bound)) : "",
                       csv_number(r.price_per_device_hour_usd), cost_basis_name(table.cost_basis),
                       csv_number(r.cost_usd), csv_number(r.energy_kwh), csv_number(r.ttft_s),
                       csv_field(r.fit_flags));
  }
  return out;
}

std::string render_compare_markdown(const CompareTable& table) {
  const Columns c = columns_of(table);
  const std::vector<std::string> h = headers(table, c);
  std::string out =
      "**" + markdown_cell(title(table).substr(0, title(table).size() - 1)) + "**\n\n|";
  std::string rule = "|";
  for (const std::string& header : h) {
    out += " " + markdown_cell(header) + " |";
    const bool left =
        header == "device" || header == "prec" || header == "fits" || header == "bound";
    rule += left ? " --- |" : " ---: |";
  }
  out += "\n" + rule + "\n";
  for (const CompareRow& row : table.rows) {
    out += "|";
    for (const std::string& cell : cells(row, c))
      out += " " + markdown_cell(cell) + " |";
    out += "\n";
  }
  for (const CompareRow& row : table.rows) {
    if (!row.supported) out += fmt::format("\n- {}: {}", row.device->id, row.note);
  }
  return out + "\n";
}

std::string render_check_text(const CheckReport& report, bool color) {
  // ANSI SGR: bold red, green, reset.
  const std::string fail = color ? "\x1b[1;31mFAIL\x1b[0m  " : "FAIL  ";
  const std::string ok = color ? "\x1b[32mok\x1b[0m    " : "ok    ";
  std::string out;
  for (const CheckResult& r : report.results) {
    if (!r.passed) out += fail + check_line(r) + "\n";
  }
  for (const CheckResult& r : report.results) {
    if (r.passed) out += ok + check_line(r) + "\n";
  }
  return out + check_summary(report) + "\n";
}

std::string render_check_json(const CheckReport& report) {
  Json j;
  j["schema_version"] = kOutputSchemaVersion;
  j["passed"] = report.passed();
  j["checks"] = report.results.size();
  j["failures"] = report.failures();
  Json results = Json::array();
  for (const CheckResult& r : report.results) {
    Json item;
    item["budget"] = r.budget;
    item["model"] = r.model;
    item["device"] = r.device;
    item["workload"] = r.workload;
    item["limit"] = std::string(limit_name(r.limit.kind));
    item["limit_text"] = r.limit.text;
    item["limit_value"] = r.limit.kind == LimitKind::kMustFit ? Json(nullptr) : Json(r.limit.value);
    item["value"] = json_number(r.value);
    item["passed"] = r.passed;
    item["message"] = r.message;
    results.push_back(item);
  }
  j["results"] = results;
  return json_text(j);
}

std::string render_check_junit(const CheckReport& report) {
  // One testsuite per budget, in the order budgets first appear.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const CheckResult*>> suites;
  for (const CheckResult& r : report.results) {
    if (suites.find(r.budget) == suites.end()) order.push_back(r.budget);
    suites[r.budget].push_back(&r);
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"capcalc check\" tests=\"{}\" failures=\"{}\">\n",
                     report.results.size(), report.failures());
  for (const std::string& name : order) {
    const auto& results = suites[name];
    std::size_t failures = 0;
    for (const CheckResult* r : results)
      failures += r->passed ? 0 : 1;
    out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\">\n",
                       escape_markup(name), results.size(), failures);
    for (const CheckResult* r : results) {
      out += fmt::format("    <testcase classname=\"{}\" name=\"{}\"",
                         escape_markup(r->model + "." + r->device),
                         escape_markup(fmt::format("{} {} ({})", limit_name(r->limit.kind),
                                                   r->limit.text, r->workload)));
      if (r->passed) {
        out += "/>\n";
      } else {
        out += fmt::format(
            ">\n      <failure message=\"{0}\" type=\"budget\">{0}</failure>\n"
            "    </testcase>\n",
            escape_markup(r->message));
      }
    }
    out += "  </testsuite>\n";
  }
  return out + "</testsuites>\n";
}

std::string render_check_markdown(const CheckReport& report) {
  std::string out = fmt::format("**capcalc check: {}**\n\n", check_summary(report));
  out += "| | budget | device | workload | limit | value | margin |\n";
  out += "| --- | --- | --- | --- | --- | ---: | ---: |\n";
  for (int pass = 0; pass < 2; ++pass) {
    for (const CheckResult& r : report.results) {
      if (r.passed != (pass == 1)) continue;
      const std::string margin =
          r.margin_text.empty() ? "-" : (r.passed ? "" : "-") + r.margin_text;
      out +=
          fmt::format("| {} | {} | {} | {} | {} {} | {} | {} |\n", r.passed ? "ok" : "**FAIL**",
                      markdown_cell(r.budget), markdown_cell(r.device), markdown_cell(r.workload),
                      limit_name(r.limit.kind), markdown_cell(r.limit.text),
                      markdown_cell(r.value_text), markdown_cell(margin));
    }
  }
  return out;
}

}  // namespace capcalc
