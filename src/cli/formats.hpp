// Every command's output formats, in one place (formats.cpp): the names --format accepts, the
// default (the first name), an older name still accepted, and the renderer each name calls.
// Commands bind the option with add_format_option() and print table.render(format, document),
// never an if-chain on the name; `capcalc COMMAND --help` lists the names and the default
// ("TEXT:{table,json,csv}=table"), and tests/completion_man.cmake checks the bash completion
// and the man page against that listing. A new format is a row here plus its renderer and test.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "capcalc/budget.hpp"
#include "capcalc/compare.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/plan.hpp"
#include "capcalc/probe.hpp"
#include "capcalc/report.hpp"
#include "capcalc/report_plan.hpp"
#include "capcalc/runtime.hpp"
#include "capcalc/serve.hpp"
#include "capcalc/serve_mix.hpp"
#include "capcalc/serve_validation.hpp"
#include "capcalc/validate.hpp"
#include "capcalc/zoo.hpp"

namespace capcalc::cli {

/// One --format name and the renderer it calls: the whole document, ready to print.
template <typename Doc>
struct OutputFormat {
  std::string_view name;  ///< As --format spells it: "table", "json", "csv", "markdown", ...
  std::string (*render)(const Doc& doc);
};

/// A command's output formats.
template <typename Doc>
struct FormatTable {
  std::string_view command;                ///< As usage errors name it: "serve --validate".
  std::vector<OutputFormat<Doc>> formats;  ///< The first is the default.
  std::string_view alias{};  ///< An older name of the default, still accepted; "" if none.

  std::vector<std::string_view> names() const {
    std::vector<std::string_view> names;
    for (const OutputFormat<Doc>& f : formats)
      names.push_back(f.name);
    return names;
  }
  bool is_default(std::string_view format) const { return format == formats.front().name; }
  /// The row of `format`; a name this table lacks is an error naming the flag (the option checks
  /// names against the command's main table, and a command may write another document with
  /// fewer formats, as serve --validate does).
  const OutputFormat<Doc>& find(std::string_view format) const;
  /// The document in `format`.
  std::string render(std::string_view format, const Doc& doc) const {
    return find(format).render(doc);
  }
};

/// Throws "--format csv: serve --validate writes table or json".
[[noreturn]] void unknown_format(std::string_view format, std::string_view command,
                                 const std::vector<std::string_view>& names);

template <typename Doc>
const OutputFormat<Doc>& FormatTable<Doc>::find(std::string_view format) const {
  for (const OutputFormat<Doc>& f : formats) {
    if (f.name == format) return f;
  }
  unknown_format(format, command, names());
}

/// Adds -f,--format to `sub`: one of `names` in any case (or `alias`, taken as the default),
/// `format` set to the default, which --help shows.
CLI::Option* add_format_option(CLI::App& sub, std::string& format,
                               const std::vector<std::string_view>& names, std::string_view alias,
                               const std::string& help);
template <typename Doc>
CLI::Option* add_format_option(CLI::App& sub, std::string& format, const FormatTable<Doc>& table,
                               const std::string& help = "Output format") {
  return add_format_option(sub, format, table.names(), table.alias, help);
}

// The documents of the commands whose renderers take more than one argument.
struct EstimateDoc {
  const ReportInput& input;
  std::size_t top_layers;  ///< --top: the heaviest layers the table lists.
};
struct HardwareListDoc {
  const HardwareTable& table;
  const std::vector<const Device*>& devices;  ///< The rows: the table's, filtered by --type.
};
struct DeviceDoc {
  const Device& device;
  const PerformanceParams& params;
};
struct CheckDoc {
  const CheckReport& report;
  bool color;  ///< ANSI colour in the table (a terminal, and no --output).
};
struct ScaleDoc {
  const ScaleResult& scale;
  const std::string& model;
  const std::string& device;
};
struct ServeRunDoc {
  const ServeResult& result;
  const std::string& title;
  const std::string& found;  ///< What --find found, a line above the table; "" without --find.
};
struct ServeSweepDoc {
  const std::vector<ServeResult>& runs;
  const std::string& title;
};
struct ServeSplitDoc {
  const SplitSearch& search;
  const std::string& title;  ///< Of the best split's run.
};

// The tables, one per command (or per document a command writes).
const FormatTable<EstimateDoc>& estimate_formats();
const FormatTable<ReportInput>& layers_formats();
const FormatTable<HardwareListDoc>& hw_list_formats();
const FormatTable<DeviceDoc>& hw_show_formats();
const FormatTable<RuntimeTable>& runtimes_list_formats();
const FormatTable<Runtime>& runtimes_show_formats();
const FormatTable<std::vector<ZooRow>>& models_list_formats();
const FormatTable<ValidationSummary>& validate_formats();
const FormatTable<CompareTable>& compare_formats();
const FormatTable<CheckDoc>& check_formats();
const FormatTable<PlanReportInput>& plan_formats();
const FormatTable<ScaleDoc>& scale_formats();
const FormatTable<ServeRunDoc>& serve_formats();                ///< One run (also --find).
const FormatTable<ServeSweepDoc>& serve_sweep_formats();        ///< --sweep: serve's names.
const FormatTable<ServeSplitDoc>& serve_split_formats();        ///< --find split.
const FormatTable<ServingSummary>& serve_validation_formats();  ///< --validate.
const FormatTable<Fleet>& serve_mix_formats();                  ///< --mix: table or json.
/// probe: json (the default: stdout is a hardware-table entry, `capcalc probe > local.json`)
/// or table (a summary for people).
const FormatTable<ProbeResult>& probe_formats();

}  // namespace capcalc::cli
