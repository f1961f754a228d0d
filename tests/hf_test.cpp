// Hugging Face config.json inputs (src/import/hf_*.cpp) against the
// published parameter counts of the checkpoints, the hand-written models of
// data/models, the counting formulas, and located errors; plus the
// operator-table rows they need (moe, attention's qkv_bias/out_bias).
#include <cmath>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "capcalc/error.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/report.hpp"

#include "catch.hpp"
#include "import/hf_config.hpp"
#include "input_file.hpp"
#include "json_view.hpp"
#include "test_data.hpp"

namespace {

using capcalc::Graph;
using capcalc::GraphTotals;
using capcalc::ModelOptions;

Graph load(const std::string& file, const ModelOptions& options = {}) {
  return capcalc::load_model(capcalc::test::data_path("models/" + file), options);
}

GraphTotals totals_of(const std::string& file, const ModelOptions& options = {}) {
  return capcalc::graph_totals(load(file, options));
}

ModelOptions with_seq(std::int64_t seq) {
  ModelOptions options;
  options.dims["seq"] = seq;
  return options;
}

// The config file itself, to read its facts in the tests.
nlohmann::json config_of(const std::string& file) {
  const std::string path = capcalc::test::data_path("models/" + file);
  return capcalc::parse_json_text(capcalc::read_input_file(path), path);
}

const capcalc::Layer& layer_named(const Graph& graph, const std::string& name) {
  for (const capcalc::Layer& layer : graph.layers) {
    if (layer.name == name) return layer;
  }
  FAIL("no layer " << name);
  return graph.layers.front();
}

// A Llama-style decoder's forward MACs for one sequence of s tokens, full
// causal counting: per token Q and O (d x H*hd each), K and V (d x KV*hd each),
// the MLP (3 d f, SwiGLU) and the LM head (d V); per layer QK^T and AV (s^2
// H*hd each).
std::int64_t decoder_macs(std::int64_t s, std::int64_t layers, std::int64_t d, std::int64_t heads,
                          std::int64_t kv_heads, std::int64_t head_dim, std::int64_t f,
                          std::int64_t vocab) {
  const std::int64_t projections = 2 * d * heads * head_dim + 2 * d * kv_heads * head_dim;
  const std::int64_t per_token = layers * (projections + 3 * d * f) + d * vocab;
  return s * per_token + layers * 2 * s * s * heads * head_dim;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Published parameter counts (the sum of the checkpoints' tensors, as the Hub's
// safetensors metadata reports it), each from its config file in data/models.

TEST_CASE("hf: Llama-2-7B config has 6,738,415,616 parameters", "[hf][zoo]") {
  // https://huggingface.co/meta-llama/Llama-2-7b-hf (safetensors: 6,738,415,616
  // params).
  const GraphTotals t = totals_of("llama2_7b_hf.json");
  CHECK(t.params == 6738415616);
  CHECK(t.active_params == t.params);
  // Default seq: min(max_position_embeddings 4096, 2048).
  CHECK(t.macs == decoder_macs(2048, 32, 4096, 32, 32, 128, 11008, 32000));
}

TEST_CASE(
    "hf: Mistral-7B-v0.1 config has 7,241,732,096 parameters (GQA, "
    "sliding window)",
    "[hf][zoo]") {
  // https://huggingface.co/mistralai/Mistral-7B-v0.1 (safetensors:
  // 7,241,732,096 params; the same figure is llama.cpp's
  // general.parameter_count for its GGUF conversions).
  const GraphTotals t = totals_of("mistral_7b_hf.json");
  CHECK(t.params == 7241732096);
  CHECK(t.macs == decoder_macs(2048, 32, 4096, 32, 8, 128, 14336, 32000));
  // The 4096 window matters only past 4096 tokens, and only when counting the
  // causal half: query i sees min(i + 1, 4096) keys (Jiang et al. 2023,
  // arXiv:2310.06825, section 2).
  ModelOptions half = with_seq(8192);
  half.counting.causal = capcalc::CausalCounting::kHalf;
  const Graph g = load("mistral_7b_hf.json", half);
  const std::int64_t s = 8192;
  const std::int64_t w = 4096;
  const std::int64_t pairs = w * (w + 1) / 2 + (s - w) * w;
  const capcalc::Layer& attn = layer_named(g, "layers.0.self_attn");
  CHECK(attn.counts.score_macs == 2 * 32 * pairs * 128);
}

TEST_CASE("hf: GPT-2 config has 124,439,808 parameters and matches gpt2.json", "[hf][zoo]") {
  // https://huggingface.co/openai-community/gpt2 (GPT2LMHeadModel, tied head:
  // 124,439,808).
  const GraphTotals hf = totals_of("gpt2_hf.json");
  CHECK(hf.params == 124439808);
  const GraphTotals native = totals_of("gpt2.json");
  CHECK(hf.macs == native.macs);
  CHECK(hf.flops == native.flops);
  CHECK(hf.backward_flops == native.backward_flops);
  CHECK(hf.moved_elements == native.moved_elements);
}

// transformers' NewGELUActivation ("gelu_new", GPT-2's default; src/transformers/activations.py)
// is its own operator, whose eight Python operators eager PyTorch launches apart;
// "gelu_pytorch_tanh" and "gelu" call one GELU kernel.
TEST_CASE("hf: gelu_new is read as its own operator, the other GELUs as gelu", "[hf]") {
  CHECK(layer_named(load("gpt2_hf.json"), "h.0.mlp.act").op == "gelu_new");
  nlohmann::json config = config_of("gpt2_hf.json");
  config["activation_function"] = "gelu_pytorch_tanh";
  const Graph g = capcalc::parse_model(config.dump(), "config.json");
  CHECK(layer_named(g, "h.0.mlp.act").op == "gelu");
  // The same FLOPs either way.
  CHECK(totals_of("gpt2_hf.json").flops == capcalc::graph_totals(g).flops);
}

TEST_CASE("hf: bert-base-uncased config has BertModel's 109,482,240 parameters", "[hf][zoo]") {
  // https://huggingface.co/google-bert/bert-base-uncased: BertModel (encoder +
  // pooler, no pre-training heads) has 109,482,240 parameters, the "110M" of
  // Devlin et al. 2019, Table 1.
  const Graph g = load("bert_base_hf.json");
  CHECK(g.dims.at("seq") == 512);  // min(max_position_embeddings 512, 2048).
  CHECK(capcalc::graph_totals(g).params == 109482240);
  // The same counts as the hand-written data/models/bert_base.json at its seq
  // 128.
  const GraphTotals hf = totals_of("bert_base_hf.json", with_seq(128));
  const GraphTotals native = totals_of("bert_base.json");
  CHECK(hf.params == native.params);
  CHECK(hf.macs == native.macs);
  CHECK(hf.flops == native.flops);
  CHECK(hf.backward_flops == native.backward_flops);
}

TEST_CASE("hf: Mixtral-8x7B config has 46,702,792,704 parameters, 12.9 B active", "[hf][zoo]") {
  // https://huggingface.co/mistralai/Mixtral-8x7B-v0.1 (safetensors:
  // 46,702,792,704 params); "12.9B active parameters per token":
  // https://mistral.ai/news/mixtral-of-experts/ and Jiang et al. 2024
  // (arXiv:2401.04088).
  const GraphTotals t = totals_of("mixtral_8x7b_hf.json");
  CHECK(t.params == 46702792704);
  // Active: everything but the experts, plus 2 of the 8 SwiGLU experts (3 d f
  // each) per layer.
  const std::int64_t d = 4096;
  const std::int64_t f = 14336;
  const std::int64_t expert = 3 * d * f;
  const std::int64_t active = 46702792704 - 32 * (8 - 2) * expert;
  CHECK(active == 12879925248);
  CHECK(t.active_params == active);
  CHECK(std::abs(static_cast<double>(t.active_params) - 12.9e9) / 12.9e9 < 0.005);
  // Forward MACs per token: attention projections, router d x 8, two experts,
  // LM head.
  const std::int64_t s = 2048;
  const std::int64_t per_token = 32 * (2 * d * d + 2 * d * 1024 + d * 8 + 2 * expert) + d * 32000;
  CHECK(t.macs == s * per_token + 32 * 2 * s * s * d);
}

TEST_CASE("hf: Qwen3-8B config has 8,190,735,360 parameters (q_norm, k_norm)", "[hf][zoo]") {
  // https://huggingface.co/Qwen/Qwen3-8B: "Number of Parameters: 8.2B; Number of Parameters
  // (Non-Embedding): 6.95B"; its safetensors total (the Hub API's safetensors.total) is
  // 8,190,735,360.
  const GraphTotals t = totals_of("qwen3_8b_hf.json");
  CHECK(t.params == 8190735360);
  // Per layer: Q and O 4096 x 4096, K and V 4096 x 1024, SwiGLU 3 x 4096 x 12288, two RMSNorms
  // and the two head_dim (128) scales of q_norm and k_norm; untied 151936 x 4096 embedding and
  // head.
  const std::int64_t per_layer =
      2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 12288 + 2 * 4096 + 2 * 128;
  CHECK(t.params == 36 * per_layer + 4096 + 2 * 151936LL * 4096);
  CHECK(std::abs(static_cast<double>(t.params - 2 * 151936LL * 4096) - 6.95e9) / 6.95e9 < 0.001);
}

TEST_CASE("hf: Qwen3-30B-A3B config has 30,532,122,624 parameters, 3.35 B active", "[hf][zoo]") {
  // https://huggingface.co/Qwen/Qwen3-30B-A3B: "Number of Parameters: 30.5B in total and 3.3B
  // activated"; its safetensors total is 30,532,122,624. 128 experts of 3 x 2048 x 768, 8 per
  // token, a 2048 x 128 router, per layer.
  const GraphTotals t = totals_of("qwen3_30b_a3b_hf.json");
  CHECK(t.params == 30532122624);
  const std::int64_t expert = 3 * 2048 * 768;
  CHECK(t.active_params == 30532122624 - 48 * (128 - 8) * expert);
  CHECK(t.active_params == 3353032704);
}

TEST_CASE("hf: Qwen3-235B-A22B config has 235,093,634,560 parameters, 22.19 B active",
          "[hf][zoo]") {
  // https://huggingface.co/Qwen/Qwen3-235B-A22B: "Number of Parameters: 235B in total and 22B
  // activated". Exactly, from its config.json: per layer attention q 4096 x 64 x 128, k and v
  // 4096 x 4 x 128, o 64 x 128 x 4096, q_norm and k_norm 128 each, two norms of 4096, a
  // 4096 x 128 router and 128 experts of 3 x 4096 x 1536; 94 layers; untied 151936 x 4096
  // embedding and head, the final norm. Active: 8 of the 128 experts.
  const std::int64_t attention = 4096LL * 8192 + 2 * 4096LL * 512 + 8192LL * 4096;
  const std::int64_t expert = 3LL * 4096 * 1536;
  const std::int64_t per_layer = attention + 2 * 128 + 2 * 4096 + 4096 * 128 + 128 * expert;
  const GraphTotals t = totals_of("qwen3_235b_a22b_hf.json");
  CHECK(t.params == 94 * per_layer + 2 * 151936LL * 4096 + 4096);
  CHECK(t.params == 235093634560);
  CHECK(t.active_params == t.params - 94 * (128 - 8) * expert);
  CHECK(std::abs(static_cast<double>(t.active_params) - 22e9) / 22e9 < 0.01);
}

TEST_CASE("hf: DeepSeek-V3 config has 671.0 B parameters, 37.6 B active", "[hf][zoo]") {
  // DeepSeek-V3 Technical Report (arXiv:2412.19437), abstract: "671B total parameters with 37B
  // activated for each token" (the 14B multi-token-prediction module apart). Exactly, from the
  // config (deepseek-ai/DeepSeek-V3 config.json, DeepseekV3ForCausalLM in transformers):
  // latent attention per layer: q_a 7168 x 1536 + its norm 1536 + q_b 1536 x 128 x (128 + 64),
  // kv_a 7168 x (512 + 64) + its norm 512 + kv_b 512 x 128 x (128 + 128), o 128 x 128 x 7168;
  // two norms of 7168; 3 dense layers of 3 x 7168 x 18432; 58 MoE layers of 256 routed and one
  // shared expert of 3 x 7168 x 2048, a 256 x 7168 router and its 256 correction biases;
  // untied 129280 x 7168 embedding and head, the final norm.
  const std::int64_t attention = 7168LL * 1536 + 1536 + 1536LL * 128 * 192 + 7168LL * 576 + 512 +
                                 512LL * 128 * 256 + 128LL * 128 * 7168;
  const std::int64_t expert = 3LL * 7168 * 2048;
  const std::int64_t router = 256LL * 7168 + 256;
  const std::int64_t moe = 256 * expert + expert + router;
  const std::int64_t dense = 3LL * 7168 * 18432;
  const std::int64_t outside = 2 * 129280LL * 7168 + 7168;
  const GraphTotals t = totals_of("deepseek_v3_hf.json");
  CHECK(t.params == 61 * (attention + 2 * 7168) + 3 * dense + 58 * moe + outside);
  CHECK(t.params == 671026419200);
  CHECK(std::llround(static_cast<double>(t.params) / 1e9) == 671);
  // Per token: 8 routed experts of 256.
  CHECK(t.active_params == t.params - 58 * (256 - 8) * expert);
  CHECK(std::llround(static_cast<double>(t.active_params) / 1e9) == 38);  // 37.55 B.
  // Group-limited routing (n_group 8, topk_group 4, topk_method noaux_tc) on every MoE layer.
  const Graph g = load("deepseek_v3_hf.json");
  const capcalc::Layer& last_moe = layer_named(g, "layers.60.mlp");
  CHECK(last_moe.counts.expert_groups == 8);
  CHECK(last_moe.counts.expert_groups_per_token == 4);
}

TEST_CASE("hf: DeepSeek-V2-Lite (direct queries, 2 shared experts) has 15.7 B parameters", "[hf]") {
  // DeepSeek-V2 paper (arXiv:2405.04434), appendix B: DeepSeek-V2-Lite has "15.7B total
  // parameters, of which 2.4B are activated for each token"; its config.json (deepseek-ai/
  // DeepSeek-V2-Lite): q_lora_rank null (queries projected directly), 64 routed experts of
  // 1408 (top 6) and 2 shared, the first layer dense, topk_method "greedy" (no router bias).
  const Graph g = capcalc::parse_model(R"({"architectures": ["DeepseekV2ForCausalLM"],
    "model_type": "deepseek_v2", "vocab_size": 102400, "hidden_size": 2048,
    "intermediate_size": 10944, "moe_intermediate_size": 1408, "num_hidden_layers": 27,
    "num_attention_heads": 16, "num_key_value_heads": 16, "n_shared_experts": 2,
    "n_routed_experts": 64, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
    "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": null, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "topk_method": "greedy",
    "max_position_embeddings": 163840, "tie_word_embeddings": false,
    "attention_bias": false})",
                                       "deepseek_v2_lite.json");
  const GraphTotals t = capcalc::graph_totals(g);
  const std::int64_t attention =
      2048LL * 16 * 192 + 2048LL * 576 + 512 + 512LL * 16 * 256 + 16LL * 128 * 2048;
  const std::int64_t expert = 3LL * 2048 * 1408;
  const std::int64_t moe = 64 * expert + 2 * expert + 64LL * 2048;
  CHECK(t.params ==
        27 * (attention + 2 * 2048) + 3LL * 2048 * 10944 + 26 * moe + 2 * 102400LL * 2048 + 2048);
  CHECK(std::llround(static_cast<double>(t.params) / 1e8) == 157);
  // Activated without the embedding table: 2.45 B, the paper's 2.4 B.
  const double active = static_cast<double>(t.active_params - 102400LL * 2048);
  CHECK(std::abs(active - 2.4e9) / 2.4e9 < 0.03);
}

TEST_CASE("hf: gpt-oss-120b has 116.83 B parameters, 5.13 B active, gpt-oss-20b 20.91 B",
          "[hf][zoo]") {
  // OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card" (arXiv:2508.10925), table 1: 120b 116.83 B
  // total, 5.13 B active (MLP 114.71 B, attention 0.96 B, embed + unembed 1.16 B; active counts
  // the unembedding, not the embedding); 20b 20.91 B, 3.61 B. From openai/gpt-oss-120b's
  // config.json: per layer attention 2880 -> 64 x 64 queries and 2 x 8 x 64 keys and values,
  // all with biases, output 4096 -> 2880 with bias, 64 sinks; 128 experts of gate/up
  // 2880 -> 2 x 2880 and down 2880 -> 2880, with biases, a 2880 x 128 router with bias.
  const std::int64_t attention =
      2880LL * 4096 + 4096 + 2 * (2880LL * 512 + 512) + 4096LL * 2880 + 2880 + 64;
  const std::int64_t expert = 2880LL * 5760 + 5760 + 2880LL * 2880 + 2880;
  const std::int64_t embedding = 201088LL * 2880;
  const auto total = [&](std::int64_t layers, std::int64_t experts) {
    return layers * (attention + experts * expert + 2880 * experts + experts + 2 * 2880) +
           2 * embedding + 2880;
  };
  const GraphTotals big = totals_of("gpt_oss_120b_hf.json");
  CHECK(big.params == total(36, 128));
  CHECK(std::llround(static_cast<double>(big.params) / 1e7) == 11683);
  CHECK(std::llround(static_cast<double>(big.active_params - embedding) / 1e7) == 513);
  // gpt-oss-20b: the same layers, 24 of them with 32 experts each.
  nlohmann::json small = config_of("gpt_oss_120b_hf.json");
  small["num_hidden_layers"] = 24;
  small["num_local_experts"] = 32;
  small["layer_types"] = nlohmann::json::array();
  for (int i = 0; i < 24; ++i)
    small["layer_types"].push_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
  const GraphTotals t = capcalc::graph_totals(capcalc::parse_model(small.dump(), "20b.json"));
  CHECK(t.params == total(24, 32));
  CHECK(std::llround(static_cast<double>(t.params) / 1e7) == 2091);
  CHECK(std::llround(static_cast<double>(t.active_params - embedding) / 1e7) == 361);
}

// gpt-oss's config says its checkpoint keeps the routed experts in MXFP4 ("quant_method":
// "mxfp4", every module but attention, router, embeddings and LM head): the graph records int4
// for them, which sets nothing; other methods and no quantization_config record none.
TEST_CASE("hf: an MXFP4 quantization_config records the experts' storage", "[hf]") {
  nlohmann::json config = config_of("gpt_oss_120b_hf.json");
  CHECK(capcalc::parse_model(config.dump(), "oss.json").expert_weight_storage == "int4");
  config["quantization_config"]["quant_method"] = "awq";
  CHECK(capcalc::parse_model(config.dump(), "oss.json").expert_weight_storage.empty());
  config.erase("quantization_config");
  CHECK(capcalc::parse_model(config.dump(), "oss.json").expert_weight_storage.empty());
  config["quantization_config"] = 4;
  CHECK_THROWS_WITH(capcalc::parse_model(config.dump(), "oss.json"),
                    ContainsSubstring("oss.json:/quantization_config: expected an object"));
}

// Llama 4 (transformers' modeling_llama4.py): per text layer GQA attention 5120 -> 40 x 128,
// 8 KV heads, no biases; a MoE layer has num_local_experts SwiGLU experts of 8192, a shared
// expert of 8192 and a 5120 x experts router, a dense layer a SwiGLU MLP of 16384; two
// RMSNorms. The vision encoder: a 14 x 14 x 3 -> 1408 patch map without bias, a class token,
// 577 learned positions, LayerNorms before and after, 34 layers (attention and MLP 1408 ->
// 5632 -> 1408 with biases, two LayerNorms), the adapter 5632 -> 4096 -> 4096 and the
// projector 4096 -> 5120, both without biases.
std::int64_t llama4_text_params(std::int64_t experts, std::int64_t moe_layers) {
  const std::int64_t attention = 2 * 5120LL * 5120 + 2 * 5120LL * 1024;
  const std::int64_t swiglu = 3 * 5120LL * 8192;
  const std::int64_t moe = (experts + 1) * swiglu + 5120 * experts;
  const std::int64_t dense = 3 * 5120LL * 16384;
  return 48 * (attention + 2 * 5120) + moe_layers * moe + (48 - moe_layers) * dense +
         2 * 202048LL * 5120 + 5120;
}

constexpr std::int64_t kLlama4Vision =
    14 * 14 * 3 * 1408LL + 1408 + 577 * 1408LL + 2 * 2 * 1408 +
    34 * (4 * (1408LL * 1408 + 1408) + 1408LL * 5632 + 5632 + 5632LL * 1408 + 1408 + 4 * 1408) +
    5632LL * 4096 + 4096LL * 4096 + 4096LL * 5120;

TEST_CASE("hf: Llama 4 Scout and Maverick have the checkpoints' parameter counts", "[hf]") {
  // Hugging Face model API, safetensors.parameters.BF16 of meta-llama/Llama-4-Scout-17B-16E-
  // Instruct (revision 92f3b15): 108,641,793,536; of Llama-4-Maverick-17B-128E-Instruct:
  // 401,583,781,376. Model card: "17B (Activated) 109B (Total)" and "17B (Activated) 400B
  // (Total)". Configs: data/models/llama4_scout_hf.json, llama4_maverick_hf.json.
  const GraphTotals scout = totals_of("llama4_scout_hf.json");
  CHECK(kLlama4Vision == 871932416);
  CHECK(scout.params == llama4_text_params(16, 48) + kLlama4Vision);
  CHECK(scout.params == 108641793536);
  // Active: one routed expert and the shared one per layer; 17.17 B in the text model.
  const std::int64_t scout_idle = 48 * 15 * 3 * 5120LL * 8192;
  CHECK(scout.active_params == scout.params - scout_idle);
  CHECK(std::llround(static_cast<double>(scout.active_params - kLlama4Vision) / 1e9) == 17);

  const GraphTotals maverick = totals_of("llama4_maverick_hf.json");
  CHECK(maverick.params == llama4_text_params(128, 24) + kLlama4Vision);
  CHECK(maverick.params == 401583781376);
  const std::int64_t maverick_idle = 24 * 127 * 3 * 5120LL * 8192;
  CHECK(std::llround(static_cast<double>(maverick.active_params - kLlama4Vision) / 1e9) == 17);
  CHECK(maverick.active_params == maverick.params - maverick_idle);

  // The text model alone (model_type llama4_text, Llama4ForCausalLM).
  nlohmann::json text = config_of("llama4_scout_hf.json")["text_config"];
  const GraphTotals t = capcalc::graph_totals(capcalc::parse_model(text.dump(), "scout.json"));
  CHECK(t.params == llama4_text_params(16, 48));  // 107,769,861,120: Scout without vision.
}

TEST_CASE("hf: Llama 4's chunked layers keep one chunk of cache, its NoPE layers all of it",
          "[hf][serving]") {
  // Scout: 36 of 48 layers (RoPE, no_rope_layers 1) attend in chunks of 8192; every fourth layer
  // attends over the whole context. Per token and layer 2 x 8 x 128 elements.
  const Graph g = load("llama4_scout_hf.json", with_seq(16));
  const std::int64_t per_token = 2 * 8 * 128;
  CHECK(capcalc::kv_cache_elements(g, 1000) == 48 * per_token * 1000);
  CHECK(capcalc::kv_cache_elements(g, 100000) == (12 * 100000LL + 36 * 8192LL) * per_token);
  CHECK(layer_named(g, "layers.0.self_attn").counts.kv_cache_window == 8192);
  CHECK(layer_named(g, "layers.3.self_attn").counts.kv_cache_window == 0);
  // The RoPE layers L2-normalise queries and keys (no parameters), the NoPE ones do not.
  CHECK(layer_named(g, "layers.0.self_attn").counts.other_flops >
        layer_named(g, "layers.3.self_attn").counts.other_flops);
  CHECK(layer_named(g, "layers.0.self_attn").counts.params ==
        layer_named(g, "layers.3.self_attn").counts.params);

  // attention_chunk_size null: no chunking; layer_types overrides the RoPE layers' default.
  nlohmann::json config = config_of("llama4_scout_hf.json");
  config["text_config"]["attention_chunk_size"] = nullptr;
  CHECK(capcalc::kv_cache_elements(capcalc::parse_model(config.dump(), "s.json"), 100000) ==
        48 * 100000LL * per_token);
  config = config_of("llama4_scout_hf.json");
  config["text_config"]["layer_types"] = nlohmann::json::array();
  for (int i = 0; i < 48; ++i)
    config["text_config"]["layer_types"].push_back(i == 0 ? "chunked_attention" : "full_attention");
  CHECK(capcalc::kv_cache_elements(capcalc::parse_model(config.dump(), "s.json"), 100000) ==
        (47 * 100000LL + 8192) * per_token);
}

TEST_CASE("hf: Llama 4 config errors name the key", "[hf][errors]") {
  const nlohmann::json scout = config_of("llama4_scout_hf.json");
  const auto error_of = [](const nlohmann::json& config) {
    try {
      capcalc::parse_model(config.dump(), "l4.json");
    } catch (const capcalc::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  nlohmann::json c = scout;
  c["text_config"]["no_rope_layers"] = {1, 0};
  CHECK_THAT(error_of(c), ContainsSubstring("l4.json:/text_config/no_rope_layers: expected at "
                                            "least 48 entries (num_hidden_layers), got 2"));
  c = scout;
  c["text_config"]["no_rope_layers"][5] = 2;
  CHECK_THAT(error_of(c),
             ContainsSubstring("l4.json:/text_config/no_rope_layers/5: expected 0 or 1, got 2"));
  c = scout;
  c["text_config"]["layer_types"] = nlohmann::json::array();
  for (int i = 0; i < 48; ++i)
    c["text_config"]["layer_types"].push_back("full_attention");
  c["text_config"]["layer_types"][7] = "sliding_attention";
  CHECK_THAT(error_of(c), ContainsSubstring("l4.json:/text_config/layer_types/7: unknown layer "
                                            "type \"sliding_attention\""));
  c = scout;
  c["text_config"]["moe_layers"] = {0, 48};
  CHECK_THAT(error_of(c), ContainsSubstring("l4.json:/text_config/moe_layers/1: layer 48 out of "
                                            "range: the model has 48 (0 to 47)"));
  c = scout;
  c["vision_config"].erase("vision_output_dim");
  CHECK_THAT(error_of(c), ContainsSubstring("l4.json:/vision_config/vision_output_dim: "
                                            "vision_output_dim 7680 must equal "
                                            "projector_output_dim 4096"));
  c = scout;
  c["vision_config"]["pixel_shuffle_ratio"] = 0.3;
  CHECK_THAT(error_of(c), ContainsSubstring("l4.json:/vision_config/pixel_shuffle_ratio: "));
  c = scout;
  c.erase("text_config");
  CHECK_THAT(error_of(c), ContainsSubstring("l4.json:/text_config: missing required key "
                                            "\"text_config\" (model_type \"llama4\")"));
}

TEST_CASE("hf: Kimi K2 (model_type kimi_k2, a DeepseekV3ForCausalLM) has 1.03 T parameters",
          "[hf]") {
  // moonshotai/Kimi-K2-Instruct model card: "Total Parameters 1T", "Activated Parameters 32B";
  // its config.json names its own model_type ("kimi_k2") on DeepseekV3ForCausalLM: 384 experts,
  // 64 heads, 1 dense layer, vocab 163840. The architecture decides how it is built.
  const Graph g = capcalc::parse_model(R"({"architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "kimi_k2", "vocab_size": 163840, "hidden_size": 7168,
    "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61,
    "num_attention_heads": 64, "num_key_value_heads": 64, "n_shared_experts": 1,
    "n_routed_experts": 384, "num_experts_per_tok": 8, "first_k_dense_replace": 1,
    "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "topk_method": "noaux_tc",
    "max_position_embeddings": 131072, "tie_word_embeddings": false})",
                                       "kimi_k2.json");
  const GraphTotals t = capcalc::graph_totals(g);
  // DeepSeek-V3's formula with 64 heads, 384 experts and one dense layer: latent attention
  // q_a 7168 x 1536 + norm, q_b 1536 x 64 x (128 + 64), kv_a 7168 x (512 + 64) + norm,
  // kv_b 512 x 64 x (128 + 128), o 64 x 128 x 7168; 60 MoE layers of 385 experts of
  // 3 x 7168 x 2048 and a 384 x 7168 router with its biases; untied 163840 x 7168 embedding
  // and head.
  const std::int64_t attention = 7168LL * 1536 + 1536 + 1536LL * 64 * 192 + 7168LL * 576 + 512 +
                                 512LL * 64 * 256 + 64LL * 128 * 7168;
  const std::int64_t expert = 3LL * 7168 * 2048;
  const std::int64_t moe = 385 * expert + 384LL * 7168 + 384;
  CHECK(t.params ==
        61 * (attention + 2 * 7168) + 3LL * 7168 * 18432 + 60 * moe + 2 * 163840LL * 7168 + 7168);
  CHECK(t.params == 1026408232448);
  CHECK(std::llround(static_cast<double>(t.params) / 1e12) == 1);
  // Activated without the embedding table: 31.7 B, the card's 32 B.
  CHECK(std::llround(static_cast<double>(t.active_params - 163840LL * 7168) / 1e9) == 32);
  // An unknown model_type on an unknown architecture is still an error.
  CHECK_THROWS_WITH(capcalc::parse_model(R"({"architectures": ["KimiForCausalLM"],
    "model_type": "kimi_k2"})",
                                         "k.json"),
                    ContainsSubstring("k.json:/model_type: unsupported model_type \"kimi_k2\""));
}

