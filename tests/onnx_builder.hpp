// Builds ONNX models in tests with the protobuf API (no binary fixtures, no Python): a thin
// helper over onnx::ModelProto, opset 17 unless set.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

#include "test_data.hpp"

namespace capcalc::test {

using Dim = std::variant<std::int64_t, std::string>;

// A small helper over onnx::ModelProto (IR version 8).
class OnnxModel {
 public:
  explicit OnnxModel(const std::string& name, std::int64_t opset_version = 17) {
    model_.set_ir_version(8);
    model_.set_producer_name("capcalc-test");
    auto* opset = model_.add_opset_import();
    opset->set_domain("");
    opset->set_version(opset_version);
    model_.mutable_graph()->set_name(name);
  }

  onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  onnx::ModelProto& model() { return model_; }

  void input(const std::string& name, const std::vector<Dim>& dims,
             std::int32_t elem_type = onnx::TensorProto::FLOAT) {
    auto* info = graph().add_input();
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(elem_type);
    auto* shape = tensor->mutable_shape();
    for (const Dim& d : dims) {
      if (const auto* v = std::get_if<std::int64_t>(&d)) {
        shape->add_dim()->set_dim_value(*v);
      } else {
        shape->add_dim()->set_dim_param(std::get<std::string>(d));
      }
    }
  }

  void output(const std::string& name, std::int32_t elem_type = onnx::TensorProto::FLOAT) {
    auto* info = graph().add_output();
    info->set_name(name);
    info->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
  }

  // A weight (float unless set): dims only, as with external data (shape inference needs no
  // values).
  onnx::TensorProto& weight(const std::string& name, const std::vector<std::int64_t>& dims,
                            std::int32_t elem_type = onnx::TensorProto::FLOAT) {
    auto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(elem_type);
    for (std::int64_t d : dims)
      t->add_dims(d);
    return *t;
  }

  // An int64 1-D constant (Reshape shapes, axes).
  void ints(const std::string& name, const std::vector<std::int64_t>& values) {
    auto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<std::int64_t>(values.size()));
    for (std::int64_t v : values)
      t->add_int64_data(v);
  }

  // A float scalar (rank 0): a constant, not a parameter.
  void scalar(const std::string& name, float value) {
    auto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
  }

  // A Constant node holding an int64 tensor (rank 0 when `rank0`), as exporters write axes,
  // indices and shape pieces.
  void constant_ints(const std::string& name, const std::vector<std::int64_t>& values,
                     bool rank0 = false) {
    auto& n = node("Constant", {}, {name});
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(onnx::TensorProto::INT64);
    if (!rank0) t->add_dims(static_cast<std::int64_t>(values.size()));
    for (std::int64_t v : values)
      t->add_int64_data(v);
  }

  // A Constant node holding a float scalar.
  void constant_scalar(const std::string& name, float value) {
    auto& n = node("Constant", {}, {name});
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
  }

  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = graph().add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? outputs.front() : name);
    for (const auto& i : inputs)
      n->add_input(i);
    for (const auto& o : outputs)
      n->add_output(o);
    return *n;
  }

  static void attr(onnx::NodeProto& n, const std::string& name, std::int64_t value) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }
  static void attr(onnx::NodeProto& n, const std::string& name,
                   const std::vector<std::int64_t>& values) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (std::int64_t v : values)
      a->add_ints(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::string& value) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(value);
  }

  std::string bytes() const { return model_.SerializeAsString(); }

  // Writes the model to a temporary .onnx file and returns its path.
  std::string save(const std::string& stem) const {
    const std::string path = temp_path(stem);
    std::ofstream out(path, std::ios::binary);
    const std::string data = bytes();
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    return path;
  }

  static std::string temp_path(const std::string& stem) {
    return capcalc::test::temp_path("onnx_test_" + stem + ".onnx");
  }

  capcalc::Graph load(const std::string& stem, const capcalc::ModelOptions& options = {}) const {
    return capcalc::load_model(save(stem), options);
  }

 private:
  onnx::ModelProto model_;
};

// The layer of that name in an imported graph; throws (failing the test) if there is none.
inline const capcalc::Layer& layer_named(const capcalc::Graph& g, const std::string& name) {
  for (const capcalc::Layer& layer : g.layers) {
    if (layer.name == name) return layer;
  }
  throw std::runtime_error("no layer " + name);
}

}  // namespace capcalc::test
