#include "expr.hpp"

#include <fmt/format.h>

#include <cctype>

#include "checked.hpp"
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
    throw ExpressionError(fmt::format("bad expression \"{}\": {}", text_, what));
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool accept(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }

  std::int64_t expression() {
    if (++depth_ > 64) fail("nested too deeply");
    std::int64_t value = term();
    for (;;) {
      if (accept("+")) {
        value = checked_add(value, term());
      } else if (accept("-")) {
        value = checked_add(value, checked_mul(-1, term()));
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
        const std::int64_t divisor = nonzero(unary());
        std::int64_t quotient = value / divisor;
        if ((value % divisor != 0) && ((value < 0) != (divisor < 0))) --quotient;
        value = quotient;
      } else if (accept("/")) {
        const std::int64_t divisor = nonzero(unary());
        if (value % divisor != 0) {
          fail(fmt::format("{} / {} is not a whole number (use // to round down)", value, divisor));
        }
        value /= divisor;
      } else if (accept("%")) {
        value %= nonzero(unary());
      } else {
        break;
      }
    }
    return value;
  }

  std::int64_t nonzero(std::int64_t divisor) const {
    if (divisor == 0) fail("division by zero");
    return divisor;
  }

  std::int64_t unary() {
    if (accept("-")) return checked_mul(-1, unary());
    if (accept("+")) return unary();
    return primary();
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
