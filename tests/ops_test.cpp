// The operator table (src/ops.cpp): for every operator, the inferred shape, the exact counts and
// the shape errors. Every expected number is computed here from the formula it comes from
// (PyTorch's documented output-size formulas, docs/model-format.md's counting rules).
#include "ops.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "capcalc/error.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

#include "catch.hpp"

namespace {

using capcalc::CausalCounting;
using capcalc::element_count;
using capcalc::find_op;
using capcalc::Fusion;
using capcalc::GemmView;
using capcalc::Graph;
using capcalc::Layer;
using capcalc::ModelOptions;
using capcalc::op_class_name;
using capcalc::op_names;
using capcalc::OpClass;
using capcalc::OpKind;
using capcalc::parse_model;
using capcalc::Shape;

// A model with one input "x" of `shape` (JSON array text) and `layers` (the JSON array's body).
std::string model_text(const std::string& shape, const std::string& layers) {
  return R"({"format": "capcalc-model/1", "name": "t", "inputs": [{"name": "x", "shape": )" +
         shape + R"(}], "layers": [)" + layers + "]}";
}

Graph parse(const std::string& shape, const std::string& layers, const ModelOptions& options = {}) {
  return parse_model(model_text(shape, layers), "m.json", options);
}

// The layer, reading the model input directly (no input gradient in backward).
Layer only(const std::string& shape, const std::string& layer, const ModelOptions& options = {}) {
  return parse(shape, layer, options).layers.back();
}

// The layer after an rmsnorm: the norm has weights, so the layer's input needs a gradient.
Layer after_norm(const std::string& shape, const std::string& layer) {
  return parse(shape, R"({"name": "pre", "op": "rmsnorm"}, )" + layer).layers.back();
}

// PyTorch's Conv1d/Conv2d/MaxPool2d output size (torch.nn.Conv2d docs, "Shape"):
// floor((in + 2p - d(k - 1) - 1) / s) + 1.
std::int64_t conv_out(std::int64_t in, std::int64_t k, std::int64_t s = 1, std::int64_t p = 0,
                      std::int64_t d = 1) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

// PyTorch's pooling_output_shape (aten/src/ATen/native/Pool.h): with ceil_mode the division rounds
// up, but the last window must start inside the input or the left padding.
std::int64_t pool_out(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p,
                      std::int64_t d, bool ceil_mode) {
  const std::int64_t numerator = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  std::int64_t out = numerator / s + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// PyTorch's ConvTranspose2d output size (torch.nn.ConvTranspose2d docs):
// (in - 1) * s - 2p + d(k - 1) + output_padding + 1.
std::int64_t conv_transpose_out(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p,
                                std::int64_t output_padding, std::int64_t d = 1) {
  return (in - 1) * s - 2 * p + d * (k - 1) + output_padding + 1;
}

void check_zero_cost_view(const Layer& layer) {
  CHECK(layer.view);
  CHECK(layer.counts.params == 0);
  CHECK(layer.counts.macs == 0);
  CHECK(layer.counts.other_flops == 0);
  CHECK(layer.counts.input_elements == 0);
  CHECK(layer.counts.output_elements == 0);
  CHECK(layer.counts.weight_elements_read == 0);
  CHECK(layer.counts.backward_macs == 0);
  CHECK(layer.counts.backward_other_flops == 0);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Convolutions

TEST_CASE("ops: conv2d with stride, padding and bias", "[ops]") {
  const Layer l = only("[2, 3, 32, 32]",
                       R"({"name": "c", "op": "conv2d", "out_channels": 8, "kernel": 3,
                           "stride": 2, "padding": 1})");
  const std::int64_t h = conv_out(32, 3, 2, 1);  // 16
  CHECK(h == 16);
  REQUIRE(l.output == Shape{2, 8, h, h});
  const std::int64_t out = 2 * 8 * h * h;
  // docs/model-format.md: MACs = out * (C_in / groups) * kh * kw; params C_out*C_in*kh*kw + C_out.
  CHECK(l.counts.macs == out * 3 * 3 * 3);
  CHECK(l.counts.params == 8 * 3 * 3 * 3 + 8);
  CHECK(l.counts.other_flops == out);  // One bias add per output element.
  CHECK(l.counts.input_elements == 2 * 3 * 32 * 32);
  CHECK(l.counts.output_elements == out);
  CHECK(l.counts.weight_elements_read == l.counts.params);
  CHECK_FALSE(l.view);
  // Reads only the model input: the weight gradient (= forward MACs), no input gradient.
  CHECK(l.counts.backward_macs == l.counts.macs);
  CHECK(l.counts.backward_other_flops == 2 * l.counts.other_flops);
  CHECK(l.counts.flops() == 2 * l.counts.macs + l.counts.other_flops);
}

TEST_CASE("ops: conv2d backward adds the input gradient after a layer with weights", "[ops]") {
  const Layer l = after_norm("[1, 3, 8, 8]",
                             R"({"name": "c", "op": "conv2d", "out_channels": 4, "kernel": 3})");
  const std::int64_t h = conv_out(8, 3);
  CHECK(l.counts.macs == 1 * 4 * h * h * 3 * 9);
  CHECK(l.counts.backward_macs == 2 * l.counts.macs);  // Weight gradient + input gradient.
}

TEST_CASE("ops: conv2d per-axis kernel, stride, padding and dilation", "[ops]") {
  const Layer l = only("[1, 4, 20, 30]",
                       R"({"name": "c", "op": "conv2d", "out_channels": 6, "kernel": [3, 5],
                           "stride": [1, 2], "padding": [1, 2], "dilation": [2, 1],
                           "bias": false})");
  const std::int64_t h = conv_out(20, 3, 1, 1, 2);  // 18
  const std::int64_t w = conv_out(30, 5, 2, 2, 1);  // 15
  CHECK(h == 18);
  CHECK(w == 15);
  REQUIRE(l.output == Shape{1, 6, h, w});
  CHECK(l.counts.macs == 6 * h * w * 4 * 3 * 5);
  CHECK(l.counts.params == 6 * 4 * 3 * 5);
  CHECK(l.counts.other_flops == 0);  // No bias.
}

TEST_CASE("ops: conv2d \"same\" and \"valid\" padding", "[ops]") {
  // "same" with stride: TensorFlow's rule, out = ceil(in / stride).
  CHECK(only("[1, 3, 15, 15]",
             R"({"op": "conv2d", "out_channels": 2, "kernel": 4, "stride": 2, "padding": "same"})")
            .output == Shape{1, 2, (15 + 2 - 1) / 2, (15 + 2 - 1) / 2});
  // Stride 1, dilated: the size is kept (PyTorch's padding="same").
  CHECK(only("[1, 3, 15, 15]",
             R"({"op": "conv2d", "out_channels": 2, "kernel": 5, "dilation": 2,
                 "padding": "same"})")
            .output == Shape{1, 2, 15, 15});
  // "valid" is no padding.
  CHECK(only("[1, 3, 15, 15]",
             R"({"op": "conv2d", "out_channels": 2, "kernel": 4, "padding": "valid"})")
            .output == Shape{1, 2, conv_out(15, 4), conv_out(15, 4)});
  // Any other string is an expression.
  const std::string dims_model =
      R"({"format": "capcalc-model/1", "name": "t", "dims": {"p": 2},
      "inputs": [{"name": "x", "shape": [1, 3, 15, 15]}],
      "layers": [{"op": "conv2d", "out_channels": 2, "kernel": 5, "padding": "p"}]})";
  CHECK(parse_model(dims_model, "m.json").layers.back().output == Shape{1, 2, 15, 15});
}

TEST_CASE("ops: grouped and depthwise conv2d", "[ops]") {
  const Layer grouped = only("[1, 8, 10, 10]",
                             R"({"op": "conv2d", "out_channels": 16, "kernel": 3, "groups": 4,
                                 "bias": false})");
  const std::int64_t h = conv_out(10, 3);
  CHECK(grouped.counts.params == 16 * (8 / 4) * 9);
  CHECK(grouped.counts.macs == 16 * h * h * (8 / 4) * 9);

  // Depthwise (MobileNet): groups = C_in = C_out, one 3x3 filter per channel.
  const Layer depthwise = only("[1, 8, 10, 10]",
                               R"({"op": "conv2d", "out_channels": 8, "kernel": 3, "padding": 1,
                                   "groups": 8})");
  REQUIRE(depthwise.output == Shape{1, 8, 10, 10});
  CHECK(depthwise.counts.params == 8 * 1 * 9 + 8);
  CHECK(depthwise.counts.macs == 8 * 10 * 10 * 1 * 9);
}

