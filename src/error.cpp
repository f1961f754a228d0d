#include "capcalc/error.hpp"

#include <utility>

#include <fmt/format.h>

namespace capcalc {
namespace {

// Messages quote the user's own names and keys, which JSON lets hold any character: control
// characters are written as escapes so that every message stays on one line.
std::string one_line(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

std::string render(const SourceLocation& where, const std::string& message) {
  std::string text = where.file;
  if (where.line > 0) {
    text += ":" + std::to_string(where.line) + ":" + std::to_string(where.column);
  } else if (!where.pointer.empty()) {
    text += ":" + where.pointer;
  }
  if (text.empty()) return message;
  return text + ": " + message;
}

}  // namespace

Error::Error(SourceLocation where, std::string message)
    : std::runtime_error(one_line(render(where, message))),
      where_(std::move(where)),
      message_(one_line(message)) {}

}  // namespace capcalc
