#include "import/onnx_text.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "capcalc/error.hpp"

#include "import/onnx.hpp"
#include "input_file.hpp"
#include "limits.hpp"

#if CAPCALC_WITH_ONNX
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>
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

// ONNX's text parser recurses once per bracket: text nested deeper than kMaxNestingDepth is
// refused before parsing, at its first bracket too many. Comments and strings are skipped;
// `=>` (a signature's arrow) closes nothing.
void check_nesting(const std::string& text, const std::string& file) {
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '#') {
      i = text.find('\n', i);
      if (i == std::string::npos) break;
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i) {
        if (text[i] == '\\') ++i;
      }
    } else if (c == '{' || c == '(' || c == '[' || c == '<') {
      if (++depth > kMaxNestingDepth) {
        const std::size_t line_start = text.rfind('\n', i) + 1;  // 0 on the first line.
        const auto line =
            1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(i), '\n');
        throw Error({file, "", static_cast<int>(line), static_cast<int>(i - line_start + 1)},
                    fmt::format("ONNX text: brackets nest more than {} deep (the limit)",
                                kMaxNestingDepth));
      }
    } else if ((c == '}' || c == ')' || c == ']' || (c == '>' && (i == 0 || text[i - 1] != '='))) &&
               depth > 0) {
      --depth;
    }
  }
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

// ONNX 1.14+ prints a node's name before it: `[conv_1] y = Conv (x, w)`. Older parsers (Debian
// 12 has 1.12) do not know that syntax: the names are blanked out (columns stay as they were)
// and returned in text order, which is the order of a pre-order walk over the parsed nodes.
std::vector<std::string> take_node_names(std::string& text) {
  std::vector<std::string> names;
  std::size_t line = 0;
  while (line < text.size()) {
    std::size_t at = line;
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t'))
      ++at;
    if (at < text.size() && text[at] == '[') {
      std::size_t end = at + 1;
      const auto name_char = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' ||
               c == '/' || c == ':' || c == '-';
      };
      const bool starts =
          end < text.size() && (std::isalpha(static_cast<unsigned char>(text[end])) != 0 ||
                                text[end] == '_' || text[end] == '/');
      while (end < text.size() && name_char(text[end]))
        ++end;
      if (starts && end < text.size() && text[end] == ']') {
        names.push_back(text.substr(at + 1, end - at - 1));
        std::fill(text.begin() + static_cast<std::ptrdiff_t>(at),
                  text.begin() + static_cast<std::ptrdiff_t>(end + 1), ' ');
      }
    }
    const std::size_t next = text.find('\n', at);
    if (next == std::string::npos) break;
    line = next + 1;
  }
  return names;
}

