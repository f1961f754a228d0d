// The roofline data against the formulas of Williams, Waterman and Patterson (CACM 2009):
// intensity = FLOPs / bytes, roof = min(peak, intensity × bandwidth), ridge = peak / bandwidth;
// and the SVG and HTML renderings as documents (well-formed, escaped, self-contained).
#include "capcalc/roofline.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "capcalc/model.hpp"
#include "capcalc/report.hpp"

#include "catch.hpp"
#include "test_data.hpp"

using namespace capcalc;

namespace {

constexpr std::int64_t kM = 2048;  // Rows (the batch).
constexpr std::int64_t kK = 4096;  // Input features.
constexpr std::int64_t kN = 4096;  // Output features.

// One big matrix product, a relu and a view.
const char* kMatmulModel = R"({"format": "capcalc-model/1", "name": "matmul",
  "dims": {"batch": 2048},
  "inputs": [{"name": "x", "shape": ["batch", 4096]}],
  "layers": [
    {"name": "mm", "op": "linear", "out_features": 4096, "bias": false},
    {"name": "act", "op": "relu"},
    {"name": "flat", "op": "flatten"}]})";

constexpr double kMatrixPeak = 100e12;
constexpr double kVectorPeak = 25e12;
constexpr double kBandwidth = 1e12;

Device test_device() {
  Device d;
  d.id = "test-gpu";
  d.name = "Test GPU";
  d.dense_peak[static_cast<std::size_t>(Precision::kFp16)] = {kVectorPeak, kMatrixPeak};
  d.dense_peak[static_cast<std::size_t>(Precision::kFp32)] = {10e12, 0};
  d.memory_bytes = 80e9;
  d.memory_bandwidth_bytes_per_s = kBandwidth;
  return d;
}

Workload fp16() {
  Workload w;
  w.precision = Precision::kFp16;
  return w;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

}  // namespace

TEST_CASE("roofline: a big matmul sits at 2MNK / bytes, on the compute roof", "[roofline]") {
  const Graph g = parse_model(kMatmulModel, "matmul.json");
  const Device d = test_device();
  const PerformanceParams p;
  const Estimate e = estimate(g, d, p, fp16());
  const Roofline r = build_roofline(g, d, p, fp16(), e);

  // Bytes at fp16: read X (M×K) and W (K×N), write Y (M×N), 2 bytes each.
  const double flops = 2.0 * kM * kN * kK;
  const double bytes = 2.0 * (kM * kK + kK * kN + kM * kN);
  REQUIRE(r.points.size() == 2);
  const RooflinePoint& mm = r.points[0];
  CHECK(mm.name == "mm");
  CHECK(mm.flops == Approx(flops));
  CHECK(mm.bytes == Approx(bytes));
  CHECK(mm.intensity_flops_per_byte == Approx(flops / bytes));
  CHECK(mm.bound == Bound::kCompute);
  // Full tiles (4096 is a multiple of 128 and 64): the matrix peak times its efficiency.
  CHECK(mm.attained_flops_per_s == Approx(kMatrixPeak * p.matrix_efficiency));
  CHECK(mm.time_s == Approx(e.layers[0].time_s));

  // relu: one FLOP per element, reads and writes M×N fp16 values; memory-bound.
  const RooflinePoint& act = r.points[1];
  CHECK(act.intensity_flops_per_byte == Approx(1.0 / 4));
  CHECK(act.bound == Bound::kMemory);
  CHECK(act.attained_flops_per_s == Approx(0.25 * kBandwidth * p.memory_efficiency));

  CHECK(r.skipped_layers == 1);  // flatten is a view.
  CHECK(r.roof_flops_per_s == Approx(kMatrixPeak));
  CHECK(r.ridge_flops_per_byte() == Approx(kMatrixPeak / kBandwidth));
  CHECK(r.achievable_bandwidth_bytes_per_s == Approx(kBandwidth * p.memory_efficiency));
  CHECK(r.attainable_flops_per_s(1) == Approx(kBandwidth));
  CHECK(r.attainable_flops_per_s(1e6) == Approx(kMatrixPeak));
}

