// The serving simulator: replicas of continuous batching (src/serve_continuous.cpp) and of
// Triton's dynamic batcher, disaggregated pools, and the tallies turned into a ServeResult.
// Requests, step costs and the searches are in src/serve.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/serve.hpp"
#include "capcalc/units.hpp"

#include "serve_random.hpp"
#include "serve_tally.hpp"

namespace capcalc {

namespace {

using serving::Handoff;
using serving::RequestRecord;
using serving::Tally;

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

// `ranks`: the data-parallel attention ranks of each replica, which step together; steps are
// counted per replica, the batch and the busy share per rank.
ServeResult finish(Tally& tally, const std::vector<TraceRequest>& requests, std::int64_t replicas,
                   bool llm, const std::vector<SloLimit>& slo, std::int64_t ranks = 1) {
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
  r.steps = tally.steps / ranks;
  r.busy_fraction = tally.busy_s / (duration * static_cast<double>(replicas * ranks));
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
      batching.max_num_batched_tokens < 1 || batching.attention_ranks < 1) {
    throw Error({},
                "continuous batching needs a KV cache, a block size, a sequence limit, a "
                "token budget and attention ranks of at least 1");
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
    if (batching.attention_ranks > 1) {
      serving::run_continuous_group(
          batching, cost, tally,
          batching.seed + static_cast<std::uint64_t>(replica * batching.attention_ranks), mine);
      continue;
    }
    serving::run_continuous_replica(batching, cost, tally,
                                    batching.seed + static_cast<std::uint64_t>(replica), mine,
                                    share(handoffs, replica, replicas));
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
  ServeResult r = finish(tally, requests, replicas, true, slo, batching.attention_ranks);
  r.attention_ranks = batching.attention_ranks;
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
  if (batching.attention_ranks > 1) {
    throw Error({}, "disaggregated serving with data-parallel attention is not modelled");
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
