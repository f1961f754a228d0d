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
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
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
  // A BatchNormalization the exporter could not fold (one before its convolution: DenseNet)
  // keeps its running mean and variance, which are buffers, not parameters.
  std::set<std::string> statistics;
  for (const auto& node : model.graph().node()) {
    if (node.op_type() != "BatchNormalization") continue;
    for (int slot = 3; slot < node.input_size() && slot < 5; ++slot)
      statistics.insert(node.input(slot));
  }
  std::int64_t total = 0;
  for (const auto& init : model.graph().initializer()) {
    if (statistics.count(init.name()) != 0) continue;
    using T = onnx::TensorProto;
    const int type = init.data_type();
    if (init.dims_size() == 0 || !(type == T::FLOAT || type == T::FLOAT16 || type == T::BFLOAT16 ||
                                   type == T::DOUBLE || type == T::INT8 || type == T::UINT8)) {
      continue;
    }
    std::int64_t n = 1;
    for (std::int64_t d : init.dims())
      n *= d;
    // The weights over 1 KiB are external data: the file says where, and holds none of them.
    if (init.dims_size() > 1 && n > 1024 / 2) CHECK(init.data_location() == T::EXTERNAL);
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
  CHECK_THROWS_WITH(capcalc::load_model(path, batch2),
                    Catch::StartsWith(path + ":") && Catch::Contains("ONNX shape inference") &&
                        Catch::Contains("(2) vs (1)"));
  // Without the sequence length the error names the dim.
  CHECK_THROWS_WITH(capcalc::load_model(path), Catch::Contains("sequence"));
}

// ---------------------------------------------------------------------------------------------
// tests/exports/torch113/: every classification model of torchvision 0.14, a BERT-style encoder
// and a GPT-style decoder built from torch.nn, exported by Debian's torch 1.13 with a dynamic
// batch axis (<name>.dyn.onnx) and with fixed shapes at batch 1 (<name>.fixed.onnx), by
// tools/export_torch_onnx.py. Its exports.json records, per file, the float initializer
// elements the file holds and an independent MAC count: torch's own aten matmul and
// convolution calls in one forward pass at batch 1 (the script says how).

