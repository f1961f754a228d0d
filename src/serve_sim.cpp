// The serving simulator: continuous batching over a paged KV cache (vLLM's scheduler or
// SGLang's), Triton's dynamic batcher, and the tallies both turn into a ServeResult. Requests, step
// costs and the searches are in src/serve.cpp.
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/serve.hpp"
#include "capcalc/units.hpp"

#include "serve_random.hpp"

namespace capcalc {

namespace {

using serving::Random;

// SGLang's scheduler constants, its defaults: the output a request is expected to add is clipped
// at CLIP_MAX_NEW_TOKENS (SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION, "4096"); the ratio of it that
// running requests reserve starts at SGLANG_INIT_NEW_TOKEN_RATIO 0.7 (x schedule_conservativeness
// 1.0) and falls each decode step by (0.7 - 0.7 x SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR 0.14) /
// SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS 600 (environ.py, new_token_ratio_tracker.py); a retraction
// frees room for global_config.retract_decode_steps (20) more tokens per remaining request in
// its new ratio (schedule_batch.py, retract_decode).
constexpr std::int64_t kSglangClipNewTokens = 4096;
constexpr double kSglangInitRatio = 0.7;
constexpr double kSglangMinRatio = kSglangInitRatio * 0.14;
constexpr double kSglangRatioDecay = (kSglangInitRatio - kSglangMinRatio) / 600;
constexpr double kSglangRetractSteps = 20;

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

Latency summarize(std::vector<double> values) {
  Latency l;
  l.samples = static_cast<std::int64_t>(values.size());
  if (values.empty()) return l;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values)
    sum += v;
  l.mean = sum / static_cast<double>(values.size());
  const auto at = [&](double q) {  // Linear between closest ranks (numpy's default).
    const double x = q * static_cast<double>(values.size() - 1);
    const auto i = static_cast<std::size_t>(std::floor(x));
    const std::size_t j = std::min(i + 1, values.size() - 1);
    return values[i] + (values[j] - values[i]) * (x - static_cast<double>(i));
  };
  l.p50 = at(0.50);
  l.p90 = at(0.90);
  l.p99 = at(0.99);
  l.max = values.back();
  return l;
}

// Requests whose own TTFT, TPOT, E2E and queueing delay are within every limit on them.
double goodput(const std::vector<RequestRecord>& records, const std::vector<SloLimit>& slo,
               double duration) {
  std::int64_t good = 0;
  for (const RequestRecord& rec : records) {
    bool ok = true;
    for (const SloLimit& limit : slo) {
      const double value = limit.metric == "ttft"    ? rec.ttft_s
                           : limit.metric == "tpot"  ? rec.tpot_s
                           : limit.metric == "e2e"   ? rec.e2e_s
                           : limit.metric == "queue" ? rec.queue_s
                                                     : -1;
      if (value > limit.limit_s) ok = false;
    }
    good += ok ? 1 : 0;
  }
  return duration > 0 ? static_cast<double>(good) / duration : 0;
}

// Whether the run reached a steady state, and the rate it sustained there. The window is the
// arrivals' span less its first mean E2E latency (the warm-up, while the system fills). What
// finishes in a window is what arrives in it less the growth of the number in the system, so a
// queue that grows shows as finishes short of arrivals; the drain after the last arrival, which
// makes a short stable run look slow, lies outside it. A run whose arrivals span under two mean
// latencies has no such window: its whole run is compared, finishes per second from first
// arrival to last completion against the offered rate, which errs towards "saturated".
void steady_state(ServeResult& r, const std::vector<RequestRecord>& records, double first,
                  double last_arrival) {
  const double span = last_arrival - first;
  r.arrival_span_latencies = r.e2e.mean > 0 ? span / r.e2e.mean : 0;
  const double from = first + r.e2e.mean;
  if (last_arrival - from > r.e2e.mean) {
    std::int64_t arrived = 0;
    std::int64_t finished = 0;
    for (const RequestRecord& rec : records) {
      if (rec.arrival_s > from) ++arrived;  // Every arrival is at or before last_arrival.
      if (rec.finish_s > from && rec.finish_s <= last_arrival) ++finished;
    }
    r.sustained_rate_per_s = static_cast<double>(finished) / (last_arrival - from);
    r.saturated = static_cast<double>(finished) < kSustainedShare * static_cast<double>(arrived);
  } else {
    r.sustained_rate_per_s = r.requests_per_s;
    r.saturated = r.requests_per_s < kSustainedShare * r.offered_rate_per_s;
  }
}

ServeResult finish(Tally& tally, const std::vector<TraceRequest>& requests, std::int64_t replicas,
                   bool llm, const std::vector<SloLimit>& slo) {
  ServeResult r;
  r.llm = llm;
  r.replicas = replicas;
  r.requests = static_cast<std::int64_t>(tally.records.size());
  double first = std::numeric_limits<double>::infinity();
  double last_arrival = 0;
  double last = 0;
  std::vector<double> ttft, tpot, e2e, queue;
  std::vector<std::pair<double, int>> events;  // (+1 arrival, -1 finish) for Little's law.
  events.reserve(tally.records.size() * 2);
  for (const RequestRecord& rec : tally.records) {
    first = std::min(first, rec.arrival_s);
    last_arrival = std::max(last_arrival, rec.arrival_s);
    last = std::max(last, rec.finish_s);
    ttft.push_back(rec.ttft_s);
    if (rec.tpot_s >= 0) tpot.push_back(rec.tpot_s);
    e2e.push_back(rec.e2e_s);
    queue.push_back(rec.queue_s);
    events.emplace_back(rec.arrival_s, +1);
    events.emplace_back(rec.finish_s, -1);
  }
  if (r.requests == 0) return r;
  r.duration_s = last - first;
  const double span = last_arrival - first;
  r.offered_rate_per_s = span > 0 ? static_cast<double>(requests.size() - 1) / span
                                  : std::numeric_limits<double>::infinity();
  const double duration = r.duration_s > 0 ? r.duration_s : 1;
  r.requests_per_s = static_cast<double>(r.requests) / duration;
  r.input_tokens_per_s = tally.input_tokens / duration;
  r.output_tokens_per_s = tally.output_tokens / duration;
  r.ttft = summarize(std::move(ttft));
  r.tpot = summarize(std::move(tpot));
  r.e2e = summarize(std::move(e2e));
  r.queue = summarize(std::move(queue));
  r.itl = tally.itl.summary();
  r.mean_batch = tally.busy_s > 0 ? tally.batch_time / tally.busy_s : 0;
  r.max_batch = tally.max_batch;
  r.mean_kv_occupancy = tally.busy_s > 0 ? tally.kv_time / tally.busy_s : 0;
  r.peak_kv_occupancy = tally.peak_kv;
  r.preemptions = tally.preemptions;
  r.steps = tally.steps;
  r.busy_fraction = tally.busy_s / (duration * static_cast<double>(replicas));
  // The number in the system integrated over time, from the arrival and finish events alone;
  // Little's law compares it with throughput × mean latency from the per-request records.
  std::sort(events.begin(), events.end());
  double area = 0;
  std::int64_t in_system = 0;
  double t = first;
  for (const auto& [time, delta] : events) {
    area += static_cast<double>(in_system) * (time - t);
    t = time;
    in_system += delta;
  }
  r.mean_in_system = area / duration;
  const double expected = r.requests_per_s * r.e2e.mean;
  r.littles_law_ratio = expected > 0 ? r.mean_in_system / expected : 1;
  steady_state(r, tally.records, first, last_arrival);
  apply_slo(r, slo);
  r.goodput_per_s = goodput(tally.records, slo, duration);
  return r;
}

// A request whose prompt a prefill replica ran (disaggregated serving): it reaches a decode
// replica with its KV cache and its first token.
struct Handoff {
  double arrival_s = 0;  // At the service.
  double first_scheduled_s = 0;
  double first_token_s = 0;
};

// One running or waiting request of a continuous-batching replica.
struct Sequence {
  const TraceRequest* request = nullptr;
  const Handoff* handoff = nullptr;  // Received from a prefill replica, else null.
  double arrival_s = 0;              // At the service.
  std::int64_t generated = 0;        // Output tokens sampled.
  std::int64_t computed = 0;         // Tokens whose keys and values are in the cache.
  std::int64_t blocks = 0;           // KV blocks held.
  std::int64_t scheduled = 0;        // Tokens in this step.
  bool decoding = false;             // This step verifies its last token (and drafts).
  double first_scheduled_s = -1;
  double first_token_s = -1;
  double last_token_s = -1;
  std::int64_t tokens() const { return request->prompt_tokens + generated; }
};

class ContinuousReplica {
 public:
  ContinuousReplica(const ContinuousBatching& config, StepCost& cost, Tally& tally,
                    std::uint64_t seed)
      : config_(config),
        cost_(cost),
        tally_(tally),
        free_blocks_(config.kv_blocks),
        random_(seed) {}