TEST_CASE("hf: DeepSeek-V3 caches 576 latent elements per layer, kept whole on each TP device",
          "[hf][serving]") {
  // kv_lora_rank 512 + qk_rope_head_dim 64 per token per layer (DeepSeek-V2 paper, section
  // 2.1.2: "(d_c + d_h^R) l" elements per token), against 2 x 128 heads x 192 for the keys
  // and values it stands for. Tensor parallelism splits heads, not the one latent: every
  // device keeps all of it (vLLM and SGLang replicate the MLA cache over the group).
  const std::string path = capcalc::test::data_path("models/deepseek_v3_hf.json");
  const std::string text = capcalc::read_input_file(path);
  const auto build = [&](std::int64_t seq, std::int64_t cached) {
    ModelOptions options;
    options.dims["seq"] = seq;
    options.counting.kv_cache_length = cached;
    return capcalc::parse_model(text, "deepseek_v3_hf.json", options);
  };
  const Graph prefill = build(16, 0);
  CHECK(capcalc::kv_cache_elements(prefill, 1) == 61 * 576);
  CHECK(capcalc::kv_cache_elements_per_device(prefill, 1, 8) == Approx(61 * 576));
  const capcalc::HardwareTable table =
      capcalc::load_hardware(capcalc::test::data_path("hardware.json"));
  const capcalc::Device& device = table.get("h200");
  capcalc::Workload w;
  w.precision = capcalc::Precision::kFp8;
  w.devices = 8;
  w.tensor_parallel = 8;
  capcalc::ServingRequest request;
  request.prompt_tokens = 1024;
  request.output_tokens = 128;
  const capcalc::ServingEstimate s =
      capcalc::estimate_serving(build, device, table.performance_for(device), w, request);
  CHECK(s.kv_bytes_per_token == Approx(61 * 576));  // fp8: 1 byte per element.
  // A decode step reads the whole cache on every device: 1,087 cached tokens at the mean.
  const Graph decode = build(1, s.mean_context);
  std::int64_t read = 0;
  for (const capcalc::Layer& layer : decode.layers)
    read += layer.counts.kv_cache_read_elements;
  CHECK(read == 61 * 576 * s.mean_context);
}

