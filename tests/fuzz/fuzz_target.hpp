// Shared by the fuzz targets: the contract every parser keeps on any input.
//
// A parser either returns or throws capcalc::Error (a located, one-line message). Anything
// else escaping it (a std::exception from nlohmann or protobuf, a crash, a sanitizer report)
// is a bug: the target lets it through, and libFuzzer, or the replay runner, fails on it.
// The CLI's own checks hold too: an error names its file and place (line:col or JSON
// pointer), JSON nested past the limit is refused, and a model that loads keeps within the
// documented limits (limits.hpp).
#pragma once

#include <algorithm>
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

#include "checked.hpp"
#include "limits.hpp"

namespace capcalc::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Where a parse error must point: `kPlace` for text formats (JSON, ONNX text, protobuf text:
/// a line and column or a JSON pointer, as the CLI prints them), `kFile` where the format has
/// no positions (a binary protobuf that does not parse names only the file).
enum class Located { kPlace, kFile };

[[noreturn]] inline void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz contract broken: %s: %s\n", what, detail.c_str());
  std::abort();
}

/// The deepest nesting of JSON arrays and objects in `text`, outside strings.
inline int json_depth(std::string_view text) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

/// Runs `parse`, accepting only a normal return or a capcalc::Error as the CLI would print it:
/// one line, naming the file and (for text formats) the place.
template <typename Parse>
void expect_located_errors(Parse&& parse, Located located = Located::kPlace) {
  try {
    parse();
  } catch (const capcalc::Error& e) {
    const capcalc::SourceLocation& where = e.where();
    if (e.message().empty()) fail("an empty message", e.what());
    if (std::string_view(e.what()).find('\n') != std::string_view::npos)
      fail("a message over more than one line", e.what());
    if (where.file.empty()) fail("a message without its file", e.what());
    if (located == Located::kPlace && where.pointer.empty() && where.line <= 0)
      fail("a message without a line or JSON pointer", e.what());
    if (where.line > 0 && where.column <= 0) fail("a line without a column", e.what());
    // nlohmann's own messages begin "[json.exception.<kind>.<id>] ..."; the same words quoted
    // from the input (a syntax error echoes what it last read) are not a leak.
    if (e.message().rfind("[json.exception", 0) == 0)
      fail("nlohmann's text in a message", e.what());
  }
}

/// A JSON text nested past the documented limit must have been refused.
template <typename Parse>
void expect_json_limits(std::string_view text, Parse&& parse) {
  bool parsed = false;
  expect_located_errors([&] {
    parse();
    parsed = true;
  });
  if (parsed && json_depth(text) > capcalc::kMaxNestingDepth)
    fail("JSON nested past the limit was accepted", std::to_string(json_depth(text)));
}

/// A model the CLI would accept keeps within the documented limits (docs/limits.md):
/// expanded layers, dims of an input, counts that are never negative.
inline void expect_graph_limits(const capcalc::Graph& graph) {
  const auto layers = static_cast<std::int64_t>(graph.layers.size());
  if (layers > std::max(capcalc::kMaxLayers, capcalc::kMaxExpandedNodes))
    fail("more layers than the limit", std::to_string(layers));
  for (const capcalc::GraphInput& input : graph.inputs) {
    if (static_cast<int>(input.shape.size()) > capcalc::kMaxTensorRank)
      fail("an input with more dims than the limit", input.name);
    for (std::int64_t dim : input.shape)
      if (dim < 0) fail("an input with a negative dim", input.name);
  }
  for (const capcalc::Layer& layer : graph.layers) {
    const capcalc::LayerCounts& c = layer.counts;
    if (c.params < 0 || c.macs < 0 || c.other_flops < 0 || c.input_elements < 0 ||
        c.output_elements < 0 || c.backward_macs < 0 || c.saved_elements < 0)
      fail("a negative count", layer.name);
    for (std::int64_t dim : layer.output)
      if (dim < 0) fail("an output with a negative dim", layer.name);
  }
}

/// data/hardware.json, read once.
inline const capcalc::HardwareTable& built_in_table() {
  static const capcalc::HardwareTable table =
      capcalc::load_hardware(CAPCALC_FUZZ_DATA_DIR "/hardware.json");
  return table;
}

/// Counts, an inference and a training estimate on an H100 (bf16), rendered as text and JSON.
inline void render_all(const capcalc::Graph& graph) {
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

/// What the CLI does with a model that loads: counts, an inference and a training estimate
/// on an H100 (bf16), and the estimate rendered as text and JSON (names from ONNX files can
/// hold any bytes). Every layer's counts fit, but a total (2 x MACs + other FLOPs, backward
/// FLOPs) may not: that OverflowError is what the CLI's error boundary reports as
/// "FILE: a count does not fit in a 64-bit integer", exit 2 (src/cli/common.cpp), and is
/// accepted here as it is there (found by fuzzing: a MatMul whose backward FLOPs overflow).
inline void predict_and_render(const capcalc::Graph& graph) {
  expect_graph_limits(graph);
  try {
    render_all(graph);
  } catch (const capcalc::OverflowError&) {
  }
}

}  // namespace capcalc::fuzz
