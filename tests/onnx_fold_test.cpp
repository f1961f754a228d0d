// Folding exporter shape arithmetic into Constant nodes (src/import/onnx_fold.cpp). Each case
// builds the chain torch.onnx.export writes, folds it against known shapes and reads back the
// Constant's values, worked out by hand from ONNX's operator definitions.
#include "import/onnx_fold.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "catch.hpp"
#include "onnx_builder.hpp"

namespace {

using capcalc::onnx_import::fold_shape_arithmetic;
using capcalc::test::OnnxModel;
using Ints = std::vector<std::int64_t>;

// Known activation shapes by name.
struct Shapes {
  std::map<std::string, Ints> known;
  capcalc::onnx_import::ShapeLookup lookup() const {
    return [this](const std::string& name) -> std::optional<Ints> {
      const auto it = known.find(name);
      if (it == known.end()) return std::nullopt;
      return it->second;
    };
  }
};

const onnx::NodeProto& producer(OnnxModel& m, const std::string& output) {
  for (const auto& n : m.graph().node()) {
    if (n.output_size() > 0 && n.output(0) == output) return n;
  }
  FAIL("no node writes " << output);
  throw;
}

// The dims and values of a folded Constant; the op type must be Constant.
std::pair<Ints, Ints> constant(OnnxModel& m, const std::string& output) {
  const onnx::NodeProto& n = producer(m, output);
  REQUIRE(n.op_type() == "Constant");
  REQUIRE(n.input_size() == 0);
  REQUIRE(n.attribute_size() == 1);
  const onnx::TensorProto& t = n.attribute(0).t();
  Ints values(t.int64_data().begin(), t.int64_data().end());
  if (t.data_type() != onnx::TensorProto::INT64)
    values.assign(t.int32_data().begin(), t.int32_data().end());
  return {Ints(t.dims().begin(), t.dims().end()), values};
}

}  // namespace

TEST_CASE("onnx fold: Shape, Gather, Unsqueeze and Concat make a reshape target", "[onnx]") {
  // BERT's attention: x.view(x.size(0), x.size(1), 12, 64) from x of [2, 128, 768].
  OnnxModel m("fold");
  m.node("Shape", {"x"}, {"shape"});
  m.constant_ints("zero", {0}, /*rank0=*/true);
  m.constant_ints("one", {1}, /*rank0=*/true);
  m.node("Gather", {"shape", "zero"}, {"batch"});
  m.node("Gather", {"shape", "one"}, {"seq"});
  m.constant_ints("axes", {0});
  m.node("Unsqueeze", {"batch", "axes"}, {"batch_1d"});
  m.node("Unsqueeze", {"seq", "axes"}, {"seq_1d"});
  m.constant_ints("heads", {12, 64});
  auto& concat = m.node("Concat", {"batch_1d", "seq_1d", "heads"}, {"target"});
  OnnxModel::attr(concat, "axis", std::int64_t{0});

  Shapes shapes{{{"x", {2, 128, 768}}}};
  CHECK(fold_shape_arithmetic(m.graph(), shapes.lookup()) == 5);
  // Shape reads an activation and stays; everything downstream becomes a constant.
  CHECK(producer(m, "shape").op_type() == "Shape");
  CHECK(constant(m, "batch") == std::pair{Ints{}, Ints{2}});
  CHECK(constant(m, "seq_1d") == std::pair{Ints{1}, Ints{128}});
  CHECK(constant(m, "target") == std::pair{Ints{4}, Ints{2, 128, 12, 64}});
}

