// The serving simulator held to queueing theory where theory has an answer (M/D/1, Little's
// law), to the performance model at the limits (an idle server, a saturated one), and to the
// shape of Triton's dynamic-batching result.
#include "capcalc/serve.hpp"

#include <cmath>

#include "capcalc/error.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/model.hpp"

#include "catch.hpp"
#include "input_file.hpp"
#include "round_device.hpp"
#include "serve_helpers.hpp"
#include "test_data.hpp"

using namespace capcalc;
using capcalc::test::LinearCost;
using capcalc::test::round_device;
using capcalc::test::round_params;

namespace {

// Little's law: over a run that starts and ends empty, the time-average number in the system
// is throughput × mean time in it; the simulator integrates the first from arrival and finish
// events and takes the second from the per-request records.
void check_little(const ServeResult& r) {
  CHECK(r.littles_law_ratio == Approx(1).epsilon(0.01));
}

ServeLoad poisson(double rate, std::int64_t requests, std::int64_t prompt, std::int64_t output) {
  ServeLoad load;
  load.rate_per_s = rate;
  load.requests = requests;
  load.prompt.a = static_cast<double>(prompt);
  load.output.a = static_cast<double>(output);
  return load;
}

// Pythia-160M (GPT-NeoX, a small decoder) at batch b, seq s over c cached tokens.
BatchGraphBuilder pythia() {
  return capcalc::test::model_builder("pythia_160m_hf.json");
}

Workload fp16() {
  Workload w;
  w.precision = Precision::kFp16;
  return w;
}

}  // namespace

