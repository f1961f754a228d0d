#include "capcalc/roofline.hpp"

#include <memory>
#include <string>

#include "commands.hpp"
#include "output_file.hpp"
#include "usage.hpp"
#include "workload_args.hpp"

namespace capcalc::cli {
namespace {

struct RooflineOptions {
  SingleEstimateArgs run;
  std::string output;  // Empty: stdout.
  std::size_t labels = 5;
};

void run_roofline(const RooflineOptions& options) {
  const auto e = run_single_estimate(options.run);
  RooflineSvgOptions svg;
  svg.labels = options.labels;
  write_output(options.output,
               render_roofline_svg(
                   build_roofline(e->graph, *e->device, e->params, e->workload, e->result), svg));
}

}  // namespace

void add_roofline_command(CLI::App& app) {
  auto options = std::make_shared<RooflineOptions>();
  CLI::App* sub =
      app.add_subcommand("roofline", "Draw the device's roofline with each layer as a point (SVG)");
  add_single_estimate_options(*sub, options->run);
  sub->add_option("-o,--output", options->output, "Write the SVG to FILE instead of stdout");
  whole_number(
      sub->add_option("--label", options->labels, "How many of the heaviest layers to name"), 0)
      ->capture_default_str();
  sub->callback([options] { run_roofline(*options); });
}

}  // namespace capcalc::cli
