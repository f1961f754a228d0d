// Fuzz target: binary ONNX models (parse_onnx_model): the protobuf parse, ONNX's checker and
// shape inference, capcalc's shape folding and its operator counts, then a prediction and its
// reports.
#include "fuzz_target.hpp"
#include "import/onnx.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  capcalc::fuzz::expect_located_errors(
      [&] {
        capcalc::fuzz::predict_and_render(
            capcalc::parse_onnx_model(capcalc::fuzz::as_text(data, size), "fuzz.onnx", {}));
      },
      capcalc::fuzz::Located::kFile);
  return 0;
}
