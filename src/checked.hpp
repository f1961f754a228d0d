// Checked 64-bit integer arithmetic for counts: an overflow throws, it never wraps.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

namespace capcalc {

/// Thrown by the checked helpers; callers that know the place turn it into capcalc::Error. Those
/// that escape reach users as std::overflow_error, the public type (capcalc/error.hpp).
class OverflowError : public std::overflow_error {
 public:
  OverflowError() : std::overflow_error("count does not fit in a 64-bit integer") {}
};

/// "a count does not fit in a 64-bit integer", and the dims the caller set, which are the
/// likely cause: " (with batch = 1099511627776)".
inline std::string overflow_message(const std::map<std::string, std::int64_t>& set_dims) {
  std::string message = "a count does not fit in a 64-bit integer";
  std::string dims;
  for (const auto& [name, value] : set_dims)
    dims += (dims.empty() ? "" : ", ") + name + " = " + std::to_string(value);
  return dims.empty() ? message : message + " (with " + dims + ")";
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) throw OverflowError();
  return result;
}

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) throw OverflowError();
  return result;
}

template <typename... Rest>
std::int64_t checked_mul(std::int64_t a, std::int64_t b, Rest... rest) {
  return checked_mul(checked_mul(a, b), rest...);
}

/// A double as a 64-bit integer, clamped to the type's range (NaN: 0); converting a double
/// outside it is undefined behaviour. For figures derived from user values (a maximum batch,
/// a number of devices, a rounded figure to print), never for counts.
inline std::int64_t clamp_to_int64(double value) {
  if (!(value == value)) return 0;
  if (value >= 9223372036854775807.0) return INT64_MAX;  // The double is 2^63.
  if (value <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<std::int64_t>(value);
}

}  // namespace capcalc
