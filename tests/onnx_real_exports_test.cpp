// Real ONNX files, as PyTorch 2.11 exports them: tests/exports/ holds the graphs of
// torchvision's ResNet-50 and MobileNetV2 (the TorchScript exporter, opset 17, BatchNorm folded
// into the convs) and of Hugging Face's BertModel built from data/models/bert_base_hf.json
// (torch.export's exporter, down-converted to opset 17), made by bench/device/export_onnx.py
// (tests/exports/exports.json says how and when). Their weights were saved as external data and
// left out: capcalc counts without them. Unlike tests/onnx_exports_test.cpp, which rebuilds
// exporter-style graphs in C++, nothing here is rebuilt: the files are the exporters' own.
//
// The models had random weights, so many tensors were equal (every folded BatchNorm bias is
// zero, every LayerNorm weight one) and the exporters stored equal initializers once; capcalc
// counts a shared initializer once too. The parameters are therefore checked against the
// initializer elements of each file, read here with the protobuf API, and the MACs against the
// published figures and capcalc's zoo.
#include <cstdint>
#include <fstream>
#include <string>

#include <onnx/onnx_pb.h>

#include "capcalc/error.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

#include "catch.hpp"
#include "test_data.hpp"

namespace {

using capcalc::Graph;
using capcalc::ModelOptions;

std::string export_path(const std::string& name) {
  return std::string(CAPCALC_TEST_DIR) + "/exports/" + name;
}

// The elements of the file's initializers that can be weights: floating point or 8-bit, of rank
// 1 or more (a rank-0 scalar is a constant: GELU's 0.5, a Clip bound). What the issue calls
// "params equal the initializer element count".
std::int64_t weight_elements(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto model;
  REQUIRE(model.ParseFromIstream(&in));
  std::int64_t total = 0;
  for (const auto& init : model.graph().initializer()) {
    using T = onnx::TensorProto;
    const int type = init.data_type();
    if (init.dims_size() == 0 || !(type == T::FLOAT || type == T::FLOAT16 || type == T::BFLOAT16 ||
                                   type == T::DOUBLE || type == T::INT8 || type == T::UINT8)) {
      continue;
    }
    // The weights are external data: the file says where, and holds none of them.
    if (init.dims_size() > 1) CHECK(init.data_location() == T::EXTERNAL);
    std::int64_t n = 1;
    for (std::int64_t d : init.dims())
      n *= d;
    total += n;
  }
  return total;
}

}  // namespace

TEST_CASE("real export: torchvision ResNet-50 (PyTorch 2.11) has torchvision's MACs", "[onnx]") {
  const std::string path = export_path("resnet50.onnx");
  ModelOptions options;
  options.dims["batch"] = 8;  // The exporter's dynamic axis, named "batch".
  const Graph g = capcalc::load_model(path, options);
  CHECK(g.unknown_ops.empty());
  const auto totals = capcalc::graph_totals(g);
  CHECK(totals.params == weight_elements(path));
  // torchvision's 25,557,032 less one parameter per folded BatchNorm channel (26,560), less the
  // equal zero biases that the exporter stored once (tests/exports/README.md).
  CHECK(totals.params == 25'507'944);
  CHECK(totals.params < 25'557'032 - 26'560);
  // torchvision.models.resnet50 docs table: 4.09 GFLOPS (GMACs) at 224x224,
  // https://pytorch.org/vision/stable/models/generated/torchvision.models.resnet50.html
  // graph_totals counts a batch of 8; the zoo's ResNet-50 counts the same convs and fc.
  ModelOptions native_options;
  native_options.dims["batch"] = 8;
  const Graph native =
      capcalc::load_model(capcalc::test::data_path("models/resnet50.json"), native_options);
  CHECK(totals.macs == capcalc::graph_totals(native).macs);
  CHECK(static_cast<double>(totals.macs) / 8 == Approx(4.09e9).epsilon(0.01));
}

TEST_CASE("real export: torchvision MobileNetV2 (PyTorch 2.11) has torchvision's MACs", "[onnx]") {
  const std::string path = export_path("mobilenet_v2.onnx");
  const Graph g = capcalc::load_model(path);  // The batch defaults to 1.
  CHECK(g.unknown_ops.empty());
  const auto totals = capcalc::graph_totals(g);
  CHECK(totals.params == weight_elements(path));
  // torchvision.models.mobilenet_v2 docs table: 0.30 GFLOPS (GMACs).
  const Graph native = capcalc::load_model(capcalc::test::data_path("models/mobilenet_v2.json"));
  CHECK(totals.macs == capcalc::graph_totals(native).macs);
  CHECK(static_cast<double>(totals.macs) == Approx(0.30e9).epsilon(0.01));
}

TEST_CASE("real export: BertModel through torch.export counts as its config.json", "[onnx]") {
  // torch.export's exporter lists every intermediate value with its own symbolic dims
  // ("sequence", "(12//batch)", "unk__45") and slices position_ids by a Shape of the mask
  // directly; both used to leave the sizes unknown.
  const std::string path = export_path("bert_base.onnx");
  for (const std::int64_t seq : {128, 384}) {
    ModelOptions options;
    options.dims["batch"] = 1;
    options.dims["sequence"] = seq;
    const Graph g = capcalc::load_model(path, options);
    CHECK(g.unknown_ops.empty());
    const auto totals = capcalc::graph_totals(g);
    CHECK(totals.params == weight_elements(path));
    ModelOptions hf_options;
    hf_options.dims["batch"] = 1;
    hf_options.dims["seq"] = seq;
    const Graph hf =
        capcalc::load_model(capcalc::test::data_path("models/bert_base_hf.json"), hf_options);
    CHECK(totals.macs == capcalc::graph_totals(hf).macs);
  }
  // The file was traced at batch 1, and torch.export specialises sizes of 1 even on a dynamic
  // axis: every attention reshape is Reshape(x, [1, -1, 12, 64]) and the outputs are declared
  // [1, sequence, 768]. The graph cannot run at batch 2 (nor can onnxruntime run it so), and
  // capcalc says where it breaks rather than counting it.
  ModelOptions batch2;
  batch2.dims["batch"] = 2;
  batch2.dims["sequence"] = 128;
  CHECK_THROWS_WITH(
      capcalc::load_model(path, batch2),
      Catch::Contains(path + ": ONNX shape inference failed") && Catch::Contains("(2) vs (1)"));
  // Without the sequence length the error names the dim.
  CHECK_THROWS_WITH(capcalc::load_model(path), Catch::Contains("sequence"));
}
