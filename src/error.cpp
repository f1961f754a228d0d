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

Error Error::naming_keys(SourceLocation where, std::string_view text) {
  std::string bare;
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  std::string part;
  bool in_key = false;
  const auto end_part = [&] {
    part = one_line(part);
    if (in_key) spans.emplace_back(bare.size(), part.size());
    bare += part;
    part.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '`') {
      part += text[i];
    } else if (i + 1 < text.size() && text[i + 1] == '`') {
      part += '`';  // verbatim(): a backtick of a value.
      ++i;
    } else {
      end_part();
      in_key = !in_key;
    }
  }
  end_part();
  Error error(std::move(where), bare);
  error.key_spans_ = std::move(spans);
  return error;
}

std::string Error::verbatim(std::string_view text) {
  std::string out;
  for (const char c : text) {
    out += c;
    if (c == '`') out += '`';
  }
  return out;
}

std::vector<std::string> Error::keys() const {
  std::vector<std::string> out;
  for (const auto& [offset, size] : key_spans_)
    out.push_back(message_.substr(offset, size));
  return out;
}

std::string Error::what_with(const std::function<std::string(std::string_view)>& spell) const {
  std::string text;
  std::size_t done = 0;
  for (const auto& [offset, size] : key_spans_) {
    text += message_.substr(done, offset - done);
    text += spell(std::string_view(message_).substr(offset, size));
    done = offset + size;
  }
  text += message_.substr(done);
  return one_line(render(where_, text));
}

}  // namespace capcalc
