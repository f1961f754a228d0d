// capcalc::Graph helpers (src/graph.cpp): totals, liveness of activations, shape strings. The
// graphs are built by hand so that every expected peak can be followed step by step.
#include "capcalc/graph.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "capcalc/model.hpp"

#include "catch.hpp"
#include "checked.hpp"

namespace {

using capcalc::Graph;
using capcalc::graph_totals;
using capcalc::GraphInput;
using capcalc::Layer;
using capcalc::Shape;

// Appends a layer of `elements` output elements reading `inputs` (value ids); returns its id.
std::int32_t add(Graph& g, const std::string& name, std::vector<std::int32_t> inputs,
                 std::int64_t elements, bool view = false) {
  Layer layer;
  layer.name = name;
  layer.op = view ? "flatten" : "relu";
  layer.inputs = std::move(inputs);
  layer.output = Shape{elements};
  layer.view = view;
  g.layers.push_back(layer);
  return g.layer_value(g.layers.size() - 1);
}

Graph with_input(std::int64_t elements) {
  Graph g;
  g.inputs.push_back(GraphInput{"x", Shape{elements}});
  return g;
}

}  // namespace

TEST_CASE("graph: shape_to_string and element_count", "[graph]") {
  CHECK(capcalc::shape_to_string(Shape{1, 3, 224, 224}) == "[1, 3, 224, 224]");
  CHECK(capcalc::shape_to_string(Shape{7}) == "[7]");
  CHECK(capcalc::shape_to_string(Shape{}) == "[]");
  CHECK(capcalc::element_count(Shape{1, 3, 224, 224}) == 3 * 224 * 224);
  CHECK(capcalc::element_count(Shape{}) == 1);  // A scalar.
  REQUIRE_THROWS_AS(capcalc::element_count(Shape{1LL << 32, 1LL << 32}), capcalc::OverflowError);
}

TEST_CASE("graph: value ids number the inputs first, then the layers", "[graph]") {
  Graph g = with_input(4);
  g.inputs.push_back(GraphInput{"y", Shape{2, 3}});
  const std::int32_t a = add(g, "a", {0}, 9);
  CHECK(a == 2);
  CHECK(g.value_name(0) == "x");
  CHECK(g.value_name(1) == "y");
  CHECK(g.value_name(2) == "a");
  CHECK(g.value_shape(1) == Shape{2, 3});
  CHECK(g.value_shape(2) == Shape{9});
}

namespace {

// Named fields, so that a new field in LayerCounts cannot shift these values.
capcalc::LayerCounts counts(std::int64_t params, std::int64_t macs, std::int64_t other_flops,
                            std::int64_t input_elements, std::int64_t weight_elements_read,
                            std::int64_t output_elements, std::int64_t backward_macs,
                            std::int64_t backward_other_flops) {
  capcalc::LayerCounts c;
  c.params = params;
  c.macs = macs;
  c.other_flops = other_flops;
  c.input_elements = input_elements;
  c.weight_elements_read = weight_elements_read;
  c.output_elements = output_elements;
  c.backward_macs = backward_macs;
  c.backward_other_flops = backward_other_flops;
  return c;
}

}  // namespace

TEST_CASE("graph: graph_totals sums every layer", "[graph]") {
  Graph g = with_input(10);
  add(g, "a", {0}, 20);
  add(g, "b", {1}, 30);
  add(g, "v", {2}, 30, true);
  g.outputs = {3};
  capcalc::LayerCounts& a = g.layers[0].counts;
  a = counts(100, 1000, 50, 10, 100, 20, 2000, 100);
  capcalc::LayerCounts& b = g.layers[1].counts;
  b = counts(7, 3, 4, 20, 7, 30, 6, 8);
  CHECK(a.flops() == 2 * 1000 + 50);
  CHECK(a.backward_flops() == 2 * 2000 + 100);
  CHECK(a.moved_elements() == 10 + 100 + 20);

  const capcalc::GraphTotals t = graph_totals(g);
  CHECK(t.params == 107);
  CHECK(t.macs == 1003);
  CHECK(t.other_flops == 54);
  CHECK(t.flops == 2 * 1003 + 54);
  CHECK(t.backward_macs == 2006);
  CHECK(t.backward_flops == (2 * 2000 + 100) + (2 * 6 + 8));
  CHECK(t.moved_elements == (10 + 100 + 20) + (20 + 7 + 30));
  CHECK(t.activation_elements == 20 + 30);  // The view adds no storage.
}

