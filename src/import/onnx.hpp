// ONNX import: reads an exported .onnx file into a capcalc::Graph through the ONNX and
// protobuf libraries, binding dynamic dims from ModelOptions and running ONNX's own shape
// inference. Each compute node becomes one Layer counted with the native format's formulas
// (count_formulas.hpp); operators capcalc does not know are listed in Graph::unknown_ops.
#pragma once

#include <string>
#include <string_view>

#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

#if CAPCALC_WITH_ONNX
namespace onnx {
class ModelProto;
}
#endif

namespace capcalc {

/// True when this build can read ONNX files (CMake option CAPCALC_WITH_ONNX).
bool onnx_supported();

/// Parses serialised ONNX bytes; `file` names the model in messages.
Graph parse_onnx_model(std::string_view bytes, const std::string& file,
                       const ModelOptions& options);

#if CAPCALC_WITH_ONNX
/// Imports a parsed model (the importer edits it: bound dims, inferred shapes).
Graph import_onnx_model(onnx::ModelProto& model, const std::string& file,
                        const ModelOptions& options);
#endif

/// Reads and parses an ONNX file. External-data weights need not be present: their sizes
/// come from the TensorProto dims.
Graph load_onnx_model(const std::string& path, const ModelOptions& options);

}  // namespace capcalc