TEST_CASE("onnx fold: Slice bounds from Shape, negative starts, steps and clamping", "[onnx]") {
  // position_ids[:, 0:seq_len] for a [1, 512] buffer and seq_len = 6.
  OnnxModel m("fold");
  Ints positions;
  for (std::int64_t i = 0; i < 512; ++i)
    positions.push_back(i);
  auto& buffer = *m.graph().add_initializer();
  buffer.set_name("position_ids");
  buffer.set_data_type(onnx::TensorProto::INT64);
  buffer.add_dims(1);
  buffer.add_dims(512);
  for (std::int64_t v : positions)
    buffer.add_int64_data(v);
  auto& shape = m.node("Shape", {"input_ids"}, {"seq_len"});
  OnnxModel::attr(shape, "start", std::int64_t{1});
  m.ints("starts", {0});
  m.ints("axes", {1});
  m.node("Slice", {"position_ids", "starts", "seq_len", "axes"}, {"positions"});
  // x[-4:] over 0..5, x[5:1:-2] and x[2:1000] (end clamped to the extent).
  m.node("Range", {"r_start", "r_limit", "r_delta"}, {"range"});
  m.ints("r_start", {0});
  m.ints("neg4", {-4});
  m.ints("big", {1000});
  m.ints("five", {5});
  m.ints("one", {1});
  m.ints("two", {2});
  m.ints("minus2", {-2});
  m.node("Slice", {"positions", "neg4", "big", "axes"}, {"tail"});
  m.node("Slice", {"positions", "five", "one", "axes", "minus2"}, {"backwards"});
  m.node("Slice", {"positions", "two", "big", "axes"}, {"clamped"});

  Shapes shapes{{{"input_ids", {1, 6}}}};
  // Range's inputs are not rank 0 here and its start is an initializer of shape [1]; its
  // limit is never set, so it stays.
  CHECK(fold_shape_arithmetic(m.graph(), shapes.lookup()) == 4);
  CHECK(producer(m, "range").op_type() == "Range");
  CHECK(constant(m, "positions") == std::pair{Ints{1, 6}, Ints{0, 1, 2, 3, 4, 5}});
  CHECK(constant(m, "tail") == std::pair{Ints{1, 4}, Ints{2, 3, 4, 5}});
  CHECK(constant(m, "backwards") == std::pair{Ints{1, 2}, Ints{5, 3}});
  CHECK(constant(m, "clamped") == std::pair{Ints{1, 4}, Ints{2, 3, 4, 5}});
}

TEST_CASE("onnx fold: a Shape read by a node that stays is fed to it as a constant", "[onnx]") {
  // torch.export's BERT: position_ids[:, :Shape(attention_mask, start=1, end=2)], position_ids
  // an int64 buffer saved as external data, so the Slice cannot be folded; ONNX's inference
  // needs its bounds as constants to size it.
  OnnxModel m("fold");
  auto& buffer = *m.graph().add_initializer();
  buffer.set_name("position_ids");
  buffer.set_data_type(onnx::TensorProto::INT64);
  buffer.add_dims(1);
  buffer.add_dims(512);
  buffer.set_data_location(onnx::TensorProto::EXTERNAL);
  auto& shape = m.node("Shape", {"attention_mask"}, {"seq_len"});
  OnnxModel::attr(shape, "start", std::int64_t{1});
  OnnxModel::attr(shape, "end", std::int64_t{2});
  m.ints("starts", {0});
  m.ints("axes", {1});
  m.node("Slice", {"position_ids", "starts", "seq_len", "axes"}, {"positions"});
  m.node("Unsqueeze", {"seq_len", "axes"}, {"seq_2d"});  // Folded: reads seq_len's value.

  Shapes shapes{{{"attention_mask", {2, 6}}}};
  CHECK(fold_shape_arithmetic(m.graph(), shapes.lookup()) == 2);  // Unsqueeze, Slice's bound.
  CHECK(producer(m, "seq_len").op_type() == "Shape");
  const onnx::NodeProto& slice = producer(m, "positions");
  CHECK(slice.op_type() == "Slice");
  REQUIRE(slice.input(2) == "seq_len__value");
  const auto fed = std::find_if(m.graph().initializer().begin(), m.graph().initializer().end(),
                                [](const auto& t) { return t.name() == "seq_len__value"; });
  REQUIRE(fed != m.graph().initializer().end());
  CHECK(fed->data_type() == onnx::TensorProto::INT64);
  CHECK(Ints(fed->int64_data().begin(), fed->int64_data().end()) == Ints{6});
  // A second round finds nothing more to feed.
  CHECK(fold_shape_arithmetic(m.graph(), shapes.lookup()) == 0);
}