  // `handoffs`, when given, holds each arrival's handoff (a decode replica's arrivals).
  void run(const std::vector<const TraceRequest*>& arrivals,
           const std::vector<const Handoff*>& handoffs = {}) {
    pool_.resize(arrivals.size());
    std::size_t next = 0;
    std::size_t done = 0;
    double now = 0;
    while (done < arrivals.size()) {
      while (next < arrivals.size() && arrivals[next]->arrival_s <= now) {
        Sequence& s = pool_[next];
        s.request = arrivals[next];
        s.handoff = handoffs.empty() ? nullptr : handoffs[next];
        s.arrival_s = s.handoff != nullptr ? s.handoff->arrival_s : s.request->arrival_s;
        waiting_.push_back(next++);
      }
      if (running_.empty() && waiting_.empty()) {
        now = arrivals[next]->arrival_s;
        continue;
      }
      // A decode pool of a disaggregated service receives prompts' caches: vLLM's rule.
      const bool sglang = config_.scheduler == Scheduler::kSglang && handoffs.empty();
      const double step = sglang ? schedule_sglang() : schedule();
      const double end = now + step;
      done += complete(now, end);
      now = end;
    }
  }

 private:
  std::int64_t blocks_for(std::int64_t tokens) const {
    return (tokens + config_.block_size - 1) / config_.block_size;
  }

