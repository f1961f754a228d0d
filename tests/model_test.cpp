// Loading the native model format (src/model.cpp): blocks, repeats, references, dims, and one
// pinned message per class of bad input (docs/model-format.md).
#include "capcalc/model.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "capcalc/error.hpp"
#include "capcalc/graph.hpp"

#include "catch.hpp"

namespace {

using capcalc::Graph;
using capcalc::Layer;
using capcalc::ModelOptions;
using capcalc::parse_model;
using capcalc::Shape;

Graph parse(const std::string& text, const ModelOptions& options = {}) {
  return parse_model(text, "m.json", options);
}

// A model with the given dims, one input "x" of `shape` and `layers` (the array's body).
std::string model(const std::string& shape, const std::string& layers,
                  const std::string& extra = "") {
  return R"({"format": "capcalc-model/1", "name": "t", "inputs": [{"name": "x", "shape": )" +
         shape + "}], " + extra + R"("layers": [)" + layers + "]}";
}

std::vector<std::string> names_of(const Graph& g) {
  std::vector<std::string> names;
  for (const Layer& layer : g.layers)
    names.push_back(layer.name);
  return names;
}

const Layer& layer_named(const Graph& g, const std::string& name) {
  for (const Layer& layer : g.layers) {
    if (layer.name == name) return layer;
  }
  FAIL("no layer " << name);
  throw;  // Unreachable: FAIL throws.
}

// A block with a required arg, a plain default and a default that is an expression over another
// arg.
const char* kBlocks = R"("blocks": {
    "cbr": {
      "args": {"out": null, "stride": 1, "mid": "2 * out"},
      "layers": [
        {"name": "conv", "op": "conv2d", "out_channels": "mid", "kernel": 3, "stride": "stride",
         "padding": 1, "bias": false},
        {"name": "proj", "op": "conv2d", "out_channels": "out", "kernel": 1},
        {"name": "relu", "op": "relu"}
      ]
    },
    "pair": {
      "args": {"width": null},
      "layers": [
        {"name": "a", "block": "cbr", "args": {"out": "width"}},
        {"name": "b", "block": "cbr", "args": {"out": "width", "stride": 2}}
      ]
    },
    "res": {
      "inputs": ["x", "skip"],
      "layers": [
        {"name": "relu", "op": "relu"},
        {"name": "sum", "op": "add", "inputs": ["relu", "skip"]},
        {"name": "tail", "op": "relu", "input": "x"}
      ],
      "output": "sum"
    }
  },
)";

}  // namespace

// ---------------------------------------------------------------------------------------------
// Structure

TEST_CASE("model: block args, defaults and a default over another arg", "[model]") {
  const Graph g = parse(model(R"(["batch", 3, "size", "size"])",
                              R"({"name": "stem", "block": "cbr", "args": {"out": 4}},
                                 {"name": "down", "block": "cbr",
                                  "args": {"out": "size", "stride": 2}})",
                              std::string(kBlocks) + R"("dims": {"batch": 2, "size": 8}, )"));
  CHECK(names_of(g) == std::vector<std::string>{"stem.conv", "stem.proj", "stem.relu", "down.conv",
                                                "down.proj", "down.relu"});
  // stem: mid = 2 * out = 8 channels at stride 1.
  CHECK(layer_named(g, "stem.conv").output == Shape{2, 8, 8, 8});
  CHECK(layer_named(g, "stem.proj").output == Shape{2, 4, 8, 8});
  // down: out = size = 8, so mid = 16, at stride 2: (8 + 2 - 2 - 1) / 2 + 1 = 4.
  CHECK(layer_named(g, "down.conv").output == Shape{2, 16, 4, 4});
  CHECK(layer_named(g, "down.conv").counts.params == 16 * 4 * 3 * 3);  // No bias.
  CHECK(layer_named(g, "down.proj").output == Shape{2, 8, 4, 4});
  CHECK(g.batch == 2);
  CHECK(g.dims.at("size") == 8);
  CHECK(g.outputs == std::vector<std::int32_t>{g.layer_value(5)});  // Default: the last layer.
}

