// ONNX import: models are built here with the protobuf API (no binary fixtures), written to a
// temporary file and loaded with capcalc::load_model; counts are checked against the formulas
// of docs/model-format.md and against the same model in the native format.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

#include "capcalc/error.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

#include "catch.hpp"
#include "import/onnx_functions.hpp"
#include "limits.hpp"
#include "onnx_builder.hpp"

namespace {

using capcalc::Graph;
using capcalc::ModelOptions;
using capcalc::test::Dim;
using capcalc::test::OnnxModel;

using capcalc::test::layer_named;

// Conv(3->16, 3x3, pad 1) + BN + Relu + MaxPool 2 + GlobalAveragePool + Flatten + Gemm(16->10).
OnnxModel small_cnn() {
  OnnxModel m("small_cnn");
  m.input("x", {std::string("batch"), std::int64_t{3}, std::int64_t{32}, std::int64_t{32}});
  m.weight("conv.w", {16, 3, 3, 3});
  m.weight("conv.b", {16});
  auto& conv = m.node("Conv", {"x", "conv.w", "conv.b"}, {"c"}, "conv");
  OnnxModel::attr(conv, "kernel_shape", std::vector<std::int64_t>{3, 3});
  OnnxModel::attr(conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  for (const char* p : {"bn.scale", "bn.bias", "bn.mean", "bn.var"})
    m.weight(p, {16});
  m.node("BatchNormalization", {"c", "bn.scale", "bn.bias", "bn.mean", "bn.var"}, {"bn"}, "bn");
  m.node("Relu", {"bn"}, {"relu"}, "relu");
  auto& pool = m.node("MaxPool", {"relu"}, {"pool"}, "pool");
  OnnxModel::attr(pool, "kernel_shape", std::vector<std::int64_t>{2, 2});
  OnnxModel::attr(pool, "strides", std::vector<std::int64_t>{2, 2});
  m.node("GlobalAveragePool", {"pool"}, {"gap"}, "gap");
  m.node("Flatten", {"gap"}, {"flat"}, "flat");
  m.weight("fc.w", {10, 16});
  m.weight("fc.b", {10});
  auto& fc = m.node("Gemm", {"flat", "fc.w", "fc.b"}, {"y"}, "fc");
  OnnxModel::attr(fc, "transB", std::int64_t{1});
  m.output("y");
  return m;
}

constexpr const char* kSmallCnnNative = R"({"format": "capcalc-model/1", "name": "small_cnn",
  "dims": {"batch": 1}, "inputs": [{"name": "x", "shape": ["batch", 3, 32, 32]}],
  "layers": [
    {"name": "conv", "op": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1},
    {"name": "bn", "op": "batchnorm"}, {"name": "relu", "op": "relu"},
    {"name": "pool", "op": "maxpool2d", "kernel": 2}, {"name": "gap", "op": "global_avgpool"},
    {"name": "flat", "op": "flatten"}, {"name": "fc", "op": "linear", "out_features": 10}]})";

}  // namespace

TEST_CASE("onnx: a small CNN has the native format's shapes and counts", "[onnx]") {
  ModelOptions options;
  options.dims["batch"] = 2;  // --batch 2
  const Graph g = small_cnn().load("small_cnn", options);
  const Graph native = capcalc::parse_model(kSmallCnnNative, "small_cnn.json", options);

  REQUIRE(g.layers.size() == native.layers.size());
  CHECK(g.batch == 2);
  CHECK(g.unknown_ops.empty());
  for (std::size_t i = 0; i < g.layers.size(); ++i) {
    const auto& a = g.layers[i];
    const auto& b = native.layers[i];
    INFO(a.name);
    CHECK(a.op == b.op);
    CHECK(a.output == b.output);
    CHECK(a.view == b.view);
    CHECK(a.counts.params == b.counts.params);
    CHECK(a.counts.macs == b.counts.macs);
    CHECK(a.counts.other_flops == b.counts.other_flops);
    CHECK(a.counts.moved_elements() == b.counts.moved_elements());
    CHECK(a.counts.backward_macs == b.counts.backward_macs);
    CHECK(a.counts.backward_other_flops == b.counts.backward_other_flops);
  }
  // By formula (docs/model-format.md): conv 16·3·3·3 + 16, BN 2·16 (statistics are buffers), fc
  // 16·10+10.
  const auto totals = capcalc::graph_totals(g);
  CHECK(totals.params == 16 * 27 + 16 + 2 * 16 + 160 + 10);
  CHECK(totals.macs == 2 * (16 * 32 * 32 * 27 + 160));
  CHECK(layer_named(g, "pool").output == capcalc::Shape{2, 16, 16, 16});
  CHECK(layer_named(g, "fc").output == capcalc::Shape{2, 10});
}

namespace {

// One pre-LN transformer encoder layer (d = 64, 4 heads of 16, FFN 256), as PyTorch exports
// it: MatMul + Add projections, Reshape/Transpose to heads, Q·Kᵀ as MatMul of a transposed K,
// Div by √d, Softmax, MatMul with V, LayerNormalization, Gelu.
OnnxModel encoder_layer() {
  OnnxModel m("encoder");
  m.input("x", {std::string("batch"), std::string("sequence"), std::int64_t{64}});
  const auto linear = [&](const std::string& name, const std::string& in, std::int64_t k,
                          std::int64_t n) {
    m.weight(name + ".w", {k, n});
    m.weight(name + ".b", {n});
    m.node("MatMul", {in, name + ".w"}, {name + ".mm"});
    m.node("Add", {name + ".mm", name + ".b"}, {name});
  };
  const auto layer_norm = [&](const std::string& name, const std::string& in) {
    m.weight(name + ".g", {64});
    m.weight(name + ".beta", {64});
    auto& ln = m.node("LayerNormalization", {in, name + ".g", name + ".beta"}, {name});
    OnnxModel::attr(ln, "axis", std::int64_t{-1});
  };
  m.ints("heads_shape", {0, 0, 4, 16});
  m.ints("merge_shape", {0, 0, 64});
  m.scalar("scale", 4.0F);
  layer_norm("ln1", "x");
  for (const char* p : {"q", "k", "v"}) {
    linear(p, "ln1", 64, 64);
    m.node("Reshape", {p, "heads_shape"}, {std::string(p) + ".heads"});
  }
  auto& tq = m.node("Transpose", {"q.heads"}, {"qh"});
  OnnxModel::attr(tq, "perm", std::vector<std::int64_t>{0, 2, 1, 3});
  auto& tk = m.node("Transpose", {"k.heads"}, {"kt"});
  OnnxModel::attr(tk, "perm", std::vector<std::int64_t>{0, 2, 3, 1});
  auto& tv = m.node("Transpose", {"v.heads"}, {"vh"});
  OnnxModel::attr(tv, "perm", std::vector<std::int64_t>{0, 2, 1, 3});
  m.node("MatMul", {"qh", "kt"}, {"scores"});
  m.node("Div", {"scores", "scale"}, {"scaled"});
  auto& softmax = m.node("Softmax", {"scaled"}, {"probs"});
  OnnxModel::attr(softmax, "axis", std::int64_t{-1});
  m.node("MatMul", {"probs", "vh"}, {"context.heads"});
  auto& tc = m.node("Transpose", {"context.heads"}, {"context.t"});
  OnnxModel::attr(tc, "perm", std::vector<std::int64_t>{0, 2, 1, 3});
  m.node("Reshape", {"context.t", "merge_shape"}, {"context"});
  linear("o", "context", 64, 64);
  m.node("Add", {"x", "o"}, {"res1"});
  layer_norm("ln2", "res1");
  linear("ffn1", "ln2", 64, 256);
  m.node("Gelu", {"ffn1"}, {"gelu"});
  linear("ffn2", "gelu", 256, 64);
  m.node("Add", {"res1", "ffn2"}, {"y"});
  m.output("y");
  return m;
}

}  // namespace

TEST_CASE("onnx: a transformer encoder layer counts as the native attention layer", "[onnx]") {
  ModelOptions options;
  options.dims["batch"] = 2;
  options.dims["sequence"] = 10;  // --set sequence=10
  const Graph g = encoder_layer().load("encoder", options);
  CHECK(g.unknown_ops.empty());
  CHECK(g.dims.at("sequence") == 10);
  CHECK(layer_named(g, "scores").output == capcalc::Shape{2, 4, 10, 10});
  CHECK(layer_named(g, "scores").op == "matmul");
  CHECK(layer_named(g, "q.mm").op == "linear");
  CHECK(layer_named(g, "gelu").op == "gelu");
  CHECK(layer_named(g, "y").output == capcalc::Shape{2, 10, 64});

  // The same layer in the native format: attention (with biases) + layernorms + linears.
  const char* native_text = R"({"format": "capcalc-model/1", "name": "encoder",
    "dims": {"batch": 1, "sequence": 1},
    "inputs": [{"name": "x", "shape": ["batch", "sequence", 64]}],
    "layers": [
      {"name": "ln1", "op": "layernorm"}, {"name": "attn", "op": "attention", "heads": 4},
      {"name": "res1", "op": "add", "inputs": ["x", "attn"]}, {"name": "ln2", "op": "layernorm"},
      {"name": "ffn1", "op": "linear", "out_features": 256}, {"name": "gelu", "op": "gelu"},
      {"name": "ffn2", "op": "linear", "out_features": 64},
      {"name": "y", "op": "add", "inputs": ["res1", "ffn2"]}]})";
  const Graph native = capcalc::parse_model(native_text, "encoder.json", options);
  const auto a = capcalc::graph_totals(g);
  const auto b = capcalc::graph_totals(native);
  // params: 2 layernorms 2·2·64, 4 projections 4·(64·64 + 64), FFN 64·256 + 256 + 256·64 + 64.
  CHECK(a.params == 2 * 2 * 64 + 4 * (64 * 64 + 64) + 64 * 256 + 256 + 256 * 64 + 64);
  CHECK(a.params == b.params);
  // MACs: projections 4·B·S·64·64, Q·Kᵀ and AV 2·B·H·S·S·16, FFN 2·B·S·64·256.
  const std::int64_t B = 2, S = 10;
  CHECK(a.macs == 4 * B * S * 64 * 64 + 2 * B * 4 * S * S * 16 + 2 * B * S * 64 * 256);
  CHECK(a.macs == b.macs);
  std::int64_t score_macs = 0;
  for (const auto& layer : g.layers)
    score_macs += layer.counts.score_macs;
  CHECK(score_macs == 2 * B * 4 * S * S * 16);
  // Other FLOPs: scale (Div) + softmax = 6 per score, bias adds, residuals, norms, gelu — as
  // the native attention layer counts them.
  CHECK(a.other_flops == b.other_flops);
}

