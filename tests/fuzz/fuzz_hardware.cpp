// Fuzz target: hardware tables (parse_hardware), the format of data/hardware.json and of
// users' --hardware-file overlays, merged over the built-in table as the CLI does.
#include "capcalc/hardware.hpp"

#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  capcalc::fuzz::expect_json_limits(capcalc::fuzz::as_text(data, size), [&] {
    capcalc::HardwareTable overlay =
        capcalc::parse_hardware(capcalc::fuzz::as_text(data, size), "fuzz.json");
    for (const capcalc::Device& device : overlay.devices)
      (void)overlay.performance_for(device);
    capcalc::HardwareTable base = capcalc::fuzz::built_in_table();
    capcalc::merge_hardware(base, std::move(overlay));
  });
  return 0;
}