TEST_CASE("onnx fold: Range, arithmetic, Equal and Where with broadcasting", "[onnx]") {
  // Hugging Face's Expand guard: Where(Equal(shape, -1), ones, shape).
  OnnxModel m("fold");
  m.node("Shape", {"x"}, {"shape"});
  m.ints("minus1", {-1, 7, -1});
  m.node("Equal", {"minus1", "shape"}, {"is_free"});
  m.ints("ones", {1});
  m.node("Where", {"is_free", "ones", "minus1"}, {"expand"});
  // Range(0, seq * 2 - 1, 3) with seq from the shape; Div truncates toward zero.
  m.constant_ints("zero", {0}, true);
  m.constant_ints("three", {3}, true);
  m.constant_ints("two", {2}, true);
  m.constant_ints("one", {1}, true);
  m.node("Gather", {"shape", "one"}, {"seq"});
  m.node("Mul", {"seq", "two"}, {"twice"});
  m.node("Sub", {"twice", "one"}, {"limit"});
  m.node("Range", {"zero", "limit", "three"}, {"steps"});
  m.node("Div", {"limit", "two"}, {"half"});
  m.constant_ints("zero_1d", {0});
  m.node("Div", {"limit", "zero_1d"}, {"by_zero"});
  m.node("Max", {"half", "minus1"}, {"max"});
  auto& to_int32 = m.node("Cast", {"max"}, {"as_int32"});
  OnnxModel::attr(to_int32, "to", std::int64_t{onnx::TensorProto::INT32});
  auto& to_float = m.node("Cast", {"max"}, {"as_float"});
  OnnxModel::attr(to_float, "to", std::int64_t{onnx::TensorProto::FLOAT});

  Shapes shapes{{{"x", {3, 7, 5}}}};
  fold_shape_arithmetic(m.graph(), shapes.lookup());
  CHECK(constant(m, "is_free") == std::pair{Ints{3}, Ints{0, 1, 0}});
  CHECK(constant(m, "expand") == std::pair{Ints{3}, Ints{-1, 1, -1}});
  CHECK(constant(m, "limit") == std::pair{Ints{}, Ints{13}});
  CHECK(constant(m, "steps") == std::pair{Ints{5}, Ints{0, 3, 6, 9, 12}});
  CHECK(constant(m, "half") == std::pair{Ints{}, Ints{6}});
  CHECK(constant(m, "max") == std::pair{Ints{3}, Ints{6, 7, 6}});
  CHECK(constant(m, "as_int32") == std::pair{Ints{3}, Ints{6, 7, 6}});
  CHECK(producer(m, "as_int32").attribute(0).t().data_type() == onnx::TensorProto::INT32);
  // Division by zero and casts to float are left for the runtime.
  CHECK(producer(m, "by_zero").op_type() == "Div");
  CHECK(producer(m, "as_float").op_type() == "Cast");
}

TEST_CASE("onnx fold: leaves graph outputs, unknown shapes and large tensors alone", "[onnx]") {
  OnnxModel m("fold");
  m.node("Shape", {"x"}, {"shape"});
  m.node("Shape", {"unknown"}, {"unknown_shape"});
  m.constant_ints("axes", {0});
  m.node("Unsqueeze", {"shape", "axes"}, {"shape_2d"});
  m.output("shape_2d");
  m.node("Squeeze", {"unknown_shape", "axes"}, {"still_unknown"});
  m.ints("n", {5000});
  m.constant_ints("zero", {0}, true);
  m.constant_ints("one", {1}, true);
  m.node("Squeeze", {"n"}, {"n0"});
  m.node("Range", {"zero", "n0", "one"}, {"too_big"});

  Shapes shapes{{{"x", {2, 3}}}};
  CHECK(fold_shape_arithmetic(m.graph(), shapes.lookup()) == 1);
  CHECK(producer(m, "shape_2d").op_type() == "Unsqueeze");
  CHECK(producer(m, "still_unknown").op_type() == "Squeeze");
  CHECK(constant(m, "n0") == std::pair{Ints{}, Ints{5000}});
  CHECK(producer(m, "too_big").op_type() == "Range");
}

