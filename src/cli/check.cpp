#include <memory>
#include <optional>

#include <fmt/format.h>

#include "capcalc/budget.hpp"
#include "capcalc/error.hpp"
#include "capcalc/report_compare.hpp"

#include "commands.hpp"
#include "formats.hpp"
#include "output_file.hpp"
#include "usage.hpp"
#include "workload_args.hpp"

namespace capcalc::cli {
namespace {

struct CheckOptions {
  ModelArgs model;
  HardwareArgs hardware;
  std::string budget;
  std::vector<std::string> devices;
  WorkloadArgs workload;  // Its runtime files serve --budget's runtimes too.
  // Limits as written; parsed by the library's unit parsers.
  std::vector<std::pair<LimitKind, std::string>> limits;
  bool must_fit = false;
  ServingArgs serving;
  std::string format;  // --format; add_format_option sets the default (formats.hpp).
  std::string output;
};

// The limits given as flags, in the order of limit_names().
std::vector<Limit> flag_limits(const CheckOptions& options) {
  std::vector<Limit> out;
  for (const auto& [kind, text] : options.limits) {
    try {
      out.push_back(parse_limit(kind, text));
    } catch (const Error& e) {
      std::string flag = "--" + std::string(limit_name(kind));
      for (char& c : flag)
        c = c == '_' ? '-' : c;
      throw Error({}, fmt::format("{}: {}", flag, e.message()));
    }
  }
  if (options.must_fit) out.push_back(parse_limit(LimitKind::kMustFit, "true"));
  return out;
}

CheckReport check_flags(const CheckOptions& options, const HardwareTable& table) {
  if (options.devices.empty()) throw Error({}, "check MODEL needs --hw DEVICE[,DEVICE...]");
  const std::vector<Limit> limits = flag_limits(options);
  if (limits.empty()) {
    throw Error({},
                "no limits: give --max-latency, --min-throughput, --max-memory, --max-cost, "
                "--max-train-time, --max-params, --max-macs, --max-ttft or --must-fit");
  }
  const WorkloadSpec spec = with_serving(options.workload, options.serving);
  CompareRequest request;
  request.workload = workload_from(spec);
  const RuntimeTable runtimes = load_runtime_table(options.workload.runtime_files);
  if (!spec.runtime.empty()) request.workload.runtime = runtimes.get(spec.runtime);
  request.run = spec.run;
  request.price_per_hour_usd = spec.price_per_hour_usd;
  request.model_file = options.model.path;
  const bool serving = options.serving.requested();
  if (serving) {
    request.serving = options.serving.request();
    request.serving_graph = serving_graphs(options.model);
  }
  std::string batch_note;
  const Graph graph = load_model_from(
      serving ? prefill_args(options.model, options.serving)
              : training_batch_or_given(options.model, request.workload, batch_note));
  warn_training_batch(batch_note, graph);
  CheckReport report;
  for (const std::string& name : options.devices) {
    const Device& device = table.get(name);
    for (CheckResult& r :
         check_limits(graph, device, table.performance_for(device),
                      precision_on(request.workload, device), request, limits, graph.name)) {
      report.results.push_back(std::move(r));
    }
  }
  return report;
}

int run_check(const CheckOptions& options) {
  const bool has_model = !options.model.path.empty();
  const bool has_budget = !options.budget.empty();
  if (has_model == has_budget) throw Error({}, "give a MODEL with limit flags, or --budget FILE");
  if (has_budget && (!options.limits.empty() || options.must_fit || !options.devices.empty())) {
    throw Error({}, "--budget FILE holds the devices and limits: drop --hw and the limit flags");
  }
  if (has_budget && options.model.mtp_layers > 0) {
    throw Error({}, "--mtp-layers goes with a MODEL; a budget file says \"mtp_layers\"");
  }
  const HardwareTable table = load_table(options.hardware);
  const CheckReport report =
      has_budget ? [&] {
        const RuntimeTable runtimes = load_runtime_table(options.workload.runtime_files);
        return check_budgets(load_budget(options.budget), table, &runtimes);
      }()
                 : check_flags(options, table);
  const bool color = options.output.empty() && color_enabled(stdout);
  write_output(options.output, check_formats().render(options.format, {report, color}));
  if (!report.passed()) {
    for (const CheckResult& r : report.results) {
      if (!r.passed) {
        fmt::print(stderr, "capcalc: check: {} on {}: {}\n", r.budget, r.device, r.message);
      }
    }
  }
  return report.passed() ? 0 : 1;
}

}  // namespace

void add_check_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* sub = app.add_subcommand(
      "check", "Budget gates for CI: exit 1 if a model exceeds a limit on a device");
  sub->add_option("model", options->model.path,
                  "Model file (capcalc JSON, ONNX or a Hugging Face config.json); or use --budget");
  sub->add_option("--budget", options->budget,
                  "Budget file (JSON): models x devices x limits (see docs/cli.md)");
  whole_number(sub->add_option("-b,--batch", options->model.batch, "Batch size"));
  sub->add_option("--set", options->model.sets, "Set a model dimension, e.g. --set seq=2048");
  add_mtp_option(*sub, options->model.mtp_layers);
  sub->add_option("-g,--hw,--gpu,--device", options->devices,
                  "Devices, comma-separated ids or aliases")
      ->delimiter(',');
  add_hardware_options(*sub, options->hardware);
  WorkloadArgs& workload = options->workload;
  one_of(sub->add_option("-p,--precision", workload.precision,
                         "Number format (default: bf16 for LLM serving, --prompt-tokens, fp16 on "
                         "a device without bf16; else fp32)"),
         precision_names());
  one_of(sub->add_option("-m,--mode", workload.mode, "inference or training"), mode_names())
      ->capture_default_str();
  one_of(sub->add_option("--profile", workload.profile,
                         "eager, graph, compiled or inductor; default: compiled for ONNX models, "
                         "else the device type's"),
         profile_names());
  add_runtime_options(*sub, workload.runtime, workload.runtime_files);
  one_of(sub->add_option("--sparsity", workload.sparsity,
                         "2:4 (structured, where the hardware supports it) or unstructured (no "
                         "speedup)"),
         sparsity_names());
  add_fp8_recipe_option(*sub, workload.fp8_recipe);
  add_optimizer_option(*sub, workload.optimizer);
  add_weight_precision_options(*sub, workload.weight_precision, workload.expert_weight_precision);
  sub->add_flag("--checkpointing", workload.checkpointing,
                "Training: keep only each top-level block's output, recompute the rest");
  add_checkpoint_layers_option(*sub, workload.checkpoint_layers);
  add_recompute_option(*sub, workload.recompute);
  add_lora_options(*sub, workload.lora_rank, workload.lora_targets);
  add_kv_precision_option(*sub, workload.kv_precision);
  add_parallel_options(*sub, workload);
  add_pipeline_options(*sub, workload);
  add_input_rate_option(*sub, workload);
  add_run_size_options(*sub, workload.run);
  number_above(
      sub->add_option("--price-per-hour", workload.price_per_hour_usd, "USD per device-hour"), 0,
      kMaxPricePerHourUsd);
  struct LimitFlag {
    LimitKind kind;
    const char* flag;
    const char* help;
  };
  static constexpr LimitFlag kFlags[] = {
      {LimitKind::kMaxLatency, "--max-latency", "Latency or step time, e.g. 20ms"},
      {LimitKind::kMinThroughput, "--min-throughput",
       "Samples per second, e.g. 1000/s; for a language model \"3k tokens/s\" or "
       "\"2 sequences/s\""},
      {LimitKind::kMaxMemory, "--max-memory", "Memory on one device, e.g. 16GiB or 16GB"},
      {LimitKind::kMaxCost, "--max-cost",
       "USD for the training run, or per 1M samples without one, e.g. 500USD"},
      {LimitKind::kMaxTrainTime, "--max-train-time", "Training run time, e.g. 3d"},
      {LimitKind::kMaxParams, "--max-params", "Parameters, e.g. 100M"},
      {LimitKind::kMaxMacs, "--max-macs", "Forward MACs per sample, e.g. 5G"},
      {LimitKind::kMaxTtft, "--max-ttft",
       "LLM serving (--prompt-tokens): time to first token, e.g. 500ms"},
  };
  for (const LimitFlag& flag : kFlags) {
    const LimitKind kind = flag.kind;
    sub->add_option_function<std::string>(
        flag.flag,
        [options, kind](const std::string& text) { options->limits.emplace_back(kind, text); },
        flag.help);
  }
  sub->add_flag("--must-fit", options->must_fit, "The model must fit in one device's memory");
  add_serving_options(*sub, options->serving,
                      "LLM serving: prompt tokens per sequence; latency is then the request's "
                      "time, throughput generated tokens/s, cost per 1M generated tokens");
  add_format_option(*sub, options->format, check_formats());
  sub->add_option("-o,--output", options->output, "Write the report to FILE instead of stdout");
  sub->callback([options, &exit_code] { exit_code = run_check(*options); });
}

}  // namespace capcalc::cli