TEST_CASE("onnx: a dynamic dim that is not set names the input and the dim", "[onnx]") {
  REQUIRE_THROWS_WITH(encoder_layer().load("encoder_unset"),
                      Catch::Contains("input \"x\": dimension \"sequence\" (axis 1) is not set"));
  ModelOptions options;
  options.dims["sequense"] = 8;
  REQUIRE_THROWS_WITH(encoder_layer().load("encoder_typo", options),
                      Catch::Contains("no dimension \"sequense\"") &&
                          Catch::Contains("did you mean \"sequence\"") &&
                          Catch::Contains("dynamic dims: batch, sequence"));
}

TEST_CASE("onnx: seq, past and total lengths bind the dims exporters name", "[onnx]") {
  // --set seq=N (and LLM serving) sets a sequence axis by its usual names; a past axis is the
  // KV cache's length (0, a prefill, unless set); a total or an expression of them follows.
  OnnxModel m("lengths");
  m.input("ids", {std::string("batch_size"), std::string("sequence_length")},
          onnx::TensorProto::INT64);
  m.input("past", {std::string("batch_size"), std::int64_t{2}, std::string("past_sequence_length"),
                   std::int64_t{8}});
  m.input("mask", {std::string("batch_size"), std::string("total_sequence_length")},
          onnx::TensorProto::INT64);
  m.input("positions", {std::string("batch_size"), std::string("past_sequence_length + 1")},
          onnx::TensorProto::INT64);
  m.weight("table", {100, 16});
  m.node("Gather", {"table", "ids"}, {"emb"}, "embed");
  m.output("emb");
  ModelOptions options;
  options.dims["seq"] = 5;
  const Graph prefill = m.load("lengths_prefill", options);
  CHECK(prefill.inputs.at(0).shape == capcalc::Shape{1, 5});
  CHECK(prefill.inputs.at(1).shape == capcalc::Shape{1, 2, 0, 8});
  CHECK(prefill.inputs.at(2).shape == capcalc::Shape{1, 5});
  CHECK(prefill.inputs.at(3).shape == capcalc::Shape{1, 1});
  // The past input holds the KV cache: 2 x 8 elements per cached token of a sequence.
  CHECK(prefill.past_elements_per_token == 2 * 8);
  CHECK(capcalc::kv_cache_elements(prefill, 10) == 10 * 2 * 8);
  options.counting.kv_cache_length = 40;
  const Graph step = m.load("lengths_step", options);
  CHECK(step.inputs.at(1).shape == capcalc::Shape{1, 2, 40, 8});
  CHECK(step.inputs.at(2).shape == capcalc::Shape{1, 45});
  CHECK(step.inputs.at(3).shape == capcalc::Shape{1, 41});
  // Set by name, the dims win.
  options.dims["past_sequence_length"] = 7;
  CHECK(m.load("lengths_set", options).inputs.at(2).shape == capcalc::Shape{1, 12});
  // Without a sequence length, the total is not set either.
  REQUIRE_THROWS_WITH(m.load("lengths_unset"),
                      Catch::Contains("dimension \"sequence_length\" (axis 1) is not set"));
  // An expression that comes out negative is an error naming the input and the dim.
  OnnxModel negative("negative");
  negative.input("x", {std::string("past_sequence_length - 4"), std::int64_t{8}});
  negative.node("Relu", {"x"}, {"y"}, "relu");
  negative.output("y");
  REQUIRE_THROWS_WITH(negative.load("negative_dim"),
                      Catch::Contains("input \"x\": dimension \"past_sequence_length - 4\" (axis "
                                      "0) is -4"));
}