TEST_CASE("model: nested blocks name their layers <call>.<name>", "[model]") {
  const Graph g = parse(
      model("[1, 3, 16, 16]", R"({"name": "p", "block": "pair", "args": {"width": 4}})", kBlocks));
  CHECK(names_of(g) == std::vector<std::string>{"p.a.conv", "p.a.proj", "p.a.relu", "p.b.conv",
                                                "p.b.proj", "p.b.relu"});
  CHECK(layer_named(g, "p.a.relu").output == Shape{1, 4, 16, 16});
  CHECK(layer_named(g, "p.b.conv").output == Shape{1, 8, 8, 8});
  // The inner block's first layer reads the outer block's previous result.
  CHECK(layer_named(g, "p.b.conv").inputs == std::vector<std::int32_t>{g.layer_value(2)});
}

TEST_CASE("model: repeat and first_index", "[model]") {
  const Graph g = parse(model("[1, 4, 8, 8]",
                              R"({"name": "layer", "block": "cbr", "args": {"out": 4}, "repeat": 3,
                                  "first_index": 1},
                                 {"name": "r", "op": "relu", "repeat": 2},
                                 {"op": "relu"},
                                 {"name": "back", "op": "relu", "input": "layer.2"},
                                 {"name": "last", "op": "add", "inputs": ["layer", "r.0"]})",
                              kBlocks));
  CHECK(names_of(g) == std::vector<std::string>{"layer.1.conv", "layer.1.proj", "layer.1.relu",
                                                "layer.2.conv", "layer.2.proj", "layer.2.relu",
                                                "layer.3.conv", "layer.3.proj", "layer.3.relu",
                                                "r.0", "r.1", "relu_2", "back", "last"});
  // Instances chain: layer.2 reads layer.1's result.
  CHECK(layer_named(g, "layer.2.conv").inputs == std::vector<std::int32_t>{g.layer_value(2)});
  // "layer.2" is that instance's result, "layer" the last instance's.
  CHECK(layer_named(g, "back").inputs == std::vector<std::int32_t>{g.layer_value(5)});
  CHECK(layer_named(g, "last").inputs ==
        std::vector<std::int32_t>{g.layer_value(8), g.layer_value(9)});
  CHECK(layer_named(g, "r.1").inputs == std::vector<std::int32_t>{g.layer_value(9)});
}

TEST_CASE("model: input/inputs references, a residual add, a two-input block and outputs",
          "[model]") {
  const Graph g = parse(model("[1, 4, 8, 8]",
                              R"({"name": "a", "op": "conv2d", "out_channels": 4, "kernel": 3,
                                  "padding": 1},
                                 {"name": "b", "op": "relu"},
                                 {"name": "sum", "op": "add", "inputs": ["b", "a"]},
                                 {"name": "side", "op": "relu", "input": "x"},
                                 {"name": "blk", "block": "res", "inputs": ["sum", "side"]},
                                 {"name": "after", "op": "relu"})",
                              std::string(kBlocks) + R"("outputs": ["blk", "side"], )"));
  const std::int32_t x = 0;
  const std::int32_t a = g.layer_value(0);
  const std::int32_t b = g.layer_value(1);
  CHECK(layer_named(g, "a").inputs == std::vector<std::int32_t>{x});  // First layer: first input.
  CHECK(layer_named(g, "b").inputs == std::vector<std::int32_t>{a});  // Default: previous layer.
  CHECK(layer_named(g, "sum").inputs == std::vector<std::int32_t>{b, a});
  CHECK(layer_named(g, "side").inputs == std::vector<std::int32_t>{x});
  const std::int32_t sum = g.layer_value(2);
  const std::int32_t side = g.layer_value(3);
  // Inside the block: x = sum, skip = side; the block's result is its "output", blk.sum.
  CHECK(layer_named(g, "blk.relu").inputs == std::vector<std::int32_t>{sum});
  CHECK(layer_named(g, "blk.sum").inputs == std::vector<std::int32_t>{g.layer_value(4), side});
  CHECK(layer_named(g, "blk.tail").inputs == std::vector<std::int32_t>{sum});
  const std::int32_t blk = g.layer_value(5);
  CHECK(layer_named(g, "after").inputs == std::vector<std::int32_t>{blk});
  CHECK(g.outputs == std::vector<std::int32_t>{blk, side});
}

