// --batch on ONNX models exported with fixed shapes (issue 20, section 5): the batch they were
// exported with is accepted, another one rewrites the inputs' leading axis and infers again,
// and a graph that bakes the exported batch into a Reshape says where and what to do.
#include <cstdint>
#include <string>
#include <vector>

#include "capcalc/error.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

#include "catch.hpp"
#include "onnx_builder.hpp"

namespace {

using capcalc::Graph;
using capcalc::ModelOptions;
using capcalc::test::OnnxModel;

// x [1, 4, 16] -> MatMul [16, 16] -> Reshape(target) -> MatMul by itself transposed per head.
// The file declares its output's shape at batch 1, as torch.onnx.export writes it.
OnnxModel heads_model(const std::vector<std::int64_t>& target) {
  OnnxModel m("fixed_heads");
  m.input("x", {std::int64_t{1}, std::int64_t{4}, std::int64_t{16}});
  m.weight("w", {16, 16});
  m.node("MatMul", {"x", "w"}, {"proj"}, "/proj/MatMul");
  m.ints("heads_shape", target);
  m.node("Reshape", {"proj", "heads_shape"}, {"heads"}, "/attn/Reshape");
  m.ints("perm", {0, 2, 1, 3});
  auto& t = m.node("Transpose", {"heads"}, {"q"}, "/attn/Transpose");
  OnnxModel::attr(t, "perm", std::vector<std::int64_t>{0, 2, 1, 3});
  auto& k = m.node("Transpose", {"heads"}, {"k"}, "/attn/Transpose_k");
  OnnxModel::attr(k, "perm", std::vector<std::int64_t>{0, 2, 3, 1});
  m.node("MatMul", {"q", "k"}, {"scores"}, "/attn/MatMul");
  m.output("scores");
  auto* shape = m.graph().mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  for (std::int64_t d : {1, 2, 4, 4})
    shape->add_dim()->set_dim_value(d);
  return m;
}

ModelOptions batch(std::int64_t n) {
  ModelOptions options;
  options.dims["batch"] = n;
  return options;
}

}  // namespace

TEST_CASE("onnx fixed shapes: --batch 1 on inputs fixed at batch 1 is accepted", "[onnx]") {
  const Graph g = heads_model({1, 4, 2, 8}).load("fixed_b1", batch(1));
  CHECK(g.batch == 1);
  // proj 4·16·16, scores 2 heads · 4·8·4.
  CHECK(capcalc::graph_totals(g).macs == 4 * 16 * 16 + 2 * 4 * 8 * 4);
}

TEST_CASE("onnx fixed shapes: --batch N rewrites the inputs' leading axis", "[onnx]") {
  // A graph whose Reshape keeps the batch as 0 ("copy the input's dim") runs at any batch.
  const Graph g = heads_model({0, 4, 2, 8}).load("fixed_b3", batch(3));
  CHECK(g.batch == 3);
  CHECK(g.inputs.at(0).shape == capcalc::Shape{3, 4, 16});
  CHECK(capcalc::test::layer_named(g, "/attn/MatMul").output == capcalc::Shape{3, 2, 4, 4});
  // Three times batch 1's: 3 · (4·16·16 + 2·4·8·4).
  CHECK(capcalc::graph_totals(g).macs == 3 * (4 * 16 * 16 + 2 * 4 * 8 * 4));
}

TEST_CASE("onnx fixed shapes: a Reshape that bakes the batch in is named", "[onnx]") {
  // [1, -1, 2, 8] reads a batch of 3 as 12 positions of one sample: it would count batch 1.
  const OnnxModel wildcard = heads_model({1, -1, 2, 8});
  CHECK_THROWS_WITH(
      wildcard.load("fixed_baked", batch(3)),
      Catch::Contains(":/graph/node/1: node \"/attn/Reshape\" (Reshape) reshapes [3, 4, 16] to "
                      "[1, -1, 2, 8]: the graph bakes in the batch of 1 it was exported with, so "
                      "it cannot run at --batch 3; export it with a dynamic batch axis"));
  // [1, 4, 2, 8], constant folded at export, no longer holds a batch of 3's elements.
  const OnnxModel folded = heads_model({1, 4, 2, 8});
  CHECK_THROWS_WITH(folded.load("fixed_folded", batch(2)),
                    Catch::Contains("node \"/attn/Reshape\" (Reshape) reshapes [2, 4, 16] to "
                                    "[1, 4, 2, 8]") &&
                        Catch::Contains("export it with a dynamic batch axis"));
}

TEST_CASE("onnx fixed shapes: inputs that disagree on a leading size have no batch", "[onnx]") {
  OnnxModel m("two_inputs");
  m.input("a", {std::int64_t{1}, std::int64_t{8}});
  m.input("b", {std::int64_t{2}, std::int64_t{8}});
  m.weight("w", {8, 8});
  m.node("MatMul", {"a", "w"}, {"ya"});
  m.node("MatMul", {"b", "w"}, {"yb"});
  m.output("ya");
  m.output("yb");
  CHECK_THROWS_WITH(m.load("fixed_two", batch(4)),
                    Catch::Contains("the model has no dimension \"batch\" to set (its inputs have "
                                    "fixed shapes)"));
}
