#include "capcalc/report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/model.hpp"
#include "capcalc/units.hpp"

#include "catch.hpp"

using namespace capcalc;

namespace {

const char* kModel = R"({"format": "capcalc-model/1", "name": "small",
  "dims": {"batch": 2},
  "inputs": [{"name": "image", "shape": ["batch", 3, 8, 8]}],
  "layers": [
    {"name": "conv,1", "op": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1},
    {"name": "relu", "op": "relu"},
    {"name": "flat", "op": "flatten"},
    {"name": "fc", "op": "linear", "out_features": 10}]})";

Device test_device() {
  Device d;
  d.id = "test-gpu";
  d.name = "Test GPU";
  d.dense_peak[static_cast<std::size_t>(Precision::kFp32)] = {10e12, 0};
  d.memory_bytes = 1e9;
  d.memory_bandwidth_bytes_per_s = 1e11;
  return d;
}

}  // namespace

TEST_CASE("report: estimate JSON carries the documented keys, per sample", "[report]") {
  const Graph g = parse_model(kModel, "small.json");
  const GraphTotals t = graph_totals(g);
  const Device d = test_device();
  const PerformanceParams p;
  const Estimate e = estimate(g, d, p, Workload{});
  const auto doc = nlohmann::json::parse(render_estimate_json({g, t, Workload{}, &d, &p, &e}));
  CHECK(doc["schema_version"] == kOutputSchemaVersion);
  // conv: 2*4*8*8 outputs x 3*3*3 MACs; fc: 2 x 256 x 10.
  const std::int64_t macs = 2 * 4 * 8 * 8 * 27 + 2 * 256 * 10;
  CHECK(doc["model"]["macs"] == macs / 2);  // Per sample.
  CHECK(doc["model"]["macs_per_batch"] == macs);
  CHECK(doc["model"]["params"] == (4 * 27 + 4) + (256 * 10 + 10));
  CHECK(doc["model"]["flops"] == t.flops / 2);
  CHECK(doc["estimate"]["latency_s"].get<double>() == Approx(e.latency_s));
  CHECK(doc["estimate"]["throughput_per_s"].get<double>() == Approx(2 / e.latency_s));
  CHECK(doc["estimate"]["memory_bytes"].get<double>() == Approx(e.memory.total_bytes));
  CHECK(doc["estimate"]["fits"] == true);
  CHECK(doc["layers"].size() == 4);
  CHECK(doc["layers"][2]["bound"] == "-");  // flatten is a view.
  CHECK(doc["device"]["id"] == "test-gpu");
}

TEST_CASE("report: a batch whose time is mostly per-kernel floors gets a hint", "[report]") {
  const Device d = test_device();
  PerformanceParams p;
  p.eager_overhead_s = 1e-3;  // Every layer of the small model is overhead-bound.
  const Graph g = parse_model(kModel, "small.json");
  const GraphTotals t = graph_totals(g);
  const Estimate e = estimate(g, d, p, Workload{});
  REQUIRE(e.max_batch > 2);
  ReportInput input{g, t, Workload{}, &d, &p, &e};
  // The library names the setting by key; a caller (the CLI) may name its own (a flag).
  CHECK_THAT(render_estimate_text(input, 0),
             ContainsSubstring("hint         per-kernel floors take 100.0 % of the time at "
                               "batch 2:\n               a larger batch (up to " +
                               format_grouped(e.max_batch) + " fits) spreads them out\n"));
  input.setting_name = [](std::string_view key) { return "--" + std::string(key); };
  CHECK_THAT(render_estimate_text(input, 0), ContainsSubstring("a larger --batch (up to "));
  // Floors that do not dominate: no hint.
  p.eager_overhead_s = 1e-9;
  const Estimate fast = estimate(g, d, p, Workload{});
  CHECK_THAT(render_estimate_text({g, t, Workload{}, &d, &p, &fast}, 0),
             !ContainsSubstring("hint"));
}

TEST_CASE("report: JSON output replaces bytes that are not UTF-8", "[report]") {
  // ONNX names are whatever bytes the file holds (protobuf does not check them); nlohmann's
  // dump threw type_error 316 on them, which the CLI reported as an internal error (found by
  // running the CLI over fuzzed ONNX files).
  Graph g = parse_model(kModel, "small.json");
  g.layers[0].name = "conv\xff";
  const GraphTotals t = graph_totals(g);
  const Device d = test_device();
  const PerformanceParams p;
  const Estimate e = estimate(g, d, p, Workload{});
  const auto doc = nlohmann::json::parse(render_estimate_json({g, t, Workload{}, &d, &p, &e}));
  CHECK(doc["layers"][0]["name"] == "conv\xef\xbf\xbd");  // U+FFFD
}

