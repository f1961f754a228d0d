#include <memory>
#include <optional>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/report.hpp"

#include "commands.hpp"

namespace capcalc::cli {
namespace {

struct EstimateOptions {
  ModelArgs model;
  HardwareArgs hardware;
  std::string device;
  std::string precision = "fp32";
  std::string mode = "inference";
  std::string profile;  // Empty: the device type's default.
  std::string sparsity = "dense";
  std::string optimizer = "adam";
  std::int64_t devices = 1;
  std::optional<double> dataset_size;
  std::optional<double> epochs;
  std::optional<double> tokens;
  std::optional<double> price_per_hour;
  std::string format = "table";
  std::size_t top = 10;
  bool explain = false;
  bool checkpointing = false;
  std::optional<std::int64_t> prompt_tokens;
  std::optional<std::int64_t> output_tokens;
  std::string weight_precision;
  std::string kv_precision;
};

// Samples in the training run, from --dataset-size x --epochs or --tokens / seq.
std::optional<double> run_samples(const EstimateOptions& options, const Graph& graph) {
  if (options.tokens) {
    if (options.dataset_size) throw Error({}, "give --tokens or --dataset-size, not both");
    const auto seq = graph.dims.find("seq");
    if (seq == graph.dims.end()) {
      throw Error({options.model.path},
                  "--tokens needs a model with a \"seq\" dimension (tokens per sample)");
    }
    return *options.tokens / static_cast<double>(seq->second);
  }
  if (options.dataset_size) return *options.dataset_size * options.epochs.value_or(1);
  if (options.epochs) throw Error({}, "--epochs needs --dataset-size");
  return std::nullopt;
}

void run_estimate(const EstimateOptions& options) {
  const HardwareTable table = load_table(options.hardware);
  const Device& device = table.get(options.device);
  // Serving: the estimate's graph is the prefill (seq = the prompt).
  const bool serving_request = options.prompt_tokens || options.output_tokens;
  ModelArgs model_args = options.model;
  if (serving_request) {
    if (load_model_from(options.model).dims.count("seq") == 0) {
      throw Error({options.model.path},
                  "--prompt-tokens needs a model with a \"seq\" dimension (a language model)");
    }
    model_args.sets.push_back("seq=" + std::to_string(options.prompt_tokens.value_or(512)));
  }
  const Graph graph = load_model_from(model_args);
  Workload workload;
  workload.precision = precision_from(options.precision);
  workload.mode = options.mode == "training" ? Mode::kTraining : Mode::kInference;
  if (!options.profile.empty()) workload.profile = parse_profile(options.profile);
  workload.sparsity = options.sparsity == "2:4"            ? Sparsity::k2of4
                      : options.sparsity == "unstructured" ? Sparsity::kUnstructured
                                                           : Sparsity::kDense;
  workload.optimizer = parse_optimizer(options.optimizer).value_or(Optimizer::kAdam);
  workload.devices = options.devices;
  workload.checkpointing = options.checkpointing;
  if (!options.weight_precision.empty())
    workload.weight_precision = precision_from(options.weight_precision);
  if (!options.kv_precision.empty()) workload.kv_precision = precision_from(options.kv_precision);
  if (options.checkpointing && workload.mode != Mode::kTraining) {
    throw Error({}, "--checkpointing is for training: add --mode training");
  }
  const PerformanceParams params = table.performance_for(device);
  const Estimate result = estimate(graph, device, params, workload);
  const GraphTotals totals = graph_totals(graph);
  ReportInput input{graph, totals, workload, &device, &params, &result};
  input.explain = options.explain;

  TrainingRun run;
  TrainingTotals run_totals;
  if (const std::optional<double> samples = run_samples(options, graph)) {
    if (workload.mode != Mode::kTraining) {
      throw Error({}, "--dataset-size and --tokens describe a training run: add --mode training");
    }
    run.samples = *samples;
    run.price_per_device_hour_usd = options.price_per_hour;
    if (!run.price_per_device_hour_usd && device.price) {
      run.price_per_device_hour_usd = device.price->usd_per_hour;
    }
    run.power_w = device.tdp_w;
    run_totals = training_totals(result, graph.batch, workload.devices, run);
    input.run = &run;
    input.training = &run_totals;
  }
  ServingRequest request;
  ServingEstimate serving;
  if (serving_request) {
    if (workload.mode != Mode::kInference) {
      throw Error({}, "--prompt-tokens and --output-tokens describe serving: use --mode inference");
    }
    request.prompt_tokens = options.prompt_tokens.value_or(512);
    request.output_tokens = options.output_tokens.value_or(128);
    ModelArgs args = options.model;
    serving = estimate_serving(
        [&](std::int64_t seq, std::int64_t cached) {
          ModelArgs shaped = args;
          shaped.sets.push_back("seq=" + std::to_string(seq));
          return load_model_from(shaped, cached);
        },
        device, params, workload, request);
    input.request = &request;
    input.serving = &serving;
  }
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
  add_hardware_options(*sub, options->hardware);
  sub->add_option("-p,--precision", options->precision,
                  "Number format of weights, activations and math")
      ->check(CLI::IsMember(precision_names()))
      ->capture_default_str();
  sub->add_option("-m,--mode", options->mode, "inference (a forward pass) or training (a step)")
      ->check(CLI::IsMember({"inference", "training"}))
      ->capture_default_str();
  sub->add_option("--profile", options->profile,
                  "eager (framework, one kernel per layer) or compiled (TensorRT, torch.compile, "
                  "XLA: fused); default: the device type's")
      ->check(CLI::IsMember({"eager", "compiled"}));
  sub->add_option("--sparsity", options->sparsity,
                  "2:4 (structured, where the hardware supports it) or unstructured (no speedup)")
      ->check(CLI::IsMember({"dense", "2:4", "unstructured"}))
      ->capture_default_str();
  sub->add_option("--optimizer", options->optimizer, "Training optimizer")
      ->check(CLI::IsMember({"sgd", "momentum", "adam", "adamw"}))
      ->capture_default_str();
  sub->add_option("--devices", options->devices, "Data-parallel devices (ideal scaling)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--dataset-size", options->dataset_size, "Training run: samples per epoch")
      ->check(CLI::PositiveNumber);
  sub->add_option("--epochs", options->epochs, "Training run: epochs (default 1)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--tokens", options->tokens,
                  "Training run: total tokens (samples = tokens / seq)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--price-per-hour", options->price_per_hour,
                  "USD per device-hour (default: the table's indicative price)")
      ->check(CLI::PositiveNumber);
  sub->add_option("-f,--format", options->format, "Output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  sub->add_option("--top", options->top, "How many of the heaviest layers to list")
      ->capture_default_str();
  sub->add_option("--prompt-tokens", options->prompt_tokens,
                  "LLM serving: prompt tokens per sequence (prefill); --batch is the sequences")
      ->check(CLI::PositiveNumber);
  sub->add_option("--output-tokens", options->output_tokens,
                  "LLM serving: generated tokens per sequence (decode)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--weight-precision", options->weight_precision,
                  "Weight storage if it differs (int4/int8 weight-only quantisation)")
      ->check(CLI::IsMember(precision_names()));
  sub->add_option("--kv-precision", options->kv_precision,
                  "KV cache storage (default: activations')")
      ->check(CLI::IsMember(precision_names()));
  sub->add_flag("--checkpointing", options->checkpointing,
                "Training: keep only each top-level block's output, recompute the rest");
  sub->add_flag("--explain", options->explain,
                "Show the formulas and assumptions behind each figure");
  sub->callback([options] { run_estimate(*options); });
}

}  // namespace capcalc::cli
