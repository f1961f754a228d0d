#include "capcalc/roofline.hpp"

#include <memory>
#include <string>

#include "capcalc/predict.hpp"

#include "commands.hpp"
#include "output_file.hpp"
#include "workload_args.hpp"

namespace capcalc::cli {
namespace {

struct RooflineOptions {
  ModelArgs model;
  HardwareArgs hardware;
  std::string device;
  WorkloadArgs workload;
  std::string output;  // Empty: stdout.
  std::size_t labels = 5;
};

void run_roofline(const RooflineOptions& options) {
  const HardwareTable table = load_table(options.hardware);
  const Device& device = table.get(options.device);
  const Graph graph = load_model_from(options.model);
  const Workload workload = workload_from(options.workload);
  const PerformanceParams params = table.performance_for(device);
  const Estimate result = estimate(graph, device, params, workload);
  RooflineSvgOptions svg;
  svg.labels = options.labels;
  write_output(options.output,
               render_roofline_svg(build_roofline(graph, device, params, workload, result), svg));
}

}  // namespace

void add_roofline_command(CLI::App& app) {
  auto options = std::make_shared<RooflineOptions>();
  CLI::App* sub =
      app.add_subcommand("roofline", "Draw the device's roofline with each layer as a point (SVG)");
  add_model_options(*sub, options->model);
  sub->add_option("-g,--gpu,--hw,--device", options->device,
                  "Device id or alias from the hardware table (CPUs and TPUs too)")
      ->required();
  add_hardware_options(*sub, options->hardware);
  add_workload_options(*sub, options->workload);
  sub->add_option("-o,--output", options->output, "Write the SVG to FILE instead of stdout");
  sub->add_option("--label", options->labels, "How many of the heaviest layers to name")
      ->capture_default_str();
  sub->callback([options] { run_roofline(*options); });
}

}  // namespace capcalc::cli