TEST_CASE("ops: conv1d", "[ops]") {
  const Layer l = only("[2, 16, 100]",
                       R"({"op": "conv1d", "out_channels": 32, "kernel": 5, "stride": 2,
                           "padding": 2, "in_channels": 16})");
  const std::int64_t len = conv_out(100, 5, 2, 2);  // 50
  REQUIRE(l.output == Shape{2, 32, len});
  CHECK(l.counts.macs == 2 * 32 * len * 16 * 5);
  CHECK(l.counts.params == 32 * 16 * 5 + 32);
  CHECK(l.counts.other_flops == 2 * 32 * len);
}

TEST_CASE("ops: conv_transpose2d with output_padding", "[ops]") {
  const Layer l = only("[1, 16, 8, 8]",
                       R"({"op": "conv_transpose2d", "out_channels": 8, "kernel": 4, "stride": 2,
                           "padding": 1})");
  const std::int64_t h = conv_transpose_out(8, 4, 2, 1, 0);  // 16
  CHECK(h == 16);
  REQUIRE(l.output == Shape{1, 8, h, h});
  // docs/model-format.md: MACs = input elements * (C_out / groups) * kh * kw; params
  // C_in*C_out*k*k.
  CHECK(l.counts.macs == (16 * 8 * 8) * 8 * 16);
  CHECK(l.counts.params == 16 * 8 * 16 + 8);
  CHECK(l.counts.other_flops == 8 * h * h);

  const Layer padded = only("[1, 16, 8, 8]",
                            R"({"op": "conv_transpose2d", "out_channels": 8, "kernel": 3,
                                "stride": 2, "padding": 1, "output_padding": 1, "groups": 2,
                                "bias": false})");
  const std::int64_t hp = conv_transpose_out(8, 3, 2, 1, 1);  // 16
  REQUIRE(padded.output == Shape{1, 8, hp, hp});
  CHECK(padded.counts.params == 16 * (8 / 2) * 9);
  CHECK(padded.counts.macs == (16 * 8 * 8) * (8 / 2) * 9);

  REQUIRE_THROWS_WITH(parse("[1, 16, 8, 8]",
                            R"({"name": "t", "op": "conv_transpose2d", "out_channels": 8,
                                 "kernel": 3, "stride": 2, "output_padding": 2})"),
                      "m.json:/layers/0/output_padding: layer \"t\": output_padding must be "
                      "smaller than stride or dilation");
}

TEST_CASE("ops: convolution errors", "[ops][errors]") {
  REQUIRE_THROWS_WITH(
      parse("[1, 3, 224]", R"({"name": "c1", "op": "conv2d", "out_channels": 8, "kernel": 3})"),
      "m.json:/layers/0: layer \"c1\": expected an input of rank 4 [N, C, H, W], got [1, 3, 224]");
  REQUIRE_THROWS_WITH(
      parse("[1, 3]", R"({"name": "c1", "op": "conv1d", "out_channels": 8, "kernel": 3})"),
      "m.json:/layers/0: layer \"c1\": expected an input of rank 3 [N, C, L], got [1, 3]");
  REQUIRE_THROWS_WITH(parse("[1, 3, 8, 8]", R"({"name": "c", "op": "conv2d", "out_channels": 8})"),
                      "m.json:/layers/0: layer \"c\": missing required attribute \"kernel\"");
  REQUIRE_THROWS_WITH(
      parse("[1, 3, 8, 8]", R"({"name": "c", "op": "conv2d", "out_channels": 8, "kernel": -1})"),
      "m.json:/layers/0/kernel: layer \"c\": expected a positive integer, got -1");
  REQUIRE_THROWS_WITH(
      parse("[1, 3, 8, 8]", R"({"name": "c", "op": "conv2d", "out_channels": 0, "kernel": 3})"),
      "m.json:/layers/0/out_channels: layer \"c\": expected a positive integer, got 0");
  REQUIRE_THROWS_WITH(
      parse("[1, 3, 8, 8]",
            R"({"name": "c", "op": "conv2d", "out_channels": 8, "kernel": 3, "padding": -1})"),
      "m.json:/layers/0/padding: layer \"c\": expected a non-negative integer, got -1");
  REQUIRE_THROWS_WITH(
      parse("[1, 3, 8, 8]", R"({"name": "c", "op": "conv2d", "out_channels": 8, "kernel": 9})"),
      "m.json:/layers/0: layer \"c\": window of 9 (kernel 9, dilation 1) is larger than the padded "
      "input of 8");
  REQUIRE_THROWS_WITH(
      parse("[1, 8, 8, 8]",
            R"({"name": "c", "op": "conv2d", "out_channels": 16, "kernel": 3, "groups": 3})"),
      "m.json:/layers/0/groups: layer \"c\": groups = 3 must divide both in_channels (8) and "
      "out_channels (16)");
  REQUIRE_THROWS_WITH(
      parse("[1, 3, 8, 8]",
            R"({"name": "c", "op": "conv2d", "out_channels": 8, "kernel": 3, "in_channels": 4})"),
      "m.json:/layers/0/in_channels: layer \"c\": in_channels is 4 but the input [1, 3, 8, 8] has "
      "3");
  REQUIRE_THROWS_WITH(
      parse("[1, 3, 8, 8]",
            R"({"name": "c", "op": "conv2d", "out_channels": 8, "kernel": [3, 3, 3]})"),
      "m.json:/layers/0/kernel: layer \"c\": expected 2 values, got 3");
  REQUIRE_THROWS_WITH(
      parse("[1, 3, 8, 8]",
            R"({"name": "c", "op": "conv2d", "out_channels": 8, "kernel": 3, "bias": 1})"),
      "m.json:/layers/0/bias: expected true or false, got a number");
}

// ---------------------------------------------------------------------------------------------
// Dense layers

TEST_CASE("ops: linear on the last axis, with and without bias", "[ops]") {
  const Layer l =
      only("[4, 10, 64]", R"({"op": "linear", "out_features": 128, "in_features": 64})");
  REQUIRE(l.output == Shape{4, 10, 128});
  const std::int64_t rows = 4 * 10;
  // docs/model-format.md: MACs = out * in_features; params in*out + out.
  CHECK(l.counts.macs == rows * 64 * 128);
  CHECK(l.counts.params == 64 * 128 + 128);
  CHECK(l.counts.other_flops == rows * 128);
  CHECK(l.counts.input_elements == rows * 64);
  CHECK(l.counts.output_elements == rows * 128);
  CHECK(l.counts.weight_elements_read == 64 * 128 + 128);
  CHECK(l.counts.backward_macs == l.counts.macs);  // Model input: weight gradient only.

  const Layer no_bias =
      after_norm("[4, 10, 64]", R"({"op": "linear", "out_features": 128, "bias": false})");
  CHECK(no_bias.counts.params == 64 * 128);
  CHECK(no_bias.counts.other_flops == 0);
  CHECK(no_bias.counts.backward_macs == 2 * rows * 64 * 128);  // Weights + input.

  REQUIRE_THROWS_WITH(
      parse("[4, 10, 64]",
            R"({"name": "fc", "op": "linear", "out_features": 8, "in_features": 32})"),
      "m.json:/layers/0/in_features: layer \"fc\": in_features is 32 but the input [4, 10, 64] has "
      "64");
  REQUIRE_THROWS_WITH(
      parse("[4, 64]", R"({"name": "fc", "op": "linear"})"),
      "m.json:/layers/0: layer \"fc\": missing required attribute \"out_features\"");
}

TEST_CASE("ops: linear tied_to an embedding does not count the weight again", "[ops]") {
  // GPT-2's LM head reuses the token embedding (wte): the weight is read but not a parameter.
  const Graph g = parse("[2, 5]", R"({"name": "emb", "op": "embedding", "num_embeddings": 100,
                                      "embedding_dim": 64},
                                     {"name": "head", "op": "linear", "out_features": 100,
                                      "bias": false, "tied_to": "emb"})");
  const Layer& head = g.layers.back();
  REQUIRE(head.output == Shape{2, 5, 100});
  CHECK(head.counts.params == 0);
  CHECK(head.counts.macs == 10 * 64 * 100);
  CHECK(head.counts.weight_elements_read == 64 * 100);
  CHECK(capcalc::graph_totals(g).params == 100 * 64);  // Only the embedding's table.

  REQUIRE_THROWS_WITH(parse("[2, 5]",
                            R"({"name": "emb", "op": "embedding", "num_embeddings": 100,
                          "embedding_dim": 64},
                         {"name": "head", "op": "linear", "out_features": 50, "tied_to": "emb"})"),
                      "m.json:/layers/1/tied_to: layer \"head\": cannot tie a 64x50 linear to "
                      "embedding \"emb\" of 100x64");
  REQUIRE_THROWS_WITH(parse("[2, 64]", R"({"name": "n", "op": "rmsnorm"},
                          {"name": "head", "op": "linear", "out_features": 8, "tied_to": "n"})"),
                      "m.json:/layers/1/tied_to: layer \"head\": tied_to must name an earlier "
                      "embedding or linear layer, got \"n\"");
}