TEST_CASE("hf: DeepSeek layouts capcalc cannot count are errors", "[hf][errors]") {
  const std::string base = R"({"model_type": "deepseek_v3", "vocab_size": 100, "hidden_size": 64,
    "num_hidden_layers": 4, "intermediate_size": 128, "max_position_embeddings": 64,
    "num_attention_heads": 4, "kv_lora_rank": 16, "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4, "v_head_dim": 8, "n_routed_experts": 8, "moe_intermediate_size": 32,)";
  CHECK_THROWS_WITH(capcalc::parse_model(base + R"("num_experts_per_tok": 9})", "d.json"),
                    ContainsSubstring("d.json:/num_experts_per_tok: num_experts_per_tok = 9 "
                                      "exceeds n_routed_experts = 8"));
  CHECK_THROWS_WITH(
      capcalc::parse_model(base + R"("num_experts_per_tok": 2, "first_k_dense_replace": -1})",
                           "d.json"),
      ContainsSubstring("d.json:/first_k_dense_replace: expected a count (0 or more), got -1"));
  CHECK_THROWS_WITH(
      capcalc::parse_model(base + R"("num_experts_per_tok": 2, "first_k_dense_replace": 5})",
                           "d.json"),
      ContainsSubstring("first_k_dense_replace = 5 exceeds num_hidden_layers = 4"));
  CHECK_THROWS_WITH(capcalc::parse_model(R"({"model_type": "deepseek_v3", "vocab_size": 100,
    "hidden_size": 64, "num_hidden_layers": 4, "intermediate_size": 128,
    "max_position_embeddings": 64, "num_attention_heads": 4})",
                                         "d.json"),
                    ContainsSubstring("d.json:/kv_lora_rank: missing required key"));
  // A working one: 1 dense layer then 3 MoE layers of 8 experts, 2 of them shared.
  const Graph g = capcalc::parse_model(
      base + R"("num_experts_per_tok": 2, "first_k_dense_replace": 1, "n_shared_experts": 2})",
      "d.json");
  int moe_layers = 0;
  for (const capcalc::Layer& layer : g.layers) {
    if (layer.op == "moe") {
      ++moe_layers;
      CHECK(layer.counts.params == 8 * 3 * 64 * 32 + 64 * 8 + 3 * 64 * 64);  // No noaux_tc.
    }
  }
  CHECK(moe_layers == 3);
  // moe_layer_freq 2: sparse on layers 0 and 2 only (layer_idx % 2 == 0), the others dense.
  const Graph every_other =
      capcalc::parse_model(base + R"("num_experts_per_tok": 2, "moe_layer_freq": 2})", "d.json");
  std::vector<std::string> sparse;
  for (const capcalc::Layer& layer : every_other.layers)
    if (layer.op == "moe") sparse.push_back(layer.name);
  CHECK(sparse == std::vector<std::string>{"layers.0.mlp", "layers.2.mlp"});
}