TEST_CASE("model: dims, their defaults and ModelOptions overrides", "[model]") {
  const std::string text =
      model(R"(["batch", "seq", "4 * width"])", R"({"op": "linear", "out_features": "width"})",
            R"("dims": {"batch": 1, "seq": 16, "width": 8}, )");
  const Graph defaults = parse(text);
  CHECK(defaults.batch == 1);
  CHECK(defaults.inputs[0].shape == Shape{1, 16, 32});
  CHECK(defaults.layers[0].output == Shape{1, 16, 8});

  ModelOptions options;
  options.dims = {{"batch", 32}, {"seq", 64}};
  const Graph set = parse(text, options);
  CHECK(set.batch == 32);
  CHECK(set.dims.at("seq") == 64);
  CHECK(set.dims.at("width") == 8);
  CHECK(set.inputs[0].shape == Shape{32, 64, 32});
  CHECK(set.layers[0].counts.macs == 32 * 64 * 32 * 8);  // Counts are for the batch given.

  // A model without a batch dim has batch 1.
  CHECK(parse(model("[3, 4]", R"({"op": "relu"})")).batch == 1);

  ModelOptions unknown;
  unknown.dims = {{"sq", 4096}};
  REQUIRE_THROWS_WITH(parse(text, unknown),
                      "m.json:/dims: the model has no dimension \"sq\" to set; did you mean "
                      "\"seq\"? (its dims: batch, seq, width)");
  REQUIRE_THROWS_WITH(
      parse(model("[3, 4]", R"({"op": "relu"})"), unknown),
      "m.json:/dims: the model has no dimension \"sq\" to set (it declares no dims)");
  ModelOptions zero;
  zero.dims = {{"batch", 0}};
  REQUIRE_THROWS_WITH(parse(text, zero),
                      "m.json:/dims: dimension \"batch\" must be positive, got 0");
  REQUIRE_THROWS_WITH(parse(model("[3]", R"({"op": "relu"})", R"("dims": {"batch": 0}, )")),
                      "m.json:/dims/batch: expected a positive integer, got 0");
}

TEST_CASE("model: gradients are needed only downstream of weights", "[model]") {
  // fc reads the model input through a view: no input gradient (backward = forward MACs); fc2 reads
  // fc's output: weight and input gradients.
  const Graph g = parse(model("[2, 3, 4]", R"({"name": "flat", "op": "flatten"},
                                              {"name": "fc", "op": "linear", "out_features": 5},
                                              {"name": "act", "op": "relu"},
                                              {"name": "fc2", "op": "linear",
                                               "out_features": 6})"));
  CHECK(layer_named(g, "fc").counts.backward_macs == 2 * 12 * 5);
  CHECK(layer_named(g, "fc2").counts.backward_macs == 2 * (2 * 5 * 6));
}

TEST_CASE("model: load_model reads files and names a missing one", "[model]") {
  REQUIRE_THROWS_WITH(capcalc::load_model("no/such/model.json"),
                      "no/such/model.json: cannot open file");
}

// ---------------------------------------------------------------------------------------------
// Errors, one class each, with the exact message

// Found by fuzzing (tests/fuzz): a name with a newline escape made a two-line message.
TEST_CASE("model: names with control characters are quoted escaped, on one line",
          "[model][errors]") {
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"name": "a\nct", "op": "re\tul\u0001"})")),
                      "m.json:/layers/0/op: layer \"a\\nct\": unknown operator \"re\\tul\\x01\"");
}

