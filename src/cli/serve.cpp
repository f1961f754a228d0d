// `capcalc serve`: a model behind a request stream, simulated (serve.hpp).
#include "capcalc/serve.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/units.hpp"

#include "commands.hpp"
#include "formats.hpp"
#include "gates.hpp"
#include "output_file.hpp"
#include "serve_run.hpp"
#include "usage.hpp"

namespace capcalc::cli {
namespace {

// Rates the simulator's clock can carry: arrival times stay finite and distinct.
double checked_rate(const std::string& flag, double rate) {
  if (!(rate >= 1e-6 && rate <= 1e9)) {
    throw Error({}, fmt::format("{} must be between 1e-6/s and 1e9/s (got {:g}/s)", flag, rate));
  }
  return rate;
}

template <typename F>
auto with_flag(const std::string& flag, F parse) {
  try {
    return parse();
  } catch (const Error& e) {
    throw Error({}, flag + ": " + e.message());
  }
}

// --disaggregate P:D: prefill and decode replicas, each at least 1.
std::pair<std::int64_t, std::int64_t> pool_sizes(const std::string& text) {
  const std::size_t colon = text.find(':');
  const auto whole = [&](const std::string& part) -> std::int64_t {
    if (part.empty() || part.size() > 7 ||
        part.find_first_not_of("0123456789") != std::string::npos) {
      return 0;
    }
    return std::stoll(part);
  };
  const std::int64_t prefill = colon == std::string::npos ? 0 : whole(text.substr(0, colon));
  const std::int64_t decode = colon == std::string::npos ? 0 : whole(text.substr(colon + 1));
  if (prefill < 1 || decode < 1) {
    throw Error({}, fmt::format("--disaggregate: expected PREFILL:DECODE replicas, each a whole "
                                "number from 1 to 9999999 (e.g. 1:3), got \"{}\"",
                                text));
  }
  return {prefill, decode};
}

// "rate=1..64/s" or "rate=1/s..64/s": doubling from the first while at most the last (and the
// last), or eight even steps when that gives fewer than five.
std::vector<double> sweep_rates(const std::string& text) {
  const std::string prefix = "rate=";
  const std::size_t dots = text.find("..");
  if (text.rfind(prefix, 0) != 0 || dots == std::string::npos) {
    throw Error({}, fmt::format("--sweep: expected rate=LOW..HIGH/s (e.g. rate=1..64/s), got "
                                "\"{}\"",
                                text));
  }
  std::string low = text.substr(prefix.size(), dots - prefix.size());
  const std::string high = text.substr(dots + 2);
  const std::size_t slash = high.find('/');
  if (slash == std::string::npos) {
    const std::string range = text.substr(prefix.size());
    throw Error({}, fmt::format("--sweep: {0} has no unit: write {0}/s or {0}/min", range));
  }
  if (low.find('/') == std::string::npos) low += high.substr(slash);
  const double a = with_flag("--sweep", [&] { return parse_rate(low); });
  const double b = with_flag("--sweep", [&] { return parse_rate(high); });
  checked_rate("--sweep", a);
  checked_rate("--sweep", b);
  if (!(b > a)) throw Error({}, "--sweep: expected LOW < HIGH");
  std::vector<double> rates;
  for (double r = a; r <= b * (1 + 1e-9) && rates.size() < 64; r *= 2)
    rates.push_back(r);
  if (rates.back() < b * (1 - 1e-9)) rates.push_back(b);
  if (rates.size() < 5) {
    rates.clear();
    for (int i = 0; i < 8; ++i)
      rates.push_back(a + (b - a) * i / 7);
  }
  return rates;
}

std::vector<std::int64_t> batch_sizes(const std::string& text) {
  std::vector<std::int64_t> sizes;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    start = end + 1;
    char* stop = nullptr;
    const long long value = std::strtoll(item.c_str(), &stop, 10);
    if (item.empty() || *stop != '\0' || value < 1 || value > 1'000'000 ||
        item.find_first_not_of("0123456789") != std::string::npos) {
      throw Error({},
                  fmt::format("--preferred-batch: expected sizes like 4,8,16, got \"{}\"", text));
    }
    sizes.push_back(value);
  }
  return sizes;
}

std::string describe(const LengthDistribution& d) {
  switch (d.kind) {
    case LengthDistribution::Kind::kFixed:
      return format_figure(d.a);
    case LengthDistribution::Kind::kUniform:
      return fmt::format("uniform {}..{}", format_figure(d.a), format_figure(d.b));
    case LengthDistribution::Kind::kNormal:
      return fmt::format("normal {}±{}", format_figure(d.a), format_figure(d.b));
    case LengthDistribution::Kind::kLogNormal:
      return fmt::format("log-normal median {} σ {:g}", format_figure(d.a), d.b);
  }
  return "";
}

// Flags that belong to the other kind of model, or to no run at all, are errors.
void check_flag_use(const ServeOptions& o, bool llm) {
  if (o.model.batch) throw Error({}, "--batch: serve forms its own batches (see --max-batch)");
  const bool batcher = o.max_batch || !o.preferred_batch.empty() || !o.max_queue_delay.empty();
  if (!llm && !o.max_queue_delay.empty() && o.max_batch.value_or(1) < 2) {
    throw Error({}, "--max-queue-delay holds requests to batch them: add --max-batch 2 or more");
  }
  if (llm && batcher) {
    throw Error({},
                "--max-batch, --preferred-batch and --max-queue-delay set Triton's dynamic "
                "batcher: an LLM (--prompt-tokens) is served by continuous batching");
  }
  const bool continuous = o.max_num_batched_tokens || o.max_num_seqs || o.block_size ||
                          o.memory_utilization || o.no_chunked_prefill || !o.kv_precision.empty() ||
                          o.prefix_hit_rate || o.speculative_tokens || o.acceptance_rate ||
                          o.draft_cost || !o.draft.empty();
  if (!llm && continuous) {
    throw Error({},
                "continuous-batching flags (--max-num-batched-tokens, --max-num-seqs, "
                "--block-size, --gpu-memory-utilization, --no-chunked-prefill, "
                "--kv-precision, --prefix-hit-rate, --speculative-tokens, "
                "--acceptance-rate, --draft-cost, --draft) need an LLM: add --prompt-tokens");
  }
  if (o.draft_cost && !o.draft.empty()) {
    throw Error({}, "--draft times the draft model itself: not with --draft-cost");
  }
  if ((o.acceptance_rate || o.draft_cost || !o.draft.empty()) && !o.speculative_tokens) {
    throw Error({},
                "--acceptance-rate, --draft-cost and --draft describe speculative decoding: add "
                "--speculative-tokens");
  }
  if (o.speculative_tokens && !o.acceptance_rate) {
    throw Error({},
                "--speculative-tokens needs --acceptance-rate (the chance each draft token "
                "is accepted)");
  }
  if (!o.output_tokens.empty() && o.prompt_tokens.empty() && o.trace.empty()) {
    throw Error({}, "--output-tokens needs --prompt-tokens (the prompt's length in tokens)");
  }
  if (!o.trace.empty() && (!o.rate.empty() || !o.prompt_tokens.empty())) {
    throw Error({}, "--trace gives the arrivals and lengths: not with --rate or --prompt-tokens");
  }
  if (!o.trace.empty() && !o.sweep.empty())
    throw Error({}, "--sweep draws requests: not with --trace");
  if (o.find.empty() && o.sweep.empty() && o.rate.empty() && o.trace.empty()) {
    throw Error({}, "serve needs --rate (e.g. --rate 20/s), --trace, --sweep or --find max-rate");
  }
  if ((o.find == "max-rate" || o.find == "split") && !o.rate.empty()) {
    throw Error({}, "--find " + o.find + " searches the rate: drop --rate");
  }
  if (!o.disaggregate.empty()) {
    if (!llm) throw Error({}, "--disaggregate splits LLM serving: add --prompt-tokens");
    if (o.replicas != 1) {
      throw Error({}, "--disaggregate PREFILL:DECODE sets the replicas: drop --replicas");
    }
    if (!o.find.empty() && o.find != "max-rate") {
      throw Error({}, "--disaggregate fixes the pools: not with --find " + o.find);
    }
  }
  if (o.find == "split") {
    if (!llm) throw Error({}, "--find split splits LLM serving: add --prompt-tokens");
    if (o.replicas < 2) {
      throw Error({},
                  "--find split divides --replicas N (2 or more) into prefill and decode "
                  "pools");
    }
  }
  if (o.find == "replicas" && o.rate.empty()) {
    throw Error({}, "--find replicas needs --rate (the load the replicas must carry)");
  }
  if (!o.moe_dispatcher.empty() && o.expert_parallel <= o.tensor_parallel) {
    throw Error({},
                "--moe-dispatcher sets how data-parallel attention ranks exchange tokens: "
                "add --expert-parallel above --tensor-parallel");
  }
  if (o.expert_parallel > o.tensor_parallel) {  // Data-parallel attention ranks.
    if (!llm) {
      throw Error({},
                  "--expert-parallel above --tensor-parallel runs data-parallel attention "
                  "ranks of an LLM: add --prompt-tokens");
    }
    if (!o.disaggregate.empty() || o.find == "split") {
      throw Error({},
                  "disaggregated serving with data-parallel attention (--expert-parallel "
                  "above --tensor-parallel) is not modelled");
    }
  }
  if (!o.find.empty() && !o.sweep.empty()) throw Error({}, "--find and --sweep: one at a time");
  if (!o.sweep.empty() && !o.rate.empty()) throw Error({}, "--sweep sets the rates: drop --rate");
  if (!o.find.empty() && o.slo.empty()) throw Error({}, "--find " + o.find + " needs --slo");
  const bool svg = o.output.size() > 4 && o.output.substr(o.output.size() - 4) == ".svg";
  if (svg && o.sweep.empty()) throw Error({o.output}, "an SVG curve needs --sweep");
}

// The model at a batch, a sequence length and a KV cache length: what step costs are priced on.
BatchGraphBuilder graph_builder(const ModelArgs& model) {
  return [model](std::int64_t batch, std::int64_t seq, std::int64_t cached) {
    ModelArgs shaped = model;
    shaped.batch = batch;
    if (seq > 0) shaped.sets.push_back("seq=" + std::to_string(seq));
    return load_model_from(shaped, cached);
  };
}

// Arrivals, lengths, SLO and price, as the flags give them.
void read_load(const ServeOptions& o, const Device& device, ServeSetup& setup) {
  const bool llm = setup.llm;
  setup.replicas = o.replicas;
  setup.devices_per_replica = o.tensor_parallel;
  setup.load.arrival_cv = o.arrival_cv;
  setup.load.requests = o.requests;
  setup.load.seed = static_cast<std::uint64_t>(o.seed);
  if (!o.rate.empty()) {
    setup.load.rate_per_s =
        checked_rate("--rate", with_flag("--rate", [&] { return parse_rate(o.rate); }));
  }
  if (llm && o.trace.empty()) {
    setup.load.prompt = parse_length_distribution(o.prompt_tokens, "--prompt-tokens");
    setup.load.output = parse_length_distribution(o.output_tokens.empty() ? "128" : o.output_tokens,
                                                  "--output-tokens");
  }
  if (!o.trace.empty()) setup.load.trace = load_trace(o.trace);
  if (!o.slo.empty()) setup.slo = parse_slo(o.slo);
  if (o.price_per_hour) {
    setup.usd_per_device_hour = *o.price_per_hour;
  } else if (device.price) {
    setup.usd_per_device_hour = device.price->usd_per_hour;
  }
}

// The runtime's continuous-batching defaults for this device (the memory tier that applies);
// the built-in ones (vLLM's for small devices) where the runtime has none.
ServingDefaults continuous_defaults(const Workload& workload, const Device& device, bool warn,
                                    ContinuousBatching& c) {
  ServingDefaults defaults;
  if (workload.runtime && workload.runtime->serving) {
    defaults = serving_defaults_for(*workload.runtime->serving, device);
  } else if (warn) {
    fmt::print(stderr,
               "warning: {} has no serving defaults in the runtime table: vLLM's for "
               "small devices are used (2048 tokens, 256 sequences, 16-token blocks)\n",
               workload.runtime ? workload.runtime->name : "this runtime");
  }
  c.max_num_batched_tokens = defaults.max_num_batched_tokens;
  c.max_num_seqs = defaults.max_num_seqs;
  return defaults;
}

// Continuous batching (LLM serving) as the runtime and the flags set it; the KV cache holds
// what memory leaves, and a draft model's too. Returns the line that describes it.
std::string set_continuous(const ServeOptions& o, const Device& device,
                           const PerformanceParams& params, const Workload& workload,
                           const Workload& served, const BatchGraphBuilder& build, bool warn,
                           ContinuousBatching& c, BatchGraphBuilder& draft_build,
                           double& kv_bytes_per_token) {
  const ServingDefaults defaults = continuous_defaults(workload, device, warn, c);
  std::string draft_name;
  c.max_num_batched_tokens = o.max_num_batched_tokens.value_or(c.max_num_batched_tokens);
  c.max_num_seqs = o.max_num_seqs.value_or(c.max_num_seqs);
  c.block_size = o.block_size.value_or(defaults.block_size);
  c.chunked_prefill = defaults.chunked_prefill && !o.no_chunked_prefill;
  c.reserve_full_request = defaults.reserve_full_request;
  c.scheduler = defaults.scheduler;
  c.prefix_hit_rate = o.prefix_hit_rate.value_or(0);
  c.speculative_tokens = o.speculative_tokens.value_or(0);
  c.acceptance_rate = o.acceptance_rate.value_or(0);
  c.draft_cost = o.draft_cost.value_or(0);
  const double utilization = o.memory_utilization.value_or(defaults.memory_utilization);
  KvCapacity kv = kv_capacity(build, device, params, served, c.block_size, c.max_num_batched_tokens,
                              utilization, defaults.fraction_of);
  if (!o.draft.empty()) {
    ModelArgs draft_model;
    draft_model.path = o.draft;
    const Graph draft_graph = load_model_from(draft_model);
    if (draft_graph.dims.count("seq") == 0) {
      throw Error({o.draft}, "--draft needs a language model (a \"seq\" dimension)");
    }
    draft_build = graph_builder(draft_model);
    draft_name = draft_graph.name;
    kv = with_draft(kv,
                    kv_capacity(draft_build, device, params, workload, c.block_size,
                                c.max_num_batched_tokens, utilization, defaults.fraction_of),
                    c.block_size);
  }
  c.kv_blocks = kv.blocks;
  kv_bytes_per_token = kv.bytes_per_token;
  std::string extras;
  if (c.attention_ranks > 1) {
    extras += fmt::format(", each of {} ranks; requests dealt {}", c.attention_ranks,
                          c.scheduler == Scheduler::kSglang
                              ? "round robin"
                              : "to the least loaded (4 x waiting + running)");
  }
  if (!c.chunked_prefill) extras += ", prefill not chunked";
  if (c.reserve_full_request) extras += ", blocks reserved to the end (no preemption)";
  if (c.scheduler == Scheduler::kSglang) {
    extras += ", prefill and decode steps apart, output reserved at a decaying ratio (SGLang)";
  }
  if (c.prefix_hit_rate > 0) extras += fmt::format(", prefix hits {:g}", c.prefix_hit_rate);
  if (c.speculative_tokens > 0) {
    extras += fmt::format(
        ", {} draft tokens{} accepted at {:g} ({:.3g} tokens per step)", c.speculative_tokens,
        draft_name.empty() ? "" : " from " + draft_name, c.acceptance_rate,
        (1 - std::pow(c.acceptance_rate, c.speculative_tokens + 1)) / (1 - c.acceptance_rate));
  }
  return fmt::format(
      "{}: budget {} tokens, {} sequences, {} blocks of {} token{} ({} of KV cache){}",
      workload.runtime ? workload.runtime->name : "continuous batching",
      format_grouped(c.max_num_batched_tokens), format_grouped(c.max_num_seqs),
      format_grouped(c.kv_blocks), format_grouped(c.block_size), c.block_size == 1 ? "" : "s",
      format_bytes(kv.cache_bytes), extras);
}

// Dynamic batching (a non-LLM model) as the flags set it. Returns the line that describes it.
std::string set_dynamic(const ServeOptions& o, DynamicBatching& d) {
  d.max_batch_size = o.max_batch.value_or(1);
  if (!o.preferred_batch.empty()) d.preferred_batch_sizes = batch_sizes(o.preferred_batch);
  if (!o.max_queue_delay.empty()) {
    d.max_queue_delay_s =
        with_flag("--max-queue-delay", [&] { return parse_duration(o.max_queue_delay); });
  }
  for (std::int64_t size : d.preferred_batch_sizes) {
    if (size > d.max_batch_size) {
      throw Error(
          {}, fmt::format("--preferred-batch {} is above --max-batch {}", size, d.max_batch_size));
    }
  }
  return d.max_batch_size == 1
             ? std::string("one request at a time (no dynamic batching)")
             : fmt::format("dynamic batching up to {}, preferred {}, delay {}", d.max_batch_size,
                           d.preferred_batch_sizes.empty()
                               ? std::string("-")
                               : fmt::format("{}", fmt::join(d.preferred_batch_sizes, ",")),
                           format_duration(d.max_queue_delay_s));
}

// --expert-parallel E: the routed experts of a replica spread whole over its E devices. With E =
// T (--tensor-parallel) it is vLLM's --enable-expert-parallel without data parallelism (EP = TP x
// DP, DP 1): the tensor-parallel devices see every token (the attention's all-reduce leaves them
// on each), each runs its own experts over those routed to them, and the moe layer's outputs are
// all-reduced over the replica (FusedMoE reduces its results over the tensor-parallel group);
// SGLang's --ep-size and TensorRT-LLM's moe_expert_parallel_size equal to the tensor parallelism
// do the same. With E = D x T it adds data-parallel attention: D ranks of T devices, each with its
// own requests and KV cache (vLLM's --data-parallel-size D --enable-expert-parallel, SGLang's
// --dp D --enable-dp-attention), the moe layers gathering the tokens of all D ranks. The
// all-gather dispatcher with whole experts is that exchange (predict_comm.cpp).
void set_expert_parallel(const ServeOptions& o, const Graph& graph, Workload& served) {
  if (o.expert_parallel % o.tensor_parallel != 0) {
    throw Error({}, fmt::format("--expert-parallel {} spreads a replica's experts over its "
                                "devices: it must be a multiple of --tensor-parallel ({}), the "
                                "devices of one data-parallel attention rank",
                                o.expert_parallel, o.tensor_parallel));
  }
  if (auto problem = expert_parallel_problem(graph, o.expert_parallel, served.moe_imbalance)) {
    throw Error({o.model.path}, *problem);
  }
  served.devices = o.expert_parallel;
  served.expert_parallel = o.expert_parallel;
  served.expert_tensor_parallel = 1;
  served.moe_dispatcher = o.moe_dispatcher.empty() ? MoeDispatcher::kAllGather
                                                   : *parse_moe_dispatcher(o.moe_dispatcher);
}

}  // namespace