TEST_CASE("onnx fold: exporter sentinels and overflowing arithmetic", "[onnx]") {
  // torch writes x[1:] as Slice(x, 1, INT64_MAX) and x[::-1] as Slice(x, -1, INT64_MIN, step -1).
  OnnxModel m("fold");
  m.ints("x", {10, 20, 30, 40});
  m.ints("one", {1});
  m.ints("minus1", {-1});
  m.ints("max", {INT64_MAX});
  m.ints("min", {INT64_MIN});
  m.ints("axes", {0});
  m.node("Slice", {"x", "one", "max", "axes"}, {"tail"});
  m.node("Slice", {"x", "minus1", "min", "axes", "minus1"}, {"reversed"});
  m.node("Slice", {"x", "one", "max", "axes", "max"}, {"huge_step"});
  m.node("Add", {"max", "one"}, {"overflow"});
  m.node("Mul", {"min", "minus1"}, {"overflow_mul"});
  m.node("Div", {"min", "minus1"}, {"overflow_div"});
  m.node("Range", {"min_scalar", "max_scalar", "one_scalar"}, {"too_long"});
  m.constant_ints("min_scalar", {INT64_MIN}, true);
  m.constant_ints("max_scalar", {INT64_MAX}, true);
  m.constant_ints("one_scalar", {1}, true);
  Shapes shapes;
  fold_shape_arithmetic(m.graph(), shapes.lookup());
  CHECK(constant(m, "tail") == std::pair{Ints{3}, Ints{20, 30, 40}});
  CHECK(constant(m, "reversed") == std::pair{Ints{4}, Ints{40, 30, 20, 10}});
  CHECK(constant(m, "huge_step") == std::pair{Ints{1}, Ints{20}});
  // Arithmetic that would overflow is left to the runtime, never wrapped.
  CHECK(producer(m, "overflow").op_type() == "Add");
  CHECK(producer(m, "overflow_mul").op_type() == "Mul");
  CHECK(producer(m, "overflow_div").op_type() == "Div");
  CHECK(producer(m, "too_long").op_type() == "Range");
}

TEST_CASE("onnx fold: expand(n, -1, -1) as torch 1.13 exports it", "[onnx]") {
  // ViT's class token: cls [1, 1, 768] .expand(x.shape[0], -1, -1). torch writes the target
  // through ones_like: Where(Equal(size, ConstantOfShape(Shape(size), 1) * -1), ones, size).
  OnnxModel m("fold");
  m.node("Shape", {"x"}, {"shape"});
  m.constant_ints("zero", {0}, /*rank0=*/true);
  m.node("Gather", {"shape", "zero"}, {"n"});
  m.constant_ints("axes", {0});
  m.node("Unsqueeze", {"n", "axes"}, {"n_1d"});
  m.constant_ints("rest", {-1, -1});
  auto& concat = m.node("Concat", {"n_1d", "rest"}, {"size"});
  OnnxModel::attr(concat, "axis", std::int64_t{0});
  m.node("Shape", {"size"}, {"size_shape"});
  auto& ones = m.node("ConstantOfShape", {"size_shape"}, {"ones"});
  auto* value = ones.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_int64_data(1);
  m.constant_ints("minus_one", {-1}, /*rank0=*/true);
  m.node("Mul", {"ones", "minus_one"}, {"neg_ones"});
  m.node("Equal", {"size", "neg_ones"}, {"is_neg"});
  m.node("Where", {"is_neg", "ones", "size"}, {"target"});

  Shapes shapes{{{"x", {4, 196, 768}}}};
  fold_shape_arithmetic(m.graph(), shapes.lookup());
  CHECK(constant(m, "ones") == std::pair{Ints{3}, Ints{1, 1, 1}});
  CHECK(constant(m, "target") == std::pair{Ints{3}, Ints{4, 1, 1}});
}

