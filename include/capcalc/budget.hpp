// Budget gates for CI (`capcalc check`): limits on latency, throughput, memory, cost, training
// time, parameters and MACs, checked for models × devices. Each limit of each model on each
// device is one CheckResult: passed or exceeded, with the value, the limit and the margin.
//
// Limits come from flags or from a budget file (JSON, data/schema/budget.schema.json,
// documented in docs/cli.md, "Comparing devices and budget gates"):
//   {"schema_version": 1,
//    "defaults": {"devices": ["t4"], "precision": "fp16", "limits": {"must_fit": true}},
//    "budgets": [{"name": "serving", "model": "models/resnet50.json", "batch": 8,
//                 "limits": {"max_latency": "20ms", "min_throughput": "1000/s"}}]}
// A language model's throughput names what it counts: "3k tokens/s" or "2 sequences/s".
// A budget's keys override those of "defaults"; limits are merged key by key. Model paths are
// relative to the budget file's directory. Limit values are strings with units (parsed by
// units.hpp) or plain numbers in base units (seconds, bytes, USD, per second, counts).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capcalc/compare.hpp"
#include "capcalc/error.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/model.hpp"
#include "capcalc/runtime.hpp"
#include "capcalc/units.hpp"

namespace capcalc {

/// What a limit bounds. "max" limits fail above the limit, "min" limits below it.
enum class LimitKind {
  kMaxLatency,     ///< Seconds: inference latency of the batch, or training step time.
  kMinThroughput,  ///< Per second: samples, or what the limit names (tokens, sequences).
  kMaxMemory,      ///< Bytes needed on one device.
  kMaxCost,        ///< USD: the training run when given, else 1e6 samples (see compare.hpp).
  kMaxTrainTime,   ///< Seconds of the training run (needs a run).
  kMaxParams,      ///< Parameters.
  kMaxMacs,        ///< Forward MACs per sample.
  kMustFit,        ///< The model fits in one device's memory (no value).
  kMaxTtft,        ///< Seconds: LLM serving's time to first token (needs a serving request).
};

/// "max_latency", "min_throughput", "max_memory", "max_cost", "max_train_time", "max_params",
/// "max_macs", "must_fit", "max_ttft": the budget-file keys (flags are the same with '-').
/// With a serving request (prompt_tokens) latency is the request's time, throughput generated
/// tokens per second and cost that of 1M generated tokens, as compare's serving rows.
std::string_view limit_name(LimitKind kind);
std::vector<std::string_view> limit_names();
std::optional<LimitKind> parse_limit_kind(std::string_view name);

/// One limit as the user wrote it.
struct Limit {
  LimitKind kind = LimitKind::kMustFit;
  double value = 0;  ///< In base units (s, bytes, USD, 1/s, count); 0 for must_fit.
  std::string text;  ///< As written ("20ms"), for messages; "true" for must_fit.
  /// min_throughput: what the rate counts ("3k tokens/s"). A language model (a "seq"
  /// dimension) needs tokens or sequences; tokens need one; serving counts generated tokens.
  RateItem item = RateItem::kNone;
  std::string item_word;  ///< The item's plural as named ("images"); "" for none.
  SourceLocation where;   ///< In a budget file, for messages; empty for a flag.
};

/// Parses `text` with the unit parser for `kind` (parse_duration for latency,
/// parse_counted_rate for throughput, ...). Throws capcalc::Error on a bad value.
Limit parse_limit(LimitKind kind, std::string_view text);

/// One model on some devices under some limits.
struct Budget {
  std::string name;                  ///< Label in reports; default: the model's name.
  std::string model_path;            ///< Resolved against the budget file's directory.
  ModelOptions model_options;        ///< "batch" and "set" dimensions.
  std::vector<std::string> devices;  ///< Ids or aliases.
  Precision precision = Precision::kFp32;
  CompareRequest request;  ///< Mode, profile, data-parallel devices, run, price.
  std::vector<Limit> limits;
  SourceLocation where;                      ///< The budget in its file (for messages).
  std::vector<SourceLocation> device_where;  ///< Parallel to devices.
  std::string runtime;                       ///< "runtime": a runtime id or alias; "" for none.
  SourceLocation runtime_where;              ///< Where it was given (for messages).
  SourceLocation model_where;                ///< The "model" key.
  SourceLocation tokens_where;               ///< The "tokens" key, when given.
  /// The key that set each dimension ("batch", "set"/name), for a model that lacks it.
  std::map<std::string, SourceLocation> dims_where;
};

/// Parses a budget file; problems are capcalc::Error with file and JSON pointer.
std::vector<Budget> parse_budget(std::string_view text, const std::string& file);
std::vector<Budget> load_budget(const std::string& path);

/// One limit of one model on one device.
struct CheckResult {
  std::string budget;    ///< Budget name.
  std::string model;     ///< Model (graph) name.
  std::string device;    ///< Device id.
  std::string workload;  ///< "inference, fp32, batch 1".
  Limit limit;
  std::optional<double> value;  ///< Unset when unknown (no price, no TDP): a failure.
  std::string value_text;       ///< "23.4 ms"; "unknown".
  std::string margin_text;      ///< "18.8 ms (93.9 %)": headroom, or how far over when failed.
  bool passed = false;
  std::string message;  ///< One line: "latency 23.4 ms exceeds max 20ms by 3.40 ms (17.0 %)".
};

/// All results of a check.
struct CheckReport {
  std::vector<CheckResult> results;
  std::size_t failures() const;
  bool passed() const { return failures() == 0; }
};

/// Checks `limits` for one graph on one device. Throws capcalc::Error if the device lacks the
/// precision, max_train_time is asked for without a training run, or min_throughput counts
/// what the model does not (a bare rate on a language model, tokens without "seq", sequences
/// while serving), located at the limit's `where` (or naming min_throughput for a flag).
std::vector<CheckResult> check_limits(const Graph& graph, const Device& device,
                                      const PerformanceParams& params, Precision precision,
                                      const CompareRequest& request,
                                      const std::vector<Limit>& limits,
                                      const std::string& budget_name);

/// Loads each budget's model and checks it on each of its devices.
/// `runtimes` resolves the budgets' "runtime" keys (a budget naming one needs it).
CheckReport check_budgets(const std::vector<Budget>& budgets, const HardwareTable& table,
                          const RuntimeTable* runtimes = nullptr);

}  // namespace capcalc
