// Integer expressions in model files: "seq", "4 * width", "hidden / heads", "(h + 2) // 2".
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace capcalc {

/// The names an expression may use (block args, model dims).
class NameScope {
 public:
  virtual ~NameScope() = default;
  virtual std::optional<std::int64_t> lookup(std::string_view name) const = 0;
  virtual std::vector<std::string> names() const = 0;
};

/// A bad expression; the caller adds the location.
class ExpressionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Evaluates `text` with checked 64-bit arithmetic. Operators: + - * (binary and unary minus),
/// `/` exact division (an error if it leaves a remainder), `//` floor division, `%`, and
/// parentheses. Throws ExpressionError, OverflowError.
std::int64_t evaluate_expression(std::string_view text, const NameScope& scope);

}  // namespace capcalc