TEST_CASE("onnx fold: integer remainder as torch exports it (Mod, Less, And, Not)", "[onnx]") {
  // Swin's padding, pad_r = (7 - W % 7) % 7 for W = 30: torch's floor division writes
  // q = Div(a, b), fixed where the signs differ and the remainder is not zero; here 30 // 7 = 4,
  // 30 - 4·7 = 2, (7 - 2) % 7 = 5. Python's % takes the divisor's sign: -2 % 7 = 5 (Mod fmod=0).
  OnnxModel m("fold");
  m.constant_ints("w", {30}, /*rank0=*/true);
  m.constant_ints("seven", {7}, /*rank0=*/true);
  m.constant_ints("zero", {0}, /*rank0=*/true);
  m.node("Div", {"w", "seven"}, {"q"});
  m.node("Mul", {"w", "seven"}, {"sign_product"});
  m.node("Less", {"sign_product", "zero"}, {"negative"});
  m.node("Mul", {"q", "seven"}, {"q7"});
  m.node("Sub", {"w", "q7"}, {"r"});
  m.node("Equal", {"r", "zero"}, {"exact"});
  m.node("Not", {"exact"}, {"inexact"});
  m.node("And", {"negative", "inexact"}, {"fix"});
  m.node("Sub", {"seven", "r"}, {"pad"});
  m.node("Mod", {"pad", "seven"}, {"pad_r"});
  m.constant_ints("minus_two", {-2}, /*rank0=*/true);
  m.node("Mod", {"minus_two", "seven"}, {"python_mod"});
  auto& c_mod = m.node("Mod", {"minus_two", "seven"}, {"c_mod"});
  OnnxModel::attr(c_mod, "fmod", std::int64_t{1});
  m.node("Neg", {"minus_two"}, {"two"});
  m.node("Greater", {"two", "zero"}, {"positive"});

  fold_shape_arithmetic(m.graph(), Shapes{}.lookup());
  CHECK(constant(m, "r") == std::pair{Ints{}, Ints{2}});
  CHECK(constant(m, "fix") == std::pair{Ints{}, Ints{0}});
  CHECK(constant(m, "pad_r") == std::pair{Ints{}, Ints{5}});
  CHECK(constant(m, "python_mod") == std::pair{Ints{}, Ints{5}});
  CHECK(constant(m, "c_mod") == std::pair{Ints{}, Ints{-2}});
  CHECK(constant(m, "two") == std::pair{Ints{}, Ints{2}});
  CHECK(constant(m, "positive") == std::pair{Ints{}, Ints{1}});
}

TEST_CASE("onnx fold: F.pad's pads through Reshape, a reversing Slice and Transpose", "[onnx]") {
  // torch turns F.pad's (begin, end) pairs, last axis first, padded to [0, 0, 0, 5, 0, 5, 0, 0]
  // for a 4-D x, into ONNX's all-begins-then-all-ends: Reshape [-1, 2] gives the rows (0, 0)
  // (0, 5) (0, 5) (0, 0), the Slice reverses them (the same here), Transpose gives the begins
  // [0, 0, 0, 0] and the ends [0, 5, 5, 0].
  OnnxModel m("fold");
  m.constant_ints("pairs", {0, 0, 0, 5, 0, 5, 0, 0});
  m.constant_ints("rows", {-1, 2});
  m.node("Reshape", {"pairs", "rows"}, {"by_axis"});
  m.constant_ints("start", {-1});
  m.constant_ints("end", {-9223372036854775807LL});
  m.constant_ints("axis", {0});
  m.constant_ints("step", {-1});
  m.node("Slice", {"by_axis", "start", "end", "axis", "step"}, {"reversed"});
  m.node("Transpose", {"reversed"}, {"begins_ends"});
  m.constant_ints("flat", {-1});
  m.node("Reshape", {"begins_ends", "flat"}, {"pads"});

  fold_shape_arithmetic(m.graph(), Shapes{}.lookup());
  CHECK(constant(m, "reversed") == std::pair{Ints{4, 2}, Ints{0, 0, 0, 5, 0, 5, 0, 0}});
  CHECK(constant(m, "begins_ends") == std::pair{Ints{2, 4}, Ints{0, 0, 0, 0, 0, 5, 5, 0}});
  CHECK(constant(m, "pads") == std::pair{Ints{8}, Ints{0, 0, 0, 0, 0, 5, 5, 0}});
}
