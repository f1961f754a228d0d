// Fuzz target: the serving files of `capcalc serve`: validation sets (parse_serving_cases), fleet
// mixes (parse_mix, --mix) and request traces (parse_trace, --trace, JSON lines). Every input
// goes through all three: each must return or give a located one-line error.
#include "capcalc/serve.hpp"
#include "capcalc/serve_mix.hpp"
#include "capcalc/serve_validation.hpp"

#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(capcalc::fuzz::as_text(data, size));
  capcalc::fuzz::expect_json_limits(text,
                                    [&] { (void)capcalc::parse_serving_cases(text, "fuzz.json"); });
  capcalc::fuzz::expect_json_limits(text, [&] { (void)capcalc::parse_mix(text, "fuzz.json"); });
  // A trace is one JSON object a line: its nesting limit is the lines'.
  capcalc::fuzz::expect_located_errors([&] { (void)capcalc::parse_trace(text, "fuzz.jsonl"); });
  return 0;
}
