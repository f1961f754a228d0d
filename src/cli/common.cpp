#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <unistd.h>

#include <fmt/format.h>
#include <sys/stat.h>

#include "capcalc/error.hpp"

#include "commands.hpp"
#include "limits.hpp"
#include "usage.hpp"

namespace capcalc::cli {
namespace {

// stat(), not open(): a FIFO in the data directory must not block the lookup.
bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::string executable_dir() {
  std::string buffer(4096, '\0');
  const ssize_t length = readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (length <= 0) return "";
  buffer.resize(static_cast<std::size_t>(length));
  const std::size_t slash = buffer.rfind('/');
  return slash == std::string::npos ? "" : buffer.substr(0, slash);
}

}  // namespace

void add_mtp_option(CLI::App& sub, std::int64_t& modules) {
  whole_number(sub.add_option("--mtp-layers", modules,
                              "Hugging Face decoders, training: append N multi-token-prediction "
                              "modules (Megatron-Core's mtp_num_layers, DeepSeek-V3's MTP: a "
                              "projection, one more decoder layer and the shared output head "
                              "each)"),
               1, kMaxMtpLayers);
}

void add_model_options(CLI::App& sub, ModelArgs& args) {
  sub.add_option("model", args.path,
                 "Model file: capcalc JSON, a Hugging Face config.json, ONNX (.onnx) or ONNX as "
                 "text (.onnxtxt or .onnxtext, .textproto, .pbtxt)")
      ->required();
  whole_number(
      sub.add_option("-b,--batch", args.batch, "Batch size: sets the model's \"batch\" dimension"));
  sub.add_option("--set", args.sets, "Set a model dimension, e.g. --set seq=2048 (repeatable)");
  one_of(sub.add_option("--causal", args.causal,
                        "Count causal attention as full (every pair, as dense kernels do) or half"),
         causal_counting_names())
      ->capture_default_str();
  sub.add_option("--input-shape", args.input_shapes,
                 "ONNX: set a whole input shape, e.g. --input-shape pixel_values=1x3x224x224 "
                 "(repeatable)");
  sub.add_option("--omit-input", args.omitted_inputs,
                 "Run without an optional input, e.g. --omit-input pixel_values for a text-only "
                 "prompt to a multimodal model: the layers that read only it do no work "
                 "(repeatable)");
  add_mtp_option(sub, args.mtp_layers);
  sub.add_flag("--strict", args.strict,
               "ONNX: an operator capcalc does not know is an error, not a zero-count layer");
}

namespace {

// The extensions load_model reads as ONNX, binary or text.
bool is_onnx_path(const std::string& path) {
  for (std::string_view suffix : {".onnx", ".onnxtxt", ".onnxtext", ".textproto", ".pbtxt"}) {
    if (path.size() >= suffix.size() &&
        path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

Graph load_model_from(const ModelArgs& args, std::int64_t kv_cache_length) {
  ModelOptions options;
  for (const std::string& set : args.sets) {
    const std::size_t eq = set.find('=');
    const std::string name = set.substr(0, eq);
    if (eq == std::string::npos || name.empty()) {
      throw Error({}, fmt::format("--set expects NAME=VALUE, got \"{}\"", set));
    }
    const std::string value = set.substr(eq + 1);
    char* end = nullptr;
    errno = 0;
    const long long parsed = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno == ERANGE || parsed <= 0) {
      throw Error({},
                  fmt::format("--set {}: expected a positive integer, got \"{}\"", name, value));
    }
    options.dims[name] = parsed;
  }
  if (args.batch) options.dims["batch"] = *args.batch;
  options.mtp_layers = args.mtp_layers;
  options.omitted_inputs.insert(args.omitted_inputs.begin(), args.omitted_inputs.end());
  options.counting.causal = parse_causal_counting(args.causal).value_or(CausalCounting::kFull);
  options.counting.kv_cache_length = kv_cache_length;
  for (const std::string& item : args.input_shapes) {
    const std::size_t eq = item.rfind('=');
    const std::string name = item.substr(0, eq);
    std::vector<std::int64_t> shape;
    bool ok = eq != std::string::npos && !name.empty() && eq + 1 < item.size();
    for (std::size_t start = eq + 1; ok && start <= item.size();) {
      const std::size_t x = std::min(item.find('x', start), item.size());
      const std::string dim = item.substr(start, x - start);
      char* end = nullptr;
      errno = 0;
      const long long parsed = std::strtoll(dim.c_str(), &end, 10);
      ok = !dim.empty() && *end == '\0' && errno != ERANGE && parsed > 0;
      shape.push_back(parsed);
      start = x + 1;
    }
    if (!ok) {
      throw Error({}, fmt::format("--input-shape expects NAME=DxDx..., positive sizes (e.g. "
                                  "pixel_values=1x3x224x224), got \"{}\"",
                                  item));
    }
    options.input_shapes[name] = shape;
  }
  options.strict = args.strict;
  const std::string path = resolve_model_path(args.path);
  if (args.strict && !is_onnx_path(path)) {
    throw Error({path},
                "--strict is for ONNX models: a capcalc JSON model or Hugging Face config "
                "with an unknown operator is always an error");
  }
  Graph graph = load_model(path, options);
  // Causal attention keeps a KV cache per token (counts.kv_cache_per_token): without such a
  // layer, --causal half would change nothing.
  if (options.counting.causal == CausalCounting::kHalf &&
      std::none_of(graph.layers.begin(), graph.layers.end(),
                   [](const Layer& l) { return l.counts.kv_cache_per_token > 0; })) {
    throw Error({path},
                "--causal half counts causal attention's pairs: the model has no causal "
                "attention layer");
  }
  for (const std::string& warning : graph.warnings)
    fmt::print(stderr, "warning: {}\n", warning);
  if (!graph.unknown_ops.empty()) {
    std::int64_t nodes = 0;
    std::vector<std::string> parts;
    for (const UnknownOperator& op : graph.unknown_ops) {
      nodes += op.nodes;
      parts.push_back(fmt::format("{} ({})", op.op, op.nodes));
    }
    fmt::print(stderr, "warning: {} node{} of unknown operators counted as zero: {}\n", nodes,
               nodes == 1 ? "" : "s", fmt::join(parts, ", "));
  }
  if (args.last_token_logits) last_token_logits(graph);
  return graph;
}

ServingRequest ServingArgs::request() const {
  // Without a prompt the generated tokens would follow a made-up one: say so instead.
  if (!prompt_tokens) {
    throw Error({}, "--output-tokens needs --prompt-tokens (the prompt's length in tokens)");
  }
  ServingRequest request;
  request.prompt_tokens = *prompt_tokens;
  request.output_tokens = output_tokens.value_or(request.output_tokens);
  return request;
}

void add_serving_options(CLI::App& sub, ServingArgs& args, const std::string& prompt_help) {
  whole_number(sub.add_option("--prompt-tokens", args.prompt_tokens, prompt_help));
  whole_number(sub.add_option("--output-tokens", args.output_tokens,
                              "LLM serving: generated tokens per sequence (decode; default 128); "
                              "needs --prompt-tokens"));
}

ModelArgs prefill_args(const ModelArgs& model, const ServingArgs& serving) {
  std::optional<Graph> as_given;
  try {
    as_given = load_model_from(model);
  } catch (const Error&) {
  }
  ModelArgs prefill = model;
  prefill.sets.push_back("seq=" + std::to_string(serving.request().prompt_tokens));
  prefill.last_token_logits = true;
  const Graph& probe = as_given ? *as_given : load_model_from(prefill);
  if (probe.dims.count("seq") == 0) {
    throw Error({model.path},
                "--prompt-tokens needs a model with a \"seq\" dimension (a language model)");
  }
  return prefill;
}

CompareServingBuilder serving_graphs(const ModelArgs& model) {
  return [model](std::int64_t batch, std::int64_t seq, std::int64_t cached) {
    ModelArgs shaped = model;
    if (batch != 1 || shaped.batch) shaped.batch = batch;
    shaped.sets.push_back("seq=" + std::to_string(seq));
    return load_model_from(shaped, cached);
  };
}

std::string count_overflow_message(const CLI::App& app) {
  static const std::vector<std::string> kScaling = {
      "--batch",         "--set",           "--input-shape",     "--prompt-tokens",
      "--output-tokens", "--devices",       "--tensor-parallel", "--pipeline-parallel",
      "--micro-batches", "--virtual-stages"};
  std::vector<std::string> flags;
  std::string file;
  for (const CLI::App* sub : app.get_subcommands()) {
    for (const CLI::Option* option : sub->get_options()) {
      if (option->count() == 0) continue;
      const std::string name = option->get_name();
      if (std::find(kScaling.begin(), kScaling.end(), name) != kScaling.end()) {
        for (const std::string& value : option->results())
          flags.push_back(name + " " + value);
      } else if ((name == "model" || name == "--budget") && file.empty()) {
        file = option->results().front();
      }
    }
  }
  const std::string message = "a count does not fit in a 64-bit integer";
  if (!flags.empty()) return fmt::format("{}: {}", fmt::join(flags, ", "), message);
  return file.empty() ? message : file + ": " + message;
}

bool color_enabled(std::FILE* stream) {
  const auto set = [](const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0';
  };
  if (set("NO_COLOR")) return false;
  if (set("CLICOLOR_FORCE")) return std::string(std::getenv("CLICOLOR_FORCE")) != "0";
  const char* term = std::getenv("TERM");
  return isatty(fileno(stream)) == 1 && !(term != nullptr && std::string(term) == "dumb");
}

std::string data_dir() {
  if (const char* dir = std::getenv("CAPCALC_DATA_DIR"); dir != nullptr && *dir != '\0') return dir;
  const std::string installed = executable_dir() + "/../share/capcalc";
  if (exists(installed + "/hardware.json")) return installed;
  return CAPCALC_SOURCE_DATA_DIR;
}

std::string models_dir(const std::string& given) {
  if (given.empty()) return data_dir() + "/models";
  struct stat info {};
  if (::stat(given.c_str(), &info) != 0) {
    throw Error({}, fmt::format("--models {}: no such directory", given));
  }
  if (!S_ISDIR(info.st_mode)) {
    throw Error({},
                fmt::format("--models {}: not a directory (the folder of the model files)", given));
  }
  return given;
}

std::string zoo_index_path() {
  return data_dir() + "/zoo.json";
}

std::string resolve_model_path(const std::string& model) {
  struct stat info {};
  if (model.empty() || model.find('/') != std::string::npos || ::stat(model.c_str(), &info) == 0 ||
      !exists(zoo_index_path())) {
    return model;  // A file or a path: the loader opens it (or says why not).
  }
  const Zoo zoo = load_zoo(zoo_index_path());
  const bool json = model.size() > 5 && model.compare(model.size() - 5, 5, ".json") == 0;
  const std::string name = json ? model.substr(0, model.size() - 5) : model;
  if (const ZooModel* found = zoo.find(name)) return found->path;
  if (model.find('.') != std::string::npos) return model;  // A file name: "cannot open file".
  std::string message =
      fmt::format("{}: no such file, and no model of that name in the zoo", model);
  if (auto guess = zoo.suggest(name)) message += fmt::format("; did you mean \"{}\"?", *guess);
  throw Error({}, message + " (capcalc models list)");
}

std::optional<ZooModel> zoo_model_for(const std::string& model) {
  if (!exists(zoo_index_path())) return std::nullopt;
  const std::string path = resolve_model_path(model);
  const Zoo zoo = load_zoo(zoo_index_path());
  if (const ZooModel* found = zoo.find_file(path)) return *found;
  return std::nullopt;
}

std::string hardware_path(const std::string& flag) {
  return flag.empty() ? data_dir() + "/hardware.json" : flag;
}

void add_hardware_options(CLI::App& sub, HardwareArgs& args) {
  sub.add_option("--hardware", args.table, "Hardware table to use instead of the built-in one");
  sub.add_option("--hardware-file", args.files,
                 "Extra devices or overrides (same id replaces); repeatable. Also "
                 "$CAPCALC_HARDWARE_PATH, a ':'-separated list");
}

HardwareTable load_table(const HardwareArgs& args) {
  std::vector<std::string> overlays;
  if (const char* env = std::getenv("CAPCALC_HARDWARE_PATH"); env != nullptr) {
    const std::string list = env;
    std::size_t start = 0;
    while (start <= list.size()) {
      const std::size_t end = std::min(list.find(':', start), list.size());
      if (end > start) overlays.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  overlays.insert(overlays.end(), args.files.begin(), args.files.end());
  return load_hardware(hardware_path(args.table), overlays);
}

void add_runtime_options(CLI::App& sub, std::string& runtime, std::vector<std::string>& files) {
  CLI::Option* option =
      sub.add_option("--runtime", runtime,
                     "The runtime that runs the model (`capcalc runtimes list`): its profile and "
                     "its kernels per layer; the profile names are aliases");
  // A command that also takes --profile (plan and scale do not) takes one of the two.
  if (sub.get_option_no_throw("--profile") != nullptr) option->excludes("--profile");
  sub.add_option("--runtime-file", files,
                 "Extra runtimes or overrides (same id replaces); repeatable");
}

RuntimeTable load_runtime_table(const std::vector<std::string>& files) {
  return load_runtimes(data_dir() + "/runtimes.json", files);
}

std::optional<Runtime> runtime_from(const std::string& name, const std::vector<std::string>& files,
                                    const Device& device) {
  // Runtime files given without --runtime are still read: a bad one is an error, not ignored.
  const RuntimeTable table = load_runtime_table(files);
  if (name.empty()) return std::nullopt;
  const Runtime& runtime = table.get(name);
  if (!runtime.runs_on(device.type)) {
    std::vector<std::string_view> types;
    for (DeviceType type : runtime.device_types)
      types.push_back(device_type_name(type));
    throw Error({},
                fmt::format("{} does not run on a {} ({}); it runs on: {}", runtime.name,
                            device_type_name(device.type), device.name, fmt::join(types, ", ")));
  }
  return runtime;
}

std::optional<RangeTable> load_default_ranges() {
  const std::string path = data_dir() + "/ranges.json";
  if (!exists(path)) return std::nullopt;
  return load_ranges(path);
}

Precision precision_from(const std::string& name) {
  if (auto precision = parse_precision(name)) return *precision;
  throw Error({}, unknown_precision_message(name));
}

}  // namespace capcalc::cli
