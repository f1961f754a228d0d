// ONNX models written as text: ONNX's textual syntax (.onnxtxt) and protobuf's text format
// (.textproto, .pbtxt) import exactly as the same model in binary protobuf does.
#include "import/onnx_text.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <google/protobuf/text_format.h>
#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "capcalc/error.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/model.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/report.hpp"

#include "catch.hpp"
#include "onnx_builder.hpp"

namespace {

using capcalc::Graph;
using capcalc::ModelOptions;
using capcalc::OnnxTextSyntax;
using capcalc::test::OnnxModel;

// A small CNN with its weights as initializers (= {0}: capcalc reads their dims, never their
// values), as a user writes it or onnx.printer prints it.
constexpr const char* kSmallCnnText = R"(<
   ir_version: 8,
   opset_import: ["" : 17],
   producer_name: "hand"
>
small_cnn (float[batch,3,32,32] x) => (float[batch,10] y)
<float[16,3,3,3] conv_w = {0}, float[16] conv_b = {0}, float[10,16] fc_w = {0}, float[10] fc_b = {0}>
{
   # 3x3 convolution, padding 1, then ReLU and a 2x2 max pool.
   c = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x, conv_w, conv_b)
   r = Relu (c)
   p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (r)
   g = GlobalAveragePool (p)
   f = Flatten (g)
   y = Gemm <transB = 1> (f, fc_w, fc_b)
}
)";

// The same network built with the protobuf API.
OnnxModel small_cnn_binary() {
  OnnxModel m("small_cnn");
  m.input("x", {std::string("batch"), std::int64_t{3}, std::int64_t{32}, std::int64_t{32}});
  m.weight("conv_w", {16, 3, 3, 3});
  m.weight("conv_b", {16});
  auto& conv = m.node("Conv", {"x", "conv_w", "conv_b"}, {"c"});
  OnnxModel::attr(conv, "kernel_shape", std::vector<std::int64_t>{3, 3});
  OnnxModel::attr(conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"});
  auto& pool = m.node("MaxPool", {"r"}, {"p"});
  OnnxModel::attr(pool, "kernel_shape", std::vector<std::int64_t>{2, 2});
  OnnxModel::attr(pool, "strides", std::vector<std::int64_t>{2, 2});
  m.node("GlobalAveragePool", {"p"}, {"g"});
  m.node("Flatten", {"g"}, {"f"});
  m.weight("fc_w", {10, 16});
  m.weight("fc_b", {10});
  auto& fc = m.node("Gemm", {"f", "fc_w", "fc_b"}, {"y"});
  OnnxModel::attr(fc, "transB", std::int64_t{1});
  m.output("y");
  return m;
}

void check_same_counts(const Graph& a, const Graph& b) {
  REQUIRE(a.layers.size() == b.layers.size());
  CHECK(a.unknown_ops.empty());
  for (std::size_t i = 0; i < a.layers.size(); ++i) {
    INFO("layer " << i << " " << a.layers[i].name);
    CHECK(a.layers[i].op == b.layers[i].op);
    CHECK(a.layers[i].output == b.layers[i].output);
    CHECK(a.layers[i].counts.params == b.layers[i].counts.params);
    CHECK(a.layers[i].counts.macs == b.layers[i].counts.macs);
    CHECK(a.layers[i].counts.other_flops == b.layers[i].counts.other_flops);
    CHECK(a.layers[i].counts.moved_elements() == b.layers[i].counts.moved_elements());
  }
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = OnnxModel::temp_path(name) + "txt";  // .onnx -> .onnxtxt
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

}  // namespace

TEST_CASE("onnx text: the textual syntax imports as the binary model", "[onnx]") {
  ModelOptions options;
  options.dims["batch"] = 2;
  const Graph text =
      capcalc::parse_onnx_text_model(kSmallCnnText, OnnxTextSyntax::onnx, "cnn.onnxtxt", options);
  const Graph binary = small_cnn_binary().load("small_cnn_text_ref", options);
  check_same_counts(text, binary);
  // By formula: conv 16·3·3·3 + 16, fc 16·10 + 10; MACs 16·32·32·27 + 160 per sample.
  const auto totals = capcalc::graph_totals(text);
  CHECK(totals.params == 16 * 27 + 16 + 160 + 10);
  CHECK(totals.macs == 2 * (16 * 32 * 32 * 27 + 160));
  CHECK(text.layers.back().output == capcalc::Shape{2, 10});

  // By extension through load_model, as the CLI reads it.
  const std::string path = write_temp("small_cnn_text", kSmallCnnText);
  REQUIRE(path.size() > 8);
  CHECK(path.substr(path.size() - 8) == ".onnxtxt");
  check_same_counts(capcalc::load_model(path, options), binary);
}

TEST_CASE("onnx text: protobuf's text format imports as the binary model", "[onnx]") {
  ModelOptions options;
  options.dims["batch"] = 3;
  OnnxModel binary = small_cnn_binary();
  std::string textproto;
  REQUIRE(google::protobuf::TextFormat::PrintToString(binary.model(), &textproto));
  const Graph text =
      capcalc::parse_onnx_text_model(textproto, OnnxTextSyntax::protobuf, "cnn.textproto", options);
  check_same_counts(text, binary.load("small_cnn_textproto_ref", options));

  // Written by hand: one Gemm from 8 to 4 features.
  const std::string by_hand = R"(
    ir_version: 8
    opset_import { domain: "" version: 17 }
    graph {
      name: "fc"
      input { name: "x" type { tensor_type { elem_type: 1 shape {
        dim { dim_param: "batch" } dim { dim_value: 8 } } } } }
      initializer { name: "w" dims: 4 dims: 8 data_type: 1 }
      node { op_type: "Gemm" input: "x" input: "w" output: "y"
             attribute { name: "transB" i: 1 type: INT } }
      output { name: "y" type { tensor_type { elem_type: 1 } } }
    })";
  const Graph fc =
      capcalc::parse_onnx_text_model(by_hand, OnnxTextSyntax::protobuf, "fc.pbtxt", options);
  REQUIRE(fc.layers.size() == 1);
  CHECK(fc.layers[0].counts.params == 32);
  CHECK(fc.layers[0].counts.macs == 3 * 32);
}

