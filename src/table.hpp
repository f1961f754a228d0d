// A plain text table with aligned columns (numbers right, text left), for terminal output.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace capcalc {

class TextTable {
 public:
  enum class Align { kLeft, kRight };

  void add_column(std::string header, Align align) {
    headers_.push_back(std::move(header));
    aligns_.push_back(align);
  }
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  /// A heading line between rows (e.g. the device of the rows that follow), printed as it is;
  /// it does not widen the columns.
  void add_section(std::string title) { sections_.emplace_back(rows_.size(), std::move(title)); }

  /// Two spaces between columns, a rule under the header, each line indented by `indent`.
  std::string render(const std::string& indent = "") const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> aligns_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::pair<std::size_t, std::string>> sections_;  ///< Before row i: a heading.
};

/// Display width of UTF-8 text (code points; capcalc prints no wide characters).
std::size_t display_width(const std::string& text);

/// Greedy word wrap to `width` columns; lines after the first are indented by `indent`
/// (the first line is assumed to start there too). Ends with a newline.
std::string wrap_text(const std::string& text, std::size_t width, std::size_t indent = 0);

/// RFC 4180: quotes a CSV field holding a comma, a quote or a line break.
std::string csv_field(const std::string& text);

/// A number for CSV: a whole number exactly ("80000000000", never "8e+10"), any other with
/// the fewest digits that read back as the same double.
std::string csv_number(double value);

}  // namespace capcalc