  void preempt_last() {
    const std::size_t victim = running_.back();
    running_.pop_back();
    Sequence& s = pool_[victim];
    free_blocks_ += s.blocks;
    s.blocks = 0;
    s.computed = 0;  // Recomputed from the prompt and the tokens generated so far.
    s.scheduled = 0;
    waiting_.push_front(victim);
    ++tally_.preemptions;
  }

  // Allocates the blocks `s` needs for `tokens` more; false when they cannot be had.
  bool allocate(Sequence& s, std::int64_t tokens) {
    const std::int64_t need = blocks_for(s.computed + tokens) - s.blocks;
    if (config_.reserve_full_request && need <= 0) return true;  // Keeps its reserved blocks.
    if (need > free_blocks_) return false;
    free_blocks_ -= need;
    s.blocks += need;
    return true;
  }

  // vLLM's Scheduler.schedule(): running requests first, in order, each its remaining tokens up
  // to the budget; when the cache is full, the last running request is preempted (recompute).
  // Then waiting ones in order, unless this step preempted. Returns the step's time.
  double schedule() {
    std::int64_t budget = config_.max_num_batched_tokens;
    bool preempted = false;
    scheduled_.clear();
    for (std::size_t i = 0; i < running_.size() && budget > 0;) {
      Sequence& s = pool_[running_[i]];
      s.decoding = s.generated > 0 && s.tokens() - s.computed == 1;
      std::int64_t tokens = std::min(s.tokens() - s.computed, budget);
      if (s.decoding && config_.speculative_tokens > 0) {
        // Drafts up to the tokens still to generate; the verify step checks them all.
        const std::int64_t left = s.request->output_tokens - s.generated - 1;
        tokens = std::min(1 + std::min(config_.speculative_tokens, left), budget);
      }
      if (allocate(s, tokens)) {
        s.scheduled = tokens;
        budget -= tokens;
        scheduled_.push_back(running_[i]);
        ++i;
        continue;
      }
      preempted = true;
      const bool self = running_.size() - 1 == i;
      preempt_last();
      if (self) break;
    }
    while (!preempted && !waiting_.empty() && budget > 0 &&
           static_cast<std::int64_t>(running_.size()) < config_.max_num_seqs) {
      Sequence& s = pool_[waiting_.front()];
      s.decoding = false;
      if (s.handoff != nullptr && s.generated == 0) {
        // The prompt's KV cache arrives from the prefill replica: blocks for it, and the first
        // token's to compute in this step.
        if (!allocate(s, s.request->prompt_tokens)) break;
        s.computed = s.request->prompt_tokens;
        s.generated = 1;
        s.decoding = true;
        s.first_scheduled_s = s.handoff->first_scheduled_s;
        s.first_token_s = s.handoff->first_token_s;
        s.last_token_s = s.handoff->first_token_s;
      } else if (!take_prefix_hit(s)) {
        break;
      }
      const std::int64_t remaining = s.tokens() - s.computed;
      const bool fits = config_.chunked_prefill || remaining <= budget;
      const std::int64_t tokens = std::min(remaining, budget);
      const bool reserved =
          !config_.reserve_full_request ||
          allocate(s, s.request->prompt_tokens + s.request->output_tokens - s.computed);
      if (!fits || !reserved || !allocate(s, tokens)) {
        free_blocks_ += s.blocks;  // Prefix hits are looked up again at the next try.
        s.blocks = 0;
        s.computed = 0;
        if (s.handoff != nullptr && s.decoding) s.generated = 0;  // Received again next try.
        s.decoding = false;
        break;
      }
      s.scheduled = tokens;
      budget -= tokens;
      running_.push_back(waiting_.front());
      scheduled_.push_back(waiting_.front());
      waiting_.pop_front();
    }
    if (scheduled_.empty()) nothing_fits();
    return step_time();
  }