TEST_CASE("ops: matmul with broadcasting and transpose_b", "[ops]") {
  const std::string two_inputs = R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "a", "shape": [2, 1, 4, 8]}, {"name": "b", "shape": [3, 8, 5]}],
      "layers": [{"name": "mm", "op": "matmul", "inputs": ["a", "b"]}]})";
  const Layer l = parse_model(two_inputs, "m.json").layers.back();
  // torch.matmul: batch axes [2, 1] and [3] broadcast to [2, 3].
  REQUIRE(l.output == Shape{2, 3, 4, 5});
  CHECK(l.counts.macs == 2 * 3 * 4 * 5 * 8);
  CHECK(l.counts.params == 0);
  CHECK(l.counts.other_flops == 0);
  CHECK(l.counts.input_elements == 2 * 4 * 8 + 3 * 8 * 5);
  CHECK(l.counts.output_elements == 2 * 3 * 4 * 5);
  CHECK(l.counts.backward_macs == 0);  // Both operands are model inputs.

  const std::string transposed = R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "a", "shape": [2, 4, 8]}, {"name": "b", "shape": [2, 6, 8]}],
      "layers": [{"name": "na", "op": "rmsnorm", "input": "a"},
                 {"name": "nb", "op": "rmsnorm", "input": "b"},
                 {"name": "mm", "op": "matmul", "inputs": ["na", "nb"], "transpose_b": true}]})";
  const Layer t = parse_model(transposed, "m.json").layers.back();
  REQUIRE(t.output == Shape{2, 4, 6});
  CHECK(t.counts.macs == 2 * 4 * 6 * 8);
  CHECK(t.counts.backward_macs == 2 * t.counts.macs);  // Both operands need a gradient.

  const std::string one_grad = R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "a", "shape": [4, 8]}, {"name": "b", "shape": [8, 3]}],
      "layers": [{"name": "na", "op": "rmsnorm", "input": "a"},
                 {"name": "mm", "op": "matmul", "inputs": ["na", "b"]}]})";
  const Layer o = parse_model(one_grad, "m.json").layers.back();
  CHECK(o.counts.macs == 4 * 3 * 8);
  CHECK(o.counts.backward_macs == o.counts.macs);  // Only the first operand.

  const auto bad = [](const std::string& a, const std::string& b, const std::string& extra) {
    return parse_model(
        R"({"format": "capcalc-model/1", "name": "t", "inputs": [{"name": "a",
        "shape": )" +
            a + R"(}, {"name": "b", "shape": )" + b +
            R"(}], "layers": [{"name": "mm", "op": "matmul", "inputs": ["a", "b"])" + extra + "}]}",
        "m.json");
  };
  REQUIRE_THROWS_WITH(bad("[2, 4, 8]", "[2, 6, 8]", ""),
                      "m.json:/layers/0: layer \"mm\": cannot multiply [2, 4, 8] by [2, 6, 8]: "
                      "inner sizes 8 and 6 differ");
  REQUIRE_THROWS_WITH(bad("[2, 4, 8]", "[2, 8, 6]", R"(, "transpose_b": true)"),
                      "m.json:/layers/0: layer \"mm\": cannot multiply [2, 4, 8] by [2, 8, 6] "
                      "(transposed): inner sizes 8 and 6 differ");
  REQUIRE_THROWS_WITH(
      bad("[2, 4, 8]", "[3, 8, 5]", ""),
      "m.json:/layers/0: layer \"mm\": batch axes of [2, 4, 8] and [3, 8, 5] do not broadcast");
  REQUIRE_THROWS_WITH(
      bad("[8]", "[8, 5]", ""),
      "m.json:/layers/0: layer \"mm\": expected an input of rank 2 or more, got [8]");
  REQUIRE_THROWS_WITH(parse("[4, 8]", R"({"name": "mm", "op": "matmul"})"),
                      "m.json:/layers/0: layer \"mm\": matmul takes 2 inputs, got 1");
}

TEST_CASE("ops: embedding is a gather", "[ops]") {
  const Layer l = only("[2, 7]", R"({"op": "embedding", "num_embeddings": 1000,
                                     "embedding_dim": 16})");
  REQUIRE(l.output == Shape{2, 7, 16});
  CHECK(l.counts.params == 1000 * 16);
  CHECK(l.counts.macs == 0);
  CHECK(l.counts.other_flops == 0);
  CHECK(l.counts.input_elements == 14);
  CHECK(l.counts.weight_elements_read == 14 * 16);  // One row per id, not the whole table.
  CHECK(l.counts.output_elements == 14 * 16);
  CHECK(l.counts.backward_macs == 0);
  CHECK(l.counts.backward_other_flops == 14 * 16);  // Scatter-add of each row's gradient.
}

// ---------------------------------------------------------------------------------------------
// Attention

namespace {

// docs/model-format.md, "Attention": B batch, S queries, S_kv keys, D (D_kv) widths, H heads of d,
// KV key/value heads, D_out output width, P query/key pairs per head.
struct Attn {
  std::int64_t b, s, d_model, s_kv, d_kv, h, kv, d, d_out;

  std::int64_t q_macs() const { return b * s * d_model * h * d; }
  std::int64_t kv_macs() const { return 2 * b * s_kv * d_kv * kv * d; }
  std::int64_t out_macs() const { return b * s * h * d * d_out; }
  std::int64_t score_macs(std::int64_t pairs) const { return b * h * pairs * d; }
  std::int64_t macs(std::int64_t pairs) const {
    return q_macs() + kv_macs() + 2 * score_macs(pairs) + out_macs();
  }
  std::int64_t params(bool bias) const {
    return d_model * h * d + 2 * d_kv * kv * d + h * d * d_out +
           (bias ? h * d + 2 * kv * d + d_out : 0);
  }
  // Softmax 5 + scale 1 per score; with bias one add per projection output element.
  std::int64_t other_flops(std::int64_t pairs, bool bias) const {
    return 6 * b * h * pairs + (bias ? b * s * (h * d + d_out) + b * s_kv * 2 * kv * d : 0);
  }
};

// Pairs scored by causal attention, counted one query at a time: query i of s sees the keys up to
// offset + i (offset = s_kv - s), the last `window` of them.
std::int64_t causal_pairs_by_loop(std::int64_t s, std::int64_t s_kv, std::int64_t window) {
  std::int64_t pairs = 0;
  for (std::int64_t i = 0; i < s; ++i) {
    const std::int64_t visible = s_kv - s + i + 1;
    pairs += window > 0 && window < visible ? window : visible;
  }
  return pairs;
}

ModelOptions half() {
  ModelOptions options;
  options.counting.causal = CausalCounting::kHalf;
  return options;
}

}  // namespace

TEST_CASE("ops: self-attention counts", "[ops]") {
  const Layer l = only("[2, 10, 64]", R"({"name": "a", "op": "attention", "heads": 8})");
  const Attn a{2, 10, 64, 10, 64, 8, 8, 8, 64};
  const std::int64_t pairs = 10 * 10;
  REQUIRE(l.output == Shape{2, 10, 64});
  CHECK(l.counts.macs == a.macs(pairs));
  // nn.MultiheadAttention(64, 8) has 4 * 64 * 64 + 4 * 64 parameters.
  CHECK(l.counts.params == 4 * 64 * 64 + 4 * 64);
  CHECK(l.counts.params == a.params(true));
  CHECK(l.counts.other_flops == a.other_flops(pairs, true));
  CHECK(l.counts.weight_elements_read == l.counts.params);
  // Q and the attention output (B*S*H*d each) and K, V (B*S_kv*KV*d each) are written once and read
  // once; the scores stay on chip.
  const std::int64_t intermediates = 2 * 2 * 10 * 64 + 2 * 2 * 10 * 64;
  CHECK(l.counts.input_elements == 2 * 10 * 64 + intermediates);
  CHECK(l.counts.output_elements == 2 * 10 * 64 + intermediates);
  // Reads the model input: the Q/K/V projections need only weight gradients; the output projection
  // also needs its input gradient (it flows into the Q/K/V weights); Q·Kᵀ and AV need both
  // operands' gradients.
  CHECK(l.counts.backward_macs ==
        a.q_macs() + a.kv_macs() + 2 * a.out_macs() + 4 * a.score_macs(pairs));
  CHECK(l.counts.backward_other_flops == 2 * l.counts.other_flops);

  const Layer trained = after_norm("[2, 10, 64]", R"({"op": "attention", "heads": 8})");
  CHECK(trained.counts.backward_macs ==
        2 * (a.q_macs() + a.kv_macs() + a.out_macs()) + 4 * a.score_macs(pairs));

  const Layer no_bias = only("[2, 10, 64]", R"({"op": "attention", "heads": 8, "bias": false})");
  CHECK(no_bias.counts.params == 4 * 64 * 64);
  CHECK(no_bias.counts.other_flops == a.other_flops(pairs, false));
  CHECK(no_bias.counts.macs == a.macs(pairs));
}

