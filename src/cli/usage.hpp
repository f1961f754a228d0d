// Usage errors in capcalc's own words. Flag values are checked by the functions below instead of
// CLI11's validators, and what CLI11 itself rejects (an unknown option or command, a missing
// argument) is rewritten by usage_error(), so every usage error is one capcalc::Error line:
//   --batch must be a whole number ≥ 1 (got 0)
//   unknown option --bacth; did you mean --batch?
//   unknown command "estimat"; did you mean "estimate"?
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "capcalc/error.hpp"

namespace capcalc::cli {

// Each check takes the option just added and returns it, for chaining; a bad value throws
// capcalc::Error naming the flag while the command line is parsed, before any work is done.

/// Digits only (no sign, fraction, exponent, octal or hex), within [min, max]. The value is
/// passed on in decimal, so "010" is 10.
CLI::Option* whole_number(CLI::Option* option, std::int64_t min = 1,
                          std::int64_t max = std::numeric_limits<std::int64_t>::max());

/// A finite decimal number ("0.5", "500e6") greater than `above` and at most `max`: never
/// nan, inf or hex.
CLI::Option* number_above(CLI::Option* option, double above = 0,
                          double max = std::numeric_limits<double>::max());

/// A count above `above` and at most `max`, in decimal or with an SI suffix (parse_count: "2T",
/// "1.5M", "300k"), which reaches the option as a plain number ("2T" -> 2e12).
CLI::Option* count_above(CLI::Option* option, double above = 0,
                         double max = std::numeric_limits<double>::max());

/// A finite decimal number in [min, max].
CLI::Option* number_in(CLI::Option* option, double min,
                       double max = std::numeric_limits<double>::max());

/// One of `names`, in any case ("FP16", "Training"); the option receives the name as listed.
CLI::Option* one_of(CLI::Option* option, const std::vector<std::string_view>& names);

/// What CLI11 rejected, said as capcalc says it, naming the options of the subcommand that was
/// being parsed. `app` is the top-level application after the failed parse.
Error usage_error(const CLI::App& app, const CLI::ParseError& error);

/// Before the parse: a comma-separated value with an empty item ("--batch 1,,8", "--hw a100,")
/// is refused, naming the flag. CLI11 drops empty items of a delimited option silently.
void reject_empty_list_items(const CLI::App& app, int argc, const char* const* argv);

/// The flag that sets a library key: capcalc::Error messages name settings by key (the JSON
/// output's "dataset_size"), and the CLI reports the flag its user typed ("--dataset-size").
std::string flag_for_key(std::string_view key);

}  // namespace capcalc::cli
