// The CLI's subcommands and the options they share. Each subcommand has an add_ function
// that registers it and a run_ function that does the work; the library computes, these
// functions only parse flags, call it and print what it renders.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "capcalc/compare.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/model.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/ranges.hpp"
#include "capcalc/runtime.hpp"
#include "capcalc/zoo.hpp"

namespace capcalc::cli {

/// Options that pick and shape a model.
struct ModelArgs {
  std::string path;
  std::optional<std::int64_t> batch;
  std::vector<std::string> sets;  ///< "name=value"
  std::string causal = "full";
  std::vector<std::string> input_shapes;    ///< ONNX: "name=1x3x224x224"
  bool strict = false;                      ///< ONNX: unknown operators are an error.
  std::vector<std::string> omitted_inputs;  ///< Optional inputs this run leaves out.
  bool last_token_logits = false;           ///< LLM prefill: logits for the last token only.
  std::int64_t mtp_layers = 0;  ///< Hugging Face decoders: multi-token-prediction modules.
};

void add_model_options(CLI::App& sub, ModelArgs& args);
/// --mtp-layers: multi-token-prediction modules for a Hugging Face decoder (training).
void add_mtp_option(CLI::App& sub, std::int64_t& modules);
/// Loads the model; warns on stderr about operators counted as zero (ONNX).
/// `kv_cache_length`: LLM decode over that many cached tokens (CountOptions).
Graph load_model_from(const ModelArgs& args, std::int64_t kv_cache_length = 0);

/// LLM serving flags of estimate, compare and check: --prompt-tokens P, --output-tokens O.
struct ServingArgs {
  std::optional<std::int64_t> prompt_tokens;
  std::optional<std::int64_t> output_tokens;
  bool requested() const { return prompt_tokens || output_tokens; }
  /// The request (128 generated tokens by default). --output-tokens without --prompt-tokens is
  /// an error: it would serve a prompt nobody asked for.
  ServingRequest request() const;
};

/// `prompt_help` says what the command does with the prompt.
void add_serving_options(CLI::App& sub, ServingArgs& args, const std::string& prompt_help);
/// The prefill's model: `model` with "seq" the prompt, its logits the last token's
/// (last_token_logits). A model without a "seq" dimension is an
/// error naming the file; an ONNX export that leaves its sequence unset takes the prompt's.
ModelArgs prefill_args(const ModelArgs& model, const ServingArgs& serving);
/// The model at `batch` sequences of `seq` new tokens over `cached` ones (a model without a
/// "batch" dimension serves one sequence).
CompareServingBuilder serving_graphs(const ModelArgs& model);

/// The hardware table to read: --hardware, else $CAPCALC_DATA_DIR/hardware.json, else the
/// installed data next to the binary, else the source tree's data/.
std::string hardware_path(const std::string& flag);

/// Options that pick the hardware table and the user's additions to it.
struct HardwareArgs {
  std::string table;               ///< --hardware: replaces the built-in table.
  std::vector<std::string> files;  ///< --hardware-file (repeatable): merged on top.
};

void add_hardware_options(CLI::App& sub, HardwareArgs& args);
/// The table, with $CAPCALC_HARDWARE_PATH (a ':'-separated list) and then each
/// --hardware-file merged on top: an entry with the same id replaces the built-in one.
HardwareTable load_table(const HardwareArgs& args);

/// --runtime (excluding --profile, which must be added first) and --runtime-file.
void add_runtime_options(CLI::App& sub, std::string& runtime, std::vector<std::string>& files);

/// The runtime table (data/runtimes.json) with each --runtime-file merged on top.
RuntimeTable load_runtime_table(const std::vector<std::string>& files);
/// The runtime --runtime names, checked against the device type it runs on; unset when the
/// flag is empty.
std::optional<Runtime> runtime_from(const std::string& name, const std::vector<std::string>& files,
                                    const Device& device);

/// The prediction ranges of data/ranges.json; none where the data directory has no such file.
std::optional<RangeTable> load_default_ranges();

/// "--precision fp16" -> Precision (the flag's values are checked by one_of, usage.hpp).
Precision precision_from(const std::string& name);

void add_estimate_command(CLI::App& app);
void add_layers_command(CLI::App& app);
void add_hw_command(CLI::App& app);
void add_runtimes_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_probe_command(CLI::App& app);
/// `validate` sets `exit_code` to 1 when a --max-* limit is exceeded.
void add_validate_command(CLI::App& app, int& exit_code);
void add_compare_command(CLI::App& app);
/// `check` sets `exit_code` to 1 when a budget is exceeded.
void add_check_command(CLI::App& app, int& exit_code);
void add_roofline_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_serve_command(CLI::App& app, int& exit_code);
void add_plan_command(CLI::App& app);   ///< `capcalc plan` (src/cli/plan.cpp).
void add_scale_command(CLI::App& app);  ///< `capcalc scale` (src/cli/plan.cpp).
void add_models_command(CLI::App& app);

/// For a count that overflowed 64 bits in a total: "--batch 1099511627776: a count does not fit
/// in a 64-bit integer", naming the flags given to the parsed subcommand that scale counts
/// (batch, dims, shapes, tokens, parallelism), else its model or budget file.
std::string count_overflow_message(const CLI::App& app);

/// Whether to write ANSI colour to `stream`: never when $NO_COLOR is set (https://no-color.org),
/// always when $CLICOLOR_FORCE is set (and not "0"), else only on a terminal whose $TERM is not
/// "dumb".
bool color_enabled(std::FILE* stream);

/// The data directory: $CAPCALC_DATA_DIR, else the installed share/capcalc next to the binary,
/// else the source tree's data/.
std::string data_dir();

/// The folder of model files that --models names (data_dir()/models when empty); a path that is
/// not a directory is an error: "--models X: not a directory".
std::string models_dir(const std::string& given);

/// The zoo's index: data_dir()/zoo.json.
std::string zoo_index_path();
/// The file a model argument names: itself when it is a file or a path (has a '/'), else the
/// zoo model of that name ("resnet50", "resnet50.json"); a bare name that is neither is an error
/// with a "did you mean".
std::string resolve_model_path(const std::string& model);
/// The zoo's entry for a model argument (by name or the same file); nullptr if it is not one.
std::optional<ZooModel> zoo_model_for(const std::string& model);

}  // namespace capcalc::cli
