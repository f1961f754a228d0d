// Reading ONNX without its weights (src/import/onnx_wire.hpp): large tensor payloads are left
// out wherever tensors live, small integer constants stay, and the counts do not change.
#include "import/onnx_wire.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

#include "catch.hpp"
#include "import/onnx.hpp"
#include "limits.hpp"
#include "onnx_builder.hpp"

namespace {

using capcalc::onnx_import::kMaxKeptTensorBytes;
using capcalc::onnx_import::strip_tensor_data;
using capcalc::test::OnnxModel;

// x [batch, 256] -> MatMul by a 256 x 256 float weight held inline (256 KiB of raw_data) ->
// Reshape by an inline int64 target -> MatMul by a Constant node of 256 x 256 floats (256 KiB)
// -> Add a 256-element float bias (1 KiB: kept).
OnnxModel inline_weights() {
  OnnxModel m("inline");
  m.input("x", {std::string("batch"), std::int64_t{256}});
  m.weight("w", {256, 256}).set_raw_data(std::string(256 * 256 * 4, '\x01'));
  m.node("MatMul", {"x", "w"}, {"y"}, "mm");
  m.ints("target", {-1, 256});
  m.node("Reshape", {"y", "target"}, {"r"}, "reshape");
  auto& c = m.node("Constant", {}, {"scale"}, "scale");
  auto* a = c.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(256);
  a->mutable_t()->add_dims(256);
  for (int i = 0; i < 256 * 256; ++i)
    a->mutable_t()->add_float_data(1.0F);  // Packed: one 256 KiB field.
  m.node("MatMul", {"r", "scale"}, {"z"}, "mm2");
  auto& bias = m.weight("b", {256});
  for (int i = 0; i < 256; ++i)
    bias.add_float_data(0.5F);
  m.node("Add", {"z", "b"}, {"out"}, "add");
  m.output("out");
  return m;
}

}  // namespace

TEST_CASE("onnx wire: payloads over the limit are left out, dims and small values stay", "[onnx]") {
  const std::string bytes = inline_weights().bytes();
  const auto slim = strip_tensor_data(bytes, capcalc::kMaxNestingDepth);
  REQUIRE(slim);
  CHECK(slim->size() < 4096);  // The model is 512 KiB of values and a few hundred bytes else.
  CHECK(bytes.size() > 2 * 256 * 256 * 4);
  onnx::ModelProto model;
  REQUIRE(model.ParseFromString(*slim));
  const auto& inits = model.graph().initializer();
  REQUIRE(inits.size() == 3);
  CHECK(inits[0].name() == "w");
  CHECK(inits[0].dims_size() == 2);
  CHECK(inits[0].dims(1) == 256);
  CHECK_FALSE(inits[0].has_raw_data());
  CHECK(inits[0].data_location() == onnx::TensorProto::EXTERNAL);
  CHECK(inits[1].int64_data_size() == 2);  // The Reshape target: kept.
  CHECK(inits[1].int64_data(0) == -1);
  CHECK(inits[1].data_location() == onnx::TensorProto::DEFAULT);
  CHECK(inits[2].float_data_size() == 256);  // The bias: under the limit.
  const auto& constant = model.graph().node(2).attribute(0).t();
  CHECK(constant.float_data_size() == 0);
  CHECK(constant.dims_size() == 2);
  CHECK(constant.data_location() == onnx::TensorProto::EXTERNAL);
  // The rest of the model is unchanged.
  CHECK(model.graph().node_size() == 5);
  CHECK(model.opset_import(0).version() == 17);
  CHECK(model.graph().input(0).name() == "x");
}

TEST_CASE("onnx wire: counts are the same with and without the weights' values", "[onnx]") {
  capcalc::ModelOptions options;
  options.dims["batch"] = 2;
  const capcalc::Graph g = capcalc::parse_onnx_model(inline_weights().bytes(), "m.onnx", options);
  const auto totals = capcalc::graph_totals(g);
  // The initializers w and b; a Constant node's tensor is a constant, not a parameter.
  CHECK(totals.params == 256 * 256 + 256);
  CHECK(totals.macs == 2 * (256 * 256 + 256 * 256));  // Batch 2, two products.
}

TEST_CASE("onnx wire: a payload of exactly the limit is kept, one byte more is not", "[onnx]") {
  for (const std::size_t size : {kMaxKeptTensorBytes, kMaxKeptTensorBytes + 1}) {
    OnnxModel m("edge");
    m.input("x", {std::int64_t{1}});
    m.weight("w", {static_cast<std::int64_t>(size)}, onnx::TensorProto::UINT8)
        .set_raw_data(std::string(size, '\x02'));
    m.node("Identity", {"x"}, {"y"});
    m.output("y");
    const auto slim = strip_tensor_data(m.bytes(), capcalc::kMaxNestingDepth);
    REQUIRE(slim);
    onnx::ModelProto model;
    REQUIRE(model.ParseFromString(*slim));
    CHECK(model.graph().initializer(0).has_raw_data() == (size == kMaxKeptTensorBytes));
  }
}

TEST_CASE("onnx wire: malformed bytes are left to protobuf's parser", "[onnx]") {
  const std::string bytes = inline_weights().bytes();
  CHECK_FALSE(strip_tensor_data(bytes.substr(0, bytes.size() / 2), 256));  // Truncated.
  CHECK_FALSE(strip_tensor_data(std::string("\x0b\x00", 2), 256));         // A group (wire 3).
  CHECK_FALSE(strip_tensor_data(bytes, 2));  // Nested deeper than allowed.
  CHECK(strip_tensor_data("", 256) == std::string());
  // And the file is still refused with protobuf's verdict, as before.
  CHECK_THROWS_WITH(capcalc::parse_onnx_model(bytes.substr(0, bytes.size() / 2), "t.onnx", {}),
                    Catch::Contains("t.onnx: not a valid ONNX model"));
}
