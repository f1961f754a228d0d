#include "capcalc/runtime.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/names.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/units.hpp"

#include "input_file.hpp"
#include "json_view.hpp"
#include "ops.hpp"
#include "spellcheck.hpp"

namespace capcalc {
namespace {

const std::vector<std::string_view> kTableKeys = {"schema_version", "version", "description",
                                                  "comment",        "$schema", "runtimes"};
const std::vector<std::string_view> kRuntimeKeys = {"id",
                                                    "name",
                                                    "aliases",
                                                    "profile",
                                                    "device_types",
                                                    "kernels",
                                                    "kernels_16bit",
                                                    "training",
                                                    "tf32_ops",
                                                    "unfused_ops",
                                                    "host_overhead_us",
                                                    "sources",
                                                    "notes",
                                                    "comment",
                                                    "serving",
                                                    "fp8_expert_quantize",
                                                    "vocab_padding",
                                                    "flash_attention",
                                                    "fp8_quantize_bytes"};

constexpr auto kFp8Recipes = name_table<Fp8Recipe>({{Fp8Recipe::kDelayed, "delayed"},
                                                    {Fp8Recipe::kTensorwise, "tensorwise"},
                                                    {Fp8Recipe::kBlockwise, "blockwise"},
                                                    {Fp8Recipe::kMxfp8, "mxfp8"}});

constexpr auto kMoeDispatchers =
    name_table<MoeDispatcher>({{MoeDispatcher::kAllToAll, "alltoall"},
                               {MoeDispatcher::kDeepEP, "deepep"},
                               {MoeDispatcher::kHybridEP, "hybridep"},
                               {MoeDispatcher::kAllGather, "allgather"}});
constexpr auto kRecomputeModules =
    name_table<RecomputeModule>({{RecomputeModule::kCoreAttn, "core_attn"},
                                 {RecomputeModule::kLayernorm, "layernorm"},
                                 {RecomputeModule::kMlp, "mlp"},
                                 {RecomputeModule::kMoeAct, "moe_act"},
                                 {RecomputeModule::kMlaUpProj, "mla_up_proj"},
                                 {RecomputeModule::kMoe, "moe"},
                                 {RecomputeModule::kSharedExperts, "shared_experts"}});

std::array<double, kOpClassCount> one_kernel_per_layer() {
  std::array<double, kOpClassCount> kernels{};
  kernels.fill(1);
  kernels[static_cast<std::size_t>(OpClass::kView)] = 0;
  return kernels;
}

// "kernels": {"attention": 6, "rmsnorm": 8, "rotary": 10, "cache_update": 2}: a layer class,
// a native operator, one of the two extras of attention layers, or local_expert and expert_bias
// (kernels a mixture-of-experts layer adds per routed expert held on the device).
void parse_kernels(const JsonView& kernels, Runtime& runtime) {
  kernels.expect_object();
  const std::vector<std::string_view> ops = op_names();
  std::vector<std::string_view> known = {"rotary", "cache_update", "autocast_weight_casts",
                                         "local_expert", "expert_bias"};
  for (OpClass c : kOpClasses)
    known.push_back(op_class_name(c));
  known.insert(known.end(), ops.begin(), ops.end());
  for (const auto& item : kernels.json().items()) {
    const std::string& key = item.key();
    const JsonView value = kernels.at(key);
    const double count = value.as_number();
    if (!(count >= 0) || count > 1000)
      value.fail(fmt::format("expected 0 to 1000 kernels, got {}", value.json().dump()));
    if (key == "rotary") {
      runtime.rotary_kernels = count;
      continue;
    }
    if (key == "cache_update") {
      runtime.cache_update_kernels = count;
      continue;
    }
    if (key == "autocast_weight_casts") {
      runtime.autocast_weight_casts = count;
      continue;
    }
    if (key == "local_expert") {
      runtime.local_expert_kernels = count;
      continue;
    }
    if (key == "expert_bias") {
      runtime.expert_bias_kernels = count;
      continue;
    }
    const auto cls = std::find_if(kOpClasses.begin(), kOpClasses.end(),
                                  [&](OpClass c) { return op_class_name(c) == key; });
    if (cls != kOpClasses.end()) {
      runtime.kernels_per_class[static_cast<std::size_t>(*cls)] = count;
      continue;
    }
    if (find_op(key) == nullptr) {
      value.fail(
          with_suggestion(fmt::format("unknown layer class or operator \"{}\"", key), key, known));
    }
    runtime.kernels_per_op.emplace_back(key, count);
  }
}

std::vector<std::string> string_list(const JsonView& list, bool non_empty) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < list.array_size(); ++i) {
    const JsonView item = list.at(i);
    out.push_back(item.as_string());
    if (non_empty && out.back().empty()) item.fail("expected a non-empty string");
  }
  return out;
}

