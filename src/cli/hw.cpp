#include <memory>

#include <fmt/format.h>

#include "capcalc/report.hpp"

#include "commands.hpp"
#include "formats.hpp"
#include "usage.hpp"

namespace capcalc::cli {
namespace {

struct HwOptions {
  HardwareArgs hardware;
  std::string type;
  std::string format;  // --format; add_format_option sets the default (formats.hpp).
  std::string device;
};

void run_list(const HwOptions& options) {
  const HardwareTable table = load_table(options.hardware);
  std::vector<const Device*> devices;
  for (const Device& d : table.devices) {
    if (options.type.empty() || device_type_name(d.type) == options.type) devices.push_back(&d);
  }
  fmt::print("{}", hw_list_formats().render(options.format, {table, devices}));
}

void run_show(const HwOptions& options) {
  const HardwareTable table = load_table(options.hardware);
  const Device& device = table.get(options.device);
  const PerformanceParams params = table.performance_for(device);
  fmt::print("{}", hw_show_formats().render(options.format, {device, params}));
}

}  // namespace

void add_hw_command(CLI::App& app) {
  CLI::App* hw = app.add_subcommand("hw", "The hardware table: list devices, show one");
  hw->require_subcommand(1);

  auto list = std::make_shared<HwOptions>();
  CLI::App* list_cmd = hw->add_subcommand("list", "One row per device");
  add_hardware_options(*list_cmd, list->hardware);
  one_of(list_cmd->add_option("--type", list->type, "Only this type"), device_type_names());
  add_format_option(*list_cmd, list->format, hw_list_formats());
  list_cmd->callback([list] { run_list(*list); });

  auto show = std::make_shared<HwOptions>();
  CLI::App* show_cmd = hw->add_subcommand("show", "Every figure of one device and its sources");
  show_cmd->add_option("device", show->device, "Device id or alias")->required();
  add_hardware_options(*show_cmd, show->hardware);
  add_format_option(*show_cmd, show->format, hw_show_formats());
  show_cmd->callback([show] { run_show(*show); });
}

}  // namespace capcalc::cli