TEST_CASE("onnx text: syntax errors name the file, line and column", "[onnx]") {
  const ModelOptions options;
  const std::string unclosed =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[4] x) => (float[4] y) {\n"
      "   y = Relu (x\n"
      "}\n";
  REQUIRE_THROWS_WITH(
      capcalc::parse_onnx_text_model(unclosed, OnnxTextSyntax::onnx, "bad.onnxtxt", options),
      Catch::StartsWith("bad.onnxtxt:4:") && Catch::Contains("ONNX text: Expected character )"));

  const std::string bad_field = "ir_version: 8\ngraph {\n  nodes { op_type: \"Relu\" }\n}\n";
  REQUIRE_THROWS_WITH(
      capcalc::parse_onnx_text_model(bad_field, OnnxTextSyntax::protobuf, "bad.textproto", options),
      Catch::StartsWith("bad.textproto:3:9: protobuf text format: ") && Catch::Contains("nodes"));

  // Binary protobuf given a text extension.
  const std::string binary = small_cnn_binary().bytes();
  REQUIRE_THROWS_WITH(
      capcalc::parse_onnx_text_model(binary, OnnxTextSyntax::onnx, "bin.onnxtxt", options),
      Catch::StartsWith("bin.onnxtxt"));

  // Text that parses but holds no graph is the importer's error, not a crash.
  REQUIRE_THROWS_WITH(
      capcalc::parse_onnx_text_model("", OnnxTextSyntax::protobuf, "empty.pbtxt", options),
      Catch::StartsWith("empty.pbtxt: not an ONNX model"));
}

TEST_CASE("onnx text: every truncation of a model is an error or a graph, never a crash",
          "[onnx]") {
  ModelOptions options;
  options.dims["batch"] = 1;
  const std::string text = kSmallCnnText;
  std::size_t errors = 0;
  for (std::size_t n = 0; n < text.size(); ++n) {
    try {
      (void)capcalc::parse_onnx_text_model(text.substr(0, n), OnnxTextSyntax::onnx, "cut.onnxtxt",
                                           options);
    } catch (const capcalc::Error& e) {
      ++errors;
      CHECK(std::string(e.what()).rfind("cut.onnxtxt", 0) == 0);
    }
  }
  // Only a cut at the very end (the closing brace is whole) parses.
  CHECK(errors >= text.size() - 2);
}

TEST_CASE("onnx text: node names as ONNX 1.14+ prints them are kept", "[onnx]") {
  // `[name]` before a statement is newer syntax than Debian's ONNX parser (1.12) reads; typed
  // attributes (`axis: int = 1`) it reads. Names inside subgraphs follow in text order.
  const std::string printed = R"(<ir_version: 10, opset_import: ["" : 18]>
main_graph (float[2,8] x, bool c) => (float[2,8] y)
   <float[8,8] w = {0}>
{
   [node_matmul] h = MatMul (x, w)
   [node_if] y = If (c) <then_branch: graph = then_body () => (float[2,8] t) {
         [node_relu] t = Relu (h)
      }, else_branch: graph = else_body () => (float[2,8] e) {
         [node_softmax] e = Softmax <axis: int = 1> (h)
      }>
}
)";
  const Graph g = capcalc::parse_onnx_text_model(printed, OnnxTextSyntax::onnx, "named.onnxtxt",
                                                 ModelOptions{});
  REQUIRE(g.layers.size() == 2);  // The MatMul and the costlier branch (Softmax).
  CHECK(g.layers[0].name == "node_matmul");
  CHECK(g.layers[0].counts.params == 64);
  CHECK(g.layers[0].counts.macs == 2 * 64);
  CHECK(g.layers[1].name == "node_softmax");

  // A text with some statements named and some not keeps the importer's default names
  // rather than shifting names onto the wrong nodes.
  const std::string partly = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
   [first] a = Relu (x)
   y = Sigmoid (a)
}
)";
  const Graph p = capcalc::parse_onnx_text_model(partly, OnnxTextSyntax::onnx, "partly.onnxtxt",
                                                 ModelOptions{});
  REQUIRE(p.layers.size() == 2);
  CHECK(p.layers[0].name != "first");
  CHECK(p.layers[1].name != "first");
  // A bracketed list at the start of a line is not a name.
  const std::string list_line = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2,4,4] x) => (float[1,2,2,2] y) {
   y = MaxPool <kernel_shape =
      [2, 2], strides = [2, 2]> (x)
}
)";
  const Graph l = capcalc::parse_onnx_text_model(list_line, OnnxTextSyntax::onnx, "list.onnxtxt",
                                                 ModelOptions{});
  REQUIRE(l.layers.size() == 1);
  CHECK(l.layers[0].output == capcalc::Shape{1, 2, 2, 2});
}

