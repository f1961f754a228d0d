#include "capcalc/serve.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <deque>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/units.hpp"

#include "input_file.hpp"
#include "json_view.hpp"
#include "limits.hpp"
#include "serve_random.hpp"
#include "spellcheck.hpp"

namespace capcalc {
namespace {

using serving::Random;

std::int64_t draw_length(const LengthDistribution& d, Random& random) {
  double value = d.a;
  switch (d.kind) {
    case LengthDistribution::Kind::kFixed:
      break;
    case LengthDistribution::Kind::kUniform:
      value = d.a + (d.b - d.a) * random.uniform();
      break;
    case LengthDistribution::Kind::kNormal:
      value = d.a + d.b * random.normal();
      break;
    case LengthDistribution::Kind::kLogNormal:
      value = d.a * std::exp(d.b * random.normal());
      break;
  }
  return std::max<std::int64_t>(
      1, std::llround(std::min(value, static_cast<double>(kMaxRequestTokens))));
}

// A number from a distribution's text, positive and finite.
double positive_number(const std::string& text, const std::string& what, bool zero_ok = false) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value) || value < 0 ||
      (value == 0 && !zero_ok) || text.find_first_of("xXnN") != std::string::npos) {
    throw Error({}, fmt::format("{}: expected a positive number, got \"{}\"", what, text));
  }
  return value;
}

}  // namespace

// --- Requests ------------------------------------------------------------------------------

double LengthDistribution::mean() const {
  switch (kind) {
    case Kind::kFixed:
    case Kind::kNormal:
      return a;
    case Kind::kUniform:
      return (a + b) / 2;
    case Kind::kLogNormal:
      return a * std::exp(b * b / 2);
  }
  return a;
}

LengthDistribution parse_length_distribution(const std::string& text, const std::string& what) {
  LengthDistribution d;
  const std::size_t colon = text.find(':');
  const auto usage = [&] {
    return Error({}, fmt::format("{}: expected N, uniform:LOW..HIGH, normal:MEAN,SD or "
                                 "lognormal:MEDIAN,SIGMA, got \"{}\"",
                                 what, text));
  };
  // A request's length past the limit (fixed, a uniform's bounds, a normal's mean or a
  // log-normal's median) is an error, not a clamp the simulation would hide.
  const auto within_limit = [&](double tokens) {
    if (tokens > static_cast<double>(kMaxRequestTokens)) {
      throw Error({}, fmt::format("{}: at most {} tokens a request, got \"{}\"", what,
                                  format_grouped(kMaxRequestTokens), text));
    }
    return tokens;
  };
  if (colon == std::string::npos) {
    d.a = within_limit(positive_number(text, what));
    if (d.a != std::floor(d.a)) throw usage();
    return d;
  }
  const std::string kind = text.substr(0, colon);
  const std::string args = text.substr(colon + 1);
  const std::string separator = kind == "uniform" ? ".." : ",";
  const std::size_t at = args.find(separator);
  if (at == std::string::npos) throw usage();
  const std::string first = args.substr(0, at);
  const std::string second = args.substr(at + separator.size());
  if (kind == "uniform") {
    d.kind = LengthDistribution::Kind::kUniform;
    d.a = positive_number(first, what);
    d.b = within_limit(positive_number(second, what));
    if (d.b < d.a) {
      throw Error({}, fmt::format("{}: uniform:{}: the highest is below the lowest", what, args));
    }
  } else if (kind == "normal") {
    d.kind = LengthDistribution::Kind::kNormal;
    d.a = within_limit(positive_number(first, what));
    d.b = positive_number(second, what, true);
  } else if (kind == "lognormal") {
    d.kind = LengthDistribution::Kind::kLogNormal;
    d.a = within_limit(positive_number(first, what));
    d.b = positive_number(second, what, true);
  } else {
    throw usage();
  }
  return d;
}