TEST_CASE("ops: grouped-query, multi-query attention, head_dim and out_features", "[ops]") {
  const std::int64_t pairs = 16 * 16;
  const Layer gqa = only("[1, 16, 64]", R"({"op": "attention", "heads": 8, "kv_heads": 2})");
  const Attn g{1, 16, 64, 16, 64, 8, 2, 8, 64};
  CHECK(gqa.counts.macs == g.macs(pairs));
  CHECK(gqa.counts.params == g.params(true));
  CHECK(gqa.counts.params == 64 * 64 + 2 * 64 * 16 + 64 * 64 + (64 + 2 * 16 + 64));

  const Layer mqa = only("[1, 16, 64]", R"({"op": "attention", "heads": 8, "kv_heads": 1,
                                            "bias": false})");
  const Attn m{1, 16, 64, 16, 64, 8, 1, 8, 64};
  CHECK(mqa.counts.macs == m.macs(pairs));
  CHECK(mqa.counts.params == 64 * 64 + 2 * 64 * 8 + 64 * 64);

  const Layer wide = only("[1, 16, 64]", R"({"op": "attention", "heads": 8, "head_dim": 16,
                                             "out_features": 32})");
  const Attn w{1, 16, 64, 16, 64, 8, 8, 16, 32};
  REQUIRE(wide.output == Shape{1, 16, 32});
  CHECK(wide.counts.macs == w.macs(pairs));
  CHECK(wide.counts.params == w.params(true));
}

TEST_CASE("ops: cross-attention reads keys and values from a second input", "[ops]") {
  const std::string text = R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "q", "shape": [2, 10, 64]}, {"name": "mem", "shape": [2, 20, 32]}],
      "layers": [{"name": "n", "op": "rmsnorm", "input": "q"},
                 {"name": "x", "op": "attention", "inputs": ["n", "mem"], "heads": 4}]})";
  const Layer l = parse_model(text, "m.json").layers.back();
  const Attn a{2, 10, 64, 20, 32, 4, 4, 16, 64};
  const std::int64_t pairs = 10 * 20;
  REQUIRE(l.output == Shape{2, 10, 64});
  CHECK(l.counts.macs == a.macs(pairs));
  CHECK(l.counts.params == a.params(true));
  CHECK(l.counts.other_flops == a.other_flops(pairs, true));
  CHECK(l.counts.input_elements ==
        2 * 10 * 64 + 2 * 20 * 32 + 2 * (2 * 10 * 64) + 2 * (2 * 20 * 64));
  // The query input needs a gradient, the memory (a model input) does not.
  CHECK(l.counts.backward_macs ==
        2 * a.q_macs() + a.kv_macs() + 2 * a.out_macs() + 4 * a.score_macs(pairs));

  const std::string mismatch = R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "q", "shape": [2, 10, 64]}, {"name": "mem", "shape": [3, 20, 32]}],
      "layers": [{"name": "x", "op": "attention", "inputs": ["q", "mem"], "heads": 4}]})";
  REQUIRE_THROWS_WITH(parse_model(mismatch, "m.json"),
                      "m.json:/layers/0: layer \"x\": query [2, 10, 64] and key/value [3, 20, 32] "
                      "have different batch sizes");
  const std::string causal_short = R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "q", "shape": [1, 10, 64]}, {"name": "mem", "shape": [1, 5, 64]}],
      "layers": [{"name": "x", "op": "attention", "inputs": ["q", "mem"], "heads": 4,
                  "causal": true}]})";
  REQUIRE_THROWS_WITH(
      parse_model(causal_short, "m.json"),
      "m.json:/layers/0: layer \"x\": causal attention with 10 queries over 5 keys");
}

TEST_CASE("ops: causal attention, full and half counting, with a window", "[ops]") {
  const std::int64_t s = 10;
  const Attn a{1, s, 64, s, 64, 4, 4, 16, 64};
  const std::string causal = R"({"op": "attention", "heads": 4, "causal": true})";

  // Full (default): dense kernels compute every pair.
  const Layer full = only("[1, 10, 64]", causal);
  CHECK(full.counts.macs == a.macs(s * s));

  // Half: only pairs on or below the diagonal, S(S+1)/2.
  const Layer halved = only("[1, 10, 64]", causal, half());
  CHECK(s * (s + 1) / 2 == causal_pairs_by_loop(s, s, 0));
  CHECK(halved.counts.macs == a.macs(s * (s + 1) / 2));
  CHECK(halved.counts.other_flops == a.other_flops(s * (s + 1) / 2, true));
  CHECK(full.counts.macs - halved.counts.macs == 2 * a.score_macs(s * s - s * (s + 1) / 2));

  // Half with a window of 4: query i sees min(i + 1, 4) keys: 4*5/2 + (10 - 4) * 4 = 34.
  const Layer windowed = only(
      "[1, 10, 64]", R"({"op": "attention", "heads": 4, "causal": true, "window": 4})", half());
  CHECK(causal_pairs_by_loop(s, s, 4) == 4 * 5 / 2 + (s - 4) * 4);
  CHECK(windowed.counts.macs == a.macs(causal_pairs_by_loop(s, s, 4)));
  // A window does not change full counting.
  const Layer full_windowed =
      only("[1, 10, 64]", R"({"op": "attention", "heads": 4, "causal": true, "window": 4})");
  CHECK(full_windowed.counts.macs == a.macs(s * s));

  // Counted full, the pairs a causal mask hides (above the diagonal, or outside the window) are
  // marked: QKᵀ and AV over them, and their scale and softmax. Counted half, none are.
  CHECK(full.counts.masked_score_macs == 2 * a.score_macs(s * s - s * (s + 1) / 2));
  CHECK(full.counts.masked_other_flops == 6 * 4 * (s * s - s * (s + 1) / 2));
  CHECK(full_windowed.counts.masked_score_macs ==
        2 * a.score_macs(s * s - causal_pairs_by_loop(s, s, 4)));
  CHECK(halved.counts.masked_score_macs == 0);
  CHECK(windowed.counts.masked_other_flops == 0);
  // An encoder's attention (not causal) masks nothing.
  CHECK(only("[1, 10, 64]", R"({"op": "attention", "heads": 4})").counts.masked_score_macs == 0);

  // Fewer queries than keys (a KV cache): the 4 queries are the last 4 of 10 positions.
  const std::string cache = R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "q", "shape": [1, 4, 64]}, {"name": "kv", "shape": [1, 10, 64]}],
      "layers": [{"op": "attention", "inputs": ["q", "kv"], "heads": 4, "causal": true,
                  "window": WINDOW}]})";
  const Attn c{1, 4, 64, 10, 64, 4, 4, 16, 64};
  for (const std::int64_t window : {0, 3, 8, 20}) {
    std::string text = cache;
    text.replace(text.find("WINDOW"), 6, std::to_string(window));
    const Layer l = parse_model(text, "m.json", half()).layers.back();
    INFO("window " << window);
    CHECK(l.counts.macs == c.macs(causal_pairs_by_loop(4, 10, window)));
  }
  CHECK(causal_pairs_by_loop(4, 10, 0) == 7 + 8 + 9 + 10);
}

// Pairs of chunked attention counted one query at a time: position p of s_kv sees the positions
// of its chunk up to itself.
std::int64_t chunked_pairs_by_loop(std::int64_t s, std::int64_t s_kv, std::int64_t chunk) {
  std::int64_t pairs = 0;
  for (std::int64_t p = s_kv - s; p < s_kv; ++p)
    pairs += p - (p / chunk) * chunk + 1;
  return pairs;
}

