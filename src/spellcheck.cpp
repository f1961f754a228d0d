#include "spellcheck.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace capcalc {
namespace {

char lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance; three rows suffice for the transposition rule.
  const std::size_t n = b.size();
  std::vector<std::size_t> before(n + 1);
  std::vector<std::size_t> previous(n + 1);
  std::vector<std::size_t> current(n + 1);
  std::iota(previous.begin(), previous.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= n; ++j) {
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1])) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[n];
}

std::vector<std::string> closest_matches(std::string_view name,
                                         const std::vector<std::string_view>& known,
                                         std::size_t count) {
  std::vector<std::pair<std::size_t, std::string_view>> ranked;
  ranked.reserve(known.size());
  for (std::string_view candidate : known) {
    ranked.emplace_back(edit_distance(name, candidate), candidate);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> result;
  for (std::size_t i = 0; i < ranked.size() && i < count; ++i) {
    result.emplace_back(ranked[i].second);
  }
  return result;
}

std::optional<std::string> closest_match(std::string_view name,
                                         const std::vector<std::string_view>& known) {
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (std::string_view candidate : known) {
    const std::size_t distance = edit_distance(name, candidate);
    const std::size_t allowed =
        std::max<std::size_t>(1, std::max(name.size(), candidate.size()) / 3);
    if (distance <= allowed && (!best || distance < best_distance)) {
      best = std::string(candidate);
      best_distance = distance;
    }
  }
  return best;
}

std::string with_suggestion(std::string message, std::string_view name,
                            const std::vector<std::string_view>& known) {
  if (auto guess = closest_match(name, known)) {
    message += "; did you mean \"" + *guess + "\"?";
  }
  return message;
}

std::string lookup_key(std::string_view name) {
  std::string key;
  key.reserve(name.size());
  for (char c : name) {
    if (c == '_' || c == ' ') c = '-';
    key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return key;
}

std::string quoted_choices(const std::vector<std::string_view>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += '"';
    out += names[i];
    out += '"';
  }
  return out;
}

}  // namespace capcalc
