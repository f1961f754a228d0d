#include "spellcheck.hpp"

#include "catch.hpp"

using namespace capcalc;

TEST_CASE("edit_distance counts edits, ignoring case, with transpositions", "[spellcheck]") {
  CHECK(edit_distance("conv2d", "conv2d") == 0);
  CHECK(edit_distance("Conv2D", "conv2d") == 0);
  CHECK(edit_distance("conv2", "conv2d") == 1);
  CHECK(edit_distance("cnov2d", "conv2d") == 1);  // Adjacent transposition.
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("closest_match suggests only plausible typos", "[spellcheck]") {
  const std::vector<std::string_view> ops = {"conv2d", "linear", "layernorm", "relu"};
  CHECK(closest_match("conv2", ops) == std::optional<std::string>("conv2d"));
  CHECK(closest_match("lienar", ops) == std::optional<std::string>("linear"));
  CHECK_FALSE(closest_match("transformer", ops).has_value());
  CHECK(with_suggestion("unknown operator \"relu6\"", "relu6", ops) ==
        "unknown operator \"relu6\"; did you mean \"relu\"?");
}

TEST_CASE("closest_matches ranks by distance", "[spellcheck]") {
  const std::vector<std::string_view> names = {"h100-sxm", "a100-sxm4-80gb", "h100-pcie", "t4"};
  const std::vector<std::string> ranked = closest_matches("h100-sx", names, 2);
  REQUIRE(ranked.size() == 2);
  CHECK(ranked[0] == "h100-sxm");
  CHECK(ranked[1] == "h100-pcie");
}
