// The all-gather token dispatcher (Megatron-Core's MoEAllGatherTokenDispatcher, its default;
// vLLM's expert parallelism), derived by hand on the round device: a link of 100 GB/s each way
// used at half of it (50 GB/s) with 10 us a collective. A ring all-gather or reduce-scatter of
// B bytes among n devices sends (n-1)/n x B from each; an all-reduce twice that.
#include "capcalc/error.hpp"
#include "capcalc/predict.hpp"

#include "catch.hpp"
#include "round_device.hpp"
#include "test_graphs.hpp"

using namespace capcalc;
using capcalc::test::attention_moe_block;
using capcalc::test::collective_round_params;
using capcalc::test::linked_round_device;

namespace {

constexpr double kMiB = 1024.0 * 1024;

// One collective of `bytes` among `n` on the round link: all-gather or reduce-scatter
// (`phases` 1) or all-reduce (2).
double ring_s(double bytes, double n, double phases) {
  return 10e-6 + phases * (n - 1) / n * bytes / 50e9;
}

Workload fp16(Mode mode, std::int64_t devices, std::int64_t tp, std::int64_t ep) {
  Workload w;
  w.precision = Precision::kFp16;
  w.mode = mode;
  w.devices = devices;
  w.tensor_parallel = tp;
  w.expert_parallel = ep;
  return w;
}

}  // namespace

// Training, TP 2 x 8 replicas, EP 8: the block's 512 tokens of d = 1024 at 2 bytes are 1 MiB,
// each device's sequence-parallel half 0.5 MiB.
TEST_CASE("predict: the all-gather dispatcher gathers over the expert x tensor-parallel group",
          "[predict]") {
  const Graph g = attention_moe_block();
  const Device d = linked_round_device("Round link", 200e9);
  const PerformanceParams p = collective_round_params();
  const Workload alltoall = fp16(Mode::kTraining, 16, 2, 8);
  Workload gather = alltoall;
  gather.moe_dispatcher = MoeDispatcher::kAllGather;
  const Estimate a = estimate(g, d, p, alltoall);
  const Estimate b = estimate(g, d, p, gather);
  // Split experts (etp 2): the group is the 2 x 8 = 16 devices side by side; together they hold
  // 16 x 0.5 MiB = 8 MiB. Forward an all-gather of it and a reduce-scatter of the outputs,
  // backward the same two the other way: 2 pairs.
  CHECK(b.expert_collective == "all-gather + reduce-scatter pair");
  CHECK(b.alltoalls == 2);
  CHECK(b.expert_parallel_s == Approx(2 * 2 * ring_s(8 * kMiB, 16, 1)));
  CHECK(b.alltoall_bytes == Approx(2 * 2 * 15.0 / 16 * 8 * kMiB));
  CHECK(b.expert_parallel_link == "Round link");
  // The all-to-all sends each device's 0.5 MiB x 2 experts a token, 7/8 of it, 4 times.
  CHECK(a.expert_collective == "all-to-all");
  CHECK(a.expert_parallel_s == Approx(4 * (10e-6 + 7.0 / 8 * kMiB / 50e9)));
  // The reduce-scatter sums the split experts' partial products: the moe layer's own
  // tensor-parallel pair goes, as with whole experts (the attention's stays, forward and back).
  CHECK(a.allreduces == 4);
  CHECK(b.allreduces == 2);
  CHECK(b.communication_s == Approx(a.communication_s / 2));
  CHECK(b.flops == Approx(a.flops));
  // Whole experts (etp 1): the group is the 8 expert-parallel devices, 4 MiB between them.
  Workload whole = gather;
  whole.expert_tensor_parallel = 1;
  CHECK(estimate(g, d, p, whole).expert_parallel_s == Approx(2 * 2 * ring_s(4 * kMiB, 8, 1)));
  // Checkpointing runs the forward's pair again.
  Workload again = gather;
  again.checkpointing = true;
  const Estimate c = estimate(g, d, p, again);
  CHECK(c.alltoalls == 3);
  CHECK(c.expert_parallel_s == Approx(3 * 2 * ring_s(8 * kMiB, 16, 1)));
  CHECK_THAT(parallelism_text(whole),
             ContainsSubstring("(expert-parallel 8, whole experts, all-gather dispatch)"));
  // Nothing to gather without expert parallelism.
  Workload alone = gather;
  alone.expert_parallel = 1;
  CHECK_THROWS_WITH(estimate(g, d, p, alone),
                    "the all-gather dispatcher sends tokens to experts on other devices: add "
                    "--expert-parallel");
}

// Inference as vLLM runs expert parallelism without data parallelism: TP 4, EP 4, whole experts.
// The attention's all-reduce leaves every token on each of the 4 devices, so nothing is
// gathered: each runs its 2 experts and the outputs are all-reduced, as tensor parallelism
// all-reduces them.
TEST_CASE("predict: expert parallelism over a replica's tensor-parallel devices all-reduces",
          "[predict]") {
  const Graph g = attention_moe_block();
  const Device d = linked_round_device("Round link", 200e9);
  const PerformanceParams p = collective_round_params();
  const Workload tp = fp16(Mode::kInference, 4, 4, 1);
  Workload ep = fp16(Mode::kInference, 4, 4, 4);
  ep.expert_tensor_parallel = 1;
  ep.moe_dispatcher = MoeDispatcher::kAllGather;
  const Estimate a = estimate(g, d, p, tp);
  const Estimate b = estimate(g, d, p, ep);
  // Tensor parallelism alone: 2 all-reduces of the 1 MiB outputs (attention, moe).
  CHECK(a.allreduces == 2);
  CHECK(a.communication_s == Approx(2 * ring_s(kMiB, 4, 2)));
  // Expert parallelism: the attention's all-reduce, and the moe layer's as its one exchange.
  CHECK(b.allreduces == 1);
  CHECK(b.expert_collective == "all-reduce");
  CHECK(b.alltoalls == 1);
  CHECK(b.expert_parallel_s == Approx(ring_s(kMiB, 4, 2)));
  CHECK(b.alltoall_bytes == Approx(2 * 3.0 / 4 * kMiB));
  CHECK(b.communication_s + b.expert_parallel_s == Approx(a.communication_s));
  // The same work; the expert weights (4 x 2 whole experts against 8 quarters) the same bytes.
  CHECK(b.flops == Approx(a.flops));
  CHECK(b.memory.weight_bytes == Approx(a.memory.weight_bytes));
  // Data parallelism instead (4 replicas of 1 device, each its own 512 tokens): the 4 gather
  // each other's 1 MiB and reduce-scatter the outputs.
  Workload replicas = fp16(Mode::kInference, 4, 1, 4);
  replicas.moe_dispatcher = MoeDispatcher::kAllGather;
  const Estimate c = estimate(g, d, p, replicas);
  CHECK(c.expert_collective == "all-gather + reduce-scatter pair");
  CHECK(c.expert_parallel_s == Approx(2 * ring_s(4 * kMiB, 4, 1)));
}
