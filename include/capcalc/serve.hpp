// Serving under load: a deterministic discrete-event simulator of requests arriving at model
// replicas, batched as LLM runtimes do it (continuous batching over a paged KV cache) or as
// Triton's dynamic batcher does it for other models, with each step timed by the performance
// model (predict.hpp). Metric definitions and the scheduler's rules, with their sources, are in
// docs/serving.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/runtime.hpp"

namespace capcalc {

/// A distribution of token counts; samples are rounded and at least 1.
struct LengthDistribution {
  enum class Kind { kFixed, kUniform, kNormal, kLogNormal };
  Kind kind = Kind::kFixed;
  double a = 128;  ///< Fixed: the value; uniform: the lowest; normal: the mean; log-normal: median.
  double b = 0;    ///< Uniform: the highest; normal: the standard deviation; log-normal: sigma.
  double mean() const;  ///< Of the distribution before rounding (log-normal: median·e^(σ²/2)).
};

/// Parses "1000", "uniform:500..1500", "normal:1000,200" or "lognormal:1000,0.5"; `what` names
/// the flag in messages.
LengthDistribution parse_length_distribution(const std::string& text, const std::string& what);

/// One request of a trace.
struct TraceRequest {
  double arrival_s = 0;
  std::int64_t prompt_tokens = 1;  ///< Non-LLM models: ignored.
  std::int64_t output_tokens = 1;
};

/// Reads a JSON-lines trace: one object a line with "arrival_s" (seconds from the start, not
/// decreasing), "prompt_tokens" and "output_tokens"; errors name the file, line and key.
std::vector<TraceRequest> parse_trace(const std::string& text, const std::string& file);
std::vector<TraceRequest> load_trace(const std::string& path);

/// The offered load.
struct ServeLoad {
  double rate_per_s = 1;         ///< Mean arrival rate over all replicas.
  double arrival_cv = 1;         ///< Coefficient of variation of inter-arrival times: 1 is
                                 ///< Poisson, others a gamma renewal process (bursty above 1).
  LengthDistribution prompt;     ///< Prompt tokens per request.
  LengthDistribution output;     ///< Generated tokens per request.
  std::int64_t requests = 2000;  ///< How many arrive.
  std::uint64_t seed = 1;        ///< Same seed, same requests, same answer.
  std::vector<TraceRequest>
      trace;  ///< Non-empty: these requests instead (rate and lengths unused).
};

/// The requests `load` describes, in arrival order (the trace, or drawn from the seed). Inter-
/// arrival times are drawn at rate 1 and divided by the rate, so a sweep over rates sees the same
/// requests, only closer together.
std::vector<TraceRequest> generate_requests(const ServeLoad& load);

class StepCost;

/// Continuous batching as vLLM's scheduler does it: each step (iteration) schedules running
/// requests first (decodes one token each, unfinished prompts a chunk), then admits waiting ones
/// in arrival order while the token budget, the sequence limit and free KV blocks allow.
struct ContinuousBatching {
  Scheduler scheduler = Scheduler::kVllm;
  std::int64_t max_num_batched_tokens = 2048;  ///< Token budget per step.
  std::int64_t max_num_seqs = 256;             ///< Sequences per step.
  std::int64_t block_size = 16;                ///< Tokens per KV-cache block.
  std::int64_t kv_blocks = 0;                  ///< Blocks in the cache (kv_blocks_for()).
  bool chunked_prefill = true;  ///< Split prompts over steps; off: a prompt runs whole or waits.
  /// Admit a request only when the blocks for its prompt and all its output are free, and keep
  /// them until it finishes: nothing is preempted (TensorRT-LLM's GUARANTEED_NO_EVICT).
  bool reserve_full_request = false;
  /// Prefix caching: the fraction of each prompt found in the cache when a request is admitted
  /// (whole blocks, at least one token left to compute); those tokens are not prefilled. Their
  /// blocks are counted as the request's own (shared blocks are not modelled).
  double prefix_hit_rate = 0;
  /// Speculative decoding: draft tokens proposed per decoding sequence and step (0: off). Each
  /// is accepted with probability `acceptance_rate` until the first rejection, so a verify step
  /// yields (1 - a^(k+1)) / (1 - a) tokens on average; it processes k + 1 tokens per sequence.
  std::int64_t speculative_tokens = 0;
  double acceptance_rate = 0;
  /// Drafting per draft token as a fraction of the decode step (0: n-gram lookup; a small
  /// draft model or EAGLE head a few percent).
  double draft_cost = 0;
  /// A draft model's step times (not owned; null: none, `draft_cost` instead). Each decode step
  /// runs k draft steps at the decode batch and context, the first also over the step's prompt
  /// chunks (the draft keeps its own KV cache of every prompt): draft.step_s(b, c, n) +
  /// (k - 1) x draft.step_s(b, c, 0); a step without decodes adds draft.step_s(0, 0, n).
  StepCost* draft_model = nullptr;
  std::uint64_t seed = 1;  ///< Draws of accepted drafts.
  /// Data-parallel attention ranks per replica, stepping together (vLLM's --data-parallel-size
  /// with an MoE model, SGLang's --enable-dp-attention). Each rank has the limits and KV blocks
  /// above, its own scheduler and its own requests (SGLang: dealt round robin; vLLM: to the
  /// lowest 4 x waiting + running); each step lasts as long as the slowest rank's own part
  /// (StepCost::step_s less shared_s at its batch) plus shared_s at the ranks' mean batch
  /// (whole sequences and tokens, rounded up).
  std::int64_t attention_ranks = 1;
};

/// Triton's dynamic batcher for models without a KV cache: a free instance takes the largest
/// preferred size once that many wait, else waits until the oldest request has waited
/// max_queue_delay_s and takes what is there (at most max_batch_size).
struct DynamicBatching {
  std::int64_t max_batch_size = 1;                  ///< 1: no batching.
  std::vector<std::int64_t> preferred_batch_sizes;  ///< Empty: max_batch_size.
  double max_queue_delay_s = 0;
};

/// Step times of one replica, from the performance model or a stand-in (tests).
class StepCost {
 public:
  virtual ~StepCost() = default;
  /// One continuous-batching step: `decode` sequences generating a token each over a mean of
  /// `mean_context` cached tokens, and `prefill_tokens` prompt tokens (chunks) beside them from
  /// `prefill_sequences` requests (each attends to its own tokens and to a mean of
  /// `prefill_context` of its own already in the cache: earlier chunks, prefix hits; 0 or 1
  /// sequences: one).
  virtual double step_s(std::int64_t decode, double mean_context, std::int64_t prefill_tokens,
                        std::int64_t prefill_sequences, double prefill_context) = 0;
  /// One forward pass over a batch of `batch` requests (dynamic batching).
  virtual double batch_s(std::int64_t batch) = 0;
  /// The part of step_s() with the same arguments that data-parallel attention ranks share:
  /// the moe layers and their token exchange, priced as if every rank had this batch (0: none,
  /// the default).
  virtual double shared_s(std::int64_t decode, double mean_context, std::int64_t prefill_tokens,
                          std::int64_t prefill_sequences, double prefill_context) {
    (void)decode, (void)mean_context, (void)prefill_tokens, (void)prefill_sequences,
        (void)prefill_context;
    return 0;
  }
};

/// The model at `batch` sequences of `seq` new tokens over `cached` ones; seq 0: the model's own
/// shape at that batch (models without a sequence).
using BatchGraphBuilder =
    std::function<Graph(std::int64_t batch, std::int64_t seq, std::int64_t cached)>;

/// Step times from estimate(), memoised on a grid and interpolated: a decode step D(b, c) at
/// batch b and mean context c (exact up to 16 sequences, then about 19 % apart; contexts at 0
/// and powers of 4 from 256, linear between); a prefill P(t, k) of t tokens in k sequences of
/// t / k each (the length exact up to 16, then about 9 % apart; k as the decode batch), whose
/// attention is each sequence's own, over c of its tokens already cached (a chunked prompt's
/// earlier chunks; the context grid as the decode's). A mixed step is D(b, c) + P(b + n, k, c')
/// − P(b, k, c'): the n prompt tokens cost what they add to the token-wise work of the decode
/// batch (weights read once).
class ModelStepCost final : public StepCost {
 public:
  /// What a step's time counts: all of it, or its moe layers and their token exchange alone.
  enum class Part { kWhole, kMoe };
  ModelStepCost(BatchGraphBuilder build, Device device, PerformanceParams params, Workload workload,
                Part part = Part::kWhole);
  double step_s(std::int64_t decode, double mean_context, std::int64_t prefill_tokens,
                std::int64_t prefill_sequences, double prefill_context) override;
  double batch_s(std::int64_t batch) override;
  /// step_s() of the moe layers and their exchange alone, on the same grids.
  double shared_s(std::int64_t decode, double mean_context, std::int64_t prefill_tokens,
                  std::int64_t prefill_sequences, double prefill_context) override;
  double decode_s(std::int64_t batch, double context);  ///< D(b, c).
  /// P(t, k, c): k sequences of t / k new tokens each over c cached ones.
  double prefill_s(std::int64_t tokens, std::int64_t sequences = 1, double context = 0);
  /// estimate() calls so far (the moe part's too).
  std::size_t estimates() const { return estimates_ + (moe_ ? moe_->estimates() : 0); }

