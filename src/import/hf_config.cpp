// The Hugging Face importer's entry points: find the config's architecture, read it into a
// Spec (hf_reader, hf_architectures, hf_multimodal), emit the native document (hf_emit).
#include "import/hf_config.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "capcalc/error.hpp"

#include "import/hf_architectures.hpp"
#include "import/hf_emit.hpp"
#include "import/hf_reader.hpp"
#include "import/hf_spec.hpp"
#include "json_view.hpp"
#include "spellcheck.hpp"

namespace capcalc {
namespace hf {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kNativeFormat = "capcalc-model/1";
// The default "seq": the model's context, capped so that long-context models (32k, 128k) are
// counted at a typical training and prefill length unless --set seq=N says otherwise.
constexpr std::int64_t kDefaultSeqCap = 2048;

std::vector<std::string_view> model_types(const std::vector<Architecture>& table) {
  std::vector<std::string_view> names;
  names.reserve(table.size());
  for (const Architecture& row : table)
    names.push_back(row.model_type);
  return names;
}

const Architecture& architecture_of(const Config& config, const std::vector<Architecture>& table) {
  const std::vector<std::string_view> known = model_types(table);
  const std::string supported = fmt::format("{}", fmt::join(known, ", "));
  if (auto model_type = config.find("model_type")) {
    const std::string name = model_type->as_string();
    for (const Architecture& row : table) {
      if (row.model_type == name) return row;
    }
    // A model of its own name on a known architecture (Kimi K2's "kimi_k2" is a
    // DeepseekV3ForCausalLM): the architecture class says how transformers builds it.
    if (auto classes = config.find("architectures"); classes && classes->array_size() > 0) {
      if (const Architecture* row = architecture_of_class(classes->at(0).as_string(), table)) {
        return *row;
      }
    }
    model_type->fail(with_suggestion(
        fmt::format("unsupported model_type \"{}\" (supported: {})", name, supported), name,
        known));
  }
  const JsonView classes = config.root().at("architectures");
  if (classes.array_size() == 0) classes.fail("expected at least one architecture class name");
  const std::string name = classes.at(0).as_string();
  if (const Architecture* row = architecture_of_class(name, table)) return *row;
  classes.at(0).fail(
      fmt::format("unsupported architecture \"{}\" and no model_type (supported "
                  "model_type values: {})",
                  name, supported));
}

// "layer_types" names one kind per decoder layer. The families that read it check it as they
// read it; for the rest it must still be well formed, or a typo passes silently.
void check_layer_types(const Config& config, const Spec& spec) {
  const std::optional<JsonView> types = config.find("layer_types");
  if (!types) return;
  if (types->array_size() != static_cast<std::size_t>(spec.layers)) {
    types->fail(fmt::format("expected {} entries (num_hidden_layers), got {}", spec.layers,
                            types->array_size()));
  }
  const std::vector<std::string_view> known = {"full_attention", "sliding_attention",
                                               "chunked_attention"};
  for (std::size_t i = 0; i < types->array_size(); ++i) {
    const std::string kind = types->at(i).as_string();
    if (std::find(known.begin(), known.end(), kind) == known.end()) {
      types->at(i).fail(
          with_suggestion(fmt::format("unknown layer type \"{}\"", kind), kind, known));
    }
  }
}

// Keys of transformers' PretrainedConfig that the importer need not read, by the type they hold
// (null allowed for each): a typo's type passed silently ("rms_norm_eps": "1e-5").
enum class KeyType { kNumber, kCount, kString, kBool, kObject };
struct CommonKey {
  std::string_view key;
  KeyType type;
};
constexpr CommonKey kCommonKeys[] = {
    {"rms_norm_eps", KeyType::kNumber},
    {"layer_norm_eps", KeyType::kNumber},
    {"layer_norm_epsilon", KeyType::kNumber},
    {"rope_theta", KeyType::kNumber},
    {"initializer_range", KeyType::kNumber},
    {"attention_dropout", KeyType::kNumber},
    {"partial_rotary_factor", KeyType::kNumber},
    {"router_aux_loss_coef", KeyType::kNumber},
    {"routed_scaling_factor", KeyType::kNumber},
    {"final_logit_softcapping", KeyType::kNumber},
    {"attn_logit_softcapping", KeyType::kNumber},
    {"torch_dtype", KeyType::kString},
    {"dtype", KeyType::kString},
    {"transformers_version", KeyType::kString},
    {"use_cache", KeyType::kBool},
    {"attention_bias", KeyType::kBool},
    {"mlp_bias", KeyType::kBool},
    {"text_config", KeyType::kObject},
    {"vision_config", KeyType::kObject},
    {"rope_scaling", KeyType::kObject},
    {"quantization_config", KeyType::kObject},
    // DeepSeek-V2/V3's router and training keys (DeepseekV3Config): group-limited routing,
    // the score function, expert parallelism, the multi-token-prediction layers.
    {"n_group", KeyType::kCount},
    {"topk_group", KeyType::kCount},
    {"ep_size", KeyType::kCount},
    {"num_nextn_predict_layers", KeyType::kCount},
    {"scoring_func", KeyType::kString},
    {"norm_topk_prob", KeyType::kBool},
    {"seq_aux", KeyType::kBool},
    {"aux_loss_alpha", KeyType::kNumber},
    // Other MoE and decoder configs' (Mixtral, Qwen2-MoE, Llama).
    {"output_router_logits", KeyType::kBool},
    {"router_jitter_noise", KeyType::kNumber},
    {"pretraining_tp", KeyType::kCount},
};

// Keys every config may carry that the importer need not read still have their type:
// "architectures" lists class names, a model_type is not empty, and kCommonKeys.
void check_common_keys(const Config& config) {
  if (const std::optional<JsonView> classes = config.find("architectures")) {
    for (std::size_t i = 0; i < classes->array_size(); ++i) {
      if (classes->at(i).as_string().empty()) classes->at(i).fail("an empty class name");
    }
  }
  if (const std::optional<JsonView> type = config.find("model_type");
      type && type->as_string().empty()) {
    type->fail("an empty model_type");
  }
  for (const CommonKey& common : kCommonKeys) {
    const std::optional<JsonView> value = config.find(common.key);
    if (!value || value->is_null()) continue;
    switch (common.type) {
      case KeyType::kNumber:
        value->as_number();
        break;
      case KeyType::kCount:
        if (value->as_integer() < 0) value->fail("expected a count, 0 or more");
        break;
      case KeyType::kString:
        value->as_string();
        break;
      case KeyType::kBool:
        value->as_bool();
        break;
      case KeyType::kObject:
        if (!value->is_object()) value->fail("expected an object or null");
        break;
    }
  }
}

// The routed experts' storage that a quantization_config states: MXFP4 (gpt-oss's, "quant_method":
// "mxfp4") quantizes every module but those in modules_to_not_convert, which for gpt-oss are
// attention, the router, the embeddings and the LM head: the experts are what is left, stored in
// 4 bits with an 8-bit scale per 32 (4.25 bits), counted as int4's 4.125. Other methods (AWQ,
// GPTQ, FP8) quantize every linear layer: --weight-precision says that; none is read here.
std::string expert_storage(const Config& config) {
  const std::optional<JsonView> quantization = config.find("quantization_config");
  if (!quantization) return "";
  const std::optional<JsonView> method = quantization->find("quant_method");
  if (!method || method->is_null() || method->as_string() != "mxfp4") return "";
  return "int4";
}

}  // namespace

Json config_to_model(const Json& config, const std::string& file,
                     const std::vector<Architecture>& table) {
  Config reader(config, file);
  reader.root().expect_object();
  check_common_keys(reader);
  const Architecture& architecture = architecture_of(reader, table);
  reader.set_model_type(std::string(architecture.model_type));
  Spec spec;
  spec.model_type = std::string(architecture.model_type);
  read_architecture(architecture, reader, spec);
  check_layer_types(reader, spec);

  Json model;
  model["format"] = kNativeFormat;
  // The file's stem ("llama2_7b_hf"): configs rarely carry their own name.
  const std::string name = std::filesystem::path(file).stem().string();
  model["name"] = name.empty() ? spec.model_type : name;
  model["description"] = describe(spec);
  model["source"] = fmt::format(
      "{}: a Hugging Face config.json, as transformers builds it "
      "(model_type \"{}\")",
      file, spec.model_type);
  model["dims"] = Json{{"batch", 1}, {"seq", std::min(spec.max_positions, kDefaultSeqCap)}};
  model["inputs"] = Json::array({Json{{"name", "input_ids"}, {"shape", {"batch", "seq"}}}});
  emit_layers(spec, model);
  if (const std::string storage = expert_storage(reader); !storage.empty()) {
    model["expert_weight_storage"] = storage;
  }
  return model;
}

}  // namespace hf

