#include <memory>
#include <optional>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/report.hpp"

#include "commands.hpp"
#include "formats.hpp"
#include "usage.hpp"

namespace capcalc::cli {
namespace {

struct LayersOptions {
  ModelArgs model;
  std::string device;
  HardwareArgs hardware;
  std::string precision = "fp32";
  std::string format;  // --format; add_format_option sets the default (formats.hpp).
};

void run_layers(const LayersOptions& options) {
  // Without a device no table is read: a table given would be ignored.
  if (options.device.empty() &&
      (!options.hardware.table.empty() || !options.hardware.files.empty())) {
    throw Error({}, fmt::format("{} is read for --gpu's per-layer times: add --gpu DEVICE",
                                options.hardware.table.empty() ? "--hardware-file" : "--hardware"));
  }
  const Graph graph = load_model_from(options.model);
  const GraphTotals totals = graph_totals(graph);
  Workload workload;
  workload.precision = precision_from(options.precision);
  ReportInput input{graph, totals, workload};
  std::optional<HardwareTable> table;
  std::optional<Estimate> result;
  std::optional<PerformanceParams> params;
  if (!options.device.empty()) {
    table = load_table(options.hardware);
    input.device = &table->get(options.device);
    params = table->performance_for(*input.device);
    input.params = &*params;
    result = estimate(graph, *input.device, *params, workload);
    input.estimate = &*result;
  }
  fmt::print("{}", layers_formats().render(options.format, input));
}

}  // namespace

void add_layers_command(CLI::App& app) {
  auto options = std::make_shared<LayersOptions>();
  CLI::App* sub =
      app.add_subcommand("layers", "Per-layer shapes and counts (and times with --gpu)");
  add_model_options(*sub, options->model);
  sub->add_option("-g,--gpu,--hw,--device", options->device, "Add per-layer times on this device");
  add_hardware_options(*sub, options->hardware);
  one_of(sub->add_option("-p,--precision", options->precision,
                         "Number format (sets bytes per element)"),
         precision_names())
      ->capture_default_str();
  add_format_option(*sub, options->format, layers_formats());
  sub->callback([options] { run_layers(*options); });
}

}  // namespace capcalc::cli