 private:
  double timed(const Graph& graph);  ///< estimate()'s latency, counted in estimates_.
  double decode_at(std::int64_t batch, std::int64_t context);
  double prefill_at(std::int64_t sequences, std::int64_t length, std::int64_t context);
  BatchGraphBuilder build_;
  Device device_;
  PerformanceParams params_;
  Workload workload_;
  Part part_;
  std::unique_ptr<ModelStepCost> moe_;  ///< The moe part's grids, made when first asked.
  std::map<std::pair<std::int64_t, std::int64_t>, double> decode_;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, double> prefill_;
  std::map<std::int64_t, double> batch_;
  std::size_t estimates_ = 0;
};

/// The KV cache of one replica, per device.
struct KvCapacity {
  double bytes_per_token = 0;  ///< One token of one sequence, all layers, K and V.
  double weight_bytes = 0;
  double activation_bytes = 0;  ///< Peak activations of a step at the full token budget.
  double cache_bytes = 0;  ///< u × memory − weights − activations (free: u × (memory − ...)).
  std::int64_t blocks = 0;
};

/// How many blocks of `block_size` tokens fit in `memory_utilization` of the device's memory
/// beside the weights and one full-budget step's activations (vLLM's profiling run); with
/// MemoryFraction::kFree in that fraction of what the weights and activations leave free
/// (TensorRT-LLM's free_gpu_memory_fraction); with kStatic beside the weights only (SGLang's
/// mem_fraction_static). Throws capcalc::Error when none fit.
KvCapacity kv_capacity(const BatchGraphBuilder& build, const Device& device,
                       const PerformanceParams& params, const Workload& workload,
                       std::int64_t block_size, std::int64_t max_num_batched_tokens,
                       double memory_utilization,
                       MemoryFraction fraction_of = MemoryFraction::kDevice);

/// The cache beside a draft model on the same devices: the draft's weights come out of the
/// cache bytes and every token holds the target's and the draft's KV entries, so
/// blocks = floor((target.cache_bytes - draft.weight_bytes) / (block x (kv_target + kv_draft))).
/// Throws capcalc::Error when none fit.
KvCapacity with_draft(const KvCapacity& target, const KvCapacity& draft, std::int64_t block_size);

/// A latency distribution, in seconds.
struct Latency {
  double mean = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double max = 0;
  std::int64_t samples = 0;
};

/// One limit of a service-level objective: a statistic of a metric at most limit_s.
struct SloLimit {
  std::string metric;     ///< "ttft", "tpot", "itl", "e2e" or "queue".
  std::string statistic;  ///< "mean", "p50", "p90" or "p99".
  double limit_s = 0;
};

/// Parses "ttft_p99=500ms,tpot_p99=50ms" (units required).
std::vector<SloLimit> parse_slo(const std::string& text);

/// A run is saturated when fewer requests finish in its steady window (the arrivals' span less
/// its first mean E2E latency) than this share of those arriving in it: the queue grows.
inline constexpr double kSustainedShare = 0.95;
/// A run can judge its rate when its arrivals span this many mean E2E latencies or more (its
/// warm-up and drain are then a tenth of it or less) and it has kSteadyRequests or more: the
/// window's 5 % (45 of ~900) then exceeds three standard deviations of the growth of a number in
/// the system that fluctuates as a Poisson count (3 x sqrt(2 x 100) = 42 at a mean of 100; above
/// that the span's 10 latencies hold 9 means and more). Searches lengthen shorter runs.
inline constexpr double kSteadySpanLatencies = 10;
inline constexpr std::int64_t kSteadyRequests = 1000;

/// What one simulation measured, over all replicas.
struct ServeResult {
  std::int64_t requests = 0;
  std::int64_t replicas = 1;
  /// Data-parallel attention ranks per replica (ContinuousBatching::attention_ranks): the batch
  /// and the KV blocks are per rank, the steps per replica, the busy share over every rank.
  std::int64_t attention_ranks = 1;
  double offered_rate_per_s = 0;  ///< Requests / span of arrivals.
  double duration_s = 0;          ///< First arrival to last completion.
  double requests_per_s = 0;      ///< Completed / duration.
  double input_tokens_per_s = 0;
  double output_tokens_per_s = 0;
  Latency ttft;  ///< Arrival to first generated token.
  Latency tpot;  ///< Per request: (last token − first token) / (output − 1); excludes the first
                 ///< token and requests of one output token.
  Latency itl;   ///< Every gap between consecutive tokens of a request.
  Latency e2e;   ///< Arrival to last token.
  Latency queue;          ///< Arrival to first scheduled.
  double mean_batch = 0;  ///< Sequences per step (continuous) or requests per batch (dynamic),
                          ///< weighted by the step's time.
  std::int64_t max_batch = 0;
  double mean_kv_occupancy = 0;  ///< Fraction of KV blocks in use, time-weighted.
  double peak_kv_occupancy = 0;
  std::int64_t kv_blocks = 0;    ///< Per replica.
  std::int64_t preemptions = 0;  ///< Requests evicted from the cache (recomputed later).
  std::int64_t steps = 0;
  double busy_fraction = 0;      ///< Of the duration, replicas computing.
  double mean_in_system = 0;     ///< Time-average of requests arrived and not finished.
  double littles_law_ratio = 0;  ///< mean_in_system / (requests_per_s × mean e2e); 1 expected.
  std::vector<SloLimit> slo;
  bool slo_met = true;
  double goodput_per_s = 0;  ///< Completed requests within every per-request limit, per second.
  double usd_per_hour = 0;   ///< All devices; 0 when the table has no price.
  double usd_per_million_output_tokens = 0;
  /// Completed per second in the steady window (the whole run's rate when it has none).
  double sustained_rate_per_s = 0;
  double arrival_span_latencies = 0;  ///< First to last arrival, in mean E2E latencies.
  /// Finishes in the steady window short of kSustainedShare of its arrivals: the queue grows.
  bool saturated = false;
  /// Too short to judge its rate (kSteadySpanLatencies, kSteadyRequests).
  bool short_run() const {
    return arrival_span_latencies < kSteadySpanLatencies || requests < kSteadyRequests;
  }
  bool llm = true;  ///< Continuous batching (else dynamic batching).
  /// Disaggregated serving: the pools (0 when every replica does both), each one's share of its
  /// replicas' time computing, and the KV transfers (one per request of 2 or more output tokens).
  std::int64_t prefill_replicas = 0;
  std::int64_t decode_replicas = 0;
  double prefill_busy_fraction = 0;
  double decode_busy_fraction = 0;
  Latency kv_transfer;
  std::string kv_link;
};

/// The requests a run like `r` needs for its arrivals to span kSteadySpanLatencies mean
/// latencies, with a fifth to spare (a longer run's latencies are longer where the queue grows),
/// and kSteadyRequests at least.
std::int64_t steady_run_requests(const ServeResult& r);

/// Simulates `requests` over `replicas` replicas (round-robin), each with `cost`, and checks
/// `slo`. Goodput counts the requests whose own TTFT, TPOT, E2E and queueing delay are within
/// every limit on that metric (whatever its statistic). Continuous batching for an LLM.
ServeResult simulate_continuous(const std::vector<TraceRequest>& requests,
                                const ContinuousBatching& batching, StepCost& cost,
                                std::int64_t replicas = 1, const std::vector<SloLimit>& slo = {});
/// Dynamic batching (one model instance per replica): TTFT = E2E, no TPOT or ITL.
ServeResult simulate_dynamic(const std::vector<TraceRequest>& requests,
                             const DynamicBatching& batching, StepCost& cost,
                             std::int64_t replicas = 1, const std::vector<SloLimit>& slo = {});

/// Prefill/decode disaggregation (DistServe, Splitwise, vLLM's and Dynamo's disaggregated
/// prefill): prefill replicas run each prompt and sample its first token, then send its KV cache
/// to a decode replica, which generates the rest. Both pools batch as `ContinuousBatching` says,
/// with the same devices per replica; requests go round-robin within each pool.
struct Disaggregation {
  std::int64_t prefill_replicas = 0;  ///< 0: off, every replica does both.
  std::int64_t decode_replicas = 0;
  /// The KV transfer of a prompt of n tokens takes latency_s + n x kv_bytes_per_token /
  /// link_bytes_per_s: each device of a prefill replica sends its shard to its peer in the
  /// decode replica, all in parallel.
  double kv_bytes_per_token = 0;  ///< Per device (its tensor-parallel shard).
  double link_bytes_per_s = 0;    ///< What one device's transfer gets.
  double latency_s = 0;           ///< Per transfer.
  std::string link_name;          ///< For reports: "NVLink 4", "InfiniBand NDR".
  bool enabled() const { return prefill_replicas > 0; }
  double transfer_s(std::int64_t prompt_tokens) const;
};

/// The pools of `prefill` and `decode` replicas of `tensor_parallel` devices each, and the link
/// their KV transfers cross: the scale-up link while all the replicas fit one node's domain (a
/// pair's share of it on a full mesh), else the network port. Each transfer pays the runtime's
/// collective latency and moves its bytes at the table's collective efficiency, as a pipeline
/// send does (collectives.hpp's send_s). Throws capcalc::Error when the table gives no link.
Disaggregation disaggregated_pools(const Device& device, const PerformanceParams& params,
                                   Profile profile, std::int64_t prefill, std::int64_t decode,
                                   std::int64_t tensor_parallel, double kv_bytes_per_token);

/// Simulates disaggregated serving. TTFT ends when the prefill replica samples the first token;
/// the transfer and any wait for a decode replica show in the gap to the second token (ITL,
/// TPOT). The result's pools: `replicas` is prefill + decode.
ServeResult simulate_disaggregated(const std::vector<TraceRequest>& requests,
                                   const ContinuousBatching& batching, StepCost& cost,
                                   const Disaggregation& pools,
                                   const std::vector<SloLimit>& slo = {});

/// The run's value of a limit's statistic (TTFT's P99 for "ttft_p99"), in seconds.
double slo_value(const ServeResult& result, const SloLimit& limit);

/// Sets result.slo and slo_met (every limit's statistic within it).
void apply_slo(ServeResult& result, const std::vector<SloLimit>& slo);

/// Serves a run: generate, simulate, apply the SLO, price at `usd_per_device_hour` × devices.
struct ServeSetup {
  ServeLoad load;
  bool llm = true;
  ContinuousBatching continuous;
  DynamicBatching dynamic;
  std::int64_t replicas = 1;  ///< Disaggregated: prefill + decode replicas.
  std::int64_t devices_per_replica = 1;
  double usd_per_device_hour = 0;  ///< 0: no price.
  std::vector<SloLimit> slo;
  Disaggregation disaggregation;  ///< Off unless prefill_replicas > 0 (LLMs only).
};
ServeResult serve(const ServeSetup& setup, StepCost& cost);

/// The highest rate (to 1 %) whose run meets the SLO and is not saturated; 0 if none does down
/// to 1/1000 of the saturation rate. Needs an SLO. Where the run at that rate is too short to
/// judge it (ServeResult::short_run), the search runs again with runs long enough (at most 4 times,
/// up to 100,000 requests).
struct RateSearch {
  double rate_per_s = 0;
  ServeResult at_rate;
  int runs = 0;
  std::int64_t requests = 0;  ///< Per run, as lengthened for a steady state.
};
RateSearch find_max_rate(ServeSetup setup, StepCost& cost);

/// The fewest replicas (up to `max_replicas`) that meet the SLO at setup.load.rate_per_s without
/// saturating, with runs lengthened as find_max_rate's are.
struct ReplicaSearch {
  std::int64_t replicas = 0;  ///< 0: none up to the limit.
  ServeResult at_replicas;
  int runs = 0;
  std::int64_t requests = 0;  ///< Per run, as lengthened for a steady state.
};
ReplicaSearch find_replicas(ServeSetup setup, StepCost& cost, std::int64_t max_replicas = 4096);

/// Every split of `total` replicas into prefill and decode pools (1 : total-1 up to
/// total-1 : 1), and the same replicas colocated (prefill 0), each at the highest rate that meets
/// the SLO (find_max_rate). `best` indexes the split with the highest rate (the fewest prefill
/// replicas among equals); colocated is reported beside it, never chosen as a split.
struct SplitSearch {
  struct Split {
    std::int64_t prefill = 0;  ///< 0: colocated.
    std::int64_t decode = 0;
    RateSearch search;
  };
  std::vector<Split> splits;  ///< Colocated first, then by prefill replicas.
  std::size_t best = 0;
  int runs = 0;
};
SplitSearch find_split(ServeSetup setup, StepCost& cost, std::int64_t total);

/// Reports. The table and CSV name the run in `title`.
std::string render_serve_text(const ServeResult& result, const std::string& title);
std::string render_serve_json(const ServeResult& result, const std::string& title);
std::string render_serve_csv(const std::vector<ServeResult>& results);  ///< One row per run.
/// find_split's splits: a line naming the best against colocated, then a table of every split.
std::string render_split_text(const SplitSearch& search);
/// The best split's run as `result`, and every split in `splits`.
std::string render_split_json(const SplitSearch& search, const std::string& title);
std::string render_sweep_text(const std::vector<ServeResult>& results, const std::string& title);
std::string render_sweep_json(const std::vector<ServeResult>& results, const std::string& title);
/// P50 and P99 of TTFT and TPOT against the offered rate, the SLO limits as dashed lines, the
/// knee (the last rate meeting the SLO) marked.
std::string render_sweep_svg(const std::vector<ServeResult>& results, const std::string& title);

}  // namespace capcalc