// ONNX 1.16+ prints a name that is not an identifier in quotes: `"/conv1/Conv_output_0" = Conv
// ("input.1", "onnx::Conv_193")`, and a symbolic dim that is an expression the same way
// (`float[batch, "past_sequence_length + 1"]`). Debian's 1.12 parser reads identifiers only, so
// each quoted name becomes a placeholder identifier (padded to the quoted length, so that
// columns in syntax errors stay right) and gets its name back after parsing. Quoted strings
// that are string values stay: those in the model's or a function's header, in a node's
// attribute list and in tensor data.
class QuotedNames {
 public:
  explicit QuotedNames(std::string& text) {
    // A prefix the text does not contain: one 'q' more than the longest run after "__" in it,
    // found in one pass (growing it one 'q' per search of the text was quadratic).
    std::size_t longest = 0;
    for (std::size_t at = text.find("__"); at != std::string::npos; at = text.find("__", at + 1)) {
      std::size_t run = 0;
      while (at + 2 + run < text.size() && text[at + 2 + run] == 'q')
        ++run;
      longest = std::max(longest, run);
    }
    prefix_ = "__" + std::string(longest + 1, 'q');
    std::string out;  // The text with placeholders, built in one pass.
    out.reserve(text.size());
    std::map<std::string, std::string> placeholders;  // Name -> its placeholder.
    std::size_t copied = 0;                           // text[0, copied) is in `out`.
    enum class Open { header, value_infos, attributes, body, data, parens, square };
    std::vector<Open> stack;
    const auto previous = [&](std::size_t at) {
      while (at > 0 && std::isspace(static_cast<unsigned char>(text[at - 1])) != 0)
        --at;
      return at == 0 ? '\0' : text[at - 1];
    };
    for (std::size_t at = 0; at < text.size(); ++at) {
      const char c = text[at];
      if (c == '#') {  // A comment runs to the end of its line.
        at = text.find('\n', at);
        if (at == std::string::npos) break;
      } else if (c == '<') {
        // After a signature's closing parenthesis: its value-info list; at the top level
        // otherwise: the model's or a function's header.
        const char before = previous(at);
        stack.push_back(before == ')'   ? Open::value_infos
                        : stack.empty() ? Open::header
                                        : Open::attributes);
      } else if (c == '{') {
        const char before = previous(at);
        stack.push_back(before == ')' || before == '>' ? Open::body : Open::data);
      } else if (c == '(' || c == '[') {
        stack.push_back(c == '(' ? Open::parens : Open::square);
      } else if ((c == '>' && previous(at) != '=') || c == '}' || c == ')' || c == ']') {
        if (!stack.empty()) stack.pop_back();
      } else if (c == '"') {
        std::size_t end = at + 1;
        while (end < text.size() && text[end] != '"' && text[end] != '\n')
          end += text[end] == '\\' ? std::size_t{2} : std::size_t{1};
        if (end >= text.size() || text[end] != '"') break;  // Unclosed: the parser says where.
        // The innermost bracket that decides: parentheses (a signature, a node's inputs), a
        // value-info list and a graph body hold names; a header, an attribute list and tensor
        // data hold values; square brackets (dims, lists) are what encloses them.
        bool is_name = true;
        for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
          if (*it == Open::square) continue;
          is_name = *it == Open::parens || *it == Open::value_infos || *it == Open::body;
          break;
        }
        if (is_name) {
          const std::string name = text.substr(at + 1, end - at - 1);
          auto [it, added] = placeholders.try_emplace(name);
          if (added) {
            it->second = fmt::format("{}{}_", prefix_, originals_.size());
            if (it->second.size() < name.size() + 2) it->second.resize(name.size() + 2, '_');
            originals_[it->second] = name;
          }
          out.append(text, copied, at - copied);
          out += it->second;
          copied = end + 1;
        }
        at = end;
      }
    }
    if (copied == 0) return;
    out.append(text, copied, std::string::npos);
    text = std::move(out);
  }

  void restore(onnx::ModelProto& model) const {
    if (originals_.empty()) return;
    restore(*model.mutable_graph());
    for (auto& function : *model.mutable_functions()) {
      for (auto& name : *function.mutable_input())
        restore(name);
      for (auto& name : *function.mutable_output())
        restore(name);
      restore(*function.mutable_node());
    }
  }

 private:
  void restore(std::string& name) const {
    if (name.rfind(prefix_, 0) != 0) return;
    const auto it = originals_.find(name);
    if (it != originals_.end()) name = it->second;
  }

  void restore(onnx::TypeProto& type) const {
    if (type.has_tensor_type()) {
      for (auto& dim : *type.mutable_tensor_type()->mutable_shape()->mutable_dim()) {
        if (dim.has_dim_param()) restore(*dim.mutable_dim_param());
      }
    }
    if (type.has_sequence_type()) restore(*type.mutable_sequence_type()->mutable_elem_type());
    if (type.has_optional_type()) restore(*type.mutable_optional_type()->mutable_elem_type());
  }

  void restore(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& values) const {
    for (auto& value : values) {
      restore(*value.mutable_name());
      if (value.has_type()) restore(*value.mutable_type());
    }
  }

  void restore(google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes) const {
    for (auto& node : nodes) {
      for (auto& name : *node.mutable_input())
        restore(name);
      for (auto& name : *node.mutable_output())
        restore(name);
      for (auto& attribute : *node.mutable_attribute()) {
        if (attribute.has_g()) restore(*attribute.mutable_g());
        for (auto& g : *attribute.mutable_graphs())
          restore(g);
      }
    }
  }

  void restore(onnx::GraphProto& graph) const {
    restore(*graph.mutable_name());
    restore(*graph.mutable_input());
    restore(*graph.mutable_output());
    restore(*graph.mutable_value_info());
    for (auto& init : *graph.mutable_initializer())
      restore(*init.mutable_name());
    restore(*graph.mutable_node());
  }

  std::string prefix_ = "__q";
  std::map<std::string, std::string> originals_;
};

