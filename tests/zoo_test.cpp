// The model zoo against published reference counts. Each reference names its source.
#include <cmath>
#include <filesystem>
#include <string>

#include "capcalc/model.hpp"

#include "catch.hpp"
#include "input_file.hpp"
#include "json_view.hpp"
#include "test_data.hpp"

namespace {

using capcalc::Graph;
using capcalc::GraphTotals;

GraphTotals totals_of(const std::string& file, const capcalc::ModelOptions& options = {}) {
  const Graph graph = capcalc::load_model(capcalc::test::data_path("models/" + file), options);
  return capcalc::graph_totals(graph);
}

// Relative difference of a count from a reference given to a few significant digits.
double relative_error(std::int64_t count, double reference) {
  return std::abs(static_cast<double>(count) - reference) / reference;
}

}  // namespace

// torchvision's model table (https://pytorch.org/vision/stable/models.html and each builder
// page, IMAGENET1K_V1 weights) gives num_params exactly and "GFLOPS", which torchvision
// computes as multiply-adds (https://github.com/pytorch/vision/pull/6936): they are GMACs.
// Its figures have 2 decimals, so "0.30" holds +-1.7 % and "4.09" +-0.12 %.
TEST_CASE("zoo: resnet50 matches torchvision (25,557,032 params, 4.09 GMACs)", "[zoo]") {
  const GraphTotals t = totals_of("resnet50.json");
  CHECK(t.params == 25557032);
  CHECK(relative_error(t.macs, 4.089e9) < 0.005);  // The acceptance bound.
  CHECK(relative_error(t.macs, 4.09e9) < 0.0013);
}

TEST_CASE("zoo: resnet18 matches torchvision (11,689,512 params, 1.81 GMACs)", "[zoo]") {
  const GraphTotals t = totals_of("resnet18.json");
  CHECK(t.params == 11689512);
  CHECK(relative_error(t.macs, 1.81e9) < 0.003);
}

TEST_CASE("zoo: vgg16 matches torchvision (138,357,544 params, 15.47 GMACs)", "[zoo]") {
  const GraphTotals t = totals_of("vgg16.json");
  CHECK(t.params == 138357544);
  CHECK(relative_error(t.macs, 15.47e9) < 0.0005);
}

TEST_CASE("zoo: mobilenet_v2 matches torchvision (3,504,872 params, 0.30 GMACs)", "[zoo]") {
  const GraphTotals t = totals_of("mobilenet_v2.json");
  CHECK(t.params == 3504872);
  // Sandler et al. 2018 (arXiv:1801.04381), Table 4: 300M multiply-adds at 224x224.
  CHECK(relative_error(t.macs, 300e6) < 0.005);
}

TEST_CASE("zoo: vit_b_16 matches torchvision (86,567,656 params, 17.56 GMACs)", "[zoo]") {
  const GraphTotals t = totals_of("vit_b_16.json");
  CHECK(t.params == 86567656);
  CHECK(relative_error(t.macs, 17.56e9) < 0.0005);
}

// Transformer references: parameter counts of the Hugging Face checkpoints (the sum of the
// safetensors tensor sizes the model cards report) and the analytic forward MACs.
TEST_CASE("zoo: bert_base has bert-base-uncased's 109,482,240 parameters", "[zoo]") {
  // https://huggingface.co/bert-base-uncased: 110M; exact sum of its tensors 109,482,240
  // (word 30522x768, position 512x768, type 2x768, 12 layers, pooler).
  const GraphTotals t = totals_of("bert_base.json");
  CHECK(t.params == 109482240);
  // Forward MACs at seq 128, per layer: 4 projections 4*S*d^2, FFN 2*S*d*4d, scores and AV
  // 2*S^2*d; plus the pooler d^2. (Vaswani et al. 2017; Devlin et al. 2019 sizes.)
  const std::int64_t s = 128;
  const std::int64_t d = 768;
  const std::int64_t per_layer = 4 * s * d * d + 2 * s * d * 4 * d + 2 * s * s * d;
  CHECK(t.macs == 12 * per_layer + d * d);
}