TEST_CASE("onnx: torch.onnx.export's unnamed dynamic batch axis is the batch", "[onnx]") {
  // dynamic_axes={"input_1": [0]} without a name: PyTorch names the dim
  // "input_1_dynamic_axes_1" (as in a PyTorch 2.2 export of torchvision's FCN-ResNet50).
  const auto model = [](const std::vector<Dim>& dims) {
    OnnxModel m("unnamed_axes");
    m.input("input_1", dims);
    m.weight("w", {8, 3, 3, 3});
    auto& conv = m.node("Conv", {"input_1", "w"}, {"y"}, "conv");
    OnnxModel::attr(conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
    m.output("y");
    return m;
  };
  ModelOptions options;
  options.dims["batch"] = 2;
  const Graph g = model({std::string("input_1_dynamic_axes_1"), std::int64_t{3}, std::int64_t{8},
                         std::int64_t{8}})
                      .load("unnamed_axes", options);
  CHECK(g.batch == 2);
  CHECK(g.layers[0].output == capcalc::Shape{2, 8, 8, 8});
  CHECK(g.layers[0].counts.macs == 2 * 8 * 8 * 8 * 27);
  // Not on axis 0 it is not a batch: it must be set by name.
  REQUIRE_THROWS_WITH(model({std::int64_t{1}, std::int64_t{3},
                             std::string("input_1_dynamic_axes_1"), std::int64_t{8}})
                          .load("unnamed_axes_h"),
                      Catch::Contains("dimension \"input_1_dynamic_axes_1\" (axis 2) is not set"));
}

TEST_CASE("onnx: --omit-input is refused, naming the input", "[onnx]") {
  ModelOptions options;
  options.omitted_inputs.insert("x");
  REQUIRE_THROWS_WITH(small_cnn().load("omit", options),
                      Catch::EndsWith("omit.onnx: an ONNX model cannot run without input \"x\" "
                                      "(--omit-input is for capcalc and Hugging Face models)"));
}

TEST_CASE("onnx: --input-shape sets a whole input shape", "[onnx]") {
  ModelOptions options;
  options.input_shapes["x"] = {3, 3, 64, 64};
  const Graph g = small_cnn().load("small_cnn_shape", options);
  CHECK(g.inputs.at(0).shape == capcalc::Shape{3, 3, 64, 64});
  CHECK(g.batch == 3);
  CHECK(layer_named(g, "conv").counts.macs == 3 * 16 * 64 * 64 * 27);
  options.input_shapes = {{"image", {1, 3, 8, 8}}};
  REQUIRE_THROWS_WITH(small_cnn().load("small_cnn_badshape", options),
                      Catch::Contains("no input \"image\""));
}

TEST_CASE("onnx: a shared initializer is counted once", "[onnx]") {
  OnnxModel m("shared");
  m.input("x", {std::int64_t{4}, std::int64_t{32}});
  m.weight("w", {32, 32});
  m.node("MatMul", {"x", "w"}, {"h"});
  m.node("Relu", {"h"}, {"r"});
  m.node("MatMul", {"r", "w"}, {"y"});  // Weight tying: the same initializer again.
  m.output("y");
  const Graph g = m.load("shared");
  const auto totals = capcalc::graph_totals(g);
  CHECK(totals.params == 32 * 32);
  CHECK(totals.macs == 2 * 4 * 32 * 32);
  CHECK(layer_named(g, "y").counts.weight_elements_read == 32 * 32);  // Still read.
}

TEST_CASE("onnx: einsum products", "[onnx]") {
  OnnxModel m("einsum");
  m.input("a", {std::int64_t{2}, std::int64_t{4}, std::int64_t{8}, std::int64_t{16}});
  m.input("b", {std::int64_t{2}, std::int64_t{4}, std::int64_t{12}, std::int64_t{16}});
  m.input("c", {std::int64_t{3}, std::int64_t{5}, std::int64_t{7}});
  m.input("d", {std::int64_t{3}, std::int64_t{7}, std::int64_t{9}});
  auto& e1 = m.node("Einsum", {"a", "b"}, {"qk"});
  OnnxModel::attr(e1, "equation", std::string("bhqd,bhkd->bhqk"));
  auto& e2 = m.node("Einsum", {"c", "d"}, {"cd"});
  OnnxModel::attr(e2, "equation", std::string("bij,bjk->bik"));
  m.output("qk");
  m.output("cd");
  const Graph g = m.load("einsum");
  CHECK(layer_named(g, "qk").output == capcalc::Shape{2, 4, 8, 12});
  CHECK(layer_named(g, "qk").counts.macs == 2 * 4 * 8 * 12 * 16);
  CHECK(layer_named(g, "qk").counts.score_macs == 2 * 4 * 8 * 12 * 16);
  CHECK(layer_named(g, "cd").counts.macs == 3 * 5 * 7 * 9);
}

TEST_CASE("onnx: a decomposed layer norm is counted op by op", "[onnx]") {
  OnnxModel m("decomposed_ln");
  m.input("x", {std::int64_t{2}, std::int64_t{10}, std::int64_t{64}});
  m.ints("axes", {-1});
  m.scalar("two", 2.0F);
  m.scalar("eps", 1e-5F);
  m.weight("g", {64});
  m.weight("b", {64});
  auto& mean = m.node("ReduceMean", {"x"}, {"mean"});
  OnnxModel::attr(mean, "axes", std::vector<std::int64_t>{-1});
  m.node("Sub", {"x", "mean"}, {"centered"});
  m.node("Pow", {"centered", "two"}, {"sq"});
  auto& var = m.node("ReduceMean", {"sq"}, {"var"});
  OnnxModel::attr(var, "axes", std::vector<std::int64_t>{-1});
  m.node("Add", {"var", "eps"}, {"var_eps"});
  m.node("Sqrt", {"var_eps"}, {"std"});
  m.node("Div", {"centered", "std"}, {"normed"});
  m.node("Mul", {"normed", "g"}, {"scaled"});
  m.node("Add", {"scaled", "b"}, {"y"});
  m.output("y");
  const Graph g = m.load("decomposed_ln");
  CHECK(g.unknown_ops.empty());
  const std::int64_t n = 2 * 10 * 64, rows = 2 * 10;
  // ReduceMean: 1 per input element (x2); Sub, Pow, Div, Mul, Add: 1 per output; Add eps and
  // Sqrt on [2, 10, 1]: 1 per row each.
  CHECK(capcalc::graph_totals(g).other_flops == 2 * n + 5 * n + 2 * rows);
  CHECK(capcalc::graph_totals(g).params == 2 * 64);  // Scalars are constants, not parameters.
  CHECK(layer_named(g, "mean").output == capcalc::Shape{2, 10, 1});
}

TEST_CASE("onnx: unknown operators are listed, and an error with strict", "[onnx]") {
  OnnxModel m("unknown");
  m.input("x", {std::int64_t{1}, std::int64_t{16}});
  auto& custom = m.node("FancyNorm", {"x"}, {"f"});
  custom.set_domain("com.example");
  m.node("Relu", {"f"}, {"y"});
  m.output("y");
  const Graph g = m.load("unknown");
  REQUIRE(g.unknown_ops.size() == 1);
  CHECK(g.unknown_ops[0].op == "com.example.FancyNorm");
  CHECK(g.unknown_ops[0].nodes == 1);
  CHECK(layer_named(g, "f").counts.flops() == 0);
  CHECK(layer_named(g, "y").output == capcalc::Shape{1, 16});  // Assumed: the input's shape.
  ModelOptions strict;
  strict.strict = true;
  // The first unknown node is named, and the count of them all.
  REQUIRE_THROWS_WITH(m.load("unknown_strict", strict),
                      Catch::Contains(".onnx:/graph/node/") &&
                          Catch::Contains(": unknown operator com.example.FancyNorm (strict "
                                          "mode; 1 node of unknown operators: "
                                          "com.example.FancyNorm (1))"));
}

TEST_CASE("onnx: Shape of an unknown operator's output is read, not a crash", "[onnx]") {
  // ONNX 1.12's data propagation dereferenced the missing type of a Shape node's input (the
  // output of an operator it has no schema for): a SIGSEGV, found by fuzzing.
  OnnxModel m("unknown_shape");
  m.input("x", {std::string("N"), std::int64_t{3}, std::int64_t{8}, std::int64_t{8}});
  auto& custom = m.node("Foo", {"x"}, {"r"}, "custom");
  custom.set_domain("com.example");
  m.node("Shape", {"r"}, {"shape"}, "shape");
  m.constant_ints("zero", {0});
  m.constant_ints("two", {2});
  m.node("Slice", {"shape", "zero", "two", "zero"}, {"nc"}, "slice");
  m.weight("w", {4, 3, 3, 3});
  auto& conv = m.node("Conv", {"r", "w"}, {"y"}, "conv");
  OnnxModel::attr(conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.output("y");
  m.output("nc", onnx::TensorProto::INT64);
  const Graph g = m.load("unknown_shape");
  REQUIRE(g.unknown_ops.size() == 1);
  CHECK(g.unknown_ops[0].op == "com.example.Foo");
  // The unknown operator is taken to keep its input's shape; the conv after it is counted.
  CHECK(layer_named(g, "conv").counts.macs == 4 * 8 * 8 * 27);
}

TEST_CASE("onnx: corrupt and truncated files are errors naming the file", "[onnx]") {
  const std::string corrupt = OnnxModel::temp_path("corrupt");
  std::ofstream(corrupt, std::ios::binary) << "this is not a protobuf \xff\xff\xff\xff";
  REQUIRE_THROWS_AS(capcalc::load_model(corrupt), capcalc::Error);
  REQUIRE_THROWS_WITH(capcalc::load_model(corrupt), Catch::StartsWith(corrupt + ": "));

  const std::string bytes = small_cnn().bytes();
  const std::string truncated = OnnxModel::temp_path("truncated");
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  REQUIRE_THROWS_WITH(capcalc::load_model(truncated), Catch::StartsWith(truncated + ": "));

  REQUIRE_THROWS_WITH(capcalc::load_model(OnnxModel::temp_path("missing")),
                      Catch::EndsWith("missing.onnx: cannot open file"));
}

TEST_CASE("onnx: zero strides, dilations, kernels and groups are errors, not a crash", "[onnx]") {
  // ONNX's shape inference divides by these unchecked: a zero stride was a SIGFPE.
  for (const char* attribute : {"strides", "dilations", "kernel_shape", "group"}) {
    INFO(attribute);
    OnnxModel m("zero");
    m.input("x", {std::int64_t{1}, std::int64_t{4}, std::int64_t{8}, std::int64_t{8}});
    m.weight("w", {4, 4, 3, 3});
    auto& conv = m.node("Conv", {"x", "w"}, {"y"}, "conv");
    if (std::string(attribute) == "group") {
      OnnxModel::attr(conv, attribute, std::int64_t{0});
    } else {
      OnnxModel::attr(conv, attribute, std::vector<std::int64_t>{1, 0});
    }
    m.output("y");
    REQUIRE_THROWS_WITH(
        m.load("zero"),
        Catch::EndsWith("zero.onnx:/graph/node/0/attribute/0: node \"conv\" (Conv): " +
                        std::string(attribute) + " must be " +
                        (std::string(attribute) == "group" ? "a positive integer"
                                                           : "a list of positive integers")));
  }
  // A group given twice, or as a list: capcalc read the other one (a division by zero).
  {
    OnnxModel m("group_twice");
    m.input("x", {std::int64_t{1}, std::int64_t{4}, std::int64_t{8}, std::int64_t{8}});
    m.weight("w", {4, 4, 3, 3});
    auto& conv = m.node("Conv", {"x", "w"}, {"y"}, "conv");
    OnnxModel::attr(conv, "group", std::int64_t{1});
    OnnxModel::attr(conv, "group", std::vector<std::int64_t>{1});
    m.output("y");
    // ONNX's own check of the operator's contract says so first.
    REQUIRE_THROWS_WITH(m.load("group_twice"),
                        Catch::EndsWith("group_twice.onnx:/graph/node/0: node \"conv\" (Conv) is "
                                        "malformed: Attribute 'group' appeared multiple times."));
    conv.mutable_attribute()->DeleteSubrange(0, 1);
    REQUIRE_THROWS_WITH(m.load("group_list"),
                        Catch::EndsWith("group_list.onnx:/graph/node/0: node \"conv\" (Conv) is "
                                        "malformed: Mismatched attribute type in 'conv : group'"));
  }
  // Inside a Loop body too.
  OnnxModel m("zero_loop");
  m.input("x", {std::int64_t{1}, std::int64_t{4}, std::int64_t{8}});
  auto& loop = m.node("Loop", {"", "", "x"}, {"y"}, "loop");
  auto* body = loop.add_attribute();
  body->set_name("body");
  body->set_type(onnx::AttributeProto::GRAPH);
  auto* pool = body->mutable_g()->add_node();
  pool->set_op_type("MaxPool");
  pool->set_name("pool");
  pool->add_input("x");
  pool->add_output("pooled");
  OnnxModel::attr(*pool, "kernel_shape", std::vector<std::int64_t>{0});
  m.output("y");
  REQUIRE_THROWS_WITH(m.load("zero_loop"),
                      Catch::EndsWith(":/graph/node/0/attribute/0/g/node/0/attribute/0: node "
                                      "\"pool\" (MaxPool): kernel_shape must be a list of "
                                      "positive integers"));
}

TEST_CASE("onnx: malformed nodes found by fuzzing are located errors", "[onnx]") {
  // A ConvTranspose whose weight is rank 1 (ONNX's inference read its channel axes: a crash).
  OnnxModel m("rank1");
  m.input("x", {std::int64_t{1}, std::int64_t{8}, std::int64_t{16}});
  m.weight("g", {16});
  m.node("ConvTranspose", {"x", "g"}, {"y"}, "deconv");
  m.output("y");
  REQUIRE_THROWS_WITH(m.load("rank1"), Catch::EndsWith("rank1.onnx:/graph/node/0: node \"deconv\" "
                                                       "(ConvTranspose): weight \"g\" has rank 1; "
                                                       "a convolution's weight is [out channels, "
                                                       "in channels / group, kernel...]"));
  // An operator's contract as ONNX's checker states it: a Relu reads one input.
  OnnxModel two("two_inputs");
  two.input("x", {std::int64_t{2}, std::int64_t{8}});
  two.node("Relu", {"x", "x"}, {"y"});
  two.output("y");
  REQUIRE_THROWS_WITH(two.load("two_inputs"),
                      Catch::Contains("two_inputs.onnx:/graph/node/0: node \"y\" (Relu) is "
                                      "malformed: ") &&
                          Catch::Contains("has input size 2 not in range [min=1, max=1]"));
  // An attribute the operator does not define is ignored, as runtimes ignore it.
  OnnxModel extra("extra_attribute");
  extra.input("x", {std::int64_t{2}, std::int64_t{8}});
  OnnxModel::attr(extra.node("Relu", {"x"}, {"y"}), "exporter_hint", std::int64_t{1});
  extra.output("y");
  CHECK(extra.load("extra_attribute").layers.size() == 1);
  // onnxruntime's ConvInteger with one input: ONNX has no schema for it, so nothing checked
  // its arity, and its formula read the weight (an uncaught out_of_range).
  OnnxModel one("one_input");
  one.input("x", {std::int64_t{1}, std::int64_t{3}, std::int64_t{8}, std::int64_t{8}});
  one.node("ConvInteger", {"x"}, {"y"}, "conv").set_domain("com.microsoft");
  one.output("y");
  REQUIRE_THROWS_WITH(one.load("one_input"),
                      Catch::EndsWith("one_input.onnx:/graph/node/0: node \"conv\" "
                                      "(com.microsoft.ConvInteger) has too few inputs (1)"));
}

TEST_CASE("onnx: STFT's shape is inferred once its signal's is known, a scalar signal is an error",
          "[onnx]") {
  // ONNX's STFT inference read the signal's first two dims unchecked: a scalar signal (an
  // int64 from Shape and Gather) crashed it (found by fuzzing).
  const auto model = [](bool scalar_signal) {
    OnnxModel m("stft");
    m.input("audio", {std::int64_t{1}, std::int64_t{512}});
    m.constant_ints("step", {128}, /*rank0=*/true);
    m.constant_ints("length", {256}, /*rank0=*/true);
    m.constant_ints("axis", {2});
    if (scalar_signal) {
      m.node("Shape", {"audio"}, {"shape"});
      m.constant_ints("zero", {0}, /*rank0=*/true);
      m.node("Gather", {"shape", "zero"}, {"signal"});
    } else {
      m.node("Unsqueeze", {"audio", "axis"}, {"signal"});  // [1, 512, 1]
    }
    // Two-sided: ONNX 1.12 infers one-sided STFTs with the two-sided bin count.
    OnnxModel::attr(m.node("STFT", {"signal", "step", "", "length"}, {"spectrum"}, "stft"),
                    "onesided", std::int64_t{0});
    m.node("Relu", {"spectrum"}, {"y"}, "relu");
    m.output("y");
    return m;
  };
  const Graph g = model(false).load("stft");
  // 256 bins (two-sided); (512 - 256) / 128 + 1 = 3 frames; real and imaginary.
  CHECK(layer_named(g, "relu").output == capcalc::Shape{1, 3, 256, 2});
  REQUIRE(g.unknown_ops.size() == 1);
  CHECK(g.unknown_ops[0].op == "STFT");
  REQUIRE_THROWS_WITH(model(true).load("stft_scalar"),
                      Catch::EndsWith("stft_scalar.onnx:/graph/node/6: node \"stft\" (STFT): its "
                                      "signal has rank 0; STFT needs [batch, length, 1 or 2]"));
}

TEST_CASE("onnx: a weight whose dims overflow int64 is a located error", "[onnx]") {
  // Sizing the initializers before inference multiplied their dims unchecked: a signed
  // overflow (UBSan, found by fuzzing).
  OnnxModel m("huge");
  m.input("x", {std::int64_t{1}, std::int64_t{4}});
  m.weight("w", {2176, 55310146758720702});
  m.node("MatMul", {"x", "w"}, {"y"}, "mm");
  m.output("y");
  REQUIRE_THROWS_WITH(m.load("huge"),
                      Catch::EndsWith("huge.onnx:/graph/initializer/0: initializer \"w\": dims "
                                      "[2176, 55310146758720702] hold more elements than a 64-bit "
                                      "count"));
}

TEST_CASE("onnx: a convolution whose weight has more spatial dims than its input is an error",
          "[onnx]") {
  // No kernel_shape: ONNX took it from the 4-D weight and indexed the rank-2 input's spatial
  // dims out of range (a crash found by fuzzing).
  OnnxModel m("rank");
  m.input("x", {std::int64_t{1}, std::int64_t{32}});
  m.weight("w", {16, 3, 3, 3});
  auto& conv = m.node("Conv", {"x", "w"}, {"y"}, "conv");
  OnnxModel::attr(conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.output("y");
  REQUIRE_THROWS_WITH(m.load("rank"), Catch::EndsWith("rank.onnx:/graph/node/0: node \"conv\" "
                                                      "(Conv): ONNX shape inference could not "
                                                      "infer the shape of \"y\""));
}

namespace {

// torchvision's ResNet-50 (v1.5: stride on the 3x3 conv), as torch.onnx.export writes it with
// BatchNorm folded out: Conv + BatchNormalization + Relu, bottlenecks with a projection on the
// first block of each stage, GlobalAveragePool, Flatten, Gemm.
OnnxModel resnet50() {
  OnnxModel m("resnet50");
  m.input("x", {std::string("batch"), std::int64_t{3}, std::int64_t{224}, std::int64_t{224}});
  int counter = 0;
  const auto conv_bn = [&](const std::string& in, std::int64_t c_in, std::int64_t c_out,
                           std::int64_t k, std::int64_t stride, bool relu) {
    const std::string id = "n" + std::to_string(counter++);
    m.weight(id + ".w", {c_out, c_in, k, k});
    auto& conv = m.node("Conv", {in, id + ".w"}, {id + ".conv"});
    OnnxModel::attr(conv, "kernel_shape", std::vector<std::int64_t>{k, k});
    OnnxModel::attr(conv, "strides", std::vector<std::int64_t>{stride, stride});
    const std::int64_t p = k / 2;
    OnnxModel::attr(conv, "pads", std::vector<std::int64_t>{p, p, p, p});
    for (const char* s : {".s", ".b", ".m", ".v"})
      m.weight(id + s, {c_out});
    m.node("BatchNormalization", {id + ".conv", id + ".s", id + ".b", id + ".m", id + ".v"},
           {id + ".bn"});
    if (!relu) return id + ".bn";
    m.node("Relu", {id + ".bn"}, {id + ".relu"});
    return id + ".relu";
  };
  std::string x = conv_bn("x", 3, 64, 7, 2, true);
  auto& pool = m.node("MaxPool", {x}, {"pool"});
  OnnxModel::attr(pool, "kernel_shape", std::vector<std::int64_t>{3, 3});
  OnnxModel::attr(pool, "strides", std::vector<std::int64_t>{2, 2});
  OnnxModel::attr(pool, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  x = "pool";
  std::int64_t channels = 64;
  const std::int64_t widths[] = {64, 128, 256, 512};
  const int blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    for (int b = 0; b < blocks[stage]; ++b) {
      const std::int64_t width = widths[stage];
      const std::int64_t stride = b == 0 && stage > 0 ? 2 : 1;
      std::string h = conv_bn(x, channels, width, 1, 1, true);
      h = conv_bn(h, width, width, 3, stride, true);
      h = conv_bn(h, width, 4 * width, 1, 1, false);
      const std::string shortcut = b == 0 ? conv_bn(x, channels, 4 * width, 1, stride, false) : x;
      const std::string id = "add" + std::to_string(counter++);
      m.node("Add", {h, shortcut}, {id});
      m.node("Relu", {id}, {id + ".relu"});
      x = id + ".relu";
      channels = 4 * width;
    }
  }
  m.node("GlobalAveragePool", {x}, {"gap"});
  m.node("Flatten", {"gap"}, {"flat"});
  m.weight("fc.w", {1000, 2048});
  m.weight("fc.b", {1000});
  auto& fc = m.node("Gemm", {"flat", "fc.w", "fc.b"}, {"logits"});
  OnnxModel::attr(fc, "transB", std::int64_t{1});
  m.output("logits");
  return m;
}

}  // namespace

TEST_CASE("onnx: quantised convolutions and products count as their float forms", "[onnx]") {
  // onnxruntime's static quantisation (QOperator format): QLinearConv and QLinearMatMul with
  // scales and zero points between the operands, ConvInteger/MatMulInteger from dynamic
  // quantisation. The MACs are those of Conv and MatMul; scales and zero points are not
  // parameters.
  constexpr auto kU8 = onnx::TensorProto::UINT8;
  constexpr auto kI8 = onnx::TensorProto::INT8;
  OnnxModel m("quantised");
  m.input("x", {std::int64_t{1}, std::int64_t{3}, std::int64_t{224}, std::int64_t{224}}, kU8);
  for (const char* scale : {"x_scale", "y_scale", "z_scale"})
    m.scalar(scale, 0.02F);
  for (const char* zero : {"x_zp", "y_zp", "z_zp"})
    m.weight(zero, {}, kU8);
  // ResNet-50's stem: 7x7/2, 3 -> 64, with an int32 bias and per-channel weight scales.
  m.weight("w", {64, 3, 7, 7}, kI8);
  m.weight("w_scale", {64});
  m.weight("w_zp", {64}, kI8);
  m.weight("b", {64}, onnx::TensorProto::INT32);
  auto& conv = m.node("QLinearConv",
                      {"x", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp", "b"},
                      {"y"}, "stem");
  OnnxModel::attr(conv, "kernel_shape", std::vector<std::int64_t>{7, 7});
  OnnxModel::attr(conv, "strides", std::vector<std::int64_t>{2, 2});
  OnnxModel::attr(conv, "pads", std::vector<std::int64_t>{3, 3, 3, 3});
  // ConvInteger: a 1x1 conv 64 -> 32 (no bias).
  m.weight("w2", {32, 64, 1, 1}, kU8);
  m.node("ConvInteger", {"y", "w2"}, {"y2"}, "pointwise");
  auto& cast = m.node("Cast", {"y2"}, {"y2f"});
  OnnxModel::attr(cast, "to", std::int64_t{onnx::TensorProto::UINT8});
  auto& flat = m.node("Flatten", {"y2f"}, {"flat"});
  OnnxModel::attr(flat, "axis", std::int64_t{1});
  // QLinearMatMul and MatMulInteger on [1, 32 * 112 * 112] features.
  const std::int64_t features = 32 * 112 * 112;
  m.weight("fc", {features, 10}, kU8);
  m.weight("fc_scale", {});
  m.weight("fc_zp", {}, kU8);
  m.node("QLinearMatMul", {"flat", "x_scale", "x_zp", "fc", "fc_scale", "fc_zp", "z_scale", "z_zp"},
         {"z"}, "fc");
  m.weight("fc2", {features, 10}, kU8);
  m.node("MatMulInteger", {"flat", "fc2"}, {"z2"}, "fc2");
  m.output("z", kU8);
  m.output("z2", onnx::TensorProto::INT32);
  const Graph g = m.load("quantised");
  CHECK(g.unknown_ops.empty());
  const auto& stem = layer_named(g, "stem");
  CHECK(stem.op == "conv2d");
  CHECK(stem.output == capcalc::Shape{1, 64, 112, 112});
  // 64 x 3 x 49 x 112 x 112 = 118,013,952 MACs, as ResNet-50's conv1 in resnet50.json.
  CHECK(stem.counts.macs == 118'013'952);
  CHECK(stem.counts.params == 64 * 3 * 49 + 64);
  CHECK(layer_named(g, "pointwise").counts.macs == 32 * 64 * 112 * 112);
  CHECK(layer_named(g, "pointwise").counts.params == 32 * 64);
  CHECK(layer_named(g, "fc").op == "linear");
  CHECK(layer_named(g, "fc").counts.macs == features * 10);
  CHECK(layer_named(g, "fc").counts.params == features * 10);
  CHECK(layer_named(g, "fc2").counts.macs == features * 10);
  CHECK(capcalc::graph_totals(g).params == 64 * 3 * 49 + 64 + 32 * 64 + 2 * features * 10);
}

TEST_CASE("onnx: QDQ graphs and MatMulNBits count their weights, not their encodings", "[onnx]") {
  OnnxModel m("qdq");
  m.input("x", {std::int64_t{1}, std::int64_t{16}, std::int64_t{4096}});
  m.scalar("s", 0.05F);
  m.weight("zp", {}, onnx::TensorProto::INT8);
  // QDQ format: activations pass Quantize -> Dequantize; int8 weights are dequantized
  // (a constant computation, folded) before a float MatMul.
  m.node("QuantizeLinear", {"x", "s", "zp"}, {"xq"}, "x_q");
  m.node("DequantizeLinear", {"xq", "s", "zp"}, {"xdq"}, "x_dq");
  m.weight("w_q", {4096, 4096}, onnx::TensorProto::INT8);
  m.node("DequantizeLinear", {"w_q", "s", "zp"}, {"w"}, "w_dq");
  m.node("MatMul", {"xdq", "w"}, {"h"}, "q_proj");
  // onnxruntime-genai's int4 export: com.microsoft MatMulNBits, B packed as
  // [N, K / block, block / 2] bytes with one scale per block; 4096 -> 11008 (Llama-2-7B's MLP).
  m.weight("w4", {11008, 4096 / 32, 16}, onnx::TensorProto::UINT8);
  m.weight("w4_scales", {11008 * 4096 / 32});
  auto& nbits = m.node("MatMulNBits", {"h", "w4", "w4_scales"}, {"up"}, "up_proj");
  nbits.set_domain("com.microsoft");
  OnnxModel::attr(nbits, "K", std::int64_t{4096});
  OnnxModel::attr(nbits, "N", std::int64_t{11008});
  OnnxModel::attr(nbits, "bits", std::int64_t{4});
  OnnxModel::attr(nbits, "block_size", std::int64_t{32});
  m.output("up");
  const Graph g = m.load("qdq");
  CHECK(g.unknown_ops.empty());
  // Quantize: 4 FLOPs per element, dequantize 2.
  CHECK(layer_named(g, "x_q").counts.other_flops == 4 * 16 * 4096);
  CHECK(layer_named(g, "x_dq").counts.other_flops == 2 * 16 * 4096);
  CHECK(layer_named(g, "q_proj").counts.macs == 16LL * 4096 * 4096);
  CHECK(layer_named(g, "q_proj").counts.params == 4096 * 4096);
  const auto& up = layer_named(g, "up_proj");
  CHECK(up.output == capcalc::Shape{1, 16, 11008});
  CHECK(up.counts.macs == 16LL * 4096 * 11008);
  CHECK(up.counts.params == 4096 * 11008);
  CHECK(up.counts.weight_elements_read == 4096 * 11008);
  CHECK(capcalc::graph_totals(g).params == 4096 * 4096 + 4096 * 11008);
}

namespace {

// x [4, 8] -> If(cond) { then: Relu(x @ w_then [8, 16]) ; else: x @ w_else [8, else_width]
// (@ w_else2 [else_width, 16] when it is 32) } -> y. The else branch keeps its weights as the
// subgraph's own initializers.
OnnxModel if_model(bool constant_condition, std::int64_t else_width = 32) {
  OnnxModel m("branches");
  m.input("x", {std::int64_t{4}, std::int64_t{8}});
  m.weight("w_then", {8, 16});
  if (constant_condition) {
    auto& c = m.node("Constant", {}, {"cond"});
    auto* a = c.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
    a->mutable_t()->add_int32_data(1);
  } else {
    m.input("cond", {}, onnx::TensorProto::BOOL);
  }
  auto& node = m.node("If", {"cond"}, {"y"}, "branch");
  auto* then_attr = node.add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto& then_g = *then_attr->mutable_g();
  then_g.set_name("then");
  auto* mm = then_g.add_node();
  mm->set_op_type("MatMul");
  mm->set_name("then_matmul");
  mm->add_input("x");
  mm->add_input("w_then");
  mm->add_output("t");
  auto* relu = then_g.add_node();
  relu->set_op_type("Relu");
  relu->add_input("t");
  relu->add_output("t_relu");
  then_g.add_output()->set_name("t_relu");
  then_g.mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  auto* else_attr = node.add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto& else_g = *else_attr->mutable_g();
  else_g.set_name("else");
  auto* w = else_g.add_initializer();
  w->set_name("w_else");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(8);
  w->add_dims(else_width);
  auto* mm2 = else_g.add_node();
  mm2->set_op_type("MatMul");
  mm2->set_name("else_matmul");
  mm2->add_input("x");
  mm2->add_input("w_else");
  mm2->add_output("e");
  if (else_width == 32) {
    auto* w2 = else_g.add_initializer();
    w2->set_name("w_else2");
    w2->set_data_type(onnx::TensorProto::FLOAT);
    w2->add_dims(32);
    w2->add_dims(16);
    auto* mm3 = else_g.add_node();
    mm3->set_op_type("MatMul");
    mm3->set_name("else_matmul2");
    mm3->add_input("e");
    mm3->add_input("w_else2");
    mm3->add_output("e2");
  }
  else_g.add_output()->set_name(else_width == 32 ? "e2" : "e");
  else_g.mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  m.node("Sigmoid", {"y"}, {"z"}, "after");
  m.output("z");
  return m;
}

}  // namespace

TEST_CASE("onnx: If counts the branch a constant condition selects", "[onnx]") {
  const Graph g = if_model(true).load("if_constant");
  CHECK(g.unknown_ops.empty());
  // Then: 4 x 8 x 16 MACs and its 128 weights; the else branch is not run.
  const auto totals = capcalc::graph_totals(g);
  CHECK(totals.macs == 4 * 8 * 16);
  CHECK(totals.params == 8 * 16);
  CHECK(layer_named(g, "then_matmul").definition == "/graph/node/1/attribute/0/g/node/0");
  CHECK(layer_named(g, "branch/then/Relu_1").output == capcalc::Shape{4, 16});
  // The If's output feeds the rest of the graph.
  CHECK(layer_named(g, "after").output == capcalc::Shape{4, 16});
}

TEST_CASE("onnx: If with a condition unknown at import counts the costlier branch", "[onnx]") {
  const Graph g = if_model(false).load("if_runtime");
  CHECK(g.unknown_ops.empty());
  // Else: 4 x 8 x 32 + 4 x 32 x 16 = 3,072 MACs > then's 512 (+ 64 ReLU FLOPs): the upper
  // bound is kept, with the subgraph's own initializers as its parameters.
  const auto totals = capcalc::graph_totals(g);
  CHECK(totals.macs == 4 * 8 * 32 + 4 * 32 * 16);
  CHECK(totals.params == 8 * 32 + 32 * 16);
  CHECK(g.layers.size() == 3);  // Both else products and "after": nothing of then is left.
  CHECK(layer_named(g, "else_matmul").counts.macs == 1024);
  CHECK(layer_named(g, "after").output == capcalc::Shape{4, 16});
  // Branches of different shapes under an unknown condition: no way to tell what follows.
  REQUIRE_THROWS_WITH(if_model(false, 24).load("if_runtime_shapes"),
                      Catch::Contains("node \"branch\" (If): its condition is not known at "
                                      "import and its branches give \"y\" different shapes"));
}

TEST_CASE("onnx: If without both branches is an error naming the node", "[onnx]") {
  OnnxModel m = if_model(true);
  auto& node = *m.graph().mutable_node(1);
  node.mutable_attribute()->RemoveLast();
  REQUIRE_THROWS_WITH(m.load("if_broken"),
                      Catch::Contains("/graph/node/1") &&
                          Catch::Contains("node \"branch\" (If) is malformed: Required "
                                          "attribute 'else_branch' is missing."));
}

TEST_CASE("onnx: Loop and Scan without a body are errors, not a crash", "[onnx]") {
  // ONNX's Scan inference dereferenced the missing body (found by fuzzing).
  for (const char* op : {"Scan", "Loop"}) {
    INFO(op);
    OnnxModel m("no_body");
    m.input("x", {std::int64_t{2}, std::int64_t{4}});
    auto& node = m.node(op, {"x", "x"}, {"y"}, "steps");
    if (std::string(op) == "Scan") OnnxModel::attr(node, "num_scan_inputs", std::int64_t{1});
    m.output("y");
    REQUIRE_THROWS_WITH(m.load("no_body"),
                        Catch::EndsWith("no_body.onnx:/graph/node/0: node \"steps\" (" +
                                        std::string(op) + ") has no body graph"));
  }
}

namespace {

// Adds a node to a local function's body.
onnx::NodeProto& function_node(onnx::FunctionProto& f, const std::string& op,
                               const std::vector<std::string>& inputs,
                               const std::vector<std::string>& outputs,
                               const std::string& domain = "") {
  auto* n = f.add_node();
  n->set_op_type(op);
  n->set_domain(domain);
  for (const auto& i : inputs)
    n->add_input(i);
  for (const auto& o : outputs)
    n->add_output(o);
  return *n;
}

// The dynamo exporter's shape: modules as local functions. pkg.torch.Block(x, w) =
// pkg.torch.Act(MatMul(x, w)); pkg.torch.Act(t) = LeakyRelu(t, alpha = the call's "slope").
OnnxModel functions_model() {
  OnnxModel m("functions");
  auto* opset = m.model().add_opset_import();
  opset->set_domain("pkg.torch");
  opset->set_version(1);
  m.input("x", {std::int64_t{2}, std::int64_t{64}});
  m.weight("w1", {64, 64});
  m.weight("w2", {64, 10});
  onnx::FunctionProto& block = *m.model().add_functions();
  block.set_name("Block");
  block.set_domain("pkg.torch");
  block.add_input("x");
  block.add_input("w");
  block.add_output("y");
  block.add_attribute("slope");
  block.add_opset_import()->set_version(17);
  block.mutable_opset_import(0)->set_domain("");
  function_node(block, "MatMul", {"x", "w"}, {"h"}).set_name("proj");
  auto& act = function_node(block, "Act", {"h"}, {"y"}, "pkg.torch");
  auto* ref = act.add_attribute();
  ref->set_name("slope");
  ref->set_type(onnx::AttributeProto::FLOAT);
  ref->set_ref_attr_name("slope");
  onnx::FunctionProto& act_fn = *m.model().add_functions();
  act_fn.set_name("Act");
  act_fn.set_domain("pkg.torch");
  act_fn.add_input("t");
  act_fn.add_output("u");
  act_fn.add_attribute("slope");
  auto& leaky = function_node(act_fn, "LeakyRelu", {"t"}, {"u"});
  auto* alpha = leaky.add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_ref_attr_name("slope");
  auto& first = m.node("Block", {"x", "w1"}, {"b1"}, "/block1/Block");
  first.set_domain("pkg.torch");
  auto* slope = first.add_attribute();
  slope->set_name("slope");
  slope->set_type(onnx::AttributeProto::FLOAT);
  slope->set_f(0.25F);
  auto& second = m.node("Block", {"b1", "w2"}, {"b2"}, "/block2/Block");
  second.set_domain("pkg.torch");
  m.output("b2");
  return m;
}

}  // namespace

TEST_CASE("onnx: local functions are expanded into their operators", "[onnx]") {
  const Graph g = functions_model().load("functions");
  CHECK(g.unknown_ops.empty());
  // Two calls of Block: MatMul 2x64x64 then 2x64x10, each followed by its LeakyRelu.
  const auto totals = capcalc::graph_totals(g);
  CHECK(totals.macs == 2 * 64 * 64 + 2 * 64 * 10);
  CHECK(totals.params == 64 * 64 + 64 * 10);
  const auto& proj = layer_named(g, "/block2/Block/proj");
  CHECK(proj.output == capcalc::Shape{2, 10});
  CHECK(proj.definition == "/graph/node/1");  // The call in the file.
  CHECK(layer_named(g, "/block1/Block/Act_1/LeakyRelu_0").op == "leakyrelu");
  // The expanded graph itself: internal values renamed per call, referred attributes bound.
  OnnxModel m = functions_model();
  const auto origins = capcalc::onnx_import::inline_local_functions(m.model(), "f.onnx");
  const onnx::GraphProto& expanded = m.model().graph();
  REQUIRE(expanded.node_size() == 4);
  CHECK(origins == std::vector<std::string>{"/graph/node/0", "/graph/node/0", "/graph/node/1",
                                            "/graph/node/1"});
  CHECK(expanded.node(0).output(0) == "/block1/Block/h");
  CHECK(expanded.node(1).input(0) == "/block1/Block/h");
  CHECK(expanded.node(1).output(0) == "b1");
  REQUIRE(expanded.node(1).attribute_size() == 1);
  CHECK(expanded.node(1).attribute(0).name() == "alpha");
  CHECK(expanded.node(1).attribute(0).f() == 0.25F);
  // The second call gives no slope: LeakyRelu keeps its default alpha.
  CHECK(expanded.node(3).attribute_size() == 0);
}

TEST_CASE("onnx: a recursive local function is an error, not a crash", "[onnx]") {
  OnnxModel m("recursive");
  m.input("x", {std::int64_t{4}});
  onnx::FunctionProto& f = *m.model().add_functions();
  f.set_name("Loop");
  f.set_domain("pkg.self");
  f.add_input("a");
  f.add_output("b");
  function_node(f, "Loop", {"a"}, {"b"}, "pkg.self");
  auto& call = m.node("Loop", {"x"}, {"y"}, "call");
  call.set_domain("pkg.self");
  m.output("y");
  REQUIRE_THROWS_WITH(m.load("recursive"),
                      Catch::Contains("/graph/node/0") &&
                          Catch::Contains("local function pkg.self.Loop calls functions more than "
                                          "64 deep"));
}

namespace {

// h [4, 16] -> Loop(trips) { h' = Relu(h @ W [16, 16]) ; scan: h' } -> (h_final, hs [trips, 4,
// 16]).
// `downstream`: a Sigmoid reads the scan output (needs its shape).
OnnxModel loop_model(std::int64_t trips, bool downstream = true) {
  OnnxModel m("loop");
  m.input("h0", {std::int64_t{4}, std::int64_t{16}});
  m.weight("W", {16, 16});
  m.constant_ints("trips", {trips}, /*rank0=*/true);
  auto& loop = m.node("Loop", {"trips", "", "h0"}, {"h_final", "hs"}, "steps");
  auto* attr = loop.add_attribute();
  attr->set_name("body");
  attr->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto& body = *attr->mutable_g();
  body.set_name("body");
  const auto add_input = [&](const std::string& name, std::int32_t type,
                             const std::vector<std::int64_t>& dims) {
    auto* info = body.add_input();
    info->set_name(name);
    auto* t = info->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    auto* shape = t->mutable_shape();
    for (std::int64_t d : dims)
      shape->add_dim()->set_dim_value(d);
  };
  add_input("i", onnx::TensorProto::INT64, {});
  add_input("cond", onnx::TensorProto::BOOL, {});
  add_input("h", onnx::TensorProto::FLOAT, {4, 16});
  const auto body_node = [&](const std::string& op, const std::vector<std::string>& in,
                             const std::string& out, const std::string& name) {
    auto* n = body.add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& x : in)
      n->add_input(x);
    n->add_output(out);
  };
  body_node("Identity", {"cond"}, "cond_out", "keep_going");
  body_node("MatMul", {"h", "W"}, "hw", "step_matmul");
  body_node("Relu", {"hw"}, "h_next", "step_relu");
  body_node("Identity", {"h_next"}, "h_scan", "scan_copy");
  for (const char* out : {"cond_out", "h_next", "h_scan"})
    body.add_output()->set_name(out);
  body.mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::BOOL);
  body.mutable_output(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  body.mutable_output(2)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  m.output("h_final");
  if (downstream) {
    m.node("Sigmoid", {"hs"}, {"out"}, "after");
    m.output("out");
  } else {
    m.output("hs");
  }
  return m;
}

}  // namespace

TEST_CASE("onnx: a Loop with a known trip count is unrolled", "[onnx]") {
  const Graph g = loop_model(3).load("loop");
  CHECK(g.unknown_ops.empty());
  const auto totals = capcalc::graph_totals(g);
  // Three iterations of 4 x 16 x 16 MACs; W is counted once.
  CHECK(totals.macs == 3 * 4 * 16 * 16);
  CHECK(totals.params == 16 * 16);
  CHECK(layer_named(g, "steps/2/step_matmul").output == capcalc::Shape{4, 16});
  CHECK(layer_named(g, "steps/0/step_matmul").definition == "/graph/node/1/attribute/0/g/node/1");
  // The second iteration reads the first one's output.
  const auto& second = layer_named(g, "steps/1/step_matmul");
  REQUIRE(second.inputs.size() == 1);
  CHECK(g.value_name(second.inputs[0]) == "steps/0/step_relu");
  // The scan output stacks the three iterations' values: [3, 4, 16].
  CHECK(layer_named(g, "steps/scan_0").output == capcalc::Shape{3, 4, 16});
  CHECK(layer_named(g, "after").output == capcalc::Shape{3, 4, 16});
}

TEST_CASE("onnx: a Loop that cannot be unrolled is listed as unknown", "[onnx]") {
  // More iterations than capcalc unrolls, or a trip count given at run time: the Loop stays an
  // unknown operator (counted zero, listed, an error with --strict).
  OnnxModel runtime = loop_model(3, false);
  runtime.graph().mutable_node(0)->set_output(0, "unused");
  runtime.input("trips", {}, onnx::TensorProto::INT64);
  for (const Graph& g :
       {runtime.load("loop_runtime"), loop_model(100'000, false).load("loop_long")}) {
    REQUIRE(g.unknown_ops.size() == 1);
    CHECK(g.unknown_ops[0].op == "Loop");
    CHECK(capcalc::graph_totals(g).macs == 0);
  }
}

TEST_CASE("onnx: a Loop's trip count given as an input is set with --set", "[onnx]") {
  // The trip count as an int64 scalar input (a generation length): --set trips=3 unrolls the
  // loop as a constant 3 would.
  OnnxModel runtime = loop_model(3, false);
  runtime.graph().mutable_node(0)->set_output(0, "unused");
  runtime.input("trips", {}, onnx::TensorProto::INT64);
  ModelOptions options;
  options.dims["trips"] = 3;
  const Graph set = runtime.load("loop_set", options);
  const Graph constant = loop_model(3, false).load("loop_constant");
  CHECK(set.unknown_ops.empty());
  CHECK(capcalc::graph_totals(set).macs == capcalc::graph_totals(constant).macs);
  CHECK(capcalc::graph_totals(set).macs > 0);
  // A name that is neither a dim nor an integer scalar input lists both kinds.
  options.dims = {{"trip", 3}};
  REQUIRE_THROWS_WITH(runtime.load("loop_set_typo", options),
                      Catch::Contains("the model has no dimension \"trip\" to set") &&
                          Catch::Contains("integer scalar inputs: trips"));
}

namespace {

// An RNN cell written as Scan, as TensorFlow-to-ONNX converters and hand-written recurrences
// do: state h [4, 16], scan input xs (5 steps of [4, 16] along `in_axis`), body
// h' = Relu(h @ W [16, 16] + x), scan output h' stacked along `out_axis`; then a Sigmoid reads
// the stacked output.
OnnxModel scan_model(std::int64_t in_axis, std::int64_t out_axis, std::int64_t opset = 17) {
  OnnxModel m("scan", opset);
  m.input("h0", {std::int64_t{4}, std::int64_t{16}});
  if (in_axis == 0) {
    m.input("xs", {std::int64_t{5}, std::int64_t{4}, std::int64_t{16}});
  } else {
    m.input("xs", {std::int64_t{4}, std::int64_t{5}, std::int64_t{16}});
  }
  m.weight("W", {16, 16});
  auto& scan = m.node("Scan", {"h0", "xs"}, {"h_final", "hs"}, "cell");
  OnnxModel::attr(scan, "num_scan_inputs", std::int64_t{1});
  OnnxModel::attr(scan, "scan_input_axes", std::vector<std::int64_t>{in_axis});
  OnnxModel::attr(scan, "scan_output_axes", std::vector<std::int64_t>{out_axis});
  auto* attr = scan.add_attribute();
  attr->set_name("body");
  attr->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto& body = *attr->mutable_g();
  body.set_name("cell_body");
  for (const char* name : {"h", "x"}) {
    auto* info = body.add_input();
    info->set_name(name);
    auto* t = info->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(4);
    t->mutable_shape()->add_dim()->set_dim_value(16);
  }
  const auto body_node = [&](const std::string& op, const std::vector<std::string>& in,
                             const std::string& out) {
    auto* n = body.add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const auto& x : in)
      n->add_input(x);
    n->add_output(out);
  };
  body_node("MatMul", {"h", "W"}, "hw");
  body_node("Add", {"hw", "x"}, "pre");
  body_node("Relu", {"pre"}, "h_next");
  body_node("Identity", {"h_next"}, "h_scan");
  for (const char* out : {"h_next", "h_scan"}) {
    auto* info = body.add_output();
    info->set_name(out);
    info->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  m.output("h_final");
  m.node("Sigmoid", {"hs"}, {"out"}, "after");
  m.output("out");
  return m;
}

}  // namespace

TEST_CASE("onnx: a Scan is unrolled over its scan axis", "[onnx]") {
  for (const auto& [in_axis, out_axis, stacked] :
       {std::tuple{std::int64_t{0}, std::int64_t{0}, capcalc::Shape{5, 4, 16}},
        std::tuple{std::int64_t{1}, std::int64_t{1}, capcalc::Shape{4, 5, 16}},
        std::tuple{std::int64_t{-2}, std::int64_t{-1}, capcalc::Shape{4, 16, 5}}}) {
    CAPTURE(in_axis, out_axis);
    const Graph g = scan_model(in_axis, out_axis).load("scan");
    CHECK(g.unknown_ops.empty());
    const auto totals = capcalc::graph_totals(g);
    // Five steps of 4 x 16 x 16 MACs (the trip count is the scan axis' length); W counted once.
    CHECK(totals.macs == 5 * 4 * 16 * 16);
    CHECK(totals.params == 16 * 16);
    // Each step reads its slice of xs, a view of [4, 16], and the previous step's state.
    const auto& slice = layer_named(g, "cell/3/scan_input_0");
    CHECK(slice.view);
    CHECK(slice.output == capcalc::Shape{4, 16});
    const auto& add = layer_named(g, "cell/3/pre");
    REQUIRE(add.inputs.size() == 2);
    CHECK(g.value_name(add.inputs[1]) == "cell/3/scan_input_0");
    const auto& matmul = layer_named(g, "cell/3/hw");
    REQUIRE(matmul.inputs.size() == 1);
    CHECK(g.value_name(matmul.inputs[0]) == "cell/2/h_next");
    CHECK(layer_named(g, "cell/0/hw").definition == "/graph/node/0/attribute/3/g/node/0");
    // The scan output stacks the five steps along its output axis.
    CHECK(layer_named(g, "cell/scan_0").output == stacked);
    CHECK(layer_named(g, "after").output == stacked);
  }
}

TEST_CASE("onnx: a Scan that cannot be unrolled is listed as unknown", "[onnx]") {
  // Opset 8's Scan (batch axis, sequence_lens) is not read: it stays an unknown operator.
  OnnxModel old = scan_model(0, 0, 8);
  onnx::AttributeProto body;
  for (const auto& a : old.graph().node(0).attribute())
    if (a.name() == "body") body = a;
  old.graph().mutable_node(0)->clear_attribute();
  auto& node = *old.graph().mutable_node(0);
  *node.add_attribute() = body;
  node.clear_input();
  node.add_input("");
  node.add_input("h0");
  node.add_input("xs");
  OnnxModel::attr(node, "num_scan_inputs", std::int64_t{1});
  old.graph().mutable_node()->RemoveLast();  // The Sigmoid: opset 8 infers no shapes for hs.
  old.graph().mutable_output()->RemoveLast();
  const Graph g = old.load("scan_opset8");
  REQUIRE(g.unknown_ops.size() == 1);
  CHECK(g.unknown_ops[0].op == "Scan");
  CHECK(capcalc::graph_totals(g).macs == 0);
}

TEST_CASE("onnx: a malformed Scan is an error naming the node", "[onnx]") {
  // A body with one input too few for 1 state + 1 scan input.
  OnnxModel m = scan_model(0, 0);
  auto* body = m.graph().mutable_node(0)->mutable_attribute(3)->mutable_g();
  body->mutable_input()->RemoveLast();
  CHECK_THROWS_WITH(m.load("scan_bad"),
                    Catch::Contains("/graph/node/0") &&
                        Catch::Contains("node \"cell\" (Scan) needs num_scan_inputs"));
}

TEST_CASE("onnx: LSTM, GRU and RNN count their gate products per step", "[onnx]") {
  // torch.nn.LSTM(32, 64, bidirectional=True) on [seq 20, batch 4, 32], exported as one LSTM
  // node: W [2, 4·64, 32], R [2, 4·64, 64], B [2, 8·64] (torch's two biases); then a GRU
  // (64·2 -> 16) with only Y_h named, and a tanh RNN on the GRU's input.
  OnnxModel m("recurrent");
  m.input("x", {std::int64_t{20}, std::int64_t{4}, std::int64_t{32}});
  m.weight("W", {2, 256, 32});
  m.weight("R", {2, 256, 64});
  m.weight("B", {2, 512});
  auto& lstm = m.node("LSTM", {"x", "W", "R", "B"}, {"y", "y_h", "y_c"}, "lstm");
  OnnxModel::attr(lstm, "hidden_size", std::int64_t{64});
  OnnxModel::attr(lstm, "direction", std::string("bidirectional"));
  // Y [20, 2, 4, 64] -> [20, 4, 128] for the next layer.
  auto& perm = m.node("Transpose", {"y"}, {"y_t"});
  OnnxModel::attr(perm, "perm", std::vector<std::int64_t>{0, 2, 1, 3});
  m.ints("shape", {20, 4, 128});
  m.node("Reshape", {"y_t", "shape"}, {"seq"});
  m.weight("W_gru", {1, 48, 128});
  m.weight("R_gru", {1, 48, 16});
  auto& gru = m.node("GRU", {"seq", "W_gru", "R_gru"}, {"", "h_gru"}, "gru");
  OnnxModel::attr(gru, "hidden_size", std::int64_t{16});
  m.weight("W_rnn", {1, 8, 128});
  m.weight("R_rnn", {1, 8, 8});
  auto& rnn = m.node("RNN", {"seq", "W_rnn", "R_rnn"}, {"y_rnn"}, "rnn");
  OnnxModel::attr(rnn, "hidden_size", std::int64_t{8});
  m.output("h_gru");
  m.output("y_rnn");
  const Graph g = m.load("recurrent");
  CHECK(g.unknown_ops.empty());
  const auto& l = layer_named(g, "lstm");
  CHECK(l.op == "lstm");
  CHECK(l.output == capcalc::Shape{20, 2, 4, 64});
  // 20 steps x 4 sequences x 2 directions x 256 gate units x (32 + 64).
  CHECK(l.counts.macs == 20 * 4 * 2 * 256 * (32 + 64));
  CHECK(l.counts.params == 2 * 256 * 32 + 2 * 256 * 64 + 2 * 512);
  // Per step and unit: the sum of W·x and R·h and both biases over 4 gates (3 x 4), then 3
  // sigmoids (4 each), 2 tanh (5 each) and 4 products and sums.
  CHECK(l.counts.other_flops == 20 * 4 * 2 * (64 * 12 + 64 * (3 * 4 + 2 * 5 + 4)));
  const auto& r = layer_named(g, "gru");
  CHECK(r.output == capcalc::Shape{1, 4, 16});  // Only Y_h is named.
  CHECK(r.counts.macs == 20 * 4 * 48 * (128 + 16));
  CHECK(r.counts.params == 48 * 128 + 48 * 16);
  CHECK(layer_named(g, "rnn").counts.macs == 20 * 4 * 8 * (128 + 8));
  CHECK(layer_named(g, "rnn").counts.other_flops == 20 * 4 * (8 + 8 * 5));
}

TEST_CASE("onnx: an LSTM whose weights do not fit its gates is an error", "[onnx]") {
  OnnxModel m("bad_lstm");
  m.input("x", {std::int64_t{5}, std::int64_t{1}, std::int64_t{8}});
  m.weight("W", {1, 12, 8});  // 3 gates: a GRU's, not an LSTM's.
  m.weight("R", {1, 12, 4});
  auto& lstm = m.node("LSTM", {"x", "W", "R"}, {"y"}, "lstm");
  OnnxModel::attr(lstm, "hidden_size", std::int64_t{3});
  m.output("y");
  REQUIRE_THROWS_WITH(m.load("bad_lstm"), Catch::Contains("/graph/node/0") &&
                                              Catch::Contains("node \"lstm\" (LSTM): expected X"));
}

TEST_CASE("onnx: a ResNet-50 graph has torchvision's parameters and MACs", "[onnx]") {
  const Graph g = resnet50().load("resnet50");
  const auto totals = capcalc::graph_totals(g);
  // torchvision.models.resnet50 (IMAGENET1K_V1) docs table: 25,557,032 params, 4.09 "GFLOPS"
  // (which are MACs):
  // https://pytorch.org/vision/stable/models/generated/torchvision.models.resnet50.html
  CHECK(totals.params == 25'557'032);
  CHECK(static_cast<double>(totals.macs) == Approx(4.09e9).epsilon(0.01));
  CHECK(layer_named(g, "logits").output == capcalc::Shape{1, 1000});
  // The native zoo's resnet50.json counts the same.
  const Graph native =
      capcalc::load_model(std::string(CAPCALC_TEST_DATA_DIR) + "/models/resnet50.json");
  CHECK(totals.macs == capcalc::graph_totals(native).macs);
  CHECK(totals.other_flops == capcalc::graph_totals(native).other_flops);
}

TEST_CASE("onnx: load speed on a large model", "[onnx][.perf]") {
  // 200 MB of float weights with their data (raw_data), 400 MatMul + Relu layers.
  OnnxModel m("large");
  m.input("x", {std::int64_t{1}, std::int64_t{512}});
  std::string x = "x";
  const std::int64_t layers = 200;
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::string id = "l" + std::to_string(i);
    m.weight(id + ".w", {512, 512}).set_raw_data(std::string(512 * 512 * 4, '\1'));
    m.node("MatMul", {x, id + ".w"}, {id + ".mm"});
    m.node("Relu", {id + ".mm"}, {id});
    x = id;
  }
  m.output(x);
  const std::string path = m.save("large");
  const std::string bytes = m.bytes();
  const auto start = std::chrono::steady_clock::now();
  const Graph g = capcalc::load_model(path);
  const double megabytes = static_cast<double>(bytes.size()) / 1e6;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(capcalc::graph_totals(g).params == layers * 512 * 512);
  WARN("loaded " << megabytes << " MB, " << g.layers.size() << " layers in " << seconds
                 << " s: " << megabytes / seconds << " MB/s");
}

TEST_CASE("onnx: LRN, GridSample, TopK, scatters and other vision operators are counted",
          "[onnx]") {
  // AlexNet's and GoogLeNet's LRN after a ReLU; a spatial transformer's GridSample; TopK over
  // the logits; a ScatterND update; OneHot labels.
  OnnxModel m("vision_ops");
  m.input("x", {std::int64_t{1}, std::int64_t{8}, std::int64_t{16}, std::int64_t{16}});
  m.input("grid", {std::int64_t{1}, std::int64_t{8}, std::int64_t{8}, std::int64_t{2}});
  m.node("Relu", {"x"}, {"r"}, "relu");
  auto& lrn = m.node("LRN", {"r"}, {"n"}, "norm");
  OnnxModel::attr(lrn, "size", std::int64_t{5});
  m.node("GridSample", {"n", "grid"}, {"g"}, "sample");
  m.ints("k", {3});
  m.ints("flat", {1, 512});
  m.node("Reshape", {"g", "flat"}, {"logits"}, "reshape");
  m.node("TopK", {"logits", "k"}, {"values", "indices"}, "topk");
  m.node("Celu", {"values"}, {"c"}, "celu");
  m.output("c");
  const Graph g = m.load("vision_ops");
  CHECK(g.unknown_ops.empty());
  const std::int64_t elements = 8 * 16 * 16;
  CHECK(layer_named(g, "norm").counts.other_flops == (2 * 5 + 3) * elements);
  CHECK(layer_named(g, "sample").output == capcalc::Shape{1, 8, 8, 8});
  CHECK(layer_named(g, "sample").counts.other_flops == 7 * 8 * 8 * 8);
  CHECK(layer_named(g, "topk").output == capcalc::Shape{1, 3});
  CHECK(layer_named(g, "topk").counts.other_flops == 512);  // A compare per input element.
  CHECK(layer_named(g, "celu").counts.other_flops == 5 * 3);

  OnnxModel scatter("scatter");
  scatter.input("cache", {std::int64_t{4}, std::int64_t{64}});
  scatter.input("update", {std::int64_t{1}, std::int64_t{64}});
  scatter.weight("where", {1, 1}, onnx::TensorProto::INT64);
  scatter.node("ScatterND", {"cache", "where", "update"}, {"new_cache"}, "write");
  scatter.output("new_cache");
  const Graph s = scatter.load("scatter");
  CHECK(s.unknown_ops.empty());
  const auto& write = layer_named(s, "write");
  CHECK(write.counts.macs == 0);
  CHECK(write.counts.params == 0);  // Indices are not parameters.
  CHECK(write.counts.input_elements == 4 * 64 + 64);

  OnnxModel bad("bad_lrn");
  bad.input("x", {std::int64_t{1}, std::int64_t{4}, std::int64_t{4}, std::int64_t{4}});
  bad.node("LRN", {"x"}, {"y"}, "norm");
  bad.output("y");
  CHECK_THROWS_WITH(
      bad.load("bad_lrn"),
      Catch::Contains("node \"norm\" (LRN) is malformed: Required attribute 'size' is missing."));
}

// Issue 21: nested control flow and functions that crashed, hung or took exponential time.
namespace {

// x [2, 8] -> If(c) nested `depth` deep in its then branches, each else branch a Sigmoid, the
// innermost then branch a Relu; the condition is an input, not known at import.
OnnxModel nested_if_model(int depth) {
  OnnxModel m("nested_if");
  m.input("x", {std::int64_t{2}, std::int64_t{8}});
  m.input("c", {}, onnx::TensorProto::BOOL);
  onnx::GraphProto* graph = &m.graph();
  for (int level = 0; level < depth; ++level) {
    const std::string out = level == 0 ? "y" : "y" + std::to_string(level);
    auto* node = graph->add_node();
    node->set_op_type("If");
    node->set_name("if");
    node->add_input("c");
    node->add_output(out);
    if (level > 0) {
      auto* info = graph->add_output();
      info->set_name(out);
      auto* tensor = info->mutable_type()->mutable_tensor_type();
      tensor->set_elem_type(onnx::TensorProto::FLOAT);
      tensor->mutable_shape()->add_dim()->set_dim_value(2);
      tensor->mutable_shape()->add_dim()->set_dim_value(8);
    }
    const auto branch = [&](const char* name, const std::string& branch_out) {
      auto* attr = node->add_attribute();
      attr->set_name(name);
      attr->set_type(onnx::AttributeProto::GRAPH);
      attr->mutable_g()->set_name(branch_out);
      return attr->mutable_g();
    };
    onnx::GraphProto* then_graph = branch("then_branch", "t" + std::to_string(level));
    onnx::GraphProto* else_graph = branch("else_branch", "e" + std::to_string(level));
    auto* sigmoid = else_graph->add_node();
    sigmoid->set_op_type("Sigmoid");
    sigmoid->add_input("x");
    sigmoid->add_output("s" + std::to_string(level));
    auto* info = else_graph->add_output();
    info->set_name("s" + std::to_string(level));
    info->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    if (level + 1 == depth) {
      auto* relu = then_graph->add_node();
      relu->set_op_type("Relu");
      relu->add_input("x");
      relu->add_output("r");
      auto* r = then_graph->add_output();
      r->set_name("r");
      r->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    }
    graph = then_graph;
  }
  m.output("y");
  return m;
}

}  // namespace

TEST_CASE("onnx: nested Ifs with unknown conditions read each branch once", "[onnx][limits]") {
  // Reading the chosen branch again made each level double the time: 6 s at 20 levels.
  const auto start = std::chrono::steady_clock::now();
  const Graph g = nested_if_model(capcalc::kMaxSubgraphDepth).load("nested_if_64");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  // The costlier branch at every level: the outermost else branch's Sigmoid (4 FLOPs per
  // element, ops.cpp) over the innermost then branch's Relu (1).
  REQUIRE(g.layers.size() == 1);
  CHECK(g.layers[0].op == "sigmoid");
  CHECK(g.layers[0].name == "if/else/Sigmoid_0");
}

TEST_CASE("onnx: subgraphs nested past the limit are an error, not a stack overflow",
          "[onnx][limits]") {
  std::string inner = "/graph/node/0";
  for (int level = 1; level < capcalc::kMaxSubgraphDepth + 1; ++level)
    inner += "/attribute/0/g/node/0";
  REQUIRE_THROWS_WITH(nested_if_model(capcalc::kMaxSubgraphDepth + 1).load("nested_if_65"),
                      ContainsSubstring(inner + ": node \"") &&
                          ContainsSubstring("(If): subgraphs nest more than 64 deep (the limit)"));
  // Binary protobuf nested past 256 messages (3 per If: node, attribute, graph) is refused by
  // the parser, whose recursion is bounded.
  REQUIRE_THROWS_WITH(nested_if_model(100).load("nested_if_100"),
                      ContainsSubstring("not a valid ONNX model: the protobuf does not parse "
                                        "(corrupt or truncated file, or messages nested more "
                                        "than 256 deep?)"));
}

TEST_CASE("onnx: loops unrolled inside loops past the node limit fail at once", "[onnx][limits]") {
  // 4,096 iterations of a body that holds a Loop of 4,096: 16.8 million nodes.
  const std::string path = std::string(CAPCALC_TEST_DIR) + "/hostile/loop_in_loop.onnxtxt";
  const auto start = std::chrono::steady_clock::now();
  REQUIRE_THROWS_WITH(capcalc::load_model(path),
                      path +
                          ":/graph/node/0: the model expands to more than 500,000 nodes (the "
                          "limit) when its loops are unrolled and its If branches read");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("onnx: local functions that double at each level fail before they are inlined",
          "[onnx][limits]") {
  // pkg.F30 calls F29 twice, ..., F0 is a Relu: 2^30 nodes.
  OnnxModel m("doubling");
  auto* opset = m.model().add_opset_import();
  opset->set_domain("pkg");
  opset->set_version(1);
  m.input("x", {std::int64_t{4}});
  for (int k = 0; k <= 30; ++k) {
    onnx::FunctionProto& f = *m.model().add_functions();
    f.set_name("F" + std::to_string(k));
    f.set_domain("pkg");
    f.add_input("a");
    f.add_output("b");
    f.add_opset_import()->set_version(17);
    if (k == 0) {
      function_node(f, "Relu", {"a"}, {"b"});
    } else {
      function_node(f, "F" + std::to_string(k - 1), {"a"}, {"h"}, "pkg");
      function_node(f, "F" + std::to_string(k - 1), {"h"}, {"b"}, "pkg");
    }
  }
  m.node("Relu", {"x"}, {"r"}, "first");
  m.node("F30", {"r"}, {"y"}, "call").set_domain("pkg");
  m.output("y");
  const auto start = std::chrono::steady_clock::now();
  REQUIRE_THROWS_WITH(m.load("doubling"),
                      ContainsSubstring(":/graph/node/1: the model expands to more than "
                                        "500,000 nodes (the limit) when its local functions "
                                        "are inlined"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

// LayerNormalization has an ONNX schema from opset 17 on; below it the row's own rule (the
// input's shape) shapes it, and a shape the file declares for its output is held to that rule
// as ONNX's inference holds the others (issue 21).
TEST_CASE("onnx: a declared shape of an operator without a schema at the opset is checked",
          "[onnx][declared]") {
  const auto layer_norm = [](std::int64_t declared_width) {
    OnnxModel m("layernorm_opset13", 13);
    m.input("x", {std::int64_t{4}, std::int64_t{16}});
    m.weight("s", {16});
    auto& n = m.node("LayerNormalization", {"x", "s"}, {"y"}, "ln");
    OnnxModel::attr(n, "axis", std::int64_t{-1});
    m.output("y");
    auto* dims =
        m.graph().mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
    dims->add_dim()->set_dim_value(4);
    dims->add_dim()->set_dim_value(declared_width);
    return m;
  };
  const Graph g = layer_norm(16).load("layernorm_declared_right");
  REQUIRE(g.layers.size() == 1);
  CHECK(g.layers[0].op == "layernorm");
  CHECK(g.layers[0].output == capcalc::Shape{4, 16});
  REQUIRE_THROWS_WITH(layer_norm(8).load("layernorm_declared_wrong"),
                      ContainsSubstring(":/graph/node/0: node \"ln\" (LayerNormalization): the "
                                        "file declares [4, 8] for \"y\", but the operator gives "
                                        "[4, 16]"));
}

TEST_CASE("onnx: nodes that reach no graph output are named in a warning and still counted",
          "[onnx]") {
  OnnxModel m("dead");
  m.input("x", {std::int64_t{4}, std::int64_t{16}});
  m.weight("w", {16, 8});
  m.node("Relu", {"x"}, {"y"});
  m.node("MatMul", {"x", "w"}, {"z"});  // Nothing reads z.
  m.node("Relu", {"z"}, {"zz"});        // Nor zz.
  m.output("y");
  const Graph graph = m.load("dead_nodes", {});
  REQUIRE(graph.layers.size() == 3);
  REQUIRE(graph.warnings.size() == 1);
  CHECK(graph.warnings[0].find("2 nodes reach no graph output") != std::string::npos);
  CHECK(graph.warnings[0].find("at /graph/node/1") != std::string::npos);

  // A node read only inside an If's branches is live.
  OnnxModel live("live");
  live.input("x", {std::int64_t{4}, std::int64_t{16}});
  live.input("c", {}, onnx::TensorProto::BOOL);
  live.node("Relu", {"x"}, {"r"});  // Read by the branches only.
  auto& branch_if = live.node("If", {"c"}, {"y"});
  for (const char* name : {"then_branch", "else_branch"}) {
    onnx::AttributeProto& a = *branch_if.add_attribute();
    a.set_name(name);
    a.set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto& g = *a.mutable_g();
    g.set_name(name);
    onnx::NodeProto& inner = *g.add_node();
    inner.set_op_type("Sigmoid");
    inner.add_input("r");
    inner.add_output(std::string(name) + "_out");
    onnx::ValueInfoProto& out = *g.add_output();
    out.set_name(std::string(name) + "_out");
    out.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  live.output("y");
  CHECK(live.load("live_nodes", {}).warnings.empty());
}
