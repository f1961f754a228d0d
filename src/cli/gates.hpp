// The accuracy gates of `capcalc validate` and `capcalc serve --validate`: limits on a
// validation set's median error, worst factor and cases within 2x, each failing one with a
// line on stderr and exit code 1 (CI's regression guard).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <CLI/CLI.hpp>

namespace capcalc::cli {

/// The limits a command was given; unset ones are not checked.
struct AccuracyGates {
  std::optional<double> max_median_error;  ///< --max-median-error: a fraction.
  std::optional<double> max_worst_factor;  ///< --max-worst-factor: at least 1.
  std::optional<std::int64_t> min_within_2x;
  bool any() const { return max_median_error || max_worst_factor || min_within_2x; }
};

/// What the gates are checked against.
struct GatedFigures {
  double median_abs_error = 0;
  double worst_factor = 1;
  std::size_t within_2x = 0;
  std::size_t cases = 0;
};

/// --max-median-error, --max-worst-factor and --min-within-2x; `lead` begins each help text
/// ("Exit 1", or "--validate: exit 1" where the gates are for one mode of the command).
void add_gate_options(CLI::App& sub, AccuracyGates& gates, std::string_view lead);

/// Prints "capcalc: COMMAND: ..." for each limit the figures break; true if any.
bool gates_fail(std::string_view command, const GatedFigures& figures, const AccuracyGates& gates);

}  // namespace capcalc::cli
