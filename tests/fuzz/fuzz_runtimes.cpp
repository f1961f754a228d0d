// Fuzz target: runtime tables (parse_runtimes), the format of data/runtimes.json and of users'
// --runtime-file overlays; every runtime is asked for its kernels of a small model's layers.
#include "capcalc/model.hpp"
#include "capcalc/runtime.hpp"

#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const capcalc::Graph graph = capcalc::parse_model(
      R"({"format": "capcalc-model/1", "name": "t", "inputs": [{"name": "x", "shape": [1, 4, 64]}],
          "layers": [{"name": "n", "op": "rmsnorm"},
                     {"name": "a", "op": "attention", "heads": 4, "rotary": true},
                     {"name": "f", "op": "linear", "out_features": 64}]})",
      "fuzz-model.json");
  capcalc::fuzz::expect_json_limits(capcalc::fuzz::as_text(data, size), [&] {
    const capcalc::RuntimeTable table =
        capcalc::parse_runtimes(capcalc::fuzz::as_text(data, size), "fuzz.json");
    for (const capcalc::Runtime& runtime : table.runtimes) {
      for (const capcalc::Layer& layer : graph.layers)
        (void)runtime.kernels(layer);
      (void)table.get(runtime.id);
    }
  });
  return 0;
}
