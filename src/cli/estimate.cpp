#include <memory>
#include <optional>

#include <fmt/format.h>

#include "capcalc/compare.hpp"
#include "capcalc/error.hpp"
#include "capcalc/fit.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/report.hpp"

#include "commands.hpp"
#include "formats.hpp"
#include "usage.hpp"
#include "workload_args.hpp"

namespace capcalc::cli {
namespace {

struct EstimateOptions {
  SingleEstimateArgs run;          // The workload's run size and price too.
  std::string format;              // --format; add_format_option sets the default (formats.hpp).
  std::optional<std::size_t> top;  // Default 10.
  bool explain = false;
  ServingArgs serving;
};

// A flag this run would ignore is an error; one that only shapes the table, a warning.
void check_flag_use(const EstimateOptions& options) {
  check_kv_precision(options.run.workload.kv_precision, options.serving);
  if (options.run.workload.price_per_hour_usd && options.run.workload.run.empty()) {
    throw Error({}, "--price-per-hour prices a training run: add --dataset-size or --tokens");
  }
  if (options.format == "json" && options.top) {
    fmt::print(stderr, "warning: --top is for the table: JSON lists every layer\n");
  }
  if (options.format == "json" && options.explain) {
    fmt::print(stderr, "warning: --explain is for the table: JSON has no text\n");
  }
}

void run_estimate(const EstimateOptions& options) {
  check_flag_use(options);
  // Serving: the estimate's graph is the prefill (seq = the prompt).
  const bool serving_request = options.serving.requested();
  const ModelArgs model_args =
      serving_request ? prefill_args(options.run.model, options.serving) : options.run.model;
  const auto e = run_single_estimate(options.run, &model_args, &options.serving);
  const Graph& graph = e->graph;
  const Device& device = *e->device;
  const Workload& workload = e->workload;
  ReportInput input = e->report_input();
  input.explain = options.explain;
  // A workload that does not fit says what would make it fit.
  FitAdvice fit;
  if (!e->result.fits) {
    fit = advise_fit(graph, device, e->params, workload);
    input.fit = &fit;
  }

  TrainingRun run;
  TrainingTotals run_totals;
  // workload_from() refused a run outside training.
  if (const std::optional<double> samples =
          run_samples(options.run.workload.run, graph, options.run.model.path)) {
    run.samples = *samples;
    run.price_per_device_hour_usd = options.run.workload.price_per_hour_usd;
    if (!run.price_per_device_hour_usd && device.price) {
      run.price_per_device_hour_usd = device.price->usd_per_hour;
    }
    run.power_w = device.tdp_w;
    run_totals = training_totals(e->result, graph.batch, workload, run);
    input.run = &run;
    input.training = &run_totals;
  }
  ServingRequest request;
  ServingEstimate serving;
  if (serving_request) {
    request = options.serving.request();
    const CompareServingBuilder build = serving_graphs(options.run.model);
    serving = estimate_serving(
        [&](std::int64_t seq, std::int64_t cached) { return build(graph.batch, seq, cached); },
        device, e->params, workload, request);
    input.request = &request;
    input.serving = &serving;
  }
  // Render fully before printing: nothing half-written reaches stdout on an error.
  const std::string text =
      estimate_formats().render(options.format, {input, options.top.value_or(10)});
  fmt::print("{}", text);
}

}  // namespace

void add_estimate_command(CLI::App& app) {
  auto options = std::make_shared<EstimateOptions>();
  CLI::App* sub = app.add_subcommand("estimate", "Predict time, throughput and memory on a device");
  add_single_estimate_options(*sub, options->run);
  add_run_size_options(*sub, options->run.workload.run);
  number_above(sub->add_option("--price-per-hour", options->run.workload.price_per_hour_usd,
                               "Training run: USD per device-hour (default: the table's "
                               "indicative price)"),
               0, kMaxPricePerHourUsd);
  add_format_option(*sub, options->format, estimate_formats());
  whole_number(sub->add_option("--top", options->top,
                               "How many of the heaviest layers to list (default 10)"),
               0);
  add_serving_options(
      *sub, options->serving,
      "LLM serving: prompt tokens per sequence (prefill); --batch is the sequences");
  add_kv_precision_option(*sub, options->run.workload.kv_precision);
  sub->add_flag("--explain", options->explain,
                "Show the formulas and assumptions behind each figure");
  sub->callback([options] { run_estimate(*options); });
}

}  // namespace capcalc::cli