// {"batchnorm": 3}: kernels per native operator (a class too where `classes` is set).
void parse_op_counts(const JsonView& counts, std::vector<std::pair<std::string, double>>& per_op,
                     std::array<double, kOpClassCount>* per_class) {
  counts.expect_object();
  const std::vector<std::string_view> ops = op_names();
  std::vector<std::string_view> known(ops.begin(), ops.end());
  if (per_class != nullptr) {
    for (OpClass c : kOpClasses)
      known.push_back(op_class_name(c));
  }
  for (const auto& item : counts.json().items()) {
    const std::string& key = item.key();
    const JsonView value = counts.at(key);
    const double count = value.as_number();
    if (!(count >= 0) || count > 1000)
      value.fail(fmt::format("expected 0 to 1000 kernels, got {}", value.json().dump()));
    const auto cls = std::find_if(kOpClasses.begin(), kOpClasses.end(),
                                  [&](OpClass c) { return op_class_name(c) == key; });
    if (per_class != nullptr && cls != kOpClasses.end()) {
      (*per_class)[static_cast<std::size_t>(*cls)] = count;
      continue;
    }
    if (find_op(key) == nullptr) {
      value.fail(with_suggestion(fmt::format("unknown operator \"{}\"", key), key, known));
    }
    per_op.emplace_back(key, count);
  }
}

std::vector<std::string> op_list(const JsonView& list) {
  std::vector<std::string> out;
  const std::vector<std::string_view> ops = op_names();
  for (std::size_t i = 0; i < list.array_size(); ++i) {
    const JsonView item = list.at(i);
    const std::string name = item.as_string();
    if (find_op(name) == nullptr) {
      item.fail(with_suggestion(fmt::format("unknown operator \"{}\"", name), name, ops));
    }
    out.push_back(name);
  }
  return out;
}

MultiTensorApply parse_multi_tensor(const JsonView& entry) {
  reject_unknown_keys(entry, {"chunk_elements", "max_blocks", "max_tensors_by_depth"},
                      "multi-tensor apply");
  MultiTensorApply m;
  m.chunk_elements = static_cast<double>(entry.at("chunk_elements").as_positive_int());
  m.max_blocks = static_cast<double>(entry.at("max_blocks").as_positive_int());
  const JsonView depths = entry.at("max_tensors_by_depth");
  for (std::size_t i = 0; i < depths.array_size(); ++i)
    m.max_tensors_by_depth.push_back(static_cast<double>(depths.at(i).as_positive_int()));
  if (m.max_tensors_by_depth.empty()) depths.fail("expected at least one depth");
  return m;
}

