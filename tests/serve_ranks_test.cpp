// Data-parallel attention ranks in the serving simulator (vLLM's --data-parallel-size with an
// MoE model, SGLang's --enable-dp-attention): the ranks step together, each request goes to one
// rank by the runtime's rule, and a lone request is served as by one rank.
#include <vector>

#include "capcalc/error.hpp"
#include "capcalc/serve.hpp"

#include "catch.hpp"
#include "round_device.hpp"
#include "serve_helpers.hpp"
#include "serve_tally.hpp"

using namespace capcalc;
using capcalc::test::LinearCost;
using serving::pick_rank;
using serving::RankLoad;

namespace {

// LinearCost's step (1 ms + 0.1 ms a decode sequence + 1 µs a prompt token) plus moe layers of
// 2 µs a token, decoded or prompt, which data-parallel ranks share.
class SharedMoeCost final : public StepCost {
 public:
  double step_s(std::int64_t decode, double context, std::int64_t prefill, std::int64_t sequences,
                double prefill_context) override {
    return 1e-3 + 1e-4 * static_cast<double>(decode) + 1e-6 * static_cast<double>(prefill) +
           shared_s(decode, context, prefill, sequences, prefill_context);
  }
  double batch_s(std::int64_t) override { return 0; }
  double shared_s(std::int64_t decode, double, std::int64_t prefill, std::int64_t,
                  double) override {
    return 2e-6 * static_cast<double>(decode + prefill);
  }
};

// vLLM's scheduler on `ranks` data-parallel ranks with room for every request.
ContinuousBatching on_ranks(std::int64_t ranks) {
  ContinuousBatching batching;
  batching.kv_blocks = 10'000;
  batching.attention_ranks = ranks;
  return batching;
}

}  // namespace

