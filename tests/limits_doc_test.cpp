// The limits tables of README.md ("Limits and exit codes") and docs/cli.md ("Input limits")
// state the constants of src/limits.hpp: each row must hold the figures the code uses, written
// as the docs write them, and the README's rows no other figure.
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "catch.hpp"
#include "limits.hpp"

namespace {

std::string read_doc(const std::string& relative) {
  std::ifstream in(std::string(CAPCALC_TEST_DIR) + "/../" + relative);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The table row whose first cell starts with `label`, after the heading `section`.
std::string row(const std::string& doc, const std::string& section, const std::string& label) {
  const std::size_t start = doc.find(section);
  REQUIRE(start != std::string::npos);
  const std::size_t at = doc.find("\n| " + label, start);
  INFO(section << " / " << label);
  REQUIRE(at != std::string::npos);
  return doc.substr(at + 1, doc.find('\n', at + 1) - at - 1);
}

// A count as the docs write it: 1,000,000.
std::string grouped(std::int64_t n) {
  std::string digits = std::to_string(n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3)
    digits.insert(static_cast<std::size_t>(i), ",");
  return digits;
}

// Every figure in `text` ("1,000,000", "64", "2"), as written: a run of digits, then any
// number of ",ddd" groups. (Scanned by hand: GCC 12's <regex> trips -Wmaybe-uninitialized
// under the sanitizer build's -O2, which CI turns into an error.)
std::multiset<std::string> figures(const std::string& text) {
  const auto digit = [&](std::size_t i) {
    return i < text.size() && text[i] >= '0' && text[i] <= '9';
  };
  std::multiset<std::string> found;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!digit(i)) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    while (digit(i))
      ++i;
    while (i < text.size() && text[i] == ',' && digit(i + 1) && digit(i + 2) && digit(i + 3))
      i += 4;
    found.insert(text.substr(start, i - start));
  }
  return found;
}

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

}  // namespace

TEST_CASE("the README's limits table holds the constants of limits.hpp, and only those",
          "[limits][docs]") {
  const std::string readme = read_doc("README.md");
  const std::string section = "## Limits and exit codes";
  using capcalc::kMaxExpandedNodes, capcalc::kMaxHfLayers, capcalc::kMaxLayers;
  // The binary ONNX limit is protobuf's 2 GiB less one byte: the docs round it.
  const std::vector<std::pair<std::string, std::multiset<std::string>>> rows = {
      {"Input size",
       {grouped(capcalc::kMaxJsonFileBytes / kMiB), grouped(capcalc::kMaxOnnxTextFileBytes / kMiB),
        grouped((capcalc::kMaxOnnxFileBytes + 1) / kGiB)}},
      {"Nesting depth",
       {grouped(capcalc::kMaxNestingDepth), grouped(capcalc::kMaxSubgraphDepth),
        grouped(capcalc::kMaxBlockDepth), grouped(capcalc::kMaxExpressionDepth)}},
      {"Expanded model", {grouped(kMaxLayers), grouped(kMaxExpandedNodes), grouped(kMaxHfLayers)}},
      // 64: the width of the integers counts are kept in, not a limit of limits.hpp.
      {"Dims", {grouped(capcalc::kMaxTensorRank), "64"}},
  };
  for (const auto& [label, expected] : rows) {
    INFO(row(readme, section, label));
    CHECK(figures(row(readme, section, label)) == expected);
  }
  CHECK(capcalc::kMaxJsonFileBytes % kMiB == 0);
  CHECK(capcalc::kMaxOnnxTextFileBytes % kMiB == 0);
}

TEST_CASE("docs/cli.md's input limits table holds every constant of limits.hpp", "[limits][docs]") {
  const std::string cli = read_doc("docs/cli.md");
  const std::string section = "### Input limits";
  const auto holds = [&](const std::string& label, const std::string& text) {
    INFO(label << " should say " << text);
    CHECK(row(cli, section, label).find(text) != std::string::npos);
  };
  holds("Input files", fmt::format("JSON {} MiB", capcalc::kMaxJsonFileBytes / kMiB));
  holds("Input files", fmt::format("ONNX text {} MiB", capcalc::kMaxOnnxTextFileBytes / kMiB));
  holds("Input files", fmt::format("binary ONNX {} GiB", (capcalc::kMaxOnnxFileBytes + 1) / kGiB));
  holds("Nesting depth", fmt::format("{} levels of JSON", capcalc::kMaxNestingDepth));
  holds("Nesting depth", fmt::format("{} ONNX subgraphs", capcalc::kMaxSubgraphDepth));
  holds("Nesting depth", fmt::format("{} local function calls", capcalc::kMaxFunctionDepth));
  holds("Nesting depth", fmt::format("{} native block calls", capcalc::kMaxBlockDepth));
  holds("Nesting depth", fmt::format("{} levels in an expression", capcalc::kMaxExpressionDepth));
  holds("Nesting depth", fmt::format("{} argument defaults", capcalc::kMaxDefaultChain));
  holds("Expanded model", grouped(capcalc::kMaxLayers) + " layers after blocks");
  holds("Expanded model", grouped(capcalc::kMaxHfLayers) + " layers in a Hugging Face config");
  holds("Expanded model", grouped(capcalc::kMaxExpandedNodes) + " ONNX nodes");
  holds("Expanded model", grouped(capcalc::kMaxLoopIterations) + " iterations");
  holds("Serving traces", grouped(capcalc::kMaxTraceRequests) + " requests");
  holds("Serving traces", grouped(capcalc::kMaxRequestTokens) + " tokens of prompt or of output");
  holds("Dims and counts", fmt::format("at most {} dims", capcalc::kMaxTensorRank));
}
