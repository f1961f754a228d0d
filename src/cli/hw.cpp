#include <memory>

#include <fmt/format.h>

#include "capcalc/report.hpp"

#include "commands.hpp"
#include "usage.hpp"

namespace capcalc::cli {
namespace {

struct HwOptions {
  HardwareArgs hardware;
  std::string type;
  std::string format = "table";
  std::string device;
};

void run_list(const HwOptions& options) {
  const HardwareTable table = load_table(options.hardware);
  std::vector<const Device*> devices;
  for (const Device& d : table.devices) {
    if (options.type.empty() || device_type_name(d.type) == options.type) devices.push_back(&d);
  }
  std::string text;
  if (options.format == "json") {
    text = render_hardware_json(table, devices);
  } else if (options.format == "csv") {
    text = render_hardware_csv(devices);
  } else {
    text = render_hardware_text(devices);
  }
  fmt::print("{}", text);
}

void run_show(const HwOptions& options) {
  const HardwareTable table = load_table(options.hardware);
  const Device& device = table.get(options.device);
  const PerformanceParams params = table.performance_for(device);
  fmt::print("{}", options.format == "json" ? render_device_json(device, params)
                                            : render_device_text(device, params));
}

}  // namespace

void add_hw_command(CLI::App& app) {
  CLI::App* hw = app.add_subcommand("hw", "The hardware table: list devices, show one");
  hw->require_subcommand(1);

  auto list = std::make_shared<HwOptions>();
  CLI::App* list_cmd = hw->add_subcommand("list", "One row per device");
  add_hardware_options(*list_cmd, list->hardware);
  one_of(list_cmd->add_option("--type", list->type, "Only this type"),
         {"cpu", "gpu", "tpu", "accelerator"});
  one_of(list_cmd->add_option("-f,--format", list->format, "Output format"),
         {"table", "json", "csv"})
      ->capture_default_str();
  list_cmd->callback([list] { run_list(*list); });

  auto show = std::make_shared<HwOptions>();
  CLI::App* show_cmd = hw->add_subcommand("show", "Every figure of one device and its sources");
  show_cmd->add_option("device", show->device, "Device id or alias")->required();
  add_hardware_options(*show_cmd, show->hardware);
  one_of(show_cmd->add_option("-f,--format", show->format, "Output format"), {"table", "json"})
      ->capture_default_str();
  show_cmd->callback([show] { run_show(*show); });
}

}  // namespace capcalc::cli