TEST_CASE("hf: Qwen3-MoE dense layers: decoder_sparse_step and mlp_only_layers", "[hf][errors]") {
  // Qwen3MoeDecoderLayer: sparse when layer_idx is not in mlp_only_layers and
  // (layer_idx + 1) % decoder_sparse_step == 0; a dense layer's MLP has intermediate_size.
  const std::string base = R"({"model_type": "qwen3_moe", "vocab_size": 100, "hidden_size": 64,
    "num_hidden_layers": 4, "intermediate_size": 128, "max_position_embeddings": 64,
    "num_attention_heads": 4, "head_dim": 16, "num_experts": 8,)";
  const auto sparse_layers = [](const Graph& g) {
    std::vector<std::string> names;
    for (const capcalc::Layer& layer : g.layers)
      if (layer.op == "moe") names.push_back(layer.name);
    return names;
  };
  const Graph stepped = capcalc::parse_model(
      base + R"("num_experts_per_tok": 2, "decoder_sparse_step": 2})", "q.json");
  CHECK(sparse_layers(stepped) == std::vector<std::string>{"layers.1.mlp", "layers.3.mlp"});
  // A dense layer: gate, up and down of 64 x 128.
  std::int64_t dense_mlp = 0;
  for (const capcalc::Layer& layer : stepped.layers)
    if (layer.name.rfind("layers.0.mlp.", 0) == 0) dense_mlp += layer.counts.params;
  CHECK(dense_mlp == 3 * 64 * 128);
  const Graph listed = capcalc::parse_model(
      base + R"("num_experts_per_tok": 2, "mlp_only_layers": [0, 3]})", "q.json");
  CHECK(sparse_layers(listed) == std::vector<std::string>{"layers.1.mlp", "layers.2.mlp"});
  CHECK_THROWS_WITH(
      capcalc::parse_model(base + R"("num_experts_per_tok": 2, "mlp_only_layers": [4]})", "q.json"),
      ContainsSubstring("q.json:/mlp_only_layers/0: layer 4 out of range: the "
                        "model has 4 (0 to 3)"));
  CHECK_THROWS_WITH(capcalc::parse_model(base + R"("num_experts_per_tok": 9})", "q.json"),
                    ContainsSubstring("q.json:/num_experts_per_tok: num_experts_per_tok = 9 "
                                      "exceeds num_experts = 8"));
}

TEST_CASE("hf: Qwen1.5-MoE-A2.7B (qwen2_moe, a gated shared expert) has 14.3 B parameters",
          "[hf]") {
  // Qwen blog, "Qwen1.5-MoE: Matching 7B Model Performance with 1/3 Activated Parameters"
  // (2024-03-28): "14.3B parameters in total and 2.7B activated parameters"; config.json of
  // Qwen/Qwen1.5-MoE-A2.7B: 24 layers, hidden 2048, 60 experts of 1408 (top 4), a shared
  // expert of 5632 behind a sigmoid gate (2048 x 1), Q, K, V biases, untied head.
  const Graph g = capcalc::parse_model(R"({"architectures": ["Qwen2MoeForCausalLM"],
    "model_type": "qwen2_moe", "vocab_size": 151936, "hidden_size": 2048,
    "intermediate_size": 5632, "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4,
    "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
    "max_position_embeddings": 8192, "decoder_sparse_step": 1, "tie_word_embeddings": false})",
                                       "qwen1_5_moe.json");
  const GraphTotals t = capcalc::graph_totals(g);
  const std::int64_t attention = 4LL * 2048 * 2048 + 3 * 2048;
  const std::int64_t expert = 3LL * 2048 * 1408;
  const std::int64_t shared = 3LL * 2048 * 5632 + 2048;
  const std::int64_t layer = attention + 60 * expert + shared + 2048 * 60 + 2 * 2048;
  CHECK(t.params == 24 * layer + 2 * 151936LL * 2048 + 2048);
  CHECK(std::llround(static_cast<double>(t.params) / 1e8) == 143);
  CHECK(std::llround(static_cast<double>(t.active_params) / 1e8) == 27);  // 2.69 B.
}

TEST_CASE("hf: Gemma-2-9B config has 9,241,705,984 parameters (sandwich norms)", "[hf][zoo]") {
  // https://huggingface.co/google/gemma-2-9b: its safetensors total is 9,241,705,984. Per
  // layer: Q and O 3584 x 4096, K and V 3584 x 2048 (8 heads of 256), GeGLU 3 x 3584 x 14336
  // and four RMSNorms (input, post-attention, pre- and post-feedforward); tied head.
  const GraphTotals t = totals_of("gemma2_9b_hf.json");
  const std::int64_t per_layer = 2 * 3584 * 4096 + 2 * 3584 * 2048 + 3 * 3584 * 14336 + 4 * 3584;
  CHECK(t.params == 42 * per_layer + 3584 + 256000LL * 3584);
  CHECK(t.params == 9241705984);
  // Even layers slide over 4096 positions, odd ones attend to all: at seq 8192 the sliding
  // layers cache 4096 tokens, the global ones 8192.
  capcalc::ModelOptions options;
  options.dims["seq"] = 8192;
  const Graph g =
      capcalc::load_model(capcalc::test::data_path("models/gemma2_9b_hf.json"), options);
  // K and V: 8 heads x 256 x 2 per token per layer.
  const std::int64_t per_token = 2 * 8 * 256;
  CHECK(capcalc::kv_cache_elements(g, 8192) == 21 * per_token * 4096 + 21 * per_token * 8192);
}

TEST_CASE("hf: Gemma-3-1B config has 999,885,952 parameters (q_norm, k_norm, 5:1 windows)",
          "[hf][zoo]") {
  // https://huggingface.co/google/gemma-3-1b-pt: its safetensors total is 999,885,952. Per
  // layer: Q and O 1152 x 1024, K and V 1152 x 256 (one KV head), GeGLU 3 x 1152 x 6912, four
  // RMSNorms and the two head_dim scales of q_norm and k_norm; tied 262144 x 1152 embedding.
  const GraphTotals t = totals_of("gemma3_1b_hf.json");
  const std::int64_t per_layer =
      2 * 1152 * 1024 + 2 * 1152 * 256 + 3 * 1152 * 6912 + 4 * 1152 + 2 * 256;
  CHECK(t.params == 26 * per_layer + 1152 + 262144LL * 1152);
  CHECK(t.params == 999885952);
  // Layers 5, 11, 17 and 23 are global, the other 22 slide over 512 positions.
  capcalc::ModelOptions options;
  options.dims["seq"] = 4096;
  const Graph g =
      capcalc::load_model(capcalc::test::data_path("models/gemma3_1b_hf.json"), options);
  const std::int64_t per_token = 2 * 1 * 256;
  CHECK(capcalc::kv_cache_elements(g, 4096) == 22 * per_token * 512 + 4 * per_token * 4096);
}

// Gemma 3 multimodal (Gemma3ForConditionalGeneration): parameters of the SigLIP tower and the
// projector, whatever the decoder. SigLIP-So400m/14 at 896 px: patch embedding 3·14·14 -> 1152
// with bias, 64 x 64 learned positions, 27 pre-LN layers (Q, K, V, O 1152² with biases,
// 1152 -> 4304 -> 1152 MLP with biases, two LayerNorms), a final LayerNorm; the projector's
// RMSNorm (1152) and its 1152 x d weight without bias.
std::int64_t gemma3_vision_params(std::int64_t d) {
  const std::int64_t h = 1152;
  const std::int64_t per_layer = 4 * (h * h + h) + (h * 4304 + 4304) + (4304 * h + h) + 4 * h;
  return (3 * 14 * 14 * h + h) + 64 * 64 * h + 27 * per_layer + 2 * h + h + h * d;
}

