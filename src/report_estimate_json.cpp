// `capcalc estimate --format json` (data/schema/estimate-output.schema.json).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/ranges.hpp"
#include "capcalc/report.hpp"
#include "capcalc/units.hpp"

#include "report_json.hpp"
#include "report_parts.hpp"

namespace capcalc {
namespace {

using Json = nlohmann::ordered_json;

// A prediction's range: a time scales by the range's ends, a rate by their inverses.
Json range_json(const ReportInput& in, const Estimate& e, double value, bool time) {
  const auto [low, high] = range_factors(e, *range_of(in, e));
  Json j;
  j["low"] = time ? value * low : value / high;
  j["high"] = time ? value * high : value / low;
  return j;
}

// Why the model does not fit, and the splits that would make it.
Json fit_json(const ReportInput& in) {
  Json fit;
  fit["message"] = fit_advice_text(*in.fit, *in.device, in.workload.mode);
  fit["state_bytes"] = in.fit->state_bytes;
  fit["replicas_do_not_split"] = in.fit->replicas_do_not_split;
  Json options = Json::array();
  for (const FitOption& o : in.fit->options) {
    options.push_back({{"flags", o.flags}, {"devices", o.devices}});
  }
  fit["options"] = options;
  return fit;
}

// The matrix layers whose dimensions miss the device's tile multiple.
Json misaligned_json(const ReportInput& in) {
  nlohmann::json misaligned = nlohmann::json::array();
  const std::vector<MisalignedLayer> unaligned =
      in.device != nullptr ? misaligned_matrix_layers(in.graph, *in.device, in.workload.precision,
                                                      in.workload.runtime)
                           : std::vector<MisalignedLayer>{};
  for (const MisalignedLayer& m : unaligned) {
    misaligned.push_back({{"layer", m.name},
                          {"dimension", m.dimension},
                          {"size", m.size},
                          {"multiple", m.multiple},
                          {"padded", m.padded},
                          {"share_of_macs", m.share_of_macs}});
  }
  return misaligned;
}

// LLM serving: time to first token, decode and the KV cache.
Json llm_json(const ReportInput& in) {
  const ServingEstimate& sv = *in.serving;
  Json llm;
  llm["prompt_tokens"] = in.request->prompt_tokens;
  llm["output_tokens"] = in.request->output_tokens;
  llm["prefill_s"] = sv.prefill.latency_s;
  llm["prefill_communication_s"] = sv.prefill.communication_s;
  llm["decode_step_communication_s"] = sv.decode.communication_s;
  if (in.workload.expert_parallel > 1) {
    llm["prefill_alltoall_s"] = sv.prefill.expert_parallel_s;
    llm["decode_step_alltoall_s"] = sv.decode.expert_parallel_s;
  }
  llm["ttft_s"] = sv.ttft_s;
  if (in.ranges != nullptr) llm["ttft_range_s"] = range_json(in, sv.prefill, sv.ttft_s, true);
  llm["decode_step_s"] = sv.decode_step_s;
  if (in.ranges != nullptr) {
    llm["decode_step_range_s"] = range_json(in, sv.decode, sv.decode_step_s, true);
  }
  llm["mean_context_tokens"] = sv.mean_context;
  llm["decode_tokens_per_s_per_sequence"] = sv.tokens_per_s_per_sequence;
  llm["decode_tokens_per_s"] = sv.tokens_per_s;
  llm["request_latency_s"] = sv.request_latency_s;
  llm["kv_cache_bytes_per_token"] = sv.kv_bytes_per_token;
  llm["kv_cache_modelled"] = sv.kv_bytes_per_token > 0;
  llm["kv_cache_bytes"] = sv.kv_bytes;
  llm["memory_bytes"] = sv.memory_bytes;
  llm["fits"] = sv.fits;
  llm["max_batch"] = sv.max_batch;
  llm["max_cached_tokens"] = sv.max_cached_tokens;
  return llm;
}

// A training run: steps, time, device-hours, cost and energy.
Json training_run_json(const ReportInput& in) {
  Json run;
  run["samples"] = in.run->samples;
  run["steps"] = in.training->steps;
  run["time_s"] = in.training->time_s;
  run["device_hours"] = in.training->device_hours;
  run["cost_usd"] = in.training->cost_usd ? Json(*in.training->cost_usd) : Json(nullptr);
  run["price_per_device_hour_usd"] =
      in.run->price_per_device_hour_usd ? Json(*in.run->price_per_device_hour_usd) : Json(nullptr);
  run["energy_kwh"] = in.training->energy_kwh ? Json(*in.training->energy_kwh) : Json(nullptr);
  return run;
}

// The "estimate" object: time, memory and the performance model.
Json estimate_json(const ReportInput& in) {
  const Estimate& e = *in.estimate;
  Json est;
  est["latency_s"] = e.latency_s;
  if (in.ranges != nullptr) est["latency_range_s"] = range_json(in, e, e.latency_s, true);
  est["kernels"] = e.kernels;
  est["throughput_per_s"] = e.throughput_per_s;
  if (in.ranges != nullptr) {
    est["throughput_range_per_s"] = range_json(in, e, e.throughput_per_s, false);
    const PredictionRange r = *range_of(in, e);
    est["range_basis"] = {{"class", class_key({e.profile, dominant_bound(e), in.device->type})},
                          {"validated", r.validated},
                          {"cases", r.cases},
                          {"coverage", in.ranges->coverage}};
  }
  est["flops_per_step"] = e.flops;
  est["bytes_per_step"] = e.bytes;
  est["achieved_flops_per_s"] = e.achieved_flops_per_s;
  est["optimizer_s"] = e.optimizer_s;
  if (e.input_s > 0) {
    est["input_s"] = e.input_s;
    est["input_wait_s"] = e.input_wait_s;
  }
  est["recompute_s"] = e.recompute_s;
  est["pipeline_bubble_s"] = e.pipeline_bubble_s;
  if (in.workload.pipeline_parallel > 1) {
    est["pipeline_stages"] = {{"heaviest", e.pipeline_heaviest_stage + 1},
                              {"imbalance", e.pipeline_imbalance}};
    est["pipeline_sends"] = {
        {"time_s", e.pipeline_send_s},
        {"bytes", e.pipeline_send_bytes},
        {"link", e.pipeline_sends_modelled ? Json(e.pipeline_link) : Json(nullptr)},
        {"modelled", e.pipeline_sends_modelled}};
  }
  est["communication_s"] = e.communication_s;
  est["allreduces"] = e.allreduces;
  est["allreduce_bytes"] = e.allreduce_bytes;
  est["communication_modelled"] = e.communication_modelled;
  if (in.workload.context_parallel > 1) {
    est["context_parallel"] = {
        {"send_s", e.context_parallel_send_s},
        {"exposed_s", e.context_parallel_s},
        {"link", e.context_parallel_modelled ? Json(e.context_parallel_link) : Json(nullptr)},
        {"modelled", e.context_parallel_modelled}};
  }
  if (in.workload.expert_parallel > 1) {
    est["expert_parallel"] = {
        {"degree", in.workload.expert_parallel},
        {"dispatcher", moe_dispatcher_name(in.workload.moe_dispatcher)},
        {"collective", e.expert_collective},
        {"alltoall_s", e.expert_parallel_s},
        {"alltoalls", e.alltoalls},
        {"bytes", e.alltoall_bytes},
        {"link", e.expert_parallel_modelled ? Json(e.expert_parallel_link) : Json(nullptr)},
        {"modelled", e.expert_parallel_modelled}};
  }
  if (in.workload.mode == Mode::kTraining && data_parallel_shards(in.workload) > 1) {
    Json dp;
    dp["allreduce_s"] = e.data_parallel_s;
    dp["exposed_s"] = e.data_parallel_exposed_s;
    dp["bytes"] = e.data_parallel_bytes;
    dp["link"] = e.data_parallel_modelled ? Json(e.data_parallel_link) : Json(nullptr);
    dp["modelled"] = e.data_parallel_modelled;
    est["data_parallel"] = dp;
  }
  est["memory_bytes"] = e.memory.total_bytes;
  est["fits"] = e.fits;
  if (in.fit != nullptr && !e.fits) est["to_fit"] = fit_json(in);
  Json memory;
  memory["weight_bytes"] = e.memory.weight_bytes;
  memory["gradient_bytes"] = e.memory.gradient_bytes;
  memory["optimizer_bytes"] = e.memory.optimizer_bytes;
  memory["activation_bytes"] = e.memory.activation_bytes;
  est["memory"] = memory;
  Json params;
  params["matrix_efficiency"] = in.params->matrix_efficiency;
  params["vector_efficiency"] = in.params->vector_efficiency;
  params["memory_efficiency"] = in.params->memory_efficiency;
  params["overhead_s"] = e.floor_s;
  est["performance_model"] = params;
  est["max_batch"] = e.max_batch;
  est["sparsity_speedup"] = e.sparsity_speedup;
  est["misaligned_layers"] = misaligned_json(in);
  if (in.serving != nullptr) est["llm"] = llm_json(in);
  if (in.training != nullptr) est["training"] = training_run_json(in);
  return est;
}

}  // namespace

std::string render_estimate_json(const ReportInput& in) {
  Json doc;
  doc["schema_version"] = kOutputSchemaVersion;
  doc["model"] = model_json(in);
  doc["device"] = device_json(*in.device);
  doc["workload"] = workload_json(in);
  doc["estimate"] = estimate_json(in);
  doc["layers"] = layers_json(in);
  return json_text(doc);
}

}  // namespace capcalc
