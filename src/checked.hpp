// Checked 64-bit integer arithmetic for counts: an overflow throws, it never wraps.
#pragma once

#include <cstdint>
#include <stdexcept>

namespace capcalc {

/// Thrown by the checked helpers; callers that know the place turn it into capcalc::Error.
class OverflowError : public std::overflow_error {
 public:
  OverflowError() : std::overflow_error("count does not fit in a 64-bit integer") {}
};

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

}  // namespace capcalc