std::vector<TraceRequest> parse_trace(const std::string& text, const std::string& file) {
  // At most as many requests as --requests draws (the simulation's time grows with them),
  // counted before any line is parsed.
  std::int64_t rows = 0;
  int row_line = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    ++row_line;
    if (text.find_first_not_of(" \t\r", at) < end && ++rows > kMaxTraceRequests) {
      throw Error({file, "", row_line, 1}, fmt::format("more than {} requests (the limit)",
                                                       format_grouped(kMaxTraceRequests)));
    }
    at = end + 1;
  }
  std::vector<TraceRequest> trace;
  std::size_t start = 0;
  int line = 0;
  double previous = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string row = text.substr(start, end - start);
    start = end + 1;
    ++line;
    if (row.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", file, line);
    nlohmann::json doc;
    try {
      doc = parse_json_text(row, where);
    } catch (const Error& e) {
      throw Error({file, "", line, e.where().column}, e.message());
    }
    const JsonView view(doc, where);
    reject_unknown_keys(view, {"arrival_s", "prompt_tokens", "output_tokens"}, "a trace request");
    TraceRequest r;
    const JsonView arrival = view.at("arrival_s");
    r.arrival_s = arrival.as_number();
    if (!(r.arrival_s >= 0) || r.arrival_s > 1e9) arrival.fail("expected 0 to 1e9 seconds");
    if (r.arrival_s < previous) {
      arrival.fail(
          fmt::format("arrivals must not go back in time ({} after {})", r.arrival_s, previous));
    }
    previous = r.arrival_s;
    r.prompt_tokens = view.at("prompt_tokens").as_positive_int();
    r.output_tokens = view.at("output_tokens").as_positive_int();
    for (auto [key, tokens] : {std::pair{"prompt_tokens", r.prompt_tokens},
                               std::pair{"output_tokens", r.output_tokens}}) {
      if (tokens > kMaxRequestTokens)
        view.at(key).fail(fmt::format("at most {} tokens", format_grouped(kMaxRequestTokens)));
    }
    trace.push_back(r);
  }
  // Where the file ends: its last line (line 1 of an empty file).
  if (trace.empty()) throw Error({file, "", std::max(line, 1), 1}, "the trace has no requests");
  return trace;
}

std::vector<TraceRequest> load_trace(const std::string& path) {
  return parse_trace(read_input_file(path, kMaxJsonFileBytes, "trace files"), path);
}

std::vector<TraceRequest> generate_requests(const ServeLoad& load) {
  if (!load.trace.empty()) return load.trace;
  Random arrivals(load.seed);
  Random lengths(load.seed ^ 0x5bd1e995ULL);
  std::vector<TraceRequest> requests(static_cast<std::size_t>(load.requests));
  // Gamma inter-arrival times of mean 1 and the asked CV: shape 1/CV², scale CV².
  const double shape = 1 / (load.arrival_cv * load.arrival_cv);
  double t = 0;
  for (TraceRequest& r : requests) {
    const double gap =
        load.arrival_cv == 1 ? arrivals.exponential() : arrivals.gamma(shape) / shape;
    t += gap / load.rate_per_s;
    r.arrival_s = t;
    r.prompt_tokens = draw_length(load.prompt, lengths);
    r.output_tokens = draw_length(load.output, lengths);
  }
  return requests;
}

// --- Step times -----------------------------------------------------------------------------

namespace {

// Grid points around `value`: exact up to `exact`, then exact·2^(k/steps) rounded.
std::pair<std::int64_t, std::int64_t> grid(double value, std::int64_t exact, int steps) {
  if (value <= static_cast<double>(exact)) {
    const auto lo = static_cast<std::int64_t>(std::floor(value));
    return {lo, static_cast<double>(lo) == value ? lo : lo + 1};
  }
  const double k = std::floor(steps * std::log2(value / static_cast<double>(exact)));
  auto point = [&](double i) {
    return std::llround(static_cast<double>(exact) * std::exp2(i / steps));
  };
  std::int64_t lo = point(k);
  std::int64_t hi = point(k + 1);
  if (static_cast<double>(lo) > value) lo = point(k - 1);
  if (static_cast<double>(hi) < value) hi = point(k + 2);
  return {lo, hi};
}

// `f` at `x`, linear between the grid points `g` around it; only the lower point is priced
// where `x` sits on it.
template <class F>
double across(double x, std::pair<std::int64_t, std::int64_t> g, const F& f) {
  const auto [x0, x1] = g;
  const double y0 = f(x0);
  if (x1 == x0 || x == static_cast<double>(x0)) return y0;
  return y0 + (f(x1) - y0) * (x - static_cast<double>(x0)) / static_cast<double>(x1 - x0);
}

// Context grid: 0, 256, 1024, 4096, ... (decode cost is affine in the context between them).
std::pair<std::int64_t, std::int64_t> context_grid(double context) {
  if (context <= 256) return {0, 256};
  std::int64_t lo = 256;
  while (static_cast<double>(lo) * 4 < context)
    lo *= 4;
  return {lo, lo * 4};
}

}  // namespace

