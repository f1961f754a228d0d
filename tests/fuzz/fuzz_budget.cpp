// Fuzz target: budget files of `capcalc check` (parse_budget).
#include "capcalc/budget.hpp"

#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  capcalc::fuzz::expect_json_limits(capcalc::fuzz::as_text(data, size), [&] {
    (void)capcalc::parse_budget(capcalc::fuzz::as_text(data, size), "fuzz.json");
  });
  return 0;
}