namespace {

std::string torch113_path(const std::string& name) {
  return std::string(CAPCALC_TEST_DIR) + "/exports/torch113/" + name;
}

// Where an indexed file is: beside exports.json, or unpacked from the archive its entry names
// (large.tar.xz, unpacked into the build tree by tests/CMakeLists.txt).
std::string torch113_entry_path(const nlohmann::json& entry) {
  const std::string file = entry.at("file");
  if (!entry.contains("archive")) return torch113_path(file);
  CHECK(entry.at("archive") == "large.tar.xz");
  return std::string(CAPCALC_TEST_LARGE_EXPORTS_DIR) + "/" + file;
}

// torch's MACs at batch 1 less those of products on constants only (Swin V2's position-bias MLP
// on its table of relative coordinates): the graph computes those from initializers, and capcalc,
// like ONNX Runtime, folds them once at load, not per sample.
std::int64_t constant_macs(const nlohmann::json& entry) {
  const auto all = entry.at("torch_macs_batch1").get<std::int64_t>();
  const auto on_input = entry.at("torch_input_macs_batch1").get<std::int64_t>();
  CHECK(on_input <= all);
  return all - on_input;
}

nlohmann::json torch113_index() {
  std::ifstream in(torch113_path("exports.json"));
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

bool is_transformer(const std::string& model) {
  return model == "bert_style_encoder" || model == "gpt_style_decoder";
}

// Files capcalc does not yet read or count right, with the start of what it says: each must
// still fail so, and one that starts to work must leave this list.
const std::map<std::string, std::string>& known_failures() {
  static const std::map<std::string, std::string> failures = {};
  return failures;
}

}  // namespace

TEST_CASE("real exports (torch 1.13): every file loads and counts as torch does",
          "[onnx][exports]") {
  std::size_t exported = 0;
  std::size_t counted = 0;
  for (const nlohmann::json& entry : torch113_index()) {
    if (entry.at("status") != "exported") continue;
    ++exported;
    const std::string file = entry.at("file");
    const std::string model = entry.at("model");
    INFO(file);
    const bool dynamic = entry.at("variant") == "dynamic batch";
    ModelOptions options;
    std::int64_t batch = 1;
    if (dynamic) {
      batch = 2;
      options.dims["batch"] = batch;
      if (is_transformer(model)) options.dims["sequence"] = 128;
    }
    const std::string path = torch113_entry_path(entry);
    if (const auto known = known_failures().find(file); known != known_failures().end()) {
      CHECK_THROWS_WITH(capcalc::load_model(path, options), Catch::Contains(known->second));
      continue;
    }
    const Graph g = capcalc::load_model(path, options);
    CHECK(g.unknown_ops.empty());
    const auto totals = capcalc::graph_totals(g);
    // Parameters: the float initializers the file holds (BatchNorm folded into convolutions),
    // less the running statistics of any BatchNorm left.
    CHECK(totals.params == weight_elements(path));
    CHECK(totals.params <= entry.at("initializer_elements").get<std::int64_t>());
    // MACs: torch's own count at batch 1 of the products on the input, times the batch.
    CHECK(totals.macs == batch * entry.at("torch_input_macs_batch1").get<std::int64_t>());
    // The model is torchvision's: its parameters are those its documentation lists.
    if (entry.contains("documented")) {
      CHECK(entry.at("torch_parameters") == entry.at("documented").at("num_params"));
    }
    ++counted;
  }
  // Every file was read: counted, or failing as known_failures() expects.
  CHECK(counted + known_failures().size() == exported);
}

TEST_CASE("real exports (torch 1.13): MACs match torchvision's documented GFLOPS",
          "[onnx][exports]") {
  // torchvision's model pages (pytorch.org/vision/stable/models/generated/
  // torchvision.models.<name>.html) list "GFLOPS", which count multiply-accumulates, rounded to
  // two decimals, at the default weights' input size.
  const std::vector<std::pair<std::string, double>> documented = {
      {"resnet50", 4.09},         // ResNet50_Weights.IMAGENET1K_V1, 224x224.
      {"mobilenet_v2", 0.30},     // MobileNet_V2_Weights.IMAGENET1K_V1.
      {"efficientnet_b0", 0.39},  // EfficientNet_B0_Weights.IMAGENET1K_V1.
      {"vit_b_16", 17.56},        // ViT_B_16_Weights.IMAGENET1K_V1.
      {"vit_l_16", 61.55},        // ViT_L_16_Weights.IMAGENET1K_V1.
      {"swin_t", 4.49},           // Swin_T_Weights.IMAGENET1K_V1.
      {"swin_v2_t", 5.94},        // Swin_V2_T_Weights.IMAGENET1K_V1, 256x256.
  };
  std::map<std::string, nlohmann::json> exported;
  for (const nlohmann::json& entry : torch113_index()) {
    if (entry.at("status") == "exported") exported[entry.at("file").get<std::string>()] = entry;
  }
  std::size_t checked = 0;
  for (const auto& [model, gflops] : documented) {
    const std::string file = model + ".fixed.onnx";
    INFO(file);
    REQUIRE(exported.count(file) == 1);
    const nlohmann::json& entry = exported.at(file);
    const auto totals = capcalc::graph_totals(capcalc::load_model(torch113_entry_path(entry)));
    // What torch counts per sample: capcalc's count and the products on constants it folds
    // (18,662,400 MACs for Swin V2-T, none for the others).
    const auto per_sample = totals.macs + constant_macs(entry);
    CHECK(static_cast<double>(per_sample) / 1e9 == Approx(gflops).margin(0.0051));
    ++checked;
  }
  CHECK(checked == documented.size());
}

TEST_CASE("real exports (torch 1.13): every model both with and without a dynamic batch axis",
          "[onnx][exports]") {
  // torchvision 0.14's 80 classification models and the two torch.nn transformers.
  std::map<std::string, std::set<std::string>> variants;
  for (const nlohmann::json& entry : torch113_index()) {
    if (entry.at("status") != "exported") continue;
    variants[entry.at("model").get<std::string>()].insert(entry.at("variant").get<std::string>());
  }
  CHECK(variants.size() == 82);
  for (const auto& [model, kinds] : variants) {
    INFO(model);
    CHECK(kinds.count("dynamic batch") == 1);
    CHECK(kinds.count("fixed shapes") == 1);
  }
}
