// ONNX graphs laid out as the exporters write them: torch.onnx.export (opset 17, eval mode,
// constant folding on) of torchvision's ResNet-18, MobileNetV2, ViT-B/16 and FCN-ResNet50 and of
// Hugging Face's BertModel with dynamic axes. Real exported files cannot be fetched here (no
// network, no Python), so each builder reproduces what such a file holds: BatchNorm folded into
// conv biases, ReLU6 as Clip with its bounds as inputs, dynamic reshapes computed from Shape,
// Gather, Unsqueeze and Concat, Constant nodes for axes and scalars, int64 buffers
// (position_ids) beside the weights, the exact-erf GELU written out op by op. The counts are
// checked against the published figures and against capcalc's own zoo models.
#include <cstdint>
#include <string>
#include <vector>

#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

#include "catch.hpp"
#include "onnx_builder.hpp"
#include "test_data.hpp"

namespace {

using capcalc::Graph;
using capcalc::ModelOptions;
using capcalc::test::layer_named;
using capcalc::test::OnnxModel;
using Ints = std::vector<std::int64_t>;

// Exporter-style names: nodes "/layer1/layer1.0/conv1/Conv", outputs "<node>_output_0",
// folded weights "onnx::Conv_<n>".
class TorchExport {
 public:
  explicit TorchExport(OnnxModel& m) : m_(m) {}

  // Conv with its folded bias (BatchNorm absorbed), as do_constant_folding leaves it.
  std::string conv(const std::string& path, const std::string& in, std::int64_t c_in,
                   std::int64_t c_out, std::int64_t k, std::int64_t stride, std::int64_t groups = 1,
                   std::int64_t dilation = 1) {
    const std::string w = next_initializer("Conv");
    const std::string b = next_initializer("Conv");
    m_.weight(w, {c_out, c_in / groups, k, k});
    m_.weight(b, {c_out});
    const std::string out = path + "/Conv_output_0";
    auto& n = m_.node("Conv", {in, w, b}, {out}, path + "/Conv");
    const std::int64_t p = dilation * (k / 2);
    OnnxModel::attr(n, "dilations", Ints{dilation, dilation});
    OnnxModel::attr(n, "group", groups);
    OnnxModel::attr(n, "kernel_shape", Ints{k, k});
    OnnxModel::attr(n, "pads", Ints{p, p, p, p});
    OnnxModel::attr(n, "strides", Ints{stride, stride});
    folded_channels_ += c_out;
    return out;
  }

  std::string unary(const std::string& op, const std::string& path, const std::string& in) {
    const std::string out = path + "/" + op + "_output_0";
    m_.node(op, {in}, {out}, path + "/" + op);
    return out;
  }

  std::string binary(const std::string& op, const std::string& path, const std::string& a,
                     const std::string& b) {
    const std::string out = path + "/" + op + "_output_0";
    m_.node(op, {a, b}, {out}, path + "/" + op);
    return out;
  }

  // torch exports F.relu6 as Clip(x, min, max) with the bounds as (shared) inputs.
  std::string relu6(const std::string& path, const std::string& in) {
    if (!have_bounds_) {
      m_.scalar("onnx::Clip_min", 0.0F);
      m_.scalar("onnx::Clip_max", 6.0F);
      have_bounds_ = true;
    }
    const std::string out = path + "/Clip_output_0";
    m_.node("Clip", {in, "onnx::Clip_min", "onnx::Clip_max"}, {out}, path + "/Clip");
    return out;
  }

  // Flatten + Gemm(transB) to `classes`, the classifier head of both CNNs.
  std::string classifier(const std::string& in, std::int64_t features, std::int64_t classes) {
    m_.node("GlobalAveragePool", {in}, {"/avgpool/GlobalAveragePool_output_0"},
            "/avgpool/GlobalAveragePool");
    auto& flat = m_.node("Flatten", {"/avgpool/GlobalAveragePool_output_0"}, {"/Flatten_output_0"},
                         "/Flatten");
    OnnxModel::attr(flat, "axis", std::int64_t{1});
    m_.weight("fc.weight", {classes, features});
    m_.weight("fc.bias", {classes});
    auto& gemm =
        m_.node("Gemm", {"/Flatten_output_0", "fc.weight", "fc.bias"}, {"output"}, "/fc/Gemm");
    OnnxModel::attr(gemm, "transB", std::int64_t{1});
    m_.output("output");
    return "output";
  }

  std::int64_t folded_channels() const { return folded_channels_; }

 private:
  std::string next_initializer(const std::string& op) {
    return "onnx::" + op + "_" + std::to_string(counter_++);
  }

