// The JSON objects several documents share (report_json.hpp).
#include "report_json.hpp"

#include "capcalc/units.hpp"

#include "report_parts.hpp"

namespace capcalc {

using Json = nlohmann::ordered_json;

// Counts are linear in the batch, so a per-sample count is a whole number; JSON keeps it exact.
Json per_sample_json(std::int64_t value, std::int64_t batch) {
  if (value % batch == 0) return value / batch;
  return per_sample(value, batch);
}

Json model_json(const ReportInput& in) {
  const Graph& g = in.graph;
  const GraphTotals& t = in.totals;
  const double act = activation_bytes_per_element(in.workload.precision);
  Json model;
  model["name"] = g.name;
  model["params"] = t.params;
  model["active_params"] = t.active_params;
  model["macs"] = per_sample_json(t.macs, g.batch);
  model["flops"] = per_sample_json(t.flops, g.batch);
  model["other_flops"] = per_sample_json(t.other_flops, g.batch);
  model["backward_flops"] = per_sample_json(t.backward_flops, g.batch);
  model["batch"] = g.batch;
  model["macs_per_batch"] = t.macs;
  model["flops_per_batch"] = t.flops;
  model["weight_bytes"] =
      static_cast<double>(t.params) * weight_bytes_per_element(in.workload.precision);
  model["activation_bytes"] = static_cast<double>(t.activation_elements) * act;
  model["peak_activation_bytes"] = static_cast<double>(t.peak_live_elements) * act;
  model["layers"] = g.layers.size();
  model["dims"] = g.dims;
  if (g.mtp_modules > 0) model["mtp_layers"] = g.mtp_modules;
  if (!g.unknown_ops.empty()) {  // Operators counted as zero (ONNX import).
    Json unknown = Json::object();
    for (const UnknownOperator& op : g.unknown_ops)
      unknown[op.op] = op.nodes;
    model["unknown_ops"] = unknown;
  }
  return model;
}

Json device_json(const Device& d) {
  Json device;
  device["id"] = d.id;
  device["name"] = d.name;
  device["type"] = std::string(device_type_name(d.type));
  device["memory_bytes"] = d.memory_bytes;
  device["memory_bandwidth_bytes_per_s"] = d.memory_bandwidth_bytes_per_s;
  device["dense_peak"] = dense_peak_json(d);
  const Json clocks = sustained_clocks_json(d, 1);
  if (!clocks.empty()) device["sustained_matrix_clock_hz"] = clocks;
  const Json estimates = estimated_peaks_json(d);
  if (!estimates.empty()) device["estimated_peaks"] = estimates;
  return device;
}

Json layer_json(const ReportInput& in, std::size_t i) {
  const Layer& layer = in.graph.layers[i];
  const LayerCounts& c = layer.counts;
  Json row;
  row["name"] = layer.name;
  row["op"] = layer.op;
  row["output_shape"] = layer.output;
  row["params"] = c.params;
  row["macs"] = c.macs;
  row["flops"] = c.flops();
  row["other_flops"] = c.other_flops;
  row["backward_flops"] = c.backward_flops();
  const double bytes = layer_bytes(c, in.workload.precision);
  row["bytes"] = bytes;
  row["intensity_flops_per_byte"] = bytes > 0 ? static_cast<double>(c.flops()) / bytes : 0.0;
  if (in.estimate != nullptr) {
    const LayerEstimate& e = in.estimate->layers[i];
    row["time_s"] = e.time_s;
    row["compute_s"] = e.compute_s;
    row["memory_s"] = e.memory_s;
    row["overhead_s"] = e.overhead_s;
    row["bound"] = std::string(bound_name(e.bound));
  }
  return row;
}

Json layers_json(const ReportInput& in) {
  Json layers = Json::array();
  for (std::size_t i = 0; i < in.graph.layers.size(); ++i)
    layers.push_back(layer_json(in, i));
  return layers;
}

// The workload as the JSON output names it: the keys of budget and measurement files.
Json workload_json(const ReportInput& in) {
  const Estimate& e = *in.estimate;
  Json workload;
  workload["mode"] = std::string(mode_name(in.workload.mode));
  workload["precision"] = std::string(precision_name(in.workload.precision));
  workload["batch"] = in.graph.batch;
  if (!in.batch_note.empty()) workload["batch_note"] = in.batch_note;
  workload["profile"] = std::string(profile_name(e.profile));
  workload["runtime"] = e.runtime;
  put_parallelism_json(workload, in.workload);
  if (in.workload.context_parallel > 1) workload["context_parallel"] = in.workload.context_parallel;
  if (in.workload.expert_parallel > 1) workload["expert_parallel"] = in.workload.expert_parallel;
  if (whole_experts(in.workload)) {
    workload["expert_tensor_parallel"] = expert_tensor_parallel(in.workload);
  }
  if (in.workload.moe_imbalance != 1) workload["moe_imbalance"] = in.workload.moe_imbalance;
  if (in.workload.expert_parallel > 1) {
    workload["moe_dispatcher"] = std::string(moe_dispatcher_name(in.workload.moe_dispatcher));
  }
  if (in.workload.input_rate_per_s > 0) workload["input_rate_per_s"] = in.workload.input_rate_per_s;
  workload["checkpointing"] = in.workload.checkpointing;
  if (in.workload.checkpoint_layers > 0) {
    workload["checkpoint_layers"] = in.workload.checkpoint_layers;
  }
  if (in.workload.recompute != 0)
    workload["recompute"] = recompute_modules_of(in.workload.recompute);
  if (in.workload.tensor_parallel > 1) workload["sequence_parallel"] = e.sequence_parallel;
  workload["weight_precision"] =
      std::string(precision_name(in.workload.weight_precision.value_or(in.workload.precision)));
  if (in.workload.expert_weight_precision) {
    workload["expert_weight_precision"] =
        std::string(precision_name(*in.workload.expert_weight_precision));
  }
  if (in.workload.kv_precision) {
    workload["kv_precision"] = std::string(precision_name(*in.workload.kv_precision));
  }
  workload["sparsity"] = std::string(sparsity_name(in.workload.sparsity));
  if (in.workload.precision == Precision::kFp8) {
    workload["fp8_recipe"] = std::string(fp8_recipe_name(in.workload.fp8_recipe));
  }
  if (in.workload.mode == Mode::kTraining) {
    workload["optimizer"] = std::string(optimizer_name(in.workload.optimizer));
  }
  if (in.workload.lora_rank > 0) {
    workload["lora_rank"] = in.workload.lora_rank;
    workload["lora_targets"] = in.workload.lora_attention_only ? "attention" : "all-linear";
    workload["lora_params"] = e.lora_params;
  }
  return workload;
}

}  // namespace capcalc
