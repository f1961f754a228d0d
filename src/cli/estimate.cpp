#include <fmt/format.h>

#include <memory>

#include "capcalc/predict.hpp"
#include "capcalc/report.hpp"
#include "commands.hpp"

namespace capcalc::cli {
namespace {

struct EstimateOptions {
  ModelArgs model;
  std::string device;
  std::string hardware;
  std::string precision = "fp32";
  std::string mode = "inference";
  std::string format = "table";
  std::size_t top = 10;
};

void run_estimate(const EstimateOptions& options) {
  const HardwareTable table = load_hardware(hardware_path(options.hardware));
  const Device& device = table.get(options.device);
  const Graph graph = load_model_from(options.model);
  Workload workload;
  workload.precision = precision_from(options.precision);
  workload.mode = options.mode == "training" ? Mode::kTraining : Mode::kInference;
  const PerformanceParams& params = table.performance_for(device.type);
  const Estimate result = estimate(graph, device, params, workload);
  const GraphTotals totals = graph_totals(graph);
  const ReportInput input{graph, totals, workload, &device, &params, &result};
  // Render fully before printing: nothing half-written reaches stdout on an error.
  const std::string text = options.format == "json" ? render_estimate_json(input)
                                                    : render_estimate_text(input, options.top);
  fmt::print("{}", text);
}

}  // namespace

void add_estimate_command(CLI::App& app) {
  auto options = std::make_shared<EstimateOptions>();
  CLI::App* sub = app.add_subcommand("estimate", "Predict time, throughput and memory on a device");
  add_model_options(*sub, options->model);
  sub->add_option("-g,--gpu,--hw,--device", options->device,
                  "Device id or alias from the hardware table (CPUs and TPUs too)")
      ->required();
  sub->add_option("--hardware", options->hardware, "Hardware table (JSON)");
  sub->add_option("-p,--precision", options->precision, "Number format of weights, activations and math")
      ->check(CLI::IsMember(precision_names()))
      ->capture_default_str();
  sub->add_option("-m,--mode", options->mode, "inference (a forward pass) or training (a step)")
      ->check(CLI::IsMember({"inference", "training"}))
      ->capture_default_str();
  sub->add_option("-f,--format", options->format, "Output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  sub->add_option("--top", options->top, "How many of the heaviest layers to list")
      ->capture_default_str();
  sub->callback([options] { run_estimate(*options); });
}

}  // namespace capcalc::cli