TEST_CASE("zoo: gpt2 has GPT-2 small's 124,439,808 parameters (tied head)", "[zoo]") {
  // https://huggingface.co/gpt2 (124M): wte 50257x768 tied with the LM head, wpe 1024x768.
  const GraphTotals t = totals_of("gpt2.json");
  CHECK(t.params == 124439808);
  // Kaplan et al. 2020 (arXiv:2001.08361), Table 1: forward ~ 2N + 2 n_layer n_ctx d_model
  // FLOPs per token, N the non-embedding parameters, attention counted over the causal half.
  // Kaplan's total leaves out the de-embedding (LM head), which a forward pass still does.
  const double n_layer = 12;
  const double n_ctx = 1024;
  const double d_model = 768;
  const double non_embedding = 12 * n_layer * d_model * d_model;
  const double kaplan_flops_per_token = 2 * non_embedding + 2 * n_layer * n_ctx * d_model;
  const double head_flops_per_token = 2 * d_model * 50257;
  const double expected_macs = n_ctx * (kaplan_flops_per_token + head_flops_per_token) / 2;
  capcalc::ModelOptions half;
  half.counting.causal = capcalc::CausalCounting::kHalf;
  const GraphTotals causal_half = totals_of("gpt2.json", half);
  CHECK(relative_error(causal_half.macs, expected_macs) < 0.002);
  // Counted as full (dense kernels), attention costs twice as much; everything else is equal.
  const double attention_half = n_layer * n_ctx * n_ctx * d_model;  // QK^T + AV, half, MACs.
  CHECK(static_cast<double>(t.macs - causal_half.macs) == Approx(attention_half).epsilon(0.002));
}

TEST_CASE("zoo: llama2_7b has Llama-2-7B's 6,738,415,616 parameters", "[zoo]") {
  // https://huggingface.co/meta-llama/Llama-2-7b-hf: 32 layers, d 4096, FFN 11008 (SwiGLU),
  // vocab 32000, untied head; the safetensors total is 6,738,415,616.
  const GraphTotals t = totals_of("llama2_7b.json");
  CHECK(t.params == 6738415616);
  // Forward MACs at seq 4096 with the causal half (Kaplan-style), from the architecture:
  // attention projections 4 d^2, SwiGLU 3 d f, head d V per token, QK^T + AV S(S+1)/2 d per layer.
  capcalc::ModelOptions half;
  half.counting.causal = capcalc::CausalCounting::kHalf;
  const std::int64_t s = 4096;
  const std::int64_t d = 4096;
  const std::int64_t f = 11008;
  const std::int64_t per_token = 32 * (4 * d * d + 3 * d * f) + d * 32000;
  const std::int64_t attention = 32 * 2 * (s * (s + 1) / 2) * d;
  CHECK(totals_of("llama2_7b.json", half).macs == s * per_token + attention);
}

TEST_CASE("zoo: MaxText's synthetic 16B, 32B and 64B models", "[zoo]") {
  // MaxText base.yml (emb 2048, 16 heads of 128, MLP 7168, 16 layers, vocab 32000, SwiGLU,
  // untied logits) scaled by pyconfig.get_individual_scales: 16 -> emb x2, heads and MLP x4,
  // layers x2; 32 -> emb x4; 64 -> emb x4, layers x4. Parameters per layer: Q, K, V, O of
  // emb x heads x 128, three MLP matrices, two RMSNorm scales.
  const auto params = [](std::int64_t emb, std::int64_t heads, std::int64_t mlp,
                         std::int64_t layers) {
    return layers * (4 * emb * heads * 128 + 3 * emb * mlp + 2 * emb) + 2 * 32000 * emb + emb;
  };
  CHECK(totals_of("maxtext_16b.json").params == params(4096, 64, 28672, 32));
  CHECK(totals_of("maxtext_32b.json").params == params(8192, 64, 28672, 32));
  CHECK(totals_of("maxtext_64b.json").params == params(8192, 64, 28672, 64));
  // The names are the sizes: 15.8 B, 31.7 B, 62.8 B.
  CHECK(static_cast<double>(totals_of("maxtext_64b.json").params) == Approx(62.8e9).epsilon(0.001));
}

TEST_CASE("zoo: counts scale with batch, parameters do not", "[zoo]") {
  capcalc::ModelOptions options;
  options.dims["batch"] = 32;
  const GraphTotals one = totals_of("resnet50.json");
  const GraphTotals many = totals_of("resnet50.json", options);
  CHECK(many.params == one.params);
  CHECK(many.macs == 32 * one.macs);
  CHECK(many.flops == 32 * one.flops);
}

TEST_CASE("data: every model in data/models loads and every data file is JSON", "[zoo][data]") {
  std::size_t models = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(capcalc::test::data_path(""))) {
    if (entry.path().extension() != ".json") continue;
    const std::string path = entry.path().string();
    INFO(path);
    CHECK_NOTHROW(capcalc::parse_json_text(capcalc::read_input_file(path), path));
    if (entry.path().parent_path().filename() == "models") {
      const GraphTotals t = capcalc::graph_totals(capcalc::load_model(path));
      CHECK(t.params > 0);
      CHECK(t.macs > 0);
      ++models;
    }
  }
  CHECK(models >= 9);
}
