#include "capcalc/compare.hpp"

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
  std::string mode = "inference";
  std::vector<std::string> precisions;
  std::vector<std::int64_t> batches;
  std::string profile;
  std::string runtime;
  std::vector<std::string> runtime_files;
  std::string optimizer;  // Empty: Adam.
  std::int64_t device_count = 1;
  std::int64_t tensor_parallel = 1;
  std::int64_t pipeline_parallel = 1;
  std::int64_t micro_batches = 1;
  std::int64_t virtual_stages = 1;
  int zero_stage = 0;
  RunSize run;
  std::optional<double> price_per_hour;
  std::string format;  // --format; add_format_option sets the default (formats.hpp).
  ServingArgs serving;
  std::string weight_precision;
  std::string kv_precision;
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
  check_kv_precision(options.kv_precision, options.serving);
  // Serving rows' graphs are prefills: the prompt is the sequence.
  const bool serving = options.serving.requested();
  const ModelArgs model = serving ? prefill_args(options.model, options.serving) : options.model;
  const HardwareTable table = load_table(options.hardware);
  const std::vector<const Device*> devices = pick_devices(options, table);
  std::vector<Graph> graphs;
  if (options.batches.empty()) {
    graphs.push_back(load_model_from(model));
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
  if (precisions.empty()) precisions.push_back(Precision::kFp32);

  CompareRequest request;
  request.workload.mode = options.mode == "training" ? Mode::kTraining : Mode::kInference;
  if (!options.profile.empty()) request.workload.profile = parse_profile(options.profile);
  if (!options.runtime.empty()) {
    request.workload.runtime = load_runtime_table(options.runtime_files).get(options.runtime);
  }
  request.workload.optimizer = optimizer_from(options.optimizer, request.workload.mode);
  set_parallelism(request.workload, options.device_count, options.tensor_parallel,
                  options.pipeline_parallel, options.micro_batches, options.zero_stage,
                  options.virtual_stages);
  request.run = options.run;
  request.price_per_hour_usd = options.price_per_hour;
  request.model_file = options.model.path;
  if (!options.weight_precision.empty()) {
    request.workload.weight_precision = precision_from(options.weight_precision);
  }
  if (!options.kv_precision.empty()) {
    request.workload.kv_precision = precision_from(options.kv_precision);
  }
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
      {"full", "half"})
      ->capture_default_str();
  sub->add_option("-g,--hw,--gpu,--device", options->devices,
                  "Devices to compare, comma-separated ids or aliases (A100,H100,T4)")
      ->delimiter(',');
  one_of(sub->add_option("--type", options->type, "Every device of this type"),
         {"cpu", "gpu", "tpu", "accelerator"});
  sub->add_flag("--all", options->all, "Every device in the table");
  add_hardware_options(*sub, options->hardware);
  one_of(sub->add_option("--sort", options->sort,
                         "Order of rows (unknown values last): table, time, throughput, cost, "
                         "memory (most to spare first), energy"),
         {"table", "time", "throughput", "cost", "memory", "energy"})
      ->capture_default_str();
  one_of(sub->add_option("-m,--mode", options->mode,
                         "inference (a forward pass) or training (a step)"),
         {"inference", "training"})
      ->capture_default_str();
  one_of(sub->add_option("-p,--precision", options->precisions,
                         "Number format (default fp32); a comma-separated list is a sweep")
             ->delimiter(','),
         precision_names());
  whole_number(sub->add_option("-b,--batch", options->batches,
                               "Batch size; a comma-separated list (1,8,64) is a sweep")
                   ->delimiter(','));
  one_of(sub->add_option("--profile", options->profile,
                         "eager, graph, compiled or inductor; default: compiled for ONNX models, "
                         "else the device type's"),
         profile_names());
  add_runtime_options(*sub, options->runtime, options->runtime_files);
  add_optimizer_option(*sub, options->optimizer);
  add_parallel_options(*sub, options->device_count, options->tensor_parallel, options->zero_stage);
  add_pipeline_options(*sub, options->pipeline_parallel, options->micro_batches,
                       options->virtual_stages);
  add_run_size_options(*sub, options->run);
  number_above(sub->add_option("--price-per-hour", options->price_per_hour,
                               "USD per device-hour for every device (default: the table's "
                               "prices)"),
               0, kMaxPricePerHourUsd);
  add_format_option(*sub, options->format, compare_formats());
  add_serving_options(*sub, options->serving,
                      "LLM serving: prompt tokens per sequence; each row serves --batch sequences "
                      "(TTFT, request time, generated tokens/s, cost per 1M tokens)");
  one_of(sub->add_option("--weight-precision", options->weight_precision,
                         "Weight storage if it differs (int4/int8 weight-only quantisation)"),
         precision_names());
  add_kv_precision_option(*sub, options->kv_precision);
  sub->callback([options] { run_compare(*options); });
}

}  // namespace capcalc::cli
