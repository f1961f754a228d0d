#include "import/onnx_text.hpp"

#include <cstdio>
#include <stdexcept>
#include <string>

#include "capcalc/error.hpp"

#include "import/onnx.hpp"
#include "json_view.hpp"

#if CAPCALC_WITH_ONNX
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>
#endif

namespace capcalc {

#if !CAPCALC_WITH_ONNX

Graph parse_onnx_text_model(const std::string&, OnnxTextSyntax, const std::string& file,
                            const ModelOptions& options) {
  return parse_onnx_model({}, file, options);  // Says that ONNX support is not built in.
}

#else

namespace {

// ONNX's parser reports "[ParseError at position (line: L column: C)]\nError context: ...\n"
// followed by what it expected; capcalc keeps the place and the last part.
SourceLocation textual_position(const std::string& file, const std::string& text) {
  SourceLocation where{file, "", 0, 0};
  const auto at = text.find("(line: ");
  if (at != std::string::npos) {
    std::sscanf(text.c_str() + at, "(line: %d column: %d)", &where.line, &where.column);
  }
  return where;
}

Error textual_syntax_error(const std::string& file, const std::string& status) {
  const SourceLocation where = textual_position(file, status);
  std::string message = status;
  const auto context = status.find("Error context:");
  if (context != std::string::npos) {
    const auto end_of_context = status.find('\n', context);
    message = end_of_context == std::string::npos ? std::string() : status.substr(end_of_context);
  }
  while (!message.empty() && (message.front() == '\n' || message.front() == ' ')) {
    message.erase(0, 1);
  }
  while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
    message.pop_back();
  if (message.empty()) message = "syntax error";
  return Error(where, "ONNX text: " + message);
}

// Protobuf's text-format parser reports each problem here; the first one is kept.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (seen_) return;
    seen_ = true;
    line_ = line + 1;  // Protobuf counts from 0.
    column_ = column + 1;
    message_ = message;
  }

  bool seen() const { return seen_; }
  Error error(const std::string& file) const {
    return Error({file, "", line_, column_}, "protobuf text format: " + message_);
  }

 private:
  bool seen_ = false;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

Graph import_parsed(const onnx::ModelProto& model, const std::string& file,
                    const ModelOptions& options) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    throw Error({file, "", 0, 0}, "the model is too large to import");
  }
  return parse_onnx_model(bytes, file, options);
}

}  // namespace

Graph parse_onnx_text_model(const std::string& text, OnnxTextSyntax syntax, const std::string& file,
                            const ModelOptions& options) {
  onnx::ModelProto model;
  if (syntax == OnnxTextSyntax::onnx) {
    // The parser reads a C string: a NUL inside the text would end it early.
    if (text.find('\0') != std::string::npos) {
      throw Error({file, "", 0, 0}, "ONNX text: the file contains a NUL byte (binary ONNX?)");
    }
    onnx::OnnxParser parser(text.c_str());
    try {
      const auto status = parser.Parse(model);
      if (!status.IsOK()) throw textual_syntax_error(file, status.ErrorMessage());
    } catch (const std::logic_error&) {
      // std::stoi/stof on a malformed literal ("1e", a cut-off number).
      throw Error(textual_position(file, parser.GetCurrentPos()), "ONNX text: malformed number");
    }
  } else {
    google::protobuf::TextFormat::Parser parser;
    FirstError errors;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString(text, &model)) {
      if (errors.seen()) throw errors.error(file);
      throw Error({file, "", 0, 0}, "protobuf text format: not a ModelProto");
    }
  }
  return import_parsed(model, file, options);
}

#endif

Graph load_onnx_text_model(const std::string& path, OnnxTextSyntax syntax,
                           const ModelOptions& options) {
  return parse_onnx_text_model(read_text_file(path), syntax, path, options);
}

}  // namespace capcalc
