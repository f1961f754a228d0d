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
  std::optional<double> max_median_error;
  std::optional<double> max_worst_factor;
  std::optional<double> max_held_out_median_error;
  std::optional<std::int64_t> min_within_2x;
};

int run_validate(const ValidateOptions& options) {
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
  const ValidationSummary summary = validate(
      cases, table, options.models.empty() ? data_dir() + "/models" : options.models, &runtimes);
  if (options.max_held_out_median_error && summary.held_out == 0)
    throw Error({}, "--max-held-out-median-error: none of these cases is held out");
  if (!options.write_ranges.empty()) {
    const RangeTable ranges =
        derive_ranges(residuals(summary), 0.8, 5, fmt::format("{}", fmt::join(files, ", ")));
    write_output(options.write_ranges, render_ranges_json(ranges));
  }
  fmt::print("{}", validate_formats().render(options.format, summary));
  bool failed = false;
  if (options.max_median_error && summary.median_abs_error > *options.max_median_error) {
    fmt::print(stderr, "capcalc: validate: median |error| {:.1f} % exceeds the limit {:.1f} %\n",
               100 * summary.median_abs_error, 100 * *options.max_median_error);
    failed = true;
  }
  if (options.max_worst_factor && summary.worst_factor > *options.max_worst_factor) {
    fmt::print(stderr, "capcalc: validate: worst error {:.2f}x exceeds the limit {:.2f}x\n",
               summary.worst_factor, *options.max_worst_factor);
    failed = true;
  }
  if (options.max_held_out_median_error) {
    if (summary.held_out_median_abs_error > *options.max_held_out_median_error) {
      fmt::print(stderr,
                 "capcalc: validate: held-out median |error| {:.1f} % exceeds the limit {:.1f} %\n",
                 100 * summary.held_out_median_abs_error, 100 * *options.max_held_out_median_error);
      failed = true;
    }
  }
  if (options.min_within_2x &&
      summary.within_2x < static_cast<std::size_t>(*options.min_within_2x)) {
    fmt::print(stderr, "capcalc: validate: {} of {} cases within 2x, below the limit {}\n",
               summary.within_2x, summary.results.size(), *options.min_within_2x);
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
  // A gate that nan passes can never fail: the limits are checked numbers.
  number_in(sub->add_option("--max-median-error", options->max_median_error,
                            "Exit 1 if the median |error| exceeds this fraction (e.g. 0.15)"),
            0);
  number_in(sub->add_option("--max-worst-factor", options->max_worst_factor,
                            "Exit 1 if any case is off by more than this factor (e.g. 2)"),
            1);
  number_in(sub->add_option("--max-held-out-median-error", options->max_held_out_median_error,
                            "Exit 1 if the median |error| of the held-out cases exceeds this "
                            "fraction"),
            0);
  whole_number(sub->add_option("--min-within-2x", options->min_within_2x,
                               "Exit 1 if fewer than this many cases are within a factor of 2"),
               0);
  sub->callback([options, &exit_code] { exit_code = run_validate(*options); });
}

}  // namespace capcalc::cli
