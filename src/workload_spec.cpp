#include "capcalc/workload_spec.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include <fmt/format.h>

#include "capcalc/hardware.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/units.hpp"

#include "json_view.hpp"
#include "limits.hpp"
#include "spellcheck.hpp"
#include "workload_spec_json.hpp"

namespace capcalc {
namespace {

// LoRA's targets: every linear layer but the output one, or attention's projections.
constexpr std::array<std::string_view, 2> kLoraTargets = {"all-linear", "attention"};

// An error about the spec, blamed on `key`: naming keys for the CLI, or at the key in its file
// with the keys quoted.
[[noreturn]] void fail(const SpecLocations* where, std::string_view key, std::string_view text) {
  const Error error = Error::naming_keys({}, text);
  if (where == nullptr) throw error;
  const auto it = where->keys.find(key);
  throw Error(it != where->keys.end() ? it->second : where->object,
              error.what_with([&](std::string_view k) {
                return fmt::format("\"{}\"", k == "devices" ? where->devices_key : k);
              }));
}

Precision precision_of(const std::string& name, std::string_view key, const SpecLocations* where) {
  const std::optional<Precision> parsed = parse_precision(name);
  if (!parsed)
    fail(where, key,
         fmt::format("`{}`: {}", key, Error::verbatim(unknown_precision_message(name))));
  return *parsed;
}

// The FP8 recipe: only with fp8 precision, which it scales.
void read_fp8_recipe(const WorkloadSpec& spec, const SpecLocations* where, Workload& w) {
  if (spec.fp8_recipe.empty()) return;
  const std::optional<Fp8Recipe> recipe = parse_fp8_recipe(spec.fp8_recipe);
  if (!recipe) {
    fail(where, "fp8_recipe",
         fmt::format("`fp8_recipe`: expected {}, got \"{}\"", quoted_choices(fp8_recipe_names()),
                     Error::verbatim(spec.fp8_recipe)));
  }
  if (w.precision != Precision::kFp8) {
    fail(where, "fp8_recipe",
         fmt::format("`fp8_recipe` scales FP8 tensors: not with `precision` {}",
                     precision_name(w.precision)));
  }
  w.fp8_recipe = *recipe;
}

// The names: precision, mode, profile, sparsity, FP8 recipe and optimizer.
void read_names(const WorkloadSpec& spec, const SpecLocations* where, Workload& w) {
  if (spec.precision.empty()) {
    w.serving_default_precision = spec.prompt_tokens.has_value();
    w.precision = w.serving_default_precision ? Precision::kBf16 : Precision::kFp32;
  } else {
    w.precision = precision_of(spec.precision, "precision", where);
  }
  const std::optional<Mode> mode = parse_mode(spec.mode);
  if (!mode) {
    fail(where, "mode",
         fmt::format("`mode`: expected {}, got \"{}\"", quoted_choices(mode_names()),
                     Error::verbatim(spec.mode)));
  }
  w.mode = *mode;
  if (!spec.profile.empty()) {
    w.profile = parse_profile(spec.profile);
    if (!w.profile) {
      fail(where, "profile",
           fmt::format("`profile`: {}", Error::verbatim(unknown_profile_message(spec.profile))));
    }
  }
  const std::optional<Sparsity> sparsity = parse_sparsity(spec.sparsity);
  if (!sparsity) {
    fail(where, "sparsity",
         fmt::format("`sparsity`: expected {}, got \"{}\"", quoted_choices(sparsity_names()),
                     Error::verbatim(spec.sparsity)));
  }
  w.sparsity = *sparsity;
  if (!spec.weight_precision.empty()) {
    w.weight_precision = precision_of(spec.weight_precision, "weight_precision", where);
  }
  if (!spec.expert_weight_precision.empty()) {
    w.expert_weight_precision =
        precision_of(spec.expert_weight_precision, "expert_weight_precision", where);
    if (w.mode == Mode::kTraining) {
      fail(where, "expert_weight_precision",
           "`expert_weight_precision` is for inference (weight-only quantised experts)");
    }
  }
  if (!spec.kv_precision.empty()) {
    w.kv_precision = precision_of(spec.kv_precision, "kv_precision", where);
  }
  w.strict_fp32 = !spec.allow_tf32;
  read_fp8_recipe(spec, where, w);
  if (spec.optimizer.empty()) return;
  if (w.mode != Mode::kTraining) {
    fail(where, "optimizer", "`optimizer` is for training: add `mode` training");
  }
  const std::optional<Optimizer> optimizer = parse_optimizer(spec.optimizer);
  if (!optimizer) {
    fail(where, "optimizer",
         fmt::format("`optimizer`: expected {}, got \"{}\"", quoted_choices(optimizer_names()),
                     Error::verbatim(spec.optimizer)));
  }
  w.optimizer = *optimizer;
}

void check_device_count(const SpecLocations* where, std::string_view key, std::int64_t devices) {
  static_assert(kMaxDevices == 10'000'000, "the message below");
  if (devices > kMaxDevices) {
    fail(where, key,
         fmt::format("`{}` gives {} devices, more than 10,000,000 (the limit)", key, devices));
  }
}

// A replica is tensor_parallel x pipeline_parallel devices: `devices` counts them all (1, the
// default: one replica), `data_parallel` the replicas.
void set_layout(const WorkloadSpec& spec, const SpecLocations* where, Workload& w) {
  const auto positive = [&](std::string_view key, std::int64_t value) {
    if (value < 1) fail(where, key, fmt::format("`{}` must be at least 1, got {}", key, value));
    return value;
  };
  w.tensor_parallel = positive("tensor_parallel", spec.tensor_parallel);
  w.pipeline_parallel = positive("pipeline_parallel", spec.pipeline_parallel);
  w.context_parallel = positive("context_parallel", spec.context_parallel);
  w.expert_parallel = positive("expert_parallel", spec.expert_parallel);
  w.micro_batches = positive("micro_batches", spec.micro_batches);
  w.virtual_stages = positive("virtual_stages", spec.virtual_stages);
  w.zero_stage = spec.zero_stage;
  std::int64_t replica = 0;
  if (__builtin_mul_overflow(w.tensor_parallel, w.pipeline_parallel, &replica)) {
    fail(where, "pipeline_parallel",
         fmt::format("`tensor_parallel` {} x `pipeline_parallel` {}: a count does not fit in a "
                     "64-bit integer",
                     w.tensor_parallel, w.pipeline_parallel));
  }
  if (__builtin_mul_overflow(replica, w.context_parallel, &replica)) {
    fail(where, "context_parallel",
         fmt::format("`context_parallel` {} x {} devices: a count does not fit in a 64-bit "
                     "integer",
                     w.context_parallel, replica / w.context_parallel));
  }
  const std::int64_t devices = positive("devices", spec.devices);
  if (spec.data_parallel) {
    if (devices != 1) {
      fail(where, "data_parallel",
           "give `devices` (in all) or `data_parallel` (replicas), not both");
    }
    const std::int64_t replicas = positive("data_parallel", *spec.data_parallel);
    if (__builtin_mul_overflow(replicas, replica, &w.devices)) {
      fail(where, "data_parallel",
           fmt::format("`data_parallel` {} x {} devices a replica: a count does not fit in a "
                       "64-bit integer",
                       replicas, replica));
    }
    check_device_count(where, "data_parallel", w.devices);
    return;
  }
  w.devices = devices == 1 ? replica : devices;
  check_device_count(where, devices == 1 ? "tensor_parallel" : "devices", w.devices);
  if (w.devices % replica != 0 && w.context_parallel > 1) {
    fail(where, "context_parallel",
         fmt::format("`devices` {} is not a multiple of `tensor_parallel` {} x "
                     "`pipeline_parallel` {} x `context_parallel` {} ({})",
                     devices, w.tensor_parallel, w.pipeline_parallel, w.context_parallel, replica));
  }
  if (w.devices % replica != 0) {
    if (w.pipeline_parallel == 1) {
      fail(where, "tensor_parallel",
           fmt::format("`devices` {} is not a multiple of `tensor_parallel` {}", devices,
                       w.tensor_parallel));
    }
    fail(where, "pipeline_parallel",
         fmt::format("`devices` {} is not a multiple of `tensor_parallel` {} x "
                     "`pipeline_parallel` {} ({})",
                     devices, w.tensor_parallel, w.pipeline_parallel, replica));
  }
}

// Expert parallelism splits the experts over devices that hold the same other weights.
void check_experts(const WorkloadSpec& spec, const SpecLocations* where, Workload& w) {
  // replicas x context_parallel (set_layout checked the division).
  const std::int64_t shards = w.devices / (w.tensor_parallel * w.pipeline_parallel);
  if (spec.expert_tensor_parallel) {
    const std::int64_t etp = *spec.expert_tensor_parallel;
    if (etp != 1 && etp != w.tensor_parallel) {
      fail(where, "expert_tensor_parallel",
           fmt::format("`expert_tensor_parallel` must be 1 (whole experts) or the "
                       "`tensor_parallel` {}, got {}",
                       w.tensor_parallel, etp));
    }
    w.expert_tensor_parallel = etp;
  }
  // Whole experts fold over the tensor-parallel devices too.
  const std::int64_t folded = whole_experts(w) ? shards * w.tensor_parallel : shards;
  if (folded % w.expert_parallel != 0) {
    fail(where, "expert_parallel",
         whole_experts(w)
             ? fmt::format("`expert_parallel` {} does not divide the {} devices whole experts "
                           "fold over (`tensor_parallel` {} x {} data-parallel replicas x "
                           "context-parallel {})",
                           w.expert_parallel, folded, w.tensor_parallel,
                           shards / w.context_parallel, w.context_parallel)
             : fmt::format("`expert_parallel` {} does not divide the {} devices that hold the "
                           "same weights ({} data-parallel replicas x context-parallel {})",
                           w.expert_parallel, shards, shards / w.context_parallel,
                           w.context_parallel));
  }
  if (!spec.moe_dispatcher.empty()) {
    const std::optional<MoeDispatcher> dispatcher = parse_moe_dispatcher(spec.moe_dispatcher);
    if (!dispatcher) {
      fail(where, "moe_dispatcher",
           fmt::format("`moe_dispatcher`: expected {}, got \"{}\"",
                       quoted_choices(moe_dispatcher_names()),
                       Error::verbatim(spec.moe_dispatcher)));
    }
    if (w.expert_parallel <= 1) {
      fail(where, "moe_dispatcher",
           "`moe_dispatcher` sends tokens to experts on other devices: add `expert_parallel` "
           "above 1");
    }
    w.moe_dispatcher = *dispatcher;
  }
  if (!(spec.moe_imbalance >= 1 && spec.moe_imbalance <= 1000)) {
    fail(where, "moe_imbalance",
         fmt::format("`moe_imbalance` must be between 1 and 1000 (got {:g})", spec.moe_imbalance));
  }
  w.moe_imbalance = spec.moe_imbalance;
}

// An input pipeline's rate ("3000/s") as capcalc takes one; Error without a place otherwise
// (the caller puts it at the key or the flag).
double input_rate_from(const std::string& text) {
  const double rate = parse_rate(text);
  if (!(rate > 0 && rate <= kMaxInputRate)) {
    throw Error({}, fmt::format("expected a rate above 0/s and at most 1e9/s, got \"{}\"", text));
  }
  return rate;
}

// The input pipeline's samples per second a replica; 0 when the spec names none. A request of
// LLM serving is fed tokens, not samples: no input rate there.
double input_rate_of(const WorkloadSpec& spec, const SpecLocations* where) {
  if (spec.input_rate.empty()) return 0;
  if (spec.prompt_tokens) {
    fail(where, "input_rate",
         "`input_rate` paces a model fed whole samples (images, sequences): not with "
         "`prompt_tokens` (LLM serving)");
  }
  try {
    return input_rate_from(spec.input_rate);
  } catch (const Error& e) {
    fail(where, "input_rate", fmt::format("`input_rate`: {}", e.message()));
  }
}

// What only training has: checkpointing, pipelines and micro-batches, ZeRO.
void check_training_only(const WorkloadSpec& spec, const SpecLocations* where, const Workload& w) {
  const bool training = w.mode == Mode::kTraining;
  if (spec.checkpointing && !training) {
    fail(where, "checkpointing", "`checkpointing` is for training: add `mode` training");
  }
  if (spec.checkpoint_layers > 0 && !spec.checkpointing) {
    fail(where, "checkpoint_layers",
         "`checkpoint_layers` picks the blocks `checkpointing` recomputes: turn on "
         "`checkpointing`");
  }
  if (!spec.recompute.empty()) {
    if (!training) fail(where, "recompute", "`recompute` is for training: add `mode` training");
    if (spec.checkpointing) {
      fail(where, "recompute",
           "`recompute` selects modules to recompute, `checkpointing` recomputes every block: "
           "give one of them");
    }
  }
  if (w.context_parallel > 1 && !training) {
    fail(where, "context_parallel",
         "context parallelism splits training sequences: add `mode` training");
  }
  if ((w.pipeline_parallel > 1 || w.micro_batches > 1) && !training) {
    fail(where, w.pipeline_parallel > 1 ? "pipeline_parallel" : "micro_batches",
         "pipeline stages and micro-batches are for training: add `mode` training");
  }
  if (w.virtual_stages > 1) {
    if (w.pipeline_parallel < 2) {
      fail(where, "virtual_stages",
           "virtual stages interleave a pipeline: add `pipeline_parallel` 2 or more");
    }
    // Megatron-LM: "number of microbatches ... should be divisible by pipeline-parallel size
    // when using interleaved schedule".
    if (w.micro_batches % w.pipeline_parallel != 0) {
      fail(where, "micro_batches",
           fmt::format("the interleaved schedule needs micro-batches ({}) to be a multiple of "
                       "the pipeline stages ({})",
                       w.micro_batches, w.pipeline_parallel));
    }
  }
  if (w.zero_stage < 0 || w.zero_stage > 3) {
    fail(where, "zero_stage",
         fmt::format("ZeRO stage {} does not exist: 0 (none) to 3 (FSDP)", w.zero_stage));
  }
  if (w.zero_stage > 0 && !training) {
    fail(where, "zero_stage", "ZeRO shards training state: add `mode` training");
  }
  if (w.lora_rank < 0 || w.lora_rank > kMaxLoraRank) {
    fail(where, "lora_rank",
         fmt::format("LoRA's rank must be 1 to {} (got {})", kMaxLoraRank, w.lora_rank));
  }
  if (w.lora_rank > 0 && !training) {
    fail(where, "lora_rank", "LoRA adapters are trained: add `mode` training");
  }
  if (std::find(kLoraTargets.begin(), kLoraTargets.end(), spec.lora_targets) ==
      kLoraTargets.end()) {
    fail(where, "lora_targets",
         fmt::format("`lora_targets`: expected \"all-linear\" or \"attention\", got \"{}\"",
                     spec.lora_targets));
  }
  if (spec.lora_targets != kLoraTargets[0] && w.lora_rank == 0) {
    fail(where, "lora_targets", "`lora_targets` places LoRA's adapters: add `lora_rank`");
  }
}

// A training run is dataset_size [x epochs] or tokens, and only in training; serving is
// inference, and only serving has a KV cache to store.
void check_run_and_serving(const WorkloadSpec& spec, const SpecLocations* where, Mode mode) {
  const RunSize& run = spec.run;
  if (run.tokens && run.dataset_size) {
    fail(where, "dataset_size", "give `tokens` or `dataset_size`, not both");
  }
  if (run.epochs && !run.dataset_size) {
    fail(where, "epochs",
         run.tokens ? "`epochs` needs `dataset_size`, not `tokens`"
                    : "`epochs` needs `dataset_size`");
  }
  if (!run.empty() && mode != Mode::kTraining) {
    fail(where, run.tokens ? "tokens" : "dataset_size",
         "`dataset_size` and `tokens` describe a training run: add `mode` training");
  }
  const bool serving = spec.prompt_tokens || spec.output_tokens;
  if (serving && mode != Mode::kInference) {
    fail(where, spec.prompt_tokens ? "prompt_tokens" : "output_tokens",
         "`prompt_tokens` and `output_tokens` describe serving: use `mode` inference");
  }
}

}  // namespace

std::optional<double> run_samples(const RunSize& size, const Graph& graph,
                                  const std::string& model_file) {
  if (size.tokens) {
    if (size.dataset_size)
      throw Error::naming_keys({}, "give `tokens` or `dataset_size`, not both");
    if (size.epochs) throw Error::naming_keys({}, "`epochs` needs `dataset_size`, not `tokens`");
    const auto seq = graph.dims.find("seq");
    if (seq == graph.dims.end()) {
      throw Error::naming_keys(
          {model_file}, "`tokens` needs a model with a \"seq\" dimension (tokens per sample)");
    }
    return *size.tokens / static_cast<double>(seq->second);
  }
  if (size.dataset_size) return *size.dataset_size * size.epochs.value_or(1);
  if (size.epochs) throw Error::naming_keys({}, "`epochs` needs `dataset_size`");
  return std::nullopt;
}

Workload workload_from(const WorkloadSpec& spec, const SpecLocations* where) {
  Workload w;
  if (!spec.kv_precision.empty() && !spec.prompt_tokens) {
    fail(where, "kv_precision",
         "`kv_precision` sets the KV cache's storage: add `prompt_tokens` (LLM serving)");
  }
  read_names(spec, where, w);
  set_layout(spec, where, w);
  check_experts(spec, where, w);
  w.checkpointing = spec.checkpointing;
  w.checkpoint_layers = spec.checkpoint_layers;
  for (const std::string& name : spec.recompute) {
    const std::optional<RecomputeModule> module = parse_recompute_module(name);
    if (!module) {
      fail(where, "recompute",
           fmt::format("`recompute`: expected {}, got \"{}\"",
                       quoted_choices(recompute_module_names()), Error::verbatim(name)));
    }
    w.recompute |= static_cast<unsigned>(*module);
  }
  w.lora_rank = spec.lora_rank;
  w.lora_attention_only = spec.lora_targets == kLoraTargets[1];
  w.sequence_parallel = spec.sequence_parallel;
  if (spec.sequence_parallel.value_or(false) && w.tensor_parallel < 2) {
    fail(where, "sequence_parallel",
         "`sequence_parallel` splits the norms of a tensor-parallel group: add `tensor_parallel` "
         "2 or more");
  }
  check_training_only(spec, where, w);
  check_run_and_serving(spec, where, w.mode);
  w.input_rate_per_s = input_rate_of(spec, where);
  return w;
}

// ---------------------------------------------------------------------------------------------
// Files.

namespace {

// A positive number no larger than `max`.
double at_most(const JsonView& value, double max) {
  const double x = value.as_positive_number();
  if (x > max) value.fail(fmt::format("{} is more than {} (the limit)", x, max));
  return x;
}

std::string precision_at(const JsonView& value) {
  const std::string name = value.as_string();
  if (!parse_precision(name)) value.fail(unknown_precision_message(name));
  return name;
}

std::string name_at(const JsonView& value, std::string_view what,
                    const std::vector<std::string_view>& names) {
  const std::string name = value.as_string();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    value.fail(with_suggestion(fmt::format("unknown {} \"{}\"", what, name), name, names));
  }
  return name;
}

// The names and flags.
void read_named(const KeyReader& get, WorkloadSpec& spec) {
  if (auto v = get("precision")) spec.precision = precision_at(*v);
  if (auto v = get("mode")) {
    spec.mode = v->as_string();
    if (!parse_mode(spec.mode)) {
      v->fail(fmt::format("expected {}, got \"{}\"", quoted_choices(mode_names()), spec.mode));
    }
  }
  if (auto v = get("profile")) {
    spec.profile = v->as_string();
    if (!parse_profile(spec.profile)) v->fail(unknown_profile_message(spec.profile));
  }
  if (auto v = get("runtime")) {
    spec.runtime = v->as_string();
    if (spec.runtime.empty()) v->fail("expected a runtime id, got \"\"");
  }
  if (auto v = get("sparsity")) {
    spec.sparsity = name_at(*v, "sparsity", sparsity_names());
  }
  if (auto v = get("fp8_recipe")) {
    spec.fp8_recipe = name_at(*v, "fp8_recipe", fp8_recipe_names());
  }
  if (auto v = get("optimizer")) {
    spec.optimizer = name_at(*v, "optimizer", optimizer_names());
  }
  if (auto v = get("weight_precision")) spec.weight_precision = precision_at(*v);
  if (auto v = get("expert_weight_precision")) spec.expert_weight_precision = precision_at(*v);
  if (auto v = get("kv_precision")) spec.kv_precision = precision_at(*v);
  if (auto v = get("checkpointing")) spec.checkpointing = v->as_bool();
  if (auto v = get("checkpoint_layers")) spec.checkpoint_layers = v->as_positive_int();
  if (auto v = get("recompute")) {
    spec.recompute.clear();
    for (std::size_t i = 0; i < v->array_size(); ++i) {
      spec.recompute.push_back(name_at(v->at(i), "recompute module", recompute_module_names()));
    }
  }
  if (auto v = get("sequence_parallel")) spec.sequence_parallel = v->as_bool();
  if (auto v = get("lora_targets")) {
    spec.lora_targets = name_at(*v, "lora_targets", {kLoraTargets.begin(), kLoraTargets.end()});
  }
  if (auto v = get("allow_tf32")) spec.allow_tf32 = v->as_bool();
}

// The counts: the layout, the run, the price and serving.
void read_counts(const KeyReader& get, std::string_view devices_key, WorkloadSpec& spec) {
  if (auto v = get(devices_key)) spec.devices = v->as_positive_int();
  if (auto v = get("data_parallel")) spec.data_parallel = v->as_positive_int();
  if (auto v = get("tensor_parallel")) spec.tensor_parallel = v->as_positive_int();
  if (auto v = get("pipeline_parallel")) spec.pipeline_parallel = v->as_positive_int();
  if (auto v = get("context_parallel")) spec.context_parallel = v->as_positive_int();
  if (auto v = get("expert_parallel")) spec.expert_parallel = v->as_positive_int();
  if (auto v = get("expert_tensor_parallel")) spec.expert_tensor_parallel = v->as_positive_int();
  if (auto v = get("moe_dispatcher")) {
    spec.moe_dispatcher = name_at(*v, "moe_dispatcher", moe_dispatcher_names());
  }
  if (auto v = get("moe_imbalance")) {
    spec.moe_imbalance = v->as_number();
    if (!(spec.moe_imbalance >= 1 && spec.moe_imbalance <= 1000)) {
      v->fail(fmt::format("expected 1 to 1000, got {:g}", spec.moe_imbalance));
    }
  }
  if (auto v = get("input_rate")) {
    spec.input_rate = v->as_string();
    try {
      input_rate_from(spec.input_rate);
    } catch (const Error& e) {
      v->fail(e.message());
    }
  }
  if (auto v = get("micro_batches")) spec.micro_batches = v->as_positive_int();
  if (auto v = get("virtual_stages")) spec.virtual_stages = v->as_positive_int();
  if (auto v = get("zero_stage")) {
    const std::int64_t stage = v->as_integer();
    if (stage < 0 || stage > 3) v->fail(fmt::format("expected 0 to 3, got {}", stage));
    spec.zero_stage = static_cast<int>(stage);
  }
  if (auto v = get("lora_rank")) spec.lora_rank = v->as_positive_int();
  if (auto v = get("dataset_size")) spec.run.dataset_size = at_most(*v, kMaxDatasetSize);
  if (auto v = get("epochs")) spec.run.epochs = at_most(*v, kMaxEpochs);
  if (auto v = get("tokens"); v && !v->is_null()) {
    spec.run.tokens = at_most(*v, kMaxTrainingTokens);
  }
  if (auto v = get("price_per_hour_usd")) {
    spec.price_per_hour_usd = at_most(*v, kMaxPricePerHourUsd);
  }
  if (auto v = get("prompt_tokens")) spec.prompt_tokens = v->as_positive_int();
  if (auto v = get("output_tokens")) spec.output_tokens = v->as_positive_int();
}

}  // namespace

