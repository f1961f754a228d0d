// `capcalc models list`: the zoo as a table, JSON or CSV.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/units.hpp"
#include "capcalc/zoo.hpp"

#include "table.hpp"

namespace capcalc {
namespace {

using Json = nlohmann::ordered_json;

// "seq 2048" or "size 224": the dimensions the counts were taken at, batch left out (per sample).
std::string dims_text(const std::map<std::string, std::int64_t>& dims) {
  std::string text;
  for (const auto& [name, value] : dims) {
    if (name == "batch") continue;
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", name, format_grouped(value));
  }
  return text;
}

Json dims_json(const std::map<std::string, std::int64_t>& dims) {
  Json out = Json::object();
  for (const auto& [name, value] : dims)
    out[name] = value;
  return out;
}

}  // namespace

std::string render_zoo_text(const std::vector<ZooRow>& rows) {
  TextTable table;
  table.add_column("name", TextTable::Align::kLeft);
  table.add_column("family", TextTable::Align::kLeft);
  table.add_column("params", TextTable::Align::kRight);
  table.add_column("MACs", TextTable::Align::kRight);
  table.add_column("at", TextTable::Align::kLeft);
  table.add_column("train batch", TextTable::Align::kLeft);
  table.add_column("source", TextTable::Align::kLeft);
  for (const ZooRow& row : rows) {
    const ZooModel& m = *row.model;
    std::string batch;
    if (m.training_batch) {
      const auto& dims = m.training_batch->dims;
      batch = format_grouped(dims.at("batch"));
      if (auto seq = dims.find("seq"); seq != dims.end())
        batch += fmt::format(" x {}", format_grouped(seq->second));
    }
    // A mixture of experts' total with what each token uses: "46.7 G (12.9 G active)".
    std::string params = format_count(static_cast<double>(row.params));
    if (row.active_params > 0 && row.active_params < row.params) {
      params += fmt::format(" ({} active)", format_count(static_cast<double>(row.active_params)));
    }
    table.add_row({m.name, m.family, params, format_count(static_cast<double>(row.macs_per_sample)),
                   dims_text(row.dims), batch, m.source});
  }
  return table.render() +
         fmt::format(
             "{} models; MACs are forward, per sample (1 MAC = 2 FLOPs), at the dims "
             "shown. Use a name in place of a file: capcalc estimate resnet50 --gpu A100\n",
             rows.size());
}

std::string render_zoo_json(const std::vector<ZooRow>& rows) {
  Json list = Json::array();
  for (const ZooRow& row : rows) {
    const ZooModel& m = *row.model;
    Json entry;
    entry["name"] = m.name;
    entry["family"] = m.family;
    entry["file"] = m.path;
    entry["params"] = row.params;
    entry["macs"] = row.macs_per_sample;
    entry["dims"] = dims_json(row.dims);
    entry["source"] = m.source;
    if (m.training_batch) {
      entry["training_batch"] = {{"dims", dims_json(m.training_batch->dims)},
                                 {"source", m.training_batch->source}};
    }
    list.push_back(std::move(entry));
  }
  Json out;
  out["models"] = std::move(list);
  return out.dump(2) + "\n";
}

std::string render_zoo_csv(const std::vector<ZooRow>& rows) {
  std::string out = "name,family,params,macs,dims,training_batch,source\n";
  for (const ZooRow& row : rows) {
    const ZooModel& m = *row.model;
    std::string batch;
    if (m.training_batch) {
      for (const auto& [name, value] : m.training_batch->dims)
        batch += fmt::format("{}{}={}", batch.empty() ? "" : " ", name, value);
    }
    std::string dims;
    for (const auto& [name, value] : row.dims)
      dims += fmt::format("{}{}={}", dims.empty() ? "" : " ", name, value);
    out += fmt::format("{},{},{},{},{},{},{}\n", csv_field(m.name), csv_field(m.family), row.params,
                       row.macs_per_sample, csv_field(dims), csv_field(batch), csv_field(m.source));
  }
  return out;
}

}  // namespace capcalc