PreparedRun prepare_run(const ServeOptions& o, const HardwareTable& table, bool warn) {
  const bool llm = !o.prompt_tokens.empty() || !o.trace.empty();
  check_flag_use(o, llm);
  const Device& device = table.get(o.device);
  Workload workload;
  workload.precision = !o.precision.empty() ? precision_from(o.precision)
                       : llm                ? llm_serving_precision(device)
                                            : Precision::kFp32;
  if (!o.weight_precision.empty()) workload.weight_precision = precision_from(o.weight_precision);
  if (!o.expert_weight_precision.empty())
    workload.expert_weight_precision = precision_from(o.expert_weight_precision);
  if (!o.kv_precision.empty()) workload.kv_precision = precision_from(o.kv_precision);
  workload.tensor_parallel = o.tensor_parallel;
  workload.devices = o.tensor_parallel;
  const std::string runtime_name = o.runtime.empty() && llm ? "vllm" : o.runtime;
  workload.runtime = runtime_from(runtime_name, o.runtime_files, device);
  const PerformanceParams params = table.performance_for(device);

  const ModelArgs model = o.model;
  const Graph as_given = load_model_from(model);
  if (llm && as_given.dims.count("seq") == 0) {
    throw Error({model.path},
                "--prompt-tokens needs a model with a \"seq\" dimension (a language "
                "model)");
  }
  const BatchGraphBuilder build = graph_builder(model);
  if (!llm && as_given.dims.count("batch") == 0) {
    throw Error({model.path}, "the model has no \"batch\" dimension to batch requests in");
  }

  // The MoE imbalance and expert parallelism are the served model's (estimate() scales its moe
  // layers), not the draft's.
  Workload served = workload;
  if (o.moe_imbalance) {
    if (auto problem = expert_parallel_problem(as_given, 1, *o.moe_imbalance)) {
      throw Error({o.model.path}, *problem);
    }
    served.moe_imbalance = *o.moe_imbalance;
  }
  if (o.expert_parallel > 1) set_expert_parallel(o, as_given, served);

  ServeSetup setup;
  setup.llm = llm;
  read_load(o, device, setup);
  setup.devices_per_replica = served.devices;
  setup.continuous.attention_ranks = served.devices / o.tensor_parallel;
  BatchGraphBuilder draft_build;
  double kv_bytes_per_token = 0;
  std::string runtime_text = llm ? set_continuous(o, device, params, workload, served, build, warn,
                                                  setup.continuous, draft_build, kv_bytes_per_token)
                                 : set_dynamic(o, setup.dynamic);
  if (!o.disaggregate.empty() || o.find == "split") {
    // --find split tries every split of --replicas; the link is the one they all share.
    const auto [prefill, decode] = o.find == "split"
                                       ? std::pair<std::int64_t, std::int64_t>{1, o.replicas - 1}
                                       : pool_sizes(o.disaggregate);
    const Profile profile = workload.runtime ? workload.runtime->profile : Profile::kEager;
    setup.disaggregation = disaggregated_pools(device, params, profile, prefill, decode,
                                               o.tensor_parallel, kv_bytes_per_token);
    setup.replicas = prefill + decode;
    runtime_text += fmt::format(
        "\n  KV cache sent from prefill to decode replicas over {}, {} a "
        "token per device",
        setup.disaggregation.link_name, format_bytes(kv_bytes_per_token));
  }

  PreparedRun run;
  run.cost = std::make_unique<ModelStepCost>(build, device, params, served);
  if (draft_build) {
    run.draft = std::make_unique<ModelStepCost>(draft_build, device, params, workload);
    setup.continuous.draft_model = run.draft.get();
  }
  run.setup = std::move(setup);
  run.as_given = as_given;
  run.device = device;
  run.workload = workload;
  run.served = served;
  run.runtime_text = runtime_text;
  return run;
}