ModelStepCost::ModelStepCost(BatchGraphBuilder build, Device device, PerformanceParams params,
                             Workload workload, Part part)
    : build_(std::move(build)),
      device_(std::move(device)),
      params_(params),
      workload_(std::move(workload)),
      part_(part) {}

double ModelStepCost::timed(const Graph& graph) {
  ++estimates_;
  const Estimate e = estimate(graph, device_, params_, workload_);
  if (part_ == Part::kWhole) return e.latency_s;
  double moe = e.expert_parallel_s;
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    if (!graph.layers[i].view && graph.layers[i].counts.experts > 0) moe += e.layers[i].time_s;
  }
  return moe;
}

double ModelStepCost::shared_s(std::int64_t decode, double mean_context,
                               std::int64_t prefill_tokens, std::int64_t prefill_sequences,
                               double prefill_context) {
  if (part_ == Part::kMoe) {
    return step_s(decode, mean_context, prefill_tokens, prefill_sequences, prefill_context);
  }
  if (!moe_)
    moe_ = std::make_unique<ModelStepCost>(build_, device_, params_, workload_, Part::kMoe);
  return moe_->step_s(decode, mean_context, prefill_tokens, prefill_sequences, prefill_context);
}

double ModelStepCost::decode_at(std::int64_t batch, std::int64_t context) {
  const auto key = std::make_pair(batch, context);
  if (auto it = decode_.find(key); it != decode_.end()) return it->second;
  Graph graph = build_(batch, 1, context);
  drop_prefill_only_layers(graph);
  return decode_[key] = timed(graph);
}

double ModelStepCost::prefill_at(std::int64_t sequences, std::int64_t length,
                                 std::int64_t context) {
  const auto key = std::make_tuple(sequences, length, context);
  if (auto it = prefill_.find(key); it != prefill_.end()) return it->second;
  Graph graph = build_(sequences, length, context);
  last_token_logits(graph);
  return prefill_[key] = timed(graph);
}

double ModelStepCost::decode_s(std::int64_t batch, double context) {
  return across(static_cast<double>(batch), grid(static_cast<double>(batch), 16, 4),
                [&](std::int64_t b) {
                  return across(context, context_grid(context),
                                [&](std::int64_t c) { return decode_at(b, c); });
                });
}

double ModelStepCost::prefill_s(std::int64_t tokens, std::int64_t sequences, double context) {
  if (tokens <= 0) return 0;
  const std::int64_t k = std::clamp<std::int64_t>(sequences, 1, tokens);
  const double length = static_cast<double>(tokens) / static_cast<double>(k);
  // k sequences of `length` new tokens over `context` cached ones each, on the three grids.
  const auto at = [&](std::int64_t batch) {
    return across(length, grid(length, 16, 8), [&](std::int64_t l) {
      return across(context, context_grid(context),
                    [&](std::int64_t c) { return prefill_at(batch, l, c); });
    });
  };
  return across(static_cast<double>(k), grid(static_cast<double>(k), 16, 4), at);
}

double ModelStepCost::step_s(std::int64_t decode, double mean_context, std::int64_t prefill_tokens,
                             std::int64_t prefill_sequences, double prefill_context) {
  if (decode == 0) return prefill_s(prefill_tokens, prefill_sequences, prefill_context);
  const double d = decode_s(decode, mean_context);
  if (prefill_tokens == 0) return d;
  return d + std::max(0.0, prefill_s(decode + prefill_tokens, prefill_sequences, prefill_context) -
                               prefill_s(decode, prefill_sequences, prefill_context));
}

