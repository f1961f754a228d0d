#include "capcalc/zoo.hpp"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/error.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

#include "input_file.hpp"
#include "json_view.hpp"
#include "spellcheck.hpp"

namespace capcalc {
namespace {

const std::vector<std::string_view> kIndexKeys = {"$schema", "schema_version", "models"};
const std::vector<std::string_view> kModelKeys = {"name", "file", "family", "source",
                                                  "training_batch"};
const std::vector<std::string_view> kBatchKeys = {"dims", "source"};

TrainingBatch parse_training_batch(const JsonView& entry) {
  reject_unknown_keys(entry, kBatchKeys, "a training batch");
  TrainingBatch batch;
  const JsonView dims = entry.at("dims");
  dims.expect_object();
  for (const auto& item : dims.json().items()) {
    batch.dims[item.key()] = dims.at(item.key()).as_positive_int();
  }
  if (batch.dims.count("batch") == 0) dims.fail("needs \"batch\"");
  batch.source = entry.at("source").as_string();
  return batch;
}

}  // namespace

const ZooModel* Zoo::find(std::string_view name) const {
  const std::string key = lookup_key(name);
  for (const ZooModel& model : models) {
    if (lookup_key(model.name) == key) return &model;
  }
  return nullptr;
}

const ZooModel* Zoo::find_file(const std::string& path) const {
  for (const ZooModel& model : models) {
    std::error_code error;
    if (std::filesystem::equivalent(path, model.path, error)) return &model;
  }
  return nullptr;
}

std::optional<std::string> Zoo::suggest(std::string_view name) const {
  std::vector<std::string_view> names;
  names.reserve(models.size());
  for (const ZooModel& model : models)
    names.push_back(model.name);
  return closest_match(name, names);
}

Zoo parse_zoo(std::string_view text, const std::string& file) {
  const nlohmann::json document = parse_json_text(text, file);
  const JsonView root(document, file);
  reject_unknown_keys(root, kIndexKeys, "the zoo index");
  if (root.at("schema_version").as_integer() != 1) {
    root.at("schema_version").fail("this capcalc reads schema_version 1");
  }
  const std::string dir = std::filesystem::path(file).parent_path().string();
  Zoo zoo;
  const JsonView list = root.at("models");
  for (std::size_t i = 0; i < list.array_size(); ++i) {
    const JsonView entry = list.at(i);
    reject_unknown_keys(entry, kModelKeys, "a zoo entry");
    ZooModel model;
    model.name = entry.at("name").as_string();
    if (zoo.find(model.name) != nullptr) {
      entry.at("name").fail(fmt::format("\"{}\" names two models", model.name));
    }
    const std::string relative = entry.at("file").as_string();
    model.path = dir.empty() ? relative : dir + "/" + relative;
    model.family = entry.at("family").as_string();
    model.source = entry.at("source").as_string();
    if (auto batch = entry.find("training_batch"))
      model.training_batch = parse_training_batch(*batch);
    zoo.models.push_back(std::move(model));
  }
  return zoo;
}

Zoo load_zoo(const std::string& path) {
  return parse_zoo(read_input_file(path), path);
}

std::vector<ZooRow> zoo_rows(const Zoo& zoo) {
  std::vector<ZooRow> rows;
  rows.reserve(zoo.models.size());
  for (const ZooModel& model : zoo.models) {
    const Graph graph = load_model(model.path);
    const GraphTotals totals = graph_totals(graph);
    ZooRow row;
    row.model = &model;
    row.params = totals.params;
    row.active_params = totals.active_params;
    row.macs_per_sample = totals.macs / graph.batch;
    row.dims = graph.dims;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace capcalc
