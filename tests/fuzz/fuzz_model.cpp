// Fuzz target: capcalc's model JSON and Hugging Face config.json (parse_model), then what the
// CLI does with a model that loads (predict_and_render), so that shapes the parser accepts are
// also fed to the counting, timing and report code.
#include "capcalc/model.hpp"

#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  capcalc::fuzz::expect_json_limits(capcalc::fuzz::as_text(data, size), [&] {
    capcalc::fuzz::predict_and_render(
        capcalc::parse_model(capcalc::fuzz::as_text(data, size), "fuzz.json"));
  });
  return 0;
}