TEST_CASE("model: unknown operators, attributes and keys suggest a name", "[model][errors]") {
  REQUIRE_THROWS_WITH(
      parse(model("[1, 4]", R"({"name": "act", "op": "reul"})")),
      "m.json:/layers/0/op: layer \"act\": unknown operator \"reul\"; did you mean \"relu\"?");
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"name": "act", "op": "frobnicate"})")),
                      "m.json:/layers/0/op: layer \"act\": unknown operator \"frobnicate\"");
  REQUIRE_THROWS_WITH(parse(model("[1, 3, 8, 8]", R"({"name": "c1", "op": "conv2d",
                                                     "out_channels": 8, "kernel": 3,
                                                     "strides": 2})")),
                      "m.json:/layers/0/strides: layer \"c1\": unknown attribute \"strides\" for "
                      "conv2d; did you mean \"stride\"?");
  REQUIRE_THROWS_WITH(
      parse(model("[1, 4]", R"({"name": "act", "op": "relu", "inplace": true})")),
      "m.json:/layers/0/inplace: layer \"act\": unknown attribute \"inplace\" for relu");
  REQUIRE_THROWS_WITH(
      parse(model("[1, 4]", R"({"op": "relu"})", R"("layerz": [], )")),
      "m.json:/layerz: unknown key \"layerz\" in the model; did you mean \"layers\"?");
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"name": "s", "block": "cbr", "args": {"out": 4},
                                               "out": 4})",
                                  kBlocks)),
                      "m.json:/layers/0/out: unknown key \"out\" in a block call");
}

TEST_CASE("model: missing required values", "[model][errors]") {
  REQUIRE_THROWS_WITH(
      parse(model("[1, 4]", R"({"name": "fc", "op": "linear"})")),
      "m.json:/layers/0: layer \"fc\": missing required attribute \"out_features\"");
  REQUIRE_THROWS_WITH(parse(R"({"format": "capcalc-model/1", "name": "t", "layers": []})"),
                      "m.json:/: missing required key \"inputs\"");
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", "")),
                      "m.json:/layers: a model needs at least one layer");
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"name": "n"})")),
                      "m.json:/layers/0: a layer needs exactly one of \"op\" and \"block\"");
}

TEST_CASE("model: names are unique in their scope, references suggest a name", "[model][errors]") {
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"name": "a", "op": "relu"},
                                               {"name": "a", "op": "relu"})")),
                      "m.json:/layers/1/name: the name \"a\" is already used in this scope");
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"name": "x", "op": "relu"})")),
                      "m.json:/layers/0/name: the name \"x\" is already used in this scope");
  // The same local name in two block calls is fine: the full names differ.
  CHECK(parse(model("[1, 4, 8, 8]",
                    R"({"name": "s1", "block": "cbr", "args": {"out": 4}},
                                       {"name": "s2", "block": "cbr", "args": {"out": 4}})",
                    kBlocks))
            .layers.size() == 6);

  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"name": "conv", "op": "relu"},
                                               {"name": "b", "op": "relu", "input": "cnv"})")),
                      "m.json:/layers/1/input: no layer or input named \"cnv\" in this scope; did "
                      "you mean \"conv\"?");
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"name": "a", "op": "relu"},
                                               {"name": "s", "op": "add",
                                                "inputs": ["a", "zz"]})")),
                      "m.json:/layers/1/inputs/1: no layer or input named \"zz\" in this scope");
  REQUIRE_THROWS_WITH(
      parse(model("[1, 4]", R"({"name": "a", "op": "relu"})", R"("outputs": ["fc"], )")),
      "m.json:/outputs/0: no layer or input named \"fc\" in this scope");
  // Layers inside a block see only the block's scope, not the caller's layers.
  REQUIRE_THROWS_WITH(
      parse(R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "x", "shape": [1, 4]}],
      "blocks": {"b": {"layers": [{"name": "r", "op": "relu", "input": "outer"}]}},
      "layers": [{"name": "outer", "op": "relu"}, {"name": "call", "block": "b"}]})"),
      "m.json:/blocks/b/layers/0/input: no layer or input named \"outer\" in this scope");
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"op": "relu", "input": "x", "inputs": ["x"]})")),
                      "m.json:/layers/0: give \"input\" or \"inputs\", not both");
}