TEST_CASE("hf: Gemma-3-4B multimodal config has 4,300,079,472 parameters (SigLIP tower)",
          "[hf][zoo]") {
  // google/gemma-3-4b-it loads as Gemma3ForConditionalGeneration with 4,300,079,472
  // parameters; keras-hub's presets (keras_hub/src/models/gemma3/gemma3_presets.py) give
  // medgemma_4b, the same architecture, 4,300,079,472, and gemma3_4b 4,299,915,632 with a
  // 262,144-row vocabulary (64 x 2560 fewer). The config's text_config names few keys:
  // Gemma3TextConfig's defaults give 8 heads, 4 KV heads, head_dim 256 and 262,208 tokens.
  const Graph g = load("gemma3_4b_hf.json");
  const GraphTotals t = capcalc::graph_totals(g);
  CHECK(t.params == 4300079472);
  std::int64_t vision = 0;
  for (const capcalc::Layer& layer : g.layers) {
    if (layer.name.rfind("vision_tower.", 0) == 0 ||
        layer.name.rfind("multi_modal_projector.", 0) == 0) {
      vision += layer.counts.params;
    }
  }
  CHECK(vision == gemma3_vision_params(2560));
  // The decoder alone: keras-hub's gemma3_4b_text, 3,880,099,328, plus the 64 extra rows.
  CHECK(t.params - vision == 3880099328 + 64 * 2560);
  // 896 px in 14 px patches: 4096 tokens through the tower, pooled 4 x 4 to 256.
  CHECK(layer_named(g, "vision_tower.vision_model.post_layernorm").output ==
        capcalc::Shape{1, 4096, 1152});
  CHECK(layer_named(g, "multi_modal_projector.mm_input_projection").output ==
        capcalc::Shape{1, 256, 2560});
  // Layers 5, 11, 17, 23 and 29 are global, the other 29 slide over 1024 positions; the
  // tower's (non-causal) attention keeps no cache.
  const std::int64_t per_token = 2 * 4 * 256;
  CHECK(capcalc::kv_cache_elements(g, 2048) == 29 * per_token * 1024 + 5 * per_token * 2048);
  CHECK(capcalc::kv_cache_elements(load("bert_base_hf.json"), 128) == 0);  // An encoder.
  // Images per sequence scale the tower, not the decoder.
  ModelOptions two;
  two.dims["images"] = 2;
  two.dims["batch"] = 3;
  const Graph six = load("gemma3_4b_hf.json", two);
  CHECK(layer_named(six, "vision_tower.vision_model.embeddings.patch_embedding").counts.macs ==
        6 * layer_named(g, "vision_tower.vision_model.embeddings.patch_embedding").counts.macs);
  CHECK(six.inputs.at(1).shape == capcalc::Shape{6, 3, 896, 896});
  CHECK(six.inputs.at(1).prefill_only);
}

TEST_CASE("hf: Gemma-3-27B multimodal config has 27,432,406,640 parameters", "[hf][zoo]") {
  // keras-hub's presets: medgemma_instruct_27b 27,432,406,640; gemma3_27b 27,432,062,576 with
  // 64 x 5376 fewer embedding rows; gemma3_27b_text 27,009,002,240 without the tower.
  const GraphTotals t = totals_of("gemma3_27b_hf.json");
  CHECK(t.params == 27432406640);
  CHECK(t.params - gemma3_vision_params(5376) == 27009002240 + 64 * 5376);
}

TEST_CASE("hf: a Gemma 3 image runs at prefill only, decode steps match the text model",
          "[hf][serving]") {
  // The same decoder without the tower: text_config on its own as a gemma3_text config.
  nlohmann::json text = config_of("gemma3_4b_hf.json")["text_config"];
  const std::string path = capcalc::test::data_path("models/gemma3_4b_hf.json");
  const auto build = [&](const std::string& json, const std::string& name) {
    return [json, name](std::int64_t seq, std::int64_t cached) {
      ModelOptions options;
      options.dims["seq"] = seq;
      options.counting.kv_cache_length = cached;
      return capcalc::parse_model(json, name, options);
    };
  };
  const std::string multimodal = capcalc::read_input_file(path);
  const capcalc::HardwareTable table =
      capcalc::load_hardware(capcalc::test::data_path("hardware.json"));
  const capcalc::Device& device = table.get("h100-sxm");
  capcalc::Workload w;
  w.precision = capcalc::Precision::kBf16;
  capcalc::ServingRequest request;
  request.prompt_tokens = 512;
  request.output_tokens = 64;
  const capcalc::PerformanceParams params = table.performance_for(device);
  const capcalc::ServingEstimate with_image =
      capcalc::estimate_serving(build(multimodal, "gemma3_4b.json"), device, params, w, request);
  const capcalc::ServingEstimate text_only =
      capcalc::estimate_serving(build(text.dump(), "text.json"), device, params, w, request);
  CHECK(with_image.decode_step_s == Approx(text_only.decode_step_s));
  CHECK(with_image.kv_bytes_per_token == Approx(text_only.kv_bytes_per_token));
  CHECK(with_image.prefill.flops > text_only.prefill.flops);
  CHECK(with_image.ttft_s > text_only.ttft_s);

  // A text-only prompt to the multimodal model (--omit-input pixel_values): its prefill does the
  // text model's work; the tower's weights stay loaded.
  const auto omitted = [&](std::int64_t seq, std::int64_t cached) {
    ModelOptions options;
    options.dims["seq"] = seq;
    options.counting.kv_cache_length = cached;
    options.omitted_inputs.insert("pixel_values");
    return capcalc::parse_model(multimodal, "gemma3_4b.json", options);
  };
  const capcalc::ServingEstimate no_image =
      capcalc::estimate_serving(omitted, device, params, w, request);
  CHECK(no_image.prefill.flops == Approx(text_only.prefill.flops));
  CHECK(no_image.ttft_s == Approx(text_only.ttft_s));
  CHECK(no_image.decode_step_s == Approx(text_only.decode_step_s));
  CHECK(no_image.prefill.memory.weight_bytes == Approx(with_image.prefill.memory.weight_bytes));
  CHECK(capcalc::graph_totals(omitted(512, 0)).params == 4300079472);

  // Tensor parallelism all-reduces after the attention layers that run: the decode step's are
  // the text model's (text_config.num_hidden_layers 34), the image tower's
  // (vision_config.num_hidden_layers 27) only in the prefill.
  w.devices = 2;
  w.tensor_parallel = 2;
  const capcalc::ServingEstimate tp_image =
      capcalc::estimate_serving(build(multimodal, "gemma3_4b.json"), device, params, w, request);
  CHECK(tp_image.decode.allreduces == 2 * 34);
  CHECK(tp_image.prefill.allreduces == 2 * (34 + 27));
  CHECK(capcalc::estimate_serving(omitted, device, params, w, request).prefill.allreduces ==
        2 * 34);
}

TEST_CASE("hf: Gemma 3 multimodal configs' errors point into text_config and vision_config",
          "[hf][model][errors]") {
  nlohmann::json config = config_of("gemma3_4b_hf.json");
  config.erase("vision_config");
  CHECK_THROWS_WITH(capcalc::parse_model(config.dump(), "cfg.json"),
                    "cfg.json:/vision_config: missing required key \"vision_config\" (model_type "
                    "\"gemma3\")");
  config = config_of("gemma3_4b_hf.json");
  config["text_config"]["num_key_value_heads"] = 3;
  CHECK_THROWS_WITH(capcalc::parse_model(config.dump(), "cfg.json"),
                    "cfg.json:/text_config/num_key_value_heads: num_key_value_heads = 3 must "
                    "divide num_attention_heads = 8");
  config = config_of("gemma3_4b_hf.json");
  config["vision_config"]["vision_use_head"] = true;
  CHECK_THROWS_WITH(capcalc::parse_model(config.dump(), "cfg.json"),
                    ContainsSubstring("cfg.json:/vision_config/vision_use_head: a vision tower "
                                      "with its attention-pooling head"));
  config = config_of("gemma3_4b_hf.json");
  config["vision_config"]["patch_size"] = 15;
  CHECK_THROWS_WITH(capcalc::parse_model(config.dump(), "cfg.json"),
                    "cfg.json:/vision_config/patch_size: image_size 896 is not a multiple of "
                    "patch_size 15");
  config = config_of("gemma3_4b_hf.json");
  config["mm_tokens_per_image"] = 250;
  CHECK_THROWS_WITH(capcalc::parse_model(config.dump(), "cfg.json"),
                    ContainsSubstring("cfg.json:/mm_tokens_per_image: mm_tokens_per_image = 250 "
                                      "must be a square"));
  config = config_of("gemma3_4b_hf.json");
  config["text_config"] = 7;
  CHECK_THROWS_WITH(capcalc::parse_model(config.dump(), "cfg.json"),
                    ContainsSubstring("cfg.json:/text_config"));
  // Recognised by its class as well.
  config = config_of("gemma3_4b_hf.json");
  config.erase("model_type");
  CHECK(capcalc::graph_totals(capcalc::parse_model(config.dump(), "cfg.json")).params ==
        4300079472);
}

TEST_CASE("hf: Qwen2-7B config has 7,615,616,512 parameters (q/k/v biases only)", "[hf][zoo]") {
  // https://huggingface.co/Qwen/Qwen2-7B ("7.62B params"); exactly
  // 7,615,616,512, the total of the checkpoint's tensors (the same shapes as
  // Qwen2.5-7B, whose safetensors total this is).
  const GraphTotals t = totals_of("qwen2_7b_hf.json");
  CHECK(t.params == 7615616512);
  // Qwen2Attention: q_proj, k_proj, v_proj with bias, o_proj without.
  const Graph g = load("qwen2_7b_hf.json");
  const std::int64_t d = 3584;
  const std::int64_t kv = 4 * 128;
  CHECK(layer_named(g, "layers.0.self_attn").counts.params ==
        2 * d * d + 2 * d * kv + (d + 2 * kv));
}

TEST_CASE("hf: gemma-7b config has 8,537,680,896 parameters (head_dim 256, tied)", "[hf][zoo]") {
  // https://huggingface.co/google/gemma-7b ("8.54B params"); exactly
  // 8,537,680,896 in keras-hub's gemma_7b_en preset
  // (keras_hub/src/models/gemma/gemma_presets.py).
  const Graph g = load("gemma_7b_hf.json");
  CHECK(capcalc::graph_totals(g).params == 8537680896);
  CHECK(layer_named(g, "lm_head").counts.params == 0);     // Tied to embed_tokens.
  CHECK(layer_named(g, "layers.0.mlp.act").op == "gelu");  // GeGLU.
  // 16 heads of 256: Q is 3072 -> 4096, not 3072 -> 3072.
  CHECK(layer_named(g, "layers.0.self_attn").counts.params == 4 * 3072 * 4096);
}

TEST_CASE("hf: Phi-3-mini config has 3,821,079,552 parameters", "[hf][zoo]") {
  // https://huggingface.co/microsoft/Phi-3-mini-4k-instruct ("3.82B params");
  // exactly 3,821,079,552 in keras-hub's phi3_mini_4k_instruct_en preset
  // (phi3_presets.py).
  CHECK(totals_of("phi3_mini_hf.json").params == 3821079552);
}

TEST_CASE("hf: pythia-160m config has 162,322,944 parameters (parallel residual)", "[hf][zoo]") {
  // https://huggingface.co/EleutherAI/pythia-160m; the Pythia suite's table
  // (https://github.com/EleutherAI/pythia) gives 162,322,944 total parameters.
  const Graph g = load("pythia_160m_hf.json");
  CHECK(capcalc::graph_totals(g).params == 162322944);
  CHECK(layer_named(g, "embed_out").counts.params == 50304 * 768);  // Not tied.
  // Parallel residual: x + attention(ln1(x)) + mlp(ln2(x)), both norms reading
  // x.
  const capcalc::Layer& residual = layer_named(g, "layers.0.residual");
  CHECK(residual.inputs.size() == 3);
}

// ---------------------------------------------------------------------------------------------
// Same treatment as hand-written files.