std::vector<std::string_view> workload_keys(std::string_view devices_key) {
  return {"precision",
          "mode",
          "profile",
          "runtime",
          "sparsity",
          "fp8_recipe",
          "optimizer",
          devices_key,
          "data_parallel",
          "tensor_parallel",
          "pipeline_parallel",
          "context_parallel",
          "expert_parallel",
          "expert_tensor_parallel",
          "moe_dispatcher",
          "moe_imbalance",
          "input_rate",
          "micro_batches",
          "virtual_stages",
          "zero_stage",
          "checkpointing",
          "checkpoint_layers",
          "recompute",
          "lora_rank",
          "lora_targets",
          "sequence_parallel",
          "weight_precision",
          "expert_weight_precision",
          "kv_precision",
          "allow_tf32",
          "dataset_size",
          "epochs",
          "tokens",
          "price_per_hour_usd",
          "prompt_tokens",
          "output_tokens"};
}

WorkloadSpec read_workload_spec(const JsonView& object, const std::optional<JsonView>& defaults,
                                std::string_view devices_key, SpecLocations& where) {
  where.object = {object.file(), object.pointer(), 0, 0};
  where.devices_key = std::string(devices_key);
  const KeyReader get = [&](std::string_view key) -> std::optional<JsonView> {
    std::optional<JsonView> value = object.find(key);
    if (!value && defaults) value = defaults->find(key);
    if (value) {
      // Errors blame the key by its name in the spec ("devices").
      const std::string name = key == devices_key ? "devices" : std::string(key);
      where.keys[name] = {value->file(), value->pointer(), 0, 0};
    }
    return value;
  };
  WorkloadSpec spec;
  read_named(get, spec);
  read_counts(get, devices_key, spec);
  if (where.keys.count("devices") > 0 && spec.data_parallel) {
    throw Error(
        where.keys.at("data_parallel"),
        fmt::format("give \"{}\" (devices in all) or \"data_parallel\" (replicas), not both",
                    devices_key));
  }
  return spec;
}

std::int64_t read_mtp_layers(const JsonView& value, Mode mode) {
  const std::int64_t modules = value.as_positive_int();
  if (modules > kMaxMtpLayers)
    value.fail(fmt::format("{} modules is more than {}", modules, kMaxMtpLayers));
  if (mode != Mode::kTraining) {
    value.fail("multi-token-prediction modules train beside the model: add \"mode\" training");
  }
  return modules;
}

}  // namespace capcalc