  OnnxModel& m_;
  int counter_ = 193;
  std::int64_t folded_channels_ = 0;
  bool have_bounds_ = false;
};

// torchvision.models.resnet18 (BasicBlock x [2, 2, 2, 2]).
OnnxModel resnet18_export(std::int64_t* folded_channels) {
  OnnxModel m("main_graph");
  m.input("input",
          {std::string("batch_size"), std::int64_t{3}, std::int64_t{224}, std::int64_t{224}});
  TorchExport t(m);
  std::string x = t.unary("Relu", "/relu", t.conv("/conv1", "input", 3, 64, 7, 2));
  auto& pool = m.node("MaxPool", {x}, {"/maxpool/MaxPool_output_0"}, "/maxpool/MaxPool");
  OnnxModel::attr(pool, "kernel_shape", Ints{3, 3});
  OnnxModel::attr(pool, "pads", Ints{1, 1, 1, 1});
  OnnxModel::attr(pool, "strides", Ints{2, 2});
  x = "/maxpool/MaxPool_output_0";
  std::int64_t channels = 64;
  const std::int64_t widths[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (int b = 0; b < 2; ++b) {
      const std::string path = "/layer" + std::to_string(stage + 1) + "/layer" +
                               std::to_string(stage + 1) + "." + std::to_string(b);
      const std::int64_t width = widths[stage];
      const std::int64_t stride = b == 0 && stage > 0 ? 2 : 1;
      std::string h =
          t.unary("Relu", path + "/relu", t.conv(path + "/conv1", x, channels, width, 3, stride));
      h = t.conv(path + "/conv2", h, width, width, 3, 1);
      const std::string shortcut = b == 0 && stage > 0 ? t.conv(path + "/downsample/downsample.0",
                                                                x, channels, width, 1, stride)
                                                       : x;
      x = t.unary("Relu", path + "/relu_1", t.binary("Add", path, h, shortcut));
      channels = width;
    }
  }
  t.classifier(x, 512, 1000);
  *folded_channels = t.folded_channels();
  return m;
}

// torchvision.models.mobilenet_v2 (width 1.0): the (t, c, n, s) table of Sandler et al.
OnnxModel mobilenet_v2_export(std::int64_t* folded_channels) {
  OnnxModel m("main_graph");
  m.input("input",
          {std::string("batch_size"), std::int64_t{3}, std::int64_t{224}, std::int64_t{224}});
  TorchExport t(m);
  int feature = 0;
  const auto path = [&](const std::string& rest) {
    return "/features/features." + std::to_string(feature) + rest;
  };
  std::string x =
      t.relu6(path("/features.0.2"), t.conv(path("/features.0.0"), "input", 3, 32, 3, 2));
  std::int64_t channels = 32;
  const std::int64_t table[][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                   {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  for (const auto& row : table) {
    for (std::int64_t i = 0; i < row[2]; ++i) {
      ++feature;
      const std::int64_t stride = i == 0 ? row[3] : 1;
      const std::int64_t hidden = channels * row[0];
      std::string h = x;
      int conv_index = 0;
      if (row[0] != 1) {
        h = t.relu6(path("/conv/conv.0/conv.0.2"),
                    t.conv(path("/conv/conv.0/conv.0.0"), h, channels, hidden, 1, 1));
        ++conv_index;
      }
      const std::string dw = "/conv/conv." + std::to_string(conv_index);
      h = t.relu6(path(dw + dw.substr(5) + ".2"),
                  t.conv(path(dw + dw.substr(5) + ".0"), h, hidden, hidden, 3, stride, hidden));
      h = t.conv(path("/conv/conv." + std::to_string(conv_index + 1)), h, hidden, row[1], 1, 1);
      x = stride == 1 && channels == row[1] ? t.binary("Add", path(""), x, h) : h;
      channels = row[1];
    }
  }
  ++feature;
  x = t.relu6(path("/features.18.2"), t.conv(path("/features.18.0"), x, 320, 1280, 1, 1));
  t.classifier(x, 1280, 1000);
  *folded_channels = t.folded_channels();
  return m;
}

// transformers.BertModel (bert-base-uncased: 12 layers, hidden 768, 12 heads, FFN 3072, vocab
// 30522, 512 positions, 2 token types) exported with dynamic axes {0: batch, 1: sequence} on
// input_ids, token_type_ids and attention_mask; outputs last_hidden_state and pooler_output.
OnnxModel bert_base_export() {
  const std::int64_t hidden = 768, heads = 12, head_dim = 64, ffn = 3072, layers = 12;
  OnnxModel m("main_graph");
  for (const char* name : {"input_ids", "token_type_ids", "attention_mask"})
    m.input(name, {std::string("batch"), std::string("sequence")}, onnx::TensorProto::INT64);
  m.weight("embeddings.word_embeddings.weight", {30522, hidden});
  m.weight("embeddings.position_embeddings.weight", {512, hidden});
  m.weight("embeddings.token_type_embeddings.weight", {2, hidden});
  // The registered buffer position_ids: int64 [1, 512], a constant but not a parameter.
  {
    auto* ids = m.graph().add_initializer();
    ids->set_name("embeddings.position_ids");
    ids->set_data_type(onnx::TensorProto::INT64);
    ids->add_dims(1);
    ids->add_dims(512);
    for (std::int64_t i = 0; i < 512; ++i)
      ids->add_int64_data(i);
  }
  const auto last = [&]() -> onnx::NodeProto& {
    return *m.graph().mutable_node(m.graph().node_size() - 1);
  };
  int n = 0;
  const auto name = [&](const std::string& op) { return "/" + op + "_" + std::to_string(n++); };
  const auto node = [&](const std::string& op, const std::vector<std::string>& inputs) {
    const std::string out = name(op) + "_output_0";
    m.node(op, inputs, {out});
    return out;
  };
  const auto constant_ints = [&](const Ints& values, bool rank0 = false) {
    const std::string out = name("Constant") + "_output_0";
    m.constant_ints(out, values, rank0);
    return out;
  };
  const auto constant = [&](float value) {
    const std::string out = name("Constant") + "_output_0";
    m.constant_scalar(out, value);
    return out;
  };
  const auto unsqueeze0 = [&](const std::string& in) {
    return node("Unsqueeze", {in, constant_ints({0})});
  };
  const auto layer_norm = [&](const std::string& prefix, const std::string& in) {
    m.weight(prefix + ".weight", {hidden});
    m.weight(prefix + ".bias", {hidden});
    const std::string out = node("LayerNormalization", {in, prefix + ".weight", prefix + ".bias"});
    auto& ln = last();
    OnnxModel::attr(ln, "axis", std::int64_t{-1});
    auto* eps = ln.add_attribute();
    eps->set_name("epsilon");
    eps->set_type(onnx::AttributeProto::FLOAT);
    eps->set_f(1e-12F);
    return out;
  };
  // nn.Linear on a 3-D input: MatMul with the transposed weight, then Add of the bias.
  int linear_id = 0;
  const auto linear = [&](const std::string& prefix, const std::string& in, std::int64_t k,
                          std::int64_t out_features) {
    const std::string w = "onnx::MatMul_" + std::to_string(1500 + linear_id++);
    m.weight(w, {k, out_features});
    m.weight(prefix + ".bias", {out_features});
    return node("Add", {prefix + ".bias", node("MatMul", {in, w})});
  };

  // Embeddings: the sequence length from Shape(input_ids), position_ids sliced to it.
  const std::string seq_len =
      node("Gather", {node("Shape", {"input_ids"}), constant_ints({1}, /*rank0=*/true)});
  const std::string positions =
      node("Slice", {"embeddings.position_ids", constant_ints({0}), unsqueeze0(seq_len),
                     constant_ints({1}), constant_ints({1})});
  std::string h = node(
      "Add",
      {node("Add", {node("Gather", {"embeddings.word_embeddings.weight", "input_ids"}),
                    node("Gather", {"embeddings.token_type_embeddings.weight", "token_type_ids"})}),
       node("Gather", {"embeddings.position_embeddings.weight", positions})});
  h = layer_norm("embeddings.LayerNorm", h);

  // The extended attention mask: (1 - mask[:, None, None, :]) * finfo(float32).min.
  const std::string mask4 = node("Unsqueeze", {"attention_mask", constant_ints({1, 2})});
  std::string mask = node("Cast", {mask4});
  OnnxModel::attr(last(), "to", std::int64_t{onnx::TensorProto::FLOAT});
  mask = node("Mul", {node("Sub", {constant(1.0F), mask}), constant(-3.4028234663852886e38F)});

  for (std::int64_t l = 0; l < layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l);
    // [batch, sequence, heads, head_dim] from Shape(h)[0], Shape(h)[1] and constants.
    const auto split_heads = [&](const std::string& x, const Ints& perm) {
      const std::string shape = node("Shape", {x});
      const std::string b = unsqueeze0(node("Gather", {shape, constant_ints({0}, true)}));
      const std::string s = unsqueeze0(node("Gather", {shape, constant_ints({1}, true)}));
      const std::string target =
          node("Concat", {b, s, constant_ints({heads}), constant_ints({head_dim})});
      OnnxModel::attr(last(), "axis", std::int64_t{0});
      const std::string out = node("Transpose", {node("Reshape", {x, target})});
      OnnxModel::attr(last(), "perm", perm);
      return out;
    };
    const std::string q =
        split_heads(linear(p + ".attention.self.query", h, hidden, hidden), Ints{0, 2, 1, 3});
    const std::string k =
        split_heads(linear(p + ".attention.self.key", h, hidden, hidden), Ints{0, 2, 3, 1});
    const std::string v =
        split_heads(linear(p + ".attention.self.value", h, hidden, hidden), Ints{0, 2, 1, 3});
    const std::string scores =
        node("Add", {node("Div", {node("MatMul", {q, k}), constant(8.0F)}), mask});
    const std::string probs = node("Softmax", {scores});
    OnnxModel::attr(last(), "axis", std::int64_t{-1});
    std::string context = node("Transpose", {node("MatMul", {probs, v})});
    OnnxModel::attr(last(), "perm", Ints{0, 2, 1, 3});
    const std::string shape = node("Shape", {context});
    const std::string b = unsqueeze0(node("Gather", {shape, constant_ints({0}, true)}));
    const std::string s = unsqueeze0(node("Gather", {shape, constant_ints({1}, true)}));
    const std::string merged = node("Concat", {b, s, constant_ints({hidden})});
    OnnxModel::attr(last(), "axis", std::int64_t{0});
    context = node("Reshape", {context, merged});
    const std::string attn = layer_norm(
        p + ".attention.output.LayerNorm",
        node("Add", {linear(p + ".attention.output.dense", context, hidden, hidden), h}));
    // GELU with the exact erf, as torch exports it below opset 20: x * 0.5 * (1 + erf(x/√2)).
    const std::string up = linear(p + ".intermediate.dense", attn, hidden, ffn);
    const std::string erf = node("Erf", {node("Div", {up, constant(1.4142135F)})});
    const std::string gelu =
        node("Mul", {node("Mul", {up, node("Add", {erf, constant(1.0F)})}), constant(0.5F)});
    h = layer_norm(p + ".output.LayerNorm",
                   node("Add", {linear(p + ".output.dense", gelu, ffn, hidden), attn}));
  }
  m.node("Identity", {h}, {"last_hidden_state"});
  m.output("last_hidden_state");
  // Pooler: tanh(dense(hidden[:, 0])).
  const std::string first = node("Gather", {h, constant_ints({0}, true)});
  OnnxModel::attr(last(), "axis", std::int64_t{1});
  m.weight("pooler.dense.weight", {hidden, hidden});
  m.weight("pooler.dense.bias", {hidden});
  auto& gemm = m.node("Gemm", {first, "pooler.dense.weight", "pooler.dense.bias"},
                      {"/pooler/dense/Gemm_output_0"}, "/pooler/dense/Gemm");
  OnnxModel::attr(gemm, "transB", std::int64_t{1});
  m.node("Tanh", {"/pooler/dense/Gemm_output_0"}, {"pooler_output"});
  m.output("pooler_output");
  return m;
}

// torchvision.models.vit_b_16 (patch 16, 224x224, 12 layers, hidden 768, 12 heads, MLP 3072)
// exported with a dynamic batch: the patch Conv, the class token expanded to the batch
// (Expand's shape through Where(Equal(shape, -1), 1, shape), as the exporter writes
// expand(n, -1, -1)), nn.MultiheadAttention's packed in-projection split with Reshape,
// Transpose and Gather, the exact-erf GELU, the head on x[:, 0].
OnnxModel vit_b_16_export() {
  const std::int64_t hidden = 768, heads = 12, head_dim = 64, mlp = 3072, layers = 12;
  const std::int64_t tokens = 197;
  OnnxModel m("main_graph");
  m.input("x", {std::string("batch"), std::int64_t{3}, std::int64_t{224}, std::int64_t{224}});
  const auto last = [&]() -> onnx::NodeProto& {
    return *m.graph().mutable_node(m.graph().node_size() - 1);
  };
  int n = 0;
  const auto node = [&](const std::string& op, const std::vector<std::string>& inputs) {
    const std::string out = "/" + op + "_" + std::to_string(n++) + "_output_0";
    m.node(op, inputs, {out});
    return out;
  };
  const auto ints = [&](const Ints& values, bool rank0 = false) {
    const std::string out = "/Constant_" + std::to_string(n++) + "_output_0";
    m.constant_ints(out, values, rank0);
    return out;
  };
  const auto scalar = [&](float value) {
    const std::string out = "/Constant_" + std::to_string(n++) + "_output_0";
    m.constant_scalar(out, value);
    return out;
  };
  const auto dim = [&](const std::string& x, std::int64_t axis) {
    return node("Unsqueeze", {node("Gather", {node("Shape", {x}), ints({axis}, true)}), ints({0})});
  };
  const auto concat = [&](const std::vector<std::string>& parts) {
    const std::string out = node("Concat", parts);
    OnnxModel::attr(last(), "axis", std::int64_t{0});
    return out;
  };
  const auto transpose = [&](const std::string& x, const Ints& perm) {
    const std::string out = node("Transpose", {x});
    OnnxModel::attr(last(), "perm", perm);
    return out;
  };
  const auto linear = [&](const std::string& prefix, const std::string& x, std::int64_t k,
                          std::int64_t out_features) {
    const std::string w = "onnx::MatMul_" + std::to_string(n++);
    m.weight(w, {k, out_features});
    m.weight(prefix + ".bias", {out_features});
    return node("Add", {prefix + ".bias", node("MatMul", {x, w})});
  };
  const auto layer_norm = [&](const std::string& prefix, const std::string& x) {
    m.weight(prefix + ".weight", {hidden});
    m.weight(prefix + ".bias", {hidden});
    const std::string out = node("LayerNormalization", {x, prefix + ".weight", prefix + ".bias"});
    OnnxModel::attr(last(), "axis", std::int64_t{-1});
    return out;
  };

  // _process_input: conv_proj, reshape(n, 768, 196), permute(0, 2, 1).
  m.weight("conv_proj.weight", {hidden, 3, 16, 16});
  m.weight("conv_proj.bias", {hidden});
  const std::string patches = node("Conv", {"x", "conv_proj.weight", "conv_proj.bias"});
  OnnxModel::attr(last(), "kernel_shape", Ints{16, 16});
  OnnxModel::attr(last(), "strides", Ints{16, 16});
  const std::string batch = dim("x", 0);
  std::string h = transpose(
      node("Reshape", {patches, concat({batch, ints({hidden}), ints({196})})}), Ints{0, 2, 1});
  // class_token.expand(n, -1, -1), then cat along the tokens and add the position embedding.
  m.weight("class_token", {1, 1, hidden});
  const std::string wanted = concat({batch, ints({-1}), ints({-1})});
  const std::string free = node("Equal", {wanted, ints({-1, -1, -1})});
  const std::string shape = node("Where", {free, ints({1, 1, 1}), wanted});
  const std::string cls = node("Expand", {"class_token", shape});
  h = node("Concat", {cls, h});
  OnnxModel::attr(last(), "axis", std::int64_t{1});
  m.weight("encoder.pos_embedding", {1, tokens, hidden});
  h = node("Add", {h, "encoder.pos_embedding"});

  for (std::int64_t l = 0; l < layers; ++l) {
    const std::string p = "encoder.layers.encoder_layer_" + std::to_string(l);
    const std::string x = layer_norm(p + ".ln_1", h);
    // Packed in-projection [n, 197, 2304] -> [n, 197, 3, 12, 64] -> [3, n, 12, 197, 64].
    const std::string qkv = linear(p + ".self_attention.in_proj", x, hidden, 3 * hidden);
    const std::string split = transpose(
        node("Reshape",
             {qkv, concat({dim(qkv, 0), dim(qkv, 1), ints({3}), ints({heads}), ints({head_dim})})}),
        Ints{2, 0, 3, 1, 4});
    const std::string q = node("Mul", {node("Gather", {split, ints({0}, true)}), scalar(0.125F)});
    const std::string k = transpose(node("Gather", {split, ints({1}, true)}), Ints{0, 1, 3, 2});
    const std::string v = node("Gather", {split, ints({2}, true)});
    const std::string probs = node("Softmax", {node("MatMul", {q, k})});
    OnnxModel::attr(last(), "axis", std::int64_t{-1});
    const std::string context = transpose(node("MatMul", {probs, v}), Ints{0, 2, 1, 3});
    const std::string merged =
        node("Reshape", {context, concat({dim(context, 0), dim(context, 1), ints({hidden})})});
    h = node("Add", {linear(p + ".self_attention.out_proj", merged, hidden, hidden), h});
    const std::string y = layer_norm(p + ".ln_2", h);
    const std::string up = linear(p + ".mlp.0", y, hidden, mlp);
    const std::string erf = node("Erf", {node("Div", {up, scalar(1.4142135F)})});
    const std::string gelu =
        node("Mul", {node("Mul", {up, node("Add", {erf, scalar(1.0F)})}), scalar(0.5F)});
    h = node("Add", {linear(p + ".mlp.3", gelu, mlp, hidden), h});
  }
  h = layer_norm("encoder.ln", h);
  const std::string first = node("Gather", {h, ints({0}, true)});
  OnnxModel::attr(last(), "axis", std::int64_t{1});
  m.weight("heads.head.weight", {1000, hidden});
  m.weight("heads.head.bias", {1000});
  auto& head = m.node("Gemm", {first, "heads.head.weight", "heads.head.bias"}, {"logits"},
                      "/heads/head/Gemm");
  OnnxModel::attr(head, "transB", std::int64_t{1});
  m.output("logits");
  return m;
}

capcalc::Shape output_of(const Graph& g, const std::string& name) {
  return capcalc::test::layer_named(g, name).output;
}

// bert-base-uncased's MACs for B sequences of S tokens: per layer 4·B·S·H² (Q, K, V, output)
// + 2·B·S·H·F (FFN) + 2·B·S²·H (QKᵀ and AV), 12 layers, plus the pooler B·H².
std::int64_t bert_base_macs(std::int64_t B, std::int64_t S) {
  const std::int64_t H = 768, F = 3072;
  const std::int64_t per_layer = 4 * B * S * H * H + 2 * B * S * H * F + 2 * B * S * S * H;
  return 12 * per_layer + B * H * H;
}

std::int64_t conv_macs(const Graph& g) {
  std::int64_t macs = 0;
  for (const auto& layer : g.layers) {
    if (layer.op == "conv2d") macs += layer.counts.macs;
  }
  return macs;
}

}  // namespace

namespace {

// torchvision.models.segmentation.fcn_resnet50 (aux_loss off) as PyTorch 2.2's torch.onnx.export
// wrote it in a published export (modlee-ai/modlee docs/source/notebooks/recommend.rst at
// 270c670, printed with onnx.printer): ResNet-50 with layers 3 and 4 dilated instead of strided
// (output stride 8), the FCN head (3x3 conv to 512, ReLU, 1x1 conv to 21 classes), and the
// upsampling back to the input's size computed at run time: Shape -> Gather (H, W) ->
// Unsqueeze -> Concat, Shape of the logits -> Slice (N, C), Cast, Concat, then Resize(linear)
// with empty roi and scales. The batch axis is dynamic without a name ("input_1_dynamic_axes_1").
OnnxModel fcn_resnet50_export(std::int64_t side, std::int64_t* folded_channels) {
  OnnxModel m("main_graph");
  m.input("input_1", {std::string("input_1_dynamic_axes_1"), std::int64_t{3}, side, side});
  TorchExport t(m);
  m.node("Shape", {"input_1"}, {"shape_0"});
  m.constant_ints("index_h", {2}, /*rank0=*/true);
  m.node("Gather", {"shape_0", "index_h"}, {"h"});
  m.constant_ints("index_w", {3}, /*rank0=*/true);
  m.node("Gather", {"shape_0", "index_w"}, {"w"});
  std::string x =
      t.unary("Relu", "/backbone/relu", t.conv("/backbone/conv1", "input_1", 3, 64, 7, 2));
  auto& pool =
      m.node("MaxPool", {x}, {"/backbone/maxpool/MaxPool_output_0"}, "/backbone/maxpool/MaxPool");
  OnnxModel::attr(pool, "kernel_shape", Ints{3, 3});
  OnnxModel::attr(pool, "pads", Ints{1, 1, 1, 1});
  OnnxModel::attr(pool, "strides", Ints{2, 2});
  x = "/backbone/maxpool/MaxPool_output_0";
  std::int64_t channels = 64;
  std::int64_t dilation = 1;
  const std::int64_t widths[] = {64, 128, 256, 512};
  const int blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    // replace_stride_with_dilation=[False, True, True]: layers 3 and 4 keep the resolution; a
    // stage's first block still runs at the previous dilation.
    const bool dilate = stage >= 2;
    const std::int64_t previous = dilation;
    if (dilate) dilation *= 2;
    for (int b = 0; b < blocks[stage]; ++b) {
      const std::string path = "/backbone/layer" + std::to_string(stage + 1) + "/layer" +
                               std::to_string(stage + 1) + "." + std::to_string(b);
      const std::int64_t width = widths[stage];
      const std::int64_t stride = b == 0 && stage == 1 ? 2 : 1;
      const std::int64_t d = b == 0 ? previous : dilation;
      std::string h =
          t.unary("Relu", path + "/relu", t.conv(path + "/conv1", x, channels, width, 1, 1));
      h = t.unary("Relu", path + "/relu_1",
                  t.conv(path + "/conv2", h, width, width, 3, stride, 1, d));
      h = t.conv(path + "/conv3", h, width, 4 * width, 1, 1);
      const std::string shortcut =
          b == 0 ? t.conv(path + "/downsample/downsample.0", x, channels, 4 * width, 1, stride) : x;
      x = t.unary("Relu", path + "/relu_2", t.binary("Add", path, h, shortcut));
      channels = 4 * width;
    }
  }
  x = t.unary("Relu", "/classifier/classifier.2",
              t.conv("/classifier/classifier.0", x, 2048, 512, 3, 1));
  m.weight("classifier.4.weight", {21, 512, 1, 1});
  m.weight("classifier.4.bias", {21});
  auto& logits = m.node("Conv", {x, "classifier.4.weight", "classifier.4.bias"}, {"logits"},
                        "/classifier/classifier.4/Conv");
  OnnxModel::attr(logits, "kernel_shape", Ints{1, 1});
  m.constant_ints("axes_0", {0});
  m.node("Unsqueeze", {"h", "axes_0"}, {"h1"});
  m.node("Unsqueeze", {"w", "axes_0"}, {"w1"});
  auto& hw = m.node("Concat", {"h1", "w1"}, {"hw"});
  OnnxModel::attr(hw, "axis", std::int64_t{0});
  m.node("Shape", {"logits"}, {"shape_1"});
  m.constant_ints("starts", {0});
  m.constant_ints("ends", {2});
  m.node("Slice", {"shape_1", "starts", "ends", "axes_0"}, {"nc"});
  auto& cast = m.node("Cast", {"hw"}, {"hw_i64"});
  OnnxModel::attr(cast, "to", std::int64_t{onnx::TensorProto::INT64});
  auto& sizes = m.node("Concat", {"nc", "hw_i64"}, {"sizes"});
  OnnxModel::attr(sizes, "axis", std::int64_t{0});
  auto& resize = m.node("Resize", {"logits", "", "", "sizes"}, {"out"}, "/Resize");
  auto* mode = resize.add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("linear");
  m.output("out");
  *folded_channels = t.folded_channels();
  return m;
}

}  // namespace