// The textual syntax types an attribute by its literal: `alpha = 1` is an int, where the
// operator wants a float, and printers write whole floats that way (GPT-2's `Gemm <alpha = 1,
// beta = 1>`). An int (or ints) attribute that the operator's schema declares float (or
// floats) becomes one, here and in subgraphs; other mismatches stay for the checks on import.
void type_whole_floats(google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
                       const std::map<std::string, int>& opsets) {
  for (auto& node : nodes) {
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    const auto opset = opsets.find(domain);
    const onnx::OpSchema* schema =
        opset == opsets.end()
            ? nullptr
            : onnx::OpSchemaRegistry::Schema(node.op_type(), opset->second, domain);
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) type_whole_floats(*attribute.mutable_g()->mutable_node(), opsets);
      for (auto& g : *attribute.mutable_graphs())
        type_whole_floats(*g.mutable_node(), opsets);
      if (schema == nullptr) continue;
      const auto declared = schema->attributes().find(attribute.name());
      if (declared == schema->attributes().end()) continue;
      using A = onnx::AttributeProto;
      if (attribute.type() == A::INT && declared->second.type == A::FLOAT) {
        attribute.set_f(static_cast<float>(attribute.i()));
        attribute.clear_i();
        attribute.set_type(A::FLOAT);
      } else if (attribute.type() == A::INTS && declared->second.type == A::FLOATS) {
        for (const std::int64_t v : attribute.ints())
          attribute.add_floats(static_cast<float>(v));
        attribute.clear_ints();
        attribute.set_type(A::FLOATS);
      }
    }
  }
}

void type_whole_floats(onnx::ModelProto& model) {
  std::map<std::string, int> opsets;
  for (const auto& opset : model.opset_import()) {
    opsets[opset.domain() == "ai.onnx" ? "" : opset.domain()] = static_cast<int>(opset.version());
  }
  type_whole_floats(*model.mutable_graph()->mutable_node(), opsets);
  for (auto& function : *model.mutable_functions())
    type_whole_floats(*function.mutable_node(), opsets);
}

// Counts (names == nullptr) or names the nodes of a list and of its subgraphs, pre-order.
void walk_nodes(google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
                const std::vector<std::string>* names, std::size_t& next) {
  for (auto& node : nodes) {
    if (names != nullptr && next < names->size()) node.set_name((*names)[next]);
    ++next;
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) walk_nodes(*attribute.mutable_g()->mutable_node(), names, next);
      for (auto& g : *attribute.mutable_graphs())
        walk_nodes(*g.mutable_node(), names, next);
    }
  }
}

// The main graph's nodes come first in the text, then each local function's.
std::size_t walk_model(onnx::ModelProto& model, const std::vector<std::string>* names) {
  std::size_t next = 0;
  walk_nodes(*model.mutable_graph()->mutable_node(), names, next);
  for (auto& function : *model.mutable_functions())
    walk_nodes(*function.mutable_node(), names, next);
  return next;
}

}  // namespace

Graph parse_onnx_text_model(const std::string& text, OnnxTextSyntax syntax, const std::string& file,
                            const ModelOptions& options) {
  onnx::ModelProto model;
  if (syntax == OnnxTextSyntax::onnx) {
    // The parser reads a C string: a NUL inside the text would end it early.
    reject_nul_bytes(text, file, "ONNX text");
    check_nesting(text, file);
    std::string plain = text;
    const std::vector<std::string> names = take_node_names(plain);
    const QuotedNames quoted(plain);
    onnx::OnnxParser parser(plain.c_str());
    try {
      const auto status = parser.Parse(model);
      if (!status.IsOK()) throw textual_syntax_error(file, status.ErrorMessage());
      quoted.restore(model);
      type_whole_floats(model);
      // Named statements are all or none in printed models; a partly named text keeps the
      // parser's defaults rather than names shifted onto the wrong nodes.
      if (!names.empty() && names.size() == walk_model(model, nullptr)) walk_model(model, &names);
    } catch (const std::logic_error&) {
      // std::stoi/stof on a malformed literal ("1e", a cut-off number).
      throw Error(textual_position(file, parser.GetCurrentPos()), "ONNX text: malformed number");
    }
  } else {
    reject_nul_bytes(text, file, "protobuf text");
    google::protobuf::TextFormat::Parser parser;
    parser.SetRecursionLimit(kMaxNestingDepth);  // Unlimited otherwise: 8,000 levels crashed.
    FirstError errors;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString(text, &model)) {
      if (errors.seen()) throw errors.error(file);
      throw Error({file, "", 0, 0}, "protobuf text format: not a ModelProto");
    }
  }
  return import_onnx_model(model, file, options);
}

#endif

Graph load_onnx_text_model(const std::string& path, OnnxTextSyntax syntax,
                           const ModelOptions& options) {
  return parse_onnx_text_model(read_input_file(path, kMaxOnnxTextFileBytes, "ONNX text files"),
                               syntax, path, options);
}

}  // namespace capcalc
