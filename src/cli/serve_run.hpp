// What `capcalc serve` runs, shared by its commands: a model behind a request stream
// (cli/serve.cpp) and the files of several runs, a mix's fleet and a validation set's cases
// (cli/serve_files.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capcalc/hardware.hpp"
#include "capcalc/serve.hpp"

#include "commands.hpp"
#include "gates.hpp"

namespace capcalc::cli {

/// The flags of `capcalc serve`.
struct ServeOptions {
  ModelArgs model;
  HardwareArgs hardware;
  std::string device;
  std::string precision;  // Empty: bf16 for an LLM, else fp32.
  std::string weight_precision;
  std::string expert_weight_precision;
  std::string kv_precision;
  std::string runtime;  // Empty: vllm for an LLM, else the device type's profile.
  std::vector<std::string> runtime_files;
  std::int64_t tensor_parallel = 1;
  // 1, or a multiple of tensor_parallel: experts whole over that many devices (above it, data-
  // parallel attention ranks of tensor_parallel devices each).
  std::int64_t expert_parallel = 1;
  std::string moe_dispatcher;  // With data-parallel attention; empty: allgather.
  std::int64_t replicas = 1;
  std::string rate;
  double arrival_cv = 1;
  std::string trace;
  std::string prompt_tokens;
  std::string output_tokens;
  std::int64_t requests = 2000;
  std::int64_t seed = 1;
  std::optional<std::int64_t> max_num_batched_tokens;
  std::optional<std::int64_t> max_num_seqs;
  std::optional<std::int64_t> block_size;
  std::optional<double> memory_utilization;
  bool no_chunked_prefill = false;
  std::optional<double> prefix_hit_rate;
  std::optional<std::int64_t> speculative_tokens;
  std::optional<double> acceptance_rate;
  std::optional<double> draft_cost;
  std::string draft;  // A draft model file (speculative decoding).
  std::optional<double> moe_imbalance;
  std::optional<std::int64_t> max_batch;
  std::string preferred_batch;
  std::string max_queue_delay;
  std::string slo;
  std::string find;
  std::string disaggregate;  // "P:D": prefill and decode replicas.
  std::string sweep;
  std::optional<double> price_per_hour;
  std::string format;  // --format; add_format_option sets the default (formats.hpp).
  std::string output;
  std::string validate;  // A serving validation file (serve_validation.hpp).
  std::string mix;       // A mix file (serve_mix.hpp): a fleet of workloads.
  AccuracyGates gates;   // --validate's.
};

// A run as the flags describe it: the setup, the step costs and what the title names.
struct PreparedRun {
  ServeSetup setup;
  std::unique_ptr<ModelStepCost> cost;
  std::unique_ptr<ModelStepCost> draft;  // setup.continuous.draft_model points to it.
  Graph as_given;
  Device device;
  Workload workload;
  Workload served;  // The target model's: its MoE imbalance and expert parallelism too.
  std::string runtime_text;
};

/// The run that `o` asks for on `table`'s device: the simulator's setup and step costs
/// (`warn`: print the warnings a run of one model prints).
PreparedRun prepare_run(const ServeOptions& o, const HardwareTable& table, bool warn);

/// serve MODEL: one run, a --sweep of rates or a --find search, printed in --format.
void run_serve(const ServeOptions& o);

/// serve --mix: the fleet; 1 when a workload has no candidate meeting its SLO.
int run_serve_mix(const ServeOptions& o);

/// serve --validate: every case of a serving validation file; 1 when a gate is exceeded.
int run_serve_validation(const ServeOptions& o);

}  // namespace capcalc::cli
