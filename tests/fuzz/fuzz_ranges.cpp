// Fuzz target: prediction ranges (parse_ranges), the format of data/ranges.json; a parsed
// table is asked for a range and written back.
#include "capcalc/ranges.hpp"

#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  capcalc::fuzz::expect_json_limits(capcalc::fuzz::as_text(data, size), [&] {
    const capcalc::RangeTable table =
        capcalc::parse_ranges(capcalc::fuzz::as_text(data, size), "fuzz.json");
    (void)table.range_for(
        {capcalc::Profile::kEager, capcalc::Bound::kHost, capcalc::DeviceType::kGpu});
    (void)capcalc::render_ranges_json(table);
  });
  return 0;
}