TEST_CASE("onnx export: FCN-ResNet50 as PyTorch 2.2 exports it has torchvision's counts",
          "[onnx]") {
  std::int64_t folded = 0;
  ModelOptions options;
  options.dims["batch"] = 1;
  const Graph g = fcn_resnet50_export(520, &folded).load("export_fcn_resnet50", options);
  CHECK(g.unknown_ops.empty());
  CHECK(g.batch == 1);
  CHECK(g.layers.back().output == capcalc::Shape{1, 21, 520, 520});
  const auto totals = capcalc::graph_totals(g);
  // torchvision's FCN_ResNet50_Weights.COCO_WITH_VOC_LABELS_V1 (torchvision/models/
  // segmentation/fcn.py): "num_params": 35322218, "_ops": 152.717 (GFLOPS, i.e. GMACs, at
  // 520x520), both with the auxiliary FCNHead(1024, 21) on layer 3: a 3x3 conv 1024->256 (no
  // bias), BatchNorm(256) and a 1x1 conv 256->21 with bias = 2,365,205 params and
  // 65·65·(1024·256·9 + 256·21) = 9,990,739,200 MACs at 65x65. Without it, and with the
  // BatchNorms folded (27,072 channels: the backbone's 26,560 and the head's 512), the export
  // holds 35,322,218 - 2,365,205 - 27,072 = 32,929,941 weights, which is what the published
  // export's weight inputs add up to.
  CHECK(folded == 27'072);
  CHECK(totals.params == 35'322'218 - 2'365'205 - folded);
  const std::int64_t aux_macs = 65LL * 65 * (1024 * 256 * 9 + 256 * 21);
  CHECK(aux_macs == 9'990'739'200);
  CHECK(conv_macs(g) + aux_macs == 152'716'512'000);  // torchvision: 152.717 G.
  CHECK(static_cast<double>(conv_macs(g) + aux_macs) == Approx(152.717e9).epsilon(1e-5));
  // The dilated stages keep 65x65 (output stride 8).
  CHECK(layer_named(g, "/backbone/layer4/layer4.2/conv2/Conv").output ==
        capcalc::Shape{1, 512, 65, 65});
  // --batch sets the unnamed dynamic axis.
  options.dims["batch"] = 4;
  const Graph four = fcn_resnet50_export(520, &folded).load("export_fcn_resnet50_b4", options);
  CHECK(capcalc::graph_totals(four).macs == 4 * totals.macs);
}

TEST_CASE("onnx export: ResNet-18 with BatchNorm folded into the convs", "[onnx]") {
  std::int64_t folded = 0;
  const Graph g = resnet18_export(&folded).load("export_resnet18");
  CHECK(g.unknown_ops.empty());
  CHECK(g.dims.at("batch_size") == 1);
  const auto totals = capcalc::graph_totals(g);
  // torchvision.models.resnet18 (IMAGENET1K_V1) docs table: 11,689,512 params, 1.81 GFLOPS
  // (GMACs): https://pytorch.org/vision/stable/models/generated/torchvision.models.resnet18.html
  // Folding removes each BatchNorm's weight and bias (2 per channel) and gives its conv a bias
  // (1 per channel): 4,800 folded channels, so the file holds 11,689,512 - 4,800 = 11,684,712
  // weights, the count export reports print for the folded model.
  CHECK(folded == 4'800);
  CHECK(totals.params == 11'689'512 - folded);
  CHECK(totals.params == 11'684'712);
  // Conv MACs: the native zoo model's, and torchvision's 1.81 G within 1 %.
  const Graph native = capcalc::load_model(capcalc::test::data_path("models/resnet18.json"));
  CHECK(conv_macs(g) == conv_macs(native));
  CHECK(static_cast<double>(totals.macs) == Approx(1.81e9).epsilon(0.01));
  CHECK(totals.macs == capcalc::graph_totals(native).macs);
}

TEST_CASE("onnx export: MobileNetV2 with folded BatchNorm and ReLU6 as Clip", "[onnx]") {
  std::int64_t folded = 0;
  const Graph g = mobilenet_v2_export(&folded).load("export_mobilenet_v2");
  CHECK(g.unknown_ops.empty());
  const auto totals = capcalc::graph_totals(g);
  // torchvision.models.mobilenet_v2 (IMAGENET1K_V1): 3,504,872 params, 0.30 GFLOPS (GMACs):
  // https://pytorch.org/vision/stable/models/generated/torchvision.models.mobilenet_v2.html
  // The Clip bounds (0 and 6, rank-0 initializers) are constants, not parameters.
  CHECK(totals.params == 3'504'872 - folded);
  // Depthwise convs (group = channels) count k² MACs per output element, not k²·C.
  const Graph native = capcalc::load_model(capcalc::test::data_path("models/mobilenet_v2.json"));
  CHECK(totals.macs == capcalc::graph_totals(native).macs);
  CHECK(static_cast<double>(totals.macs) == Approx(0.30e9).epsilon(0.01));
}

TEST_CASE("onnx export: BERT-base with dynamic axes has bert-base-uncased's counts", "[onnx]") {
  ModelOptions options;
  options.dims["batch"] = 2;
  options.dims["sequence"] = 128;
  const Graph g = bert_base_export().load("export_bert_base", options);
  CHECK(g.unknown_ops.empty());
  const auto totals = capcalc::graph_totals(g);
  // https://huggingface.co/bert-base-uncased: the sum of its tensors is 109,482,240 (the zoo and
  // the HF config import give the same); position_ids (int64) is a buffer, not counted.
  CHECK(totals.params == 109'482'240);
  // The dynamic reshapes were resolved: every layer has a known output shape.
  CHECK(output_of(g, "last_hidden_state") == capcalc::Shape{2, 128, 768});
  const std::int64_t B = 2, S = 128, H = 768;
  CHECK(totals.macs == bert_base_macs(B, S));
  std::int64_t score_macs = 0;
  for (const auto& layer : g.layers)
    score_macs += layer.counts.score_macs;
  CHECK(score_macs == 12 * 2 * B * S * S * H);
  // The same model from its Hugging Face config.json counts the same MACs and params.
  ModelOptions hf_options;
  hf_options.dims["batch"] = B;
  hf_options.dims["seq"] = S;
  const Graph hf =
      capcalc::load_model(capcalc::test::data_path("models/bert_base_hf.json"), hf_options);
  CHECK(capcalc::graph_totals(hf).macs == totals.macs);
  CHECK(capcalc::graph_totals(hf).params == totals.params);
}

TEST_CASE("onnx export: ViT-B/16 with a dynamic batch has torchvision's counts", "[onnx]") {
  ModelOptions options;
  options.dims["batch"] = 4;
  const Graph g = vit_b_16_export().load("export_vit_b_16", options);
  CHECK(g.unknown_ops.empty());
  CHECK(output_of(g, "/heads/head/Gemm") == capcalc::Shape{4, 1000});
  const auto totals = capcalc::graph_totals(g);
  // torchvision.models.vit_b_16 (IMAGENET1K_V1) docs table: 86,567,656 params, 17.56 GFLOPS
  // (GMACs): https://pytorch.org/vision/stable/models/generated/torchvision.models.vit_b_16.html
  CHECK(totals.params == 86'567'656);
  CHECK(static_cast<double>(totals.macs) / 4 == Approx(17.56e9).epsilon(0.01));
  // The packed in-projection and the split heads count as the zoo's attention layers.
  ModelOptions native_options;
  native_options.dims["batch"] = 4;
  const Graph native =
      capcalc::load_model(capcalc::test::data_path("models/vit_b_16.json"), native_options);
  CHECK(totals.macs == capcalc::graph_totals(native).macs);
}

// ---------------------------------------------------------------------------------------------
// onnxruntime's fused operators (com.microsoft), as its transformer optimizer
// (onnxruntime.transformers.optimizer, optimum's O2 and up) and onnxruntime-genai write them.

namespace {

onnx::NodeProto& ms(onnx::NodeProto& node) {
  node.set_domain("com.microsoft");
  return node;
}

// BertModel (bert-base-uncased) after onnxruntime's BERT fusion: EmbedLayerNormalization;
// per layer Attention (Q, K, V packed into one [768, 2304] weight and bias), the output
// MatMul, SkipLayerNormalization carrying its bias, MatMul, BiasGelu, MatMul and
// SkipLayerNormalization; the pooler's first token, Gemm and Tanh.
OnnxModel bert_base_ort_fused() {
  const std::int64_t H = 768, F = 3072;
  OnnxModel m("bert_ort");
  m.input("input_ids", {std::string("batch"), std::string("sequence")}, onnx::TensorProto::INT64);
  m.input("token_type_ids", {std::string("batch"), std::string("sequence")},
          onnx::TensorProto::INT64);
  m.input("attention_mask", {std::string("batch"), std::string("sequence")},
          onnx::TensorProto::INT64);
  m.weight("word_embeddings", {30522, H});
  m.weight("position_embeddings", {512, H});
  m.weight("token_type_embeddings", {2, H});
  m.weight("embeddings_ln.weight", {H});
  m.weight("embeddings_ln.bias", {H});
  ms(m.node(
      "EmbedLayerNormalization",
      {"input_ids", "token_type_ids", "word_embeddings", "position_embeddings",
       "token_type_embeddings", "embeddings_ln.weight", "embeddings_ln.bias", "attention_mask"},
      {"embed_output", "mask_index"}, "EmbedLayerNormalization_0"));
  std::string x = "embed_output";
  for (int i = 0; i < 12; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    m.weight(p + "qkv.weight", {H, 3 * H});
    m.weight(p + "qkv.bias", {3 * H});
    auto& attention = ms(m.node("Attention", {x, p + "qkv.weight", p + "qkv.bias", "mask_index"},
                                {p + "context"}, p + "Attention"));
    OnnxModel::attr(attention, "num_heads", std::int64_t{12});
    m.weight(p + "attention.output.weight", {H, H});
    m.node("MatMul", {p + "context", p + "attention.output.weight"}, {p + "attn_out"},
           p + "attention_output_MatMul");
    for (const char* n : {"ln1.weight", "ln1.bias", "attention.output.bias"})
      m.weight(p + n, {H});
    ms(m.node("SkipLayerNormalization",
              {p + "attn_out", x, p + "ln1.weight", p + "ln1.bias", p + "attention.output.bias"},
              {p + "ln1_out"}, p + "SkipLayerNorm_1"));
    m.weight(p + "intermediate.weight", {H, F});
    m.node("MatMul", {p + "ln1_out", p + "intermediate.weight"}, {p + "fc1"}, p + "fc1_MatMul");
    m.weight(p + "intermediate.bias", {F});
    ms(m.node("BiasGelu", {p + "fc1", p + "intermediate.bias"}, {p + "gelu"}, p + "BiasGelu"));
    m.weight(p + "output.weight", {F, H});
    m.node("MatMul", {p + "gelu", p + "output.weight"}, {p + "fc2"}, p + "fc2_MatMul");
    for (const char* n : {"ln2.weight", "ln2.bias", "output.bias"})
      m.weight(p + n, {H});
    ms(m.node("SkipLayerNormalization",
              {p + "fc2", p + "ln1_out", p + "ln2.weight", p + "ln2.bias", p + "output.bias"},
              {p + "out"}, p + "SkipLayerNorm_2"));
    x = p + "out";
  }
  m.constant_ints("zero", {0}, /*rank0=*/true);
  auto& first = m.node("Gather", {x, "zero"}, {"first_token"}, "pooler_Gather");
  OnnxModel::attr(first, "axis", std::int64_t{1});
  m.weight("pooler.weight", {H, H});
  m.weight("pooler.bias", {H});
  auto& gemm =
      m.node("Gemm", {"first_token", "pooler.weight", "pooler.bias"}, {"pooled"}, "pooler_Gemm");
  OnnxModel::attr(gemm, "transB", std::int64_t{1});
  m.node("Tanh", {"pooled"}, {"pooler_output"}, "pooler_Tanh");
  m.output("pooler_output");
  m.output(x);
  return m;
}

}  // namespace

TEST_CASE("onnx export: BERT-base fused by onnxruntime counts as the unfused model", "[onnx]") {
  ModelOptions options;
  options.dims["batch"] = 2;
  options.dims["sequence"] = 128;
  const Graph g = bert_base_ort_fused().load("export_bert_ort", options);
  CHECK(g.unknown_ops.empty());
  const auto totals = capcalc::graph_totals(g);
  // Every tensor of bert-base-uncased, packed differently: 109,482,240.
  CHECK(totals.params == 109'482'240);
  const std::int64_t B = 2, S = 128, H = 768, F = 3072;
  CHECK(output_of(g, "encoder.layer.11.SkipLayerNorm_2") == capcalc::Shape{B, S, H});
  CHECK(output_of(g, "EmbedLayerNormalization_0") == capcalc::Shape{B, S, H});
  // The same MACs as the torch export and the HF config: the packed projection and the
  // products per head in Attention, the output projection in its own MatMul.
  CHECK(totals.macs == bert_base_macs(B, S));
  const auto& attention = layer_named(g, "encoder.layer.0.Attention");
  CHECK(attention.op == "attention");
  CHECK(attention.counts.score_macs == 2 * B * S * S * H);
  CHECK(attention.counts.params == H * 3 * H + 3 * H);
  // Scale and softmax on each of the 12 heads' S² scores, and the packed bias.
  CHECK(attention.counts.other_flops == 6 * B * 12 * S * S + B * S * 3 * H);
  // SkipLayerNormalization: the skip add, its bias and LayerNorm's 8 per element.
  CHECK(layer_named(g, "encoder.layer.0.SkipLayerNorm_1").counts.other_flops == 10 * B * S * H);
  CHECK(layer_named(g, "encoder.layer.0.BiasGelu").counts.other_flops == 9 * B * S * F);
  // An encoder keeps no KV cache.
  CHECK(capcalc::kv_cache_elements(g, S) == 0);
  // Its attention matches the zoo's bert_base.json attention layer (which includes the output
  // projection and its bias).
  ModelOptions zoo_options;
  zoo_options.dims["batch"] = B;
  zoo_options.dims["seq"] = S;
  const Graph zoo =
      capcalc::load_model(capcalc::test::data_path("models/bert_base.json"), zoo_options);
  const auto& native = layer_named(zoo, "encoder.layer.0.attention");
  CHECK(native.counts.macs ==
        attention.counts.macs +
            layer_named(g, "encoder.layer.0.attention_output_MatMul").counts.macs);
  CHECK(native.counts.score_macs == attention.counts.score_macs);
}

namespace {

// One decoder layer's attention as onnxruntime-genai exports Llama/Phi-3 (fp32 weights here):
// Q, K, V projections, GroupQueryAttention with rotary embeddings inside (do_rotary, cos and
// sin caches) over the past keys and values, the output projection; present.* outputs.
// 32 query heads, 8 KV heads, head size 128: hidden 4096.
OnnxModel gqa_layer() {
  OnnxModel m("gqa");
  const std::int64_t D = 4096, kv = 8 * 128;
  m.input("hidden", {std::string("batch_size"), std::string("sequence_length"), D});
  for (const char* name : {"past_key_values.0.key", "past_key_values.0.value"}) {
    m.input(name, {std::string("batch_size"), std::int64_t{8}, std::string("past_sequence_length"),
                   std::int64_t{128}});
  }
  m.input("seqlens_k", {std::string("batch_size")}, onnx::TensorProto::INT32);
  m.input("total_sequence_length", {}, onnx::TensorProto::INT32);
  m.weight("q_proj", {D, D});
  m.weight("k_proj", {D, kv});
  m.weight("v_proj", {D, kv});
  m.weight("o_proj", {D, D});
  m.weight("cos_cache", {4096, 64});
  m.weight("sin_cache", {4096, 64});
  m.node("MatMul", {"hidden", "q_proj"}, {"q"}, "q_proj_MatMul");
  m.node("MatMul", {"hidden", "k_proj"}, {"k"}, "k_proj_MatMul");
  m.node("MatMul", {"hidden", "v_proj"}, {"v"}, "v_proj_MatMul");
  auto& gqa = ms(m.node("GroupQueryAttention",
                        {"q", "k", "v", "past_key_values.0.key", "past_key_values.0.value",
                         "seqlens_k", "total_sequence_length", "cos_cache", "sin_cache"},
                        {"attn", "present.0.key", "present.0.value"}, "GroupQueryAttention"));
  OnnxModel::attr(gqa, "num_heads", std::int64_t{32});
  OnnxModel::attr(gqa, "kv_num_heads", std::int64_t{8});
  OnnxModel::attr(gqa, "do_rotary", std::int64_t{1});
  m.node("MatMul", {"attn", "o_proj"}, {"out"}, "o_proj_MatMul");
  m.output("out");
  m.output("present.0.key");
  m.output("present.0.value");
  return m;
}

}  // namespace

TEST_CASE("onnx export: GroupQueryAttention over a past counts the new tokens' pairs", "[onnx]") {
  const std::int64_t N = 32, kvN = 8, Hd = 128, D = 4096;
  // A decode step: one new token over 100 cached ones.
  ModelOptions step;
  step.dims["batch_size"] = 2;
  step.dims["sequence_length"] = 1;
  step.dims["past_sequence_length"] = 100;
  const Graph g = gqa_layer().load("export_gqa_step", step);
  CHECK(g.unknown_ops.empty());
  const auto& gqa = layer_named(g, "GroupQueryAttention");
  CHECK(gqa.output == capcalc::Shape{2, 1, D});
  CHECK(output_of(g, "GroupQueryAttention:1") == capcalc::Shape{2, kvN, 101, Hd});  // present.0.key
  // QKᵀ and AV of each query head over 101 keys.
  CHECK(gqa.counts.score_macs == 2 * N * 101 * 2 * Hd);
  CHECK(gqa.counts.masked_score_macs == 0);  // A past counts the pairs exactly.
  // The cos and sin caches are buffers: only the four projections are parameters.
  CHECK(capcalc::graph_totals(g).params == 2 * D * D + 2 * D * kvN * Hd);
  CHECK(gqa.counts.params == 0);
  // K and V of 8 heads cached per token; the step reads the 100 cached.
  CHECK(gqa.counts.kv_cache_per_token == 2 * kvN * Hd);
  CHECK(gqa.counts.kv_cache_read_elements == 2 * 100 * 2 * kvN * Hd);
  // Softmax and scale on every score, rotary on the new Q and K.
  CHECK(gqa.counts.other_flops == 6 * 2 * N * 101 + 3 * 2 * (N + kvN) * Hd);
  // A prefill of 16 tokens without a past: every pair, as dense kernels compute them; half of
  // them (plus the diagonal) with --causal half.
  ModelOptions prefill;
  prefill.dims["batch_size"] = 1;
  prefill.dims["sequence_length"] = 16;
  prefill.dims["past_sequence_length"] = 1;
  CHECK(layer_named(gqa_layer().load("export_gqa_prefill", prefill), "GroupQueryAttention")
            .counts.score_macs == N * (16 * 1 + 16 * 17 / 2) * 2 * Hd);
}

TEST_CASE("onnx export: MultiHeadAttention and malformed fused attention", "[onnx]") {
  OnnxModel m("mha");
  m.input("q", {std::int64_t{2}, std::int64_t{10}, std::int64_t{64}});
  m.input("k", {std::int64_t{2}, std::int64_t{20}, std::int64_t{64}});
  m.input("v", {std::int64_t{2}, std::int64_t{20}, std::int64_t{32}});
  auto& mha = ms(m.node("MultiHeadAttention", {"q", "k", "v"}, {"y"}, "cross"));
  OnnxModel::attr(mha, "num_heads", std::int64_t{4});
  m.output("y");
  const Graph g = m.load("export_mha");
  CHECK(g.unknown_ops.empty());
  const auto& cross = layer_named(g, "cross");
  CHECK(cross.output == capcalc::Shape{2, 10, 32});
  // 4 heads of 16 (Q, K) and 8 (V): 2 x 4 x 10 x 20 pairs.
  CHECK(cross.counts.score_macs == 2 * 4 * 10 * 20 * (16 + 8));
  CHECK(cross.counts.kv_cache_per_token == 0);  // Not causal: no cache.

  // Attention whose packed weight does not match its input's width.
  OnnxModel bad("bad_attention");
  bad.input("x", {std::int64_t{1}, std::int64_t{8}, std::int64_t{768}});
  bad.weight("w", {512, 3 * 512});
  auto& attention = ms(bad.node("Attention", {"x", "w"}, {"y"}, "attn"));
  OnnxModel::attr(attention, "num_heads", std::int64_t{8});
  bad.output("y");
  CHECK_THROWS_WITH(bad.load("export_bad_attention"),
                    Catch::Contains("/graph/node/0") &&
                        Catch::Contains("node \"attn\" (com.microsoft.Attention): its inputs [1, "
                                        "8, 768], [512, 1536]"));
}

TEST_CASE("onnx export: LLM serving binds the prompt, decode and past lengths", "[onnx]") {
  // Serving builds the graph with seq = the prompt (no past), then seq = 1 over the cache: the
  // export's sequence_length and past_sequence_length take them.
  const std::string path = gqa_layer().save("export_gqa_serving");
  const auto build = [&](std::int64_t seq, std::int64_t cached) {
    ModelOptions options;
    options.dims["seq"] = seq;
    options.counting.kv_cache_length = cached;
    return capcalc::load_model(path, options);
  };
  const Graph prefill = build(64, 0);
  CHECK(prefill.dims.at("seq") == 64);
  CHECK(prefill.inputs.at(1).shape == capcalc::Shape{1, 8, 0, 128});
  const Graph step = build(1, 70);
  const auto& gqa = layer_named(step, "GroupQueryAttention");
  CHECK(gqa.output == capcalc::Shape{1, 1, 4096});
  CHECK(gqa.counts.kv_cache_read_elements == 70 * 2 * 8 * 128);
  CHECK(gqa.counts.score_macs == 32 * 71 * 2 * 128);
  // K and V of 8 heads of 128 per token.
  CHECK(capcalc::kv_cache_elements(prefill, 100) == 100 * 2 * 8 * 128);
}
