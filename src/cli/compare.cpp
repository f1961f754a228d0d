#include "capcalc/compare.hpp"

#include <algorithm>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/report_compare.hpp"

#include "commands.hpp"
#include "formats.hpp"
#include "usage.hpp"
#include "workload_args.hpp"

namespace capcalc::cli {
namespace {

struct CompareOptions {
  ModelArgs model;
  HardwareArgs hardware;
  std::vector<std::string> devices;
  std::string type;
  bool all = false;
  std::string sort = "time";
  std::vector<std::string> precisions;  // Each row's; the workload's precision is unused.
  std::vector<std::int64_t> batches;
  WorkloadArgs workload;
  std::string format;  // --format; add_format_option sets the default (formats.hpp).
  ServingArgs serving;
};

std::vector<const Device*> pick_devices(const CompareOptions& options, const HardwareTable& table) {
  const int ways =
      (options.devices.empty() ? 0 : 1) + (options.type.empty() ? 0 : 1) + (options.all ? 1 : 0);
  if (ways != 1) throw Error({}, "give exactly one of --hw LIST, --type TYPE or --all");
  std::vector<const Device*> out;
  if (!options.devices.empty()) {
    for (const std::string& name : options.devices)
      out.push_back(&table.get(name));
    return out;
  }
  for (const Device& device : table.devices) {
    if (options.all || device_type_name(device.type) == options.type) out.push_back(&device);
  }
  if (out.empty())
    throw Error({}, fmt::format("no device of type \"{}\" in the table", options.type));
  return out;
}

void run_compare(const CompareOptions& options) {
  WorkloadSpec spec = with_serving(options.workload, options.serving);
  // The recipe goes with the fp8 rows of --precision's list, not with the spec's one precision.
  const std::string fp8_recipe = spec.fp8_recipe;
  spec.fp8_recipe.clear();
  CompareRequest request;
  request.workload = workload_from(spec);
  if (!fp8_recipe.empty()) {
    if (std::find(options.precisions.begin(), options.precisions.end(), "fp8") ==
        options.precisions.end()) {
      throw Error({}, "--fp8-recipe scales FP8 tensors: add fp8 to --precision");
    }
    request.workload.fp8_recipe = *parse_fp8_recipe(fp8_recipe);
  }
  // Serving rows' graphs are prefills: the prompt is the sequence.
  const bool serving = options.serving.requested();
  const ModelArgs model = serving ? prefill_args(options.model, options.serving) : options.model;
  const HardwareTable table = load_table(options.hardware);
  const std::vector<const Device*> devices = pick_devices(options, table);
  std::vector<Graph> graphs;
  if (options.batches.empty()) {
    std::string batch_note;
    graphs.push_back(load_model_from(training_batch_or_given(model, request.workload, batch_note)));
    warn_training_batch(batch_note, graphs.back());
  } else {
    for (std::int64_t batch : options.batches) {
      ModelArgs args = model;
      args.batch = batch;
      graphs.push_back(load_model_from(args));
    }
  }

  std::vector<Precision> precisions;
  for (const std::string& name : options.precisions)
    precisions.push_back(precision_from(name));
  // Without --precision LLM serving takes bf16 (fp16 on a device without it, in compare_row),
  // anything else fp32.
  if (!precisions.empty()) {
    request.workload.serving_default_precision = false;
  } else {
    precisions.push_back(request.workload.serving_default_precision ? Precision::kBf16
                                                                    : Precision::kFp32);
  }

  const RuntimeTable runtimes = load_runtime_table(options.workload.runtime_files);
  if (!spec.runtime.empty()) request.workload.runtime = runtimes.get(spec.runtime);
  request.run = spec.run;
  request.price_per_hour_usd = spec.price_per_hour_usd;
  request.model_file = options.model.path;
  if (serving) {
    request.serving = options.serving.request();
    request.serving_graph = serving_graphs(options.model);
  }
  const CompareSort sort = parse_compare_sort(options.sort).value_or(CompareSort::kTime);
  const CompareTable result = compare_devices(graphs, devices, table, precisions, request, sort);
  fmt::print("{}", compare_formats().render(options.format, result));
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto options = std::make_shared<CompareOptions>();
  CLI::App* sub = app.add_subcommand(
      "compare", "One model on many devices: time, throughput, memory, fit, cost, energy");
  sub->add_option("model", options->model.path,
                  "Model file (capcalc JSON, ONNX or a Hugging Face config.json)")
      ->required();
  sub->add_option("--set", options->model.sets,
                  "Set a model dimension, e.g. --set seq=2048 (repeatable)");
  one_of(
      sub->add_option("--causal", options->model.causal, "Count causal attention as full or half"),
      causal_counting_names())
      ->capture_default_str();
  add_mtp_option(*sub, options->model.mtp_layers);
  sub->add_option("-g,--hw,--gpu,--device", options->devices,
                  "Devices to compare, comma-separated ids or aliases (A100,H100,T4)")
      ->delimiter(',');
  one_of(sub->add_option("--type", options->type, "Every device of this type"),
         device_type_names());
  sub->add_flag("--all", options->all, "Every device in the table");
  add_hardware_options(*sub, options->hardware);
  one_of(sub->add_option("--sort", options->sort,
                         "Order of rows (unknown values last): table, time, throughput, cost, "
                         "memory (most to spare first), energy"),
         compare_sort_names())
      ->capture_default_str();
  WorkloadArgs& workload = options->workload;
  one_of(sub->add_option("-m,--mode", workload.mode,
                         "inference (a forward pass) or training (a step)"),
         mode_names())
      ->capture_default_str();
  one_of(sub->add_option("-p,--precision", options->precisions,
                         "Number format (default fp32); a comma-separated list is a sweep")
             ->delimiter(','),
         precision_names());
  whole_number(sub->add_option("-b,--batch", options->batches,
                               "Batch size; a comma-separated list (1,8,64) is a sweep")
                   ->delimiter(','));
  one_of(sub->add_option("--profile", workload.profile,
                         "eager, graph, compiled or inductor; default: compiled for ONNX models, "
                         "else the device type's"),
         profile_names());
  add_runtime_options(*sub, workload.runtime, workload.runtime_files);
  add_fp8_recipe_option(*sub, workload.fp8_recipe);
  add_optimizer_option(*sub, workload.optimizer);
  add_parallel_options(*sub, workload);
  add_pipeline_options(*sub, workload);
  add_input_rate_option(*sub, workload);
  add_run_size_options(*sub, workload.run);
  number_above(sub->add_option("--price-per-hour", workload.price_per_hour_usd,
                               "USD per device-hour for every device (default: the table's "
                               "prices)"),
               0, kMaxPricePerHourUsd);
  add_format_option(*sub, options->format, compare_formats());
  add_serving_options(*sub, options->serving,
                      "LLM serving: prompt tokens per sequence; each row serves --batch sequences "
                      "(TTFT, request time, generated tokens/s, cost per 1M tokens)");
  add_weight_precision_options(*sub, workload.weight_precision, workload.expert_weight_precision);
  add_kv_precision_option(*sub, workload.kv_precision);
  sub->callback([options] { run_compare(*options); });
}

}  // namespace capcalc::cli
