#include "capcalc/validate.hpp"

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/ranges.hpp"
#include "capcalc/report.hpp"

#include "commands.hpp"
#include "formats.hpp"
#include "gates.hpp"
#include "output_file.hpp"
#include "usage.hpp"

namespace capcalc::cli {
namespace {

struct ValidateOptions {
  HardwareArgs hardware;
  std::vector<std::string> measurements;
  std::string models;
  std::string write_ranges;
  std::string format;  // --format; add_format_option sets the default (formats.hpp).
  AccuracyGates gates;
  std::optional<double> max_held_out_median_error;
};

int run_validate(const ValidateOptions& options) {
  check_writable(options.write_ranges);  // Before the cases are predicted.
  const HardwareTable table = load_table(options.hardware);
  const std::vector<std::string> files =
      options.measurements.empty()
          ? std::vector<std::string>{data_dir() + "/validation/measurements.json"}
          : options.measurements;
  // Every file's cases in one set (ids must still be unique within each file).
  std::vector<Measurement> cases;
  for (const std::string& file : files) {
    std::vector<Measurement> more = load_measurements(file);
    cases.insert(cases.end(), std::make_move_iterator(more.begin()),
                 std::make_move_iterator(more.end()));
  }
  const RuntimeTable runtimes = load_runtime_table({});
  const ValidationSummary summary = validate(cases, table, models_dir(options.models), &runtimes);
  if (options.max_held_out_median_error && summary.held_out == 0)
    throw Error({}, "--max-held-out-median-error: none of these cases is held out");
  if (!options.write_ranges.empty()) {
    const RangeTable ranges =
        derive_ranges(residuals(summary), 0.8, 5, fmt::format("{}", fmt::join(files, ", ")));
    write_output(options.write_ranges, render_ranges_json(ranges));
  }
  fmt::print("{}", validate_formats().render(options.format, summary));
  bool failed = gates_fail(
      "validate",
      {summary.median_abs_error, summary.worst_factor, summary.within_2x, summary.results.size()},
      options.gates);
  if (options.max_held_out_median_error &&
      summary.held_out_median_abs_error > *options.max_held_out_median_error) {
    fmt::print(stderr,
               "capcalc: validate: held-out median |error| {:.1f} % exceeds the limit {:.1f} %\n",
               100 * summary.held_out_median_abs_error, 100 * *options.max_held_out_median_error);
    failed = true;
  }
  return failed ? 1 : 0;
}

}  // namespace

void add_validate_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* sub = app.add_subcommand(
      "validate", "Predict every published measurement of the validation set; print the errors");
  add_hardware_options(*sub, options->hardware);
  sub->add_option("--measurements", options->measurements,
                  "Measurement file (default: data/validation/measurements.json); repeatable: "
                  "the cases of all of them");
  sub->add_option("--write-ranges", options->write_ranges,
                  "Write the prediction ranges of these cases' residuals (80 % of the cases of "
                  "each profile/bound/device-type class) to this file, as data/ranges.json");
  sub->add_option("--models", options->models,
                  "Directory of the model files (default: data/models)");
  add_format_option(*sub, options->format, validate_formats());
  add_gate_options(*sub, options->gates, "Exit 1");
  number_in(sub->add_option("--max-held-out-median-error", options->max_held_out_median_error,
                            "Exit 1 if the median |error| of the held-out cases exceeds this "
                            "fraction"),
            0);
  sub->callback([options, &exit_code] { exit_code = run_validate(*options); });
}

}  // namespace capcalc::cli
