#include "capcalc/report.hpp"

#include <memory>
#include <string>

#include "capcalc/predict.hpp"

#include "commands.hpp"
#include "output_file.hpp"
#include "workload_args.hpp"

namespace capcalc::cli {
namespace {

struct ReportOptions {
  ModelArgs model;
  HardwareArgs hardware;
  std::string device;
  WorkloadArgs workload;
  std::string output;  // Empty: stdout.
  std::size_t labels = 5;
};

void run_report(const ReportOptions& options) {
  const HardwareTable table = load_table(options.hardware);
  const Device& device = table.get(options.device);
  const Graph graph = load_model_from(options.model);
  const Workload workload = workload_from(options.workload);
  const PerformanceParams params = table.performance_for(device);
  const Estimate result = estimate(graph, device, params, workload);
  const GraphTotals totals = graph_totals(graph);
  const ReportInput input{graph, totals, workload, &device, &params, &result};
  write_output(options.output, render_report_html(input, options.labels));
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand(
      "report", "Write a self-contained HTML report: summary, layers, roofline, memory");
  add_model_options(*sub, options->model);
  sub->add_option("-g,--gpu,--hw,--device", options->device,
                  "Device id or alias from the hardware table (CPUs and TPUs too)")
      ->required();
  add_hardware_options(*sub, options->hardware);
  add_workload_options(*sub, options->workload);
  sub->add_option("-o,--output", options->output, "Write the HTML to FILE instead of stdout");
  sub->add_option("--label", options->labels,
                  "How many of the heaviest layers to name in the roofline")
      ->capture_default_str();
  sub->callback([options] { run_report(*options); });
}

}  // namespace capcalc::cli
