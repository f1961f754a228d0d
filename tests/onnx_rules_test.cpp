// The ONNX operator table (src/import/onnx_rules.hpp): each row carries all that the importer
// knows of its operator, so that adding an operator is one row plus a test of its counts.
#include "import/onnx_rules.hpp"

#include <set>
#include <string>

#include "catch.hpp"

namespace {

using capcalc::onnx_import::find_rule;
using capcalc::onnx_import::onnx_rules;
using capcalc::onnx_import::OnnxRule;
using capcalc::onnx_import::Role;

onnx::NodeProto node_of(const std::string& op_type, const std::string& domain = "") {
  onnx::NodeProto node;
  node.set_op_type(op_type);
  node.set_domain(domain);
  return node;
}

}  // namespace

TEST_CASE("onnx rules: one row per op_type, and every layer row counts", "[onnx][rules]") {
  std::set<std::string> seen;
  for (const OnnxRule& rule : onnx_rules()) {
    INFO(rule.op_type);
    CHECK(seen.insert(std::string(rule.op_type)).second);
    CHECK(!rule.name.empty());
    CHECK((rule.role == Role::kLayer) == (rule.count != nullptr));
  }
}

TEST_CASE("onnx rules: rows are found in ai.onnx and com.microsoft only", "[onnx][rules]") {
  REQUIRE(find_rule(node_of("Conv")) != nullptr);
  CHECK(find_rule(node_of("Conv", "ai.onnx")) == find_rule(node_of("Conv")));
  CHECK(find_rule(node_of("MatMulNBits", "com.microsoft"))->name == "matmul");
  CHECK(find_rule(node_of("Conv", "com.example")) == nullptr);
  CHECK(find_rule(node_of("NoSuchOp")) == nullptr);
}

TEST_CASE("onnx rules: a row says which inputs hold parameters", "[onnx][rules]") {
  // BatchNormalization: scale and bias (1, 2), not the running mean and variance (3, 4).
  const OnnxRule& batchnorm = *find_rule(node_of("BatchNormalization"));
  CHECK(batchnorm.is_param_slot(1));
  CHECK(batchnorm.is_param_slot(2));
  CHECK_FALSE(batchnorm.is_param_slot(3));
  CHECK_FALSE(batchnorm.is_param_slot(4));
  // QLinearConv (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B):
  // the operands are parameters, their scales and zero points not.
  const OnnxRule& qconv = *find_rule(node_of("QLinearConv"));
  CHECK(qconv.operands.quantised);
  CHECK(qconv.operands.w == 3);
  CHECK(qconv.operands.bias == 8);
  CHECK(qconv.is_param_slot(3));
  CHECK(qconv.is_param_slot(8));
  CHECK_FALSE(qconv.is_param_slot(1));
  CHECK_FALSE(qconv.is_param_slot(4));
  // Elementwise rows read bounds (Clip's min and max) that are not parameters; binary ones
  // count a constant operand (a bias) as one, at any slot.
  CHECK_FALSE(find_rule(node_of("Clip"))->is_param_slot(1));
  CHECK(find_rule(node_of("Add"))->is_param_slot(1));
  CHECK(find_rule(node_of("Concat"))->is_param_slot(70));
}