// "training": what autograd, autocast and the optimizer launch.
TrainingKernels parse_training(const JsonView& entry) {
  reject_unknown_keys(
      entry,
      {"backward", "bias_gradient", "autocast_fp32_ops", "autocast_input_casts", "loss",
       "mixed_dtype_gradient_casts", "batchnorm_semaphore_zeroing", "attention_input_gradient_sums",
       "multi_tensor_apply", "optimizer_foreach_depths", "comment"},
      "training kernels");
  TrainingKernels t;
  if (auto backward = entry.find("backward"))
    parse_op_counts(*backward, t.backward_per_op, &t.backward_per_class);
  if (auto bias = entry.find("bias_gradient")) t.bias_gradient = bias->as_number();
  if (auto ops = entry.find("autocast_fp32_ops")) t.autocast_fp32_ops = op_list(*ops);
  if (auto casts = entry.find("autocast_input_casts")) t.autocast_input_casts = casts->as_number();
  if (auto loss = entry.find("loss")) {
    reject_unknown_keys(*loss, {"forward", "backward"}, "loss kernels");
    t.loss_forward = loss->at("forward").as_number();
    t.loss_backward = loss->at("backward").as_number();
  }
  if (auto casts = entry.find("mixed_dtype_gradient_casts"))
    t.mixed_dtype_gradient_casts = casts->as_number();
  if (auto zeroing = entry.find("batchnorm_semaphore_zeroing"))
    t.batchnorm_semaphore_zeroing = zeroing->as_number();
  if (auto sums = entry.find("attention_input_gradient_sums"))
    t.attention_input_gradient_sums = sums->as_number();
  if (auto mta = entry.find("multi_tensor_apply")) t.multi_tensor = parse_multi_tensor(*mta);
  if (auto optimizers = entry.find("optimizer_foreach_depths")) {
    optimizers->expect_object();
    for (const auto& item : optimizers->json().items()) {
      const JsonView depths = optimizers->at(item.key());
      const std::optional<Optimizer> optimizer = parse_optimizer(item.key());
      if (!optimizer || optimizer_name(*optimizer) != item.key()) {
        depths.fail(with_suggestion(fmt::format("unknown optimizer \"{}\"", item.key()), item.key(),
                                    optimizer_names(false)));
      }
      std::vector<int> list;
      for (std::size_t i = 0; i < depths.array_size(); ++i) {
        const JsonView depth = depths.at(i);
        const std::int64_t d = depth.as_positive_int();
        if (t.multi_tensor.max_tensors_by_depth.size() < static_cast<std::size_t>(d)) {
          depth.fail(fmt::format("depth {} has no tensor limit in multi_tensor_apply", d));
        }
        list.push_back(static_cast<int>(d));
      }
      t.optimizer_foreach_depths.emplace_back(item.key(), std::move(list));
    }
  }
  return t;
}

// A memory fraction above 0 and at most 1.
double memory_fraction(const JsonView& value) {
  const double f = value.as_number();
  if (!(f > 0) || f > 1) value.fail("expected a fraction above 0 and at most 1");
  return f;
}

// One of "memory_tiers": the values that replace the base ones on devices with enough memory.
ServingTier parse_serving_tier(const JsonView& tier) {
  reject_unknown_keys(tier,
                      {"min_memory_gib", "except_names", "max_num_batched_tokens", "max_num_seqs",
                       "gpu_memory_utilization", "reserved_memory_mib", "comment"},
                      "a memory tier");
  ServingTier t;
  t.min_memory_bytes = tier.at("min_memory_gib").as_positive_number() * kBytesPerGiB;
  if (auto except = tier.find("except_names")) {
    t.except_names = string_list(*except, true);
    for (std::string& name : t.except_names) {
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    }
  }
  if (auto tokens = tier.find("max_num_batched_tokens")) {
    t.max_num_batched_tokens = tokens->as_positive_int();
  }
  if (auto seqs = tier.find("max_num_seqs")) t.max_num_seqs = seqs->as_positive_int();
  if (auto f = tier.find("gpu_memory_utilization")) t.memory_utilization = memory_fraction(*f);
  if (auto r = tier.find("reserved_memory_mib")) {
    t.reserved_memory_bytes = r->as_positive_number() * kBytesPerMiB;
  }
  return t;
}

constexpr auto kMemoryFractions = name_table<MemoryFraction>({{MemoryFraction::kDevice, "device"},
                                                              {MemoryFraction::kFree, "free"},
                                                              {MemoryFraction::kStatic, "static"}});
constexpr auto kSchedulers =
    name_table<Scheduler>({{Scheduler::kVllm, "vllm"}, {Scheduler::kSglang, "sglang"}});

// One of a table's names, or an error listing them: expected "a", "b" or "c", got "d".
template <typename Table>
auto parse_named(const JsonView& value, const Table& table) {
  const std::string text = value.as_string();
  if (auto parsed = table.parse(text)) return *parsed;
  value.fail(fmt::format("expected {}, got \"{}\"", quoted_choices(table.names()), text));
}

