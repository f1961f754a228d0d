// `capcalc layers`: one row per layer as a table, JSON or CSV.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/ranges.hpp"
#include "capcalc/report.hpp"
#include "capcalc/units.hpp"

#include "report_json.hpp"
#include "report_parts.hpp"
#include "report_words.hpp"
#include "table.hpp"

namespace capcalc {
namespace {

using Align = TextTable::Align;
using Json = nlohmann::ordered_json;

}  // namespace

std::string render_layers_text(const ReportInput& in) {
  const Graph& g = in.graph;
  TextTable table;
  table.add_column("layer", Align::kLeft);
  table.add_column("op", Align::kLeft);
  table.add_column("output", Align::kLeft);
  table.add_column("params", Align::kRight);
  table.add_column("MACs", Align::kRight);
  table.add_column("bytes", Align::kRight);
  table.add_column("FLOP/B", Align::kRight);
  if (in.estimate != nullptr) {
    table.add_column("time", Align::kRight);
    table.add_column("bound", Align::kLeft);
  }
  for (std::size_t i = 0; i < g.layers.size(); ++i) {
    const Layer& layer = g.layers[i];
    const LayerCounts& c = layer.counts;
    const double bytes = layer_bytes(c, in.workload.precision);
    std::vector<std::string> row{
        layer.name,
        layer.op,
        shape_to_string(layer.output),
        c.params > 0 ? format_count(static_cast<double>(c.params)) : "-",
        c.macs > 0 ? format_count(static_cast<double>(c.macs)) : "-",
        layer.view ? "-" : format_bytes(bytes),
        bytes > 0 ? fmt::format("{:.1f}", static_cast<double>(c.flops()) / bytes) : "-"};
    if (in.estimate != nullptr) {
      const LayerEstimate& e = in.estimate->layers[i];
      row.push_back(layer.view ? "-" : format_duration(e.time_s));
      row.emplace_back(bound_name(e.bound));
    }
    table.add_row(std::move(row));
  }
  const GraphTotals& t = in.totals;
  std::string out =
      fmt::format("{}: {}, batch {}, {} (bytes at {})\n", g.name,
                  counted(static_cast<std::int64_t>(g.layers.size()), "layer"), g.batch,
                  in.device ? in.device->name : "no device", precision_name(in.workload.precision));
  out += table.render();
  out += fmt::format("total: {} params, {} MACs, {} FLOPs\n", format_grouped(t.params),
                     format_grouped(t.macs), format_grouped(t.flops));
  return out;
}

std::string render_layers_json(const ReportInput& in) {
  Json doc;
  doc["schema_version"] = kOutputSchemaVersion;
  doc["model"] = model_json(in);
  doc["precision"] = std::string(precision_name(in.workload.precision));
  if (in.device != nullptr) doc["device"] = device_json(*in.device);
  doc["layers"] = layers_json(in);
  return json_text(doc);
}

std::string render_layers_csv(const ReportInput& in) {
  std::string out = "name,op,output_shape,params,macs,flops,bytes";
  if (in.estimate != nullptr) out += ",time_s,bound";
  out += "\n";
  for (std::size_t i = 0; i < in.graph.layers.size(); ++i) {
    const Layer& layer = in.graph.layers[i];
    const LayerCounts& c = layer.counts;
    // Shapes are written 1x3x224x224, so only names may need quoting.
    out += fmt::format("{},{},{},{},{},{},{:.0f}", csv_field(layer.name), layer.op,
                       fmt::join(layer.output, "x"), c.params, c.macs, c.flops(),
                       layer_bytes(c, in.workload.precision));
    if (in.estimate != nullptr) {
      out += fmt::format(",{},{}", csv_number(in.estimate->layers[i].time_s),
                         bound_name(in.estimate->layers[i].bound));
    }
    out += "\n";
  }
  return out;
}

}  // namespace capcalc
