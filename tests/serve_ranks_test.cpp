// Data-parallel attention ranks in the serving simulator (vLLM's --data-parallel-size with an
// MoE model, SGLang's --enable-dp-attention): the ranks step together, each request goes to one
// rank by the runtime's rule, and a lone request is served as by one rank.
#include <vector>

#include "capcalc/error.hpp"
#include "capcalc/serve.hpp"

#include "catch.hpp"
#include "linear_cost.hpp"
#include "serve_tally.hpp"

using namespace capcalc;
using capcalc::test::LinearCost;
using serving::pick_rank;
using serving::RankLoad;

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
  ContinuousBatching batching;
  batching.kv_blocks = 10'000;
  batching.attention_ranks = 2;
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
  ContinuousBatching batching;
  batching.kv_blocks = 10'000;
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
  ContinuousBatching batching;
  batching.kv_blocks = 10'000;
  batching.attention_ranks = 2;
  Disaggregation pools;
  pools.prefill_replicas = 1;
  pools.decode_replicas = 1;
  const std::vector<TraceRequest> one = {{0, 100, 2}};
  CHECK_THROWS_WITH(simulate_disaggregated(one, batching, cost, pools),
                    "disaggregated serving with data-parallel attention is not modelled");
  batching.attention_ranks = 0;
  CHECK_THROWS_AS(simulate_continuous(one, batching, cost), Error);
}