// "serving": continuous-batching defaults, with optional tiers by device memory.
ServingDefaults parse_serving(const JsonView& serving) {
  reject_unknown_keys(
      serving,
      {"max_num_batched_tokens", "max_num_seqs", "block_size", "gpu_memory_utilization",
       "reserved_memory_mib", "memory_fraction_of", "chunked_prefill", "reserve_full_request",
       "scheduler", "memory_tiers", "comment"},
      "serving defaults");
  ServingDefaults d;
  d.max_num_batched_tokens = serving.at("max_num_batched_tokens").as_positive_int();
  d.max_num_seqs = serving.at("max_num_seqs").as_positive_int();
  d.block_size = serving.at("block_size").as_positive_int();
  // A fixed fraction, or one that a reserve sets on each device (SGLang), not both.
  if (auto reserved = serving.find("reserved_memory_mib")) {
    if (serving.find("gpu_memory_utilization")) {
      reserved->fail("give gpu_memory_utilization or reserved_memory_mib, not both");
    }
    d.reserved_memory_bytes = reserved->as_positive_number() * kBytesPerMiB;
  } else {
    d.memory_utilization = memory_fraction(serving.at("gpu_memory_utilization"));
  }
  if (auto of = serving.find("memory_fraction_of")) {
    d.fraction_of = parse_named(*of, kMemoryFractions);
  }
  if (auto chunked = serving.find("chunked_prefill")) d.chunked_prefill = chunked->as_bool();
  if (auto reserve = serving.find("reserve_full_request")) {
    d.reserve_full_request = reserve->as_bool();
  }
  if (auto scheduler = serving.find("scheduler")) {
    d.scheduler = parse_named(*scheduler, kSchedulers);
    if (d.scheduler == Scheduler::kSglang && d.reserve_full_request) {
      scheduler->fail("SGLang's scheduler reserves by its own rule: no reserve_full_request");
    }
  }
  if (auto tiers = serving.find("memory_tiers")) {
    for (std::size_t i = 0; i < tiers->array_size(); ++i) {
      d.tiers.push_back(parse_serving_tier(tiers->at(i)));
      if (i > 0 && d.tiers[i].min_memory_bytes <= d.tiers[i - 1].min_memory_bytes) {
        tiers->at(i).at("min_memory_gib").fail("expected tiers in ascending min_memory_gib");
      }
    }
  }
  return d;
}

Runtime parse_runtime(const JsonView& entry) {
  reject_unknown_keys(entry, kRuntimeKeys, "a runtime");
  Runtime r;
  r.kernels_per_class = one_kernel_per_layer();
  const JsonView id = entry.at("id");
  r.id = id.as_string();
  if (r.id.empty() || lookup_key(r.id) != r.id) {
    id.fail(fmt::format("expected a kebab-case id, got \"{}\"", r.id));
  }
  r.name = entry.at("name").as_string();
  if (r.name.empty()) entry.at("name").fail("expected a non-empty string");
  if (auto aliases = entry.find("aliases")) r.aliases = string_list(*aliases, true);
  const JsonView profile = entry.at("profile");
  const std::optional<Profile> parsed = parse_profile(profile.as_string());
  if (!parsed) profile.fail(unknown_profile_message(profile.as_string()));
  r.profile = *parsed;
  if (auto types = entry.find("device_types")) {
    for (std::size_t i = 0; i < types->array_size(); ++i) {
      const JsonView item = types->at(i);
      const std::optional<DeviceType> type = parse_device_type(item.as_string());
      if (!type) {
        item.fail(with_suggestion(fmt::format("unknown device type \"{}\"", item.as_string()),
                                  item.as_string(), device_type_names()));
      }
      r.device_types.push_back(*type);
    }
  }
  if (auto kernels = entry.find("kernels")) parse_kernels(*kernels, r);
  if (auto quantize = entry.find("fp8_expert_quantize")) {
    quantize->expect_object();
    for (const auto& item : quantize->json().items()) {
      const JsonView value = quantize->at(item.key());
      const std::optional<Fp8Recipe> recipe = parse_fp8_recipe(item.key());
      if (!recipe) {
        value.fail(with_suggestion(fmt::format("unknown FP8 recipe \"{}\"", item.key()), item.key(),
                                   fp8_recipe_names()));
      }
      const double count = value.as_number();
      if (!(count >= 0) || count > 1000)
        value.fail(fmt::format("expected 0 to 1000 kernels, got {}", value.json().dump()));
      r.fp8_expert_quantize_kernels[static_cast<std::size_t>(*recipe)] = count;
    }
  }
  if (auto padding = entry.find("vocab_padding")) {
    r.vocab_padding = padding->as_positive_int();
    if (r.vocab_padding > 65536) padding->fail("expected at most 65536");
  }
  if (auto flash = entry.find("flash_attention")) r.flash_attention = flash->as_bool();
  if (auto quantize = entry.find("fp8_quantize_bytes")) {
    r.fp8_quantize_bytes = quantize->as_number();
    if (!(r.fp8_quantize_bytes >= 0) || r.fp8_quantize_bytes > 64) {
      quantize->fail(
          fmt::format("expected 0 to 64 bytes per element, got {}", quantize->json().dump()));
    }
  }
  if (auto narrow = entry.find("kernels_16bit"))
    parse_op_counts(*narrow, r.kernels_per_op_16bit, nullptr);
  if (auto training = entry.find("training")) r.training = parse_training(*training);
  if (auto tf32 = entry.find("tf32_ops")) r.tf32_ops = op_list(*tf32);
  if (auto unfused = entry.find("unfused_ops")) r.unfused_ops = op_list(*unfused);
  if (auto host = entry.find("host_overhead_us")) {
    host->expect_object();
    for (const auto& item : host->json().items()) {
      const JsonView value = host->at(item.key());
      const std::optional<DeviceType> type = parse_device_type(item.key());
      if (!type) {
        value.fail(with_suggestion(fmt::format("unknown device type \"{}\"", item.key()),
                                   item.key(), device_type_names()));
      }
      const double us = value.as_number();
      if (!(us > 0) || us > 1e6) {
        value.fail(fmt::format("expected microseconds above 0 and at most 1e6, got {}",
                               value.json().dump()));
      }
      r.host_overhead_s[static_cast<std::size_t>(*type)] = us * 1e-6;
    }
  }
  const JsonView sources = entry.at("sources");
  r.sources = string_list(sources, true);
  if (r.sources.empty()) sources.fail("a runtime needs at least one source");
  if (auto notes = entry.find("notes")) r.notes = notes->as_string();
  if (auto serving = entry.find("serving")) r.serving = parse_serving(*serving);
  return r;
}

}  // namespace