// Causal attention counted full under a FlashAttention-style runtime: the kernels skip the
// masked half, so the point carries the FLOPs they run and sits at the roof, not twice above it.
TEST_CASE("roofline: a runtime's skipped attention pairs are not plotted as work", "[roofline]") {
  const Graph g = parse_model(R"({"format": "capcalc-model/1", "name": "a",
    "inputs": [{"name": "x", "shape": [8, 4096, 1024]}],
    "layers": [{"name": "attn", "op": "attention", "heads": 8, "causal": true, "bias": false}]})",
                              "a.json");
  const Device d = test_device();
  const PerformanceParams p;
  Workload w = fp16();
  Runtime flash;
  flash.flash_attention = true;
  w.runtime = flash;
  const Estimate e = estimate(g, d, p, w);
  const Roofline r = build_roofline(g, d, p, w, e);
  REQUIRE(r.points.size() == 1);
  const RooflinePoint& attn = r.points[0];
  const LayerCounts& c = g.layers[0].counts;
  CHECK(attn.flops ==
        Approx(static_cast<double>(c.flops() - 2 * c.masked_score_macs - c.masked_other_flops)));
  CHECK(attn.attained_flops_per_s <= r.attainable_flops_per_s(attn.intensity_flops_per_byte));
  // Counted, it would sit above the roof: the skipped half is half the layer's products.
  CHECK(static_cast<double>(c.flops()) / attn.time_s > kMatrixPeak * p.matrix_efficiency);
}

TEST_CASE("roofline: one ceiling per peak, highest first, the workload's marked", "[roofline]") {
  const Graph g = parse_model(kMatmulModel, "matmul.json");
  const Device d = test_device();
  const PerformanceParams p;
  const Roofline r = build_roofline(g, d, p, fp16(), estimate(g, d, p, fp16()));
  REQUIRE(r.ceilings.size() == 3);  // fp16 matrix, fp16 vector, fp32 vector.
  CHECK(r.ceilings[0].flops_per_s == kMatrixPeak);
  CHECK(r.ceilings[0].matrix_units);
  CHECK(r.ceilings[0].workload);
  CHECK(r.ceilings[1].flops_per_s == kVectorPeak);
  CHECK(r.ceilings[1].workload);
  CHECK(r.ceilings[2].precision == Precision::kFp32);
  CHECK_FALSE(r.ceilings[2].workload);
}

TEST_CASE("roofline: no layer of the zoo is above the roof", "[roofline]") {
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  const Device& a100 = table.get("A100");
  const PerformanceParams p = table.performance_for(a100);
  for (const char* model : {"resnet50.json", "bert_base.json", "mobilenet_v2.json"}) {
    const Graph g = load_model(test::data_path(std::string("models/") + model));
    Workload inference = fp16();
    Workload training = fp16();
    training.mode = Mode::kTraining;
    Workload sparse = fp16();
    sparse.sparsity = Sparsity::k2of4;  // The roof rises by the 2:4 speedup.
    Workload compiled = fp16();
    compiled.profile = Profile::kCompiled;
    Workload int8;
    int8.precision = Precision::kInt8;
    for (const Workload& w : {inference, training, sparse, compiled, int8}) {
      const Estimate e = estimate(g, a100, p, w);
      const Roofline r = build_roofline(g, a100, p, w, e);
      CHECK(r.points.size() + r.skipped_layers == g.layers.size());
      for (const RooflinePoint& point : r.points) {
        INFO(model << " " << point.name);
        CHECK(point.attained_flops_per_s <=
              r.attainable_flops_per_s(point.intensity_flops_per_byte) * (1 + 1e-9));
      }
    }
  }
}

