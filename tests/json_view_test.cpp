#include "json_view.hpp"

#include <string>

#include "capcalc/error.hpp"

#include "catch.hpp"
#include "limits.hpp"

using namespace capcalc;

TEST_CASE("parse_json_text reports syntax errors as file:line:col without nlohmann text",
          "[json]") {
  const std::string file = "m.json";
  try {
    parse_json_text("{\n  \"a\": 1,\n  \"b\": ,\n}", file);
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.rfind("m.json:3:8: ", 0) == 0);
    CHECK(e.where().line == 3);
    CHECK(e.where().column == 8);
    CHECK(what.find("json.exception") == std::string::npos);
    CHECK(what.find("parse error at") == std::string::npos);
  }
  REQUIRE_THROWS_WITH(parse_json_text("", file), ContainsSubstring("m.json:1:1: "));
  REQUIRE_THROWS_WITH(parse_json_text("[1, 2", file), ContainsSubstring("m.json:1:"));
}

// Found by fuzzing (tests/fuzz): a number too large for a double threw nlohmann's
// out_of_range, which reached the CLI as an internal error (exit 3) with nlohmann's text.
TEST_CASE("parse_json_text locates a number too large for a double", "[json]") {
  REQUIRE_THROWS_WITH(parse_json_text("{\"schema_version\": 1e999}", "m.json"),
                      "m.json:1:20: number 1e999 is out of range (larger than a double can hold)");
  REQUIRE_THROWS_WITH(parse_json_text("{\n  \"a\": [1,\n   -2e400 ]}", "m.json"),
                      "m.json:3:4: number -2e400 is out of range (larger than a double can hold)");
  // Large integers stay numbers: nlohmann reads them as doubles.
  CHECK(parse_json_text("[123456789012345678901234567890]", "m.json")[0].is_number_float());
}

TEST_CASE("JsonView accessors fail with the JSON pointer", "[json]") {
  const std::string file = "f.json";
  const nlohmann::json doc = nlohmann::json::parse(R"({"a": {"b": [1, -2, "x", 1.5]}})");
  const JsonView root(doc, file);
  const JsonView list = root.at("a").at("b");
  CHECK(list.at(std::size_t{0}).as_positive_int() == 1);
  REQUIRE_THROWS_WITH(list.at(1).as_positive_int(),
                      "f.json:/a/b/1: expected a positive integer, got -2");
  REQUIRE_THROWS_WITH(list.at(2).as_number(), "f.json:/a/b/2: expected a number, got a string");
  REQUIRE_THROWS_WITH(list.at(3).as_integer(), "f.json:/a/b/3: expected an integer, got 1.5");
  REQUIRE_THROWS_WITH(root.at("missing"), "f.json:/: missing required key \"missing\"");
  REQUIRE_THROWS_WITH(list.at(9), "f.json:/a/b: index 9 is out of range");
  REQUIRE_THROWS_WITH(root.at("a").as_string(), "f.json:/a: expected a string, got an object");
  CHECK_FALSE(root.find("nope").has_value());
}

// nlohmann copies, dumps and destroys nested values recursively: 1,000,000 nested arrays in a
// model's dims crashed capcalc (SIGSEGV) when the message quoted the value.
TEST_CASE("parse_json_text refuses nesting deeper than the limit at its first bracket too many",
          "[json][limits]") {
  const auto nested = [](int depth, const std::string& open, const std::string& close) {
    std::string text;
    for (int i = 0; i < depth; ++i)
      text += open;
    for (int i = 0; i < depth; ++i)
      text += close;
    return text;
  };
  CHECK_NOTHROW(parse_json_text(nested(capcalc::kMaxNestingDepth, "[", "]"), "m.json"));
  REQUIRE_THROWS_WITH(parse_json_text(nested(1'000'000, "[", "]"), "m.json"),
                      "m.json:1:257: arrays and objects nest more than 256 deep (the limit)");
  REQUIRE_THROWS_WITH(parse_json_text("{\n\"a\": " + nested(300, "{\"b\": ", "}"), "m.json"),
                      "m.json:2:1536: arrays and objects nest more than 256 deep (the limit)");
  // Brackets inside strings (and escaped quotes) are text, not nesting.
  const std::string brackets = "[\"" + std::string(1000, '[') + "\\\"[\"]";
  CHECK(parse_json_text(brackets, "m.json")[0].get<std::string>().size() == 1002);
}

TEST_CASE("parse_json_text refuses a duplicate key at the second one, naming the object",
          "[json]") {
  const std::string file = "m.json";
  REQUIRE_THROWS_WITH(parse_json_text("{\"a\": 1,\n \"a\": 2}", file),
                      "m.json:2:2: duplicate key \"a\" in the object at /");
  REQUIRE_THROWS_WITH(parse_json_text("{\"l\": [0, {\"k\": {}, \"x\": 1, \"k\": 2}]}", file),
                      "m.json:1:29: duplicate key \"k\" in the object at /l/1");
  // Equal after their escapes are decoded.
  REQUIRE_THROWS_WITH(parse_json_text(R"({"a": 1, "\u0061": 2})", file),
                      ContainsSubstring("duplicate key \"a\""));
  // Equal keys in different objects, and strings that only look like keys, are fine.
  CHECK_NOTHROW(parse_json_text(R"({"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}], "c": "a"})", file));
  CHECK_NOTHROW(parse_json_text(R"({"a\"": 1, "a": ["a", "a"], "x:": ":"})", file));
}

TEST_CASE("free-text keys must be strings even where capcalc ignores them", "[json]") {
  const std::string file = "m.json";
  const nlohmann::json document = parse_json_text(R"({"comment": 5, "other": 5})", file);
  const JsonView root(document, file);
  REQUIRE_THROWS_WITH(reject_unknown_keys(root, {"comment", "other"}, "a test"),
                      "m.json:/comment: expected a string, got a number");
}

TEST_CASE("parse_json_text names the line and column of a NUL byte", "[json]") {
  REQUIRE_THROWS_WITH(parse_json_text(std::string("{\n  \"a\"\0: 1}", 12), "m.json"),
                      "m.json:2:6: a NUL byte in JSON (a binary file?)");
}