std::string_view fp8_recipe_name(Fp8Recipe recipe) {
  return kFp8Recipes.name(recipe);
}

std::optional<Fp8Recipe> parse_fp8_recipe(std::string_view name) {
  return kFp8Recipes.parse(name);
}

std::vector<std::string_view> fp8_recipe_names() {
  return kFp8Recipes.names();
}

std::string_view moe_dispatcher_name(MoeDispatcher dispatcher) {
  return kMoeDispatchers.name(dispatcher);
}

std::string_view moe_dispatcher_title(MoeDispatcher dispatcher) {
  switch (dispatcher) {
    case MoeDispatcher::kDeepEP:
      return "DeepEP";
    case MoeDispatcher::kHybridEP:
      return "HybridEP";
    case MoeDispatcher::kAllGather:
      return "all-gather";
    case MoeDispatcher::kAllToAll:
      break;
  }
  return "all-to-all";
}

std::optional<MoeDispatcher> parse_moe_dispatcher(std::string_view name) {
  return kMoeDispatchers.parse(name);
}

std::vector<std::string_view> moe_dispatcher_names() {
  return kMoeDispatchers.names();
}

std::string_view recompute_module_name(RecomputeModule module) {
  return kRecomputeModules.name(module);
}

std::optional<RecomputeModule> parse_recompute_module(std::string_view name) {
  std::string underscored(name);
  std::replace(underscored.begin(), underscored.end(), '-', '_');
  return kRecomputeModules.parse(underscored);
}

std::vector<std::string_view> recompute_module_names() {
  return kRecomputeModules.names();
}

std::vector<std::string_view> recompute_modules_of(unsigned modules) {
  std::vector<std::string_view> names;
  for (std::string_view name : kRecomputeModules.names()) {
    if ((modules & static_cast<unsigned>(*kRecomputeModules.parse(name))) != 0) {
      names.push_back(name);
    }
  }
  return names;
}

std::string recompute_modules_text(unsigned modules) {
  return fmt::format("{}", fmt::join(recompute_modules_of(modules), ", "));
}

double Runtime::kernels(const Layer& layer, bool narrow, bool training_step) const {
  if (layer.view) return 0;
  if (narrow) {
    for (const auto& [op, count] : kernels_per_op_16bit) {
      if (op == layer.op) return count;
    }
  }
  for (const auto& [op, count] : kernels_per_op) {
    if (op == layer.op) return count;
  }
  double count = kernels_per_class[static_cast<std::size_t>(layer.traits.op_class)];
  if (layer.traits.rotary) count += rotary_kernels;
  // Inference fills the KV cache: the prefill with the prompt's keys and values, a decode step
  // with its token's.
  if (layer.counts.kv_cache_per_token > 0 && !training_step) count += cache_update_kernels;
  return count;
}

