// One continuous-batching replica of the serving simulator: vLLM's scheduler (prompt chunks and
// decodes in one step, preemption of the last running request) or SGLang's (prefill and decode
// steps apart, admission on the expected output, retraction), over a paged KV cache.
#include <algorithm>
#include <cmath>
#include <deque>
#include <vector>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/serve.hpp"

#include "serve_random.hpp"
#include "serve_tally.hpp"

namespace capcalc::serving {

namespace {

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
    pool_.reserve(arrivals.size());
    std::size_t next = 0;
    std::size_t done = 0;
    double now = 0;
    while (done < arrivals.size()) {
      for (; next < arrivals.size() && arrivals[next]->arrival_s <= now; ++next) {
        admit(arrivals[next], handoffs.empty() ? nullptr : handoffs[next]);
      }
      if (idle()) {
        now = arrivals[next]->arrival_s;
        continue;
      }
      const double end = now + step();
      done += complete(now, end);
      now = end;
    }
  }

  // A request reaches this replica's waiting queue (with its handoff: a decode replica's).
  void admit(const TraceRequest* request, const Handoff* handoff = nullptr) {
    Sequence& s = pool_.emplace_back();
    s.request = request;
    s.handoff = handoff;
    s.arrival_s = handoff != nullptr ? handoff->arrival_s : request->arrival_s;
    decode_pool_ = decode_pool_ || handoff != nullptr;
    waiting_.push_back(pool_.size() - 1);
  }

  bool idle() const { return running_.empty() && waiting_.empty(); }
  const StepShape& shape() const { return shape_; }  // Of the step last scheduled.
  std::size_t waiting() const { return waiting_.size(); }
  std::size_t running() const { return running_.size(); }

  // Schedules the next step and returns its time; an idle replica schedules nothing (a data-
  // parallel rank's dummy pass: 0 s of its own, it waits for the others).
  double step() {
    if (idle()) {
      scheduled_.clear();
      shape_ = StepShape{};
      return 0;
    }
    // A decode pool of a disaggregated service receives prompts' caches: vLLM's rule.
    return config_.scheduler == Scheduler::kSglang && !decode_pool_ ? schedule_sglang()
                                                                    : schedule();
  }

 private:
  std::int64_t blocks_for(std::int64_t tokens) const {
    return (tokens + config_.block_size - 1) / config_.block_size;
  }

  // A request's blocks go back to the cache; it computes its prompt (and any prefix hit)
  // again when next admitted.
  void release(Sequence& s) {
    free_blocks_ += s.blocks;
    s.blocks = 0;
    s.computed = 0;
  }

  // A running request preempted (vLLM) or retracted (SGLang): recomputed from the prompt and the
  // tokens generated so far when it is admitted again.
  void evict(std::size_t victim) {
    release(pool_[victim]);
    pool_[victim].scheduled = 0;
    ++tally_.preemptions;
  }

  void preempt_last() {
    const std::size_t victim = running_.back();
    running_.pop_back();
    evict(victim);
    waiting_.push_front(victim);
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
      // A decoding sequence verifies its token and drafts; a prompt takes what is left of it.
      const std::int64_t tokens =
          std::min(s.decoding ? decode_tokens(s) : s.tokens() - s.computed, budget);
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
        release(s);  // Prefix hits are looked up again at the next try.
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
    if (config_.scheduler == Scheduler::kSglang) {
      throw Error(
          {}, fmt::format("SGLang admits a request only while its prompt and output "
                          "(clipped at {}) stay below the free KV cache: {} + {} tokens "
                          "against a cache of {} tokens",
                          kSglangClipNewTokens, s.request->prompt_tokens, s.request->output_tokens,
                          config_.kv_blocks * config_.block_size));
    }
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
    shape_ = StepShape{};
    std::int64_t& decode = shape_.decode;
    std::int64_t& prefill = shape_.prefill;
    std::int64_t& prompts = shape_.prompts;
    std::int64_t prompt = 0;  // Prompt tokens (chunks), without the drafts to verify.
    for (std::size_t index : scheduled_) {
      const Sequence& s = pool_[index];
      if (s.decoding) {
        ++decode;
        shape_.context += static_cast<double>(s.computed);
        prefill += s.scheduled - 1;  // Draft tokens to verify: token-wise work like a prompt's.
      } else {
        prefill += s.scheduled;
        prompt += s.scheduled;
        shape_.prompt_context += static_cast<double>(s.computed);
        ++prompts;
      }
    }
    const double mean_context = shape_.mean_context();
    const double mean_prompt_context = shape_.mean_prompt_context();
    double step = cost_.step_s(decode, mean_context, prefill, prompts, mean_prompt_context);
    if (config_.speculative_tokens > 0 && config_.draft_model != nullptr) {
      StepCost& draft = *config_.draft_model;
      step += draft.step_s(decode, mean_context, prompt, prompts, mean_prompt_context);
      if (decode > 0) {
        step += static_cast<double>(config_.speculative_tokens - 1) *
                draft.step_s(decode, mean_context, 0, 0, 0);
      }
    } else if (decode > 0 && config_.speculative_tokens > 0 && config_.draft_cost > 0) {
      step += config_.draft_cost * static_cast<double>(config_.speculative_tokens) *
              cost_.step_s(decode, mean_context, 0, 0, 0);
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

  // Blocks the decoding requests `ids` need for this step's tokens (one each, and drafts).
  std::int64_t decode_blocks(const std::vector<std::size_t>& ids) const {
    std::int64_t need = 0;
    for (std::size_t i : ids) {
      const Sequence& s = pool_[i];
      need += blocks_for(s.computed + decode_tokens(s)) - s.blocks;
    }
    return need;
  }

  // Drafts up to the tokens still to generate; the verify step checks them all.
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
    evict(victim);
    waiting_.push_back(victim);
  }

  // Tokens a verify step of `drafts` draft tokens yields: the accepted prefix plus one.
  std::int64_t verified(std::int64_t drafts) {
    std::int64_t accepted = 0;
    while (accepted < drafts && random_.uniform() < config_.acceptance_rate)
      ++accepted;
    return accepted + 1;
  }

 public:
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

 private:
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
  StepShape shape_;
  bool decode_pool_ = false;  // Receives prompts' caches from a prefill pool (disaggregated).
};

}  // namespace