bool is_hf_config(const nlohmann::json& document) {
  if (!document.is_object()) return false;
  if (!document.contains("model_type") && !document.contains("architectures")) return false;
  const auto format = document.find("format");
  return format == document.end() || !format->is_string() ||
         format->get<std::string>() != hf::kNativeFormat;
}

nlohmann::json hf_config_to_model(const nlohmann::json& config, const std::string& file) {
  return hf::config_to_model(config, file, hf::architectures());
}

void add_mtp_modules(nlohmann::json& model, std::int64_t modules, const std::string& file) {
  using Json = nlohmann::json;
  Json& layers = model["layers"];
  const std::size_t n = layers.size();
  // [embed_tokens, decoder layer call(s), norm, lm_head]: the shape emit_decoder writes.
  if (n < 4 || layers[0].value("op", "") != "embedding" ||
      layers[n - 2].value("name", "") != "norm" || layers[n - 1].value("name", "") != "lm_head" ||
      !layers[n - 3].contains("block")) {
    throw Error({file},
                "--mtp-layers: multi-token prediction repeats a decoder's last layer; this "
                "model is not a decoder of that shape");
  }
  const Json last = layers[n - 3];
  const std::int64_t hidden = layers[0].at("embedding_dim").get<std::int64_t>();
  const std::string embedding = layers[0].at("name").get<std::string>();
  std::string previous = "norm";
  for (std::int64_t k = 0; k < modules; ++k) {
    const std::string at = fmt::format("mtp.{}.", k);
    layers.push_back(Json{{"name", at + "enorm"}, {"op", "rmsnorm"}, {"inputs", {embedding}}});
    layers.push_back(Json{{"name", at + "hnorm"}, {"op", "rmsnorm"}, {"inputs", {previous}}});
    layers.push_back(Json{{"name", at + "concat"},
                          {"op", "concat"},
                          {"axis", -1},
                          {"inputs", {at + "enorm", at + "hnorm"}}});
    layers.push_back(Json{
        {"name", at + "eh_proj"}, {"op", "linear"}, {"out_features", hidden}, {"bias", false}});
    Json block{{"name", at + "layer"}, {"block", last.at("block")}};
    if (last.contains("args")) block["args"] = last.at("args");
    layers.push_back(std::move(block));
    layers.push_back(Json{{"name", at + "final_layernorm"}, {"op", "rmsnorm"}});
    Json head = layers[n - 1];
    head["name"] = at + "head";
    head["tied_to"] = "lm_head";
    layers.push_back(std::move(head));
    previous = at + "layer";
  }
  model["outputs"] = Json::array({"lm_head"});
  for (std::int64_t k = 0; k < modules; ++k)
    model["outputs"].push_back(fmt::format("mtp.{}.head", k));
}

void mark_mtp_modules(Graph& graph, std::int64_t modules) {
  if (modules <= 0) return;
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    if (graph.layers[i].name == "mtp.0.enorm") {
      graph.mtp_first_layer = static_cast<std::int64_t>(i);
      graph.mtp_modules = modules;
      return;
    }
  }
}

void reject_mtp_modules(std::int64_t modules, const std::string& file) {
  if (modules > 0) {
    throw Error({file}, "--mtp-layers builds its modules from a Hugging Face decoder config");
  }
}

std::vector<std::string_view> hf_model_types() {
  return hf::model_types(hf::architectures());
}

}  // namespace capcalc
