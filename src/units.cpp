#include "capcalc/units.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>

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
  while (std::fabs(scaled) >= 999.5 && i + 1 < kPrefixes.size()) {
    scaled /= 1000;
    ++i;
  }
  std::string prefix = kPrefixes[i];
  const std::string separator = unit.empty() && prefix.empty() ? "" : " ";
  return three_digits(scaled) + separator + prefix + unit;
}

}  // namespace

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

std::string format_count(double count) { return with_prefix(count, ""); }

std::string format_bytes(double bytes) {
  if (std::fabs(bytes) < 1000) return fmt::format("{:.0f} B", bytes);
  return with_prefix(bytes, "B");
}

std::string format_rate(double per_second, const std::string& unit) {
  return with_prefix(per_second, unit);
}

std::string format_grouped(std::int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return value < 0 ? "-" + out : out;
}

}  // namespace capcalc