TEST_CASE("graph: a sum that overflows is an error, not a wrap", "[graph]") {
  Graph g = with_input(1);
  add(g, "a", {0}, 1);
  add(g, "b", {1}, 1);
  g.outputs = {2};
  g.layers[0].counts.macs = INT64_MAX / 2 + 1;
  g.layers[1].counts.macs = INT64_MAX / 2 + 1;
  REQUIRE_THROWS_AS(graph_totals(g), capcalc::OverflowError);
}

TEST_CASE("graph: peak live elements of a chain", "[graph]") {
  // x(10) -> a(20) -> b(30) -> c(5), output c.
  //   step a: x + a = 30, then x dies -> 20
  //   step b: a + b = 50, then a dies -> 30
  //   step c: b + c = 35, then b dies -> 5
  Graph g = with_input(10);
  const std::int32_t a = add(g, "a", {0}, 20);
  const std::int32_t b = add(g, "b", {a}, 30);
  g.outputs = {add(g, "c", {b}, 5)};
  CHECK(graph_totals(g).peak_live_elements == 50);
}

TEST_CASE("graph: a residual keeps its source alive until the add", "[graph]") {
  // x(4) -> a(100) -> r(10) -> c(10) -> add(c, a) = s(100), output s.
  //   step a: 4 + 100 = 104, x dies -> 100
  //   step r: 100 + 10 = 110
  //   step c: 110 + 10 = 120, r dies -> 110
  //   step s: 110 + 100 = 210 (a is still alive for the add), a and c die ->
  //   100
  Graph g = with_input(4);
  const std::int32_t a = add(g, "a", {0}, 100);
  const std::int32_t r = add(g, "r", {a}, 10);
  const std::int32_t c = add(g, "c", {r}, 10);
  g.outputs = {add(g, "s", {c, a}, 100)};
  CHECK(graph_totals(g).peak_live_elements == 210);

  // The same chain without the skip: a dies after r reads it, so the last step holds c + s.
  Graph plain = with_input(4);
  const std::int32_t pa = add(plain, "a", {0}, 100);
  const std::int32_t pr = add(plain, "r", {pa}, 10);
  const std::int32_t pc = add(plain, "c", {pr}, 10);
  plain.outputs = {add(plain, "s", {pc}, 100)};
  // step a 104 -> 100; step r 110 -> 10; step c 20 -> 10; step s 110.
  CHECK(graph_totals(plain).peak_live_elements == 110);
}

TEST_CASE("graph: views share their input's storage and extend its life", "[graph]") {
  // x(1) -> a(20) -> v = view(a) -> b(5) reads v; d(7) reads v; output d.
  //   step a: 1 + 20 = 21, x dies -> 20
  //   step v: a view adds nothing -> 20 (a copy would make it 40)
  //   step b: 20 + 5 = 25, b is never read again -> 20
  //   step d: 20 + 7 = 27 (a lives on through the view), a dies -> 7
  Graph g = with_input(1);
  const std::int32_t a = add(g, "a", {0}, 20);
  const std::int32_t v = add(g, "v", {a}, 20, true);
  add(g, "b", {v}, 5);
  g.outputs = {add(g, "d", {v}, 7)};
  const capcalc::GraphTotals t = graph_totals(g);
  CHECK(t.peak_live_elements == 27);
  CHECK(t.activation_elements == 20 + 5 + 7);

  // A view that is a model output keeps its storage to the end.
  //   step a: 4 + 50 = 54 (x is read again at step c)
  //   step v: 54
  //   step c: 54 + 3 = 57, x dies -> 53; a stays (its view is an output)
  Graph out = with_input(4);
  const std::int32_t oa = add(out, "a", {0}, 50);
  const std::int32_t ov = add(out, "v", {oa}, 50, true);
  const std::int32_t oc = add(out, "c", {0}, 3);
  out.outputs = {ov, oc};
  CHECK(graph_totals(out).peak_live_elements == 57);
}

