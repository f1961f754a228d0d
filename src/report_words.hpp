// Words shared by the text renderers (private): the context of a language model's pass, the
// active parameters of a mixture of experts, and counted nouns ("1 device", "2 devices").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "capcalc/graph.hpp"
#include "capcalc/units.hpp"

namespace capcalc {

/// Tokens per sample of a language model (its "seq" dimension); none for other models.
inline std::optional<std::int64_t> sequence_length(const Graph& graph) {
  const auto seq = graph.dims.find("seq");
  if (seq == graph.dims.end()) return std::nullopt;
  return seq->second;
}

/// ", 12.9 G active" beside a mixture of experts' total parameters; "" when every parameter is
/// used per token.
inline std::string active_params_text(std::int64_t params, std::int64_t active) {
  if (active <= 0 || active >= params) return "";
  return fmt::format(", {} active per token", format_count(static_cast<double>(active)));
}

/// "1 device", "2 devices", "1,024 layers": the count grouped, the noun singular for 1.
inline std::string counted(std::int64_t n, std::string_view singular, std::string_view plural) {
  return fmt::format("{} {}", format_grouped(n), n == 1 ? singular : plural);
}
inline std::string counted(std::int64_t n, std::string_view singular) {
  return counted(n, singular, std::string(singular) + "s");
}

}  // namespace capcalc