TEST_CASE("hf: the Llama-2-7B config and llama2_7b.json give identical graphs", "[hf][model]") {
  const Graph hf = load("llama2_7b_hf.json", with_seq(4096));  // llama2_7b.json's seq.
  const Graph native = load("llama2_7b.json");
  REQUIRE(hf.layers.size() == native.layers.size());
  for (std::size_t i = 0; i < hf.layers.size(); ++i) {
    INFO(native.layers[i].name);
    CHECK(hf.layers[i].name == native.layers[i].name);
    CHECK(hf.layers[i].output == native.layers[i].output);
    CHECK(hf.layers[i].counts.params == native.layers[i].counts.params);
    CHECK(hf.layers[i].counts.macs == native.layers[i].counts.macs);
    CHECK(hf.layers[i].counts.other_flops == native.layers[i].counts.other_flops);
    CHECK(hf.layers[i].counts.backward_macs == native.layers[i].counts.backward_macs);
  }
  const GraphTotals a = capcalc::graph_totals(hf);
  const GraphTotals b = capcalc::graph_totals(native);
  CHECK(a.params == b.params);
  CHECK(a.macs == b.macs);
  CHECK(a.flops == b.flops);
  CHECK(a.backward_flops == b.backward_flops);
  CHECK(a.moved_elements == b.moved_elements);
  CHECK(a.activation_elements == b.activation_elements);
  CHECK(a.peak_live_elements == b.peak_live_elements);
}

TEST_CASE("hf: dims batch and seq have defaults and can be overridden", "[hf][model]") {
  const Graph defaults = load("llama2_7b_hf.json");
  CHECK(defaults.dims.at("batch") == 1);
  CHECK(defaults.dims.at("seq") == 2048);                    // min(4096, 2048).
  CHECK(load("gpt2_hf.json").dims.at("seq") == 1024);        // min(1024, 2048).
  CHECK(load("mistral_7b_hf.json").dims.at("seq") == 2048);  // min(32768, 2048).

  ModelOptions options;
  options.dims["batch"] = 3;
  options.dims["seq"] = 512;
  const Graph g = load("llama2_7b_hf.json", options);
  CHECK(g.batch == 3);
  CHECK(g.inputs.front().shape == capcalc::Shape{3, 512});
  CHECK(capcalc::graph_totals(g).macs ==
        3 * decoder_macs(512, 32, 4096, 32, 32, 128, 11008, 32000));

  // GPT-2's positions are learned: a longer seq than n_positions is an error.
  CHECK_THROWS_WITH(load("gpt2_hf.json", with_seq(4096)),
                    ContainsSubstring("sequence length 4096 exceeds the 1024 learned positions"));
  // An unknown dimension lists the ones there are.
  ModelOptions unknown;
  unknown.dims["sq"] = 8;
  CHECK_THROWS_WITH(load("gpt2_hf.json", unknown), ContainsSubstring("its dims: batch, seq"));
}

TEST_CASE("hf: a config without model_type is recognised by its architectures", "[hf][model]") {
  nlohmann::json config = config_of("mistral_7b_hf.json");
  config.erase("model_type");
  const Graph g = capcalc::parse_model(config.dump(), "cfg.json");
  CHECK(capcalc::graph_totals(g).params == 7241732096);
  // A native file is never taken for a config, whatever else it holds.
  CHECK_FALSE(capcalc::is_hf_config(
      nlohmann::json{{"format", "capcalc-model/1"}, {"model_type", "llama"}}));
  CHECK(capcalc::is_hf_config(nlohmann::json{{"model_type", "llama"}}));
  CHECK_FALSE(capcalc::is_hf_config(nlohmann::json{{"name", "x"}}));
}

TEST_CASE("hf: sliding windows per layer (Qwen2's max_window_layers, layer_types)", "[hf][model]") {
  const nlohmann::json base = {{"model_type", "qwen2"},    {"vocab_size", 64},
                               {"hidden_size", 32},        {"intermediate_size", 64},
                               {"num_hidden_layers", 4},   {"num_attention_heads", 4},
                               {"num_key_value_heads", 2}, {"max_position_embeddings", 256},
                               {"sliding_window", 16},     {"use_sliding_window", true},
                               {"max_window_layers", 2}};
  const nlohmann::json model = capcalc::hf_config_to_model(base, "q.json");
  const auto& layers = model["layers"];
  REQUIRE(layers.size() == 1 + 4 + 2);  // Embedding, one call per layer, norm, head.
  CHECK(layers[1]["name"] == "layers.0");
  CHECK_FALSE(layers[1].contains("args"));
  CHECK_FALSE(layers[2].contains("args"));
  CHECK(layers[3]["args"]["window"] == 16);
  CHECK(layers[4]["args"]["window"] == 16);

  nlohmann::json typed = base;
  typed["layer_types"] = {"sliding_attention", "full_attention", "full_attention",
                          "full_attention"};
  const nlohmann::json by_type = capcalc::hf_config_to_model(typed, "q.json");
  CHECK(by_type["layers"][1]["args"]["window"] == 16);
  CHECK_FALSE(by_type["layers"][2].contains("args"));

  typed["layer_types"][2] = "sliding";
  CHECK_THROWS_WITH(capcalc::hf_config_to_model(typed, "q.json"),
                    "q.json:/layer_types/2: unknown layer type \"sliding\" (expected "
                    "\"full_attention\" or \"sliding_attention\")");

  // Without use_sliding_window every layer attends to everything.
  nlohmann::json off = base;
  off["use_sliding_window"] = false;
  CHECK(capcalc::hf_config_to_model(off, "q.json")["layers"][1]["repeat"] == 4);
}

// ---------------------------------------------------------------------------------------------
// Errors point into the config.

TEST_CASE(
    "hf: an unsupported model_type names the file, /model_type and the "
    "supported ones",
    "[hf][model][errors]") {
  const std::string text = R"({"model_type": "lama", "hidden_size": 8})";
  CHECK_THROWS_AS(capcalc::parse_model(text, "cfg.json"), capcalc::Error);
  CHECK_THROWS_WITH(
      capcalc::parse_model(text, "cfg.json"),
      "cfg.json:/model_type: unsupported model_type \"lama\" (supported: bert, "
      "deepseek_v2, deepseek_v3, gemma, gemma2, gemma3, gemma3_text, gpt2, gpt_neox, gpt_oss, "
      "llama, llama4, llama4_text, mistral, mixtral, phi3, qwen2, qwen2_moe, qwen3, "
      "qwen3_moe); did you mean \"llama\"?");
  CHECK_THROWS_WITH(
      capcalc::parse_model(R"({"architectures": ["T5ForConditionalGeneration"]})", "cfg.json"),
      ContainsSubstring("cfg.json:/architectures/0: unsupported architecture "
                        "\"T5ForConditionalGeneration\" and no model_type"));
}

TEST_CASE("hf: missing and bad keys name their JSON pointer", "[hf][model][errors]") {
  nlohmann::json config = config_of("llama2_7b_hf.json");
  config.erase("intermediate_size");
  CHECK_THROWS_WITH(capcalc::parse_model(config.dump(), "cfg.json"),
                    "cfg.json:/intermediate_size: missing required key \"intermediate_size\" "
                    "(model_type \"llama\")");

  config = config_of("llama2_7b_hf.json");
  config["num_key_value_heads"] = 5;
  CHECK_THROWS_WITH(capcalc::parse_model(config.dump(), "cfg.json"),
                    "cfg.json:/num_key_value_heads: num_key_value_heads = 5 must divide "
                    "num_attention_heads = 32");

  config = config_of("llama2_7b_hf.json");
  config["hidden_size"] = -1;
  CHECK_THROWS_WITH(capcalc::parse_model(config.dump(), "cfg.json"),
                    "cfg.json:/hidden_size: expected a positive integer, got -1");

  config = config_of("llama2_7b_hf.json");
  config["hidden_act"] = "mish";
  CHECK_THROWS_WITH(capcalc::parse_model(config.dump(), "cfg.json"),
                    ContainsSubstring("cfg.json:/hidden_act: unsupported activation \"mish\""));

  // A null is "not set", as transformers writes it: head_dim falls back to
  // hidden / heads.
  config = config_of("llama2_7b_hf.json");
  config["head_dim"] = nullptr;
  CHECK(capcalc::graph_totals(capcalc::parse_model(config.dump(), "cfg.json")).params ==
        6738415616);
}

// ---------------------------------------------------------------------------------------------
// Training FLOPs against the standard estimate.

TEST_CASE("hf: training FLOPs per token agree with 6N + 12 n_layer d_attn seq", "[hf][zoo]") {
  // Kaplan et al. 2020 (arXiv:2001.08361), Table 1: forward 2N + 2 n_layer
  // n_ctx d_attn FLOPs per token with attention over the causal half; backward
  // twice the forward (Hoffmann et al. 2022, arXiv:2203.15556, appendix F).
  // Counted full (as capcalc does by default), the attention term doubles: 6N +
  // 12 n_layer n_ctx d_attn. N counts the weights used in matrix products: all
  // parameters except an untied input embedding (a gather); the LM head is
  // included (Chinchilla counts it). What the formula leaves out (norms,
  // activations, softmax, residual adds, about 0.1-0.3 % here) stays within the
  // 1 % tolerance.
  for (const std::string file : {"llama2_7b_hf.json", "mistral_7b_hf.json", "qwen2_7b_hf.json",
                                 "gemma_7b_hf.json", "phi3_mini_hf.json"}) {
    INFO(file);
    const nlohmann::json config = config_of(file);
    const Graph g = load(file);
    const GraphTotals t = capcalc::graph_totals(g);
    const auto seq = static_cast<double>(g.dims.at("seq"));
    const auto tokens = static_cast<double>(g.batch) * seq;
    const double d = config["hidden_size"].get<double>();
    const double heads = config["num_attention_heads"].get<double>();
    const double head_dim =
        config.contains("head_dim") ? config["head_dim"].get<double>() : d / heads;
    const double layers = config["num_hidden_layers"].get<double>();
    const bool tied = config.value("tie_word_embeddings", file == "gemma_7b_hf.json");
    const double embedding = config["vocab_size"].get<double>() * d;
    const double n = static_cast<double>(t.params) - (tied ? 0.0 : embedding);
    const double expected = 6 * n + 12 * layers * heads * head_dim * seq;
    const double counted = static_cast<double>(t.flops + t.backward_flops) / tokens;
    CHECK(std::abs(counted - expected) / expected < 0.01);
    CHECK(counted > expected);  // The leftovers only add.
  }
}

// ---------------------------------------------------------------------------------------------
// The operator-table rows: moe, and attention's split biases.

namespace {

std::string one_layer(const std::string& shape, const std::string& layer) {
  return R"({"format": "capcalc-model/1", "name": "t", "inputs": [{"name": "x", "shape": )" +
         shape + R"(}], "layers": [{"name": "pre", "op": "rmsnorm"}, )" + layer + "]}";
}

}  // namespace