TEST_CASE("onnx text: quoted names as ONNX 1.16+ prints an exported model's are kept", "[onnx]") {
  // Exporters name values "/encoder/MatMul_output_0", "onnx::MatMul_42", "input.1": the printer
  // quotes them, and Debian's parser (1.12) reads identifiers only. String values (the
  // header's, attributes', an Einsum equation with its "->") stay strings; a weight declared
  // in the value-info list without a value (a printed model with its weights stripped, as
  // Loam writes GPT-2) is a weight.
  const std::string printed = R"(<ir_version: 8, opset_import: ["" : 17], producer_name: "pytorch",
  doc_string: "a > and a {">
"main graph" (float[batch, 16, 8] "input.1") => (float[batch, 16, 8] "/out/Add_output_0",
    float[batch, "seq + 1", 8] "present.0")
<float[8, 8] "encoder.w.weight", float[8] "encoder.b", float[1, 1, 8] "onnx::Add_7" = {0}>
{
   # a "comment" with quotes: ( [ <
   "/enc/MatMul_output_0" = Einsum <equation = "bij,jk->bik"> ("input.1", "encoder.w.weight")
   "/enc/Add_output_0" = Add ("/enc/MatMul_output_0", "encoder.b")
   pads = Constant <value = int64[6] {0, 0, 0, 0, 0, 0}> ()
   "/enc/Pad_output_0" = Pad <mode = "reflect"> ("/enc/Add_output_0", pads)
   "present.0" = Concat <axis = 1> ("/enc/Pad_output_0", "/enc/Add_output_0")
   "/out/Add_output_0" = Add ("/enc/Add_output_0", "onnx::Add_7")
}
)";
  ModelOptions options;
  options.dims["batch"] = 2;
  const Graph g =
      capcalc::parse_onnx_text_model(printed, OnnxTextSyntax::onnx, "quoted.onnxtxt", options);
  CHECK(g.name == "main graph");
  CHECK(g.description == "a > and a {");
  REQUIRE(g.inputs.size() == 1);
  CHECK(g.inputs[0].name == "input.1");
  CHECK(g.inputs[0].shape == capcalc::Shape{2, 16, 8});
  // The Einsum reads the declared weight: 8x8 params, 2*16*8*8 MACs; the bias adds 8 and the
  // last Add's (given a value) 8 more.
  std::int64_t params = 0;
  std::int64_t macs = 0;
  for (const auto& layer : g.layers) {
    params += layer.counts.params;
    macs += layer.counts.macs;
  }
  CHECK(params == 64 + 8 + 8);
  CHECK(macs == 2 * 16 * 8 * 8);
  bool concat_seen = false;
  for (const auto& layer : g.layers) {
    if (layer.op != "concat") continue;
    concat_seen = true;
    CHECK(layer.output == capcalc::Shape{2, 32, 8});  // Not the declared "seq + 1".
  }
  CHECK(concat_seen);
  // A quoted name left open is a syntax error at its place, not a crash.
  const std::string unclosed =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[4] \"x) => (float[4] y) { y = Relu (x) }\n";
  CHECK_THROWS_WITH(
      capcalc::parse_onnx_text_model(unclosed, OnnxTextSyntax::onnx, "open.onnxtxt", options),
      Catch::StartsWith("open.onnxtxt:"));
}

TEST_CASE("onnx text: the placeholder prefix of quoted names is found in one pass",
          "[onnx][limits]") {
  // The placeholders start "__q", with one 'q' more than any run the text has after "__": a
  // comment of 1,000,000 'q's took a search of the text per 'q' (quadratic) to step past.
  const std::string text = "<ir_version: 8, opset_import: [\"\" : 17]>\n# __" +
                           std::string(1'000'000, 'q') +
                           "\ng (float[4] \"in.1\") => (float[4] y) {\n   y = Relu (\"in.1\")\n}\n";
  const auto start = std::chrono::steady_clock::now();
  const Graph g =
      capcalc::parse_onnx_text_model(text, OnnxTextSyntax::onnx, "q.onnxtxt", ModelOptions{});
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  REQUIRE(g.inputs.size() == 1);
  CHECK(g.inputs[0].name == "in.1");
}

TEST_CASE("onnx text: a whole number for a float attribute is a float", "[onnx]") {
  // Printers write 1.0 as `1`, which the textual syntax reads as an int: GPT-2's printed export
  // has `Gemm <alpha = 1, beta = 1>`, and ONNX's checks refuse an int alpha.
  const std::string printed = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[4, 8] x) => (float[4, 16] y, float[3] c)
<float[8, 16] w = {0}, float[16] b = {0}>
{
   y = Gemm <alpha = 1, beta = 1> (x, w, b)
   c = Constant <value_floats = [1, 2, 3]> ()
}
)";
  const Graph g =
      capcalc::parse_onnx_text_model(printed, OnnxTextSyntax::onnx, "whole.onnxtxt", {});
  REQUIRE(!g.layers.empty());
  CHECK(g.layers[0].counts.params == 8 * 16 + 16);
  CHECK(g.layers[0].counts.macs == 4 * 8 * 16);
  // An int attribute stays an int, and a real type mismatch is still refused.
  const std::string wrong = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[4, 8] x) => (float[4, 8] y) { y = Softmax <axis = "last"> (x) }
)";
  CHECK_THROWS_WITH(
      capcalc::parse_onnx_text_model(wrong, OnnxTextSyntax::onnx, "wrong.onnxtxt", {}),
      Catch::Contains("wrong.onnxtxt") && Catch::Contains("Mismatched attribute type"));
}

