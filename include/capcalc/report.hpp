// Rendering results as text for people, or JSON/CSV for programs. Everything renders to a
// string, so that tests check output without running a process; the CLI only prints.
//
// JSON output carries "schema_version" and is described by data/schema/*.schema.json.
#pragma once

#include <cstddef>
#include <string>

#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/predict.hpp"

namespace capcalc {

/// Version of the JSON documents capcalc writes.
inline constexpr int kOutputSchemaVersion = 1;

/// What a report is about. Device, parameters and estimate are absent for counts alone.
struct ReportInput {
  const Graph& graph;
  const GraphTotals& totals;
  Workload workload;
  const Device* device = nullptr;
  const PerformanceParams* params = nullptr;
  const Estimate* estimate = nullptr;
};

/// `capcalc estimate`: summary, device, estimate, the `top_layers` heaviest layers.
std::string render_estimate_text(const ReportInput& input, std::size_t top_layers);
/// `capcalc estimate --format json` (estimate-output.schema.json).
std::string render_estimate_json(const ReportInput& input);

/// `capcalc layers`: one row per layer; with a device, time and bound too.
std::string render_layers_text(const ReportInput& input);
std::string render_layers_json(const ReportInput& input);
std::string render_layers_csv(const ReportInput& input);

}  // namespace capcalc