TEST_CASE("ops: chunked attention (Llama 4) counts each chunk's causal pairs", "[ops]") {
  const std::int64_t s = 10;
  const Attn a{1, s, 64, s, 64, 4, 4, 16, 64};
  const std::string chunked = R"({"op": "attention", "heads": 4, "causal": true, "chunk": 4})";
  // Positions 0-3, 4-7, 8-9: 1+2+3+4 twice, then 1+2 = 23 pairs.
  CHECK(chunked_pairs_by_loop(s, s, 4) == 23);
  const Layer halved = only("[1, 10, 64]", chunked, half());
  CHECK(halved.counts.macs == a.macs(23));
  CHECK(halved.counts.other_flops == a.other_flops(23, true));
  // Full counting computes every pair, as for windows.
  CHECK(only("[1, 10, 64]", chunked).counts.macs == a.macs(s * s));
  // A chunk as long as the sequence is plain causal attention.
  CHECK(
      only("[1, 10, 64]", R"({"op": "attention", "heads": 4, "causal": true, "chunk": 16})", half())
          .counts.macs == a.macs(s * (s + 1) / 2));

  // The last 4 of 10 positions (positions 6-9, chunks of 4: 3, 4, 1, 2 keys).
  const std::string cache = R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "q", "shape": [1, 4, 64]}, {"name": "kv", "shape": [1, 10, 64]}],
      "layers": [{"op": "attention", "inputs": ["q", "kv"], "heads": 4, "causal": true,
                  "chunk": CHUNK}]})";
  const Attn c{1, 4, 64, 10, 64, 4, 4, 16, 64};
  for (const std::int64_t chunk : {1, 3, 4, 7, 20}) {
    std::string text = cache;
    text.replace(text.find("CHUNK"), 5, std::to_string(chunk));
    const Layer l = parse_model(text, "m.json", half()).layers.back();
    INFO("chunk " << chunk);
    CHECK(l.counts.macs == c.macs(chunked_pairs_by_loop(4, 10, chunk)));
  }
  CHECK(chunked_pairs_by_loop(4, 10, 4) == 3 + 4 + 1 + 2);

  // Counted full, the pairs outside the chunks are marked masked: 100 - 23.
  const Layer full = only("[1, 10, 64]", chunked);
  CHECK(full.counts.masked_score_macs == 2 * a.score_macs(s * s - 23));
  CHECK(halved.counts.masked_score_macs == 0);

  // Decoding with a cache: the new token at position 10 reads the cached positions of its chunk
  // (8 and 9 for chunks of 4) and the cache keeps at most one chunk.
  ModelOptions decode = half();
  decode.counting.kv_cache_length = 10;
  const Layer step = only("[1, 1, 64]", chunked, decode);
  CHECK(step.counts.kv_cache_window == 4);
  CHECK(step.counts.kv_cache_read_elements == 2 * 2 * 64);
  CHECK(step.counts.macs == Attn{1, 1, 64, 1, 64, 4, 4, 16, 64}.macs(3));

  // Llama 4's L2 norm of queries and keys has no scales: RMSNorm FLOPs, no parameters.
  const Layer l2 = only(
      "[1, 10, 64]",
      R"({"op": "attention", "heads": 4, "causal": true, "qk_norm": true, "qk_norm_affine": false})");
  const Layer rms =
      only("[1, 10, 64]", R"({"op": "attention", "heads": 4, "causal": true, "qk_norm": true})");
  CHECK(l2.counts.params == a.params(true));
  CHECK(rms.counts.params == a.params(true) + 2 * 16);
  CHECK(l2.counts.other_flops == rms.counts.other_flops);
  CHECK(
      l2.counts.other_flops >
      only("[1, 10, 64]", R"({"op": "attention", "heads": 4, "causal": true})").counts.other_flops);

  REQUIRE_THROWS_WITH(
      parse("[1, 4, 64]", R"({"name": "a", "op": "attention", "heads": 8, "chunk": 2})"),
      "m.json:/layers/0/chunk: layer \"a\": chunked attention needs \"causal\": true");
  REQUIRE_THROWS_WITH(parse("[1, 4, 64]", R"({"name": "a", "op": "attention", "heads": 8,
                                              "causal": true, "chunk": 2, "window": 2})"),
                      "m.json:/layers/0/chunk: layer \"a\": give a window or a chunk, not both");
}

TEST_CASE("ops: attention errors", "[ops][errors]") {
  REQUIRE_THROWS_WITH(parse("[2, 64]", R"({"name": "a", "op": "attention", "heads": 8})"),
                      "m.json:/layers/0: layer \"a\": expected an input of rank 3 [batch, seq, "
                      "features], got [2, 64]");
  REQUIRE_THROWS_WITH(
      parse("[1, 4, 64]", R"({"name": "a", "op": "attention", "heads": 8, "kv_heads": 3})"),
      "m.json:/layers/0/kv_heads: layer \"a\": kv_heads = 3 must divide heads = 8");
  REQUIRE_THROWS_WITH(parse("[1, 4, 64]", R"({"name": "a", "op": "attention", "heads": 5})"),
                      "m.json:/layers/0/heads: layer \"a\": features 64 are not divisible by heads "
                      "= 5; give head_dim");
  CHECK(only("[1, 4, 64]", R"({"op": "attention", "heads": 5, "head_dim": 16})").counts.params ==
        Attn{1, 4, 64, 4, 64, 5, 5, 16, 64}.params(true));
  REQUIRE_THROWS_WITH(
      parse("[1, 4, 64]", R"({"name": "a", "op": "attention", "heads": 8, "window": 2})"),
      "m.json:/layers/0/window: layer \"a\": a window needs \"causal\": true");
  REQUIRE_THROWS_WITH(parse("[1, 4, 64]", R"({"name": "a", "op": "attention"})"),
                      "m.json:/layers/0: layer \"a\": missing required attribute \"heads\"");
  const std::string three = R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "x", "shape": [1, 4, 64]}],
      "layers": [{"name": "a", "op": "attention", "inputs": ["x", "x", "x"], "heads": 8}]})";
  REQUIRE_THROWS_WITH(parse_model(three, "m.json"),
                      "m.json:/layers/0: layer \"a\": attention takes 1 to 2 inputs, got 3");
}

// ---------------------------------------------------------------------------------------------
// Normalisation, activations, elementwise

TEST_CASE("ops: layernorm, rmsnorm, batchnorm, groupnorm", "[ops]") {
  const std::int64_t n = 2 * 5 * 32;
  const Layer ln = only("[2, 5, 32]", R"({"op": "layernorm"})");
  REQUIRE(ln.output == Shape{2, 5, 32});
  CHECK(ln.counts.params == 2 * 32);
  CHECK(ln.counts.other_flops == 8 * n);
  CHECK(ln.counts.backward_other_flops == 16 * n);
  CHECK(ln.counts.input_elements == n);
  CHECK(ln.counts.output_elements == n);
  CHECK(ln.counts.macs == 0);
  CHECK(only("[2, 5, 32]", R"({"op": "layernorm", "bias": false})").counts.params == 32);
  CHECK(only("[2, 5, 32]", R"({"op": "layernorm", "affine": false})").counts.params == 0);

  const Layer rms = only("[2, 5, 32]", R"({"op": "rmsnorm"})");
  CHECK(rms.counts.params == 32);
  CHECK(rms.counts.other_flops == 4 * n);

  const std::int64_t image = 2 * 16 * 8 * 8;
  const Layer bn = only("[2, 16, 8, 8]", R"({"op": "batchnorm"})");
  CHECK(bn.counts.params == 2 * 16);                // Running mean/var are buffers, not parameters.
  CHECK(bn.counts.weight_elements_read == 4 * 16);  // Scale, shift, mean, variance.
  CHECK(bn.counts.other_flops == 2 * image);

  const Layer gn = only("[2, 16, 8, 8]", R"({"op": "groupnorm", "groups": 4})");
  CHECK(gn.counts.params == 2 * 16);
  CHECK(gn.counts.other_flops == 8 * image);

  REQUIRE_THROWS_WITH(parse("[2, 16, 8, 8]", R"({"name": "gn", "op": "groupnorm", "groups": 5})"),
                      "m.json:/layers/0/groups: layer \"gn\": groups = 5 must divide the 16 "
                      "channels of [2, 16, 8, 8]");
  REQUIRE_THROWS_WITH(parse("[2, 16, 8, 8]", R"({"name": "gn", "op": "groupnorm"})"),
                      "m.json:/layers/0: layer \"gn\": missing required attribute \"groups\"");
  REQUIRE_THROWS_WITH(
      parse("[16]", R"({"name": "bn", "op": "batchnorm"})"),
      "m.json:/layers/0: layer \"bn\": expected an input of rank 2 or more, got [16]");
}

