// `capcalc serve`'s command line: its options, and which run they ask for (serve.cpp runs it).
#include <algorithm>
#include <array>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "capcalc/error.hpp"

#include "commands.hpp"
#include "formats.hpp"
#include "gates.hpp"
#include "serve_run.hpp"
#include "usage.hpp"
#include "workload_args.hpp"

namespace capcalc::cli {
namespace {

// The load: arrivals, request lengths, how many and from which seed.
void add_load_options(CLI::App* sub, ServeOptions* o) {
  sub->add_option("--rate", o->rate, "Mean arrival rate over all replicas, e.g. 20/s");
  number_in(sub->add_option("--arrival-cv", o->arrival_cv,
                            "Coefficient of variation of inter-arrival times: 1 Poisson, above 1 "
                            "bursty (gamma)"),
            0.01, 100)
      ->capture_default_str();
  sub->add_option("--trace", o->trace,
                  "JSON-lines requests: arrival_s, prompt_tokens, output_tokens (docs/serving.md)");
  sub->add_option("--prompt-tokens", o->prompt_tokens,
                  "LLM: prompt tokens: N, uniform:LOW..HIGH, normal:MEAN,SD or "
                  "lognormal:MEDIAN,SIGMA");
  sub->add_option("--output-tokens", o->output_tokens,
                  "LLM: generated tokens, as --prompt-tokens (default 128)");
  whole_number(sub->add_option("--requests", o->requests, "Requests per run (at most 1,000,000)"),
               1, 1'000'000)
      ->capture_default_str();
  whole_number(sub->add_option("--seed", o->seed, "Random seed: same seed, same requests"), 0)
      ->capture_default_str();
}

// LLM serving: the continuous batcher, its KV cache, speculative decoding and MoE balance.
void add_llm_options(CLI::App* sub, ServeOptions* o) {
  whole_number(sub->add_option("--max-num-batched-tokens", o->max_num_batched_tokens,
                               "LLM: token budget per step (default: the runtime's)"),
               1, 10'000'000);
  whole_number(sub->add_option("--max-num-seqs", o->max_num_seqs,
                               "LLM: sequences per step (default: the runtime's)"),
               1, 10'000'000);
  whole_number(sub->add_option("--block-size", o->block_size,
                               "LLM: tokens per KV-cache block (default: the runtime's)"),
               1, 1'000'000);
  number_in(sub->add_option("--gpu-memory-utilization", o->memory_utilization,
                            "LLM: fraction of device memory for weights, activations and KV "
                            "cache (default: the runtime's)"),
            0.01, 1);
  sub->add_flag("--no-chunked-prefill", o->no_chunked_prefill,
                "LLM: a prompt runs whole in one step or waits");
  number_in(sub->add_option("--prefix-hit-rate", o->prefix_hit_rate,
                            "LLM: fraction of each prompt found in the prefix cache (not "
                            "prefilled)"),
            0, 0.999);
  whole_number(sub->add_option("--speculative-tokens", o->speculative_tokens,
                               "LLM: draft tokens per decode step (speculative decoding)"),
               1, 64);
  number_in(sub->add_option("--acceptance-rate", o->acceptance_rate,
                            "LLM: probability each draft token is accepted"),
            0, 0.999);
  number_in(sub->add_option("--draft-cost", o->draft_cost,
                            "LLM: drafting per draft token as a fraction of the decode step "
                            "(default 0: n-gram; a draft model or EAGLE head a few percent)"),
            0, 10);
  sub->add_option("--draft", o->draft,
                  "LLM: a draft model (file or zoo name) proposing the --speculative-tokens; "
                  "its steps are timed by the performance model on the same devices");
  number_in(sub->add_option("--moe-imbalance", o->moe_imbalance,
                            "MoE: the busiest expert's load over the mean; the moe layers take "
                            "this many times as long (default 1: balanced, an assumption)"),
            1, 1000);
}

// Other models' dynamic batching, the goal (SLO, search, sweep), price and output.
void add_batching_and_goal_options(CLI::App* sub, ServeOptions* o) {
  whole_number(sub->add_option("--max-batch", o->max_batch,
                               "Other models: dynamic batching up to this many requests "
                               "(default 1: none)"),
               1, 1'000'000);
  sub->add_option("--preferred-batch", o->preferred_batch,
                  "Other models: preferred batch sizes, e.g. 4,8,16,32");
  sub->add_option("--max-queue-delay", o->max_queue_delay,
                  "Other models: how long the batcher may hold a request, e.g. 2ms");
  sub->add_option("--slo", o->slo,
                  "Service-level objective, e.g. ttft_p99=500ms,tpot_p99=50ms (metrics ttft, "
                  "tpot, itl, e2e, queue; mean, p50, p90, p99)");
  one_of(sub->add_option("--find", o->find,
                         "max-rate: the highest rate meeting --slo; replicas: the fewest "
                         "replicas meeting it at --rate; split: the prefill:decode split of "
                         "--replicas with the highest such rate"),
         {"max-rate", "replicas", "split"});
  sub->add_option("--sweep", o->sweep, "Latency against rate, e.g. rate=1..64/s");
  number_above(sub->add_option("--price-per-hour", o->price_per_hour,
                               "USD per device-hour (default: the table's indicative price)"));
  add_format_option(*sub, o->format, serve_formats());
  sub->add_option("-o,--output", o->output,
                  "Write the output to this file; with --sweep, a .svg name draws the curve");
}

// --validate and its gates.
void add_validate_options(CLI::App* sub, ServeOptions* o) {
  sub->add_option("--validate", o->validate,
                  "Run the cases of a serving validation file (data/validation/serving.json) "
                  "and print each one's error");
  add_gate_options(*sub, o->gates, "--validate: exit 1");
}

// --mix and --validate take each run from their file: a flag that shapes a run of MODEL on
// --gpu would be ignored, so it is an error ("--validate runs the file's cases: no --rate").
// MODEL and --gpu have their own message (run_serve_mix, run_serve_validation).
void reject_run_flags(const CLI::App& sub, std::string_view mode,
                      std::initializer_list<std::string_view> also) {
  static constexpr std::array<std::string_view, 9> kFileFlags = {
      "--help",   "--mix",    "--validate", "--hardware", "--hardware-file",
      "--format", "--output", "model",      "--gpu"};
  for (const CLI::Option* option : sub.get_options()) {
    const std::string name = option->get_name();
    if (option->count() == 0 ||
        std::find(kFileFlags.begin(), kFileFlags.end(), name) != kFileFlags.end() ||
        std::find(also.begin(), also.end(), name) != also.end()) {
      continue;
    }
    throw Error({}, fmt::format("{}: no {}", mode, name));
  }
}

// A trace fixes how many requests arrive and when.
void reject_trace_flags(const CLI::App& sub, const ServeOptions& o) {
  if (o.trace.empty()) return;
  for (const char* flag : {"--requests", "--arrival-cv"}) {
    if (sub.count(flag) > 0) {
      throw Error({}, fmt::format("--trace gives the arrivals and lengths: not with {}", flag));
    }
  }
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* sub = app.add_subcommand(
      "serve", "Simulate serving under load: rates, batching, latency percentiles, SLO capacity");
  add_model_options(*sub, o->model);
  sub->add_option("-g,--gpu,--hw,--device", o->device, "Device id or alias from the hardware table")
      ->required();
  add_hardware_options(*sub, o->hardware);
  one_of(sub->add_option(
             "-p,--precision", o->precision,
             "Number format (default bf16 for an LLM, fp16 on a device without bf16; else fp32)"),
         precision_names());
  add_weight_precision_options(*sub, o->weight_precision, o->expert_weight_precision);
  one_of(sub->add_option("--kv-precision", o->kv_precision,
                         "LLM: KV cache storage (default: activations')"),
         precision_names());
  sub->add_option("--runtime", o->runtime,
                  "The runtime (`capcalc runtimes list`): its profile, kernels and serving "
                  "defaults (default vllm for an LLM)");
  sub->add_option("--runtime-file", o->runtime_files,
                  "Extra runtimes or overrides (same id replaces); repeatable");
  whole_number(sub->add_option(
                   "--tensor-parallel,--tp", o->tensor_parallel,
                   "Devices per replica (tensor parallel); with --ep above it, per attention rank"))
      ->capture_default_str();
  whole_number(
      sub->add_option("--expert-parallel,--ep", o->expert_parallel,
                      "MoE: spread each replica's routed experts, whole, over E devices. E = T "
                      "(--tp): expert parallelism alone, the outputs all-reduced; E = D x T: "
                      "D data-parallel attention ranks of T devices (vLLM's data parallelism "
                      "with expert parallelism, SGLang's DP attention), each with its own "
                      "requests and KV cache, stepping together"))
      ->capture_default_str();
  one_of(sub->add_option("--moe-dispatcher", o->moe_dispatcher,
                         "MoE, with --ep above --tp: how the ranks' tokens reach their experts: "
                         "allgather (the default: every token gathered to every device, the "
                         "outputs reduce-scattered), deepep (a copy for each device holding any "
                         "of its experts) or alltoall (a copy for each expert)"),
         {"allgather", "deepep", "alltoall"});
  whole_number(sub->add_option("--replicas", o->replicas, "Replicas; requests go round-robin"), 1,
               1'000'000)
      ->capture_default_str();
  sub->add_option("--disaggregate", o->disaggregate,
                  "LLM: PREFILL:DECODE replicas (e.g. 1:3): prefill replicas run prompts and send "
                  "the KV cache to decode replicas, which generate the rest");
  add_load_options(sub, o.get());
  add_llm_options(sub, o.get());
  add_batching_and_goal_options(sub, o.get());
  add_validate_options(sub, o.get());
  sub->get_option("model")->required(false);
  sub->get_option("--gpu")->required(false);
  sub->add_option("--mix", o->mix,
                  "Choose a fleet: for each workload of a mix file (docs/serving.md) the "
                  "cheapest device, tensor-parallel size and replicas meeting its SLO");
  sub->callback([o, sub, &exit_code] {
    if (!o->mix.empty()) {
      if (!o->validate.empty()) throw Error({}, "--mix and --validate: one at a time");
      reject_run_flags(*sub, "--mix runs the file's workloads", {"--price-per-hour"});
      exit_code = run_serve_mix(*o);
    } else if (o->validate.empty()) {
      if (o->gates.any()) {
        throw Error({},
                    "--max-median-error, --max-worst-factor and --min-within-2x gate "
                    "--validate");
      }
      reject_trace_flags(*sub, *o);
      run_serve(*o);
    } else {
      reject_run_flags(*sub, "--validate runs the file's cases",
                       {"--max-median-error", "--max-worst-factor", "--min-within-2x"});
      exit_code = run_serve_validation(*o);
    }
  });
}

}  // namespace capcalc::cli
