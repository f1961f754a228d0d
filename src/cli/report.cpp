#include "capcalc/report.hpp"

#include <memory>
#include <string>

#include "commands.hpp"
#include "output_file.hpp"
#include "serving_run.hpp"
#include "usage.hpp"
#include "workload_args.hpp"

namespace capcalc::cli {
namespace {

struct ReportOptions {
  SingleEstimateArgs run;
  ServingArgs serving;
  std::string output;  // Empty: stdout.
  std::size_t labels = 5;
};

void run_report(const ReportOptions& options) {
  const auto e = run_serving_estimate(options.run, options.serving);
  const std::optional<ServingRun> serving = run_serving(options.run, options.serving, *e);
  ReportInput input = e->report_input();
  if (serving) {
    input.request = &serving->request;
    input.serving = &serving->estimate;
    input.decode_graph = &serving->decode;
  }
  write_output(options.output, render_report_html(input, options.labels));
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand(
      "report", "Write a self-contained HTML report: summary, layers, roofline, memory");
  add_single_estimate_options(*sub, options->run);
  add_serving_run_options(*sub, options->serving, options->run.workload.kv_precision);
  sub->add_option("-o,--output", options->output, "Write the HTML to FILE instead of stdout");
  whole_number(sub->add_option("--label", options->labels,
                               "How many of the heaviest layers to name in the roofline"),
               0)
      ->capture_default_str();
  sub->callback([options] { run_report(*options); });
}

}  // namespace capcalc::cli
