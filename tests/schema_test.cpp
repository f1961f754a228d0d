// The published schemas against the tables they describe, so that the two cannot drift apart.
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "capcalc/model.hpp"
#include "capcalc/validate.hpp"

#include "catch.hpp"
#include "test_data.hpp"

namespace {

nlohmann::json read_schema(const std::string& name) {
  std::ifstream file(capcalc::test::data_path("schema/" + name));
  REQUIRE(file);
  std::stringstream text;
  text << file.rdbuf();
  return nlohmann::json::parse(text.str());
}

}  // namespace

// Each way round: an operator added to kOps (src/ops.cpp) but not to the schema would make valid
// model files fail validation; one left in the schema after it left the table would let editors
// accept a model that capcalc rejects.
TEST_CASE("schema: the model schema's operator enum is the operator table", "[schema][ops]") {
  const nlohmann::json schema = read_schema("model.schema.json");
  const nlohmann::json& enum_json =
      schema.at("$defs").at("layer").at("properties").at("op").at("enum");
  std::set<std::string> in_schema;
  for (const nlohmann::json& name : enum_json)
    in_schema.insert(name.get<std::string>());
  CHECK(in_schema.size() == enum_json.size());  // No name twice.

  std::set<std::string> in_table;
  for (std::string_view name : capcalc::operator_names())
    in_table.emplace(name);
  REQUIRE(in_table.size() > 30);  // The table was read, not an empty list.

  for (const std::string& name : in_table) {
    INFO("operator \"" << name << "\" is in src/ops.cpp's table, not in model.schema.json");
    CHECK(in_schema.count(name) == 1);
  }
  for (const std::string& name : in_schema) {
    INFO("operator \"" << name << "\" is in model.schema.json, not in src/ops.cpp's table");
    CHECK(in_table.count(name) == 1);
  }
}

// The measurement reader takes what measurements.schema.json allows for "per", and nothing else:
// a misspelt basis once read as "total" without a word.
TEST_CASE("schema: the measurement reader and schema agree on \"per\"", "[schema][validate]") {
  const nlohmann::json schema = read_schema("measurements.schema.json");
  const nlohmann::json& allowed =
      schema.at("$defs").at("case").at("properties").at("per").at("enum");
  const auto file_with = [](const nlohmann::json& per) {
    nlohmann::json c = {{"id", "x"},           {"model", "resnet50.json"},
                        {"device", "a100"},    {"precision", "fp32"},
                        {"mode", "inference"}, {"metric", "latency_s"},
                        {"value", 1},          {"source", "s"},
                        {"quote", "q"},        {"per", per}};
    return nlohmann::json{{"schema_version", 1}, {"cases", {c}}}.dump();
  };
  std::set<std::string> strings;
  for (const nlohmann::json& per : allowed) {
    const auto cases = capcalc::parse_measurements(file_with(per), "m.json");
    REQUIRE(cases.size() == 1);
    CHECK(cases[0].per_device == (per == "device"));
    if (per.is_string()) strings.insert(per.get<std::string>());
  }
  CHECK(strings == std::set<std::string>{"total", "device"});
  REQUIRE_THROWS_WITH(capcalc::parse_measurements(file_with("devices"), "m.json"),
                      "m.json:/cases/0/per: expected \"total\" or \"device\", got \"devices\"; did "
                      "you mean \"device\"?");
}
