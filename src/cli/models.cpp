#include <memory>

#include <fmt/format.h>

#include "capcalc/zoo.hpp"

#include "commands.hpp"
#include "formats.hpp"
#include "usage.hpp"

namespace capcalc::cli {
namespace {

struct ModelsOptions {
  std::string format;  // --format; add_format_option sets the default (formats.hpp).
};

void run_list(const ModelsOptions& options) {
  const Zoo zoo = load_zoo(zoo_index_path());
  const std::vector<ZooRow> rows = zoo_rows(zoo);
  fmt::print("{}", models_list_formats().render(options.format, rows));
}

}  // namespace

void add_models_command(CLI::App& app) {
  CLI::App* models =
      app.add_subcommand("models", "The model zoo: models that commands take by name");
  models->require_subcommand(1);
  auto list = std::make_shared<ModelsOptions>();
  CLI::App* list_cmd =
      models->add_subcommand("list", "One row per zoo model: family, params, MACs, source");
  add_format_option(*list_cmd, list->format, models_list_formats());
  list_cmd->callback([list] { run_list(*list); });
}

}  // namespace capcalc::cli