TEST_CASE("graph: liveness of a parsed model", "[graph]") {
  // x [1, 8] -> fc1 [1, 32] -> relu [1, 32] -> fc2 [1, 4].
  //   fc1: 8 + 32 = 40, x dies -> 32; relu: 32 + 32 = 64, fc1 dies -> 32; fc2:
  //   32 + 4 = 36.
  const char* text = R"({"format": "capcalc-model/1", "name": "mlp",
      "inputs": [{"name": "x", "shape": [1, 8]}],
      "layers": [{"name": "fc1", "op": "linear", "out_features": 32},
                 {"name": "act", "op": "relu"},
                 {"name": "fc2", "op": "linear", "out_features": 4}]})";
  const Graph g = capcalc::parse_model(text, "m.json");
  const capcalc::GraphTotals t = graph_totals(g);
  CHECK(t.peak_live_elements == 64);
  CHECK(t.activation_elements == 32 + 32 + 4);
  CHECK(t.params == (8 * 32 + 32) + (32 * 4 + 4));
  CHECK(t.macs == 8 * 32 + 32 * 4);
  CHECK(t.other_flops == 32 + 32 + 4);  // Bias, relu, bias.
}

TEST_CASE("graph: decode drops the layers computed from prefill-only inputs alone", "[graph]") {
  // tokens -> a; image -> enc -> proj; merge(a, proj) -> out. Only enc and proj ran once.
  Graph g;
  g.inputs.push_back(GraphInput{"tokens", Shape{8}});
  g.inputs.push_back(GraphInput{"image", Shape{64}, true});
  const std::int32_t a = add(g, "a", {0}, 8);
  const std::int32_t enc = add(g, "enc", {1}, 64);
  const std::int32_t proj = add(g, "proj", {enc}, 8);
  add(g, "merge", {a, proj}, 8);
  for (Layer& layer : g.layers) {
    layer.counts.macs = 100;
    layer.counts.params = 10;
  }
  CHECK(capcalc::drop_prefill_only_layers(g) == 2);
  CHECK(!g.layers[0].view);
  CHECK(g.layers[0].counts.macs == 100);
  CHECK(g.layers[1].view);
  CHECK(g.layers[1].counts.macs == 0);
  CHECK(g.layers[2].view);
  CHECK(g.layers[2].counts.params == 0);
  CHECK(!g.layers[3].view);  // Reads a per-step value: it runs every step.
  CHECK(g.layers[3].counts.macs == 100);
  CHECK(graph_totals(g).macs == 200);
}

namespace {

// x [2, 8, 64] -> lm_head [2, 8, 1000] (the model's output), and an image's projector, also an
// output, fed by a prefill-only input alone.
Graph with_logits(bool with_bias) {
  const std::string text = std::string(R"({"format": "capcalc-model/1", "name": "lm",
      "dims": {"batch": 2, "seq": 8},
      "inputs": [{"name": "x", "shape": ["batch", "seq", 64]},
                 {"name": "image", "shape": ["batch", 16, 32], "prefill_only": true}],
      "outputs": ["lm_head", "projector"],
      "layers": [{"name": "lm_head", "op": "linear", "input": "x", "out_features": 1000,
                  "bias": )") +
                           (with_bias ? "true" : "false") +
                           R"(},
                 {"name": "projector", "op": "linear", "input": "image", "out_features": 64}]})";
  return capcalc::parse_model(text, "lm.json");
}

}  // namespace