TEST_CASE("roofline: the SVG is a standalone SVG 1.1 document", "[roofline][svg]") {
  const Graph g = parse_model(kMatmulModel, "matmul.json");
  const Device d = test_device();
  const PerformanceParams p;
  const Roofline r = build_roofline(g, d, p, fp16(), estimate(g, d, p, fp16()));
  const std::string svg = render_roofline_svg(r);
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\"", 0) == 0);
  CHECK_THAT(svg, ContainsSubstring("viewBox=\"0 0 1000 640\""));
  CHECK_THAT(svg, ContainsSubstring("width=\"1000\" height=\"640\""));
  CHECK(svg.size() > 20);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  CHECK_THAT(svg, ContainsSubstring("arithmetic intensity (FLOP/byte)"));
  CHECK_THAT(svg, ContainsSubstring("attained (TFLOP/s)"));
  CHECK_THAT(svg, ContainsSubstring("matmul on Test GPU"));
  CHECK_THAT(svg, ContainsSubstring("fp16, batch 2048, inference"));
  CHECK_THAT(svg, ContainsSubstring("1 layer without FLOPs or bytes"));
  CHECK_THAT(svg, ContainsSubstring(">mm</text>"));  // The heaviest layer is named.
  CHECK(count(svg, "<circle") == 2 + 3);             // Two layers and three legend dots.
  CHECK(count(svg, "<text") == count(svg, "</text>"));
  CHECK(svg.find("<script") == std::string::npos);
  CHECK(svg.find("href") == std::string::npos);
  CHECK(svg.find("url(") == std::string::npos);
  // The only URL is the SVG namespace.
  CHECK(count(svg, "http") == 1);

  RooflineSvgOptions inline_svg;
  inline_svg.standalone = false;
  inline_svg.labels = 0;
  const std::string embedded = render_roofline_svg(r, inline_svg);
  CHECK(embedded.find("http") == std::string::npos);
  CHECK(embedded.find(">mm</text>") == std::string::npos);
}

TEST_CASE("roofline: layer names are XML-escaped", "[roofline][svg]") {
  const char* model = R"({"format": "capcalc-model/1", "name": "x<y>",
    "inputs": [{"name": "x", "shape": [64, 512]}],
    "layers": [{"name": "a&b<c>\"d'", "op": "linear", "out_features": 512}]})";
  const Graph g = parse_model(model, "escape.json");
  Device d = test_device();
  d.name = "GPU & \"co\"";
  const PerformanceParams p;
  const Roofline r = build_roofline(g, d, p, fp16(), estimate(g, d, p, fp16()));
  const std::string svg = render_roofline_svg(r);
  CHECK_THAT(svg, ContainsSubstring("a&amp;b&lt;c&gt;&quot;d&#39;"));
  CHECK_THAT(svg, ContainsSubstring("x&lt;y&gt; on GPU &amp; &quot;co&quot;"));
  CHECK(svg.find("a&b") == std::string::npos);
  CHECK(svg.find("<c>") == std::string::npos);
  CHECK(svg.find("x<y>") == std::string::npos);
}

TEST_CASE("report: the HTML page is self-contained and escaped", "[report][html]") {
  const char* model = R"({"format": "capcalc-model/1", "name": "net<1>",
    "inputs": [{"name": "x", "shape": [64, 512]}],
    "layers": [{"name": "a&b<c>", "op": "linear", "out_features": 512},
               {"name": "act", "op": "relu"}]})";
  const Graph g = parse_model(model, "net.json");
  const GraphTotals t = graph_totals(g);
  const Device d = test_device();  // No sources: the page must hold no URL at all.
  const PerformanceParams p;
  const Estimate e = estimate(g, d, p, fp16());
  const std::string html = render_report_html({g, t, fp16(), &d, &p, &e});
  CHECK(html.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0) == 0);
  CHECK_THAT(html, ContainsSubstring("<meta charset=\"utf-8\">"));
  CHECK_THAT(html, ContainsSubstring("<style>"));
  CHECK_THAT(html, ContainsSubstring("<svg width=\"1000\""));
  CHECK_THAT(html, ContainsSubstring("1 MAC = 2 FLOPs"));
  CHECK_THAT(html, ContainsSubstring("<td>a&amp;b&lt;c&gt;</td>"));
  CHECK_THAT(html, ContainsSubstring("net&lt;1&gt; on Test GPU"));
  CHECK(html.find("a&b") == std::string::npos);
  CHECK(html.find("<c>") == std::string::npos);
  CHECK(html.find("http") == std::string::npos);
  for (const char* external : {"<script", "@import", "url(", "<link", "<img", "src=", "href="}) {
    INFO(external);
    CHECK(html.find(external) == std::string::npos);
  }
  CHECK(html.substr(html.size() - 8) == "</html>\n");
}

