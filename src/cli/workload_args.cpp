// The estimate the single-estimate commands share, and the checks of their workload flags.
#include "workload_args.hpp"

#include <fmt/format.h>

#include "capcalc/zoo.hpp"

namespace capcalc::cli {

WorkloadSpec with_serving(const WorkloadSpec& spec, const ServingArgs& serving) {
  WorkloadSpec out = spec;
  out.prompt_tokens = serving.prompt_tokens;
  out.output_tokens = serving.output_tokens;
  return out;
}

void check_kv_precision(const std::string& kv_precision, const ServingArgs& serving) {
  WorkloadSpec spec;
  spec.kv_precision = kv_precision;
  (void)workload_from(with_serving(spec, serving));
}

ModelArgs training_batch_args(const ModelArgs& model, SingleEstimate& e) {
  if (model.batch) return model;
  ModelArgs args = model;
  const std::optional<ZooModel> zoo = zoo_model_for(model.path);
  if (!zoo || !zoo->training_batch) {
    e.batch_note = "no --batch: the model file's";
    return args;
  }
  for (const auto& [name, value] : zoo->training_batch->dims) {
    if (name == "batch") {
      args.batch = value;
    } else {
      args.sets.insert(args.sets.begin(), fmt::format("{}={}", name, value));
    }
  }
  e.batch_note = fmt::format("no --batch: {}'s typical training batch", zoo->name);
  e.batch_source = zoo->training_batch->source;
  return args;
}

ModelArgs training_batch_or_given(const ModelArgs& model, const Workload& workload,
                                  std::string& warning_note) {
  if (workload.mode != Mode::kTraining || model.batch) return model;
  SingleEstimate notes;
  ModelArgs args = training_batch_args(model, notes);
  warning_note = notes.batch_note == "no --batch: the model file's"
                     ? "the model file's"
                     : notes.batch_note.substr(std::string("no --batch: ").size());
  return args;
}

void warn_training_batch(const std::string& warning_note, const Graph& graph) {
  if (warning_note.empty()) return;
  fmt::print(stderr, "warning: training without --batch: batch {}, {}; give --batch N\n",
             graph.batch, warning_note);
}

std::unique_ptr<SingleEstimate> run_single_estimate(const SingleEstimateArgs& args,
                                                    const ModelArgs* model,
                                                    const ServingArgs* serving) {
  const WorkloadSpec& flags = args.workload;
  const WorkloadSpec spec = serving != nullptr ? with_serving(flags, *serving) : flags;
  auto e = std::make_unique<SingleEstimate>();
  e->table = load_table(args.hardware);
  e->device = &e->table.get(args.device);
  e->workload = workload_from(spec);
  e->workload.precision = precision_on(e->workload, *e->device);
  const ModelArgs& given = model != nullptr ? *model : args.model;
  e->graph =
      load_model_from(e->workload.mode == Mode::kTraining ? training_batch_args(given, *e) : given);
  if (e->batch_note == "no --batch: the model file's") {
    fmt::print(stderr,
               "warning: training without --batch: batch {}, the model file's; give --batch N\n",
               e->graph.batch);
  }
  e->workload.runtime = runtime_from(spec.runtime, args.workload.runtime_files, *e->device);
  e->params = e->table.performance_for(*e->device);
  e->result = estimate(e->graph, *e->device, e->params, e->workload);
  e->totals = graph_totals(e->graph);
  e->ranges = load_default_ranges();
  return e;
}

}  // namespace capcalc::cli