TEST_CASE("serve: M/D/1 mean wait matches Pollaczek-Khinchine", "[serve]") {
  // One server, batch 1, service S = 10 ms, Poisson arrivals at rho / S. Pollaczek-Khinchine
  // for deterministic service: Wq = rho S / (2 (1 - rho)) (Kleinrock, Queueing Systems I, 5.7).
  const double service = 0.010;
  for (const double rho : {0.5, 0.8}) {
    LinearCost cost(service, 0, 0);
    ServeLoad load = poisson(rho / service, 400'000, 1, 1);
    DynamicBatching one;  // max_batch_size 1.
    const ServeResult r = simulate_dynamic(generate_requests(load), one, cost);
    const double wq = rho * service / (2 * (1 - rho));
    CHECK(r.queue.mean == Approx(wq).epsilon(0.02));
    CHECK(r.e2e.mean == Approx(wq + service).epsilon(0.02));
    CHECK(r.busy_fraction == Approx(rho).epsilon(0.01));
    check_little(r);
  }
}

TEST_CASE("serve: an idle LLM server answers in one prefill and batch-1 decode steps", "[serve]") {
  // At a rate near zero every request is alone: TTFT is the prefill of its prompt (one step:
  // the budget holds it) and each further token a batch-1 decode step over the cache so far.
  const BatchGraphBuilder build = pythia();
  ModelStepCost cost(build, round_device(), round_params(), fp16());
  ContinuousBatching batching;
  batching.kv_blocks = 10'000;
  const std::int64_t prompt = 500;
  const std::int64_t output = 101;
  const ServeResult r =
      simulate_continuous(generate_requests(poisson(0.001, 20, prompt, output)), batching, cost);
  // The prefill computes the logits of the prompt's last token only: Pythia's 50,304-wide LM
  // head over all 500 tokens would make it more than a tenth slower.
  Graph prompt_graph = build(1, prompt, 0);
  const double every_token =
      estimate(prompt_graph, round_device(), round_params(), fp16()).latency_s;
  CHECK(last_token_logits(prompt_graph) == 1);
  const double prefill = estimate(prompt_graph, round_device(), round_params(), fp16()).latency_s;
  CHECK(every_token > 1.1 * prefill);
  // Decode steps for tokens 2..101 read caches of 500..599 tokens; the step is affine in the
  // context, so their mean is the step at 549.5 (549 and 550 averaged).
  Graph at_549 = build(1, 1, 549);
  Graph at_550 = build(1, 1, 550);
  const double decode = (estimate(at_549, round_device(), round_params(), fp16()).latency_s +
                         estimate(at_550, round_device(), round_params(), fp16()).latency_s) /
                        2;
  CHECK(r.ttft.mean == Approx(prefill).epsilon(0.01));
  CHECK(r.ttft.p99 == Approx(prefill).epsilon(0.01));
  CHECK(r.tpot.mean == Approx(decode).epsilon(0.01));
  CHECK(r.e2e.mean == Approx(prefill + 100 * decode).epsilon(0.01));
  CHECK(r.queue.max == 0);
  CHECK(r.max_batch == 1);
  check_little(r);
}

// A step's prompt tokens come from several requests, each attending to its own tokens: P(t, k)
// times k sequences of t / k, not one sequence of t (whose attention is k times as large).
TEST_CASE("serve: a step's prompt chunks attend within their own requests", "[serve]") {
  const BatchGraphBuilder build = pythia();
  ModelStepCost cost(build, round_device(), round_params(), fp16());
  const auto timed = [&](std::int64_t batch, std::int64_t seq) {
    Graph graph = build(batch, seq, 0);
    last_token_logits(graph);
    return estimate(graph, round_device(), round_params(), fp16()).latency_s;
  };
  // 4 x 8 tokens and 1 x 32, on exact grid points (up to 16 each).
  CHECK(cost.prefill_s(32, 4) == Approx(timed(4, 8)));
  CHECK(cost.prefill_s(32, 1) == Approx(timed(1, 32)));
  CHECK(cost.prefill_s(32) == Approx(timed(1, 32)));
  // 2,048 tokens: 4 prompts of 512 do a quarter of one 2,048-token prompt's attention.
  CHECK(cost.prefill_s(2048, 4) < cost.prefill_s(2048, 1));
  // A mixed step prices its prompt tokens as what they add to the decode batch, per request.
  const double d = cost.decode_s(8, 100);
  CHECK(cost.step_s(8, 100, 24, 3, 0) == Approx(d + cost.prefill_s(32, 3) - cost.prefill_s(8, 3)));
}

// A chunk of a long prompt attends to the prompt's earlier chunks, already in the cache: P(t, k,
// c) is the model at k sequences of t / k new tokens over c cached ones, on the decode's context
// grid (0, 256, 1,024, 4,096, ...), linear between.
TEST_CASE("serve: a prompt chunk attends to its earlier chunks in the cache", "[serve]") {
  const BatchGraphBuilder build = pythia();
  ModelStepCost cost(build, round_device(), round_params(), fp16());
  const auto timed = [&](std::int64_t batch, std::int64_t seq, std::int64_t cached) {
    Graph graph = build(batch, seq, cached);
    last_token_logits(graph);
    return estimate(graph, round_device(), round_params(), fp16()).latency_s;
  };
  CHECK(cost.prefill_s(16, 1, 1024) == Approx(timed(1, 16, 1024)));
  CHECK(cost.prefill_s(16, 2, 4096) == Approx(timed(2, 8, 4096)));
  CHECK(cost.prefill_s(16, 1, 2560) ==
        Approx((timed(1, 16, 1024) + timed(1, 16, 4096)) / 2));  // Halfway from 1,024 to 4,096.
  // Later chunks cost more: their queries meet more keys, and read them from the cache.
  CHECK(cost.prefill_s(16, 1, 4096) > cost.prefill_s(16, 1, 1024));
  CHECK(cost.prefill_s(16, 1, 1024) > cost.prefill_s(16, 1, 0));
  CHECK(cost.step_s(0, 0, 16, 1, 1024) == Approx(cost.prefill_s(16, 1, 1024)));

  // A 64-token prompt in chunks of 16 (the token budget): its first token comes after four
  // prefill steps over 0, 16, 32 and 48 cached tokens (each between 0 and 256 on the grid).
  ContinuousBatching batching;
  batching.kv_blocks = 10'000;
  batching.max_num_batched_tokens = 16;
  const ServeResult r =
      simulate_continuous(generate_requests(poisson(0.001, 1, 64, 1)), batching, cost);
  const double chunks = cost.prefill_s(16, 1, 0) + cost.prefill_s(16, 1, 16) +
                        cost.prefill_s(16, 1, 32) + cost.prefill_s(16, 1, 48);
  CHECK(r.ttft.mean == Approx(chunks));
  CHECK(chunks > 4 * cost.prefill_s(16, 1, 0));
}

TEST_CASE("serve: at saturation output tokens/s is the decode capacity of the largest batch",
          "[serve]") {
  // Every request at once, 16-token prompts and 512 generated tokens: the scheduler keeps
  // max_num_seqs = 64 sequences decoding, so output tokens/s -> 64 / D(64, mean context), the
  // mean context being 16 + 511/2 (prefill chunks of 16 tokens add little beside).
  const BatchGraphBuilder build = pythia();
  ModelStepCost cost(build, round_device(), round_params(), fp16());
  ContinuousBatching batching;
  batching.max_num_seqs = 64;
  batching.kv_blocks = 100'000;
  const ServeResult r =
      simulate_continuous(generate_requests(poisson(1e6, 640, 16, 512)), batching, cost);
  const double capacity = 64 / cost.decode_s(64, 16 + 511.0 / 2);
  CHECK(r.output_tokens_per_s == Approx(capacity).epsilon(0.03));
  CHECK(r.output_tokens_per_s < capacity);
  CHECK(r.max_batch == 64);
  CHECK(r.saturated);
  check_little(r);
}

TEST_CASE("serve: chunked prefill splits a prompt over the token budget", "[serve]") {
  // Fixed 1 ms per step + 1 us per prompt token: a lone 2,000-token prompt with a 512-token
  // budget takes 4 steps (512, 512, 512, 464): TTFT = 4 x 1 ms + 2000 x 1 us = 6 ms. Each later
  // token is a step of 1 ms + 0.1 ms for the one decoding sequence.
  LinearCost cost(1e-3, 1e-4, 1e-6);
  ContinuousBatching batching;
  batching.max_num_batched_tokens = 512;
  batching.kv_blocks = 1000;
  const ServeResult r =
      simulate_continuous(generate_requests(poisson(0.01, 5, 2000, 11)), batching, cost);
  CHECK(r.ttft.mean == Approx(4e-3 + 2000e-6));
  CHECK(r.tpot.mean == Approx(1.1e-3));
  CHECK(r.itl.p50 == Approx(1.1e-3).epsilon(0.01));  // Histogram bins are 1 % wide.

  batching.chunked_prefill = false;
  REQUIRE_THROWS_WITH(
      simulate_continuous(generate_requests(poisson(0.01, 5, 2000, 11)), batching, cost),
      "a prompt of 2000 tokens exceeds the token budget of 512 and prefill is not chunked");
}

TEST_CASE("serve: without chunked prefill a prompt that does not fit what is left waits",
          "[serve]") {
  // Two 300-token prompts at t = 0, two output tokens each, budget 512; 1 ms per step + 0.1 ms
  // per decoding sequence + 1 us per prompt token.
  // Chunked: step 1 = A's 300 + 212 of B (1.512 ms, A's first token); step 2 = A's decode + B's
  // last 88 (1 + 0.1 + 0.088 = 1.188 ms, B's first token at 2.700 ms): mean TTFT 2.106 ms.
  // Not chunked (TensorRT-LLM's default): B's 300 do not fit the 212 left, so step 1 is A alone
  // (1.3 ms) and step 2 A's decode + all of B (1.4 ms, B's first token at 2.7 ms): mean 2.0 ms.
  LinearCost cost(1e-3, 1e-4, 1e-6);
  ContinuousBatching batching;
  batching.max_num_batched_tokens = 512;
  batching.kv_blocks = 1000;
  const std::vector<TraceRequest> requests = {{0, 300, 2}, {0, 300, 2}};
  ServeResult r = simulate_continuous(requests, batching, cost);
  CHECK(r.ttft.mean == Approx((1.512e-3 + 2.700e-3) / 2));
  batching.chunked_prefill = false;
  r = simulate_continuous(requests, batching, cost);
  CHECK(r.ttft.mean == Approx((1.3e-3 + 2.7e-3) / 2));
  check_little(r);
}

// SGLang runs a prefill batch or a decode batch, never both, prefill first. A (100 prompt, 3
// output tokens) at t = 0 and B (100, 2) at 1.5 ms; 1 ms a step + 0.1 ms a decoding sequence +
// 1 us a prompt token. SGLang: A's prefill ends at 1.1 ms; a decode of A (B not yet there) at
// 2.2; B's prefill alone at 3.3 (TTFT 1.8 ms); A and B decode together, 1.2 ms: both done at
// 4.5. vLLM: A's prefill 1.1, its decode 2.2, then A's last decode and B's prompt in one step
// of 1.2 ms: A done and B's first token at 3.4 (TTFT 1.9 ms), B's decode 1.1 ms: done at 4.5.
TEST_CASE("serve: SGLang's scheduler runs prefill and decode steps apart, prefill first",
          "[serve][sglang]") {
  LinearCost cost(1e-3, 1e-4, 1e-6);
  ContinuousBatching batching;
  batching.block_size = 1;
  batching.kv_blocks = 10000;
  batching.max_num_batched_tokens = 512;
  const std::vector<TraceRequest> requests = {{0, 100, 3}, {1.5e-3, 100, 2}};
  batching.scheduler = Scheduler::kSglang;
  ServeResult r = simulate_continuous(requests, batching, cost);
  CHECK(r.ttft.max == Approx(1.8e-3));                  // B.
  CHECK(r.ttft.mean == Approx((1.1e-3 + 1.8e-3) / 2));  // A and B.
  CHECK(r.e2e.max == Approx(4.5e-3));                   // A, from t = 0.
  CHECK(r.e2e.mean == Approx((4.5e-3 + 3.0e-3) / 2));   // B from 1.5 ms.
  CHECK(r.duration_s == Approx(4.5e-3));
  check_little(r);
  batching.scheduler = Scheduler::kVllm;
  r = simulate_continuous(requests, batching, cost);
  CHECK(r.ttft.max == Approx(1.9e-3));
  CHECK(r.e2e.max == Approx(3.4e-3));                  // A.
  CHECK(r.e2e.mean == Approx((3.4e-3 + 3.0e-3) / 2));  // B, done at 4.5 ms.
}

// SGLang admits a request only while its prompt and whole output (clipped at 4,096) stay below
// the free cache less the running requests' expected output, and once a request fails the
// batch takes no other until it shrinks. A cache of 1,000 tokens, three requests of 100 + 400
// at t = 0: A takes 500 of the 1,000, B's 500 would leave none (>= the budget): A runs alone,
// its prefill 1.1 ms and 399 decode steps of 1.1 ms, done at 440 ms; then B, then C. TTFT 1.1,
// 441.1 and 881.1 ms, nothing retracted. vLLM admits all three prompts in the first step.
TEST_CASE("serve: SGLang admits on the prompt and the expected output", "[serve][sglang]") {
  LinearCost cost(1e-3, 1e-4, 1e-6);
  ContinuousBatching batching;
  batching.scheduler = Scheduler::kSglang;
  batching.block_size = 1;
  batching.kv_blocks = 1000;
  batching.max_num_batched_tokens = 8192;
  const std::vector<TraceRequest> requests = {{0, 100, 400}, {0, 100, 400}, {0, 100, 400}};
  ServeResult r = simulate_continuous(requests, batching, cost);
  CHECK(r.ttft.max == Approx(1.1e-3 + 2 * 440e-3));
  CHECK(r.ttft.mean == Approx(1.1e-3 + 440e-3));
  CHECK(r.preemptions == 0);
  check_little(r);
  batching.scheduler = Scheduler::kVllm;
  r = simulate_continuous(requests, batching, cost);
  CHECK(r.ttft.max < 2e-3);
  // A request that fills the cache exactly fits vLLM's blocks but never SGLang's budget.
  batching.scheduler = Scheduler::kSglang;
  REQUIRE_THROWS_WITH(simulate_continuous({{0, 600, 400}}, batching, cost),
                      "SGLang admits a request only while its prompt and output (clipped at "
                      "4096) stay below the free KV cache: 600 + 400 tokens against a cache of "
                      "1000 tokens");
}

// The ratio lets requests in on less than their whole output: as short requests finish beside
// long ones, new ones are admitted against the long ones' remaining output times a ratio that
// has decayed from 0.7, and a cache of 640 tokens runs short in decode. A step short of room
// retracts requests (the fewest tokens generated first) to the queue, to be prefilled again
// with what they generated: every request still finishes and every output token counts once.
TEST_CASE("serve: SGLang retracts when decode outgrows the cache", "[serve][sglang]") {
  LinearCost cost(1e-3, 1e-5, 1e-6);
  ContinuousBatching batching;
  batching.scheduler = Scheduler::kSglang;
  batching.block_size = 1;
  batching.kv_blocks = 640;
  std::vector<TraceRequest> requests;
  for (int i = 0; i < 40; ++i)
    requests.push_back({0, 20, i % 2 == 0 ? 300 : 30});
  const ServeResult r = simulate_continuous(requests, batching, cost);
  CHECK(r.requests == 40);
  CHECK(r.preemptions > 0);
  CHECK(r.peak_kv_occupancy <= 1);
  CHECK(r.output_tokens_per_s * r.duration_s == Approx(20 * 300 + 20 * 30));
  check_little(r);
}

TEST_CASE("serve: reserving a request's blocks to its end admits it only when they are free",
          "[serve]") {
  // A cache of 3 blocks of 16 tokens; two requests at t = 0 of 16 prompt + 20 output tokens, 36
  // tokens or 3 blocks each. Reserved (TensorRT-LLM's GUARANTEED_NO_EVICT): A takes all 3, B
  // waits. A: prefill 1 ms + 16 us = 1.016 ms, then 19 decode steps of 1.1 ms, done at 21.916 ms;
  // B's prefill then ends at 22.932 ms: mean TTFT 11.974 ms, nothing preempted. Not reserved
  // (vLLM), both start at once and one is preempted when their second blocks do not fit.
  LinearCost cost(1e-3, 1e-4, 1e-6);
  ContinuousBatching batching;
  batching.kv_blocks = 3;
  const std::vector<TraceRequest> requests = {{0, 16, 20}, {0, 16, 20}};
  ServeResult r = simulate_continuous(requests, batching, cost);
  CHECK(r.preemptions > 0);
  batching.reserve_full_request = true;
  r = simulate_continuous(requests, batching, cost);
  CHECK(r.preemptions == 0);
  CHECK(r.ttft.mean == Approx((1.016e-3 + 22.932e-3) / 2));
  CHECK(r.e2e.max == Approx(22.932e-3 + 19 * 1.1e-3));
  check_little(r);
}

// TensorRT-LLM sizes its cache in a fraction of the memory the weights and the profiling step's
// activations leave free; vLLM in a fraction of the device's memory, less both. The same 0.9 on
// the 16 GB round GPU: 0.9 x (16e9 - W - A) against 0.9 x 16e9 - W - A, 0.1 x (W + A) more.
// SGLang's static fraction holds the weights and the cache only: 0.9 x 16e9 - W, A more than
// vLLM's.
TEST_CASE("serve: a memory fraction of free memory sizes the cache after the weights", "[serve]") {
  const BatchGraphBuilder build = pythia();
  const KvCapacity device =
      kv_capacity(build, round_device(), round_params(), fp16(), 32, 8192, 0.9);
  const KvCapacity free = kv_capacity(build, round_device(), round_params(), fp16(), 32, 8192, 0.9,
                                      MemoryFraction::kFree);
  const double taken = device.weight_bytes + device.activation_bytes;
  REQUIRE(taken > 0);
  CHECK(device.cache_bytes == Approx(0.9 * 16e9 - taken));
  CHECK(free.cache_bytes == Approx(0.9 * (16e9 - taken)));
  CHECK(free.cache_bytes - device.cache_bytes == Approx(0.1 * taken));
  CHECK(free.blocks == static_cast<std::int64_t>(free.cache_bytes / (32 * free.bytes_per_token)));
  const KvCapacity fixed = kv_capacity(build, round_device(), round_params(), fp16(), 32, 8192, 0.9,
                                       MemoryFraction::kStatic);
  CHECK(fixed.cache_bytes == Approx(0.9 * 16e9 - device.weight_bytes));
  CHECK(fixed.cache_bytes - device.cache_bytes == Approx(device.activation_bytes));
}

TEST_CASE("serve: a full KV cache preempts and every request still finishes", "[serve]") {
  // 40 blocks of 16 tokens = 640 tokens; each request grows to 100 + 200 = 300 tokens, so at
  // most two finish side by side and later ones are preempted and recomputed.
  LinearCost cost(1e-3, 1e-5, 1e-6);
  ContinuousBatching batching;
  batching.kv_blocks = 40;
  const ServeResult r =
      simulate_continuous(generate_requests(poisson(1e4, 50, 100, 200)), batching, cost);
  CHECK(r.requests == 50);
  CHECK(r.preemptions > 0);
  CHECK(r.peak_kv_occupancy <= 1);
  CHECK(r.output_tokens_per_s * r.duration_s == Approx(50 * 200));
  check_little(r);

  batching.kv_blocks = 10;  // 160 tokens: a 300-token request can never fit.
  REQUIRE_THROWS_WITH(
      simulate_continuous(generate_requests(poisson(1, 5, 100, 200)), batching, cost),
      "a request of 100 prompt + 200 output tokens does not fit in the KV cache (10 blocks of 16 "
      "tokens)");
}

TEST_CASE("serve: the same seed gives the same answer, another seed another", "[serve]") {
  LinearCost cost(2e-3, 5e-5, 2e-6);
  ContinuousBatching batching;
  batching.kv_blocks = 2000;
  ServeLoad load = poisson(20, 500, 300, 100);
  load.prompt = parse_length_distribution("lognormal:300,0.5", "--prompt-tokens");
  load.arrival_cv = 2;
  const ServeResult a = simulate_continuous(generate_requests(load), batching, cost);
  const ServeResult b = simulate_continuous(generate_requests(load), batching, cost);
  CHECK(a.e2e.mean == b.e2e.mean);
  CHECK(a.ttft.p99 == b.ttft.p99);
  CHECK(a.steps == b.steps);
  load.seed = 2;
  const ServeResult c = simulate_continuous(generate_requests(load), batching, cost);
  CHECK(c.e2e.mean != a.e2e.mean);
  check_little(a);
  check_little(c);
}

TEST_CASE("serve: arrivals have the asked rate and burstiness", "[serve]") {
  ServeLoad load = poisson(50, 200'000, 1, 1);
  load.arrival_cv = 3;
  const std::vector<TraceRequest> requests = generate_requests(load);
  std::vector<double> gaps;
  for (std::size_t i = 1; i < requests.size(); ++i)
    gaps.push_back(requests[i].arrival_s - requests[i - 1].arrival_s);
  double mean = 0;
  for (double g : gaps)
    mean += g;
  mean /= static_cast<double>(gaps.size());
  double var = 0;
  for (double g : gaps)
    var += (g - mean) * (g - mean);
  var /= static_cast<double>(gaps.size());
  CHECK(mean == Approx(1.0 / 50).epsilon(0.02));
  CHECK(std::sqrt(var) / mean == Approx(3).epsilon(0.05));
}

TEST_CASE("serve: Triton-style dynamic batching of 2-32 cuts P99 at high QPS", "[serve]") {
  // ResNet-50 in fp16 on a T4 from the hardware table, PyTorch eager: batch 1 is bound by the
  // host's per-kernel cost, so a batch of 32 takes little longer than one of 1. Offered 1.5x
  // what batch 1 can serve: one request at a time the queue grows without bound; batching up to
  // 32 (preferred 2..32, 1 ms delay) serves all of it with a tail a fraction as long: the
  // shape of the seed's 150 -> 35 ms.
  const HardwareTable table = load_hardware(capcalc::test::data_path("hardware.json"));
  const Device& t4 = table.get("t4");
  const std::string text = read_input_file(capcalc::test::data_path("models/resnet50.json"));
  const BatchGraphBuilder build = [&](std::int64_t batch, std::int64_t, std::int64_t) {
    ModelOptions options;
    options.dims["batch"] = batch;
    return parse_model(text, "resnet50.json", options);
  };
  ModelStepCost cost(build, t4, table.performance_for(t4), fp16());
  REQUIRE(cost.batch_s(32) < 4 * cost.batch_s(1));
  const double rate = 1.5 / cost.batch_s(1);
  const std::vector<TraceRequest> requests = generate_requests(poisson(rate, 20'000, 1, 1));
  const ServeResult single = simulate_dynamic(requests, DynamicBatching{}, cost);
  DynamicBatching batched;
  batched.max_batch_size = 32;
  batched.preferred_batch_sizes = {2, 4, 8, 16, 32};
  batched.max_queue_delay_s = 1e-3;
  const ServeResult dynamic = simulate_dynamic(requests, batched, cost);
  CHECK(single.saturated);
  CHECK_FALSE(dynamic.saturated);
  CHECK(dynamic.requests_per_s == Approx(single.offered_rate_per_s).epsilon(0.05));
  CHECK(dynamic.e2e.p99 < single.e2e.p99 / 10);
  CHECK(dynamic.e2e.p99 < 4 * cost.batch_s(1));
  CHECK(dynamic.mean_batch > 1.5);
  check_little(single);
  check_little(dynamic);
}

TEST_CASE("serve: replicas split the load round-robin", "[serve]") {
  LinearCost cost(0.010, 0, 0);
  const std::vector<TraceRequest> requests = generate_requests(poisson(150, 20'000, 1, 1));
  const ServeResult one = simulate_dynamic(requests, DynamicBatching{}, cost, 1);
  const ServeResult two = simulate_dynamic(requests, DynamicBatching{}, cost, 2);
  CHECK(one.saturated);  // 150/s against 100/s of capacity.
  CHECK_FALSE(two.saturated);
  CHECK(two.requests_per_s == Approx(150).epsilon(0.03));
  check_little(two);
}

// Requests of a 1-token prompt and `output` tokens arriving every `gap_s`, `count` of them.
std::vector<TraceRequest> evenly(double gap_s, std::int64_t count, std::int64_t output) {
  std::vector<TraceRequest> requests;
  for (std::int64_t k = 0; k < count; ++k)
    requests.push_back({gap_s * static_cast<double>(k), 1, output});
  return requests;
}

TEST_CASE("serve: saturation is judged in the steady window, not over the drain", "[serve]") {
  // Every step takes 10 ms, so a request of 96 output tokens takes about 0.96 s (its first
  // token from its prompt's step, then a step each, give or take the step it arrives in). 101
  // requests arrive 0.1 s apart: 10/s over a 10 s span, about 10 in the system at once, which
  // continuous batching serves. The whole run completes 101 in about 10.97 s, 9.2/s: below 95 %
  // of the offered 10/s only because the last second drains. The steady window is the span
  // less the first mean latency, (0.96.., 10]: requests 1 to 90 finish in it (0.1 k + 0.96..),
  // 90 / (10 - mean E2E) ~ 9.96/s, so the run is not saturated.
  LinearCost cost(0.010, 0, 0);
  ContinuousBatching batching;
  batching.kv_blocks = 10'000;
  const ServeResult r = simulate_continuous(evenly(0.1, 101, 96), batching, cost);
  REQUIRE(r.e2e.mean > 0.95);
  REQUIRE(r.e2e.mean < 0.98);
  CHECK(r.offered_rate_per_s == Approx(10));
  CHECK(r.requests_per_s < 0.95 * r.offered_rate_per_s);  // The drain.
  CHECK(r.sustained_rate_per_s == Approx(90 / (10 - r.e2e.mean)));
  CHECK_FALSE(r.saturated);
  CHECK(r.arrival_span_latencies == Approx(10 / r.e2e.mean));
  CHECK(r.arrival_span_latencies > kSteadySpanLatencies);
  CHECK(r.short_run());  // Long enough in latencies, but 101 requests, under kSteadyRequests.
  CHECK(steady_run_requests(r) == kSteadyRequests);

  // At most 5 sequences at once: 5 per ~0.96 s, about 5.2/s of capacity against 10/s offered.
  // The queue grows, and the window sees the capacity.
  batching.max_num_seqs = 5;
  const ServeResult full = simulate_continuous(evenly(0.1, 101, 96), batching, cost);
  CHECK(full.saturated);
  CHECK(full.sustained_rate_per_s == Approx(5 / 0.965).epsilon(0.1));
  // Its queue makes the mean latency several seconds: the span is under 10 of them.
  CHECK(full.short_run());
  CHECK(steady_run_requests(full) == kSteadyRequests);  // 101 x 1.2 x 10 / 1.9 = 653 is fewer.
}

TEST_CASE("serve: a short run asks for the requests that span 10 latencies, a fifth to spare",
          "[serve]") {
  ServeResult r;
  r.requests = 500;
  r.arrival_span_latencies = 2;  // 500 x 1.2 x 10 / 2 = 3,000.
  CHECK(r.short_run());
  CHECK(steady_run_requests(r) == 3000);
  r.arrival_span_latencies = 12;  // Long enough in latencies; 500 x 1.2 = 600 < 1,000.
  CHECK(steady_run_requests(r) == 1000);
  r.requests = 4000;
  CHECK_FALSE(r.short_run());
}

TEST_CASE("serve: find max-rate does not take a rate a short run hides a growing queue at",
          "[serve]") {
  // One server, batch 1, 10 ms a request: 100/s of capacity. 200 requests at 150/s meet a loose
  // SLO (E2E P99 <= 10 s: the last waits about 200 x (10 - 6.7) ms = 0.67 s), yet the queue
  // grows by 50 a second. The search rejects saturated runs, so its rate is the capacity: below
  // 100/s, or at most 100 / 0.95 = 105.3/s where the steady window still completes 95 % of the
  // offered rate.
  LinearCost cost(0.010, 0, 0);
  ServeSetup setup;
  setup.llm = false;
  setup.load = poisson(150, 200, 1, 1);
  setup.slo = parse_slo("e2e_p99=10s");
  const ServeResult overloaded = serve(setup, cost);
  CHECK(overloaded.slo_met);
  CHECK(overloaded.saturated);

  const RateSearch search = find_max_rate(setup, cost);
  CHECK(search.rate_per_s > 85);
  CHECK(search.rate_per_s < 100 / 0.95);
  CHECK_FALSE(search.at_rate.saturated);
  CHECK_FALSE(search.at_rate.short_run());
  CHECK(search.at_rate.requests == search.requests);
}

TEST_CASE("serve: a search lengthens runs too short to judge their rate", "[serve]") {
  // 10 ms steps, 96 output tokens (about 0.96 s each), at most 5 sequences at once: about
  // 5 / 0.965 = 5.2/s of capacity. The SLO (TPOT P99 <= 50 ms) holds at any rate, so only the
  // queue limits the rate. 20 requests near 5/s span about 4 s, 4 latencies: too short to tell,
  // so the search runs again with more, until the span is 10 latencies or more.
  LinearCost cost(0.010, 0, 0);
  ServeSetup setup;
  setup.load = poisson(1, 20, 1, 96);
  setup.continuous.max_num_seqs = 5;
  setup.continuous.kv_blocks = 10'000;
  setup.slo = parse_slo("tpot_p99=50ms");
  const RateSearch search = find_max_rate(setup, cost);
  CHECK(search.requests > 20);
  CHECK_FALSE(search.at_rate.short_run());
  CHECK(search.at_rate.requests == search.requests);
  CHECK(search.rate_per_s > 4);
  CHECK(search.rate_per_s < 5 / 0.965 / 0.95);
}

TEST_CASE("serve: find max-rate and replicas against an SLO", "[serve]") {
  // M/D/1 with S = 10 ms and an SLO on the mean queueing delay of 10 ms: Pollaczek-Khinchine
  // gives rho S / (2 (1 - rho)) = S at rho = 2/3, i.e. 66.7 requests/s.
  LinearCost cost(0.010, 0, 0);
  ServeSetup setup;
  setup.llm = false;
  setup.load = poisson(1, 100'000, 1, 1);
  setup.slo = parse_slo("queue_mean=10ms");
  const RateSearch search = find_max_rate(setup, cost);
  CHECK(search.rate_per_s == Approx(200.0 / 3).epsilon(0.03));
  CHECK(search.at_rate.slo_met);

  // 250/s: Poisson arrivals at 4 replicas of 62.5/s each would meet it. Round-robin makes each
  // replica's arrivals more regular than Poisson (Erlang), which waits less: at most 4.
  setup.load.rate_per_s = 250;
  setup.load.requests = 50'000;
  const ReplicaSearch replicas = find_replicas(setup, cost);
  CHECK(replicas.replicas >= 3);  // 3 x 100/s of capacity is the least that is not overloaded.
  CHECK(replicas.replicas <= 4);
  CHECK(replicas.at_replicas.slo_met);
  setup.replicas = replicas.replicas - 1;
  CHECK_FALSE(serve(setup, cost).slo_met);
}

TEST_CASE("serve: cost per million output tokens from the price", "[serve]") {
  // One step of 1 ms per token for a lone sequence: 1,000 tokens/s; $3.6/h = $0.001/s, so a
  // million tokens (1,000 s) cost $1.
  LinearCost cost(1e-3, 0, 0);
  ServeSetup setup;
  setup.load = poisson(0.001, 3, 1, 10'000);
  setup.continuous.kv_blocks = 1000;
  setup.usd_per_device_hour = 3.6;
  const ServeResult r = serve(setup, cost);
  CHECK(r.usd_per_hour == Approx(3.6));
  // Tokens/s is over the whole run (idle time between requests included).
  CHECK(r.usd_per_million_output_tokens == Approx(3.6 / 3600 / r.output_tokens_per_s * 1e6));
  CHECK(r.tpot.mean == Approx(1e-3));
}

TEST_CASE("serve: speculative decoding yields (1 - a^(k+1)) / (1 - a) tokens per verify step",
          "[serve]") {
  // Lone requests of a 16-token prompt (one prefill step) and 1,001 output tokens: 1,000
  // tokens after the first, each verify step yielding (1 - 0.6^4) / 0.4 = 2.176 of them on
  // average with k = 3 drafts accepted with probability 0.6 each.
  LinearCost cost(1e-3, 1e-4, 1e-6);
  ContinuousBatching batching;
  batching.kv_blocks = 1000;
  batching.speculative_tokens = 3;
  batching.acceptance_rate = 0.6;
  const std::int64_t requests = 200;
  const ServeResult r =
      simulate_continuous(generate_requests(poisson(0.001, requests, 16, 1001)), batching, cost);
  const double per_step = (1 - std::pow(0.6, 4)) / (1 - 0.6);
  const double decode_steps = static_cast<double>(r.steps) / requests - 1;
  CHECK(1000 / decode_steps == Approx(per_step).epsilon(0.02));
  // A verify step is 1 ms + 0.1 ms for the sequence + 3 draft tokens at 1 us, so TPOT is
  // about that over 2.176 tokens (the last steps draft fewer).
  CHECK(r.tpot.mean == Approx((1.1e-3 + 3e-6) / per_step).epsilon(0.02));
  CHECK(r.output_tokens_per_s * r.duration_s == Approx(requests * 1001));
  check_little(r);
}

TEST_CASE("serve: prefix caching prefills only the missed blocks", "[serve]") {
  // Half of a 1,000-token prompt hit: floor(0.5 x 999 / 16) x 16 = 496 tokens cached, 504
  // prefilled in one step: TTFT = 1 ms + 504 x 1 us.
  LinearCost cost(1e-3, 1e-4, 1e-6);
  ContinuousBatching batching;
  batching.kv_blocks = 1000;
  batching.prefix_hit_rate = 0.5;
  const ServeResult r =
      simulate_continuous(generate_requests(poisson(0.01, 5, 1000, 3)), batching, cost);
  CHECK(r.ttft.mean == Approx(1e-3 + 504e-6));
}

TEST_CASE("serve: input errors are one line naming the key, flag or file and line",
          "[serve][errors]") {
  // The library names the key ("slo"); the CLI's error line names the flag (cli.serve_slo_unit).
  REQUIRE_THROWS_WITH(parse_slo("ttft_p99=500"),
                      "slo ttft_p99: 500 has no unit: write 500ms or 500s");
  REQUIRE_THROWS_WITH(parse_slo("latency_p99=1s"),
                      "slo: unknown metric \"latency\"; expected ttft, tpot, itl, e2e or queue");
  REQUIRE_THROWS_WITH(parse_slo("ttfb_p99=1s"),
                      "slo: unknown metric \"ttfb\"; did you mean \"ttft\"?");
  REQUIRE_THROWS_WITH(parse_slo("ttft_p999=1s"),
                      "slo: unknown statistic \"p999\"; did you mean \"p99\"?");
  // A limit of zero is no objective: every request misses it.
  REQUIRE_THROWS_WITH(parse_slo("tpot_p50=0ms"),
                      "slo tpot_p50: a limit of 0ms never holds: give one above zero");
}

TEST_CASE("serve: SLO metrics and statistics take any case", "[serve][errors]") {
  const std::vector<SloLimit> slo = parse_slo("TTFT_P99=500ms,Tpot_Mean=50ms");
  REQUIRE(slo.size() == 2);
  CHECK(slo[0].metric == "ttft");
  CHECK(slo[0].statistic == "p99");
  CHECK(slo[0].limit_s == Approx(0.5));
  CHECK(slo[1].metric == "tpot");
  CHECK(slo[1].statistic == "mean");
}

TEST_CASE("serve: input errors in lengths and traces are one line naming the flag or file",
          "[serve][errors]") {
  REQUIRE_THROWS_WITH(parse_length_distribution("zipf:1,2", "--prompt-tokens"),
                      "--prompt-tokens: expected N, uniform:LOW..HIGH, normal:MEAN,SD or "
                      "lognormal:MEDIAN,SIGMA, got \"zipf:1,2\"");
  REQUIRE_THROWS_WITH(parse_length_distribution("uniform:9..3", "--output-tokens"),
                      "--output-tokens: uniform:9..3: the highest is below the lowest");
  REQUIRE_THROWS_WITH(
      parse_trace("{\"arrival_s\": 0, \"prompt_tokens\": 5, \"output_tokens\": 2}\n"
                  "{\"arrival_s\": 1, \"prompt_tokens\": -5, \"output_tokens\": 2}\n",
                  "t.jsonl"),
      "t.jsonl:2:/prompt_tokens: expected a positive integer, got -5");
  REQUIRE_THROWS_WITH(
      parse_trace("{\"arrival_s\": 2, \"prompt_tokens\": 5, \"output_tokens\": 2}\n"
                  "{\"arrival_s\": 1, \"prompt_tokens\": 5, \"output_tokens\": 2}\n",
                  "t.jsonl"),
      "t.jsonl:2:/arrival_s: arrivals must not go back in time (1 after 2)");
  const std::vector<TraceRequest> trace = parse_trace(
      "{\"arrival_s\": 0.5, \"prompt_tokens\": 5, \"output_tokens\": 2}\n\n", "t.jsonl");
  REQUIRE(trace.size() == 1);
  CHECK(trace[0].prompt_tokens == 5);
}

TEST_CASE("serve: a draft model adds k draft steps at the decode batch and its own prefill",
          "[serve]") {
  // Target: 1 ms + 0.1 ms per sequence + 1 us per token; draft: 0.2 ms + 10 us per sequence +
  // 0.1 us per token. Lone requests of 16 prompt tokens and 1,001 output tokens, k = 3, a = 0.6.
  LinearCost target(1e-3, 1e-4, 1e-6);
  LinearCost draft(2e-4, 1e-5, 1e-7);
  ContinuousBatching batching;
  batching.kv_blocks = 1000;
  batching.speculative_tokens = 3;
  batching.acceptance_rate = 0.6;
  batching.draft_model = &draft;
  const ServeResult r =
      simulate_continuous(generate_requests(poisson(0.001, 200, 16, 1001)), batching, target);
  // TTFT: both models prefill the prompt: (1 ms + 16 us) + (0.2 ms + 1.6 us); the median, as a
  // rare arrival during another request's decoding shares its steps.
  CHECK(r.ttft.p50 == Approx(1.016e-3 + 2.016e-4));
  // A decode step: the verify step 1 ms + 0.1 ms + 3 x 1 us, and 3 draft steps at batch 1 of
  // 0.21 ms each; (1 - 0.6^4) / 0.4 = 2.176 tokens per step.
  const double step = 1.103e-3 + 3 * 2.1e-4;
  CHECK(r.tpot.mean == Approx(step / 2.176).epsilon(0.02));
  check_little(r);
}

TEST_CASE("serve: a draft model's weights and KV entries share the cache", "[serve]") {
  KvCapacity target;
  target.cache_bytes = 1000;
  target.bytes_per_token = 2;
  target.weight_bytes = 5000;
  KvCapacity draft;
  draft.weight_bytes = 100;
  draft.bytes_per_token = 1;
  // (1000 - 100) / (10 tokens x (2 + 1) bytes) = 30 blocks.
  const KvCapacity both = with_draft(target, draft, 10);
  CHECK(both.blocks == 30);
  CHECK(both.weight_bytes == 5100);
  draft.weight_bytes = 990;  // 10 bytes left: not one 30-byte block.
  CHECK_THROWS_WITH(with_draft(target, draft, 10), ContainsSubstring("leave no room"));
}

TEST_CASE("serve: MoE load imbalance multiplies the moe layers' time", "[serve]") {
  // Mixtral-8x7B at batch 8, one new token over 256 cached: with imbalance 1.5 the step takes
  // half the moe layers' estimated time longer; the rest is unchanged.
  const BatchGraphBuilder mixtral = capcalc::test::model_builder("mixtral_8x7b_hf.json");

  Graph graph = mixtral(8, 1, 256);
  drop_prefill_only_layers(graph);
  const Estimate e = estimate(graph, round_device(), round_params(), fp16());
  double moe_s = 0;
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    if (graph.layers[i].op == "moe") moe_s += e.layers[i].time_s;
  }
  REQUIRE(moe_s > 0);
  ModelStepCost cost(mixtral, round_device(), round_params(), fp16());
  CHECK(cost.decode_s(8, 256) == Approx(e.latency_s));
  // The workload's imbalance (estimate() scales the moe layers).
  Workload skewed = fp16();
  skewed.moe_imbalance = 1.5;
  ModelStepCost skewed_cost(mixtral, round_device(), round_params(), skewed);
  CHECK(skewed_cost.decode_s(8, 256) == Approx(e.latency_s + 0.5 * moe_s));
  skewed.moe_imbalance = 0.5;
  ModelStepCost bad_cost(mixtral, round_device(), round_params(), skewed);
  CHECK_THROWS_WITH(bad_cost.decode_s(8, 256), ContainsSubstring("between 1 and 1000"));
}

TEST_CASE("serve: a disaggregated request is its prefill, the KV transfer, then decode steps",
          "[serve][disaggregated]") {
  // One request alone. Steps cost 10 ms + 2 ms a decode sequence + 0.1 ms a prompt token. The
  // prefill replica runs the 1,000-token prompt in one step (budget 2,048): 10 + 100 = 110 ms,
  // and samples the first token: TTFT 110 ms. Its KV cache, 1,000 tokens x 1 MB, crosses a link
  // of 100 GB/s after 1 ms of latency: 1 + 10 = 11 ms. The decode replica then generates the
  // other 9 tokens in 9 steps of 10 + 2 = 12 ms, the first one ending 11 + 12 = 23 ms after the
  // first token (an inter-token gap), the last at 110 + 11 + 108 = 229 ms.
  LinearCost cost(0.010, 0.002, 0.0001);
  ContinuousBatching batching;
  batching.kv_blocks = 1'000;
  Disaggregation pools;
  pools.prefill_replicas = 1;
  pools.decode_replicas = 1;
  pools.kv_bytes_per_token = 1e6;
  pools.link_bytes_per_s = 100e9;
  pools.latency_s = 0.001;
  pools.link_name = "Round link";
  CHECK(pools.transfer_s(1'000) == Approx(0.011));
  const std::vector<TraceRequest> one = {{0.0, 1'000, 10}};
  const ServeResult r = simulate_disaggregated(one, batching, cost, pools);
  CHECK(r.ttft.mean == Approx(0.110));
  CHECK(r.e2e.mean == Approx(0.229));
  CHECK(r.tpot.mean == Approx((0.229 - 0.110) / 9));
  CHECK(r.itl.max == Approx(0.023).epsilon(0.01));  // Log-binned: within its 1 % bin.
  CHECK(r.kv_transfer.samples == 1);
  CHECK(r.kv_transfer.mean == Approx(0.011));
  CHECK(r.queue.max == 0);
  CHECK(r.steps == 1 + 9);
  CHECK(r.replicas == 2);
  CHECK(r.prefill_replicas == 1);
  CHECK(r.decode_replicas == 1);
  CHECK(r.kv_link == "Round link");
  // Busy: the prefill replica 110 ms and the decode replica 108 ms of the 229.
  CHECK(r.prefill_busy_fraction == Approx(0.110 / 0.229));
  CHECK(r.decode_busy_fraction == Approx(0.108 / 0.229));
  CHECK(r.busy_fraction == Approx(0.218 / (2 * 0.229)));
  CHECK(r.input_tokens_per_s == Approx(1'000 / 0.229));
  CHECK(r.output_tokens_per_s == Approx(10 / 0.229));
}

TEST_CASE("serve: disaggregated pools keep their promises under load", "[serve][disaggregated]") {
  LinearCost cost(0.010, 0.0002, 0.00005);
  ContinuousBatching batching;
  batching.kv_blocks = 2'000;  // 32,000 tokens: full at some 20 requests, so some preempt.
  Disaggregation pools;
  pools.prefill_replicas = 1;
  pools.decode_replicas = 2;
  pools.kv_bytes_per_token = 1e5;
  pools.link_bytes_per_s = 1e10;
  ServeLoad load = poisson(20, 3'000, 1'000, 200);
  load.output.kind = LengthDistribution::Kind::kUniform;  // 1..399: some of 1 token.
  load.output.a = 1;
  load.output.b = 399;
  const std::vector<TraceRequest> requests = generate_requests(load);
  const ServeResult r = simulate_disaggregated(requests, batching, cost, pools);
  CHECK(r.requests == 3'000);
  check_little(r);
  // A request of one output token ends at its prefill: no transfer.
  std::int64_t longer = 0;
  double input = 0;
  for (const TraceRequest& q : requests) {
    longer += q.output_tokens > 1 ? 1 : 0;
    input += static_cast<double>(q.prompt_tokens);
  }
  CHECK(longer < 3'000);
  CHECK(r.kv_transfer.samples == longer);
  CHECK(r.kv_transfer.mean == Approx(0.01));  // 1,000 tokens x 100 kB at 10 GB/s.
  CHECK(r.input_tokens_per_s * r.duration_s == Approx(input));
  // Every token after the first waits at least the transfer: TPOT's floor is a decode step.
  CHECK(r.itl.max >= 0.01);
  CHECK(r.tpot.p50 >= 0.010);
  // Same seed, same answer.
  const ServeResult again = simulate_disaggregated(requests, batching, cost, pools);
  CHECK(again.e2e.p99 == r.e2e.p99);
  CHECK(again.steps == r.steps);
}

TEST_CASE("serve: the KV link is the scale-up link while the pools fit a node",
          "[serve][disaggregated]") {
  Device d = round_device();
  d.intra_node = Link{"Round link", 200e9, "bidirectional"};  // 100 GB/s per direction.
  d.intra_node->domain_devices = 8;
  d.inter_node = Link{"Round network", 10e9, "per_direction"};
  PerformanceParams p = round_params();
  p.allreduce_latency_s = 10e-6;
  p.allreduce_efficiency = 0.5;
  // (1 + 3) x 2 = 8 devices fit the node: 0.5 x 100 GB/s, 10 µs, like a pipeline send.
  Disaggregation in_node = disaggregated_pools(d, p, Profile::kEager, 1, 3, 2, 1e6);
  CHECK(in_node.link_name == "Round link");
  CHECK(in_node.link_bytes_per_s == Approx(50e9));
  CHECK(in_node.latency_s == Approx(10e-6));
  CHECK(in_node.transfer_s(1'000) == Approx(10e-6 + 1e9 / 50e9));
  // (2 + 3) x 2 = 10 do not: the network port, 0.5 x 10 GB/s.
  Disaggregation across = disaggregated_pools(d, p, Profile::kEager, 2, 3, 2, 1e6);
  CHECK(across.link_name == "Round network");
  CHECK(across.link_bytes_per_s == Approx(5e9));
  // A full mesh of 7 peers gives a pair one link of seven.
  d.intra_node->peers = 7;
  CHECK(disaggregated_pools(d, p, Profile::kEager, 1, 1, 1, 1e6).link_bytes_per_s ==
        Approx(0.5 * 100e9 / 7));
  // No link in the table: no transfer time to give.
  Device alone = round_device();
  alone.intra_node.reset();
  alone.inter_node.reset();
  CHECK_THROWS_WITH(disaggregated_pools(alone, p, Profile::kEager, 1, 1, 1, 1e6),
                    Catch::Contains("gives no link"));
}

TEST_CASE("serve: find_split tries every split and the colocated replicas",
          "[serve][disaggregated]") {
  // Prefill is costly per token and decode per sequence, so a split's rate depends on how many
  // replicas run each: the search must return all three splits of 4, colocated first, and name
  // the fastest split.
  LinearCost cost(0.005, 0.001, 0.0002);
  ServeSetup setup;
  setup.load = poisson(1, 400, 500, 50);
  setup.continuous.kv_blocks = 20'000;
  setup.slo = parse_slo("ttft_p99=1s,tpot_p99=60ms");
  setup.disaggregation.link_bytes_per_s = 1e10;
  setup.disaggregation.kv_bytes_per_token = 1e5;
  const SplitSearch search = find_split(setup, cost, 4);
  REQUIRE(search.splits.size() == 4);
  CHECK(search.splits[0].prefill == 0);
  CHECK(search.splits[0].search.at_rate.replicas == 4);
  CHECK(search.splits[0].search.at_rate.prefill_replicas == 0);
  for (std::size_t i = 1; i < 4; ++i) {
    CHECK(search.splits[i].prefill == static_cast<std::int64_t>(i));
    CHECK(search.splits[i].decode == 4 - static_cast<std::int64_t>(i));
    CHECK(search.splits[i].search.at_rate.prefill_replicas == static_cast<std::int64_t>(i));
    CHECK(search.splits[search.best].search.rate_per_s >= search.splits[i].search.rate_per_s);
  }
  CHECK(search.best >= 1);
  CHECK(search.splits[search.best].search.rate_per_s > 0);
  CHECK_THROWS_WITH(find_split(setup, cost, 1), Catch::Contains("2 or more replicas"));
  setup.slo.clear();
  CHECK_THROWS_WITH(find_split(setup, cost, 4), Catch::Contains("needs slo"));
}