TEST_CASE("report: the HTML page has the summary, layers, roofline and memory", "[report][html]") {
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  const Device& a100 = table.get("A100");
  const PerformanceParams p = table.performance_for(a100);
  const Graph g = load_model(test::data_path("models/resnet50.json"));
  const GraphTotals t = graph_totals(g);
  Workload training;
  training.mode = Mode::kTraining;
  const Estimate e = estimate(g, a100, p, training);
  const std::string html = render_report_html({g, t, training, &a100, &p, &e});
  for (const char* part :
       {"<h2>Summary</h2>", "<h2>Roofline</h2>", "<h2>Memory</h2>", "<h2>Layers</h2>",
        "<h2>Device</h2>", "25,557,032", "step time", "gradients", "optimizer state (adam)",
        "layer1.0.conv1", "NVIDIA A100"}) {
    INFO(part);
    CHECK_THAT(html, ContainsSubstring(part));
  }
  // Parallel runs say what their communication costs: 16 A100s are two DGX nodes, so the
  // gradient all-reduce crosses InfiniBand; 2 stages send over it too.
  Workload parallel = training;
  parallel.devices = 16;
  parallel.pipeline_parallel = 2;
  parallel.micro_batches = 4;
  const Estimate pe = estimate(g, a100, p, parallel);
  const std::string parallel_html = render_report_html({g, t, parallel, &a100, &p, &pe});
  for (const char* part : {"<th>pipeline</th><td>2 stages, 1F1B", "<th>stage sends</th><td>",
                           "<th>grad sync</th><td>", "over InfiniBand HDR"}) {
    INFO(part);
    CHECK_THAT(parallel_html, ContainsSubstring(part));
  }
  // Sources are printed as text, never fetched or linked.
  CHECK_THAT(html, ContainsSubstring("<li>https://"));
  for (const char* external : {"<script", "@import", "url(", "<link", "<img", "src=", "href="}) {
    INFO(external);
    CHECK(html.find(external) == std::string::npos);
  }
}

namespace {

// The box a <text> element covers, estimated from its length and font size: 0.6 em per
// character (DejaVu Sans averages about that; capcalc places labels at 0.64 em), ascent 0.8 em
// above the baseline and descent 0.2 em below; text-anchor shifts it.
struct TextBox {
  double x0, y0, x1, y1;
  std::string text;
};

std::string attribute(const std::string& tag, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const std::size_t at = tag.find(key);
  if (at == std::string::npos) return "";
  const std::size_t start = at + key.size();
  return tag.substr(start, tag.find('"', start) - start);
}

std::size_t characters(const std::string& escaped) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < escaped.size(); ++i) {
    if (escaped[i] == '&') i = escaped.find(';', i);  // One character per entity.
    if ((static_cast<unsigned char>(escaped[i]) & 0xC0) != 0x80) ++n;
  }
  return n;
}

// Every unrotated <text> of the SVG once (each label is drawn twice: its halo and itself).
std::vector<TextBox> text_boxes(const std::string& svg) {
  std::vector<TextBox> boxes;
  for (std::size_t at = svg.find("<text "); at != std::string::npos;
       at = svg.find("<text ", at + 1)) {
    const std::size_t close = svg.find('>', at);
    const std::string tag = svg.substr(at, close - at);
    const std::size_t end = svg.find("</text>", close);
    const std::string text = svg.substr(close + 1, end - close - 1);
    if (!attribute(tag, "transform").empty()) continue;  // Rotated: the y title, the slope.
    const std::string size = attribute(tag, "font-size");
    const double em = size.empty() ? 11 : std::stod(size);
    const double x = std::stod(attribute(tag, "x"));
    const double y = std::stod(attribute(tag, "y"));
    const double width = 0.6 * em * static_cast<double>(characters(text));
    const std::string anchor = attribute(tag, "text-anchor");
    const double x0 = anchor == "end" ? x - width : anchor == "middle" ? x - width / 2 : x;
    TextBox box{x0, y - 0.8 * em, x0 + width, y + 0.2 * em, text};
    const bool seen = std::any_of(boxes.begin(), boxes.end(), [&](const TextBox& b) {
      return b.text == box.text && b.x0 == box.x0 && b.y0 == box.y0;
    });
    if (!seen) boxes.push_back(box);
  }
  return boxes;
}