namespace {

// ", lengthened to N requests: …" where a search ran longer runs than --requests.
std::string lengthened(const ServeOptions& o, std::int64_t requests) {
  if (!o.trace.empty() || requests <= o.requests) return "";
  return fmt::format(", lengthened to {} requests: {} are too short for a steady state",
                     format_grouped(requests), format_grouped(o.requests));
}

}  // namespace

void run_serve(const ServeOptions& o) {
  check_writable(o.output);  // Before the simulation, which can take seconds.
  if (o.model.path.empty()) throw Error({}, "serve needs a MODEL (or --validate FILE)");
  if (o.device.empty()) throw Error({}, "serve needs --gpu DEVICE (or --validate FILE)");
  const HardwareTable table = load_table(o.hardware);
  PreparedRun run = prepare_run(o, table, true);
  ServeSetup& setup = run.setup;
  ModelStepCost& cost = *run.cost;
  const Graph& as_given = run.as_given;
  const Device& device = run.device;
  const Workload& workload = run.workload;
  const std::string& runtime_text = run.runtime_text;
  const bool llm = setup.llm;
  std::string parallel;
  if (o.expert_parallel > o.tensor_parallel) {
    parallel = fmt::format(
        " x{} (data-parallel attention: {} ranks{}; experts whole over the {} "
        "devices: expert-parallel, {} dispatch)",
        o.expert_parallel, o.expert_parallel / o.tensor_parallel,
        o.tensor_parallel > 1 ? fmt::format(" of {} tensor-parallel", o.tensor_parallel)
                              : std::string(),
        o.expert_parallel, moe_dispatcher_title(run.served.moe_dispatcher));
  } else if (o.tensor_parallel > 1) {
    parallel =
        fmt::format(" x{} (tensor-parallel{})", o.tensor_parallel,
                    o.expert_parallel > 1 ? ", experts whole over them: expert-parallel" : "");
  }
  const auto title = [&](const ServeResult& r) {
    std::string load;
    if (!o.trace.empty()) {
      load = fmt::format("trace {} ({} request{})", o.trace,
                         format_grouped(static_cast<std::int64_t>(setup.load.trace.size())),
                         setup.load.trace.size() == 1 ? "" : "s");
    } else {
      load = fmt::format(
          "{}/s {}, {} request{}, seed {}", format_figure(setup.load.rate_per_s),
          o.arrival_cv == 1 ? std::string("Poisson") : fmt::format("gamma CV {:g}", o.arrival_cv),
          format_grouped(r.requests), r.requests == 1 ? "" : "s", o.seed);
      if (llm) {
        load += fmt::format("; {} prompt + {} output tokens", describe(setup.load.prompt),
                            describe(setup.load.output));
      }
    }
    return fmt::format("{} on {}{}, {} replica{}, {}\n  {}\n  {}", as_given.name, device.name,
                       parallel, r.replicas, r.replicas == 1 ? "" : "s",
                       precision_name(workload.precision), runtime_text, load);
  };

  std::string text;
  if (!o.sweep.empty()) {
    std::vector<ServeResult> runs;
    for (double rate : sweep_rates(o.sweep)) {
      setup.load.rate_per_s = rate;
      runs.push_back(serve(setup, cost));
    }
    const std::string name = title(runs.front());
    const bool svg = o.output.size() > 4 && o.output.substr(o.output.size() - 4) == ".svg";
    if (svg) {
      write_output(o.output, render_sweep_svg(runs, as_given.name + " on " + device.name));
    }
    text = serve_sweep_formats().render(o.format, {runs, name});
    write_output(svg ? "" : o.output, text);
    return;
  }
  ServeResult result;
  std::string found;
  if (o.find == "max-rate") {
    const RateSearch search = find_max_rate(setup, cost);
    result = search.at_rate;
    setup.load.rate_per_s = result.offered_rate_per_s;
    found = search.rate_per_s > 0
                ? fmt::format(
                      "  max rate     {} requests/s meets the SLO, queue steady ({} runs{})\n",
                      format_figure(search.rate_per_s), search.runs, lengthened(o, search.requests))
                : fmt::format(
                      "  max rate     none: the SLO is missed even at 1/1000 of the "
                      "saturation rate ({} runs)\n",
                      search.runs);
  } else if (o.find == "split") {
    const SplitSearch search = find_split(setup, cost, o.replicas);
    setup.load.rate_per_s = search.splits[search.best].search.at_rate.offered_rate_per_s;
    const std::string name = title(search.splits[search.best].search.at_rate);
    text = serve_split_formats().render(o.format, {search, name});
    write_output(o.output, text);
    return;
  } else if (o.find == "replicas") {
    const ReplicaSearch search = find_replicas(setup, cost);
    if (search.replicas == 0) {
      throw Error({},
                  "--find replicas: the SLO is missed even with 4,096 replicas: a request "
                  "alone misses it");
    }
    result = search.at_replicas;
    found = fmt::format("  replicas     {} meet{} the SLO at {}/s, queue steady ({} runs{})\n",
                        format_grouped(search.replicas), search.replicas == 1 ? "s" : "",
                        format_figure(setup.load.rate_per_s), search.runs,
                        lengthened(o, search.requests));
  } else {
    result = serve(setup, cost);
  }
  const std::string name = title(result);
  write_output(o.output, serve_formats().render(o.format, {result, name, found}));
}

}  // namespace capcalc::cli
