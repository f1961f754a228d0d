#include "capcalc/serve.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/units.hpp"

#include "input_file.hpp"
#include "json_view.hpp"

namespace capcalc {
namespace {

// xoshiro256** seeded by splitmix64, and the distributions drawn from it by hand: the standard
// library's distributions differ between implementations, and --seed must give the same
// requests everywhere.
constexpr double kPi = 3.14159265358979323846;

class Random {
 public:
  explicit Random(std::uint64_t seed) {
    for (auto& word : state_) {
      seed += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      word = z ^ (z >> 31);
    }
  }

  /// Uniform in (0, 1).
  double uniform() {
    const std::uint64_t bits = next() >> 11;
    return (static_cast<double>(bits) + 0.5) * 0x1.0p-53;
  }
  double exponential() { return -std::log(uniform()); }
  double normal() {  // Box-Muller; one of the pair is enough.
    return std::sqrt(-2 * std::log(uniform())) * std::cos(2 * kPi * uniform());
  }
  /// Gamma(shape, 1): Marsaglia and Tsang (2000); shape < 1 by Gamma(shape + 1)·U^(1/shape).
  double gamma(double shape) {
    if (shape < 1) return gamma(shape + 1) * std::pow(uniform(), 1 / shape);
    const double d = shape - 1.0 / 3;
    const double c = 1 / std::sqrt(9 * d);
    for (;;) {
      double x = 0;
      double v = 0;
      do {
        x = normal();
        v = 1 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const double u = uniform();
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
    }
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t next() {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }
  std::array<std::uint64_t, 4> state_{};
};

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
  return std::max<std::int64_t>(1, std::llround(std::min(value, 1e12)));
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
  if (colon == std::string::npos) {
    d.a = positive_number(text, what);
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
    d.b = positive_number(second, what);
    if (d.b < d.a) {
      throw Error({}, fmt::format("{}: uniform:{}: the highest is below the lowest", what, args));
    }
  } else if (kind == "normal") {
    d.kind = LengthDistribution::Kind::kNormal;
    d.a = positive_number(first, what);
    d.b = positive_number(second, what, true);
  } else if (kind == "lognormal") {
    d.kind = LengthDistribution::Kind::kLogNormal;
    d.a = positive_number(first, what);
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
    if (r.prompt_tokens > 100'000'000) view.at("prompt_tokens").fail("at most 100,000,000");
    if (r.output_tokens > 100'000'000) view.at("output_tokens").fail("at most 100,000,000");
    trace.push_back(r);
  }
  if (trace.empty()) throw Error({file}, "the trace has no requests");
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

double lerp(double x, double x0, double y0, double x1, double y1) {
  return x1 == x0 ? y0 : y0 + (y1 - y0) * (x - x0) / (x1 - x0);
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
                             Workload workload)
    : build_(std::move(build)),
      device_(std::move(device)),
      params_(params),
      workload_(std::move(workload)) {}

void ModelStepCost::set_moe_imbalance(double factor) {
  if (!(factor >= 1 && factor <= 1000)) {
    throw Error::naming_keys(
        {}, fmt::format("`moe_imbalance` must be between 1 and 1000 (got {:g})", factor));
  }
  moe_imbalance_ = factor;
  decode_.clear();
  prefill_.clear();
  batch_.clear();
}

double ModelStepCost::timed(const Graph& graph) {
  ++estimates_;
  const Estimate e = estimate(graph, device_, params_, workload_);
  double moe_s = 0;
  for (std::size_t i = 0; i < graph.layers.size() && i < e.layers.size(); ++i) {
    if (graph.layers[i].op == "moe") moe_s += e.layers[i].time_s * e.layer_repeats;
  }
  return e.latency_s + (moe_imbalance_ - 1) * moe_s;
}

double ModelStepCost::decode_at(std::int64_t batch, std::int64_t context) {
  const auto key = std::make_pair(batch, context);
  if (auto it = decode_.find(key); it != decode_.end()) return it->second;
  Graph graph = build_(batch, 1, context);
  drop_prefill_only_layers(graph);
  return decode_[key] = timed(graph);
}

double ModelStepCost::prefill_at(std::int64_t tokens) {
  if (auto it = prefill_.find(tokens); it != prefill_.end()) return it->second;
  return prefill_[tokens] = timed(build_(1, tokens, 0));
}

double ModelStepCost::decode_s(std::int64_t batch, double context) {
  const auto [b0, b1] = grid(static_cast<double>(batch), 16, 4);
  const auto [context_lo, context_hi] = context_grid(context);
  // Copies: a structured binding cannot be captured by a lambda in C++17 (clang refuses it).
  const auto c0 = context_lo;
  const auto c1 = context_hi;
  const auto at = [&](std::int64_t b) {
    return lerp(context, static_cast<double>(c0), decode_at(b, c0), static_cast<double>(c1),
                decode_at(b, c1));
  };
  return lerp(static_cast<double>(batch), static_cast<double>(b0), at(b0), static_cast<double>(b1),
              at(b1));
}

double ModelStepCost::prefill_s(std::int64_t tokens) {
  if (tokens <= 0) return 0;
  const auto [t0, t1] = grid(static_cast<double>(tokens), 16, 8);
  return lerp(static_cast<double>(tokens), static_cast<double>(t0), prefill_at(t0),
              static_cast<double>(t1), prefill_at(t1));
}

double ModelStepCost::step_s(std::int64_t decode, double mean_context,
                             std::int64_t prefill_tokens) {
  if (decode == 0) return prefill_s(prefill_tokens);
  const double d = decode_s(decode, mean_context);
  if (prefill_tokens == 0) return d;
  return d + std::max(0.0, prefill_s(decode + prefill_tokens) - prefill_s(decode));
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
                       double memory_utilization) {
  const Graph step = build(1, max_num_batched_tokens, 0);
  const Estimate e = estimate(step, device, params, workload);
  const Precision kv_precision = workload.kv_precision.value_or(workload.precision);
  KvCapacity kv;
  kv.bytes_per_token = kv_cache_elements_per_device(step, 1, workload.tensor_parallel) *
                       activation_bytes_per_element(kv_precision);
  kv.weight_bytes = e.memory.weight_bytes;
  kv.activation_bytes = e.memory.activation_bytes;
  kv.cache_bytes = memory_utilization * device.memory_bytes - kv.weight_bytes - kv.activation_bytes;
  if (kv.bytes_per_token <= 0) {
    throw Error::naming_keys({},
                             "the model keeps no KV cache (no self-attention layers): serve it "
                             "without `prompt_tokens`, as a dynamic batch");
  }
  if (kv.cache_bytes < kv.bytes_per_token * static_cast<double>(block_size)) {
    throw Error({}, fmt::format("no room for a KV cache on {}: {:.0f} % of {} holds the weights "
                                "({}) and a {}-token step's activations ({}), nothing else",
                                device.name, memory_utilization * 100,
                                format_bytes(device.memory_bytes), format_bytes(kv.weight_bytes),
                                max_num_batched_tokens, format_bytes(kv.activation_bytes)));
  }
  kv.blocks = static_cast<std::int64_t>(
      std::floor(kv.cache_bytes / (kv.bytes_per_token * static_cast<double>(block_size))));
  return kv;
}

// --- Simulation -------------------------------------------------------------------------------

namespace {

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

double goodput(const std::vector<RequestRecord>& records, const std::vector<SloLimit>& slo,
               double duration);

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
  r.saturated = r.requests_per_s < 0.95 * r.offered_rate_per_s;
  apply_slo(r, slo);
  r.goodput_per_s = goodput(tally.records, slo, duration);
  return r;
}

// One running or waiting request of a continuous-batching replica.
struct Sequence {
  const TraceRequest* request = nullptr;
  std::int64_t generated = 0;  // Output tokens sampled.
  std::int64_t computed = 0;   // Tokens whose keys and values are in the cache.
  std::int64_t blocks = 0;     // KV blocks held.
  std::int64_t scheduled = 0;  // Tokens in this step.
  bool decoding = false;       // This step verifies its last token (and drafts).
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

  void run(const std::vector<const TraceRequest*>& arrivals) {
    pool_.resize(arrivals.size());
    std::size_t next = 0;
    std::size_t done = 0;
    double now = 0;
    while (done < arrivals.size()) {
      while (next < arrivals.size() && arrivals[next]->arrival_s <= now) {
        pool_[next].request = arrivals[next];
        waiting_.push_back(next++);
      }
      if (running_.empty() && waiting_.empty()) {
        now = arrivals[next]->arrival_s;
        continue;
      }
      const double step = schedule();
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
    std::int64_t decode = 0;
    double context = 0;
    std::int64_t prefill = 0;
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
      if (s.computed == 0 && config_.prefix_hit_rate > 0) {
        const std::int64_t hit =
            static_cast<std::int64_t>(config_.prefix_hit_rate *
                                      static_cast<double>(s.request->prompt_tokens - 1)) /
            config_.block_size * config_.block_size;
        if (!allocate(s, hit)) break;
        s.computed = hit;
      }
      const std::int64_t remaining = s.tokens() - s.computed;
      const bool fits = config_.chunked_prefill || remaining <= budget;
      const std::int64_t tokens = std::min(remaining, budget);
      if (!fits || !allocate(s, tokens)) {
        free_blocks_ += s.blocks;  // Prefix hits are looked up again at the next try.
        s.blocks = 0;
        s.computed = 0;
        break;
      }
      s.scheduled = tokens;
      budget -= tokens;
      running_.push_back(waiting_.front());
      scheduled_.push_back(waiting_.front());
      waiting_.pop_front();
    }
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
    if (scheduled_.empty()) {
      // Nothing fits: the first waiting request needs more than the budget or the whole cache.
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
      rec.arrival_s = s.request->arrival_s;
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
};

void check_requests(const std::vector<TraceRequest>& requests, std::int64_t replicas) {
  if (requests.empty()) throw Error({}, "no requests to serve");
  if (replicas < 1) throw Error({}, "replicas must be at least 1");
}

// Round-robin: request i goes to replica i mod replicas.
std::vector<const TraceRequest*> share(const std::vector<TraceRequest>& requests,
                                       std::int64_t replica, std::int64_t replicas) {
  std::vector<const TraceRequest*> mine;
  mine.reserve(requests.size() / static_cast<std::size_t>(replicas) + 1);
  for (auto i = static_cast<std::size_t>(replica); i < requests.size();
       i += static_cast<std::size_t>(replicas)) {
    mine.push_back(&requests[i]);
  }
  return mine;
}

}  // namespace

ServeResult simulate_continuous(const std::vector<TraceRequest>& requests,
                                const ContinuousBatching& batching, StepCost& cost,
                                std::int64_t replicas, const std::vector<SloLimit>& slo) {
  check_requests(requests, replicas);
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
  Tally tally;
  tally.records.reserve(requests.size());
  for (std::int64_t replica = 0; replica < replicas; ++replica) {
    const std::vector<const TraceRequest*> mine = share(requests, replica, replicas);
    if (mine.empty()) continue;
    ContinuousReplica(batching, cost, tally, batching.seed + static_cast<std::uint64_t>(replica))
        .run(mine);
  }
  ServeResult r = finish(tally, requests, replicas, true, slo);
  r.kv_blocks = batching.kv_blocks;
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

// --- Objectives and searches ------------------------------------------------------------------

std::vector<SloLimit> parse_slo(const std::string& text) {
  static const std::vector<std::string> kMetrics = {"ttft", "tpot", "itl", "e2e", "queue"};
  static const std::vector<std::string> kStatistics = {"mean", "p50", "p90", "p99"};
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
    limit.metric = item.substr(0, underscore);
    limit.statistic = item.substr(underscore + 1, eq - underscore - 1);
    if (std::find(kMetrics.begin(), kMetrics.end(), limit.metric) == kMetrics.end()) {
      throw Error::naming_keys(
          {}, fmt::format("`slo`: unknown metric \"{}\"; expected ttft, tpot, itl, e2e or queue",
                          Error::verbatim(limit.metric)));
    }
    if (std::find(kStatistics.begin(), kStatistics.end(), limit.statistic) == kStatistics.end()) {
      throw Error::naming_keys(
          {}, fmt::format("`slo`: unknown statistic \"{}\"; expected mean, p50, p90 or p99",
                          Error::verbatim(limit.statistic)));
    }
    try {
      limit.limit_s = parse_duration(item.substr(eq + 1));
    } catch (const Error& e) {
      throw Error::naming_keys(
          {}, fmt::format("`slo` {}: {}", Error::verbatim(limit.metric + "_" + limit.statistic),
                          Error::verbatim(e.message())));
    }
    slo.push_back(limit);
  }
  return slo;
}

namespace {

const Latency& metric_of(const ServeResult& r, const std::string& metric) {
  if (metric == "ttft") return r.ttft;
  if (metric == "tpot") return r.tpot;
  if (metric == "itl") return r.itl;
  if (metric == "e2e") return r.e2e;
  return r.queue;
}

double statistic_of(const Latency& l, const std::string& statistic) {
  if (statistic == "mean") return l.mean;
  if (statistic == "p50") return l.p50;
  if (statistic == "p90") return l.p90;
  return l.p99;
}

}  // namespace

void apply_slo(ServeResult& result, const std::vector<SloLimit>& slo) {
  result.slo = slo;
  result.slo_met = true;
  for (const SloLimit& limit : slo) {
    if (statistic_of(metric_of(result, limit.metric), limit.statistic) > limit.limit_s) {
      result.slo_met = false;
    }
  }
}

namespace {

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

}  // namespace

ServeResult serve(const ServeSetup& setup, StepCost& cost) {
  const std::vector<TraceRequest> requests = generate_requests(setup.load);
  ContinuousBatching continuous = setup.continuous;
  continuous.seed = setup.load.seed;
  ServeResult r = setup.llm
                      ? simulate_continuous(requests, continuous, cost, setup.replicas, setup.slo)
                      : simulate_dynamic(requests, setup.dynamic, cost, setup.replicas, setup.slo);
  r.usd_per_hour = setup.usd_per_device_hour * static_cast<double>(setup.devices_per_replica) *
                   static_cast<double>(setup.replicas);
  const double tokens_per_hour = r.output_tokens_per_s * 3600;
  r.usd_per_million_output_tokens =
      tokens_per_hour > 0 && r.usd_per_hour > 0 ? r.usd_per_hour / tokens_per_hour * 1e6 : 0;
  return r;
}

RateSearch find_max_rate(ServeSetup setup, StepCost& cost) {
  if (setup.slo.empty()) throw Error::naming_keys({}, "`find` max-rate needs `slo`");
  if (!setup.load.trace.empty())
    throw Error::naming_keys({}, "`find` max-rate draws requests: not with `trace`");
  RateSearch search;
  const auto run = [&](double rate) {
    setup.load.rate_per_s = rate;
    ++search.runs;
    return serve(setup, cost);
  };
  // Start from the saturation rate (every request at once: what completes per second); a burst
  // can serve less than a steady stream (it preempts more), so double while the SLO holds.
  const ServeResult burst = run(1e9);
  double lo = 0;
  double hi = burst.requests_per_s;
  ServeResult at_lo;
  ServeResult at_hi = run(hi);
  for (int i = 0; at_hi.slo_met && i < 20; ++i) {
    lo = hi;
    at_lo = std::move(at_hi);
    hi *= 2;
    at_hi = run(hi);
  }
  while (hi - lo > 0.01 * hi) {
    const double mid = (lo + hi) / 2;
    ServeResult r = run(mid);
    if (r.slo_met) {
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

ReplicaSearch find_replicas(ServeSetup setup, StepCost& cost, std::int64_t max_replicas) {
  if (setup.slo.empty()) throw Error::naming_keys({}, "`find` replicas needs `slo`");
  ReplicaSearch search;
  const auto run = [&](std::int64_t replicas) {
    setup.replicas = replicas;
    ++search.runs;
    return serve(setup, cost);
  };
  std::int64_t hi = 1;
  ServeResult at_hi = run(hi);
  while (!at_hi.slo_met) {
    if (hi >= max_replicas) return search;
    hi = std::min(hi * 2, max_replicas);
    at_hi = run(hi);
  }
  std::int64_t lo = hi / 2;  // Fails (or 0).
  while (hi - lo > 1) {
    const std::int64_t mid = (lo + hi) / 2;
    ServeResult r = run(mid);
    if (r.slo_met) {
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

}  // namespace capcalc