TEST_CASE("model: block call errors", "[model][errors]") {
  REQUIRE_THROWS_WITH(parse(model("[1, 4, 8, 8]", R"({"name": "s", "block": "cbrr"})", kBlocks)),
                      "m.json:/layers/0/block: unknown block \"cbrr\"; did you mean \"cbr\"?");
  REQUIRE_THROWS_WITH(parse(model("[1, 4, 8, 8]", R"({"name": "s", "block": "cbr"})", kBlocks)),
                      "m.json:/layers/0: layer \"s\": block \"cbr\" needs the argument \"out\"");
  REQUIRE_THROWS_WITH(parse(model("[1, 4, 8, 8]", R"({"name": "s", "block": "cbr",
                                                     "args": {"out": 4, "strid": 2}})",
                                  kBlocks)),
                      "m.json:/layers/0/args/strid: block \"cbr\" has no argument \"strid\"; did "
                      "you mean \"stride\"?");
  REQUIRE_THROWS_WITH(parse(model("[1, 4, 8, 8]", R"({"name": "s", "block": "cbr",
                                                     "args": {"out": "wdth"}})",
                                  kBlocks)),
                      "m.json:/layers/0/args/out: bad expression \"wdth\": unknown name \"wdth\" "
                      "(no names are in scope)");
  REQUIRE_THROWS_WITH(parse(model("[1, 4, 8, 8]", R"({"name": "s", "block": "res"})", kBlocks)),
                      "m.json:/layers/0: layer \"s\": block \"res\" takes 2 input(s), got 1");
  // A default that refers to itself (through another default).
  REQUIRE_THROWS_WITH(parse(R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "x", "shape": [1, 4]}],
      "blocks": {"b": {"args": {"p": "q + 1", "q": "p"},
                       "layers": [{"op": "linear", "out_features": "p"}]}},
      "layers": [{"name": "call", "block": "b"}]})"),
                      "m.json:/blocks/b/args/p: the default of \"p\" refers to itself");
  // A block that calls itself stops at the nesting limit instead of exhausting the stack.
  REQUIRE_THROWS_WITH(parse(R"({"format": "capcalc-model/1", "name": "t",
      "inputs": [{"name": "x", "shape": [1, 4]}],
      "blocks": {"loop": {"layers": [{"name": "again", "block": "loop"}]}},
      "layers": [{"name": "start", "block": "loop"}]})"),
                      "m.json:/blocks/loop/layers/0/block: blocks nest more than 32 deep (does "
                      "\"loop\" call itself?)");
}

TEST_CASE("model: operators get the number of inputs they take", "[model][errors]") {
  REQUIRE_THROWS_WITH(
      parse(model("[1, 4]", R"({"name": "r", "op": "relu", "inputs": ["x", "x"]})")),
      "m.json:/layers/0: layer \"r\": relu takes 1 input, got 2");
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"name": "s", "op": "add"})")),
                      "m.json:/layers/0: layer \"s\": add takes at least 2 inputs, got 1");
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"name": "m", "op": "matmul",
                                               "inputs": ["x", "x", "x"]})")),
                      "m.json:/layers/0: layer \"m\": matmul takes 2 inputs, got 3");
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"name": "s", "op": "add", "inputs": []})")),
                      "m.json:/layers/0/inputs: expected at least one input");
}

