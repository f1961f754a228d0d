#include "table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace capcalc {

std::size_t display_width(const std::string& text) {
  std::size_t width = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++width;  // Skip continuation bytes.
  }
  return width;
}

std::string wrap_text(const std::string& text, std::size_t width, std::size_t indent) {
  std::string out;
  std::size_t column = indent;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (column > indent && column + 1 + display_width(word) > width) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    } else if (column > indent) {
      out += ' ';
      ++column;
    }
    out += word;
    column += display_width(word);
    start = end + 1;
  }
  return out + "\n";
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string csv_number(double value) {
  // Whole numbers below 2^53 are exact in a double and print as integers.
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 9007199254740992.0)
    return fmt::format("{}", static_cast<std::int64_t>(value));
  return fmt::format("{}", value);  // Shortest round-trip form.
}

std::string TextTable::render(const std::string& indent) const {
  std::vector<std::size_t> widths(headers_.size(), 0);
  for (std::size_t c = 0; c < headers_.size(); ++c)
    widths[c] = display_width(headers_[c]);
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size() && c < widths.size(); ++c) {
      widths[c] = std::max(widths[c], display_width(row[c]));
    }
  }
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string text = indent;
    for (std::size_t c = 0; c < widths.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::string pad(widths[c] - display_width(cell), ' ');
      if (c > 0) text += "  ";
      text += aligns_[c] == Align::kRight ? pad + cell : cell + pad;
    }
    while (!text.empty() && text.back() == ' ')
      text.pop_back();
    out += text + "\n";
  };
  line(headers_);
  std::vector<std::string> rule;
  for (std::size_t width : widths)
    rule.emplace_back(width, '-');
  line(rule);
  std::size_t section = 0;
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    for (; section < sections_.size() && sections_[section].first == r; ++section)
      out += indent + sections_[section].second + "\n";
    line(rows_[r]);
  }
  return out;
}

}  // namespace capcalc