namespace {

// A round fp32-only GPU for the estimates below: 10 TFLOP/s vector, 1 GB at 100 GB/s.
capcalc::Device small_gpu() {
  capcalc::Device device;
  device.id = "test-gpu";
  device.name = "Test GPU";
  device.dense_peak[static_cast<std::size_t>(capcalc::Precision::kFp32)] = {10e12, 0};
  device.memory_bytes = 1e9;
  device.memory_bandwidth_bytes_per_s = 1e11;
  return device;
}

// GPT-2 as torch.onnx.export of Hugging Face's GPT2LMHeadModel prints it (ONNX 1.16+ printer):
// quoted path-like names, every reshape sized by Shape -> Gather -> Unsqueeze -> Concat, Conv1D
// as a 2-D Gemm <alpha = 1, beta = 1>, q/k/v from one Split, the causal mask sliced out of a
// bool constant with bounds computed from shapes and applied with Where, LayerNorm and the
// tanh GELU decomposed, the tied LM head as a transposed copy of the embedding, and the
// weights declared in the value-info list without values (as a printed model with its
// weights stripped is written). A tiny configuration: layers x n_embd, n_head heads. With
// `with_past`, Optimum's decoder_with_past: each layer's cached keys and values are inputs
// ("past_key_values.0.key") that the new tokens' are concatenated to, positions start after
// them, and the outputs' dims are named "past_sequence_length + sequence_length".
std::string exported_gpt2_text(int layers, int n_embd, int n_head, int vocab, int positions,
                               bool with_past = false) {
  const int head = n_embd / n_head;
  std::string weights = fmt::format(R"(float[{0}, {1}] "transformer.wte.weight", )"
                                    R"(float[{2}, {1}] "transformer.wpe.weight")",
                                    vocab, n_embd, positions);
  std::string nodes;
  int next = 0;
  const auto name = [&](const std::string& scope, const std::string& op) {
    return fmt::format("\"{}/{}_{}_output_0\"", scope, op, next++);
  };
  // A 3-D [batch, seq, n] tensor to 2-D [batch*seq, n] and a Gemm on it, back to 3-D.
  const auto conv1d = [&](const std::string& scope, const std::string& x, const std::string& w,
                          int out) {
    const std::string shape = name(scope, "Shape"), b = name(scope, "Gather"),
                      s = name(scope, "Gather"), flat = name(scope, "Reshape"),
                      gemm = name(scope, "Gemm"), ub = name(scope, "Unsqueeze"),
                      us = name(scope, "Unsqueeze"), dims = name(scope, "Concat"),
                      back = name(scope, "Reshape");
    nodes += fmt::format(R"(    {0} = Shape ({1})
    {2} = Gather <axis = 0> ({0}, "/const/zero")
    {3} = Gather <axis = 0> ({0}, "/const/one")
    {4} = Reshape ({1}, "/const/flat{12}")
    {5} = Gemm <alpha = 1, beta = 1> ({4}, "{6}.weight", "{6}.bias")
    {7} = Unsqueeze ({2}, "/const/axis0")
    {8} = Unsqueeze ({3}, "/const/axis0")
    {9} = Concat <axis = 0> ({7}, {8}, "/const/{10}")
    {11} = Reshape ({5}, {9})
)",
                         shape, x, b, s, flat, gemm, w, ub, us, dims, out, back,
                         // mlp.c_proj reads 4 x n_embd features: flattened to [-1, 4n].
                         w.find("mlp.c_proj") != std::string::npos ? "_fc" : "");
    return back;
  };
  const auto layer_norm = [&](const std::string& scope, const std::string& x,
                              const std::string& w) {
    const std::string mean = name(scope, "ReduceMean"), sub = name(scope, "Sub"),
                      pow = name(scope, "Pow"), var = name(scope, "ReduceMean"),
                      eps = name(scope, "Add"), sqrt = name(scope, "Sqrt"),
                      div = name(scope, "Div"), mul = name(scope, "Mul"), add = name(scope, "Add");
    nodes += fmt::format(R"(    {0} = ReduceMean <axes = [-1]> ({1})
    {2} = Sub ({1}, {0})
    {3} = Pow ({2}, "/const/two")
    {4} = ReduceMean <axes = [-1]> ({3})
    {5} = Add ({4}, "/const/eps")
    {6} = Sqrt ({5})
    {7} = Div ({2}, {6})
    {8} = Mul ({7}, "{9}.weight")
    {10} = Add ({8}, "{9}.bias")
)",
                         mean, x, sub, pow, var, eps, sqrt, div, mul, w, add);
    weights += fmt::format(R"(, float[{0}] "{1}.weight", float[{0}] "{1}.bias")", n_embd, w);
    return add;
  };
  nodes += R"(    "/transformer/wte/Gather_output_0" = Gather ("transformer.wte.weight", input_ids)
    "/transformer/Shape_output_0" = Shape (input_ids)
    "/transformer/Gather_output_0" = Gather <axis = 0> ("/transformer/Shape_output_0", "/const/one")
)";
  std::string first = "\"/const/zero\"";
  if (with_past) {
    nodes += R"(    "/transformer/Shape_1_output_0" = Shape ("past_key_values.0.key")
    "/transformer/Gather_1_output_0" = Gather <axis = 0> ("/transformer/Shape_1_output_0", "/const/two_i")
    "/transformer/Add_1_output_0" = Add ("/transformer/Gather_1_output_0", "/transformer/Gather_output_0")
)";
    first = "\"/transformer/Gather_1_output_0\"";
  }
  nodes += fmt::format(
      R"(    "/transformer/Cast_output_0" = Cast <to = 7> ({})
    "/transformer/Range_output_0" = Range ({}, "/transformer/Cast_output_0", "/const/one")
)",
      with_past ? "\"/transformer/Add_1_output_0\"" : "\"/transformer/Gather_output_0\"", first);
  nodes +=
      R"(    "/transformer/Unsqueeze_output_0" = Unsqueeze ("/transformer/Range_output_0", "/const/axis0")
    "/transformer/wpe/Gather_output_0" = Gather ("transformer.wpe.weight", "/transformer/Unsqueeze_output_0")
    "/transformer/Add_output_0" = Add ("/transformer/wte/Gather_output_0", "/transformer/wpe/Gather_output_0")
)";
  std::string hidden = "\"/transformer/Add_output_0\"";
  std::string inputs, outputs;
  for (int l = 0; l < layers; ++l) {
    const std::string cached =
        with_past ? "past_sequence_length + sequence_length" : "sequence_length";
    for (const char* kv : {"key", "value"}) {
      if (with_past) {
        inputs += fmt::format(R"(, float[batch_size, {}, past_sequence_length, {}] )"
                              R"("past_key_values.{}.{}")",
                              n_head, head, l, kv);
      }
      outputs += fmt::format(R"(, float[batch_size, {}, "{}", {}] "present.{}.{}")", n_head, cached,
                             head, l, kv);
    }
    const std::string scope = fmt::format("/transformer/h.{}", l);
    const std::string prefix = fmt::format("transformer.h.{}", l);
    weights += fmt::format(R"(, float[{0}, {1}] "{2}.attn.c_attn.weight", float[{1}] )"
                           R"("{2}.attn.c_attn.bias", float[{0}, {0}] "{2}.attn.c_proj.weight", )"
                           R"(float[{0}] "{2}.attn.c_proj.bias", float[{0}, {3}] )"
                           R"("{2}.mlp.c_fc.weight", float[{3}] "{2}.mlp.c_fc.bias", )"
                           R"(float[{3}, {0}] "{2}.mlp.c_proj.weight", float[{0}] )"
                           R"("{2}.mlp.c_proj.bias")",
                           n_embd, 3 * n_embd, prefix, 4 * n_embd);
    const std::string ln1 = layer_norm(scope + "/ln_1", hidden, prefix + ".ln_1");
    const std::string qkv =
        conv1d(scope + "/attn/c_attn", ln1, prefix + ".attn.c_attn", 3 * n_embd);
    const std::string attn = scope + "/attn";
    const std::string q = name(attn, "Split"), k = name(attn, "Split"), v = name(attn, "Split");
    nodes +=
        fmt::format("    {}, {}, {} = Split <axis = 2> ({}, \"/const/split\")\n", q, k, v, qkv);
    // Each of q, k, v to [batch, heads, seq, head]; the keys and values, after the cached ones
    // where there are, are the layer's present outputs.
    std::string heads[3];
    const std::string parts[3] = {q, k, v};
    for (int i = 0; i < 3; ++i) {
      const std::string shape = name(attn, "Shape"), b = name(attn, "Gather"),
                        s = name(attn, "Gather"), ub = name(attn, "Unsqueeze"),
                        us = name(attn, "Unsqueeze"), dims = name(attn, "Concat"),
                        split = name(attn, "Reshape"), t = name(attn, "Transpose");
      nodes += fmt::format(
          R"(    {0} = Shape ({1})
    {2} = Gather <axis = 0> ({0}, "/const/zero")
    {3} = Gather <axis = 0> ({0}, "/const/one")
    {4} = Unsqueeze ({2}, "/const/axis0")
    {5} = Unsqueeze ({3}, "/const/axis0")
    {6} = Concat <axis = 0> ({4}, {5}, "/const/heads")
    {7} = Reshape ({1}, {6})
    {8} = Transpose <perm = [{9}]> ({7})
)",
          shape, parts[i], b, s, ub, us, dims, split,
          i == 0 || with_past ? t : fmt::format("\"present.{}.{}\"", l, i == 1 ? "key" : "value"),
          "0, 2, 1, 3");
      heads[i] = t;
      if (i > 0) {
        const std::string present = fmt::format("\"present.{}.{}\"", l, i == 1 ? "key" : "value");
        if (with_past) {
          nodes += fmt::format("    {} = Concat <axis = -2> (\"past_key_values.{}.{}\", {})\n",
                               present, l, i == 1 ? "key" : "value", t);
        }
        heads[i] = present;
      }
    }
    const std::string keys_t = name(attn, "Transpose");
    nodes += fmt::format("    {} = Transpose <perm = [0, 1, 3, 2]> ({})\n", keys_t, heads[1]);
    heads[1] = keys_t;
    const std::string scores = name(attn, "MatMul"), scaled = name(attn, "Div"),
                      kshape = name(attn, "Shape"), klen = name(attn, "Slice"),
                      qshape = name(attn, "Shape"), qlen = name(attn, "Slice"),
                      start = name(attn, "Sub"), rows = name(attn, "Slice"),
                      mask = name(attn, "Slice"), where = name(attn, "Where"),
                      probs = name(attn, "Softmax"), context = name(attn, "MatMul"),
                      merged = name(attn, "Transpose"), flat = name(attn, "Reshape");
    nodes += fmt::format(R"(    {0} = MatMul ({1}, {2})
    {3} = Div ({0}, "/const/sqrt_head")
    {4} = Shape ({2})
    {5} = Slice ({4}, "/const/minus1", "/const/max", "/const/axis0")
    {6} = Shape ({1})
    {7} = Slice ({6}, "/const/minus2", "/const/minus1", "/const/axis0")
    {8} = Sub ({5}, {7})
    {9} = Slice ("onnx::Slice_mask", {8}, {5}, "/const/axis2", "/const/step")
    {10} = Slice ({9}, "/const/zero1", {5}, "/const/axis3", "/const/step")
    {11} = Where ({10}, {3}, "/const/min")
    {12} = Softmax <axis = -1> ({11})
    {13} = MatMul ({12}, {14})
    {15} = Transpose <perm = [0, 2, 1, 3]> ({13})
    {16} = Reshape ({15}, "/const/merge")
)",
                         scores, heads[0], heads[1], scaled, kshape, klen, qshape, qlen, start,
                         rows, mask, where, probs, context, heads[2], merged, flat);
    const std::string proj = conv1d(attn + "/c_proj", flat, prefix + ".attn.c_proj", n_embd);
    const std::string res1 = name(scope, "Add");
    nodes += fmt::format("    {} = Add ({}, {})\n", res1, proj, hidden);
    const std::string ln2 = layer_norm(scope + "/ln_2", res1, prefix + ".ln_2");
    const std::string fc = conv1d(scope + "/mlp/c_fc", ln2, prefix + ".mlp.c_fc", 4 * n_embd);
    const std::string act = scope + "/mlp/act";
    const std::string half = name(act, "Mul"), cube = name(act, "Pow"),
                      scaled_cube = name(act, "Mul"), inner = name(act, "Add"),
                      arg = name(act, "Mul"), tanh = name(act, "Tanh"), one_plus = name(act, "Add"),
                      gelu = name(act, "Mul");
    nodes += fmt::format(R"(    {0} = Mul ({1}, "/const/half")
    {2} = Pow ({1}, "/const/three")
    {3} = Mul ({2}, "/const/gelu_c")
    {4} = Add ({1}, {3})
    {5} = Mul ({4}, "/const/sqrt_2_over_pi")
    {6} = Tanh ({5})
    {7} = Add ({6}, "/const/onef")
    {8} = Mul ({0}, {7})
)",
                         half, fc, cube, scaled_cube, inner, arg, tanh, one_plus, gelu);
    const std::string down = conv1d(scope + "/mlp/c_proj", gelu, prefix + ".mlp.c_proj", n_embd);
    const std::string res2 = name(scope, "Add");
    nodes += fmt::format("    {} = Add ({}, {})\n", res2, res1, down);
    hidden = res2;
  }
  const std::string final_ln = layer_norm("/transformer/ln_f", hidden, "transformer.ln_f");
  weights += fmt::format(R"(, float[{}, {}] "onnx::MatMul_head")", n_embd, vocab);
  nodes += fmt::format("    logits = MatMul ({}, \"onnx::MatMul_head\")\n", final_ln);

  std::string mask;
  for (int r = 0; r < positions; ++r) {
    for (int c = 0; c < positions; ++c)
      mask += (r == 0 && c == 0) ? (c <= r ? "1" : "0") : (c <= r ? ", 1" : ", 0");
  }
  const std::string constants = fmt::format(
      R"(    "/const/zero" = Constant <value = int64 {{0}}> ()
    "/const/one" = Constant <value = int64 {{1}}> ()
    "/const/two_i" = Constant <value = int64 {{2}}> ()
    "/const/axis0" = Constant <value = int64[1] {{0}}> ()
    "/const/axis2" = Constant <value = int64[1] {{2}}> ()
    "/const/axis3" = Constant <value = int64[1] {{3}}> ()
    "/const/step" = Constant <value = int64[1] {{1}}> ()
    "/const/zero1" = Constant <value = int64[1] {{0}}> ()
    "/const/minus1" = Constant <value = int64[1] {{-1}}> ()
    "/const/minus2" = Constant <value = int64[1] {{-2}}> ()
    "/const/max" = Constant <value = int64[1] {{9223372036854775807}}> ()
    "/const/flat" = Constant <value = int64[2] {{-1, {0}}}> ()
    "/const/flat_fc" = Constant <value = int64[2] {{-1, {2}}}> ()
    "/const/{1}" = Constant <value = int64[1] {{{1}}}> ()
    "/const/{0}" = Constant <value = int64[1] {{{0}}}> ()
    "/const/{2}" = Constant <value = int64[1] {{{2}}}> ()
    "/const/split" = Constant <value = int64[3] {{{0}, {0}, {0}}}> ()
    "/const/heads" = Constant <value = int64[2] {{{3}, {4}}}> ()
    "/const/merge" = Constant <value = int64[3] {{0, 0, {0}}}> ()
    "/const/sqrt_head" = Constant <value = float {{{5}}}> ()
    "/const/min" = Constant <value = float {{-340282350000000000000000000000000000000}}> ()
    "/const/two" = Constant <value = float {{2}}> ()
    "/const/eps" = Constant <value = float {{0.00001}}> ()
    "/const/half" = Constant <value = float {{0.5}}> ()
    "/const/three" = Constant <value = float {{3}}> ()
    "/const/gelu_c" = Constant <value = float {{0.044715}}> ()
    "/const/sqrt_2_over_pi" = Constant <value = float {{0.7978846}}> ()
    "/const/onef" = Constant <value = float {{1}}> ()
    "onnx::Slice_mask" = Constant <value = bool[1, 1, {6}, {6}] {{{7}}}> ()
)",
      n_embd, 3 * n_embd, 4 * n_embd, n_head, head, std::sqrt(static_cast<double>(head)), positions,
      mask);
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 14], producer_name: "pytorch">
torch_jit (int64[batch_size, sequence_length] input_ids{}) => (float[batch_size, sequence_length, {}] logits{})
<{}>
{{
{}{}}}
)",
                     inputs, vocab, outputs, weights, constants, nodes);
}

}  // namespace