TEST_CASE("model: malformed JSON names the line and column", "[model][errors]") {
  // The stray ',' is on line 4, column 3.
  REQUIRE_THROWS_WITH(
      parse(
          "{\n  \"format\": \"capcalc-model/1\",\n  \"name\": \"broken\",\n  , \"layers\": []\n}"),
      "m.json:4:3: syntax error while parsing object key - unexpected ','; expected string "
      "literal");
  // Line 3 is ` "layers": [1, 2,]`; the ']' after the trailing comma is column 18.
  REQUIRE_THROWS_WITH(
      parse("{\"format\": \"capcalc-model/1\",\n \"name\": \"x\",\n \"layers\": [1, 2,]}"),
      ContainsSubstring("m.json:3:18: syntax error while parsing value - unexpected ']'"));
  REQUIRE_THROWS_WITH(parse(""), ContainsSubstring("m.json:1:1: syntax error"));
  REQUIRE_THROWS_WITH(parse("{\"a\": 1}\n{"), ContainsSubstring("m.json:2:1: syntax error"));
  try {
    parse("{\n  , }");
    FAIL("no error");
  } catch (const capcalc::Error& e) {
    CHECK(e.where().file == "m.json");
    CHECK(e.where().line == 2);
    CHECK(e.where().column == 3);
    CHECK_THAT(std::string(e.what()),
               !ContainsSubstring("json.exception"));  // nlohmann's text stays inside.
  }
}

TEST_CASE("model: wrong types name the JSON pointer", "[model][errors]") {
  REQUIRE_THROWS_WITH(parse("[]"), "m.json:/: expected an object, got an array");
  REQUIRE_THROWS_WITH(parse(R"({"format": "capcalc-model/1", "name": 5, "inputs": [],
                                "layers": []})"),
                      "m.json:/name: expected a string, got a number");
  REQUIRE_THROWS_WITH(parse(R"({"format": "capcalc-model/1", "name": "t",
                                "inputs": [{"name": "x", "shape": [1, 4]}], "layers": {}})"),
                      "m.json:/layers: expected an array, got an object");
  REQUIRE_THROWS_WITH(parse(model("[1, -3]", R"({"op": "relu"})")),
                      "m.json:/inputs/0/shape/1: expected a positive integer, got -3");
  REQUIRE_THROWS_WITH(parse(model("[1, 4.5]", R"({"op": "relu"})")),
                      "m.json:/inputs/0/shape/1: expected a positive integer or an expression "
                      "string, got a number");
  REQUIRE_THROWS_WITH(
      parse(model("[1, 3, 8, 8]", R"({"name": "c1", "op": "conv2d",
                                                     "out_channels": [8], "kernel": 3})")),
      "m.json:/layers/0/out_channels: expected an integer or an expression string, got an array");
  REQUIRE_THROWS_WITH(
      parse(model("[1, 4]", R"({"op": "linear", "out_features": 10.0})")),
      "m.json:/layers/0/out_features: expected an integer or an expression string, got a number");
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"op": "linear", "out_features": 3,
                                               "bias": "yes"})")),
                      "m.json:/layers/0/bias: expected true or false, got a string");
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"op": "relu", "repeat": 0})")),
                      "m.json:/layers/0/repeat: expected a positive integer, got 0");
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"op": "relu", "first_index": 1})")),
                      "m.json:/layers/0/first_index: \"first_index\" goes with \"repeat\"");
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"op": "linear", "out_features": "seq / 5"})",
                                  R"("dims": {"seq": 12}, )")),
                      "m.json:/layers/0/out_features: bad expression \"seq / 5\": 12 / 5 is not a "
                      "whole number (use // to round down)");
}

TEST_CASE("model: the format string is checked", "[model][errors]") {
  REQUIRE_THROWS_WITH(
      parse(R"({"format": "capcalc-model/2", "name": "t",
                                "inputs": [{"name": "x", "shape": [1]}], "layers": []})"),
      "m.json:/format: unsupported format \"capcalc-model/2\"; expected \"capcalc-model/1\"");
  REQUIRE_THROWS_WITH(parse(R"({"name": "t", "inputs": [{"name": "x", "shape": [1]}],
                                "layers": [{"op": "relu"}]})"),
                      "m.json:/: missing required key \"format\"");
}

