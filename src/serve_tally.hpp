// What the serving simulator's replicas record (src/serve_sim.cpp turns it into a ServeResult),
// and the continuous-batching replica they share (src/serve_continuous.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "capcalc/serve.hpp"

namespace capcalc::serving {

// Inter-token gaps in log-spaced bins (1 % wide from 10 ns to 10^4 s): percentiles of tens of
// millions of gaps in fixed memory.
class GapHistogram {
 public:
  void add(double gap_s, std::int64_t count = 1) {
    if (gap_s <= 0) {  // Tokens that arrive together (accepted drafts).
      zeros_ += count;
      total_ += count;
      return;
    }
    if (gap_s != last_gap_) {
      last_gap_ = gap_s;
      last_bin_ = bin(gap_s);
    }
    counts_[last_bin_] += count;
    sum_ += gap_s * static_cast<double>(count);
    total_ += count;
    max_ = std::max(max_, gap_s);
  }
  Latency summary() const {
    Latency l;
    l.samples = total_;
    if (total_ == 0) return l;
    l.mean = sum_ / static_cast<double>(total_);
    l.max = max_;
    l.p50 = quantile(0.50);
    l.p90 = quantile(0.90);
    l.p99 = quantile(0.99);
    return l;
  }

 private:
  static constexpr double kPerDecade = 230;  // ln(10)/230 = 1.0 % per bin.
  static constexpr double kLowest = -8;      // 10 ns.
  static constexpr std::size_t kBins = 12 * 230;
  static std::size_t bin(double gap) {
    if (gap <= 0) return 0;
    const double x = (std::log10(gap) - kLowest) * kPerDecade;
    return static_cast<std::size_t>(std::clamp(x, 0.0, static_cast<double>(kBins - 1)));
  }
  double quantile(double q) const {
    const auto rank = static_cast<std::int64_t>(std::ceil(q * static_cast<double>(total_)));
    std::int64_t seen = zeros_;
    if (seen >= rank) return 0;
    for (std::size_t i = 0; i < kBins; ++i) {
      seen += counts_[i];
      if (seen >= rank) {  // The bin's geometric middle, never above the largest gap.
        return std::min(max_,
                        std::pow(10.0, kLowest + (static_cast<double>(i) + 0.5) / kPerDecade));
      }
    }
    return max_;
  }
  std::vector<std::int64_t> counts_ = std::vector<std::int64_t>(kBins);
  double sum_ = 0;
  double max_ = 0;
  std::int64_t total_ = 0;
  std::int64_t zeros_ = 0;
  double last_gap_ = -1;
  std::size_t last_bin_ = 0;
};

struct RequestRecord {
  const TraceRequest* request = nullptr;
  double arrival_s = 0;
  double finish_s = 0;
  double ttft_s = 0;
  double tpot_s = -1;  // -1: one output token.
  double e2e_s = 0;
  double queue_s = 0;
};

// What the replicas accumulate; turned into a ServeResult at the end.
struct Tally {
  std::vector<RequestRecord> records;
  GapHistogram itl;
  double batch_time = 0;  // Σ batch size × step time.
  double busy_s = 0;
  double kv_time = 0;  // Σ occupied fraction × step time.
  double peak_kv = 0;
  std::int64_t max_batch = 0;
  std::int64_t preemptions = 0;
  std::int64_t steps = 0;
  double input_tokens = 0;
  double output_tokens = 0;
};

// A request whose prompt a prefill replica ran (disaggregated serving): it reaches a decode
// replica with its KV cache and its first token.
struct Handoff {
  double arrival_s = 0;  // At the service.
  double first_scheduled_s = 0;
  double first_token_s = 0;
};

/// Runs `arrivals` (in arrival order) through one continuous-batching replica into `tally`;
/// `handoffs`, when given, holds each arrival's handoff (a decode replica's arrivals).
void run_continuous_replica(const ContinuousBatching& config, StepCost& cost, Tally& tally,
                            std::uint64_t seed, const std::vector<const TraceRequest*>& arrivals,
                            const std::vector<const Handoff*>& handoffs);

/// What a continuous-batching step computes: decoding sequences (and the drafts they verify)
/// and prompt chunks, with the cached tokens they attend to (summed).
struct StepShape {
  std::int64_t decode = 0;    ///< Decoding sequences.
  double context = 0;         ///< Their cached tokens, summed.
  std::int64_t prefill = 0;   ///< Prompt tokens and draft tokens to verify.
  std::int64_t prompts = 0;   ///< Requests the prompt chunks come from.
  double prompt_context = 0;  ///< Their tokens already cached, summed.
  bool empty() const { return decode == 0 && prefill == 0; }
  double mean_context() const { return decode > 0 ? context / static_cast<double>(decode) : 0; }
  double mean_prompt_context() const {
    return prompts > 0 ? prompt_context / static_cast<double>(prompts) : 0;
  }
  StepShape& operator+=(const StepShape& o) {
    decode += o.decode;
    context += o.context;
    prefill += o.prefill;
    prompts += o.prompts;
    prompt_context += o.prompt_context;
    return *this;
  }
  /// Each of `ranks` ranks' share of this, whole sequences and tokens rounded up (the same mean
  /// contexts).
  StepShape per_rank(std::int64_t ranks) const {
    const auto up = [ranks](std::int64_t n) { return (n + ranks - 1) / ranks; };
    StepShape s;
    s.decode = up(decode);
    s.prefill = up(prefill);
    s.prompts = up(prompts);
    s.context = mean_context() * static_cast<double>(s.decode);
    s.prompt_context = mean_prompt_context() * static_cast<double>(s.prompts);
    return s;
  }
};

/// A data-parallel attention rank's queues when a request arrives.
struct RankLoad {
  std::size_t waiting = 0;
  std::size_t running = 0;
  /// vLLM's score (DPLBAsyncMPClient.get_core_engine_for_request, v1/engine/core_client.py).
  std::size_t score() const { return 4 * waiting + running; }
};

/// The rank the `turn`-th request of a replica goes to: SGLang's round robin (the data-parallel
/// controller's default load_balance_method, "round_robin"), else vLLM's internal load balancing:
/// the lowest 4 x waiting + running, the first of equals. vLLM reads the queues from stats its
/// coordinator publishes every 100 ms; here they are exact.
std::size_t pick_rank(const std::vector<RankLoad>& loads, Scheduler scheduler, std::size_t turn);

/// Runs `arrivals` through one replica of `config.attention_ranks` data-parallel attention
/// ranks (vLLM's --data-parallel-size with an MoE model, SGLang's --enable-dp-attention): each
/// arrival goes to a rank (SGLang: round robin; vLLM: the lowest 4 x waiting + running), each
/// rank schedules its own requests over its own KV cache, and the ranks step together (the moe
/// layers' token exchange spans them all): each step as long as the slowest rank's own part
/// plus the moe layers at the ranks' mean batch (StepCost::shared_s).
void run_continuous_group(const ContinuousBatching& config, StepCost& cost, Tally& tally,
                          std::uint64_t seed, const std::vector<const TraceRequest*>& arrivals);

}  // namespace capcalc::serving
