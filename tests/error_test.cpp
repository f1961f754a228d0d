#include "capcalc/error.hpp"

#include <string>
#include <string_view>

#include "catch.hpp"

using capcalc::Error;

TEST_CASE("Error::naming_keys shows keys bare and lets a front end spell them", "[error]") {
  const Error e = Error::naming_keys({"run.json"}, "give `tokens` or `dataset_size`, not both");
  CHECK(e.message() == "give tokens or dataset_size, not both");
  CHECK(std::string(e.what()) == "run.json: give tokens or dataset_size, not both");
  CHECK(e.keys() == std::vector<std::string>{"tokens", "dataset_size"});
  const auto flag = [](std::string_view key) { return "--" + std::string(key) + "!"; };
  CHECK(e.what_with(flag) == "run.json: give --tokens! or --dataset_size!, not both");
}

TEST_CASE("An Error without keys reads the same through what_with", "[error]") {
  const Error e({"m.json", "/layers/0"}, "tokens\nhere");
  CHECK(e.keys().empty());
  CHECK(e.what_with([](std::string_view) { return std::string("x"); }) == e.what());
  CHECK(e.what_with([](std::string_view) { return std::string("x"); }) ==
        "m.json:/layers/0: tokens\\nhere");
}

TEST_CASE("A key at either end of a message is still named", "[error]") {
  const Error e = Error::naming_keys({}, "`epochs` needs `dataset_size`");
  CHECK(e.message() == "epochs needs dataset_size");
  CHECK(e.what_with([](std::string_view key) { return "<" + std::string(key) + ">"; }) ==
        "<epochs> needs <dataset_size>");
}

TEST_CASE("A value's backticks in a message naming keys stay text", "[error]") {
  const Error e =
      Error::naming_keys({}, "`slo`: unknown metric \"" + Error::verbatim("a`b``c") + "\"");
  CHECK(e.message() == "slo: unknown metric \"a`b``c\"");
  CHECK(e.keys() == std::vector<std::string>{"slo"});
}
