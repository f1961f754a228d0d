// The model zoo: the models shipped in data/models/, indexed by data/zoo.json with their family,
// their source and, where one is published, the batch they are typically trained at. The CLI
// finds a model by name here (`capcalc estimate resnet50`) and `capcalc models list` prints it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace capcalc {

/// The dimensions a model is typically trained at, with where that comes from.
struct TrainingBatch {
  std::map<std::string, std::int64_t> dims;  ///< Always "batch"; "seq" for language models.
  std::string source;                        ///< Paper, library default or model card.
};

/// One model of the zoo.
struct ZooModel {
  std::string name;    ///< How users name it: the file's stem, e.g. "resnet50".
  std::string path;    ///< The model file: the index's directory + its "file".
  std::string family;  ///< e.g. "ResNet", "Llama".
  std::string source;  ///< Where the architecture comes from (a URL where there is one).
  std::optional<TrainingBatch> training_batch;
};

/// The zoo index.
struct Zoo {
  std::vector<ZooModel> models;

  /// The model `name` names (case, '-', '_' and ' ' ignored, as for devices); nullptr if none.
  const ZooModel* find(std::string_view name) const;
  /// The model whose file `path` is (the same file, however it is spelt); nullptr if none.
  const ZooModel* find_file(const std::string& path) const;
  /// The name closest to `name`, if close enough to be a typo.
  std::optional<std::string> suggest(std::string_view name) const;
};

/// Parses an index (data/schema/zoo.schema.json); model paths are relative to `file`'s
/// directory. Throws capcalc::Error at the JSON pointer of a bad entry.
Zoo parse_zoo(std::string_view text, const std::string& file);
Zoo load_zoo(const std::string& path);

/// One row of `capcalc models list`: the model loaded at its file's default dimensions.
struct ZooRow {
  const ZooModel* model = nullptr;
  std::int64_t params = 0;
  std::int64_t active_params = 0;    ///< Of params, used per token (= params but for MoE).
  std::int64_t macs_per_sample = 0;  ///< Forward MACs per sample (1 MAC = 2 FLOPs).
  std::map<std::string, std::int64_t> dims;
};

/// Loads every model of the zoo and counts it (throws capcalc::Error naming a bad file).
std::vector<ZooRow> zoo_rows(const Zoo& zoo);

/// `capcalc models list`: a table, JSON (data/schema/models-output.schema.json) or CSV.
std::string render_zoo_text(const std::vector<ZooRow>& rows);
std::string render_zoo_json(const std::vector<ZooRow>& rows);
std::string render_zoo_csv(const std::vector<ZooRow>& rows);

}  // namespace capcalc