TEST_CASE("model: a count beyond 64 bits is an error naming the layer, never a wrap",
          "[model][errors]") {
  // 2^20 x 2^20 inputs times 2^24 outputs: 2^64 MACs.
  REQUIRE_THROWS_WITH(parse(model("[1048576, 1048576]",
                                  R"({"name": "huge", "op": "linear", "out_features": 16777216})")),
                      "m.json:/layers/0: layer \"huge\": a count does not fit in a 64-bit integer");
  // One step smaller fits exactly: 2^20 * 2^20 * 2^22 = 2^62 MACs.
  const Graph fits = parse(model("[1048576, 1048576]",
                                 R"({"name": "big", "op": "linear", "out_features": 4194304,
                                     "bias": false})"));
  CHECK(fits.layers[0].counts.macs == (std::int64_t{1} << 62));
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"name": "fc", "op": "linear",
                                               "out_features": "4294967296 * 4294967296"})")),
                      "m.json:/layers/0/out_features: expression overflows a 64-bit integer");
  REQUIRE_THROWS_WITH(
      parse(model("[1, 4]", R"({"name": "fc", "op": "linear",
                                               "out_features": 9223372036854775808})")),
      ContainsSubstring("m.json:/layers/0/out_features: integer 9223372036854775808 is too large"));
  REQUIRE_THROWS_WITH(parse(model("[4294967296, 4294967296]", R"({"name": "r", "op": "relu"})")),
                      "m.json:/layers/0: layer \"r\": a count does not fit in a 64-bit integer");
}

TEST_CASE("model: an optional input left out leaves its layers' weights and none of their work",
          "[model]") {
  const std::string text = R"({"format": "capcalc-model/1", "name": "two_branches",
    "dims": {"batch": 2},
    "inputs": [{"name": "text", "shape": ["batch", 16]},
               {"name": "image", "shape": ["batch", 32], "optional": true}],
    "layers": [
      {"name": "text_fc", "op": "linear", "inputs": ["text"], "out_features": 8},
      {"name": "image_fc", "op": "linear", "inputs": ["image"], "out_features": 8},
      {"name": "image_act", "op": "relu"},
      {"name": "head", "op": "linear", "inputs": ["text_fc"], "out_features": 4}],
    "outputs": ["head", "image_act"]})";
  const Graph full = parse_model(text, "m.json");
  ModelOptions options;
  options.omitted_inputs.insert("image");
  const Graph g = parse_model(text, "m.json", options);
  CHECK(g.inputs[1].omitted);
  const Layer& image_fc = g.layers[1];
  CHECK(image_fc.view);
  CHECK(image_fc.counts.params == 32 * 8 + 8);  // Still loaded.
  CHECK(image_fc.counts.macs == 0);
  CHECK(g.layers[2].view);  // Computed from the omitted input alone, through image_fc.
  CHECK_FALSE(g.layers[3].view);
  const auto t = graph_totals(g);
  CHECK(t.params == graph_totals(full).params);
  CHECK(t.macs == 2 * (16 * 8 + 8 * 4));

  options.omitted_inputs = {"text"};
  CHECK_THROWS_WITH(parse_model(text, "m.json", options),
                    "m.json:/inputs/0: input \"text\" is not optional: the model needs it");
  options.omitted_inputs = {"imag"};
  CHECK_THROWS_WITH(parse_model(text, "m.json", options),
                    Catch::StartsWith("m.json:/inputs: the model has no input \"imag\" to omit "
                                      "(its inputs: text, image)") &&
                        Catch::Contains("image"));
}