TEST_CASE("onnx text: a GPT-2 export as printed counts as its Hugging Face config does", "[onnx]") {
  // The same tiny GPT-2 two ways: exported-and-printed (exported_gpt2_text), and as its
  // config.json. Conv MACs per token and layer: d·3d + d·d + 2·d·4d = 12d²; attention
  // 2·seq·d; the head d·vocab. Parameters: the config's (tied head) plus the export's
  // transposed copy of the embedding. capcalc was checked the same way on the full GPT-2
  // (openai-community/gpt2's onnx/decoder_model.onnx as Loam's gpt2.onnxtext prints it,
  // wado-lang/wado at 518227a): 163,037,184 params = 124,439,808 + 768·50257, and at 128
  // tokens 16,114,089,984 MACs, equal to this HF import's.
  constexpr int kLayers = 2, kEmbd = 64, kHeads = 4, kVocab = 100, kPositions = 32;
  const std::string text = exported_gpt2_text(kLayers, kEmbd, kHeads, kVocab, kPositions);
  const std::string config = fmt::format(
      R"({{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": {},
          "n_embd": {}, "n_head": {}, "vocab_size": {}, "n_positions": {},
          "activation_function": "gelu_new"}})",
      kLayers, kEmbd, kHeads, kVocab, kPositions);
  for (const std::int64_t seq : {1, 7, 32}) {
    INFO("sequence length " << seq);
    ModelOptions onnx_options;
    onnx_options.dims["batch_size"] = 2;
    onnx_options.dims["sequence_length"] = seq;
    const Graph exported =
        capcalc::parse_onnx_text_model(text, OnnxTextSyntax::onnx, "gpt2.onnxtxt", onnx_options);
    ModelOptions hf_options;
    hf_options.dims["batch"] = 2;
    hf_options.dims["seq"] = seq;
    const Graph hf = capcalc::parse_model(config, "config.json", hf_options);
    CHECK(exported.unknown_ops.empty());
    const auto e = capcalc::graph_totals(exported);
    const auto h = capcalc::graph_totals(hf);
    const std::int64_t d = kEmbd;
    const std::int64_t macs = kLayers * (12 * d * d * seq + 2 * seq * seq * d) + d * kVocab * seq;
    CHECK(e.macs == 2 * macs);  // Batch 2.
    CHECK(e.macs == h.macs);
    CHECK(e.params == h.params + kVocab * d);
    CHECK(h.params == kVocab * d + kPositions * d + kLayers * (12 * d * d + 13 * d) + 2 * d);
  }
  // ONNX files run in ONNX Runtime or TensorRT, which fuse the elementwise chains that the
  // exporter decomposed: without a --profile the estimate is compiled (one floor per fused
  // kernel, not per node), where the same model from its config.json is PyTorch eager.
  ModelOptions onnx_options;
  onnx_options.dims["batch_size"] = 1;
  onnx_options.dims["sequence_length"] = 16;
  const Graph exported =
      capcalc::parse_onnx_text_model(text, OnnxTextSyntax::onnx, "gpt2.onnxtxt", onnx_options);
  CHECK(exported.runs_fused);
  const capcalc::Device device = small_gpu();
  const capcalc::PerformanceParams params;  // Eager by default.
  CHECK(capcalc::estimate(exported, device, params, {}).profile == capcalc::Profile::kCompiled);
  capcalc::Workload eager;
  eager.profile = capcalc::Profile::kEager;
  CHECK(capcalc::estimate(exported, device, params, eager).profile == capcalc::Profile::kEager);
  ModelOptions hf_options;
  hf_options.dims["seq"] = 16;
  const Graph hf = capcalc::parse_model(config, "config.json", hf_options);
  CHECK_FALSE(hf.runs_fused);
  CHECK(capcalc::estimate(hf, device, params, {}).profile == capcalc::Profile::kEager);
}

