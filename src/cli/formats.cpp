#include "formats.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/report_compare.hpp"

#include "usage.hpp"

namespace capcalc::cli {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Adapters for the renderers that take more than the document.
std::string estimate_text(const EstimateDoc& d) {
  return render_estimate_text(d.input, d.top_layers);
}
std::string estimate_json(const EstimateDoc& d) {
  return render_estimate_json(d.input);
}
std::string hw_list_text(const HardwareListDoc& d) {
  return render_hardware_text(d.devices);
}
std::string hw_list_json(const HardwareListDoc& d) {
  return render_hardware_json(d.table, d.devices);
}
std::string hw_list_csv(const HardwareListDoc& d) {
  return render_hardware_csv(d.devices);
}
std::string device_text(const DeviceDoc& d) {
  return render_device_text(d.device, d.params);
}
std::string device_json(const DeviceDoc& d) {
  return render_device_json(d.device, d.params);
}
std::string check_table(const CheckDoc& d) {
  return render_check_text(d.report, d.color);
}
std::string check_json(const CheckDoc& d) {
  return render_check_json(d.report);
}
std::string check_junit(const CheckDoc& d) {
  return render_check_junit(d.report);
}
std::string check_markdown(const CheckDoc& d) {
  return render_check_markdown(d.report);
}
std::string scale_text(const ScaleDoc& d) {
  return render_scale_text(d.scale, d.model, d.device);
}
std::string scale_json(const ScaleDoc& d) {
  return render_scale_json(d.scale, d.model, d.device);
}
std::string scale_csv(const ScaleDoc& d) {
  return render_scale_csv(d.scale);
}
std::string serve_text(const ServeRunDoc& d) {
  return d.found + render_serve_text(d.result, d.title);
}
std::string serve_json(const ServeRunDoc& d) {
  return render_serve_json(d.result, d.title);
}
std::string serve_csv(const ServeRunDoc& d) {
  return render_serve_csv({d.result});
}
std::string sweep_text(const ServeSweepDoc& d) {
  return render_sweep_text(d.runs, d.title);
}
std::string sweep_json(const ServeSweepDoc& d) {
  return render_sweep_json(d.runs, d.title);
}
std::string sweep_csv(const ServeSweepDoc& d) {
  return render_serve_csv(d.runs);
}
// --find split: the splits above the best one's run; JSON both; CSV a row a split.
std::string split_text(const ServeSplitDoc& d) {
  return render_split_text(d.search) +
         render_serve_text(d.search.splits[d.search.best].search.at_rate, d.title);
}
std::string split_json(const ServeSplitDoc& d) {
  return render_split_json(d.search, d.title);
}
std::string split_csv(const ServeSplitDoc& d) {
  std::vector<ServeResult> runs;
  for (const SplitSearch::Split& split : d.search.splits)
    runs.push_back(split.search.at_rate);
  return render_serve_csv(runs);
}

}  // namespace

void unknown_format(std::string_view format, std::string_view command,
                    const std::vector<std::string_view>& names) {
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) list += i + 1 == names.size() ? " or " : ", ";
    list += names[i];
  }
  throw Error({}, fmt::format("--format {}: {} writes {}", format, command, list));
}

CLI::Option* add_format_option(CLI::App& sub, std::string& format,
                               const std::vector<std::string_view>& names, std::string_view alias,
                               const std::string& help) {
  format = std::string(names.front());
  CLI::Option* option = one_of(sub.add_option("-f,--format", format, help), names);
  if (!alias.empty()) {
    // Runs before one_of's check (CLI11 runs the last transform added first); no description,
    // so --help lists the names only.
    const std::string to(names.front());
    const std::string from(alias);
    option->transform(CLI::Validator(
        [from, to](std::string& text) {
          if (iequals(text, from)) text = to;
          return std::string();
        },
        ""));
  }
  return option->capture_default_str();
}

const FormatTable<EstimateDoc>& estimate_formats() {
  static const FormatTable<EstimateDoc> table{"estimate",
                                              {{"table", estimate_text}, {"json", estimate_json}}};
  return table;
}