TEST_CASE("ops: activations and softmax cost their table FLOPs per element", "[ops]") {
  struct Row {
    const char* op;
    std::int64_t flops_per_element;  // docs/model-format.md operator table.
  };
  const std::int64_t n = 3 * 7 * 11;
  for (const Row row : {Row{"relu", 1}, Row{"gelu", 8}, Row{"gelu_new", 8}, Row{"silu", 5},
                        Row{"sigmoid", 4}, Row{"tanh", 5}, Row{"softmax", 5}}) {
    INFO(row.op);
    const Layer l = only("[3, 7, 11]", std::string(R"({"op": ")") + row.op + R"("})");
    CHECK(l.op == row.op);
    CHECK(l.output == Shape{3, 7, 11});
    CHECK(l.counts.other_flops == row.flops_per_element * n);
    CHECK(l.counts.backward_other_flops == 2 * row.flops_per_element * n);
    CHECK(l.counts.macs == 0);
    CHECK(l.counts.params == 0);
    CHECK(l.counts.input_elements == n);
    CHECK(l.counts.output_elements == n);
    CHECK_FALSE(l.view);
  }
  CHECK(only("[3, 7, 11]", R"({"op": "softmax", "axis": 1})").counts.other_flops == 5 * n);
  REQUIRE_THROWS_WITH(
      parse("[3, 7, 11]", R"({"name": "s", "op": "softmax", "axis": 3})"),
      "m.json:/layers/0/axis: layer \"s\": axis 3 is out of range for a tensor of rank 3");
}

TEST_CASE("ops: add and mul broadcast, with two or more inputs", "[ops]") {
  const std::string text = R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "a", "shape": [2, 3, 4, 4]}, {"name": "b", "shape": [3, 1, 1]},
                 {"name": "c", "shape": [1, 4]}],
      "layers": [{"name": "s2", "op": "add", "inputs": ["a", "b"]},
                 {"name": "m3", "op": "mul", "inputs": ["a", "b", "c"]}]})";
  const Graph g = parse_model(text, "m.json");
  const std::int64_t out = 2 * 3 * 4 * 4;
  // NumPy broadcasting: [2, 3, 4, 4] with [3, 1, 1] (and [1, 4]) gives [2, 3, 4, 4].
  REQUIRE(g.layers[0].output == Shape{2, 3, 4, 4});
  CHECK(g.layers[0].counts.other_flops == out * 1);  // inputs - 1 per output element.
  CHECK(g.layers[0].counts.input_elements == out + 3);
  CHECK(g.layers[0].counts.output_elements == out);
  REQUIRE(g.layers[1].output == Shape{2, 3, 4, 4});
  CHECK(g.layers[1].counts.other_flops == out * 2);
  CHECK(g.layers[1].counts.input_elements == out + 3 + 4);

  const std::string bad = R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "a", "shape": [2, 3, 4]}, {"name": "b", "shape": [2, 5, 4]}],
      "layers": [{"name": "sum", "op": "add", "inputs": ["a", "b"]}]})";
  REQUIRE_THROWS_WITH(
      parse_model(bad, "m.json"),
      "m.json:/layers/0: layer \"sum\": shapes [2, 3, 4] and [2, 5, 4] do not broadcast");
  REQUIRE_THROWS_WITH(parse("[2, 3]", R"({"name": "sum", "op": "add"})"),
                      "m.json:/layers/0: layer \"sum\": add takes at least 2 inputs, got 1");
}

TEST_CASE("ops: concat", "[ops]") {
  const std::string text = R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "a", "shape": [2, 3, 4, 4]}, {"name": "b", "shape": [2, 5, 4, 4]}],
      "layers": [{"name": "c", "op": "concat", "inputs": ["a", "b"]},
                 {"name": "last", "op": "concat", "inputs": ["a", "a"], "axis": -1}]})";
  const Graph g = parse_model(text, "m.json");
  REQUIRE(g.layers[0].output == Shape{2, 8, 4, 4});
  CHECK(g.layers[0].counts.other_flops == 0);
  CHECK(g.layers[0].counts.input_elements == 2 * 3 * 16 + 2 * 5 * 16);
  CHECK(g.layers[0].counts.output_elements == 2 * 8 * 16);
  CHECK_FALSE(g.layers[0].view);  // A copy into new storage.
  REQUIRE(g.layers[1].output == Shape{2, 3, 4, 8});

  const std::string bad = R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "a", "shape": [2, 3, 4, 4]}, {"name": "b", "shape": [2, 5, 3, 4]}],
      "layers": [{"name": "c", "op": "concat", "inputs": ["a", "b"]}]})";
  REQUIRE_THROWS_WITH(
      parse_model(bad, "m.json"),
      "m.json:/layers/0: layer \"c\": cannot concatenate [2, 3, 4, 4] and [2, 5, 3, 4] on axis 1");
}

// ---------------------------------------------------------------------------------------------
// Pooling

TEST_CASE("ops: maxpool2d and avgpool2d, including ceil_mode", "[ops]") {
  // ResNet's stem pool: 3x3, stride 2, padding 1 on 112x112 gives 56x56.
  const Layer mp =
      only("[1, 64, 112, 112]", R"({"op": "maxpool2d", "kernel": 3, "stride": 2, "padding": 1})");
  CHECK(pool_out(112, 3, 2, 1, 1, false) == 56);
  REQUIRE(mp.output == Shape{1, 64, 56, 56});
  CHECK(mp.counts.other_flops == 64 * 56 * 56 * 9);  // kh * kw per output element.
  CHECK(mp.counts.input_elements == 64 * 112 * 112);
  CHECK(mp.counts.params == 0);

  // ceil_mode rounds up (GoogLeNet's pools): 112 -> 56 instead of 55.
  CHECK(only("[1, 1, 112, 112]", R"({"op": "maxpool2d", "kernel": 3, "stride": 2})").output ==
        Shape{1, 1, pool_out(112, 3, 2, 0, 1, false), pool_out(112, 3, 2, 0, 1, false)});
  CHECK(pool_out(112, 3, 2, 0, 1, false) == 55);
  CHECK(only("[1, 1, 112, 112]",
             R"({"op": "maxpool2d", "kernel": 3, "stride": 2, "ceil_mode": true})")
            .output == Shape{1, 1, 56, 56});
  // The last window would start in the right padding: PyTorch drops it (5 -> 3, not 4).
  CHECK(pool_out(5, 2, 2, 1, 1, true) == 3);
  CHECK(only("[1, 1, 5, 5]",
             R"({"op": "avgpool2d", "kernel": 2, "stride": 2, "padding": 1, "ceil_mode": true})")
            .output == Shape{1, 1, 3, 3});

  // avgpool's stride defaults to the kernel.
  const Layer ap = only("[1, 8, 10, 10]", R"({"op": "avgpool2d", "kernel": 2})");
  REQUIRE(ap.output == Shape{1, 8, 5, 5});
  CHECK(ap.counts.other_flops == 8 * 5 * 5 * 4);
  // maxpool dilation.
  CHECK(only("[1, 1, 10, 10]", R"({"op": "maxpool2d", "kernel": 3, "stride": 1, "dilation": 2})")
            .output ==
        Shape{1, 1, pool_out(10, 3, 1, 0, 2, false), pool_out(10, 3, 1, 0, 2, false)});

  REQUIRE_THROWS_WITH(
      parse("[1, 8, 10, 10]", R"({"name": "p", "op": "avgpool2d", "kernel": 2,
                                                  "padding": 2})"),
      "m.json:/layers/0/padding: layer \"p\": padding must be at most half the kernel");
  REQUIRE_THROWS_WITH(
      parse("[8, 10, 10]", R"({"name": "p", "op": "maxpool2d", "kernel": 2})"),
      "m.json:/layers/0: layer \"p\": expected an input of rank 4 [N, C, H, W], got [8, 10, 10]");
  REQUIRE_THROWS_WITH(parse("[1, 8, 10, 10]", R"({"name": "p", "op": "maxpool2d"})"),
                      "m.json:/layers/0: layer \"p\": missing required attribute \"kernel\"");
}