double ModelStepCost::batch_s(std::int64_t batch) {
  if (auto it = batch_.find(batch); it != batch_.end()) return it->second;
  return batch_[batch] = timed(build_(batch, 0, 0));
}

KvCapacity with_draft(const KvCapacity& target, const KvCapacity& draft, std::int64_t block_size) {
  KvCapacity kv = target;
  kv.weight_bytes = target.weight_bytes + draft.weight_bytes;
  kv.bytes_per_token = target.bytes_per_token + draft.bytes_per_token;
  kv.cache_bytes = target.cache_bytes - draft.weight_bytes;
  const double block_bytes = static_cast<double>(block_size) * kv.bytes_per_token;
  const double blocks = std::floor(kv.cache_bytes / block_bytes);
  if (!(blocks >= 1)) {
    throw Error({}, fmt::format("the draft model's weights ({:.3g} GB) leave no room for a KV "
                                "block beside the target model",
                                draft.weight_bytes / 1e9));
  }
  kv.blocks = static_cast<std::int64_t>(std::min(blocks, 1e15));
  return kv;
}

KvCapacity kv_capacity(const BatchGraphBuilder& build, const Device& device,
                       const PerformanceParams& params, const Workload& workload,
                       std::int64_t block_size, std::int64_t max_num_batched_tokens,
                       double memory_utilization, MemoryFraction fraction_of) {
  Graph step = build(1, max_num_batched_tokens, 0);
  last_token_logits(step);
  const Estimate e = estimate(step, device, params, workload);
  const Precision kv_precision = workload.kv_precision.value_or(workload.precision);
  KvCapacity kv;
  kv.bytes_per_token = kv_cache_elements_per_device(step, 1, workload.tensor_parallel) *
                       stored_activation_bytes(kv_precision);
  kv.weight_bytes = e.memory.weight_bytes;
  kv.activation_bytes = e.memory.activation_bytes;
  switch (fraction_of) {
    case MemoryFraction::kDevice:
      kv.cache_bytes =
          memory_utilization * device.memory_bytes - kv.weight_bytes - kv.activation_bytes;
      break;
    case MemoryFraction::kFree:
      kv.cache_bytes =
          memory_utilization * (device.memory_bytes - kv.weight_bytes - kv.activation_bytes);
      break;
    case MemoryFraction::kStatic:  // Activations live in the rest of the device's memory.
      kv.cache_bytes = memory_utilization * device.memory_bytes - kv.weight_bytes;
      break;
  }
  if (kv.bytes_per_token <= 0) {
    throw Error::naming_keys({},
                             "the model keeps no KV cache (no self-attention layers): serve it "
                             "without `prompt_tokens`, as a dynamic batch");
  }
  if (kv.cache_bytes < kv.bytes_per_token * static_cast<double>(block_size)) {
    const std::string activations =
        fraction_of == MemoryFraction::kStatic
            ? std::string()
            : fmt::format(" and a {}-token step's activations ({})", max_num_batched_tokens,
                          format_bytes(kv.activation_bytes));
    throw Error(
        {}, fmt::format("no room for a KV cache on {}: {:.0f} % of {} holds the weights "
                        "({}){}, nothing else",
                        device.name, memory_utilization * 100, format_bytes(device.memory_bytes),
                        format_bytes(kv.weight_bytes), activations));
  }
  kv.blocks = static_cast<std::int64_t>(
      std::floor(kv.cache_bytes / (kv.bytes_per_token * static_cast<double>(block_size))));
  return kv;
}

// --- Simulation -------------------------------------------------------------------------------

// --- Objectives and searches ------------------------------------------------------------------