TEST_CASE("ops: moe counts every expert's parameters and the chosen experts' MACs", "[ops]") {
  // Router d x E; each expert gate and up (d x h) and down (h x d), SwiGLU
  // (Mixtral).
  const std::int64_t b = 2, s = 5, d = 16, e = 4, k = 2, h = 24;
  const Graph g =
      capcalc::parse_model(one_layer("[2, 5, 16]", R"({"name": "moe", "op": "moe", "experts": 4,
                 "experts_per_token": 2, "hidden": 24, "kind": "swiglu"})"),
                           "m.json");
  const capcalc::Layer& moe = g.layers.back();
  const std::int64_t tokens = b * s;
  CHECK(moe.output == capcalc::Shape{b, s, d});
  CHECK(moe.counts.params == e * 3 * d * h + d * e);
  CHECK(moe.counts.active_params == k * 3 * d * h + d * e);
  CHECK(moe.counts.macs == tokens * (d * e + k * 3 * d * h));
  // Softmax over the router (5 E), per chosen expert SiLU + gate (6 h), scale +
  // sum (2 d).
  CHECK(moe.counts.other_flops == tokens * (5 * e + k * (6 * h + 2 * d)));
  // Weight and input gradients of every product (the input needs a gradient
  // here).
  CHECK(moe.counts.backward_macs == 2 * moe.counts.macs);
  // Traffic: the input once for the router and once per chosen expert's gate and up; router
  // logits, per pair gate, up and their product (3 h) and the down output (d), each written
  // once and read once (the down outputs by the weighted sum); the output once.
  const std::int64_t intermediates = tokens * e + tokens * k * (3 * h + d);
  CHECK(moe.counts.input_elements == tokens * d + tokens * k * d + intermediates);
  CHECK(moe.counts.output_elements == tokens * d + intermediates);
  CHECK(moe.counts.saved_elements == intermediates);
  const GraphTotals t = capcalc::graph_totals(g);
  CHECK(t.params == d + moe.counts.params);
  CHECK(t.active_params == d + moe.counts.active_params);

  CHECK_THROWS_WITH(
      capcalc::parse_model(one_layer("[2, 5, 16]", R"({"name": "moe", "op": "moe", "experts": 4,
                 "experts_per_token": 5, "hidden": 24})"),
                           "m.json"),
      "m.json:/layers/1/experts_per_token: layer \"moe\": experts_per_token = "
      "5 exceeds "
      "experts = 4");
  CHECK_THROWS_WITH(
      capcalc::parse_model(one_layer("[2, 5, 16]", R"({"name": "moe", "op": "moe", "experts": 4,
                 "experts_per_token": 2, "hidden": 24, "kind": "swiglue"})"),
                           "m.json"),
      "m.json:/layers/1/kind: layer \"moe\": unknown expert kind \"swiglue\"; "
      "did you mean "
      "\"swiglu\"?");
}

TEST_CASE("serving: tensor parallelism splits a GQA cache over at most its KV heads",
          "[hf][serving]") {
  // 2 KV heads of 4: TP 2 halves the cache per device; TP 4 cannot split it further (each
  // pair of devices keeps the same head), so each device still keeps half.
  ModelOptions options;
  options.counting.kv_cache_length = 8;
  const Graph g = capcalc::parse_model(
      one_layer("[1, 1, 16]", R"({"name": "a", "op": "attention", "heads": 4, "kv_heads": 2,
                 "causal": true})"),
      "m.json", options);
  const double whole = static_cast<double>(capcalc::kv_cache_elements(g, 10));
  CHECK(whole == 10 * 2 * 2 * 4);  // 10 tokens x K and V x 2 heads x head_dim 4.
  CHECK(capcalc::kv_cache_elements_per_device(g, 10, 1) == Approx(whole));
  CHECK(capcalc::kv_cache_elements_per_device(g, 10, 2) == Approx(whole / 2));
  CHECK(capcalc::kv_cache_elements_per_device(g, 10, 4) == Approx(whole / 2));
}

TEST_CASE("ops: moe shared experts run on every token, the router bias is a parameter", "[ops]") {
  // DeepseekV3MoE: routed experts, plus shared_experts (one SwiGLU MLP of shared_hidden) on
  // every token, plus e_score_correction_bias (one per expert) in the router.
  const std::int64_t b = 2, s = 5, d = 16, e = 4, k = 2, h = 24, sh = 48;
  const Graph g =
      capcalc::parse_model(one_layer("[2, 5, 16]", R"({"name": "moe", "op": "moe", "experts": 4,
                 "experts_per_token": 2, "hidden": 24, "shared_hidden": 48,
                 "router_bias": true})"),
                           "m.json");
  const capcalc::LayerCounts& c = g.layers.back().counts;
  const std::int64_t tokens = b * s;
  CHECK(c.params == e * 3 * d * h + d * e + e + 3 * d * sh);
  CHECK(capcalc::graph_totals(g).active_params == d + k * 3 * d * h + d * e + e + 3 * d * sh);
  CHECK(c.macs == tokens * (d * e + k * 3 * d * h + 3 * d * sh));
  CHECK(c.other_flops == tokens * (5 * e + k * (6 * h + 2 * d) + 6 * sh + d));
  CHECK(c.backward_macs == 2 * c.macs);
  // Qwen2-MoE gates the shared expert: sigmoid(x · w), w of d, scales its output.
  const capcalc::LayerCounts gated =
      capcalc::parse_model(one_layer("[2, 5, 16]", R"({"name": "moe", "op": "moe", "experts": 4,
                 "experts_per_token": 2, "hidden": 24, "shared_hidden": 48,
                 "router_bias": true, "shared_gate": true})"),
                           "m.json")
          .layers.back()
          .counts;
  CHECK(gated.params == c.params + d);
  CHECK(gated.macs == c.macs + tokens * d);
  CHECK_THROWS_WITH(
      capcalc::parse_model(one_layer("[2, 5, 16]", R"({"name": "moe", "op": "moe", "experts": 4,
                 "experts_per_token": 2, "hidden": 24, "shared_gate": true})"),
                           "m.json"),
      ContainsSubstring("shared_gate: layer \"moe\": a shared_gate needs a shared expert"));
}

TEST_CASE("ops: moe group-limited routing changes no count, only where tokens go", "[ops]") {
  const auto moe = [](const std::string& extra) {
    return capcalc::parse_model(one_layer("[2, 5, 16]",
                                          R"({"name": "moe", "op": "moe", "experts": 8,
                 "experts_per_token": 2, "hidden": 24)" +
                                              extra + "}"),
                                "m.json")
        .layers.back()
        .counts;
  };
  const capcalc::LayerCounts plain = moe("");
  const capcalc::LayerCounts limited = moe(R"(, "groups": 4, "groups_per_token": 2)");
  CHECK(limited.params == plain.params);
  CHECK(limited.macs == plain.macs);
  CHECK(limited.other_flops == plain.other_flops);
  CHECK(plain.expert_groups == 0);
  CHECK(limited.expert_groups == 4);
  CHECK(limited.expert_groups_per_token == 2);
  // Every group picked is no limit.
  CHECK(moe(R"(, "groups": 4, "groups_per_token": 4)").expert_groups == 0);
  CHECK_THROWS_WITH(moe(R"(, "groups": 3)"),
                    ContainsSubstring("groups = 3 does not divide experts = 8"));
  CHECK_THROWS_WITH(moe(R"(, "groups": 4, "groups_per_token": 5)"),
                    ContainsSubstring("groups_per_token = 5 exceeds groups = 4"));
  CHECK_THROWS_WITH(
      moe(R"(, "groups": 8, "groups_per_token": 1)"),
      ContainsSubstring("1 groups of 1 experts hold fewer than experts_per_token = 2"));
}

TEST_CASE("ops: gpt-oss attention sinks and expert biases are parameters", "[ops]") {
  // One sink logit per head; per expert a gate/up bias (2 h) and a down bias (d), and the
  // router's bias, one per expert.
  const capcalc::LayerCounts plain =
      capcalc::parse_model(one_layer("[1, 3, 16]", R"({"name": "a", "op": "attention",
      "heads": 4, "causal": true})"),
                           "m.json")
          .layers.back()
          .counts;
  const capcalc::LayerCounts sinks =
      capcalc::parse_model(one_layer("[1, 3, 16]", R"({"name": "a", "op": "attention",
      "heads": 4, "causal": true, "sinks": true})"),
                           "m.json")
          .layers.back()
          .counts;
  CHECK(sinks.params == plain.params + 4);
  CHECK(sinks.other_flops == plain.other_flops + 4 * 3 * 5);  // A softmax entry per query-head.
  CHECK(sinks.macs == plain.macs);
  const capcalc::LayerCounts biased =
      capcalc::parse_model(one_layer("[2, 5, 16]", R"({"name": "moe", "op": "moe", "experts": 4,
                 "experts_per_token": 2, "hidden": 24, "expert_bias": true,
                 "router_bias": true})"),
                           "m.json")
          .layers.back()
          .counts;
  CHECK(biased.params == 4 * (3 * 16 * 24 + 2 * 24 + 16) + 16 * 4 + 4);
  CHECK(biased.other_flops == 10 * (5 * 4 + 2 * (6 * 24 + 2 * 16 + 2 * 24 + 16)));
}

