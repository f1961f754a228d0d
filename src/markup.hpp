// Text for SVG and HTML: escaping and shortening, shared by the roofline and the HTML report.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace capcalc {

/// Escapes & < > " ' for XML and HTML text and attribute values. Layer names come from user
/// files (ONNX names are arbitrary bytes), so control characters that XML 1.0 forbids and bytes
/// that are not UTF-8 become U+FFFD: the document stays well-formed whatever the input.
inline std::string escape_markup(std::string_view text) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&#39;";
          break;
        default:
          if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
            out += kReplacement;
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence: a lead byte 110xxxxx, 1110xxxx or 11110xxx and 1-3 continuation bytes.
    // Overlong forms and surrogates are not checked: XML parsers accept what remains.
    const std::size_t length = c >= 0xF0 && c < 0xF5 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    bool valid = length > 0 && c < 0xF5 && i + length <= text.size();
    for (std::size_t k = 1; valid && k < length; ++k) {
      valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    }
    if (valid) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      out += kReplacement;
      ++i;
    }
  }
  return out;
}

/// UTF-8 text cut to `max_chars` code points (at least 1), the last one "…" if it was cut.
inline std::string shorten(std::string_view text, std::size_t max_chars) {
  const auto starts_char = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; };
  std::size_t chars = 0;
  std::size_t cut = text.size();  // Byte offset of code point max_chars - 1.
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!starts_char(text[i])) continue;
    if (chars + 1 == max_chars) cut = i;
    ++chars;
  }
  if (chars <= max_chars || max_chars == 0) return std::string(text);
  return std::string(text.substr(0, cut)) + "\xE2\x80\xA6";
}

}  // namespace capcalc
