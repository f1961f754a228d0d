// capcalc::workload_from: the one check of a workload, whether flags, a budget file or a
// measurement file wrote it. Its messages name keys, which the CLI spells as flags and a file
// reader places at the key.
#include "capcalc/workload_spec.hpp"

#include <string>

#include "capcalc/error.hpp"
#include "capcalc/predict.hpp"

#include "catch.hpp"
#include "round_device.hpp"

using namespace capcalc;

namespace {

// The message as the CLI prints it: each key as its flag, with dashes.
std::string as_flags(const WorkloadSpec& spec) {
  try {
    (void)workload_from(spec);
  } catch (const Error& e) {
    return e.what_with([](std::string_view key) {
      std::string flag = "--" + std::string(key);
      for (char& c : flag)
        c = c == '_' ? '-' : c;
      return flag;
    });
  }
  return "no error";
}

}  // namespace

TEST_CASE("workload_from: devices count every replica of tensor x pipeline devices",
          "[workload_spec]") {
  WorkloadSpec spec;
  spec.mode = "training";
  spec.tensor_parallel = 4;
  spec.pipeline_parallel = 2;
  CHECK(workload_from(spec).devices == 8);  // devices 1 (the default): one replica.
  spec.devices = 32;
  CHECK(workload_from(spec).devices == 32);
  spec.devices = 1;
  spec.data_parallel = 3;  // Replicas: 3 x 4 x 2.
  CHECK(workload_from(spec).devices == 24);
  spec.devices = 24;
  CHECK(as_flags(spec) == "give --devices (in all) or --data-parallel (replicas), not both");
  spec.data_parallel.reset();
  spec.devices = 12;
  CHECK(as_flags(spec) ==
        "--devices 12 is not a multiple of --tensor-parallel 4 x --pipeline-parallel 2 (8)");
  spec.devices = 1;
  spec.tensor_parallel = std::int64_t{1} << 40;
  spec.pipeline_parallel = std::int64_t{1} << 30;
  CHECK(as_flags(spec) ==
        "--tensor-parallel 1099511627776 x --pipeline-parallel 1073741824: a count does not fit "
        "in a 64-bit integer");
}

TEST_CASE("workload_from: expert parallelism divides the devices holding the same weights",
          "[workload_spec]") {
  WorkloadSpec spec;
  spec.mode = "training";
  spec.tensor_parallel = 2;
  spec.context_parallel = 2;
  spec.devices = 24;  // 6 replicas x 2 context-parallel devices hold the same weights: 12.
  spec.expert_parallel = 4;
  CHECK(workload_from(spec).expert_parallel == 4);
  spec.expert_parallel = 8;
  CHECK(as_flags(spec) ==
        "--expert-parallel 8 does not divide the 12 devices that hold the same weights (6 "
        "data-parallel replicas x context-parallel 2)");
  // Whole experts (expert_tensor_parallel 1) fold over the tensor-parallel pairs too: 24.
  spec.expert_tensor_parallel = 1;
  CHECK(workload_from(spec).expert_tensor_parallel == 1);
  spec.expert_parallel = 16;
  CHECK(as_flags(spec) ==
        "--expert-parallel 16 does not divide the 24 devices whole experts fold over "
        "(--tensor-parallel 2 x 6 data-parallel replicas x context-parallel 2)");
  spec.expert_tensor_parallel = 3;
  CHECK(as_flags(spec) ==
        "--expert-tensor-parallel must be 1 (whole experts) or the --tensor-parallel 2, got 3");
  spec.expert_tensor_parallel.reset();
  spec.expert_parallel = 1;
  spec.moe_imbalance = 1.25;
  CHECK(workload_from(spec).moe_imbalance == 1.25);
  spec.moe_imbalance = 0.5;
  CHECK(as_flags(spec) == "--moe-imbalance must be between 1 and 1000 (got 0.5)");
}

TEST_CASE("workload_from: training settings outside training are errors", "[workload_spec]") {
  WorkloadSpec spec;
  spec.optimizer = "sgd";
  CHECK(as_flags(spec) == "--optimizer is for training: add --mode training");
  spec = {};
  spec.checkpointing = true;
  CHECK(as_flags(spec) == "--checkpointing is for training: add --mode training");
  spec = {};
  spec.zero_stage = 2;
  CHECK(as_flags(spec) == "ZeRO shards training state: add --mode training");
  spec = {};
  spec.micro_batches = 4;
  CHECK(as_flags(spec) ==
        "pipeline stages and micro-batches are for training: add --mode training");
  spec.mode = "training";
  spec.optimizer = "momentum";
  CHECK(workload_from(spec).optimizer == Optimizer::kMomentum);
}