  // Prefix caching: a request admitted for the first time finds that share of its prompt in
  // the cache (whole blocks, one token left to compute). False when its blocks cannot be had.
  bool take_prefix_hit(Sequence& s) {
    if (s.computed != 0 || config_.prefix_hit_rate <= 0) return true;
    const std::int64_t hit =
        static_cast<std::int64_t>(config_.prefix_hit_rate *
                                  static_cast<double>(s.request->prompt_tokens - 1)) /
        config_.block_size * config_.block_size;
    if (!allocate(s, hit)) return false;
    s.computed = hit;
    return true;
  }

  // Nothing fits: the first waiting request needs more than the budget or the whole cache.
  [[noreturn]] void nothing_fits() const {
    if (waiting_.empty()) {
      throw Error({}, fmt::format("the KV cache ({} blocks of {} tokens) cannot hold the next "
                                  "token of the one request left running",
                                  config_.kv_blocks, config_.block_size));
    }
    const Sequence& s = pool_[waiting_.front()];
    if (!config_.chunked_prefill && s.tokens() > config_.max_num_batched_tokens) {
      throw Error({}, fmt::format("a prompt of {} tokens exceeds the token budget of {} and "
                                  "prefill is not chunked",
                                  s.tokens(), config_.max_num_batched_tokens));
    }
    throw Error({}, fmt::format("a request of {} prompt + {} output tokens needs {} KV blocks; "
                                "the cache holds {} ({} tokens each)",
                                s.request->prompt_tokens, s.request->output_tokens,
                                blocks_for(s.request->prompt_tokens + s.request->output_tokens),
                                config_.kv_blocks, config_.block_size));
  }

  // The time of the step `scheduled_` holds: decoding sequences (and their drafts to verify)
  // and prompt tokens, as the performance model prices them, and the drafting.
  double step_time() {
    std::int64_t decode = 0;
    double context = 0;
    std::int64_t prefill = 0;
    std::int64_t prompt = 0;  // Prompt tokens (chunks), without the drafts to verify.
    for (std::size_t index : scheduled_) {
      const Sequence& s = pool_[index];
      if (s.decoding) {
        ++decode;
        context += static_cast<double>(s.computed);
        prefill += s.scheduled - 1;  // Draft tokens to verify: token-wise work like a prompt's.
      } else {
        prefill += s.scheduled;
        prompt += s.scheduled;
      }
    }
    const double mean_context = decode > 0 ? context / static_cast<double>(decode) : 0;
    double step = cost_.step_s(decode, mean_context, prefill);
    if (config_.speculative_tokens > 0 && config_.draft_model != nullptr) {
      StepCost& draft = *config_.draft_model;
      step += draft.step_s(decode, mean_context, prompt);
      if (decode > 0) {
        step += static_cast<double>(config_.speculative_tokens - 1) *
                draft.step_s(decode, mean_context, 0);
      }
    } else if (decode > 0 && config_.speculative_tokens > 0 && config_.draft_cost > 0) {
      step += config_.draft_cost * static_cast<double>(config_.speculative_tokens) *
              cost_.step_s(decode, mean_context, 0);
    }
    return step;
  }

  // SGLang's event loop (managers/scheduler.py): a prefill batch when waiting requests can be
  // admitted, else one decode step of every running request. Returns the step's time.
  double schedule_sglang() {
    scheduled_.clear();
    if (!admit_sglang()) decode_sglang();
    if (scheduled_.empty()) nothing_fits();
    return step_time();
  }

  // The output a request is expected to add, as SGLang's admission counts it.
  static double expected_output(const Sequence& s) {
    return static_cast<double>(
        std::min(s.request->output_tokens - s.generated, kSglangClipNewTokens));
  }