void run_continuous_replica(const ContinuousBatching& config, StepCost& cost, Tally& tally,
                            std::uint64_t seed, const std::vector<const TraceRequest*>& arrivals,
                            const std::vector<const Handoff*>& handoffs) {
  ContinuousReplica(config, cost, tally, seed).run(arrivals, handoffs);
}

std::size_t pick_rank(const std::vector<RankLoad>& loads, Scheduler scheduler, std::size_t turn) {
  if (scheduler == Scheduler::kSglang) return turn % loads.size();
  std::size_t best = 0;
  for (std::size_t r = 1; r < loads.size(); ++r) {
    if (loads[r].score() < loads[best].score()) best = r;
  }
  return best;
}

void run_continuous_group(const ContinuousBatching& config, StepCost& cost, Tally& tally,
                          std::uint64_t seed, const std::vector<const TraceRequest*>& arrivals) {
  std::vector<ContinuousReplica> ranks;
  ranks.reserve(static_cast<std::size_t>(config.attention_ranks));
  for (std::int64_t rank = 0; rank < config.attention_ranks; ++rank) {
    ranks.emplace_back(config, cost, tally, seed + static_cast<std::uint64_t>(rank));
  }
  std::vector<RankLoad> loads(ranks.size());
  std::size_t next = 0;
  std::size_t done = 0;
  double now = 0;
  while (done < arrivals.size()) {
    for (; next < arrivals.size() && arrivals[next]->arrival_s <= now; ++next) {
      for (std::size_t r = 0; r < ranks.size(); ++r) {
        loads[r] = {ranks[r].waiting(), ranks[r].running()};
      }
      ranks[pick_rank(loads, config.scheduler, next)].admit(arrivals[next]);
    }
    if (std::all_of(ranks.begin(), ranks.end(), [](const auto& r) { return r.idle(); })) {
      now = arrivals[next]->arrival_s;
      continue;
    }
    // The ranks step together: the moe layers exchange tokens among all of them, so each step
    // lasts as long as the slowest rank's own part (its step less its moe layers') and the moe
    // layers over every rank's tokens; an idle rank runs a dummy pass meanwhile.
    double own = 0;
    StepShape all;
    for (ContinuousReplica& rank : ranks) {
      const double step = rank.step();
      const StepShape& shape = rank.shape();
      if (shape.empty()) continue;
      own = std::max(own, step - cost.shared_s(shape.decode, shape.mean_context(), shape.prefill,
                                               shape.prompts, shape.mean_prompt_context()));
      all += shape;
    }
    const StepShape mean = all.per_rank(config.attention_ranks);
    const double end = now + own +
                       cost.shared_s(mean.decode, mean.mean_context(), mean.prefill, mean.prompts,
                                     mean.mean_prompt_context());
    for (ContinuousReplica& rank : ranks)
      done += rank.complete(now, end);
    now = end;
  }
}

}  // namespace capcalc::serving
