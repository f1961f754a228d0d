// Integer expressions in model files (src/expr.cpp): precedence, exact and floor division, errors.
// The expected values are Python's, whose `//` and `%` the language follows.
#include "expr.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catch.hpp"
#include "checked.hpp"

namespace {

using capcalc::ExpressionError;
using capcalc::OverflowError;

class MapScope : public capcalc::NameScope {
 public:
  explicit MapScope(std::map<std::string, std::int64_t> values) : values_(std::move(values)) {}
  std::optional<std::int64_t> lookup(std::string_view name) const override {
    const auto it = values_.find(std::string(name));
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> names;
    for (const auto& [name, value] : values_)
      names.push_back(name);
    return names;
  }

 private:
  std::map<std::string, std::int64_t> values_;
};

const MapScope& dims() {
  static const MapScope scope({{"batch", 8}, {"seq", 128}, {"hidden", 768}, {"heads", 12}});
  return scope;
}

std::int64_t eval(std::string_view text) {
  return capcalc::evaluate_expression(text, dims());
}

}  // namespace

TEST_CASE("expr: literals, names and precedence", "[expr]") {
  CHECK(eval("42") == 42);
  CHECK(eval("  seq ") == 128);
  CHECK(eval("1 + 2 * 3") == 7);    // * binds tighter than +.
  CHECK(eval("(1 + 2) * 3") == 9);  // Parentheses first.
  CHECK(eval("10 - 4 - 3") == 3);   // Left to right.
  CHECK(eval("64 / 4 / 2") == 8);   // Left to right: (64 / 4) / 2.
  CHECK(eval("2 * 3 % 4") == 2);    // Same level, left to right: (2 * 3) % 4.
  CHECK(eval("hidden / heads") == 64);
  CHECK(eval("4 * hidden") == 3072);
  CHECK(eval("((seq + 2) // 2)") == 65);
  CHECK(eval("batch*seq*hidden") == 8 * 128 * 768);
}

TEST_CASE("expr: unary minus and plus", "[expr]") {
  CHECK(eval("-3") == -3);
  CHECK(eval("--3") == 3);
  CHECK(eval("-3 * -2") == 6);
  CHECK(eval("2 - -3") == 5);
  CHECK(eval("-(seq - 100)") == -28);
  CHECK(eval("+5") == 5);
  CHECK(eval("-2 * 3 + 1") == -5);  // Unary minus binds tighter than *.
}

TEST_CASE("expr: exact division, floor division and modulo", "[expr]") {
  CHECK(eval("12 / 4") == 3);
  CHECK(eval("-12 / 4") == -3);
  REQUIRE_THROWS_AS(eval("7 / 2"), ExpressionError);
  REQUIRE_THROWS_WITH(
      eval("7 / 2"),
      "bad expression \"7 / 2\": 7 / 2 is not a whole number (use // to round down)");
  REQUIRE_THROWS_WITH(
      eval("hidden / 5"),
      "bad expression \"hidden / 5\": 768 / 5 is not a whole number (use // to round down)");

  // Python: 7 // 2 == 3, -7 // 2 == -4, 7 // -2 == -4, -7 // -2 == 3.
  CHECK(eval("7 // 2") == 3);
  CHECK(eval("-7 // 2") == -4);
  CHECK(eval("7 // -2") == -4);
  CHECK(eval("-7 // -2") == 3);
  CHECK(eval("-8 // 2") == -4);
  // Python: 7 % 3 == 1, -7 % 3 == 2, 7 % -3 == -2, -7 % -3 == -1.
  CHECK(eval("7 % 3") == 1);
  CHECK(eval("-7 % 3") == 2);
  CHECK(eval("7 % -3") == -2);
  CHECK(eval("-7 % -3") == -1);
  CHECK(eval("-6 % 3") == 0);
  // (a // b) * b + a % b == a for every sign combination.
  for (const char* a : {"7", "-7"}) {
    for (const char* b : {"3", "-3"}) {
      const std::string sa(a);
      const std::string sb(b);
      CHECK(eval("(" + sa + ") // (" + sb + ") * (" + sb + ") + (" + sa + ") % (" + sb + ")") ==
            eval(sa));
    }
  }
}

TEST_CASE("expr: division by zero", "[expr]") {
  REQUIRE_THROWS_WITH(eval("1 / 0"), "bad expression \"1 / 0\": division by zero");
  REQUIRE_THROWS_WITH(eval("1 // (seq - 128)"),
                      "bad expression \"1 // (seq - 128)\": division by zero");
  REQUIRE_THROWS_WITH(eval("5 % 0"), "bad expression \"5 % 0\": division by zero");
}