  // PrefillAdder (managers/schedule_policy.py): the budget is the free cache less each running
  // request's expected output times the ratio. A partly prefilled request continues first; then
  // waiting ones in order while the new request's remaining prompt plus its whole expected
  // output stays below the budget, the token budget (chunked_prefill_size) lasts and
  // max_running_requests allows. A prompt longer than what is left of the token budget is
  // chunked, and closes the batch. True when something was admitted.
  bool admit_sglang() {
    double total = static_cast<double>(free_blocks_ * config_.block_size);
    std::int64_t budget = config_.max_num_batched_tokens;
    std::vector<std::size_t> chunked;
    for (std::size_t i : running_) {
      if (pool_[i].tokens() - pool_[i].computed == 1) {
        total -= expected_output(pool_[i]) * new_token_ratio_;
      } else {
        chunked.push_back(i);
      }
    }
    const bool chunking = !chunked.empty();
    for (std::size_t i : chunked) {
      // The chunked request: its next chunk, and its output once the prompt is whole.
      Sequence& s = pool_[i];
      const std::int64_t left = s.tokens() - s.computed;
      const std::int64_t take =
          std::min({left, budget, static_cast<std::int64_t>(std::max(0.0, total))});
      if (take <= 0 || !allocate(s, take)) continue;
      s.decoding = false;
      s.scheduled = take;
      budget -= take;
      total -= static_cast<double>(take) + (take == left ? expected_output(s) : 0);
      scheduled_.push_back(i);
    }
    // A full batch takes no new request, unless a chunked one is running (get_new_batch_prefill).
    if (batch_full_ && !chunking) return false;
    while (!waiting_.empty() && budget > 0) {
      if (static_cast<std::int64_t>(running_.size()) >= config_.max_num_seqs) {
        batch_full_ = true;
        break;
      }
      Sequence& s = pool_[waiting_.front()];
      s.decoding = false;
      if (!take_prefix_hit(s)) break;
      const std::int64_t left = s.tokens() - s.computed;
      // A new request reserves its whole clipped output (max_new_tokens, also when retracted).
      const auto reserve =
          static_cast<double>(std::min(s.request->output_tokens, kSglangClipNewTokens));
      if (static_cast<double>(left) + reserve >= total) {
        batch_full_ = true;  // NO_TOKEN: no admission until the running batch shrinks.
        release(s);
        break;
      }
      // Unchunked, a prompt runs whole; only the first of a batch may pass the budget.
      if (!config_.chunked_prefill && left > budget && !scheduled_.empty()) break;
      const std::int64_t take = config_.chunked_prefill ? std::min(left, budget) : left;
      if (!allocate(s, take)) {
        release(s);
        break;
      }
      s.scheduled = take;
      budget -= take;
      total -= static_cast<double>(take) + (take == left ? reserve : 0);
      running_.push_back(waiting_.front());
      scheduled_.push_back(waiting_.front());
      waiting_.pop_front();
      if (take < left) break;  // The new chunked request closes the batch.
    }
    return !scheduled_.empty();
  }

  // A waiting request that was not admitted gives back what its prefix lookup took.
  void release(Sequence& s) {
    free_blocks_ += s.blocks;
    s.blocks = 0;
    s.computed = 0;
  }

  // Blocks the decoding requests `ids` need for this step's tokens (one each, and drafts).
  std::int64_t decode_blocks(const std::vector<std::size_t>& ids) const {
    std::int64_t need = 0;
    for (std::size_t i : ids) {
      const Sequence& s = pool_[i];
      need += blocks_for(s.computed + decode_tokens(s)) - s.blocks;
    }
    return need;
  }

  std::int64_t decode_tokens(const Sequence& s) const {
    if (config_.speculative_tokens <= 0) return 1;
    return 1 + std::min(config_.speculative_tokens, s.request->output_tokens - s.generated - 1);
  }

  // update_running_batch (scheduler.py) and retract_decode (schedule_batch.py): every running
  // request whose prompt is cached decodes. When the cache cannot hold the step, requests are
  // retracted, the fewest tokens generated first and among those the longest prompt, at least
  // one and until the rest fit; they go to the back of the queue, to be prefilled again (prompt
  // and tokens so far), and the ratio becomes (tokens generated + 20 x requests) / output
  // tokens of those left, at most 1. Otherwise the ratio decays.
  void decode_sglang() {
    std::vector<std::size_t> ids;
    for (std::size_t i : running_) {
      if (pool_[i].tokens() - pool_[i].computed == 1) ids.push_back(i);
    }
    if (ids.empty()) return;
    if (decode_blocks(ids) > free_blocks_) {
      std::stable_sort(ids.begin(), ids.end(), [&](std::size_t a, std::size_t b) {
        const Sequence& x = pool_[a];
        const Sequence& y = pool_[b];
        if (x.generated != y.generated) return x.generated > y.generated;
        return x.request->prompt_tokens < y.request->prompt_tokens;
      });
      bool first = true;
      while (ids.size() > 1 && (first || decode_blocks(ids) > free_blocks_)) {
        first = false;
        retract(ids.back());
        ids.pop_back();
      }
      double generated = 0;
      double outputs = 0;
      for (std::size_t i : ids) {
        generated += static_cast<double>(pool_[i].generated);
        outputs += static_cast<double>(pool_[i].request->output_tokens);
      }
      const auto left = static_cast<double>(ids.size());
      new_token_ratio_ = std::min(1.0, (generated + kSglangRetractSteps * left) / outputs);
      batch_full_ = false;
    } else {
      new_token_ratio_ = std::max(new_token_ratio_ - kSglangRatioDecay, kSglangMinRatio);
    }
    for (std::size_t i : ids) {
      Sequence& s = pool_[i];
      const std::int64_t tokens = decode_tokens(s);
      if (!allocate(s, tokens)) continue;  // The last request alone: SGLang would fail here.
      s.decoding = true;
      s.scheduled = tokens;
      scheduled_.push_back(i);
    }
  }

