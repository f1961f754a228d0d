// ONNX models written as text: ONNX's own textual syntax (`.onnxtxt`, what onnx.printer and
// onnxscript print) and protobuf's text format of a ModelProto (`.textproto`, `.pbtxt`).
// Both are parsed into the same ModelProto as a binary `.onnx` and imported the same way.
#pragma once

#include <string>

#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

namespace capcalc {

enum class OnnxTextSyntax {
  onnx,      ///< `<ir_version: 8, opset_import: ["" : 17]> g (float[N,3] x) => (...) {...}`
  protobuf,  ///< `ir_version: 8 opset_import { version: 17 } graph { node { ... } }`
};

/// Parses a text model; a syntax error becomes `file:line:col: message`.
Graph parse_onnx_text_model(const std::string& text, OnnxTextSyntax syntax, const std::string& file,
                            const ModelOptions& options);

/// Reads and parses a text model file.
Graph load_onnx_text_model(const std::string& path, OnnxTextSyntax syntax,
                           const ModelOptions& options);

}  // namespace capcalc