// vLLM samples from hidden_states[logits_indices], SGLang's LogitsProcessor prunes an extend
// batch to each sequence's last index, TensorRT-LLM gathers the last tokens before its LM head
// and transformers' generate() passes logits_to_keep = 1: a prefill's LM head runs on one row
// per sequence, not on every prompt token.
TEST_CASE("graph: a serving prefill's logits are each sequence's last token's", "[graph]") {
  Graph g = with_logits(true);
  const capcalc::LayerCounts full = g.layers[0].counts;
  CHECK(full.macs == 2 * 8 * 64 * 1000);
  CHECK(capcalc::last_token_logits(g) == 1);
  const capcalc::LayerCounts& c = g.layers[0].counts;
  CHECK(g.layers[0].output == capcalc::Shape{2, 1, 1000});
  CHECK(c.macs == 2 * 64 * 1000);
  CHECK(c.other_flops == 2 * 1000);  // The bias, per row.
  CHECK(c.input_elements == 2 * 64);
  CHECK(c.output_elements == 2 * 1000);
  CHECK(c.backward_macs == full.backward_macs / 8);
  // The weights are the same weights, read whole.
  CHECK(c.params == full.params);
  CHECK(c.weight_elements_read == full.weight_elements_read);
  REQUIRE(g.layers[0].traits.gemm);
  CHECK(g.layers[0].traits.gemm->m == 2);
  CHECK(g.layers[0].traits.gemm->n == 1000);
  CHECK(g.layers[0].traits.gemm->k == 64);
  // The image's projector is no logits: computed from a prefill-only input alone.
  CHECK(g.layers[1].output == capcalc::Shape{2, 16, 64});
  CHECK(g.layers[1].counts.macs == 2 * 16 * 32 * 64);
  // Once only: the recounted head has one token, which is already the last.
  CHECK(capcalc::last_token_logits(g) == 0);
  CHECK(g.layers[0].counts.macs == 2 * 64 * 1000);
}

TEST_CASE("graph: only outputs with a token axis are recounted as a prefill's logits", "[graph]") {
  // A decode step has one token per sequence already.
  capcalc::ModelOptions one;
  one.dims["seq"] = 1;
  Graph step = capcalc::parse_model(R"({"format": "capcalc-model/1", "name": "lm",
      "dims": {"batch": 2, "seq": 8}, "inputs": [{"name": "x", "shape": ["batch", "seq", 64]}],
      "layers": [{"name": "lm_head", "op": "linear", "out_features": 1000}]})",
                                    "lm.json", one);
  CHECK(capcalc::last_token_logits(step) == 0);
  // Rows folded into one axis ([tokens, features]) say nothing of the sequences.
  Graph flat = capcalc::parse_model(R"({"format": "capcalc-model/1", "name": "lm",
      "inputs": [{"name": "x", "shape": [16, 64]}],
      "layers": [{"name": "lm_head", "op": "linear", "out_features": 1000}]})",
                                    "lm.json");
  CHECK(capcalc::last_token_logits(flat) == 0);
  CHECK(flat.layers[0].counts.macs == 16 * 64 * 1000);
  // An output that is not a product with weights (a norm) is left alone.
  Graph norm = capcalc::parse_model(R"({"format": "capcalc-model/1", "name": "lm",
      "inputs": [{"name": "x", "shape": [2, 8, 64]}],
      "layers": [{"name": "norm", "op": "rmsnorm"}]})",
                                    "lm.json");
  CHECK(capcalc::last_token_logits(norm) == 0);
  // Nor is a layer that is not an output.
  Graph inner = capcalc::parse_model(R"({"format": "capcalc-model/1", "name": "lm",
      "inputs": [{"name": "x", "shape": [2, 8, 64]}],
      "layers": [{"name": "fc", "op": "linear", "out_features": 64},
                 {"name": "norm", "op": "rmsnorm"}]})",
                                     "lm.json");
  CHECK(capcalc::last_token_logits(inner) == 0);
  CHECK(inner.layers[0].counts.macs == 2 * 8 * 64 * 64);
  // A hand-built product with an empty output (a zero-sized axis) has no rows to keep.
  Graph empty = with_input(16);
  empty.outputs = {add(empty, "head", {0}, 0)};
  empty.layers[0].output = Shape{2, 8, 0};
  empty.layers[0].traits.op_class = capcalc::OpClass::kMatrix;
  empty.layers[0].traits.gemm = capcalc::GemmView{16, 0, 64, 1};
  empty.layers[0].counts.weight_elements_read = 1;
  CHECK(capcalc::last_token_logits(empty) == 0);
}