TEST_CASE("ops: adaptive_avgpool2d sums PyTorch's bins exactly", "[ops]") {
  // PyTorch's adaptive pooling bins: start = floor(i * in / out), end = ceil((i + 1) * in / out).
  const auto bin_total = [](std::int64_t in, std::int64_t out) {
    std::int64_t total = 0;
    for (std::int64_t i = 0; i < out; ++i) {
      const std::int64_t start = (i * in) / out;
      const std::int64_t end = ((i + 1) * in + out - 1) / out;
      total += end - start;
    }
    return total;
  };
  // 7 -> 3: bins [0, 3), [2, 5), [4, 7): 9 rows; 5 -> 2: [0, 3), [2, 5): 6 columns.
  CHECK(bin_total(7, 3) == 9);
  CHECK(bin_total(5, 2) == 6);
  const Layer l = only("[1, 2, 7, 5]", R"({"op": "adaptive_avgpool2d", "output_size": [3, 2]})");
  REQUIRE(l.output == Shape{1, 2, 3, 2});
  CHECK(l.counts.other_flops == 1 * 2 * 9 * 6);
  CHECK(l.counts.backward_other_flops == 2 * l.counts.other_flops);
  CHECK(l.counts.output_elements == 12);

  // Divisible bins: each input element is summed once.
  const Layer even = only("[1, 512, 14, 14]", R"({"op": "adaptive_avgpool2d", "output_size": 7})");
  REQUIRE(even.output == Shape{1, 512, 7, 7});
  CHECK(even.counts.other_flops == 512 * 14 * 14);

  // The closed form the layer uses, in + out - gcd(in, out), against the bins for every pair
  // of sizes to 40; an output_size of 10^12 is counted at once (the loop hung).
  for (std::int64_t in = 1; in <= 40; ++in) {
    for (std::int64_t out = 1; out <= 40; ++out) {
      const Layer p =
          only("[1, 1, " + std::to_string(in) + ", 1]",
               R"({"op": "adaptive_avgpool2d", "output_size": [)" + std::to_string(out) + ", 1]}");
      CHECK(p.counts.other_flops == bin_total(in, out));
    }
  }
  const Layer wide = only("[1, 1, 8, 8]", R"({"op": "adaptive_avgpool2d",
                                             "output_size": [1, 1000000000000]})");
  CHECK(wide.counts.other_flops == 8 * (8 + 1'000'000'000'000 - 8));
}

TEST_CASE("ops: global_avgpool keeps N, C, 1, 1", "[ops]") {
  const Layer l = only("[2, 16, 7, 7]", R"({"op": "global_avgpool"})");
  REQUIRE(l.output == Shape{2, 16, 1, 1});
  CHECK(l.counts.other_flops == 2 * 16 * 7 * 7);  // H * W per output element.
  CHECK(l.counts.output_elements == 2 * 16);
  CHECK(l.counts.input_elements == 2 * 16 * 49);
}

// ---------------------------------------------------------------------------------------------
// Views and shape-only operators

TEST_CASE("ops: flatten, reshape, transpose, permute, select, slice are free views", "[ops]") {
  const Layer flat = only("[2, 16, 1, 1]", R"({"op": "flatten"})");
  REQUIRE(flat.output == Shape{2, 16});
  check_zero_cost_view(flat);
  CHECK(only("[2, 3, 4, 5]", R"({"op": "flatten", "start_dim": 1, "end_dim": 2})").output ==
        Shape{2, 12, 5});
  CHECK(only("[2, 3, 4, 5]", R"({"op": "flatten", "start_dim": 0})").output == Shape{120});

  const Layer reshape = only("[2, 3, 4]", R"({"op": "reshape", "shape": [-1, 4]})");
  REQUIRE(reshape.output == Shape{6, 4});
  check_zero_cost_view(reshape);
  CHECK(only("[2, 3, 4]", R"({"op": "reshape", "shape": [2, "3 * 4"]})").output == Shape{2, 12});

  const Layer transpose = only("[2, 3, 4]", R"({"op": "transpose", "dim0": 1, "dim1": -1})");
  REQUIRE(transpose.output == Shape{2, 4, 3});
  check_zero_cost_view(transpose);

  const Layer permute = only("[2, 3, 4, 5]", R"({"op": "permute", "dims": [0, 3, 1, 2]})");
  REQUIRE(permute.output == Shape{2, 5, 3, 4});
  check_zero_cost_view(permute);

  // ViT's class token: x[:, 0].
  const Layer select = only("[2, 197, 768]", R"({"op": "select", "axis": 1, "index": 0})");
  REQUIRE(select.output == Shape{2, 768});
  check_zero_cost_view(select);
  CHECK(only("[2, 197, 768]", R"({"op": "select", "axis": 1, "index": -1})").output ==
        Shape{2, 768});

  // Python slicing: len(range(10)[0:7:2]) == 4, len(range(10)[-3:]) == 3.
  const Layer slice = only("[2, 10, 8]", R"({"op": "slice", "axis": 1, "end": 7, "step": 2})");
  REQUIRE(slice.output == Shape{2, 4, 8});
  check_zero_cost_view(slice);
  CHECK(only("[2, 10, 8]", R"({"op": "slice", "axis": 1, "start": -3})").output == Shape{2, 3, 8});
  CHECK(only("[2, 10, 8]", R"({"op": "slice", "axis": -1, "start": 1, "end": 100})").output ==
        Shape{2, 10, 7});
}

TEST_CASE("ops: view errors", "[ops][errors]") {
  REQUIRE_THROWS_WITH(
      parse("[2, 3, 4]", R"({"name": "r", "op": "reshape", "shape": [5, -1]})"),
      "m.json:/layers/0/shape: layer \"r\": the -1 in [5, -1] cannot be inferred: [2, 3, 4] (24 "
      "elements) does not divide by the other entries' 5");
  REQUIRE_THROWS_WITH(
      parse("[2, 3, 4]", R"({"name": "r", "op": "reshape", "shape": [5, 5]})"),
      "m.json:/layers/0/shape: layer \"r\": cannot reshape [2, 3, 4] (24 elements) to [5, 5]");
  REQUIRE_THROWS_WITH(parse("[2, 3, 4]", R"({"name": "r", "op": "reshape", "shape": [-1, -1]})"),
                      "m.json:/layers/0/shape: layer \"r\": [-1, -1] has more than one -1 "
                      "(entries 0 and 1): only one entry can be inferred");
  REQUIRE_THROWS_WITH(parse("[2, 3, 4]", R"({"name": "r", "op": "reshape"})"),
                      "m.json:/layers/0: layer \"r\": missing required attribute \"shape\"");
  REQUIRE_THROWS_WITH(
      parse("[2, 3, 4]", R"({"name": "t", "op": "transpose", "dim0": 0,
                                             "dim1": 3})"),
      "m.json:/layers/0/dim1: layer \"t\": axis 3 is out of range for a tensor of rank 3");
  REQUIRE_THROWS_WITH(parse("[2, 3, 4]", R"({"name": "p", "op": "permute", "dims": [0, 1, 1]})"),
                      "m.json:/layers/0/dims: layer \"p\": axis 1 appears twice");
  REQUIRE_THROWS_WITH(
      parse("[2, 3, 4]", R"({"name": "p", "op": "permute", "dims": [0, 1]})"),
      "m.json:/layers/0/dims: layer \"p\": dims has 2 entries but the input [2, 3, 4] has rank 3");
  REQUIRE_THROWS_WITH(
      parse("[2, 197, 768]", R"({"name": "s", "op": "select", "axis": 1,
                                                 "index": 197})"),
      "m.json:/layers/0/index: layer \"s\": index 197 is out of range for axis 1 of size 197");
  REQUIRE_THROWS_WITH(parse("[2, 10]", R"({"name": "s", "op": "slice", "axis": 1, "start": 5,
                                           "end": 5})"),
                      "m.json:/layers/0: layer \"s\": slice [5:5] of axis 1 (size 10) is empty");
  REQUIRE_THROWS_WITH(parse("[2, 3]", R"({"name": "f", "op": "flatten", "start_dim": 1,
                                          "end_dim": 0})"),
                      "m.json:/layers/0/end_dim: layer \"f\": end_dim is before start_dim");
}

TEST_CASE("ops: dropout and identity cost nothing", "[ops]") {
  const Layer dropout = only("[2, 5, 8]", R"({"op": "dropout", "p": 0.1})");
  REQUIRE(dropout.output == Shape{2, 5, 8});
  check_zero_cost_view(dropout);
  const Layer identity = only("[2, 5, 8]", R"({"op": "identity"})");
  REQUIRE(identity.output == Shape{2, 5, 8});
  check_zero_cost_view(identity);
  REQUIRE_THROWS_WITH(parse("[2, 5, 8]", R"({"name": "d", "op": "dropout", "p": 1.5})"),
                      "m.json:/layers/0/p: layer \"d\": p must be in [0, 1), got 1.5");
}

