// A large ONNX file for measuring how capcalc loads one: a stack of MatMul layers of
// 2,048 x 2,048 float weights held inline (16 MiB of raw_data each), as a model saved without
// external data is. The file is written as a stream (the wire format by hand around protobuf's
// serialisation of the small messages), so that writing it never holds the weights in memory.
#pragma once

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace capcalc::test {

inline void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

inline std::string length_prefix(std::uint32_t field, std::uint64_t length) {
  std::string out;
  put_varint(out, (std::uint64_t{field} << 3) | 2);
  put_varint(out, length);
  return out;
}

/// Writes a model of `layers` MatMul layers, x [batch, 2048] -> ... -> y, and returns the
/// file's size in bytes (16 MiB and a few hundred bytes per layer).
inline std::int64_t write_big_onnx(const std::string& path, int layers) {
  constexpr std::int64_t kWidth = 2048;
  constexpr std::uint64_t kWeightBytes = kWidth * kWidth * 4;
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("capcalc-bench");
  model.add_opset_import()->set_version(17);
  onnx::GraphProto graph;
  graph.set_name("big");
  auto* input = graph.add_input();
  input->set_name("x0");
  auto* tensor = input->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  tensor->mutable_shape()->add_dim()->set_dim_param("batch");
  tensor->mutable_shape()->add_dim()->set_dim_value(kWidth);
  std::vector<std::string> weights;  // Each: the TensorProto without its data.
  for (int i = 0; i < layers; ++i) {
    auto* node = graph.add_node();
    node->set_op_type("MatMul");
    node->set_name("layer" + std::to_string(i));
    node->add_input("x" + std::to_string(i));
    node->add_input("w" + std::to_string(i));
    node->add_output("x" + std::to_string(i + 1));
    onnx::TensorProto w;
    w.set_name("w" + std::to_string(i));
    w.set_data_type(onnx::TensorProto::FLOAT);
    w.add_dims(kWidth);
    w.add_dims(kWidth);
    weights.push_back(w.SerializeAsString() + length_prefix(9, kWeightBytes));  // raw_data.
  }
  graph.add_output()->set_name("x" + std::to_string(layers));
  const std::string graph_head = graph.SerializeAsString();
  std::uint64_t graph_bytes = graph_head.size();
  for (const std::string& w : weights)
    graph_bytes += length_prefix(5, w.size() + kWeightBytes).size() + w.size() + kWeightBytes;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const auto write = [&](const std::string& bytes) {
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  write(model.SerializeAsString());
  write(length_prefix(7, graph_bytes));
  write(graph_head);
  const std::string chunk(1 << 20, '\x3f');  // 0x3f3f3f3f: the float 0.747.
  for (const std::string& w : weights) {
    write(length_prefix(5, w.size() + kWeightBytes));  // GraphProto.initializer.
    write(w);
    for (std::uint64_t done = 0; done < kWeightBytes; done += chunk.size())
      write(chunk);
  }
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
  return static_cast<std::int64_t>(std::ifstream(path, std::ios::binary | std::ios::ate).tellg());
}

}  // namespace capcalc::test
