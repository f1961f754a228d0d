#include "capcalc/error.hpp"

#include <utility>

namespace capcalc {
namespace {

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
    : std::runtime_error(render(where, message)),
      where_(std::move(where)),
      message_(std::move(message)) {}

}  // namespace capcalc