TEST_CASE("onnx text: a GPT-2 decoder_with_past export counts a decode step's attention",
          "[onnx]") {
  // Each new token's query meets the cached keys too: attention MACs per layer are
  // 2·seq·(past + seq)·d, the rest as without a cache; the present outputs' dim names
  // ("past_sequence_length + sequence_length") do not stop their sizes being inferred.
  constexpr int kLayers = 2, kEmbd = 64, kHeads = 4, kVocab = 100, kPositions = 32;
  const std::string text = exported_gpt2_text(kLayers, kEmbd, kHeads, kVocab, kPositions, true);
  const std::int64_t d = kEmbd;
  for (const auto& [past, seq] : {std::pair<std::int64_t, std::int64_t>{1, 5}, {12, 1}, {31, 1}}) {
    INFO("past " << past << ", new tokens " << seq);
    ModelOptions options;
    options.dims["batch_size"] = 1;
    options.dims["sequence_length"] = seq;
    options.dims["past_sequence_length"] = past;
    const Graph g =
        capcalc::parse_onnx_text_model(text, OnnxTextSyntax::onnx, "gpt2_past.onnxtxt", options);
    CHECK(g.unknown_ops.empty());
    const auto totals = capcalc::graph_totals(g);
    CHECK(totals.macs ==
          kLayers * (12 * d * d * seq + 2 * seq * (past + seq) * d) + d * kVocab * seq);
    bool found = false;
    for (const auto& layer : g.layers) {
      if (layer.op != "concat") continue;
      found = true;
      CHECK(layer.output == capcalc::Shape{1, kHeads, past + seq, kEmbd / kHeads});
    }
    CHECK(found);
  }
}

