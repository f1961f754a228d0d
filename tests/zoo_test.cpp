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

// The large language models the validation sets use, pinned by the formula of their
// architecture (each file's "source" names the paper or config the sizes come from).

namespace {

// A GPT-2-style decoder: learned positions, biases everywhere, two LayerNorms a layer and a
// final one, an MLP of 4d, an LM head tied to the embedding.
std::int64_t gpt_params(std::int64_t layers, std::int64_t d, std::int64_t vocab,
                        std::int64_t positions) {
  return layers * (12 * d * d + 13 * d) + vocab * d + positions * d + 2 * d;
}

// Its forward MACs at sequence s, attention counted in full (QK^T and AV, s^2 d each): the four
// projections (4 s d^2), the MLP (8 s d^2), and the head (s d V).
std::int64_t gpt_macs(std::int64_t layers, std::int64_t d, std::int64_t vocab, std::int64_t s) {
  return layers * (12 * s * d * d + 2 * s * s * d) + s * d * vocab;
}

// A Llama-style decoder: no biases, RMSNorm, grouped KV heads of 128 (kv = heads x 128 is the
// K and V width), SwiGLU of f, an untied head.
std::int64_t llama_params(std::int64_t layers, std::int64_t d, std::int64_t kv, std::int64_t f,
                          std::int64_t vocab) {
  return layers * (2 * d * d + 2 * d * kv + 3 * d * f + 2 * d) + 2 * vocab * d + d;
}

std::int64_t llama_macs(std::int64_t layers, std::int64_t d, std::int64_t kv, std::int64_t f,
                        std::int64_t vocab, std::int64_t s) {
  return layers * (s * (2 * d * d + 2 * d * kv + 3 * d * f) + 2 * s * s * d) + s * d * vocab;
}

}  // namespace

TEST_CASE("zoo: Llama 2 and 3, LLaMA 65B: parameters and MACs of their architecture", "[zoo]") {
  // Hugging Face safetensors totals (model cards' "Safetensors / Model size" and the sums of
  // their index files): Llama-3.1-8B 8,030,261,248; 70B 70,553,706,496; 405B 405,853,388,800;
  // Llama-2-13b 13,015,864,320; Llama-2-70b 68,976,648,192; LLaMA 65B 65,285,660,672.
  // Configs: Meta's params.json / config.json for each (d, layers, KV heads, FFN, vocab).
  const struct {
    const char* file;
    std::int64_t layers, d, kv, f, vocab, seq, published;
  } models[] = {
      {"llama3_8b.json", 32, 4096, 8 * 128, 14336, 128256, 8192, 8030261248},
      {"llama3_70b.json", 80, 8192, 8 * 128, 28672, 128256, 8192, 70553706496},
      {"llama3_405b.json", 126, 16384, 8 * 128, 53248, 128256, 8192, 405853388800},
      {"llama2_13b.json", 40, 5120, 40 * 128, 13824, 32000, 4096, 13015864320},
      {"llama2_70b.json", 80, 8192, 8 * 128, 28672, 32000, 4096, 68976648192},
      {"llama_65b.json", 80, 8192, 64 * 128, 22016, 32000, 2048, 65285660672},
  };
  for (const auto& m : models) {
    INFO(m.file);
    const GraphTotals t = totals_of(m.file);
    CHECK(llama_params(m.layers, m.d, m.kv, m.f, m.vocab) == m.published);
    CHECK(t.params == m.published);
    CHECK(t.macs == llama_macs(m.layers, m.d, m.kv, m.f, m.vocab, m.seq));
  }
}

TEST_CASE("zoo: GPT-3 175B, OPT-175B and Megatron's GPT models by their formula", "[zoo]") {
  // Brown et al. 2020, Table 2.1 (96 layers, d 12288, "175.0B"); Zhang et al. 2022, Table 1
  // (OPT's vocabulary 50272 and 2 extra position rows); Korthikanti et al. 2022, Table 3 and
  // Narayanan et al. 2021, Table 1 (vocabulary 51200, sequence 2048): 22B (48 x 6144), 530B
  // (105 x 20480), 1T (128 x 25600). Their parameter formula, Narayanan et al. 2021 eq. (2):
  // P = 12 l h^2 (1 + 13 / 12h + (V + s) / 12lh), is gpt_params with the final LayerNorm.
  const struct {
    const char* file;
    std::int64_t layers, d, vocab, positions;
    double paper;
  } models[] = {
      {"gpt3_175b.json", 96, 12288, 50257, 2048, 175.0e9},
      {"opt_175b.json", 96, 12288, 50272, 2050, 175e9},
      {"megatron_gpt_22b.json", 48, 6144, 51200, 2048, 22e9},
      {"megatron_gpt_530b.json", 105, 20480, 51200, 2048, 530e9},
      {"megatron_gpt_1t.json", 128, 25600, 51200, 2048, 1008e9},
  };
  for (const auto& m : models) {
    INFO(m.file);
    const GraphTotals t = totals_of(m.file);
    CHECK(t.params == gpt_params(m.layers, m.d, m.vocab, m.positions));
    CHECK(static_cast<double>(t.params) == Approx(m.paper).epsilon(0.005));  // Papers round.
    CHECK(t.macs == gpt_macs(m.layers, m.d, m.vocab, 2048));
  }
}

TEST_CASE("zoo: bert_large has bert-large-uncased's 335,141,888 parameters", "[zoo]") {
  // https://huggingface.co/bert-large-uncased: the sum of BertModel's tensors: embeddings
  // (30522 + 512 + 2) x 1024 + LayerNorm 2 x 1024; 24 layers of 4 (d^2 + d) + 2 x 4d^2 + 4d + d
  // + 2 x 2d; the pooler d^2 + d. Devlin et al. 2018 round it to 340M.
  const std::int64_t d = 1024;
  const std::int64_t layer = 4 * (d * d + d) + 2 * 4 * d * d + 4 * d + d + 2 * 2 * d;
  const std::int64_t params = (30522 + 512 + 2) * d + 2 * d + 24 * layer + d * d + d;
  CHECK(params == 335141888);
  const GraphTotals t = totals_of("bert_large.json");
  CHECK(t.params == params);
  // Forward MACs at seq 128, as bert_base: 12 s d^2 + 2 s^2 d per layer, the pooler d^2.
  const std::int64_t s = 128;
  CHECK(t.macs == 24 * (12 * s * d * d + 2 * s * s * d) + d * d);
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