TEST_CASE("serve: data-parallel attention ranks step together, each step the slowest rank's",
          "[serve][ranks]") {
  // Steps cost 1 ms + 0.1 ms a decode sequence + 1 µs a prompt token. Three requests at t = 0:
  // A of 1,000 + 2 tokens, B and C of 100 + 2. vLLM deals A to rank 0 (both empty), B to rank 1
  // (rank 0 scores 4 x 1 waiting), C to rank 0 (4 against 4: the first). Step 1: rank 0
  // prefills A and C, 1 + 1.1 = 2.1 ms; rank 1 prefills B, 1.1 ms; together 2.1 ms, the first
  // token of all three. Step 2: rank 0 decodes two, 1.2 ms; rank 1 one, 1.1 ms: together 1.2 ms,
  // all done at 3.3 ms. Two independent replicas would give B its first token at 1.1 ms and its
  // last at 2.2 ms.
  LinearCost cost(1e-3, 1e-4, 1e-6);
  ContinuousBatching batching = on_ranks(2);
  const std::vector<TraceRequest> requests = {{0, 1'000, 2}, {0, 100, 2}, {0, 100, 2}};
  const ServeResult r = simulate_continuous(requests, batching, cost);
  CHECK(r.attention_ranks == 2);
  CHECK(r.ttft.mean == Approx(2.1e-3));
  CHECK(r.ttft.max == Approx(2.1e-3));
  CHECK(r.e2e.mean == Approx(3.3e-3));
  CHECK(r.e2e.max == Approx(3.3e-3));
  CHECK(r.steps == 2);      // Per replica: the ranks' steps are one.
  CHECK(r.max_batch == 2);  // Per rank: A and C.
  CHECK(r.busy_fraction == Approx(1));

  batching.attention_ranks = 1;
  const ServeResult apart = simulate_continuous(requests, batching, cost, 2);
  CHECK(apart.ttft.mean == Approx((2.1e-3 + 1.1e-3 + 2.1e-3) / 3));
  CHECK(apart.e2e.mean == Approx((3.3e-3 + 2.2e-3 + 3.3e-3) / 3));
}

TEST_CASE("serve: vLLM deals a request to the lowest 4 x waiting + running, SGLang in turn",
          "[serve][ranks]") {
  // vLLM: 5 running score 5, 1 waiting 4: the second.
  CHECK(pick_rank({{0, 5}, {1, 0}}, Scheduler::kVllm, 0) == 1);
  // 4 against 4: the first of equals.
  CHECK(pick_rank({{1, 0}, {0, 4}}, Scheduler::kVllm, 7) == 0);
  CHECK(pick_rank({{2, 1}, {2, 0}, {1, 5}}, Scheduler::kVllm, 0) == 1);  // 9, 8, 9.
  // SGLang's round robin ignores the queues.
  const std::vector<RankLoad> loads = {{0, 9}, {0, 0}, {3, 0}};
  std::vector<std::size_t> picked;
  for (std::size_t turn = 0; turn < 6; ++turn)
    picked.push_back(pick_rank(loads, Scheduler::kSglang, turn));
  CHECK(picked == std::vector<std::size_t>{0, 1, 2, 0, 1, 2});
}

TEST_CASE("serve: a lone request on data-parallel ranks is served as by one rank",
          "[serve][ranks]") {
  // At a rate near zero every request is alone: a 1.1 ms prefill and nine 1.1 ms decode steps
  // however many ranks wait beside it (their dummy passes cost nothing of their own).
  LinearCost cost(1e-3, 1e-4, 1e-6);
  ContinuousBatching batching = on_ranks(1);
  ServeLoad load;
  load.rate_per_s = 0.001;
  load.requests = 20;
  load.prompt.a = 100;
  load.output.a = 10;
  const std::vector<TraceRequest> requests = generate_requests(load);
  const ServeResult one = simulate_continuous(requests, batching, cost);
  batching.attention_ranks = 4;
  const ServeResult four = simulate_continuous(requests, batching, cost);
  CHECK(four.ttft.mean == Approx(1.1e-3));
  CHECK(four.e2e.mean == Approx(11e-3));
  CHECK(four.e2e.mean == Approx(one.e2e.mean));
  CHECK(four.steps == one.steps);
  // The idle ranks step with the busy one: the busy share is the replica's.
  CHECK(four.busy_fraction == Approx(one.busy_fraction));
}

TEST_CASE("serve: disaggregated pools of data-parallel ranks are refused, not mis-simulated",
          "[serve][ranks][errors]") {
  LinearCost cost(1e-3, 1e-4, 1e-6);
  ContinuousBatching batching = on_ranks(2);
  Disaggregation pools;
  pools.prefill_replicas = 1;
  pools.decode_replicas = 1;
  const std::vector<TraceRequest> one = {{0, 100, 2}};
  CHECK_THROWS_WITH(simulate_disaggregated(one, batching, cost, pools),
                    "disaggregated serving with data-parallel attention is not modelled");
  batching.attention_ranks = 0;
  CHECK_THROWS_AS(simulate_continuous(one, batching, cost), Error);
}

TEST_CASE("serve: data-parallel ranks share their moe layers over every rank's tokens",
          "[serve][ranks]") {
  // Two ranks, A (1,000 + 2 tokens) on rank 0 and B (100 + 2) on rank 1. Step 1: rank 0's own
  // part is its 4 ms step less its moe layers' 2 ms, 2 ms; rank 1's 1.3 - 0.2 = 1.1 ms. The moe
  // layers run over the 1,100 prompt tokens of both, 550 a rank: 1.1 ms. The step: 2 + 1.1 =
  // 3.1 ms (the slowest whole step, 4 ms, would overstate it). Step 2: each decodes one, 1.1 ms
  // of its own and 2 µs of moe layers: 1.102 ms, done at 4.202 ms.
  SharedMoeCost cost;
  ContinuousBatching batching = on_ranks(2);
  const std::vector<TraceRequest> requests = {{0, 1'000, 2}, {0, 100, 2}};
  const ServeResult r = simulate_continuous(requests, batching, cost);
  CHECK(r.ttft.max == Approx(3.1e-3));
  CHECK(r.ttft.mean == Approx(3.1e-3));
  CHECK(r.e2e.mean == Approx(4.202e-3));
  // A rank's shares round up: one decode among two ranks counts one a rank (2 µs), so a lone
  // request steps as on one rank.
  batching.attention_ranks = 1;
  const ServeResult alone = simulate_continuous({{0, 100, 3}}, batching, cost);
  batching.attention_ranks = 2;
  const ServeResult beside = simulate_continuous({{0, 100, 3}}, batching, cost);
  CHECK(alone.e2e.mean == Approx(1.3e-3 + 2 * 1.102e-3));
  // The lone prompt's 100 tokens are shared as 50 a rank: 1.1 + 0.1 ms.
  CHECK(beside.ttft.mean == Approx(1.2e-3));
  CHECK(beside.e2e.mean == Approx(1.2e-3 + 2 * 1.102e-3));
}

TEST_CASE("serve: a model's shared step part is its moe layers and their exchange",
          "[serve][ranks]") {
  // Mixtral 8x7B at 4 decoding sequences: shared_s is the moe layers' times and the token
  // exchange of estimate() at that step, the rest of step_s the rank's own.
  const BatchGraphBuilder build = capcalc::test::model_builder("mixtral_8x7b_hf.json");

  Workload w;
  w.precision = Precision::kFp16;
  w.devices = 8;
  w.expert_parallel = 8;
  w.expert_tensor_parallel = 1;
  w.moe_dispatcher = MoeDispatcher::kAllGather;
  const Device device = capcalc::test::linked_round_device("Round link", 400e9);
  ModelStepCost cost(build, device, capcalc::test::round_params(), w);
  Graph graph = build(4, 1, 0);
  drop_prefill_only_layers(graph);
  const Estimate e = estimate(graph, device, capcalc::test::round_params(), w);
  double moe = e.expert_parallel_s;
  int moe_layers = 0;
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    if (graph.layers[i].view || graph.layers[i].counts.experts == 0) continue;
    moe += e.layers[i].time_s;
    ++moe_layers;
  }
  CHECK(moe_layers == 32);
  CHECK(e.expert_parallel_s > 0);
  CHECK(cost.shared_s(4, 0, 0, 0, 0) == Approx(moe));
  CHECK(cost.step_s(4, 0, 0, 0, 0) == Approx(e.latency_s));
  CHECK(moe < e.latency_s);
}