// Pairs of text boxes that intersect, as "a | b" for the failure message.
std::vector<std::string> overlaps(const std::vector<TextBox>& boxes) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    for (std::size_t j = i + 1; j < boxes.size(); ++j) {
      const TextBox& a = boxes[i];
      const TextBox& b = boxes[j];
      if (a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1) {
        out.push_back(a.text + " | " + b.text);
      }
    }
  }
  return out;
}

Graph zoo_graph(const std::string& name, std::int64_t seq = 0, std::int64_t cached = 0) {
  ModelOptions options;
  if (seq > 0) options.dims["seq"] = seq;
  options.counting.kv_cache_length = cached;
  return load_model(test::data_path("models/" + name + ".json"), options);
}

// LLM serving of `name` as `capcalc roofline --prompt-tokens P --output-tokens O` draws it.
Roofline serving_roofline(const std::string& name, const Device& device, const PerformanceParams& p,
                          const Workload& w, const ServingRequest& request,
                          ServingEstimate* out = nullptr) {
  const ServingGraphBuilder build = [&](std::int64_t seq, std::int64_t cached) {
    return zoo_graph(name, seq, cached);
  };
  const ServingEstimate s = estimate_serving(build, device, p, w, request);
  Graph decode = build(1, s.mean_context);
  drop_prefill_only_layers(decode);
  if (out != nullptr) *out = s;
  return build_serving_roofline(build(request.prompt_tokens, 0), decode, device, p, w, request, s);
}

}  // namespace

TEST_CASE("roofline: test's text boxes catch labels that overlap", "[roofline][svg]") {
  const std::string svg =
      "<text x=\"100\" y=\"50\">layers.N.mlp x32</text>"
      "<text x=\"100\" y=\"50\">layers.N.mlp x32</text>"  // A halo: the same label again.
      "<text x=\"150\" y=\"55\" text-anchor=\"end\">lm_head</text>"
      "<text x=\"400\" y=\"50\" font-size=\"16\">far away</text>";
  const std::vector<TextBox> boxes = text_boxes(svg);
  REQUIRE(boxes.size() == 3);
  // 16 characters x 0.6 x 11 px = 105.6 px from x = 100; "lm_head" ends at 150.
  CHECK(boxes[0].x1 == Approx(100 + 16 * 0.6 * 11));
  CHECK(boxes[1].x0 == Approx(150 - 7 * 0.6 * 11));
  CHECK(overlaps(boxes) == std::vector<std::string>{"layers.N.mlp x32 | lm_head"});
}

TEST_CASE("roofline: no two labels overlap on models with many layers", "[roofline][svg]") {
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  const Device& h100 = table.get("h100");
  const PerformanceParams p = table.performance_for(h100);
  Workload bf16;
  bf16.precision = Precision::kBf16;
  RooflineSvgOptions many;
  many.labels = 60;  // More than fit: the placement must leave some out, not stack them.
  std::vector<std::pair<std::string, std::string>> svgs;
  for (const char* name : {"llama2_7b", "gpt2", "resnet50", "bert_base"}) {
    const Graph g = zoo_graph(name);
    svgs.emplace_back(
        name,
        render_roofline_svg(build_roofline(g, h100, p, bf16, estimate(g, h100, p, bf16)), many));
  }
  svgs.emplace_back(
      "llama2_7b serving",
      render_roofline_svg(serving_roofline("llama2_7b", h100, p, bf16, {512, 128}), many));
  for (const auto& [name, svg] : svgs) {
    INFO(name);
    const std::vector<TextBox> boxes = text_boxes(svg);
    CHECK(boxes.size() > 30);  // Title, ticks, ceilings, legend, notes and layer labels.
    CHECK(overlaps(boxes).empty());
    for (const std::string& pair : overlaps(boxes))
      INFO(pair);
  }
  // Llama's 32 identical blocks share a label with their count instead of stacking 32.
  const std::string& llama = svgs[0].second;
  CHECK_THAT(llama, ContainsSubstring(">layers.N.mlp.down_proj x32</text>"));
  CHECK(llama.find(">layers.0.mlp.down_proj</text>") == std::string::npos);
  CHECK(llama.find(">layers.1.mlp.down_proj</text>") == std::string::npos);
}