bool Runtime::fuses(const Layer& layer) const {
  return std::find(unfused_ops.begin(), unfused_ops.end(), layer.op) == unfused_ops.end();
}

double Runtime::backward_kernels(const Layer& layer, double forward) const {
  if (layer.view) return 0;
  for (const auto& [op, count] : training.backward_per_op) {
    if (op == layer.op) return count;
  }
  const double count = training.backward_per_class[static_cast<std::size_t>(layer.traits.op_class)];
  return count > 0 ? count : 2 * forward;
}

// multi_tensor_apply fills a launch with chunks of consecutive tensors and launches it when it
// holds max_blocks chunks or the depth's tensor limit: at least as many launches as either
// limit needs (the tensors split evenly over the chunks is what capcalc knows of them).
double Runtime::optimizer_kernels(std::string_view optimizer, double tensors, double chunks) const {
  const MultiTensorApply& m = training.multi_tensor;
  if (m.chunk_elements <= 0 || tensors <= 0) return 0;
  for (const auto& [optimizer_id, depths] : training.optimizer_foreach_depths) {
    if (optimizer_id != optimizer) continue;
    double launches = 0;
    for (int depth : depths) {
      const double max_tensors = m.max_tensors_by_depth[static_cast<std::size_t>(depth - 1)];
      launches += std::max(std::ceil(tensors / max_tensors), std::ceil(chunks / m.max_blocks));
    }
    return launches;
  }
  return 0;
}

namespace {

// The largest power of two not above n (LaunchUtils.h, lastPow2), at least 1.
double last_pow2(double n) {
  return n < 1 ? 1 : std::exp2(std::floor(std::log2(n)));
}

}  // namespace

// flexible_launch_configs (aten/src/ATen/native/cuda/Normalization.cuh): blocks of 512 threads
// at most 32 channels wide, 16 elements per thread; at most 128 rows, and one row where fewer
// than 8 would do (coop_flag).
int channels_last_reduction_rows(double reduction, double channels) {
  constexpr double kMaxBlockSize = 512;
  constexpr double kTileWidth = 32;
  constexpr double kElementsPerThread = 16;
  constexpr double kMaxRows = 128;
  const double block_x = std::min(last_pow2(channels), kTileWidth);
  const double block_y =
      std::min(last_pow2(std::ceil(reduction / kElementsPerThread)), kMaxBlockSize / block_x);
  const double rows = std::min(std::ceil(reduction / (block_y * kElementsPerThread)), kMaxRows);
  return rows < 8 ? 1 : static_cast<int>(rows);
}

bool Runtime::runs_on(DeviceType type) const {
  return device_types.empty() ||
         std::find(device_types.begin(), device_types.end(), type) != device_types.end();
}

const Runtime* RuntimeTable::find(std::string_view name) const {
  return find_by_name(runtimes, name);
}

const Runtime& RuntimeTable::get(std::string_view name) const {
  if (const Runtime* runtime = find(name)) return *runtime;
  const std::vector<std::string> keys = names_of(runtimes);
  const std::vector<std::string_view> known(keys.begin(), keys.end());
  throw Error({}, with_suggestion(fmt::format("unknown runtime \"{}\"", name), name, known) +
                      " (`capcalc runtimes list` shows them)");
}

Runtime RuntimeTable::for_profile(Profile profile) const {
  if (const Runtime* runtime = find(profile_name(profile))) return *runtime;
  return generic_runtime(profile);
}

