#include "gates.hpp"

#include <string>

#include <fmt/format.h>

#include "usage.hpp"

namespace capcalc::cli {

void add_gate_options(CLI::App& sub, AccuracyGates& gates, std::string_view lead) {
  // A gate that nan passes can never fail: the limits are checked numbers.
  number_in(sub.add_option("--max-median-error", gates.max_median_error,
                           fmt::format("{} if the median |error| exceeds this fraction (e.g. "
                                       "0.15)",
                                       lead)),
            0);
  number_in(
      sub.add_option("--max-worst-factor", gates.max_worst_factor,
                     fmt::format("{} if any case is off by more than this factor (e.g. 2)", lead)),
      1);
  whole_number(sub.add_option("--min-within-2x", gates.min_within_2x,
                              fmt::format("{} if fewer than this many cases are within a factor "
                                          "of 2",
                                          lead)),
               0);
}

bool gates_fail(std::string_view command, const GatedFigures& figures, const AccuracyGates& gates) {
  bool failed = false;
  if (gates.max_median_error && figures.median_abs_error > *gates.max_median_error) {
    fmt::print(stderr, "capcalc: {}: median |error| {:.1f} % exceeds the limit {:.1f} %\n", command,
               100 * figures.median_abs_error, 100 * *gates.max_median_error);
    failed = true;
  }
  if (gates.max_worst_factor && figures.worst_factor > *gates.max_worst_factor) {
    fmt::print(stderr, "capcalc: {}: worst error {:.2f}x exceeds the limit {:.2f}x\n", command,
               figures.worst_factor, *gates.max_worst_factor);
    failed = true;
  }
  if (gates.min_within_2x && figures.within_2x < static_cast<std::size_t>(*gates.min_within_2x)) {
    fmt::print(stderr, "capcalc: {}: {} of {} cases within 2x, below the limit {}\n", command,
               figures.within_2x, figures.cases, *gates.min_within_2x);
    failed = true;
  }
  return failed;
}

}  // namespace capcalc::cli