TEST_CASE("roofline: layer names lose their numbering only between separators", "[roofline]") {
  const char* model = R"({"format": "capcalc-model/1", "name": "two",
    "inputs": [{"name": "x", "shape": [64, 512]}],
    "layers": [{"name": "blocks.0.fc1", "op": "linear", "out_features": 512},
               {"name": "blocks.1.fc1", "op": "linear", "out_features": 512}]})";
  const Graph g = parse_model(model, "two.json");
  const Device d = test_device();
  const PerformanceParams p;
  const std::string svg =
      render_roofline_svg(build_roofline(g, d, p, fp16(), estimate(g, d, p, fp16())));
  // Two layers on one spot: one label, "fc1" keeps its digit.
  CHECK_THAT(svg, ContainsSubstring(">blocks.N.fc1 x2</text>"));
  CHECK(svg.find(">blocks.0.fc1</text>") == std::string::npos);
}

TEST_CASE("roofline: serving draws the prefill's and the decode step's layers and passes",
          "[roofline][serving]") {
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  const Device& h100 = table.get("h100");
  const PerformanceParams p = table.performance_for(h100);
  Workload bf16;
  bf16.precision = Precision::kBf16;
  ServingEstimate s;
  const Roofline r = serving_roofline("gpt2", h100, p, bf16, {512, 128}, &s);
  REQUIRE(r.serving);
  CHECK(r.mean_context == 512 + (128 - 1) / 2);  // estimate_serving's mean decode step.
  REQUIRE(r.passes.size() == 2);
  // Each pass whole: its FLOPs over its bytes and over its latency.
  CHECK(r.passes[0].name == "prefill");
  CHECK(r.passes[0].intensity_flops_per_byte == Approx(s.prefill.flops / s.prefill.bytes));
  CHECK(r.passes[0].attained_flops_per_s == Approx(s.prefill.flops / s.prefill.latency_s));
  CHECK(r.passes[1].name == "decode step");
  CHECK(r.passes[1].intensity_flops_per_byte == Approx(s.decode.flops / s.decode.bytes));
  CHECK(r.passes[1].attained_flops_per_s == Approx(s.decode.flops / s.decode.latency_s));
  // One token per sequence reads every weight: far less intensity than a 512-token prompt.
  CHECK(r.passes[1].intensity_flops_per_byte < r.passes[0].intensity_flops_per_byte / 10);
  std::size_t prefill = 0;
  std::size_t decode = 0;
  for (const RooflinePoint& point : r.points) {
    prefill += point.phase == RooflinePhase::kPrefill ? 1 : 0;
    decode += point.phase == RooflinePhase::kDecode ? 1 : 0;
  }
  CHECK(prefill > 10);
  CHECK(decode > 10);
  CHECK(prefill + decode == r.points.size());
  for (const RooflinePoint& point : r.passes) {
    INFO(point.name);
    CHECK(point.attained_flops_per_s <=
          r.attainable_flops_per_s(point.intensity_flops_per_byte) * (1 + 1e-9));
  }
  const std::string svg = render_roofline_svg(r);
  // Decode layers are squares (and one in the legend); the passes are rings (and one legend).
  CHECK(count(svg, "<rect x=") == decode + 1 + 2);  // + the white background and the frame.
  CHECK(count(svg, "fill=\"none\" stroke=\"#222222\"") == 2 + 1);
  CHECK_THAT(svg, ContainsSubstring("prefill of 512 prompt tokens (circles), decode step at 575 "
                                    "cached tokens (squares)"));
  CHECK_THAT(svg, ContainsSubstring("font-weight=\"bold\">prefill</text>"));
  CHECK_THAT(svg, ContainsSubstring("font-weight=\"bold\">decode step</text>"));
}