TEST_CASE("expr: unknown names list the names in scope, with a suggestion", "[expr]") {
  REQUIRE_THROWS_WITH(eval("sq * 2"),
                      "bad expression \"sq * 2\": unknown name \"sq\"; did you mean \"seq\"? (in "
                      "scope: batch, heads, hidden, seq)");
  REQUIRE_THROWS_WITH(
      eval("width"),
      "bad expression \"width\": unknown name \"width\" (in scope: batch, heads, hidden, seq)");
  const MapScope empty({});
  REQUIRE_THROWS_WITH(capcalc::evaluate_expression("n", empty),
                      "bad expression \"n\": unknown name \"n\" (no names are in scope)");
}

TEST_CASE("expr: overflow is an error, never a wrap", "[expr]") {
  REQUIRE_THROWS_AS(eval("9223372036854775807 + 1"), OverflowError);
  REQUIRE_THROWS_AS(eval("9223372036854775808"),
                    OverflowError);  // The literal alone.
  REQUIRE_THROWS_AS(eval("4294967296 * 4294967296"), OverflowError);
  REQUIRE_THROWS_AS(eval("-9223372036854775807 - 2"), OverflowError);
  CHECK(eval("9223372036854775807") == INT64_MAX);
  CHECK(eval("-9223372036854775807 - 1") == INT64_MIN);  // Subtraction reaches the minimum.
  CHECK(eval("-1 - (-9223372036854775807 - 1)") == INT64_MAX);
  // The one overflowing quotient: INT64_MIN / -1 (and % and //, which trap on x86).
  REQUIRE_THROWS_AS(eval("(-9223372036854775807 - 1) / -1"), OverflowError);
  REQUIRE_THROWS_AS(eval("(-9223372036854775807 - 1) // -1"), OverflowError);
  REQUIRE_THROWS_AS(eval("(-9223372036854775807 - 1) % -1"), OverflowError);
}

TEST_CASE("expr: garbage is an error naming the expression", "[expr]") {
  REQUIRE_THROWS_WITH(eval(""), "bad expression \"\": unexpected end");
  REQUIRE_THROWS_WITH(eval("2 +"), "bad expression \"2 +\": unexpected end");
  REQUIRE_THROWS_WITH(eval("(2 + 3"), "bad expression \"(2 + 3\": missing ')'");
  REQUIRE_THROWS_WITH(eval("2 + 3)"), "bad expression \"2 + 3)\": unexpected ')'");
  REQUIRE_THROWS_WITH(eval("2 ** 3"), "bad expression \"2 ** 3\": unexpected '*'");
  REQUIRE_THROWS_WITH(eval("12abc"), "bad expression \"12abc\": unexpected 'a'");
  REQUIRE_THROWS_WITH(eval("seq seq"), "bad expression \"seq seq\": unexpected 's'");
  REQUIRE_THROWS_WITH(eval("3.5"), "bad expression \"3.5\": unexpected '.'");
  REQUIRE_THROWS_WITH(eval("$x"), "bad expression \"$x\": unexpected '$'");
  // Deep nesting is refused, not a stack overflow.
  CHECK(eval(std::string(40, '(') + "1" + std::string(40, ')')) == 1);
  REQUIRE_THROWS_WITH(eval(std::string(100000, '(') + "1" + std::string(100000, ')')),
                      ContainsSubstring("nested too deeply"));
  CHECK(eval(std::string(100, '-') + "1") == 1);
  REQUIRE_THROWS_WITH(eval(std::string(100000, '-') + "1"), ContainsSubstring("nested too deeply"));
}

TEST_CASE("expr: too deep an expression says where, and quotes only its start", "[expr][limits]") {
  // Each parenthesis is two levels (its expression and its sign): the 64th goes past 128.
  REQUIRE_THROWS_WITH(eval(std::string(100000, '(') + "1" + std::string(100000, ')')),
                      "bad expression \"" + std::string(57, '(') +
                          "...\": nested too deeply at column 65 (more than 128 levels; a "
                          "parenthesis counts 2)");
  REQUIRE_THROWS_WITH(eval(std::string(200, ' ') + "2 +"),
                      "bad expression \"" + std::string(57, ' ') + "...\": unexpected end");
}