TEST_CASE("onnx text: serving a decoder exported without a KV cache says so", "[onnx]") {
  // Optimum's decoder_model.onnx has no past inputs: a decode step can attend to nothing
  // cached, and the estimate says so (text and JSON); decoder_with_past holds the cache.
  constexpr int kLayers = 2, kEmbd = 64, kHeads = 4, kVocab = 100, kPositions = 32;
  const capcalc::Device device = small_gpu();
  const capcalc::PerformanceParams params;
  capcalc::ServingRequest request;
  request.prompt_tokens = 8;
  request.output_tokens = 4;
  for (const bool with_past : {false, true}) {
    INFO("with past: " << with_past);
    const std::string text =
        exported_gpt2_text(kLayers, kEmbd, kHeads, kVocab, kPositions, with_past);
    const auto build = [&](std::int64_t seq, std::int64_t cached) {
      ModelOptions options;
      options.dims["sequence_length"] = seq;
      options.counting.kv_cache_length = cached;
      return capcalc::parse_onnx_text_model(text, OnnxTextSyntax::onnx, "gpt2.onnxtxt", options);
    };
    const capcalc::ServingEstimate s =
        capcalc::estimate_serving(build, device, params, {}, request);
    const Graph g = build(request.prompt_tokens, 0);
    const auto totals = capcalc::graph_totals(g);
    const capcalc::Workload workload;
    capcalc::ReportInput in{g, totals, workload, &device, &params, &s.prefill};
    in.serving = &s;
    in.request = &request;
    const std::string rendered = capcalc::render_estimate_text(in, 3);
    const auto json = nlohmann::json::parse(capcalc::render_estimate_json(in));
    if (with_past) {
      // Keys and values of 2 layers, 64 wide: 2·2·64 elements per token, 4 bytes each.
      CHECK(s.kv_bytes_per_token == Approx(2.0 * 2 * 64 * 4));
      CHECK(rendered.find("keeps no KV cache") == std::string::npos);
      CHECK(json["estimate"]["llm"]["kv_cache_modelled"] == true);
    } else {
      CHECK(s.kv_bytes_per_token == 0);
      CHECK(rendered.find("keeps no KV cache") != std::string::npos);
      CHECK(json["estimate"]["llm"]["kv_cache_modelled"] == false);
    }
  }
}