  void retract(std::size_t victim) {
    running_.erase(std::find(running_.begin(), running_.end(), victim));
    Sequence& s = pool_[victim];
    free_blocks_ += s.blocks;
    s.blocks = 0;
    s.computed = 0;
    s.scheduled = 0;
    waiting_.push_back(victim);
    ++tally_.preemptions;
  }

  // Tokens a verify step of `drafts` draft tokens yields: the accepted prefix plus one.
  std::int64_t verified(std::int64_t drafts) {
    std::int64_t accepted = 0;
    while (accepted < drafts && random_.uniform() < config_.acceptance_rate)
      ++accepted;
    return accepted + 1;
  }

  // Applies the step ending at `end`; returns how many requests finished.
  std::size_t complete(double start, double end) {
    const double step = end - start;
    ++tally_.steps;
    tally_.busy_s += step;
    const auto batch = static_cast<std::int64_t>(scheduled_.size());
    tally_.batch_time += static_cast<double>(batch) * step;
    tally_.max_batch = std::max(tally_.max_batch, batch);
    const double occupied =
        1 - static_cast<double>(free_blocks_) / static_cast<double>(config_.kv_blocks);
    tally_.kv_time += occupied * step;
    tally_.peak_kv = std::max(tally_.peak_kv, occupied);
    std::size_t finished = 0;
    for (std::size_t index : scheduled_) {
      Sequence& s = pool_[index];
      if (s.first_scheduled_s < 0) s.first_scheduled_s = start;
      const std::int64_t tokens = s.decoding && s.scheduled > 1 ? verified(s.scheduled - 1) : 1;
      s.computed += s.decoding ? tokens : s.scheduled;
      s.scheduled = 0;
      if (s.computed < s.tokens() + tokens - 1) continue;  // A prompt chunk: no token yet.
      s.generated += tokens;
      if (s.first_token_s < 0) {
        s.first_token_s = end;
      } else {
        tally_.itl.add(end - s.last_token_s);
        if (tokens > 1) tally_.itl.add(0, tokens - 1);  // Accepted drafts arrive together.
      }
      s.last_token_s = end;
      if (s.generated < s.request->output_tokens) continue;
      RequestRecord rec;
      rec.request = s.request;
      rec.arrival_s = s.arrival_s;
      rec.finish_s = end;
      rec.ttft_s = s.first_token_s - rec.arrival_s;
      rec.e2e_s = end - rec.arrival_s;
      rec.queue_s = s.first_scheduled_s - rec.arrival_s;
      if (s.request->output_tokens > 1) {
        rec.tpot_s = (end - s.first_token_s) / static_cast<double>(s.request->output_tokens - 1);
      }
      tally_.records.push_back(rec);
      tally_.input_tokens += static_cast<double>(s.request->prompt_tokens);
      tally_.output_tokens += static_cast<double>(s.request->output_tokens);
      free_blocks_ += s.blocks;
      s.blocks = 0;
      s.request = nullptr;  // Finished: dropped from running below.
      ++finished;
    }
    if (finished > 0) {
      batch_full_ = false;
      running_.erase(std::remove_if(running_.begin(), running_.end(),
                                    [&](std::size_t i) { return pool_[i].request == nullptr; }),
                     running_.end());
    }
    return finished;
  }

  const ContinuousBatching& config_;
  StepCost& cost_;
  Tally& tally_;
  std::int64_t free_blocks_;
  std::vector<Sequence> pool_;
  std::vector<std::size_t> running_;  // In order of admission.
  std::deque<std::size_t> waiting_;
  std::vector<std::size_t> scheduled_;
  Random random_;
  double new_token_ratio_ = kSglangInitRatio;  // SGLang: the share of output running ones reserve.
  bool batch_full_ = false;                    // SGLang: admission stopped until the batch shrinks.
};

void check_requests(const std::vector<TraceRequest>& requests, std::int64_t replicas) {
  if (requests.empty()) throw Error({}, "no requests to serve");
  if (replicas < 1) throw Error({}, "replicas must be at least 1");
}

// Round-robin: request i (or its handoff) goes to replica i mod replicas.
template <typename T>
std::vector<const T*> share(const std::vector<T>& items, std::int64_t replica,
                            std::int64_t replicas) {
  std::vector<const T*> mine;
  mine.reserve(items.size() / static_cast<std::size_t>(replicas) + 1);
  for (auto i = static_cast<std::size_t>(replica); i < items.size();
       i += static_cast<std::size_t>(replicas)) {
    mine.push_back(&items[i]);
  }
  return mine;
}

}  // namespace