namespace {

// x(1) -> a(10) -> b(20, saves 5) -> c(30) -> d(40), in the groups given.
Graph four_layers(std::int32_t a, std::int32_t b, std::int32_t c, std::int32_t d) {
  Graph g = with_input(1);
  const std::int32_t va = add(g, "a", {0}, 10);
  const std::int32_t vb = add(g, "b", {va}, 20);
  const std::int32_t vc = add(g, "c", {vb}, 30);
  g.outputs = {add(g, "d", {vc}, 40)};
  g.layers[1].counts.saved_elements = 5;
  const std::int32_t groups[] = {a, b, c, d};
  for (std::size_t i = 0; i < 4; ++i)
    g.layers[i].group = groups[i];
  return g;
}

}  // namespace

TEST_CASE("graph: checkpointing sums follow the group ids, not how they are numbered", "[graph]") {
  // Groups 0 and 2 (no 1): inside 0 = 10 + 20 + 5 = 35, inside 2 = 30 + 40 = 70; results 20
  // (b) and 40 (d). Checkpointed: the largest inside plus every result, 70 + 20 + 40 = 130;
  // boundary: the results but the last group's, 20.
  for (const auto& [low, high] : {std::pair{0, 2}, std::pair{5, 6}, std::pair{-3, 1'000'000}}) {
    const capcalc::GraphTotals t = graph_totals(four_layers(low, low, high, high));
    CHECK(t.checkpointed_elements == 70 + 20 + 40);
    CHECK(t.boundary_elements == 20);
  }

  // Ids out of layer order, and a group holding only a view:
  //   a(10) g2, b(20, saves 5) g0, c(30) g2, d(15) g0, v = view of c (25) g1.
  // Inside: g0 = 20 + 5 + 15 = 40, g1 = 0, g2 = 10 + 30 = 40. Results: g0 = 15, g1 = 25,
  // g2 = 30. Checkpointed 40 + 15 + 25 + 30 = 110. The last group is the highest id (g2), not
  // the last layer's (g1): boundary max(15, 25) = 25.
  Graph g = with_input(1);
  add(g, "a", {0}, 10);
  add(g, "b", {1}, 20);
  const std::int32_t c = add(g, "c", {2}, 30);
  add(g, "d", {c}, 15);
  g.outputs = {add(g, "v", {c}, 25, true)};
  g.layers[1].counts.saved_elements = 5;
  const std::int32_t groups[] = {2, 0, 2, 0, 1};
  for (std::size_t i = 0; i < 5; ++i)
    g.layers[i].group = groups[i];
  const capcalc::GraphTotals t = graph_totals(g);
  CHECK(t.checkpointed_elements == 40 + 15 + 25 + 30);
  CHECK(t.boundary_elements == 25);

  // The same graph with its ids spread apart keeps the same figures.
  const std::int32_t spread[] = {2'000'000'000, -7, 2'000'000'000, -7, 40};
  for (std::size_t i = 0; i < 5; ++i)
    g.layers[i].group = spread[i];
  const capcalc::GraphTotals s = graph_totals(g);
  CHECK(s.checkpointed_elements == 110);
  CHECK(s.boundary_elements == 25);
}
