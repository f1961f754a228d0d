// Fleets: several models served side by side, each at its own rate and SLO (a hot tier of large
// GPUs for chat, a warm tier of small ones for vision, a CPU tier for batch jobs). A mix file
// (data/schema/serve-mix.schema.json, docs/serving.md) lists the workloads and the devices each
// may run on; `capcalc serve --mix FILE` finds for each the cheapest device, tensor-parallel size
// and replica count that meet its SLO and prints the fleet and its cost per month.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capcalc/error.hpp"
#include "capcalc/serve.hpp"

namespace capcalc {

/// One model's service in a mix: what `capcalc serve` takes as flags, by the same names.
struct MixWorkload {
  std::string name;
  std::string model;          ///< A file (relative to the mix file's folder) or a zoo name.
  std::string rate;           ///< "20/s".
  double rate_per_s = 0;      ///< `rate` read.
  std::string slo;            ///< "ttft_p99=500ms,tpot_p99=50ms".
  std::string prompt_tokens;  ///< LLM: N or a distribution; empty for other models.
  std::string output_tokens;
  std::vector<std::string> devices;           ///< Candidates; empty: the mix's.
  std::vector<std::int64_t> tensor_parallel;  ///< Sizes to try; empty: 1.
  std::string precision;                      ///< Empty: serve's default.
  std::string kv_precision;
  std::string runtime;
  std::optional<std::int64_t> max_batch;  ///< Non-LLM: Triton's dynamic batcher.
  std::string preferred_batch;
  std::string max_queue_delay;
  std::int64_t requests = 2000;
  std::int64_t seed = 1;
  SourceLocation where;  ///< The workload in its file.
};

struct Mix {
  std::vector<std::string> devices;  ///< Candidates of workloads that name none.
  double hours_per_month = 730;      ///< 8,760 h / 12.
  std::int64_t max_replicas = 1024;  ///< Per workload and candidate.
  std::vector<MixWorkload> workloads;
};

/// Reads a mix file; errors name the file and JSON pointer. Model paths are resolved against the
/// file's folder when a file is there.
Mix parse_mix(const std::string& text, const std::string& file);
Mix load_mix(const std::string& path);

/// One candidate tried for a workload: a device and tensor-parallel size, and what it took.
struct FleetCandidate {
  std::string device;  ///< Device id.
  std::int64_t tensor_parallel = 1;
  std::int64_t replicas = 0;  ///< 0: none up to the limit met the SLO (or `why` says).
  double usd_per_hour = 0;    ///< All its devices; 0 without a price.
  std::string why;            ///< Why it was not a choice ("no price", the error), or empty.
};

/// The choice for one workload: the cheapest candidate meeting the SLO (fewer devices, then the
/// first listed, among equals), its run, and every candidate tried.
struct FleetPool {
  const MixWorkload* workload = nullptr;
  std::string device_name;            ///< Of the choice; empty when none met the SLO.
  std::optional<std::size_t> chosen;  ///< Index into `candidates`.
  ServeResult result;                 ///< The chosen candidate's run at the workload's rate.
  std::vector<FleetCandidate> candidates;
};

struct Fleet {
  std::string file;
  double hours_per_month = 730;
  std::vector<FleetPool> pools;
  double usd_per_hour() const;  ///< Of the pools with a choice.
  bool complete() const;        ///< Every workload has a choice.
};

std::string render_fleet_text(const Fleet& fleet);
std::string render_fleet_json(const Fleet& fleet);

}  // namespace capcalc