// Issue 21: a repeat of 10^12 (a literal, an expression, repeats in repeats) hung or ended in
// std::bad_alloc. A lower bound on the layers ahead is checked before any is built.
TEST_CASE("model: a model that expands past the layer limit is an error naming the repeat",
          "[model][errors][limits]") {
  const std::string limit = "the model expands to more than 250,000 layers (the limit)";
  const std::string relu = R"({"op": "relu"})";
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", relu + R"(, {"op": "relu", "repeat": 1000000000000})")),
                      "m.json:/layers/1/repeat: " + limit);
  REQUIRE_THROWS_WITH(
      parse(model("[1, 4]", R"({"op": "relu", "repeat": "n * n"})", R"("dims": {"n": 1000000}, )")),
      "m.json:/layers/0/repeat: " + limit);
  // Repeats inside repeats: the larger is named (the outer one of equals).
  const std::string blocks = R"("blocks": {"inner": {"args": {"n": null},
      "layers": [{"op": "relu", "repeat": "n"}]}}, )";
  REQUIRE_THROWS_WITH(parse(model("[1, 4]",
                                  R"({"block": "inner", "args": {"n": 1000000000},
                                      "repeat": 1000000000})",
                                  blocks)),
                      "m.json:/layers/0/repeat: " + limit);
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"block": "inner", "args": {"n": 1000},
                                                "repeat": 2000})",
                                  blocks)),
                      "m.json:/layers/0/repeat: " + limit);
  REQUIRE_THROWS_WITH(
      parse(model("[1, 4]", R"({"block": "inner", "args": {"n": 1000000000000}, "repeat": 2})",
                  blocks)),
      "m.json:/blocks/inner/layers/0/repeat: " + limit);
  // Under the limit, a large model still loads.
  CHECK(parse(model("[1, 4]", R"({"op": "relu", "repeat": 100000})")).layers.size() == 100'000);
}

TEST_CASE("model: blocks that double the layers at each level fail before they are built",
          "[model][errors][limits]") {
  // b31 calls b30 twice, ... b0 is one layer: 2^31 layers, and 2^31 more with a repeat.
  for (const std::string twice :
       {R"({"block": "b{}"}, {"block": "b{}"})", R"({"block": "b{}", "repeat": 2})",
        R"({"block": "b{}", "repeat": "two"})"}) {
    std::string blocks = R"("dims": {"two": 2}, "blocks": {"b0": {"layers": [{"op": "relu"}]})";
    for (int k = 1; k <= 31; ++k) {
      std::string body = twice;
      for (std::size_t at; (at = body.find("{}")) != std::string::npos;)
        body.replace(at, 2, std::to_string(k - 1));
      blocks += ", \"b" + std::to_string(k) + "\": {\"layers\": [" + body + "]}";
    }
    blocks += "}, ";
    REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"op": "relu"}, {"block": "b31"})", blocks)),
                        "m.json:/layers/1: the model expands to more than 250,000 layers (the "
                        "limit)");
  }
}

TEST_CASE("model: block argument defaults may refer to one another 32 deep", "[model][errors]") {
  // a0 = a1, a1 = a2, ..., a40 = 4: each link evaluates inside the last.
  std::string args;
  for (int i = 0; i < 40; ++i)
    args += "\"a" + std::to_string(i) + "\": \"a" + std::to_string(i + 1) + "\", ";
  args += "\"a40\": 4";
  const std::string blocks = R"("blocks": {"b": {"args": {)" + args +
                             R"(}, "layers": [{"op": "linear", "out_features": "a0"}]}}, )";
  REQUIRE_THROWS_WITH(parse(model("[1, 4]", R"({"block": "b"})", blocks)),
                      "m.json:/blocks/b/args/a32: argument defaults refer to one another more "
                      "than 32 deep (the limit)");
}

TEST_CASE("model: an overflow names the dims the caller set", "[model][errors]") {
  ModelOptions options;
  options.dims["batch"] = 4294967296;
  REQUIRE_THROWS_WITH(parse(model(R"(["batch", 4294967296])", R"({"name": "r", "op": "relu"})",
                                  R"("dims": {"batch": 1}, )"),
                            options),
                      "m.json:/layers/0: layer \"r\": a count does not fit in a 64-bit integer "
                      "(with batch = 4294967296)");
}