TEST_CASE("ops: upsample nearest and bilinear", "[ops]") {
  const Layer nearest = only("[1, 3, 8, 8]", R"({"op": "upsample", "scale_factor": 2})");
  REQUIRE(nearest.output == Shape{1, 3, 16, 16});
  CHECK(nearest.counts.other_flops == 0);
  CHECK(nearest.counts.output_elements == 3 * 16 * 16);
  CHECK(nearest.counts.input_elements == 3 * 8 * 8);
  CHECK_FALSE(nearest.view);

  const Layer bilinear =
      only("[1, 3, 8, 8]", R"({"op": "upsample", "size": [10, 12], "mode": "bilinear"})");
  REQUIRE(bilinear.output == Shape{1, 3, 10, 12});
  CHECK(bilinear.counts.other_flops == 7 * 3 * 10 * 12);  // 4 multiplies + 3 adds per output.

  REQUIRE_THROWS_WITH(
      parse("[1, 3, 8, 8]", R"({"name": "u", "op": "upsample", "size": 16,
                                                "scale_factor": 2})"),
      "m.json:/layers/0: layer \"u\": give exactly one of \"size\" and \"scale_factor\"");
  REQUIRE_THROWS_WITH(
      parse("[1, 3, 8, 8]",
            R"({"name": "u", "op": "upsample", "scale_factor": 2,
                                                "mode": "bilinar"})"),
      "m.json:/layers/0/mode: layer \"u\": unknown mode \"bilinar\"; did you mean \"bilinear\"?");
}

TEST_CASE("ops: class_token and position_embedding", "[ops]") {
  // ViT-B/16: 196 patches + 1 class token, width 768.
  const Layer cls = only("[2, 196, 768]", R"({"op": "class_token"})");
  REQUIRE(cls.output == Shape{2, 197, 768});
  CHECK(cls.counts.params == 768);
  CHECK(cls.counts.other_flops == 0);
  CHECK(only("[2, 196, 768]", R"({"op": "class_token", "tokens": 2})").counts.params == 2 * 768);

  const Layer pos = only("[2, 197, 768]", R"({"op": "position_embedding", "positions": 200})");
  REQUIRE(pos.output == Shape{2, 197, 768});
  CHECK(pos.counts.params == 200 * 768);
  CHECK(pos.counts.weight_elements_read == 197 * 768);  // Only the rows used.
  CHECK(pos.counts.other_flops == 2 * 197 * 768);       // One add per element.

  REQUIRE_THROWS_WITH(parse("[2, 197, 768]", R"({"name": "pe", "op": "position_embedding",
                                                 "positions": 196})"),
                      "m.json:/layers/0/positions: layer \"pe\": sequence length 197 exceeds the "
                      "196 learned positions");
  REQUIRE_THROWS_WITH(parse("[2, 768]", R"({"name": "ct", "op": "class_token"})"),
                      "m.json:/layers/0: layer \"ct\": expected an input of rank 3 [batch, seq, "
                      "features], got [2, 768]");
}

TEST_CASE("ops: every operator in the table is covered by a test here", "[ops]") {
  // If this fails, a new operator was added: give it a test case above and add it here.
  const std::vector<std::string> tested = {
      "conv1d",
      "conv2d",
      "conv_transpose2d",
      "linear",
      "matmul",
      "embedding",
      "attention",
      "mla_attention",
      "layernorm",
      "rmsnorm",
      "batchnorm",
      "groupnorm",
      "relu",
      "gelu",
      "gelu_new",
      "silu",
      "sigmoid",
      "tanh",
      "softmax",
      "add",
      "mul",
      "concat",
      "maxpool2d",
      "avgpool2d",
      "adaptive_avgpool2d",
      "global_avgpool",
      "flatten",
      "reshape",
      "transpose",
      "permute",
      "select",
      "slice",
      "dropout",
      "identity",
      "upsample",
      "class_token",
      "position_embedding",
      "moe"};  // Its and mla_attention's tests are in hf_test.cpp.
  std::vector<std::string> names;
  for (std::string_view name : capcalc::operator_names())
    names.emplace_back(name);
  CHECK(names == tested);
}

// Every operator's row says what kind of work it does; the performance model reads that.
TEST_CASE("ops: traits come from the operator's row", "[ops][traits]") {
  const Graph g = parse_model(R"({"format": "capcalc-model/1", "name": "t",
    "dims": {"batch": 2}, "inputs": [{"name": "x", "shape": ["batch", 32, 16, 16]}],
    "layers": [{"name": "conv", "op": "conv2d", "out_channels": 64, "kernel": 3, "padding": 1,
                "groups": 4},
               {"name": "bn", "op": "batchnorm"},
               {"name": "act", "op": "gelu"},
               {"name": "pool", "op": "global_avgpool"},
               {"name": "flat", "op": "flatten"},
               {"name": "fc", "op": "linear", "out_features": 10}]})",
                              "t.json");
  REQUIRE(g.layers.size() == 6);
  CHECK(g.layers[0].traits.op_class == OpClass::kMatrix);
  CHECK(g.layers[1].traits.op_class == OpClass::kNormalization);
  CHECK(g.layers[1].traits.fusion == Fusion::kInferenceOnly);
  CHECK(g.layers[2].traits.op_class == OpClass::kElementwise);
  CHECK(g.layers[2].traits.fusion == Fusion::kAlways);
  CHECK(g.layers[3].traits.op_class == OpClass::kPooling);
  CHECK(g.layers[4].traits.op_class == OpClass::kView);
  CHECK(g.layers[5].traits.op_class == OpClass::kMatrix);
  CHECK_FALSE(g.layers[2].traits.gemm);
  // A grouped convolution is `groups` implicit GEMMs: M = batch x output pixels (2 x 16 x 16),
  // N = 64 / 4 output channels, K = 32 / 4 input channels x 3 x 3.
  REQUIRE(g.layers[0].traits.gemm);
  const GemmView conv = *g.layers[0].traits.gemm;
  CHECK(conv.m == 2 * 16 * 16);
  CHECK(conv.n == 16);
  CHECK(conv.k == 8 * 9);
  CHECK(conv.count == 4);
  CHECK(conv.m * conv.n * conv.k * conv.count == g.layers[0].counts.macs);
  const GemmView fc = *g.layers[5].traits.gemm;
  CHECK(fc.m == 2);
  CHECK(fc.n == 10);
  CHECK(fc.k == 64);
  CHECK(op_class_name(OpClass::kDataMovement) == "data_movement");
}

TEST_CASE("ops: every operator row names a class", "[ops][traits]") {
  for (std::string_view name : op_names()) {
    INFO(name);
    const OpKind* kind = find_op(name);
    REQUIRE(kind != nullptr);
    CHECK(kind->op_class != OpClass::kUnknown);
    // Only elementwise work and normalisation fuse.
    if (kind->fusion != Fusion::kNever) {
      CHECK((kind->op_class == OpClass::kElementwise || kind->op_class == OpClass::kNormalization));
    }
  }
}

// A batched product of activations is one GEMM per batch element; a transposed convolution
// scatters each input pixel's product with the kernel (M = input pixels, N = out x kernel).
TEST_CASE("ops: GEMM views of matmul and transposed convolution", "[ops][traits]") {
  const Graph g = parse_model(R"({"format": "capcalc-model/1", "name": "t",
    "dims": {"batch": 2}, "inputs": [{"name": "a", "shape": ["batch", 12, 128, 64]},
                                     {"name": "b", "shape": ["batch", 12, 64, 128]},
                                     {"name": "img", "shape": ["batch", 8, 4, 4]}],
    "layers": [{"name": "scores", "op": "matmul", "inputs": ["a", "b"]},
               {"name": "up", "op": "conv_transpose2d", "inputs": ["img"], "out_channels": 16,
                "kernel": 2, "stride": 2}]})",
                              "t.json");
  const GemmView mm = *g.layers[0].traits.gemm;
  CHECK(mm.m == 128);
  CHECK(mm.n == 128);
  CHECK(mm.k == 64);
  CHECK(mm.count == 2 * 12);
  const GemmView up = *g.layers[1].traits.gemm;
  CHECK(up.m == 2 * 4 * 4);
  CHECK(up.n == 16 * 4);
  CHECK(up.k == 8);
  CHECK(up.m * up.n * up.k * up.count == g.layers[1].counts.macs);
}

// The weight tensors a layer's products read: what mixed precision casts.
TEST_CASE("ops: weight tensors of linear, convolution and attention layers", "[ops][traits]") {
  const Graph g = parse_model(R"({"format": "capcalc-model/1", "name": "t",
    "inputs": [{"name": "x", "shape": [1, 8, 64]}],
    "layers": [{"name": "fc", "op": "linear", "out_features": 64, "bias": false},
               {"name": "qkv", "op": "attention", "heads": 4, "qkv_bias": true, "out_bias": false},
               {"name": "act", "op": "gelu"}]})",
                              "t.json");
  CHECK(g.layers[0].traits.weight_tensors == 1);
  CHECK(g.layers[1].traits.weight_tensors == 4 + 3);  // Q, K, V, O and Q/K/V biases.
  CHECK(g.layers[2].traits.weight_tensors == 0);
}