namespace {

// `name` in lower case when it is one of `known` in any case ("TTFT" -> "ttft"), else an error
// with a "did you mean".
std::string slo_name(const std::string& name, const std::vector<std::string_view>& known,
                     std::string_view what, std::string_view expected) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (std::find(known.begin(), known.end(), lower) != known.end()) return lower;
  const std::string unknown = fmt::format("`slo`: unknown {} \"{}\"", what, Error::verbatim(name));
  const std::string message = with_suggestion(unknown, lower, known);
  throw Error::naming_keys(
      {}, message == unknown ? fmt::format("{}; expected {}", unknown, expected) : message);
}

}  // namespace

std::vector<SloLimit> parse_slo(const std::string& text) {
  static const std::vector<std::string_view> kMetrics = {"ttft", "tpot", "itl", "e2e", "queue"};
  static const std::vector<std::string_view> kStatistics = {"mean", "p50", "p90", "p99"};
  std::vector<SloLimit> slo;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    start = end + 1;
    const std::size_t eq = item.find('=');
    const std::size_t underscore = item.rfind('_', eq);
    if (eq == std::string::npos || underscore == std::string::npos) {
      throw Error::naming_keys(
          {}, fmt::format("`slo`: expected METRIC_STAT=TIME (e.g. ttft_p99=500ms), got \"{}\"",
                          Error::verbatim(item)));
    }
    SloLimit limit;
    limit.metric =
        slo_name(item.substr(0, underscore), kMetrics, "metric", "ttft, tpot, itl, e2e or queue");
    limit.statistic = slo_name(item.substr(underscore + 1, eq - underscore - 1), kStatistics,
                               "statistic", "mean, p50, p90 or p99");
    const std::string time = item.substr(eq + 1);
    try {
      limit.limit_s = parse_duration(time);
    } catch (const Error& e) {
      throw Error::naming_keys(
          {}, fmt::format("`slo` {}: {}", Error::verbatim(limit.metric + "_" + limit.statistic),
                          Error::verbatim(e.message())));
    }
    if (!(limit.limit_s > 0)) {
      throw Error::naming_keys(
          {}, fmt::format("`slo` {}: a limit of {} never holds: give one above zero",
                          Error::verbatim(limit.metric + "_" + limit.statistic),
                          Error::verbatim(time)));
    }
    slo.push_back(limit);
  }
  return slo;
}

double slo_value(const ServeResult& r, const SloLimit& limit) {
  const Latency& l = limit.metric == "ttft"   ? r.ttft
                     : limit.metric == "tpot" ? r.tpot
                     : limit.metric == "itl"  ? r.itl
                     : limit.metric == "e2e"  ? r.e2e
                                              : r.queue;
  if (limit.statistic == "mean") return l.mean;
  if (limit.statistic == "p50") return l.p50;
  if (limit.statistic == "p90") return l.p90;
  return l.p99;
}

void apply_slo(ServeResult& result, const std::vector<SloLimit>& slo) {
  result.slo = slo;
  result.slo_met = true;
  for (const SloLimit& limit : slo) {
    if (slo_value(result, limit) > limit.limit_s) {
      result.slo_met = false;
    }
  }
}

ServeResult serve(const ServeSetup& setup, StepCost& cost) {
  const std::vector<TraceRequest> requests = generate_requests(setup.load);
  ContinuousBatching continuous = setup.continuous;
  continuous.seed = setup.load.seed;
  const Disaggregation& pools = setup.disaggregation;
  if (pools.enabled() && !setup.llm) {
    throw Error::naming_keys({}, "disaggregated prefill and decode needs an LLM");
  }
  ServeResult r =
      pools.enabled() ? simulate_disaggregated(requests, continuous, cost, pools, setup.slo)
      : setup.llm     ? simulate_continuous(requests, continuous, cost, setup.replicas, setup.slo)
                      : simulate_dynamic(requests, setup.dynamic, cost, setup.replicas, setup.slo);
  r.usd_per_hour = setup.usd_per_device_hour * static_cast<double>(setup.devices_per_replica) *
                   static_cast<double>(r.replicas);
  const double tokens_per_hour = r.output_tokens_per_s * 3600;
  r.usd_per_million_output_tokens =
      tokens_per_hour > 0 && r.usd_per_hour > 0 ? r.usd_per_hour / tokens_per_hour * 1e6 : 0;
  return r;
}

