// Fuzz target: text ONNX models (parse_onnx_text_model), ONNX's own syntax (.onnxtxt) when the
// first byte is even, protobuf's text format (.textproto) when it is odd; then a prediction
// and its reports.
#include <string>

#include "fuzz_target.hpp"
#include "import/onnx_text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto syntax =
      data[0] % 2 == 0 ? capcalc::OnnxTextSyntax::onnx : capcalc::OnnxTextSyntax::protobuf;
  const std::string text(capcalc::fuzz::as_text(data + 1, size - 1));
  capcalc::fuzz::expect_located_errors(
      [&] {
        capcalc::fuzz::predict_and_render(
            capcalc::parse_onnx_text_model(text, syntax, "fuzz.onnxtxt", {}));
      },
      // A syntax error has its line and column; what ONNX finds wrong with the whole model (no
      // graph, an IR version it refuses) names only the file.
      capcalc::fuzz::Located::kFile);
  return 0;
}
