#include "expr.hpp"

#include <cctype>
#include <cstdint>

#include <fmt/format.h>

#include "checked.hpp"
#include "limits.hpp"
#include "spellcheck.hpp"

namespace capcalc {
namespace {

// Recursive descent over:  expr := term (('+'|'-') term)*
//                          term := unary (('*'|'/'|'//'|'%') unary)*
//                          unary := '-' unary | primary
//                          primary := integer | name | '(' expr ')'
class Parser {
 public:
  Parser(std::string_view text, const NameScope& scope) : text_(text), scope_(scope) {}

  std::int64_t parse() {
    const std::int64_t value = expression();
    skip_space();
    if (pos_ != text_.size()) fail(fmt::format("unexpected '{}'", text_[pos_]));
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    // A long expression is shown by its start: the message stays one readable line.
    const std::string_view shown = text_.size() > 60 ? text_.substr(0, 57) : text_;
    throw ExpressionError(fmt::format("bad expression \"{}{}\": {}", shown,
                                      shown.size() < text_.size() ? "..." : "", what));
  }

  // Recursion is bounded: each level of parentheses is two calls (expression and sign), each
  // sign one.
  void enter() {
    if (++depth_ > kMaxExpressionDepth) {
      fail(
          fmt::format("nested too deeply at column {} (more than {} levels; a parenthesis counts "
                      "2)",
                      pos_ + 1, kMaxExpressionDepth));
    }
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }

  bool accept(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }

  std::int64_t expression() {
    enter();
    std::int64_t value = term();
    for (;;) {
      if (accept("+")) {
        value = checked_add(value, term());
      } else if (accept("-")) {
        const std::int64_t rhs = term();
        std::int64_t difference = 0;
        if (__builtin_sub_overflow(value, rhs, &difference)) throw OverflowError();
        value = difference;
      } else {
        break;
      }
    }
    --depth_;
    return value;
  }

  std::int64_t term() {
    std::int64_t value = unary();
    for (;;) {
      if (accept("*")) {
        value = checked_mul(value, unary());
      } else if (accept("//")) {
        const std::int64_t divisor = divisor_for(value, unary());
        std::int64_t quotient = value / divisor;
        if ((value % divisor != 0) && ((value < 0) != (divisor < 0))) --quotient;
        value = quotient;
      } else if (accept("/")) {
        const std::int64_t divisor = divisor_for(value, unary());
        if (value % divisor != 0) {
          fail(fmt::format("{} / {} is not a whole number (use // to round down)", value, divisor));
        }
        value /= divisor;
      } else if (accept("%")) {
        // Python's modulo, the partner of `//`: the result takes the divisor's sign, so that
        // (a // b) * b + a % b == a.
        const std::int64_t divisor = divisor_for(value, unary());
        std::int64_t remainder = value % divisor;
        if (remainder != 0 && ((remainder < 0) != (divisor < 0))) remainder += divisor;
        value = remainder;
      } else {
        break;
      }
    }
    return value;
  }

  // A divisor that is safe to use with `dividend`: not zero, and not the one quotient that
  // overflows (INT64_MIN / -1, which also traps in `%` on x86).
  std::int64_t divisor_for(std::int64_t dividend, std::int64_t divisor) const {
    if (divisor == 0) fail("division by zero");
    if (divisor == -1 && dividend == INT64_MIN) throw OverflowError();
    return divisor;
  }

  std::int64_t unary() {
    enter();  // "- - - ... 1" must not exhaust the stack either.
    std::int64_t value = 0;
    if (accept("-")) {
      value = checked_mul(-1, unary());
    } else if (accept("+")) {
      value = unary();
    } else {
      value = primary();
    }
    --depth_;
    return value;
  }

  std::int64_t primary() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      const std::int64_t value = expression();
      if (!accept(")")) fail("missing ')'");
      return value;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      std::int64_t value = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        value = checked_add(checked_mul(value, 10), text_[pos_] - '0');
        ++pos_;
      }
      return value;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
        ++pos_;
      }
      const std::string_view name = text_.substr(start, pos_ - start);
      if (auto value = scope_.lookup(name)) return *value;
      unknown(name);
    }
    fail(fmt::format("unexpected '{}'", c));
  }

  [[noreturn]] void unknown(std::string_view name) const {
    const std::vector<std::string> names = scope_.names();
    std::string message = fmt::format("unknown name \"{}\"", name);
    std::vector<std::string_view> known(names.begin(), names.end());
    message = with_suggestion(message, name, known);
    if (names.empty()) {
      message += " (no names are in scope)";
    } else {
      message += fmt::format(" (in scope: {})", fmt::join(names, ", "));
    }
    fail(message);
  }

  std::string_view text_;
  const NameScope& scope_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

std::int64_t evaluate_expression(std::string_view text, const NameScope& scope) {
  return Parser(text, scope).parse();
}

}  // namespace capcalc
