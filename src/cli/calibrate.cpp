#include "capcalc/calibrate.hpp"

#include <memory>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/report.hpp"

#include "commands.hpp"
#include "output_file.hpp"

namespace capcalc::cli {
namespace {

struct CalibrateOptions {
  std::string records;
  HardwareArgs hardware;
  std::string models;
  std::string output;
};

void run_calibrate(const CalibrateOptions& options) {
  check_writable(options.output);  // Before the fit, which takes seconds.
  const HardwareTable table = load_table(options.hardware);
  // A user's own records need no "source" or "quote" (the validation set's do).
  const std::vector<Measurement> records =
      load_measurements(options.records, Provenance::kOptional);
  if (records.empty()) throw Error({options.records}, "no records to fit");
  const RuntimeTable runtimes = load_runtime_table({});
  const CalibrationResult result = calibrate(records, table, models_dir(options.models), &runtimes);
  std::vector<const Device*> fitted;
  for (const CalibrationFit& fit : result.fits)
    fitted.push_back(result.calibrated.find(fit.device_id));
  const std::string file = render_hardware_file(fitted);
  for (const std::string& warning : result.warnings)
    fmt::print(stderr, "warning: {}\n", warning);
  const std::string summary = render_calibration_text(result);
  if (!options.output.empty()) write_output(options.output, file);
  fmt::print("{}", summary);
  if (!options.output.empty()) {
    fmt::print("wrote {}: use it with --hardware-file {}\n", options.output, options.output);
  }
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto options = std::make_shared<CalibrateOptions>();
  CLI::App* sub = app.add_subcommand(
      "calibrate", "Fit devices' efficiency to your own measurements; write a hardware file");
  sub->add_option("records", options->records,
                  "Measured records (the format of data/validation/measurements.json)")
      ->required();
  add_hardware_options(*sub, options->hardware);
  sub->add_option("--models", options->models,
                  "Directory for bare model names (default: data/models); paths are used as given");
  sub->add_option("-o,--output", options->output, "Write the calibrated devices to this file");
  sub->callback([options] { run_calibrate(*options); });
}

}  // namespace capcalc::cli
