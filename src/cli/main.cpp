// capcalc's entry point: only the error boundary. Exit codes: 0 ok, 1 a `check` budget was
// exceeded, 2 bad input or usage, 3 internal error.
#include <cstdio>
#include <exception>

#include "capcalc/error.hpp"

#include "commands.hpp"

namespace {

constexpr int kExitBadInput = 2;       // Bad file, flag or value; the message says where.
constexpr int kExitInternalError = 3;  // A capcalc bug; please report it.

int run(int argc, char** argv) {
  CLI::App app{"capcalc: compute, memory and time of neural networks on CPUs, GPUs and TPUs"};
  app.set_version_flag("--version", "capcalc " CAPCALC_VERSION);
  app.require_subcommand(1);
  capcalc::cli::add_estimate_command(app);
  capcalc::cli::add_layers_command(app);
  capcalc::cli::add_hw_command(app);
  capcalc::cli::add_calibrate_command(app);
  capcalc::cli::add_probe_command(app);
  int exit_code = 0;
  capcalc::cli::add_validate_command(app, exit_code);
  capcalc::cli::add_compare_command(app);
  capcalc::cli::add_check_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // Prints --help/--version or the usage error.
    return code == 0 ? 0 : kExitBadInput;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const capcalc::Error& e) {
    std::fprintf(stderr, "capcalc: error: %s\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "capcalc: internal error: %s\n", e.what());
    return kExitInternalError;
  } catch (...) {
    std::fputs("capcalc: internal error: unknown exception\n", stderr);
    return kExitInternalError;
  }
}