const FormatTable<ReportInput>& layers_formats() {
  static const FormatTable<ReportInput> table{
      "layers",
      {{"table", render_layers_text}, {"json", render_layers_json}, {"csv", render_layers_csv}}};
  return table;
}

const FormatTable<HardwareListDoc>& hw_list_formats() {
  static const FormatTable<HardwareListDoc> table{
      "hw list", {{"table", hw_list_text}, {"json", hw_list_json}, {"csv", hw_list_csv}}};
  return table;
}

const FormatTable<DeviceDoc>& hw_show_formats() {
  static const FormatTable<DeviceDoc> table{"hw show",
                                            {{"table", device_text}, {"json", device_json}}};
  return table;
}

const FormatTable<RuntimeTable>& runtimes_list_formats() {
  static const FormatTable<RuntimeTable> table{
      "runtimes list", {{"table", render_runtimes_text}, {"json", render_runtimes_json}}};
  return table;
}

const FormatTable<Runtime>& runtimes_show_formats() {
  static const FormatTable<Runtime> table{
      "runtimes show", {{"table", render_runtime_text}, {"json", render_runtime_json}}};
  return table;
}

const FormatTable<std::vector<ZooRow>>& models_list_formats() {
  static const FormatTable<std::vector<ZooRow>> table{
      "models list",
      {{"table", render_zoo_text}, {"json", render_zoo_json}, {"csv", render_zoo_csv}}};
  return table;
}

const FormatTable<ValidationSummary>& validate_formats() {
  static const FormatTable<ValidationSummary> table{
      "validate", {{"table", render_validation_text}, {"json", render_validation_json}}};
  return table;
}

const FormatTable<CompareTable>& compare_formats() {
  static const FormatTable<CompareTable> table{"compare",
                                               {{"table", render_compare_text},
                                                {"json", render_compare_json},
                                                {"csv", render_compare_csv},
                                                {"markdown", render_compare_markdown}}};
  return table;
}

// "text" was check's name for the table until the names agreed (issue 22); scripts keep it.
const FormatTable<CheckDoc>& check_formats() {
  static const FormatTable<CheckDoc> table{"check",
                                           {{"table", check_table},
                                            {"json", check_json},
                                            {"junit", check_junit},
                                            {"markdown", check_markdown}},
                                           "text"};
  return table;
}

const FormatTable<PlanReportInput>& plan_formats() {
  static const FormatTable<PlanReportInput> table{"plan",
                                                  {{"table", render_plan_text},
                                                   {"json", render_plan_json},
                                                   {"csv", render_plan_csv},
                                                   {"markdown", render_plan_markdown}}};
  return table;
}

const FormatTable<ScaleDoc>& scale_formats() {
  static const FormatTable<ScaleDoc> table{
      "scale", {{"table", scale_text}, {"json", scale_json}, {"csv", scale_csv}}};
  return table;
}

const FormatTable<ServeRunDoc>& serve_formats() {
  static const FormatTable<ServeRunDoc> table{
      "serve", {{"table", serve_text}, {"json", serve_json}, {"csv", serve_csv}}};
  return table;
}

const FormatTable<ServeSweepDoc>& serve_sweep_formats() {
  static const FormatTable<ServeSweepDoc> table{
      "serve --sweep", {{"table", sweep_text}, {"json", sweep_json}, {"csv", sweep_csv}}};
  return table;
}

const FormatTable<ServeSplitDoc>& serve_split_formats() {
  static const FormatTable<ServeSplitDoc> table{
      "serve --find split", {{"table", split_text}, {"json", split_json}, {"csv", split_csv}}};
  return table;
}

const FormatTable<Fleet>& serve_mix_formats() {
  static const FormatTable<Fleet> table{
      "serve --mix", {{"table", render_fleet_text}, {"json", render_fleet_json}}};
  return table;
}

const FormatTable<ServingSummary>& serve_validation_formats() {
  static const FormatTable<ServingSummary> table{
      "serve --validate",
      {{"table", render_serving_validation_text}, {"json", render_serving_validation_json}}};
  return table;
}

const FormatTable<ProbeResult>& probe_formats() {
  static const FormatTable<ProbeResult> table{
      "probe", {{"json", render_probe_json}, {"table", render_probe_text}}};
  return table;
}

}  // namespace capcalc::cli
