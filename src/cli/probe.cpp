#include "capcalc/probe.hpp"

#include <cstdio>
#include <fcntl.h>
#include <memory>
#include <unistd.h>

#include <fmt/format.h>

#include "capcalc/error.hpp"

#include "commands.hpp"
#include "formats.hpp"
#include "output_file.hpp"
#include "usage.hpp"

namespace capcalc::cli {
namespace {

struct ProbeCliOptions {
  double seconds = 3.0;
  unsigned threads = 0;
  std::string output;
  std::string format;  // --format; add_format_option sets the default (formats.hpp).
};

void run_probe(const ProbeCliOptions& options) {
  // Fail before spending seconds measuring; append mode leaves an existing file as it is, and
  // O_NONBLOCK keeps a FIFO without a reader from blocking.
  if (!options.output.empty()) {
    const int fd = ::open(options.output.c_str(),
                          O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0) throw Error({options.output}, "cannot write file");
    ::close(fd);
  }
  ProbeOptions probe;
  probe.seconds = options.seconds;
  probe.threads = options.threads;
  const ProbeResult result = probe_machine(probe);
  // On stderr whatever the format: JSON on stdout stays a hardware file.
  for (const std::string& line : probe_noise_warnings(result))
    fmt::print(stderr, "warning: {}\n", line);
  if (!options.output.empty()) {
    write_output(options.output, render_probe_json(result));
    // The file is the hardware entry; stdout has the table if asked for.
    if (!probe_formats().is_default(options.format)) {
      fmt::print("{}", probe_formats().render(options.format, result));
    }
    fmt::print(stderr, "capcalc: wrote {}: {}; use it with --gpu local --hardware-file {}\n",
               options.output, render_probe_summary(result), options.output);
    return;
  }
  fmt::print("{}", probe_formats().render(options.format, result));
}

}  // namespace

void add_probe_command(CLI::App& app) {
  auto options = std::make_shared<ProbeCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "probe", "Measure this machine (FMA rate, memory bandwidth) as a hardware-table entry");
  number_in(sub->add_option("-s,--seconds", options->seconds, "Time budget of the whole probe"),
            0.01, 600)
      ->capture_default_str();
  whole_number(
      sub->add_option("-j,--threads", options->threads, "Threads (default: one per logical core)"),
      1, 1024);
  sub->add_option("-o,--output", options->output,
                  "Write the JSON to this file (a summary goes to stderr)");
  add_format_option(*sub, options->format, probe_formats(),
                    "stdout: the hardware table (json) or a summary for people (table)");
  sub->callback([options] { run_probe(*options); });
}

}  // namespace capcalc::cli
