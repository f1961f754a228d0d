#include <memory>

#include <fmt/format.h>

#include "capcalc/zoo.hpp"

#include "commands.hpp"
#include "usage.hpp"

namespace capcalc::cli {
namespace {

struct ModelsOptions {
  std::string format = "table";
};

void run_list(const ModelsOptions& options) {
  const Zoo zoo = load_zoo(zoo_index_path());
  const std::vector<ZooRow> rows = zoo_rows(zoo);
  std::string text;
  if (options.format == "json") {
    text = render_zoo_json(rows);
  } else if (options.format == "csv") {
    text = render_zoo_csv(rows);
  } else {
    text = render_zoo_text(rows);
  }
  fmt::print("{}", text);
}

}  // namespace

void add_models_command(CLI::App& app) {
  CLI::App* models =
      app.add_subcommand("models", "The model zoo: models that commands take by name");
  models->require_subcommand(1);
  auto list = std::make_shared<ModelsOptions>();
  CLI::App* list_cmd =
      models->add_subcommand("list", "One row per zoo model: family, params, MACs, source");
  one_of(list_cmd->add_option("-f,--format", list->format, "Output format"),
         {"table", "json", "csv"})
      ->capture_default_str();
  list_cmd->callback([list] { run_list(*list); });
}

}  // namespace capcalc::cli
