// The zoo index (data/zoo.json): every model file has one entry and every entry one file, names
// are found as devices are, and the training batches it carries are sourced.
#include <filesystem>
#include <set>
#include <string>

#include "capcalc/error.hpp"
#include "capcalc/zoo.hpp"

#include "catch.hpp"
#include "test_data.hpp"

namespace {

capcalc::Zoo zoo() {
  return capcalc::load_zoo(capcalc::test::data_path("zoo.json"));
}

}  // namespace

TEST_CASE("zoo index: one entry per file of data/models, named by its stem", "[zoo_index]") {
  std::set<std::string> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(capcalc::test::data_path("models"))) {
    if (entry.path().extension() == ".json") files.insert(entry.path().stem().string());
  }
  std::set<std::string> listed;
  for (const capcalc::ZooModel& model : zoo().models) {
    CHECK(std::filesystem::is_regular_file(model.path));
    CHECK(std::filesystem::path(model.path).stem().string() == model.name);
    CHECK_FALSE(model.family.empty());
    CHECK_FALSE(model.source.empty());
    listed.insert(model.name);
  }
  CHECK(listed == files);
}

TEST_CASE("zoo index: names ignore case, '-' and '_', typos get a suggestion", "[zoo_index]") {
  const capcalc::Zoo z = zoo();
  REQUIRE(z.find("ResNet50") != nullptr);
  CHECK(z.find("ResNet50")->name == "resnet50");
  CHECK(z.find("llama2-7b-hf")->name == "llama2_7b_hf");
  CHECK(z.find("resnet5") == nullptr);
  CHECK(z.suggest("resnet5") == "resnet50");
  CHECK(z.find_file(capcalc::test::data_path("models/../models/gpt2.json"))->name == "gpt2");
  CHECK(z.find_file(capcalc::test::data_path("hardware.json")) == nullptr);
}

TEST_CASE("zoo index: the typical training batches the issue asks for, each sourced",
          "[zoo_index]") {
  const capcalc::Zoo z = zoo();
  // He et al. 2015 (ResNet): mini-batch 256; Devlin et al. 2018 (BERT) fine-tuning: 32;
  // transformers' TrainingArguments default 8 sequences of GPT-2's 1,024 positions.
  CHECK(z.find("resnet50")->training_batch->dims.at("batch") == 256);
  CHECK(z.find("bert_base")->training_batch->dims.at("batch") == 32);
  CHECK(z.find("gpt2")->training_batch->dims.at("batch") == 8);
  CHECK(z.find("gpt2")->training_batch->dims.at("seq") == 1024);
  CHECK_FALSE(z.find("llama2_7b")->training_batch.has_value());
  for (const capcalc::ZooModel& model : z.models) {
    if (model.training_batch) CHECK_FALSE(model.training_batch->source.empty());
  }
}

TEST_CASE("zoo index: a bad entry is named by its JSON pointer", "[zoo_index][errors]") {
  REQUIRE_THROWS_WITH(
      capcalc::parse_zoo(R"({"schema_version": 1, "models": [{"name": "a", "file": "models/a.json",
          "family": "x", "source": "y", "training_batch": {"dims": {"seq": 8}, "source": "z"}}]})",
                         "zoo.json"),
      "zoo.json:/models/0/training_batch/dims: needs \"batch\"");
  REQUIRE_THROWS_WITH(
      capcalc::parse_zoo(R"({"schema_version": 1, "models": [{"name": "a", "file": "models/a.json",
          "famly": "x", "source": "y"}]})",
                         "zoo.json"),
      Catch::Matchers::StartsWith("zoo.json:/models/0/famly: unknown key \"famly\""));
}

TEST_CASE("zoo rows: counts at the file's dims, per sample", "[zoo_index]") {
  const capcalc::Zoo z = zoo();
  capcalc::Zoo one;
  one.models.push_back(*z.find("resnet50"));
  const std::vector<capcalc::ZooRow> rows = capcalc::zoo_rows(one);
  REQUIRE(rows.size() == 1);
  // torchvision's ResNet-50: 25,557,032 parameters, 4.09 G MACs at 224x224 (zoo_test.cpp).
  CHECK(rows[0].params == 25557032);
  CHECK(rows[0].macs_per_sample == 4089184256);
  CHECK(rows[0].dims.at("size") == 224);
  CHECK_THAT(capcalc::render_zoo_csv(rows),
             ContainsSubstring("resnet50,ResNet,25557032,4089184256,batch=1 size=224,batch=256,"));
}
