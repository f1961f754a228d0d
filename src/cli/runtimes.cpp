#include <memory>

#include <fmt/format.h>

#include "capcalc/report.hpp"

#include "commands.hpp"
#include "formats.hpp"
#include "usage.hpp"

namespace capcalc::cli {
namespace {

struct RuntimesOptions {
  std::vector<std::string> files;
  std::string format;  // --format; add_format_option sets the default (formats.hpp).
  std::string runtime;
};

void run_list(const RuntimesOptions& options) {
  const RuntimeTable table = load_runtime_table(options.files);
  fmt::print("{}", runtimes_list_formats().render(options.format, table));
}

void run_show(const RuntimesOptions& options) {
  const RuntimeTable table = load_runtime_table(options.files);
  const Runtime& runtime = table.get(options.runtime);
  fmt::print("{}", runtimes_show_formats().render(options.format, runtime));
}

void add_common(CLI::App& sub, RuntimesOptions& options) {
  sub.add_option("--runtime-file", options.files,
                 "Extra runtimes or overrides (same id replaces); repeatable");
}

}  // namespace

void add_runtimes_command(CLI::App& app) {
  CLI::App* runtimes = app.add_subcommand("runtimes", "The runtime table: list runtimes, show one");
  runtimes->require_subcommand(1);

  auto list = std::make_shared<RuntimesOptions>();
  CLI::App* list_cmd = runtimes->add_subcommand("list", "One row per runtime");
  add_common(*list_cmd, *list);
  add_format_option(*list_cmd, list->format, runtimes_list_formats());
  list_cmd->callback([list] { run_list(*list); });

  auto show = std::make_shared<RuntimesOptions>();
  CLI::App* show_cmd =
      runtimes->add_subcommand("show", "One runtime: its profile, kernels, notes and sources");
  show_cmd->add_option("runtime", show->runtime, "Runtime id or alias")->required();
  add_common(*show_cmd, *show);
  add_format_option(*show_cmd, show->format, runtimes_show_formats());
  show_cmd->callback([show] { run_show(*show); });
}

}  // namespace capcalc::cli