ServingDefaults serving_defaults_for(const ServingDefaults& defaults, const Device& device) {
  ServingDefaults d = defaults;
  d.tiers.clear();
  std::string names = device.id + " " + device.name;
  std::transform(names.begin(), names.end(), names.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  for (const ServingTier& tier : defaults.tiers) {
    const bool excluded =
        std::any_of(tier.except_names.begin(), tier.except_names.end(),
                    [&](const std::string& n) { return names.find(n) != std::string::npos; });
    if (device.memory_bytes < tier.min_memory_bytes || excluded) continue;
    d.max_num_batched_tokens = defaults.max_num_batched_tokens;
    d.max_num_seqs = defaults.max_num_seqs;
    d.memory_utilization = defaults.memory_utilization;
    d.reserved_memory_bytes = defaults.reserved_memory_bytes;
    if (tier.max_num_batched_tokens > 0) d.max_num_batched_tokens = tier.max_num_batched_tokens;
    if (tier.max_num_seqs > 0) d.max_num_seqs = tier.max_num_seqs;
    if (tier.memory_utilization > 0) d.memory_utilization = tier.memory_utilization;
    if (tier.reserved_memory_bytes > 0) d.reserved_memory_bytes = tier.reserved_memory_bytes;
  }
  if (d.reserved_memory_bytes > 0) {
    // SGLang: mem_fraction_static = round((gpu_mem - reserved_mem) / gpu_mem, 3), in MiB.
    const double fraction = (device.memory_bytes - d.reserved_memory_bytes) / device.memory_bytes;
    // A device smaller than the reserve keeps nothing (no room for a KV cache, said by serve).
    d.memory_utilization = std::max(0.0, std::round(fraction * 1000) / 1000);
  }
  return d;
}

Runtime generic_runtime(Profile profile) {
  Runtime r;
  r.id = std::string(profile_name(profile));
  r.name = fmt::format("{} profile", profile_name(profile));
  r.profile = profile;
  r.kernels_per_class = one_kernel_per_layer();
  return r;
}

RuntimeTable parse_runtimes(std::string_view text, const std::string& file) {
  const nlohmann::json document = parse_json_text(text, file);
  const JsonView root(document, file);
  reject_unknown_keys(root, kTableKeys, "the runtime table");
  RuntimeTable table;
  if (auto schema = root.find("schema_version")) {
    if (schema->as_positive_int() != 1) schema->fail("unsupported schema_version; expected 1");
  }
  if (auto version = root.find("version")) table.version = version->as_string();
  const JsonView list = root.at("runtimes");
  for (std::size_t i = 0; i < list.array_size(); ++i) {
    const JsonView entry = list.at(i);
    Runtime runtime = parse_runtime(entry);
    // Ids and aliases name one runtime each.
    std::vector<std::string> names = runtime.aliases;
    names.push_back(runtime.id);
    for (const std::string& name : names) {
      if (const Runtime* other = table.find(name)) {
        entry.fail(fmt::format("\"{}\" already names runtime \"{}\"", name, other->id));
      }
    }
    table.runtimes.push_back(std::move(runtime));
  }
  return table;
}

RuntimeTable load_runtimes(const std::string& path) {
  return parse_runtimes(read_input_file(path), path);
}

RuntimeTable load_runtimes(const std::string& path, const std::vector<std::string>& overlays) {
  RuntimeTable table = load_runtimes(path);
  for (const std::string& overlay_path : overlays) {
    RuntimeTable overlay = load_runtimes(overlay_path);
    // A name of another runtime (an alias "eager") would silently take it over: only an entry
    // with that runtime's id replaces it.
    for (std::size_t i = 0; i < overlay.runtimes.size(); ++i) {
      const Runtime& runtime = overlay.runtimes[i];
      std::vector<std::string> names = {runtime.id};
      names.insert(names.end(), runtime.aliases.begin(), runtime.aliases.end());
      for (std::size_t n = 0; n < names.size(); ++n) {
        const Runtime* owner = table.find(names[n]);
        if (owner == nullptr || owner->id == runtime.id) continue;
        const std::string pointer = n == 0 ? fmt::format("/runtimes/{}/id", i)
                                           : fmt::format("/runtimes/{}/aliases/{}", i, n - 1);
        throw Error({overlay_path, pointer, 0, 0},
                    fmt::format("the name \"{}\" is already used by runtime \"{}\" of {}; to "
                                "replace that runtime, give this entry the id \"{}\"",
                                names[n], owner->id, path, owner->id));
      }
    }
    for (Runtime& runtime : overlay.runtimes) {
      const auto same = std::find_if(table.runtimes.begin(), table.runtimes.end(),
                                     [&](const Runtime& r) { return r.id == runtime.id; });
      if (same != table.runtimes.end()) {
        *same = std::move(runtime);
      } else {
        table.runtimes.insert(table.runtimes.begin(), std::move(runtime));
      }
    }
  }
  return table;
}

std::string_view memory_fraction_name(MemoryFraction fraction) {
  return kMemoryFractions.name(fraction);
}

std::string_view scheduler_name(Scheduler scheduler) {
  return kSchedulers.name(scheduler);
}

}  // namespace capcalc
