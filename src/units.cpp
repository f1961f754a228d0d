#include "capcalc/units.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "capcalc/error.hpp"

#include "checked.hpp"
#include "spellcheck.hpp"

namespace capcalc {
namespace {

// Three significant digits: 1.23, 12.3, 123.
std::string three_digits(double value) {
  const double magnitude = std::fabs(value);
  if (magnitude >= 100 || magnitude == 0) return fmt::format("{:.0f}", value);
  if (magnitude >= 10) return fmt::format("{:.1f}", value);
  return fmt::format("{:.2f}", value);
}

std::string with_prefix(double value, const std::string& unit) {
  static constexpr std::array<const char*, 7> kPrefixes = {"", "k", "M", "G", "T", "P", "E"};
  std::size_t i = 0;
  double scaled = value;
  while (std::isfinite(scaled) && std::fabs(scaled) >= 999.5 && i + 1 < kPrefixes.size()) {
    scaled /= 1000;
    ++i;
  }
  std::string prefix = kPrefixes[i];
  const std::string separator = unit.empty() && prefix.empty() ? "" : " ";
  return three_digits(scaled) + separator + prefix + unit;
}

// One unit a parser accepts and its factor to the base unit.
struct UnitFactor {
  std::string_view unit;
  double factor;
};

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

[[noreturn]] void bad_quantity(std::string_view what, std::string_view text,
                               std::string_view expected) {
  throw Error({}, fmt::format("invalid {} \"{}\": expected {}", what, text, expected));
}

// A bare number where a unit is needed: "16 has no unit: write 16GB or 16GiB". `first` and
// `second` are the fixes to suggest, {} standing for the number as written.
[[noreturn]] void no_unit(std::string_view text, std::string_view first, std::string_view second) {
  const std::string number(trim(text));
  throw Error({}, fmt::format("{} has no unit: write {} or {}", number,
                              fmt::format(fmt::runtime(first), number),
                              fmt::format(fmt::runtime(second), number)));
}

// Splits "20 ms" into 20 and "ms". The number is digits with an optional fraction and
// exponent; strtod alone would also take "inf", "nan" and hexadecimal.
std::pair<double, std::string_view> split_number(std::string_view what, std::string_view text,
                                                 std::string_view expected) {
  const std::string_view trimmed = trim(text);
  std::size_t i = 0;
  std::size_t digits = 0;
  const auto scan_digits = [&] {
    while (i < trimmed.size() && std::isdigit(static_cast<unsigned char>(trimmed[i]))) {
      ++i;
      ++digits;
    }
  };
  scan_digits();
  if (i < trimmed.size() && trimmed[i] == '.') {
    ++i;
    scan_digits();
  }
  if (digits == 0) bad_quantity(what, text, expected);
  // An exponent only if digits follow: "5e" is not a number, "1e9" is.
  if (i < trimmed.size() && (trimmed[i] == 'e' || trimmed[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < trimmed.size() && (trimmed[j] == '+' || trimmed[j] == '-')) ++j;
    if (j < trimmed.size() && std::isdigit(static_cast<unsigned char>(trimmed[j]))) {
      i = j;
      while (i < trimmed.size() && std::isdigit(static_cast<unsigned char>(trimmed[i])))
        ++i;
    }
  }
  const std::string number(trimmed.substr(0, i));
  const double value = std::strtod(number.c_str(), nullptr);
  if (!std::isfinite(value)) bad_quantity(what, text, expected);
  return {value, trim(trimmed.substr(i))};
}

bool iequals(std::string_view a, std::string_view b);

// A unit in the wrong case ("16gb", "20MS"): units are case-sensitive (Gb would be gigabits),
// so the error names the one meant.
template <std::size_t N>
void suggest_unit_case(std::string_view what, std::string_view text, std::string_view unit,
                       const std::array<UnitFactor, N>& units) {
  if (unit.empty()) return;
  for (const UnitFactor& u : units) {
    if (!u.unit.empty() && iequals(u.unit, unit)) {
      const std::string_view trimmed = trim(text);
      const std::string fixed =
          std::string(trimmed.substr(0, trimmed.size() - unit.size())) + std::string(u.unit);
      throw Error({}, fmt::format("invalid {} \"{}\": units are case-sensitive; did you mean "
                                  "\"{}\"?",
                                  what, text, fixed));
    }
  }
}

template <std::size_t N>
double parse_with_units(std::string_view what, std::string_view text,
                        const std::array<UnitFactor, N>& units, std::string_view expected) {
  const auto [value, unit] = split_number(what, text, expected);
  for (const UnitFactor& u : units) {
    if (u.unit == unit) return value * u.factor;
  }
  suggest_unit_case(what, text, unit, units);
  bad_quantity(what, text, expected);
}

// Durations and sizes need their unit: "16" could be bytes or GB, "20" seconds or ms.
template <std::size_t N>
double parse_with_required_unit(std::string_view what, std::string_view text,
                                const std::array<UnitFactor, N>& units, std::string_view expected,
                                std::string_view fix, std::string_view other_fix) {
  if (split_number(what, text, expected).second.empty()) no_unit(text, fix, other_fix);
  return parse_with_units(what, text, units, expected);
}

constexpr std::array kCountSuffixes = {
    UnitFactor{"", 1},    UnitFactor{"k", 1e3}, UnitFactor{"K", 1e3},
    UnitFactor{"M", 1e6}, UnitFactor{"G", 1e9}, UnitFactor{"T", 1e12},
};
constexpr std::string_view kCountExpected =
    "a number with an optional suffix k, M, G or T (e.g. 100M, 1e9)";

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// A word naming what a rate counts.
struct RateWord {
  std::string_view singular;
  std::string_view plural;
  RateItem item;
};

constexpr std::array kRateWords = {
    RateWord{"token", "tokens", RateItem::kTokens},
    RateWord{"sequence", "sequences", RateItem::kSequences},
    RateWord{"sample", "samples", RateItem::kSamples},
    RateWord{"image", "images", RateItem::kSamples},
};
constexpr std::string_view kCountedRateExpected =
    "a count per unit of time, optionally naming what it counts (e.g. 3k tokens/s, "
    "2 sequences/min, 100 images/s, 1000/s)";

const RateWord* find_rate_word(std::string_view word) {
  for (const RateWord& w : kRateWords) {
    if (iequals(w.singular, word) || iequals(w.plural, word)) return &w;
  }
  return nullptr;
}

// "3k tokens/s" as its parts: 3, "k", tokens, "s".
struct RateParts {
  double value = 0;
  std::string_view number;                 // "3", as written.
  const UnitFactor* multiplier = nullptr;  // "k"; "" for none.
  const RateWord* word = nullptr;          // nullptr for a bare rate.
  const UnitFactor* per = nullptr;         // "s", "min" or "h".

  double per_second() const { return value * multiplier->factor / per->factor; }
};

[[noreturn]] void unknown_rate_word(std::string_view text, std::string_view word) {
  std::vector<std::string_view> known;
  for (const RateWord& w : kRateWords) {
    known.push_back(w.singular);
    known.push_back(w.plural);
  }
  if (auto guess = closest_match(word, known)) {
    throw Error({}, fmt::format("invalid rate \"{}\": unknown item \"{}\"; did you mean \"{}\"?",
                                text, word, *guess));
  }
  throw Error({}, fmt::format("invalid rate \"{}\": unknown item \"{}\"; a rate counts tokens, "
                              "sequences, samples or images (e.g. 3k tokens/s), or goes bare "
                              "(1000/s)",
                              text, word));
}

// The count's suffix and item: "", "k", "tokens", "k tokens" or "ktokens". `items`: whether
// an item may be named (parse_rate takes bare rates only).
void split_rate_count(std::string_view text, std::string_view rest, std::string_view expected,
                      bool items, RateParts& parts) {
  std::string_view word = rest;
  parts.multiplier = &kCountSuffixes[0];
  for (const UnitFactor& u : kCountSuffixes) {
    if (u.unit == rest) {
      parts.multiplier = &u;
      return;
    }
  }
  if (!items) bad_quantity("rate", text, expected);
  // A word that starts with a suffix letter ("Tokens") is a word, not tera-okens.
  if (find_rate_word(rest) == nullptr) {
    for (const UnitFactor& u : kCountSuffixes) {
      if (!u.unit.empty() && rest.substr(0, u.unit.size()) == u.unit) {
        parts.multiplier = &u;
        word = trim(rest.substr(u.unit.size()));
        break;
      }
    }
  }
  parts.word = find_rate_word(word);
  if (parts.word == nullptr) {
    // Name the word after the suffix when it is a typo of a known one ("ktokns": "tokns").
    std::vector<std::string_view> known;
    for (const RateWord& w : kRateWords) {
      known.push_back(w.plural);
    }
    unknown_rate_word(text, word != rest && closest_match(word, known) ? word : rest);
  }
}

RateParts split_rate(std::string_view text, std::string_view expected, bool items) {
  static constexpr std::array kPer = {
      UnitFactor{"s", 1},
      UnitFactor{"min", 60},
      UnitFactor{"h", 3600},
  };
  const std::string_view trimmed = trim(text);
  const std::size_t slash = trimmed.find('/');
  const std::string_view count = trim(trimmed.substr(0, slash));
  const auto [value, rest] = split_number("rate", count, expected);
  RateParts parts;
  parts.value = value;
  parts.number = trim(count.substr(0, count.size() - rest.size()));
  split_rate_count(text, rest, expected, items, parts);
  if (slash == std::string_view::npos) {
    if (parts.word == nullptr) no_unit(trimmed, "{}/s", "{}/min");
    throw Error(
        {}, fmt::format("{} has no time unit: write {}/s or {}/min", trimmed, trimmed, trimmed));
  }
  const std::string_view unit = trim(trimmed.substr(slash + 1));
  for (const UnitFactor& u : kPer) {
    if (u.unit == unit) parts.per = &u;
  }
  if (parts.per == nullptr) {
    suggest_unit_case("rate", text, unit, kPer);
    bad_quantity("rate", text, expected);
  }
  return parts;
}

}  // namespace

double parse_duration(std::string_view text, DurationScale scale) {
  static constexpr std::array kUnits = {
      UnitFactor{"ns", 1e-9},      UnitFactor{"us", 1e-6}, UnitFactor{"\u00b5s", 1e-6},
      UnitFactor{"\u03bcs", 1e-6},  // Micro sign and Greek mu.
      UnitFactor{"ms", 1e-3},      UnitFactor{"s", 1},     UnitFactor{"min", 60},
      UnitFactor{"h", 3600},       UnitFactor{"d", 86400},
  };
  const std::pair<std::string_view, std::string_view> fixes =
      scale == DurationScale::kRun        ? std::pair{"{}h", "{}d"}
      : scale == DurationScale::kInterval ? std::pair{"{}min", "{}h"}
                                          : std::pair{"{}ms", "{}s"};
  return parse_with_required_unit("duration", text, kUnits,
                                  "a number and a unit ns, us, ms, s, min, h or d (e.g. 20ms, 3d)",
                                  fixes.first, fixes.second);
}

double parse_bytes(std::string_view text) {
  static constexpr std::array kUnits = {
      UnitFactor{"B", 1},
      UnitFactor{"kB", 1e3},
      UnitFactor{"KB", 1e3},
      UnitFactor{"MB", 1e6},
      UnitFactor{"GB", 1e9},
      UnitFactor{"TB", 1e12},
      UnitFactor{"KiB", 1024.0},
      UnitFactor{"MiB", 1048576.0},
      UnitFactor{"GiB", 1073741824.0},
      UnitFactor{"TiB", 1099511627776.0},
  };
  return parse_with_required_unit("size", text, kUnits,
                                  "a number and a unit B, kB, MB, GB, TB (powers of 1000) or KiB, "
                                  "MiB, GiB, TiB (powers of 1024), e.g. 16GiB",
                                  "{}GB", "{}GiB");
}

double parse_count(std::string_view text) {
  return parse_with_units("count", text, kCountSuffixes, kCountExpected);
}

double parse_money(std::string_view text) {
  constexpr std::string_view kExpected = "an amount in US dollars (e.g. 500USD, $500)";
  std::string_view amount = trim(text);
  bool has_currency = true;
  if (!amount.empty() && amount.front() == '$') {
    amount.remove_prefix(1);
  } else if (amount.size() >= 3 && iequals(amount.substr(amount.size() - 3), "usd")) {
    amount.remove_suffix(3);
  } else {
    has_currency = false;
  }
  const auto [value, suffix] = split_number("amount", amount, kExpected);
  for (const UnitFactor& u : kCountSuffixes) {
    if (u.unit != suffix) continue;
    if (!has_currency) no_unit(amount, "{}USD", "${}");
    return value * u.factor;
  }
  bad_quantity("amount", text, kExpected);
}

double parse_rate(std::string_view text) {
  constexpr std::string_view kExpected =
      "a count per unit of time (e.g. 1000/s, 1k/s, 60/min, 3600/h)";
  return split_rate(text, kExpected, false).per_second();
}

CountedRate parse_counted_rate(std::string_view text) {
  const RateParts parts = split_rate(text, kCountedRateExpected, true);
  CountedRate rate;
  rate.per_second = parts.per_second();
  if (parts.word != nullptr) {
    rate.item = parts.word->item;
    rate.item_word = std::string(parts.word->plural);
  }
  return rate;
}

std::string rate_with_item(std::string_view text, std::string_view item_word) {
  const RateParts parts = split_rate(text, kCountedRateExpected, true);
  const std::string count = std::string(parts.number) + std::string(parts.multiplier->unit);
  if (item_word.empty()) return fmt::format("{}/{}", count, parts.per->unit);
  return fmt::format("{} {}/{}", count, item_word, parts.per->unit);
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds)) return "inf";
  const double magnitude = std::fabs(seconds);
  if (magnitude == 0) return "0 s";
  if (magnitude < 1e-6) return three_digits(seconds * 1e9) + " ns";
  if (magnitude < 1e-3) return three_digits(seconds * 1e6) + " µs";
  if (magnitude < 1) return three_digits(seconds * 1e3) + " ms";
  if (magnitude < 60) return three_digits(seconds) + " s";
  if (magnitude < 3600) return three_digits(seconds / 60) + " min";
  if (magnitude < 86400) return three_digits(seconds / 3600) + " h";
  return three_digits(seconds / 86400) + " d";
}