TEST_CASE("report: estimate text shows the summary, the fit and the heaviest layers", "[report]") {
  const Graph g = parse_model(kModel, "small.json");
  const GraphTotals t = graph_totals(g);
  const Device d = test_device();
  const PerformanceParams p;
  const Estimate e = estimate(g, d, p, Workload{});
  const std::string text = render_estimate_text({g, t, Workload{}, &d, &p, &e}, 2);
  CHECK_THAT(text, ContainsSubstring("small on Test GPU (test-gpu)"));
  CHECK_THAT(text, ContainsSubstring("parameters   2,682"));
  CHECK_THAT(text, ContainsSubstring(": fits"));
  CHECK_THAT(text, ContainsSubstring("Heaviest layers (top 2 of 4"));
  // Lines fit an 80-column terminal.
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start);
    std::size_t width = 0;
    for (char c : line)
      width += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
    INFO(line);
    CHECK(width <= 80);
    start = end + 1;
  }
}

TEST_CASE("report: layers CSV quotes names and writes shapes as AxB", "[report]") {
  const Graph g = parse_model(kModel, "small.json");
  const GraphTotals t = graph_totals(g);
  const std::string csv = render_layers_csv({g, t, Workload{}});
  CHECK_THAT(csv, ContainsSubstring("name,op,output_shape,params,macs,flops,bytes\n"));
  CHECK_THAT(csv, ContainsSubstring("\"conv,1\",conv2d,2x4x8x8,112,13824,"));
  CHECK_THAT(csv, ContainsSubstring("\nflat,flatten,2x256,0,0,0,0\n"));
}

TEST_CASE("report: layers table lists every layer and the totals", "[report]") {
  const Graph g = parse_model(kModel, "small.json");
  const GraphTotals t = graph_totals(g);
  const std::string text = render_layers_text({g, t, Workload{}});
  CHECK_THAT(text, ContainsSubstring("conv,1"));
  CHECK_THAT(text, ContainsSubstring("[2, 10]"));
  CHECK_THAT(text, ContainsSubstring("total: 2,682 params, 18,944 MACs"));
}

TEST_CASE("report: one of a thing is singular, counts are grouped", "[report][words]") {
  // One linear layer: "1 layer," in the bound lines and in `layers`; one device in `hw list`.
  const char* one = R"({"format": "capcalc-model/1", "name": "one",
    "inputs": [{"name": "x", "shape": [1, 512]}],
    "layers": [{"name": "fc", "op": "linear", "out_features": 512}]})";
  const Graph g = parse_model(one, "one.json");
  const GraphTotals t = graph_totals(g);
  const Device d = test_device();
  const PerformanceParams p;
  const Estimate e = estimate(g, d, p, Workload{});
  const ReportInput in{g, t, Workload{}, &d, &p, &e};
  const std::string text = render_estimate_text(in, 0);
  CHECK_THAT(text, ContainsSubstring("    1 layer,  "));
  CHECK(text.find("1 layers") == std::string::npos);
  CHECK_THAT(render_layers_text(in), ContainsSubstring("one: 1 layer, batch 1"));
  CHECK_THAT(render_hardware_text({&d}), ContainsSubstring("\n1 device; dense peaks"));
  const Device second = test_device();
  CHECK_THAT(render_hardware_text({&d, &second}), ContainsSubstring("\n2 devices; dense peaks"));
}

TEST_CASE("report: a language model's context and tokens/s, a MoE's active parameters",
          "[report][words]") {
  // 2 sequences of 1,024 tokens; two experts of which each token uses one.
  const char* lm = R"({"format": "capcalc-model/1", "name": "lm",
    "dims": {"batch": 2, "seq": 1024},
    "inputs": [{"name": "x", "shape": ["batch", "seq", 64]}],
    "layers": [{"name": "fc", "op": "linear", "out_features": 64}]})";
  const Graph g = parse_model(lm, "lm.json");
  GraphTotals t = graph_totals(g);
  const Device d = test_device();
  const PerformanceParams p;
  const Estimate e = estimate(g, d, p, Workload{});
  const std::string text = render_estimate_text({g, t, Workload{}, &d, &p, &e}, 0);
  CHECK_THAT(text, ContainsSubstring("workload     inference, fp32, batch 2, seq 1,024, "));
  // Tokens/s = sequences/s x 1,024: the text prints both, each with 3 significant digits.
  CHECK_THAT(text, ContainsSubstring(fmt::format("throughput   {} tokens/s, {} sequences/s of "
                                                 "1,024 tokens\n",
                                                 format_count(e.throughput_per_s * 1024),
                                                 format_count(e.throughput_per_s))));
  CHECK(text.find("samples/s") == std::string::npos);
  CHECK(text.find("active") == std::string::npos);  // Every parameter is used per token.
  t.active_params = t.params / 2;
  const std::string moe = render_estimate_text({g, t, Workload{}, &d, &p, &e}, 0);
  CHECK_THAT(moe, ContainsSubstring(fmt::format("parameters   {} ({}), {} active per token\n",
                                                format_grouped(t.params),
                                                format_count(static_cast<double>(t.params)),
                                                format_count(static_cast<double>(t.params / 2)))));
  const std::string html = render_report_html({g, t, Workload{}, &d, &p, &e});
  CHECK_THAT(html, ContainsSubstring("<th>context</th><td>seq 1,024</td>"));
  CHECK_THAT(html, ContainsSubstring("active per token"));
  CHECK_THAT(html, ContainsSubstring(" tokens/s ("));
}
