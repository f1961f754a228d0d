// LLM serving beside a single estimate, for `report` and `roofline`: the flags estimate takes
// (--prompt-tokens, --output-tokens, --kv-precision) and the prefill and decode passes they ask
// for, with the graphs each was estimated on (the roofline names their layers).
#pragma once

#include <memory>
#include <optional>

#include <CLI/CLI.hpp>

#include "capcalc/graph.hpp"
#include "capcalc/predict.hpp"

#include "commands.hpp"
#include "workload_args.hpp"

namespace capcalc::cli {

/// A serving request's estimate: `prefill` is the single estimate's graph (seq = the prompt).
struct ServingRun {
  ServingRequest request;
  ServingEstimate estimate;
  Graph decode;  ///< One token per sequence over the mean context's cache.
};

inline void add_serving_run_options(CLI::App& sub, ServingArgs& serving,
                                    std::string& kv_precision) {
  add_serving_options(sub, serving,
                      "LLM serving: prompt tokens per sequence; prefill and decode are drawn as "
                      "separate points (--batch is the sequences)");
  add_kv_precision_option(sub, kv_precision);
}

/// The single estimate of `args`, its graph the prefill when `serving` asks for a request.
inline std::unique_ptr<SingleEstimate> run_serving_estimate(const SingleEstimateArgs& args,
                                                            const ServingArgs& serving) {
  check_kv_precision(args.workload.kv_precision, serving);
  if (!serving.requested()) return run_single_estimate(args);
  const ModelArgs prefill = prefill_args(args.model, serving);
  return run_single_estimate(args, &prefill, &serving);
}

/// Prefill and decode of the request, or none without --prompt-tokens.
inline std::optional<ServingRun> run_serving(const SingleEstimateArgs& args,
                                             const ServingArgs& serving, const SingleEstimate& e) {
  if (!serving.requested()) return std::nullopt;
  ServingRun run;
  run.request = serving.request();
  const CompareServingBuilder build = serving_graphs(args.model);
  const std::int64_t batch = e.graph.batch;
  run.estimate = estimate_serving(
      [&](std::int64_t seq, std::int64_t cached) { return build(batch, seq, cached); }, *e.device,
      e.params, e.workload, run.request);
  // The decode graph as estimate_serving() built it: one token over the mean context.
  run.decode = build(batch, 1, run.estimate.mean_context);
  drop_prefill_only_layers(run.decode);
  return run;
}

}  // namespace capcalc::cli