std::string format_count(double count) {
  return with_prefix(count, "");
}

std::string format_bytes(double bytes) {
  if (std::fabs(bytes) < 1000) return fmt::format("{:.0f} B", bytes);
  return with_prefix(bytes, "B");
}

std::string format_rate(double per_second, const std::string& unit) {
  return with_prefix(per_second, unit);
}

std::string format_grouped(std::int64_t value) {
  // The magnitude as unsigned: -INT64_MIN does not fit an int64_t.
  const auto magnitude =
      value < 0 ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
  std::string digits = std::to_string(magnitude);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return value < 0 ? "-" + out : out;
}

std::string format_amount(double value) {
  if (std::fabs(value) >= 999.5) return format_grouped(clamp_to_int64(std::round(value)));
  if (std::fabs(value) < 1 && value != 0) {
    // Three significant digits, zeros kept: 0.150, 0.0123.
    const int decimals =
        std::min(8, 2 - static_cast<int>(std::floor(std::log10(std::fabs(value)))));
    return fmt::format("{:.{}f}", value, decimals);
  }
  return three_digits(value);
}

std::string format_figure(double value) {
  const double magnitude = std::fabs(value);
  if (!std::isfinite(value)) return fmt::format("{}", value);
  if (magnitude >= 999.5) return format_grouped(clamp_to_int64(std::round(value)));
  if (magnitude == 0 || magnitude >= 1e-3) return fmt::format("{:.4g}", value);
  // Fixed point where {:.4g} would switch to an exponent: 0.0001234.
  const int decimals = std::min(15, 3 - static_cast<int>(std::floor(std::log10(magnitude))));
  std::string text = fmt::format("{:.{}f}", value, decimals);
  while (text.back() == '0')
    text.pop_back();
  return text;
}

std::string format_usd(double usd) {
  return "$" + format_amount(usd);
}

}  // namespace capcalc
