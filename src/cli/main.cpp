// capcalc's entry point: only the error boundary. Exit codes: 0 ok, 1 a `check` budget was
// exceeded, 2 bad input or usage, 3 internal error.
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/hardware.hpp"

#include "commands.hpp"
#include "usage.hpp"

namespace {

constexpr int kExitBadInput = 2;       // Bad file, flag or value; the message says where.
constexpr int kExitInternalError = 3;  // A capcalc bug; please report it.

// `capcalc --version`: the program and the hardware table it would use, since predictions
// change with the table's figures.
std::string version_text() {
  std::string text = "capcalc " CAPCALC_VERSION "\n";
  const std::string path = capcalc::cli::hardware_path("");
  try {
    const capcalc::HardwareTable table = capcalc::load_hardware(path);
    text += "hardware table " + table.version + " (updated " + table.updated + ", " +
            std::to_string(table.devices.size()) + " devices): " + path;
  } catch (const capcalc::Error& e) {
    text += std::string("hardware table: not readable: ") + e.what();
  }
  return text;
}

int run(int argc, char** argv) {
  CLI::App app{"capcalc: compute, memory and time of neural networks on CPUs, GPUs and TPUs"};
  app.set_version_flag("--version", version_text,
                       "Print capcalc's version and its hardware table's");
  app.require_subcommand(1);
  capcalc::cli::add_estimate_command(app);
  capcalc::cli::add_layers_command(app);
  capcalc::cli::add_hw_command(app);
  capcalc::cli::add_runtimes_command(app);
  capcalc::cli::add_calibrate_command(app);
  capcalc::cli::add_probe_command(app);
  int exit_code = 0;
  capcalc::cli::add_validate_command(app, exit_code);
  capcalc::cli::add_compare_command(app);
  capcalc::cli::add_check_command(app, exit_code);
  capcalc::cli::add_roofline_command(app);
  capcalc::cli::add_report_command(app);
  capcalc::cli::add_serve_command(app, exit_code);
  capcalc::cli::add_plan_command(app);
  capcalc::cli::add_scale_command(app);
  capcalc::cli::add_models_command(app);
  capcalc::cli::reject_empty_list_items(app, argc, argv);
  // CLI11 prints the version as soon as it meets the flag, whatever follows it.
  if (argc > 2 && std::string_view(argv[1]) == "--version") {
    throw capcalc::Error({}, fmt::format("--version takes no arguments (got \"{}\")",
                                         capcalc::Error::verbatim(argv[2])));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help or --version: printed on stdout.
  } catch (const CLI::ParseError& e) {
    throw capcalc::cli::usage_error(app, e);  // One line, like every other bad input.
  } catch (const std::overflow_error&) {
    // A total past 64 bits (the library places the counts of single layers itself): the flags
    // that scale counts are its cause, else the model.
    throw capcalc::Error({}, capcalc::cli::count_overflow_message(app));
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const capcalc::Error& e) {
    const bool color = capcalc::cli::color_enabled(stderr);
    std::fprintf(stderr, "capcalc: %serror:%s %s\n", color ? "\x1b[1;31m" : "",
                 color ? "\x1b[0m" : "", e.what_with(capcalc::cli::flag_for_key).c_str());
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "capcalc: internal error: %s\n", e.what());
    return kExitInternalError;
  } catch (...) {
    std::fputs("capcalc: internal error: unknown exception\n", stderr);
    return kExitInternalError;
  }
}