TEST_CASE("workload_from: a run is dataset_size [x epochs] or tokens, in training",
          "[workload_spec]") {
  WorkloadSpec spec;
  spec.run.tokens = 1e9;
  spec.run.epochs = 2;
  // The run's shape before the mode: the same answer whatever the mode.
  CHECK(as_flags(spec) == "--epochs needs --dataset-size, not --tokens");
  spec.mode = "training";
  CHECK(as_flags(spec) == "--epochs needs --dataset-size, not --tokens");
  spec.run.epochs.reset();
  spec.run.dataset_size = 1e6;
  CHECK(as_flags(spec) == "give --tokens or --dataset-size, not both");
  spec.run.tokens.reset();
  CHECK(as_flags(spec) == "no error");
  spec.mode = "inference";
  CHECK(as_flags(spec) ==
        "--dataset-size and --tokens describe a training run: add --mode training");
}

TEST_CASE("workload_from: serving is inference, and only it stores a KV cache", "[workload_spec]") {
  WorkloadSpec spec;
  spec.kv_precision = "fp8";
  CHECK(as_flags(spec) ==
        "--kv-precision sets the KV cache's storage: add --prompt-tokens (LLM serving)");
  spec.prompt_tokens = 512;
  CHECK(workload_from(spec).kv_precision == Precision::kFp8);
  spec.mode = "training";
  CHECK(as_flags(spec) ==
        "--prompt-tokens and --output-tokens describe serving: use --mode inference");
}

TEST_CASE("workload_from: the experts' weight storage is for inference", "[workload_spec]") {
  WorkloadSpec spec;
  spec.expert_weight_precision = "int4";
  CHECK(workload_from(spec).expert_weight_precision == Precision::kInt4);
  spec.expert_weight_precision = "int3";
  CHECK_THROWS(workload_from(spec));
  spec.expert_weight_precision = "int4";
  spec.mode = "training";
  CHECK(as_flags(spec) ==
        "--expert-weight-precision is for inference (weight-only quantised experts)");
}

// Without a precision, LLM serving takes bf16 as `serve` does (fp16 on a device without bf16,
// the round GPU's case: it has fp32 and fp16 peaks only); everything else fp32.
TEST_CASE("workload_from: LLM serving defaults to bf16, else fp32", "[workload_spec]") {
  WorkloadSpec spec;
  const Device round = test::round_device();
  Device with_bf16 = round;
  with_bf16.dense_peak[static_cast<std::size_t>(Precision::kBf16)] = {20e12, 100e12};
  Workload plain = workload_from(spec);
  CHECK(plain.precision == Precision::kFp32);
  CHECK(!plain.serving_default_precision);
  CHECK(precision_on(plain, round) == Precision::kFp32);
  spec.prompt_tokens = 512;
  const Workload serving = workload_from(spec);
  CHECK(serving.precision == Precision::kBf16);
  CHECK(serving.serving_default_precision);
  CHECK(precision_on(serving, with_bf16) == Precision::kBf16);
  CHECK(precision_on(serving, round) == Precision::kFp16);
  // A precision given is kept, on any device.
  spec.precision = "fp32";
  const Workload given = workload_from(spec);
  CHECK(given.precision == Precision::kFp32);
  CHECK(!given.serving_default_precision);
  CHECK(precision_on(given, round) == Precision::kFp32);
}

TEST_CASE("workload_from: with locations, an error is at the key it blames, keys quoted",
          "[workload_spec]") {
  WorkloadSpec spec;
  spec.devices = 6;
  spec.tensor_parallel = 4;
  SpecLocations where;
  where.object = {"b.json", "/budgets/0", 0, 0};
  where.keys["tensor_parallel"] = {"b.json", "/defaults/tensor_parallel", 0, 0};
  where.devices_key = "device_count";
  CHECK_THROWS_WITH(workload_from(spec, &where),
                    "b.json:/defaults/tensor_parallel: \"device_count\" 6 is not a multiple of "
                    "\"tensor_parallel\" 4");
  // A key the file did not give: the object.
  spec = {};
  spec.sparsity = "3:4";
  CHECK_THROWS_WITH(workload_from(spec, &where),
                    "b.json:/budgets/0: \"sparsity\": expected \"dense\", \"2:4\" or "
                    "\"unstructured\", got \"3:4\"");
}