TEST_CASE("ops: mla_attention counts DeepSeek's latent attention, absorbed when decoding",
          "[ops]") {
  // d 16, 2 heads; queries 16 -> 8 (q_lora_rank) -> 2 x (3 + 2); the latent 16 -> 4 + 2 (the
  // rope key); up 4 -> 2 x (3 + 5); out 2 x 5 -> 16. Batch 1, 3 tokens, causal (counted full).
  const std::int64_t s = 3, d = 16, H = 2, qr = 8, kvr = 4, n = 3, r = 2, v = 5;
  const std::string layer = R"({"name": "a", "op": "mla_attention", "heads": 2,
      "q_lora_rank": 8, "kv_lora_rank": 4, "qk_nope_head_dim": 3, "qk_rope_head_dim": 2,
      "v_head_dim": 5, "causal": true})";
  const capcalc::LayerCounts c =
      capcalc::parse_model(one_layer("[1, 3, 16]", layer), "m.json").layers.back().counts;
  const std::int64_t params =
      d * qr + qr + qr * H * (n + r) + d * (kvr + r) + kvr + kvr * H * (n + v) + H * v * d;
  CHECK(c.params == params);
  const std::int64_t projections =
      s * (d * qr + qr * H * (n + r)) + s * d * (kvr + r) + s * kvr * H * (n + v) + s * H * v * d;
  const std::int64_t scores = H * s * s * (n + r) + H * s * s * v;  // QK over nope + rope; AV.
  CHECK(c.macs == projections + scores);
  CHECK(c.score_macs == scores);
  // Counted full, the 3 masked pairs (a key after its query) of each head are marked: what a
  // kernel that skips masked tiles leaves out, QK and AV alike.
  CHECK(c.masked_score_macs == H * 3 * (n + r + v));
  CHECK(c.masked_other_flops == 6 * H * 3);
  CHECK(c.kv_cache_per_token == kvr + r);
  CHECK(c.kv_cache_heads == 1);
  CHECK(c.backward_macs == 2 * c.macs);  // The input needs a gradient (after the norm).
  // Without the low-rank query pair: one projection 16 -> 2 x 5.
  const capcalc::LayerCounts direct =
      capcalc::parse_model(one_layer("[1, 3, 16]", R"({"name": "a", "op": "mla_attention",
      "heads": 2, "kv_lora_rank": 4, "qk_nope_head_dim": 3, "qk_rope_head_dim": 2,
      "v_head_dim": 5})"),
                           "m.json")
          .layers.back()
          .counts;
  CHECK(direct.params == params - (d * qr + qr + qr * H * (n + r)) + d * H * (n + r));
  // Decode, one new token over 10 cached: kv_b absorbed, attention in the latent space over
  // 11 keys (kvr + r per key for QK, kvr for AV), the cache read whole.
  ModelOptions decode;
  decode.counting.kv_cache_length = 10;
  const capcalc::LayerCounts step =
      capcalc::parse_model(one_layer("[1, 1, 16]", layer), "m.json", decode).layers.back().counts;
  const std::int64_t absorbed =
      (d * qr + qr * H * (n + r)) + d * (kvr + r) + H * kvr * (n + v) + H * v * d;
  CHECK(step.score_macs == H * 11 * (kvr + r) + H * 11 * kvr);
  CHECK(step.masked_score_macs == 0);  // A cache counts the pairs exactly.
  CHECK(step.macs == absorbed + step.score_macs);
  CHECK(step.kv_cache_read_elements == 10 * (kvr + r));
  CHECK_THROWS_WITH(
      capcalc::parse_model(one_layer("[1, 3, 16]", R"({"name": "a", "op": "mla_attention",
      "heads": 2, "qk_nope_head_dim": 3, "qk_rope_head_dim": 2, "v_head_dim": 5})"),
                           "m.json"),
      ContainsSubstring(
          "m.json:/layers/1: layer \"a\": missing required attribute \"kv_lora_rank\""));
}

TEST_CASE("ops: attention qkv_bias and out_bias split the projection biases", "[ops]") {
  // D = 16, 4 heads of 4, 2 key/value heads: Q 16, K and V 8 each, output 16.
  const std::int64_t b = 1, s = 3, d = 16, kv_width = 8;
  const std::int64_t weights = d * d + 2 * d * kv_width + d * d;
  auto attention = [&](const std::string& biases) {
    return capcalc::parse_model(one_layer("[1, 3, 16]",
                                          R"({"name": "a", "op": "attention", "heads": 4,
                          "kv_heads": 2, "causal": true)" +
                                              biases + "}"),
                                "m.json")
        .layers.back()
        .counts;
  };
  const capcalc::LayerCounts none = attention(R"(, "bias": false)");
  const capcalc::LayerCounts qkv = attention(R"(, "qkv_bias": true, "out_bias": false)");
  const capcalc::LayerCounts out = attention(R"(, "bias": false, "out_bias": true)");
  const capcalc::LayerCounts all = attention("");
  CHECK(none.params == weights);
  CHECK(qkv.params == weights + d + 2 * kv_width);
  CHECK(out.params == weights + d);
  CHECK(all.params == weights + d + 2 * kv_width + d);
  // One add per biased output element.
  CHECK(qkv.other_flops - none.other_flops == b * s * (d + 2 * kv_width));
  CHECK(out.other_flops - none.other_flops == b * s * d);
  CHECK(all.other_flops - none.other_flops == b * s * (2 * d + 2 * kv_width));
}

TEST_CASE("report: estimate JSON carries model.active_params", "[hf][report]") {
  const Graph g =
      capcalc::parse_model(one_layer("[1, 4, 16]", R"({"name": "moe", "op": "moe", "experts": 8,
                 "experts_per_token": 2, "hidden": 32})"),
                           "m.json");
  const GraphTotals t = capcalc::graph_totals(g);
  capcalc::Device d;
  d.id = "test-gpu";
  d.name = "Test GPU";
  d.dense_peak[static_cast<std::size_t>(capcalc::Precision::kFp32)] = {10e12, 0};
  d.memory_bytes = 1e9;
  d.memory_bandwidth_bytes_per_s = 1e11;
  const capcalc::PerformanceParams p;
  const capcalc::Estimate e = capcalc::estimate(g, d, p, capcalc::Workload{});
  const auto doc =
      nlohmann::json::parse(capcalc::render_estimate_json({g, t, capcalc::Workload{}, &d, &p, &e}));
  CHECK(doc["model"]["params"] == 16 + 8 * 3 * 16 * 32 + 16 * 8);
  CHECK(doc["model"]["active_params"] == 16 + 2 * 3 * 16 * 32 + 16 * 8);
}

// Issue 21: num_hidden_layers of 10^12 hung or ended in std::bad_alloc building per-layer
// lists; the limit is checked at the config's key, while the largest real configs load.
TEST_CASE("hf: a layer count past the limit is an error at num_hidden_layers", "[hf][limits]") {
  nlohmann::json config = config_of("llama2_7b_hf.json");
  config["num_hidden_layers"] = 1'000'000'000'000;
  REQUIRE_THROWS_WITH(capcalc::parse_model(config.dump(), "config.json"),
                      "config.json:/num_hidden_layers: 1,000,000,000,000 layers is more than "
                      "10,000 (the limit for a Hugging Face config)");
  config = config_of("gpt2_hf.json");
  config["n_layer"] = 10'001;
  REQUIRE_THROWS_WITH(capcalc::parse_model(config.dump(), "config.json"),
                      ContainsSubstring("config.json:/n_layer: 10,001 layers is more than 10,000"));
  // The largest real configs are far inside the limits: DeepSeek-V3 (61 layers, 256 experts
  // each) and Llama 3.1 405B (126 layers; its config.json on the Hugging Face Hub,
  // meta-llama/Llama-3.1-405B, with its 405 B parameters from the model card).
  CHECK(load("deepseek_v3_hf.json").layers.size() > 61);
  config = config_of("llama2_7b_hf.json");
  config["hidden_size"] = 16384;
  config["intermediate_size"] = 53248;
  config["num_attention_heads"] = 128;
  config["num_key_value_heads"] = 8;
  config["num_hidden_layers"] = 126;
  config["vocab_size"] = 128256;
  const Graph llama405b = capcalc::parse_model(config.dump(), "config.json");
  const double params = static_cast<double>(capcalc::graph_totals(llama405b).params);
  CHECK(params > 400e9);
  CHECK(params < 410e9);
}

// Multi-token prediction (ModelOptions::mtp_layers, Megatron-Core's mtp_num_layers): DeepSeek-V3's
// MTP module (arXiv:2412.19437, section 2.2) normalises the next token's embedding and the main
// model's hidden state, projects their concatenation from 2d to d, runs one more decoder layer
// and applies the output head, which it shares with the model.
TEST_CASE("hf: multi-token prediction appends DeepSeek-V3's module, sharing the output head",
          "[hf][zoo]") {
  // hidden_size and vocab_size of deepseek-ai/DeepSeek-V3's config.json (deepseek_v3_hf.json).
  const std::int64_t d = 7168;
  const std::int64_t vocab = 129280;
  const std::int64_t s = 2048;
  const Graph main = load("deepseek_v3_hf.json", with_seq(s));
  ModelOptions options = with_seq(s);
  options.mtp_layers = 1;
  const Graph g = load("deepseek_v3_hf.json", options);
  CHECK(main.mtp_first_layer == -1);
  REQUIRE(g.mtp_modules == 1);
  REQUIRE(g.mtp_first_layer == static_cast<std::int64_t>(main.layers.size()));
  CHECK(g.layers[static_cast<std::size_t>(g.mtp_first_layer)].name == "mtp.0.enorm");
  // The extra decoder layer is the model's last (a MoE layer): its parameters as the last one's.
  std::int64_t last_layer = 0;
  for (const capcalc::Layer& layer : main.layers) {
    if (layer.name.rfind("layers.60.", 0) == 0) last_layer += layer.counts.params;
  }
  REQUIRE(last_layer > 11'000'000'000);
  const std::int64_t added = capcalc::graph_totals(g).params - capcalc::graph_totals(main).params;
  // eh_proj 2d x d, three norms (enorm, hnorm, the module's final norm), the layer; no head.
  CHECK(added == 2 * d * d + 3 * d + last_layer);
  CHECK(layer_named(g, "mtp.0.head").counts.params == 0);
  CHECK(layer_named(g, "mtp.0.head").counts.macs == s * d * vocab);
  CHECK(layer_named(g, "mtp.0.eh_proj").counts.macs == s * 2 * d * d);
  // Corroboration: DeepSeek's model card gives 685B on Hugging Face, 671B of the main model and
  // 14B of MTP weights, the checkpoint storing the embedding and the head again for the module.
  const double checkpoint = static_cast<double>(capcalc::graph_totals(g).params + 2 * vocab * d);
  CHECK(std::abs(checkpoint - 685e9) / 685e9 < 0.001);
  // Inference runs no MTP module; a model not built from a Hugging Face config has none.
  capcalc::Workload inference;
  const capcalc::HardwareTable table =
      capcalc::load_hardware(capcalc::test::data_path("hardware.json"));
  const capcalc::Device& device = table.get("h100-sxm");
  CHECK_THROWS_WITH(capcalc::estimate(g, device, table.performance_for(device), inference),
                    "--mtp-layers: multi-token-prediction modules train beside the model: add "
                    "--mode training");
  CHECK_THROWS_WITH(
      load("llama2_7b.json", options),
      ContainsSubstring("--mtp-layers builds its modules from a Hugging Face decoder config"));
}

// The module runs on the last pipeline stage (Megatron-Core's MTP block, in the GPT model's
// post-process), after the output layer; the stages send the main model's hidden state.
TEST_CASE("hf: a multi-token-prediction module runs on the last pipeline stage", "[hf]") {
  ModelOptions options;
  options.mtp_layers = 1;
  options.dims["seq"] = 256;
  const Graph g = capcalc::parse_model(R"({"model_type": "llama", "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
    "vocab_size": 1000, "max_position_embeddings": 256})",
                                       "config.json", options);
  const capcalc::HardwareTable table =
      capcalc::load_hardware(capcalc::test::data_path("hardware.json"));
  const capcalc::Device& device = table.get("h100-sxm");
  capcalc::Workload w;
  w.mode = capcalc::Mode::kTraining;
  w.precision = capcalc::Precision::kBf16;
  w.devices = 2;
  w.pipeline_parallel = 2;
  w.micro_batches = 4;
  const capcalc::Estimate e = capcalc::estimate(g, device, table.performance_for(device), w);
  // Four decoder layers, two a stage; the module joins the output layer on the second.
  CHECK(e.pipeline_heaviest_stage == 1);
  // A send is one sequence's hidden state (256 x 64 at 2 bytes), not the 1,000-word logits.
  CHECK(e.pipeline_send_bytes == Approx(256.0 * 64 * 2));
}
