// Shared by the fuzz targets: the contract every parser keeps on any input.
//
// A parser either returns or throws capcalc::Error (a located, one-line message). Anything
// else escaping it (a std::exception from nlohmann or protobuf, a crash, a sanitizer report)
// is a bug: the target lets it through, and libFuzzer, or the replay runner, fails on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "capcalc/error.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/report.hpp"

namespace capcalc::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Runs `parse`, accepting only a normal return or a capcalc::Error.
template <typename Parse>
void expect_located_errors(Parse&& parse) {
  try {
    parse();
  } catch (const capcalc::Error& e) {
    // Bad input, reported with its location: the expected outcome for most inputs. The
    // message is one line (the CLI prints it as `file:place: message`).
    if (e.message().find('\n') != std::string::npos) {
      std::fprintf(stderr, "capcalc::Error over more than one line: %s\n", e.what());
      std::abort();
    }
  }
}

/// data/hardware.json, read once.
inline const capcalc::HardwareTable& built_in_table() {
  static const capcalc::HardwareTable table =
      capcalc::load_hardware(CAPCALC_FUZZ_DATA_DIR "/hardware.json");
  return table;
}

/// What the CLI does with a model that loads: counts, an inference and a training estimate
/// on an H100 (bf16), and the estimate rendered as text and JSON (names from ONNX files can
/// hold any bytes).
inline void predict_and_render(const capcalc::Graph& graph) {
  const capcalc::HardwareTable& table = built_in_table();
  const capcalc::GraphTotals totals = capcalc::graph_totals(graph);
  const capcalc::Device& device = table.get("h100-sxm");
  const capcalc::PerformanceParams params = table.performance_for(device);
  for (capcalc::Mode mode : {capcalc::Mode::kInference, capcalc::Mode::kTraining}) {
    capcalc::Workload workload;
    workload.precision = capcalc::Precision::kBf16;
    workload.mode = mode;
    const capcalc::Estimate estimate = capcalc::estimate(graph, device, params, workload);
    const capcalc::ReportInput input{graph, totals, workload, &device, &params, &estimate};
    (void)capcalc::render_estimate_text(input, 10);
    (void)capcalc::render_estimate_json(input);
    (void)capcalc::render_layers_json(input);
  }
}

}  // namespace capcalc::fuzz
