// The Hugging Face importer's architecture table (src/import/hf_architectures.cpp): a
// Llama-like architecture is one row, with no code beside it.
#include "import/hf_architectures.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capcalc/error.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

#include "catch.hpp"
#include "import/hf_config.hpp"
#include "input_file.hpp"
#include "json_view.hpp"
#include "test_data.hpp"

namespace {

using capcalc::hf::Architecture;
using capcalc::hf::Biases;
using capcalc::hf::LlamaLike;
using capcalc::hf::Windows;

nlohmann::json config_of(const std::string& file) {
  const std::string path = capcalc::test::data_path("models/" + file);
  return capcalc::parse_json_text(capcalc::read_input_file(path), path);
}

// The native document's parameter count, as `capcalc` loads it.
std::int64_t params_of(const nlohmann::json& model) {
  return capcalc::graph_totals(capcalc::parse_model(model.dump(), "model.json")).params;
}

// The table with one more row, kept sorted as the real one is.
std::vector<Architecture> with_row(const Architecture& row) {
  std::vector<Architecture> table = capcalc::hf::architectures();
  table.push_back(row);
  std::sort(table.begin(), table.end(), [](const Architecture& a, const Architecture& b) {
    return a.model_type < b.model_type;
  });
  return table;
}

}  // namespace

TEST_CASE("hf table: a Llama-like architecture added as one row is read and counted",
          "[hf][architectures]") {
  // A model_type the importer does not know, on Llama-2-7B's config.
  nlohmann::json config = config_of("llama2_7b_hf.json");
  config["model_type"] = "my_llama";
  config["architectures"] = {"MyLlamaForCausalLM"};
  CHECK_THROWS_WITH(capcalc::hf_config_to_model(config, "c.json"),
                    ContainsSubstring("unsupported model_type \"my_llama\""));

  // One row, Llama's traits: the same parameters as Llama-2-7B, whose checkpoint has
  // 6,738,415,616 (https://huggingface.co/meta-llama/Llama-2-7b-hf, safetensors metadata).
  const std::vector<Architecture> table = with_row({"my_llama", "MyLlama", LlamaLike{}});
  const nlohmann::json model = capcalc::hf::config_to_model(config, "c.json", table);
  CHECK(params_of(model) == 6738415616);
  CHECK(model["layers"] ==
        capcalc::hf_config_to_model(config_of("llama2_7b_hf.json"), "c.json")["layers"]);
  // Without model_type the row is found by its class name.
  config.erase("model_type");
  CHECK(capcalc::hf::config_to_model(config, "c.json", table)["layers"] == model["layers"]);
}

TEST_CASE("hf table: a row's traits change what the importer builds", "[hf][architectures]") {
  // Mistral-7B's config read with Mistral's traits (no biases, every layer's window) matches
  // the mistral row; with Qwen2's (q/k/v biases, use_sliding_window off) it gains biases:
  // 32 layers x (4096 + 2 x 1024) = 196,608 parameters.
  nlohmann::json config = config_of("mistral_7b_hf.json");
  config["model_type"] = "my_mistral";
  const LlamaLike mistral =
      LlamaLike{}.with_biases(Biases::kNone).with_windows(Windows::kEveryLayer);
  const nlohmann::json as_mistral =
      capcalc::hf::config_to_model(config, "c.json", with_row({"my_mistral", "M", mistral}));
  const nlohmann::json reference =
      capcalc::hf_config_to_model(config_of("mistral_7b_hf.json"), "c.json");
  CHECK(as_mistral["layers"] == reference["layers"]);
  CHECK(as_mistral["blocks"] == reference["blocks"]);
  CHECK(params_of(as_mistral) == 7241732096);

  const LlamaLike qwen2 = LlamaLike{}.with_biases(Biases::kQkv).with_windows(Windows::kQwen);
  const nlohmann::json as_qwen2 =
      capcalc::hf::config_to_model(config, "c.json", with_row({"my_mistral", "M", qwen2}));
  CHECK(params_of(as_qwen2) == 7241732096 + 32 * (4096 + 2 * 1024));
}

TEST_CASE("hf table: rows are sorted and unique, and hf_model_types lists them",
          "[hf][architectures]") {
  const std::vector<Architecture>& table = capcalc::hf::architectures();
  std::vector<std::string_view> names;
  for (const Architecture& row : table)
    names.push_back(row.model_type);
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  CHECK(capcalc::hf_model_types() == names);
  CHECK(names.size() == 20);
}
