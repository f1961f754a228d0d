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

// A view builds its pointer only for messages, from the keys in the document: it must read as
// nlohmann's json_pointer::to_string() does, escapes ("~" as "~0", "/" as "~1") included.
TEST_CASE("JsonView::pointer reads as json_pointer::to_string", "[json]") {
  const std::string file = "p.json";
  const nlohmann::json doc =
      nlohmann::json::parse(R"({"a/b": {"c~d": {"~/~1": [{"": {"x": [7]}}]}}})");
  const JsonView root(doc, file);
  CHECK(root.pointer().empty());
  const JsonView x = root.at("a/b").at("c~d").at("~/~1").at(0).at("").at("x");
  const auto expected = nlohmann::json::json_pointer("/a~1b/c~0d/~0~1~01/0//x");
  CHECK(x.pointer() == expected.to_string());
  CHECK(&doc.at(expected) == &x.json());
  REQUIRE_THROWS_WITH(x.at(0).as_string(),
                      "p.json:" + (expected / 0).to_string() + ": expected a string, got a number");
  REQUIRE_THROWS_WITH(root.as_number(), "p.json:/: expected a number, got an object");
}

TEST_CASE("JsonView::pointer past the inline steps, for every sibling", "[json]") {
  // 20 levels alternating objects and arrays, keys with escapes; the array at each level holds
  // three elements, so that siblings of views past the inline steps share a prefix.
  nlohmann::json doc = 0;
  for (int level = 19; level >= 0; --level) {
    if (level % 2 == 0) {
      doc = nlohmann::json{{"k/" + std::to_string(level), doc}, {"other", level}};
    } else {
      doc = nlohmann::json::array({level, doc, "~"});
    }
  }
  const std::string file = "deep.json";
  JsonView view(doc, file);
  nlohmann::json::json_pointer expected;
  for (int level = 0; level < 20; ++level) {
    if (level % 2 == 0) {
      const std::string key = "k/" + std::to_string(level);
      CHECK(view.at("other").pointer() == (expected / "other").to_string());
      view = view.at(key);
      expected /= key;
    } else {
      CHECK(view.at(0).pointer() == (expected / 0).to_string());
      CHECK(view.at(2).pointer() == (expected / 2).to_string());
      view = view.at(1);
      expected /= 1;
    }
    CHECK(view.pointer() == expected.to_string());
    CHECK(&doc.at(expected) == &view.json());
  }
  REQUIRE_THROWS_WITH(view.as_string(),
                      "deep.json:" + expected.to_string() + ": expected a string, got a number");
}

TEST_CASE("JsonView started at a pointer names it in its own and its members' pointers", "[json]") {
  const std::string file = "s.json";
  const nlohmann::json doc = nlohmann::json::parse(R"({"d": {"x~y": {"list": [1, "two"]}}})");
  const auto start = nlohmann::json::json_pointer("/d/x~0y");
  const JsonView view(doc.at(start), file, start);
  CHECK(view.pointer() == "/d/x~0y");
  CHECK(view.at("list").at(1).pointer() == (start / "list" / 1).to_string());
  REQUIRE_THROWS_WITH(view.at("list").at(1).as_integer(),
                      "s.json:/d/x~0y/list/1: expected an integer, got \"two\"");
  const JsonView root_again(doc, file, nlohmann::json::json_pointer());
  REQUIRE_THROWS_WITH(root_again.as_string(), "s.json:/: expected a string, got an object");
}

TEST_CASE("reject_unknown_keys names the unknown key's location", "[json]") {
  const std::string file = "m.json";
  const nlohmann::json document = parse_json_text(R"({"l": [{"nme": 1, "a/b": 2}]})", file);
  const JsonView entry = JsonView(document, file).at("l").at(0);
  REQUIRE_THROWS_WITH(reject_unknown_keys(entry, {"nme", "name"}, "an entry"),
                      "m.json:/l/0/a~1b: unknown key \"a/b\" in an entry");
  REQUIRE_THROWS_WITH(reject_unknown_keys(entry, {"name", "a/b"}, "an entry"),
                      "m.json:/l/0/nme: unknown key \"nme\" in an entry; did you mean \"name\"?");
  // Not an object: fails as at() would; null and [] have no keys.
  const nlohmann::json list = parse_json_text("[[1], [], null]", file);
  const JsonView items(list, file);
  REQUIRE_THROWS_WITH(reject_unknown_keys(items.at(0), {"a"}, "an entry"),
                      "m.json:/0: expected an object, got an array");
  CHECK_NOTHROW(reject_unknown_keys(items.at(1), {"a"}, "an entry"));
  CHECK_NOTHROW(reject_unknown_keys(items.at(2), {"a"}, "an entry"));
}