TEST_CASE("workload_from: an FP8 recipe is named and goes with fp8 only", "[workload_spec]") {
  WorkloadSpec spec;
  spec.precision = "fp8";
  CHECK(workload_from(spec).fp8_recipe == Fp8Recipe::kDelayed);
  spec.fp8_recipe = "tensorwise";
  CHECK(workload_from(spec).fp8_recipe == Fp8Recipe::kTensorwise);
  spec.fp8_recipe = "mxfp8";
  CHECK(workload_from(spec).fp8_recipe == Fp8Recipe::kMxfp8);
  spec.fp8_recipe = "cs";
  CHECK(as_flags(spec) ==
        "--fp8-recipe: expected \"delayed\", \"tensorwise\", \"blockwise\" or "
        "\"mxfp8\", got \"cs\"");
  spec.fp8_recipe = "blockwise";
  spec.precision = "bf16";
  CHECK(as_flags(spec) == "--fp8-recipe scales FP8 tensors: not with --precision bf16");
}

TEST_CASE("workload_from: recomputed modules are training's, and not with checkpointing",
          "[workload_spec]") {
  WorkloadSpec spec;
  spec.recompute = {"mla_up_proj", "mlp"};
  CHECK(as_flags(spec) == "--recompute is for training: add --mode training");
  spec.mode = "training";
  CHECK(workload_from(spec).recompute == (static_cast<unsigned>(RecomputeModule::kMlp) |
                                          static_cast<unsigned>(RecomputeModule::kMlaUpProj)));
  spec.checkpointing = true;
  CHECK(as_flags(spec) ==
        "--recompute selects modules to recompute, --checkpointing recomputes every block: give "
        "one of them");
  spec.checkpointing = false;
  // Megatron-Core's default module, core attention's, is what every run assumes: it adds nothing.
  spec.recompute = {"core_attn", "mlp"};
  CHECK(workload_from(spec).recompute == static_cast<unsigned>(RecomputeModule::kMlp));
  spec.recompute = {"core_attention"};
  CHECK(as_flags(spec) ==
        "--recompute: expected \"core_attn\", \"layernorm\", \"mlp\", \"moe_act\", "
        "\"mla_up_proj\", \"moe\" or \"shared_experts\", got \"core_attention\"");
}

TEST_CASE("workload_from: checkpoint_layers picks the blocks checkpointing recomputes",
          "[workload_spec]") {
  WorkloadSpec spec;
  spec.mode = "training";
  spec.checkpoint_layers = 5;
  CHECK(as_flags(spec) ==
        "--checkpoint-layers picks the blocks --checkpointing recomputes: turn on "
        "--checkpointing");
  spec.checkpointing = true;
  CHECK(workload_from(spec).checkpoint_layers == 5);
}

TEST_CASE("workload_from: a MoE dispatcher is named and goes with expert parallelism",
          "[workload_spec]") {
  WorkloadSpec spec;
  spec.devices = 8;
  spec.expert_parallel = 8;
  CHECK(workload_from(spec).moe_dispatcher == MoeDispatcher::kAllToAll);
  spec.moe_dispatcher = "deepep";
  CHECK(workload_from(spec).moe_dispatcher == MoeDispatcher::kDeepEP);
  spec.moe_dispatcher = "hybridep";
  CHECK(workload_from(spec).moe_dispatcher == MoeDispatcher::kHybridEP);
  spec.moe_dispatcher = "nccl";
  CHECK(as_flags(spec) ==
        "--moe-dispatcher: expected \"alltoall\", \"deepep\", \"hybridep\" or \"allgather\", got "
        "\"nccl\"");
  // Nothing to dispatch without expert parallelism, whichever dispatcher.
  spec.expert_parallel = 1;
  spec.moe_dispatcher = "alltoall";
  CHECK(as_flags(spec) ==
        "--moe-dispatcher sends tokens to experts on other devices: add --expert-parallel above "
        "1");
}