std::int64_t steady_run_requests(const ServeResult& r) {
  // A fifth more than the span alone asks, for the longer latencies of the longer run.
  const double factor =
      r.arrival_span_latencies > 0 ? 1.2 * kSteadySpanLatencies / r.arrival_span_latencies : 12;
  const double wanted = std::ceil(static_cast<double>(r.requests) * std::max(factor, 1.2));
  if (wanted >= 1e15) return std::int64_t{1'000'000'000'000'000};
  return std::max(static_cast<std::int64_t>(wanted), kSteadyRequests);
}

namespace {

// A rate or replica count serves the load when its run meets the SLO without a growing queue.
bool serves(const ServeResult& r) {
  return r.slo_met && !r.saturated;
}

// The most requests a search lengthens its runs to (a run of 100,000 takes about a second).
constexpr std::int64_t kMaxSearchRequests = 100'000;

// The requests a search lengthens a short run to (0: not short, a trace, or at the limit).
std::int64_t longer_run(const ServeSetup& setup, const ServeResult& r) {
  if (!r.short_run() || !setup.load.trace.empty()) return 0;
  if (setup.load.requests >= kMaxSearchRequests) return 0;
  return std::min(steady_run_requests(r), kMaxSearchRequests);
}

RateSearch search_rate(ServeSetup& setup, StepCost& cost) {
  RateSearch search;
  const auto run = [&](double rate) {
    setup.load.rate_per_s = rate;
    ++search.runs;
    return serve(setup, cost);
  };
  // Start from the saturation rate (every request at once: what completes per second); a burst
  // can serve less than a steady stream (it preempts more), so double while the load is served.
  const ServeResult burst = run(1e9);
  double lo = 0;
  double hi = burst.requests_per_s;
  ServeResult at_lo;
  ServeResult at_hi = run(hi);
  for (int i = 0; serves(at_hi) && i < 20; ++i) {
    lo = hi;
    at_lo = std::move(at_hi);
    hi *= 2;
    at_hi = run(hi);
  }
  while (hi - lo > 0.01 * hi) {
    const double mid = (lo + hi) / 2;
    ServeResult r = run(mid);
    if (serves(r)) {
      lo = mid;
      at_lo = std::move(r);
    } else {
      hi = mid;
    }
    if (lo == 0 && hi < burst.requests_per_s / 1000) break;
  }
  search.rate_per_s = lo;
  search.at_rate = lo > 0 ? at_lo : at_hi;
  return search;
}

ReplicaSearch search_replicas(ServeSetup& setup, StepCost& cost, std::int64_t max_replicas) {
  ReplicaSearch search;
  const auto run = [&](std::int64_t replicas) {
    setup.replicas = replicas;
    ++search.runs;
    return serve(setup, cost);
  };
  std::int64_t hi = 1;
  ServeResult at_hi = run(hi);
  while (!serves(at_hi) && hi < max_replicas) {
    hi = std::min(hi * 2, max_replicas);
    at_hi = run(hi);
  }
  if (!serves(at_hi)) return search;
  std::int64_t lo = hi / 2;  // Fails (or 0).
  while (hi - lo > 1) {
    const std::int64_t mid = (lo + hi) / 2;
    ServeResult r = run(mid);
    if (serves(r)) {
      hi = mid;
      at_hi = std::move(r);
    } else {
      lo = mid;
    }
  }
  search.replicas = hi;
  search.at_replicas = std::move(at_hi);
  return search;
}

// A run too short for a steady state can meet an SLO at a load it could not sustain (its queue
// had no time to grow): runs `once` and, while the run its answer stands on is short
// (ServeResult::short_run), again with runs long enough, at most four more times. `answer`
// gives that run, or null where there is no answer.
template <typename Search, typename Once, typename Answer>
Search with_steady_runs(ServeSetup& setup, Once once, Answer answer) {
  Search search = once();
  for (int i = 0; i < 4; ++i) {
    const ServeResult* run = answer(search);
    const std::int64_t longer = run != nullptr ? longer_run(setup, *run) : 0;
    if (longer == 0) break;
    setup.load.requests = longer;
    const int runs = search.runs;
    search = once();
    search.runs += runs;
  }
  search.requests = setup.load.requests;
  return search;
}

}  // namespace

RateSearch find_max_rate(ServeSetup setup, StepCost& cost) {
  if (setup.slo.empty()) throw Error::naming_keys({}, "`find` max-rate needs `slo`");
  if (!setup.load.trace.empty())
    throw Error::naming_keys({}, "`find` max-rate draws requests: not with `trace`");
  return with_steady_runs<RateSearch>(
      setup, [&] { return search_rate(setup, cost); },
      [](const RateSearch& s) { return s.rate_per_s > 0 ? &s.at_rate : nullptr; });
}

ReplicaSearch find_replicas(ServeSetup setup, StepCost& cost, std::int64_t max_replicas) {
  if (setup.slo.empty()) throw Error::naming_keys({}, "`find` replicas needs `slo`");
  if (setup.disaggregation.enabled()) {
    throw Error::naming_keys({}, "`find` replicas counts colocated replicas: not with pools");
  }
  return with_steady_runs<ReplicaSearch>(
      setup, [&] { return search_replicas(setup, cost, max_replicas); },
      [](const ReplicaSearch& s) { return s.replicas > 0 ? &s.at_replicas : nullptr; });
}

Disaggregation disaggregated_pools(const Device& device, const PerformanceParams& params,
                                   Profile profile, std::int64_t prefill, std::int64_t decode,
                                   std::int64_t tensor_parallel, double kv_bytes_per_token) {
  Disaggregation pools;
  pools.prefill_replicas = prefill;
  pools.decode_replicas = decode;
  pools.kv_bytes_per_token = kv_bytes_per_token;
  pools.latency_s = params.allreduce_latency(profile);
  std::int64_t devices = 0;
  if (__builtin_add_overflow(prefill, decode, &devices) ||
      __builtin_mul_overflow(devices, tensor_parallel, &devices)) {
    throw Error({}, "the pools' devices do not fit in a 64-bit integer");
  }
  const Link* link = nullptr;
  double per_direction = 0;
  if (device.intra_node &&
      (device.intra_node->domain_devices == 0 || devices <= device.intra_node->domain_devices)) {
    link = &*device.intra_node;
    per_direction = group_per_direction(*link, 2);
  } else if (device.inter_node) {
    link = &*device.inter_node;
    per_direction = link_per_direction(*link);
  }
  if (link == nullptr || per_direction <= 0) {
    throw Error({}, fmt::format("{}: the hardware table gives no link between its devices, so a "
                                "KV transfer cannot be timed",
                                device.id));
  }
  pools.link_name = link->name;
  pools.link_bytes_per_s = params.allreduce_efficiency * per_direction;
  return pools;
}

SplitSearch find_split(ServeSetup setup, StepCost& cost, std::int64_t total) {
  if (setup.slo.empty()) throw Error::naming_keys({}, "`find` split needs `slo`");
  if (!setup.llm) throw Error::naming_keys({}, "`find` split needs an LLM");
  if (total < 2) {
    throw Error::naming_keys({}, "`find` split needs 2 or more replicas to split");
  }
  SplitSearch result;
  const Disaggregation link = setup.disaggregation;
  for (std::int64_t prefill = 0; prefill < total; ++prefill) {
    SplitSearch::Split split;
    split.prefill = prefill;
    split.decode = prefill == 0 ? 0 : total - prefill;
    setup.replicas = total;
    setup.disaggregation = link;
    setup.disaggregation.prefill_replicas = prefill;
    setup.disaggregation.decode_replicas = split.decode;
    split.search = find_max_rate(setup, cost);
    result.runs += split.search.runs;
    result.splits.push_back(std::move(split));
  }
  result.best = 1;
  for (std::size_t i = 2; i < result.splits.size(); ++i) {
    if (result.splits[i].search.rate_per_s > result.splits[result.best].search.rate_per_s) {
      result.best = i;
    }
  }
  return result;
}

}  // namespace capcalc