namespace {

void check_continuous(const std::vector<TraceRequest>& requests,
                      const ContinuousBatching& batching) {
  if (batching.kv_blocks < 1 || batching.block_size < 1 || batching.max_num_seqs < 1 ||
      batching.max_num_batched_tokens < 1) {
    throw Error({},
                "continuous batching needs a KV cache, a block size, a sequence limit and a "
                "token budget of at least 1");
  }
  if (!(batching.prefix_hit_rate >= 0 && batching.prefix_hit_rate < 1) ||
      !(batching.acceptance_rate >= 0 && batching.acceptance_rate < 1) ||
      batching.speculative_tokens < 0 || !(batching.draft_cost >= 0)) {
    throw Error({},
                "prefix hit rate and acceptance rate must be in [0, 1), draft tokens and their "
                "cost at least 0");
  }
  for (const TraceRequest& r : requests) {
    const std::int64_t tokens = r.prompt_tokens + r.output_tokens;
    if ((tokens + batching.block_size - 1) / batching.block_size > batching.kv_blocks) {
      throw Error({}, fmt::format("a request of {} prompt + {} output tokens does not fit in the "
                                  "KV cache ({} blocks of {} tokens)",
                                  r.prompt_tokens, r.output_tokens,
                                  format_grouped(batching.kv_blocks), batching.block_size));
    }
  }
}

// Runs `requests` round-robin over `replicas` continuous-batching replicas into `tally`;
// `handoffs`, when given, are the requests' handoffs, in the same order.
void run_pool(const std::vector<TraceRequest>& requests, const ContinuousBatching& batching,
              StepCost& cost, std::int64_t replicas, Tally& tally,
              const std::vector<Handoff>& handoffs = {}) {
  for (std::int64_t replica = 0; replica < replicas; ++replica) {
    const std::vector<const TraceRequest*> mine = share(requests, replica, replicas);
    if (mine.empty()) continue;
    ContinuousReplica(batching, cost, tally, batching.seed + static_cast<std::uint64_t>(replica))
        .run(mine, share(handoffs, replica, replicas));
  }
}

}  // namespace

ServeResult simulate_continuous(const std::vector<TraceRequest>& requests,
                                const ContinuousBatching& batching, StepCost& cost,
                                std::int64_t replicas, const std::vector<SloLimit>& slo) {
  check_requests(requests, replicas);
  check_continuous(requests, batching);
  Tally tally;
  tally.records.reserve(requests.size());
  run_pool(requests, batching, cost, replicas, tally);
  ServeResult r = finish(tally, requests, replicas, true, slo);
  r.kv_blocks = batching.kv_blocks;
  return r;
}

double Disaggregation::transfer_s(std::int64_t prompt_tokens) const {
  if (link_bytes_per_s <= 0) return latency_s;
  return latency_s + static_cast<double>(prompt_tokens) * kv_bytes_per_token / link_bytes_per_s;
}

// The prefill pool serves every request as if it ended at its first token; each one that goes on
// is handed to the decode pool when its KV cache has arrived, in the order they arrive there.
ServeResult simulate_disaggregated(const std::vector<TraceRequest>& requests,
                                   const ContinuousBatching& batching, StepCost& cost,
                                   const Disaggregation& pools, const std::vector<SloLimit>& slo) {
  if (pools.prefill_replicas < 1 || pools.decode_replicas < 1) {
    throw Error({}, "disaggregated serving needs at least 1 prefill and 1 decode replica");
  }
  if (!(pools.kv_bytes_per_token >= 0) || !(pools.latency_s >= 0) ||
      !(pools.link_bytes_per_s >= 0)) {
    throw Error({}, "a KV transfer's bytes, bandwidth and latency must be at least 0");
  }
  const std::int64_t replicas = pools.prefill_replicas + pools.decode_replicas;
  check_requests(requests, replicas);
  check_continuous(requests, batching);
  std::vector<TraceRequest> prompts = requests;
  for (TraceRequest& r : prompts)
    r.output_tokens = 1;
  Tally prefill;
  prefill.records.reserve(requests.size());
  run_pool(prompts, batching, cost, pools.prefill_replicas, prefill);

  Tally tally;
  tally.records.reserve(requests.size());
  std::vector<std::pair<TraceRequest, Handoff>> handed;  // To the decode pool.
  std::vector<double> transfers;
  handed.reserve(requests.size());
  for (const RequestRecord& rec : prefill.records) {
    const TraceRequest& request = requests[static_cast<std::size_t>(rec.request - prompts.data())];
    if (request.output_tokens == 1) {
      tally.records.push_back(rec);
      tally.records.back().request = &request;
      continue;
    }
    const double transfer = pools.transfer_s(request.prompt_tokens);
    transfers.push_back(transfer);
    TraceRequest next = request;
    next.arrival_s = rec.finish_s + transfer;
    handed.push_back({next, {rec.arrival_s, rec.arrival_s + rec.queue_s, rec.finish_s}});
  }
  // The decode pool takes requests as their caches arrive.
  std::stable_sort(handed.begin(), handed.end(), [](const auto& a, const auto& b) {
    return a.first.arrival_s < b.first.arrival_s;
  });
  std::vector<TraceRequest> arriving;
  std::vector<Handoff> received;
  arriving.reserve(handed.size());
  received.reserve(handed.size());
  for (const auto& [request, handoff] : handed) {
    arriving.push_back(request);
    received.push_back(handoff);
  }
  Tally decode;
  decode.records.reserve(arriving.size());
  run_pool(arriving, batching, cost, pools.decode_replicas, decode, received);

  tally.records.insert(tally.records.end(), decode.records.begin(), decode.records.end());
  tally.itl = std::move(decode.itl);
  for (const Tally* pool : {&prefill, &decode}) {
    tally.batch_time += pool->batch_time;
    tally.busy_s += pool->busy_s;
    tally.kv_time += pool->kv_time;
    tally.peak_kv = std::max(tally.peak_kv, pool->peak_kv);
    tally.max_batch = std::max(tally.max_batch, pool->max_batch);
    tally.preemptions += pool->preemptions;
    tally.steps += pool->steps;
  }
  for (const TraceRequest& r : requests) {
    tally.input_tokens += static_cast<double>(r.prompt_tokens);
    tally.output_tokens += static_cast<double>(r.output_tokens);
  }
  ServeResult r = finish(tally, requests, replicas, true, slo);
  r.kv_blocks = batching.kv_blocks;
  r.prefill_replicas = pools.prefill_replicas;
  r.decode_replicas = pools.decode_replicas;
  const double duration = r.duration_s > 0 ? r.duration_s : 1;
  r.prefill_busy_fraction =
      prefill.busy_s / (duration * static_cast<double>(pools.prefill_replicas));
  r.decode_busy_fraction = decode.busy_s / (duration * static_cast<double>(pools.decode_replicas));
  r.kv_transfer = summarize(std::move(transfers));
  r.kv_link = pools.link_name;
  return r;
}