// The ConvNeXt case from an export: a channels-last MatMul by a weight is one GEMM with
// M = the product of the leading axes; ONNX rules set the same traits as native operators.
TEST_CASE("onnx text: layers carry their rule's traits and GEMM view", "[onnx][traits]") {
  constexpr const char* kText = R"(<
   ir_version: 8,
   opset_import: ["" : 17]
>
mlp (float[batch,7,7,768] x) => (float[batch,7,7,768] y)
<float[768,3072] w1 = {0}, float[3072,768] w2 = {0}>
{
   h = MatMul (x, w1)
   a = Gelu (h)
   y = MatMul (a, w2)
}
)";
  ModelOptions options;
  options.dims["batch"] = 4;
  const Graph g =
      capcalc::parse_onnx_text_model(kText, OnnxTextSyntax::onnx, "mlp.onnxtxt", options);
  REQUIRE(g.layers.size() == 3);
  REQUIRE(g.layers[0].traits.gemm);
  CHECK(g.layers[0].traits.op_class == capcalc::OpClass::kMatrix);
  CHECK(g.layers[0].traits.gemm->m == 4 * 49);
  CHECK(g.layers[0].traits.gemm->n == 3072);
  CHECK(g.layers[0].traits.gemm->k == 768);
  CHECK(g.layers[1].traits.op_class == capcalc::OpClass::kElementwise);
  CHECK(g.layers[1].traits.fusion == capcalc::Fusion::kAlways);
  CHECK(g.layers[2].traits.gemm->n == 768);
  CHECK(g.layers[2].traits.gemm->k == 3072);

  // The small CNN: its Conv is an implicit GEMM (M = 2 x 32 x 32 pixels, N = 16, K = 3 x 3 x 3),
  // its pools are pooling, its Flatten a view.
  ModelOptions two;
  two.dims["batch"] = 2;
  const Graph cnn =
      capcalc::parse_onnx_text_model(kSmallCnnText, OnnxTextSyntax::onnx, "cnn.onnxtxt", two);
  const capcalc::GemmView conv = *cnn.layers[0].traits.gemm;
  CHECK(conv.m == 2 * 32 * 32);
  CHECK(conv.n == 16);
  CHECK(conv.k == 27);
  CHECK(cnn.layers[2].traits.op_class == capcalc::OpClass::kPooling);
  CHECK(cnn.layers[4].traits.op_class == capcalc::OpClass::kView);
}

// Issue 21: the text readers recurse once per level of nesting; 8,000 nested messages ended
// in SIGSEGV. Both refuse nesting past the limit with the place.
TEST_CASE("onnx text: nesting past the limit is an error at its line and column",
          "[onnx][limits]") {
  std::string deep_proto = "graph {\n";
  for (int i = 0; i < 8000; ++i)
    deep_proto += "node { attribute { g { ";
  REQUIRE_THROWS_WITH(capcalc::parse_onnx_text_model(deep_proto, OnnxTextSyntax::protobuf,
                                                     "deep.textproto", ModelOptions{}),
                      ContainsSubstring("deep.textproto:2:1961: protobuf text format: Message is "
                                        "too deep"));
  const std::string header =
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[2] x) => "
      "(float[2] y) {\n";
  for (const char* open : {"(", "[", "{", "<"}) {
    std::string text = header + "   y = Relu ";
    for (int i = 0; i < 100'000; ++i)
      text += open;
    INFO("bracket " << open);
    // The body's brace is level 1: the 256th of these is the 257th level, at column 268.
    REQUIRE_THROWS_WITH(
        capcalc::parse_onnx_text_model(text, OnnxTextSyntax::onnx, "deep.onnxtxt", ModelOptions{}),
        "deep.onnxtxt:3:268: ONNX text: brackets nest more than 256 deep (the "
        "limit)");
  }
  // Comments, strings and `=>` do not count.
  std::string commented = header + "   # " + std::string(1000, '(') + "\n   y = Relu (x)\n}\n";
  CHECK(capcalc::parse_onnx_text_model(commented, OnnxTextSyntax::onnx, "c.onnxtxt", ModelOptions{})
            .layers.size() == 1);
}

// Issue 21: `estimate` on a Loop that stays an unknown operator (its trip count an input, or
// past the unroll limit) was reported to end in SIGSEGV; `layers` on it was fine. Both are
// drawn and rendered here, as the CLI does.
TEST_CASE("onnx text: a Loop that is not unrolled is estimated and rendered", "[onnx][limits]") {
  const capcalc::Device device = small_gpu();
  const capcalc::PerformanceParams params;
  for (const char* file : {"loop_unknown_trips.onnxtxt", "loop_over_limit.onnxtxt"}) {
    INFO(file);
    const Graph g =
        capcalc::load_model(std::string(CAPCALC_TEST_DIR) + "/hostile/" + file, ModelOptions{});
    REQUIRE(g.unknown_ops.size() == 1);
    CHECK(g.unknown_ops[0].op == "Loop");
    for (const capcalc::Mode mode : {capcalc::Mode::kInference, capcalc::Mode::kTraining}) {
      capcalc::Workload workload;
      workload.mode = mode;
      const capcalc::Estimate e = capcalc::estimate(g, device, params, workload);
      const auto totals = capcalc::graph_totals(g);
      CHECK(totals.macs == 0);
      const capcalc::ReportInput in{g, totals, workload, &device, &params, &e};
      CHECK(capcalc::render_estimate_text(in, 10).find("Loop_0") != std::string::npos);
      CHECK(nlohmann::json::parse(capcalc::render_estimate_json(in))["layers"].size() ==
            g.layers.size());
    }
  }
}
