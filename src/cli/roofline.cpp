#include "capcalc/roofline.hpp"

#include <memory>
#include <string>

#include "commands.hpp"
#include "output_file.hpp"
#include "serving_run.hpp"
#include "usage.hpp"
#include "workload_args.hpp"

namespace capcalc::cli {
namespace {

struct RooflineOptions {
  SingleEstimateArgs run;
  ServingArgs serving;
  std::string output;  // Empty: stdout.
  std::size_t labels = 5;
};

void run_roofline(const RooflineOptions& options) {
  const auto e = run_serving_estimate(options.run, options.serving);
  const std::optional<ServingRun> serving = run_serving(options.run, options.serving, *e);
  RooflineSvgOptions svg;
  svg.labels = options.labels;
  const Roofline roofline =
      serving ? build_serving_roofline(e->graph, serving->decode, *e->device, e->params,
                                       e->workload, serving->request, serving->estimate)
              : build_roofline(e->graph, *e->device, e->params, e->workload, e->result);
  write_output(options.output, render_roofline_svg(roofline, svg));
}

}  // namespace

void add_roofline_command(CLI::App& app) {
  auto options = std::make_shared<RooflineOptions>();
  CLI::App* sub =
      app.add_subcommand("roofline", "Draw the device's roofline with each layer as a point (SVG)");
  add_single_estimate_options(*sub, options->run);
  add_serving_run_options(*sub, options->serving, options->run.workload.kv_precision);
  sub->add_option("-o,--output", options->output, "Write the SVG to FILE instead of stdout");
  whole_number(
      sub->add_option("--label", options->labels, "How many of the heaviest layers to name"), 0)
      ->capture_default_str();
  sub->callback([options] { run_roofline(*options); });
}

}  // namespace capcalc::cli
