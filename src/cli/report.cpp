#include "capcalc/report.hpp"

#include <memory>
#include <string>

#include "commands.hpp"
#include "output_file.hpp"
#include "usage.hpp"
#include "workload_args.hpp"

namespace capcalc::cli {
namespace {

struct ReportOptions {
  SingleEstimateArgs run;
  std::string output;  // Empty: stdout.
  std::size_t labels = 5;
};

void run_report(const ReportOptions& options) {
  const auto e = run_single_estimate(options.run);
  write_output(options.output, render_report_html(e->report_input(), options.labels));
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand(
      "report", "Write a self-contained HTML report: summary, layers, roofline, memory");
  add_single_estimate_options(*sub, options->run);
  sub->add_option("-o,--output", options->output, "Write the HTML to FILE instead of stdout");
  whole_number(sub->add_option("--label", options->labels,
                               "How many of the heaviest layers to name in the roofline"),
               0)
      ->capture_default_str();
  sub->callback([options] { run_report(*options); });
}

}  // namespace capcalc::cli
