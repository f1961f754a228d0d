// A plain text table with aligned columns (numbers right, text left), for terminal output.
#pragma once

#include <string>
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

  /// Two spaces between columns, a rule under the header, each line indented by `indent`.
  std::string render(const std::string& indent = "") const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> aligns_;
  std::vector<std::vector<std::string>> rows_;
};

/// Display width of UTF-8 text (code points; capcalc prints no wide characters).
std::size_t display_width(const std::string& text);

}  // namespace capcalc
