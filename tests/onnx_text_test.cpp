// ONNX models written as text: ONNX's textual syntax (.onnxtxt) and protobuf's text format
// (.textproto, .pbtxt) import exactly as the same model in binary protobuf does.
#include "import/onnx_text.hpp"

#include <cstdint>
#include <fstream>
#include <string>

#include <google/protobuf/text_format.h>
#include <onnx/onnx_pb.h>

#include "capcalc/error.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

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