ServeResult simulate_dynamic(const std::vector<TraceRequest>& requests,
                             const DynamicBatching& batching, StepCost& cost, std::int64_t replicas,
                             const std::vector<SloLimit>& slo) {
  check_requests(requests, replicas);
  const std::int64_t max_batch = batching.max_batch_size;
  if (max_batch < 1) throw Error({}, "the largest batch must be at least 1");
  std::int64_t target = max_batch;
  if (!batching.preferred_batch_sizes.empty()) {
    target = std::min(max_batch, *std::max_element(batching.preferred_batch_sizes.begin(),
                                                   batching.preferred_batch_sizes.end()));
  }
  Tally tally;
  tally.records.reserve(requests.size());
  for (std::int64_t replica = 0; replica < replicas; ++replica) {
    const std::vector<const TraceRequest*> mine = share(requests, replica, replicas);
    std::size_t queued = 0;  // The oldest request not yet dispatched.
    std::size_t seen = 0;    // Requests arrived by the last look (looks go forward in time).
    double free_s = 0;       // When the instance is free.
    while (queued < mine.size()) {
      // The batcher looks when the instance is free and a request waits; it sends `target` at
      // once, else what waits when the oldest has waited max_queue_delay_s (or when `target`
      // have arrived, if sooner).
      double t = std::max(free_s, mine[queued]->arrival_s);
      const auto arrived_by = [&](double time) {
        seen = std::max(seen, queued);
        while (seen < mine.size() && mine[seen]->arrival_s <= time)
          ++seen;
        return seen - queued;
      };
      std::size_t waiting = arrived_by(t);
      if (static_cast<std::int64_t>(waiting) < target) {
        const double deadline = mine[queued]->arrival_s + batching.max_queue_delay_s;
        const std::size_t fill = queued + static_cast<std::size_t>(target) - 1;
        const double filled_at =
            fill < mine.size() ? mine[fill]->arrival_s : std::numeric_limits<double>::infinity();
        t = std::max(t, std::min(deadline, filled_at));
        waiting = arrived_by(t);
      }
      const auto batch = std::min<std::int64_t>(static_cast<std::int64_t>(waiting), max_batch);
      const double service = cost.batch_s(batch);
      const double end = t + service;
      for (std::int64_t i = 0; i < batch; ++i) {
        const TraceRequest& req = *mine[queued + static_cast<std::size_t>(i)];
        RequestRecord rec;
        rec.arrival_s = req.arrival_s;
        rec.finish_s = end;
        rec.ttft_s = end - req.arrival_s;
        rec.e2e_s = rec.ttft_s;
        rec.queue_s = t - req.arrival_s;
        tally.records.push_back(rec);
      }
      queued += static_cast<std::size_t>(batch);
      ++tally.steps;
      tally.busy_s += service;
      tally.batch_time += static_cast<double>(batch) * service;
      tally.max_batch = std::max(tally.max_batch, batch);
      free_s = end;
    }
  }
  return finish(tally, requests, replicas, false, slo);
}

}  // namespace capcalc
