// "Did you mean" suggestions for unknown names (operators, devices, attributes, dimensions).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace capcalc {

/// Edit distance (insert, delete, substitute, transpose adjacent), ignoring case.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The known name closest to `name`, if it is close enough to be a plausible typo
/// (distance at most a third of the longer name, and at least 1 allowed).
std::optional<std::string> closest_match(std::string_view name,
                                         const std::vector<std::string_view>& known);

/// Up to `count` known names, closest first (for "known devices are: ...").
std::vector<std::string> closest_matches(std::string_view name,
                                         const std::vector<std::string_view>& known,
                                         std::size_t count);

/// The names for "expected ...": "\"a\"", "\"a\" or \"b\"", "\"a\", \"b\" or \"c\"".
std::string quoted_choices(const std::vector<std::string_view>& names);

/// Lookup key of a name people type (devices, runtimes): lower case, with '-', '_' and ' '
/// the same.
std::string lookup_key(std::string_view name);

/// The entry of `items` (with `id` and `aliases`) that `name` names: ids first, then aliases,
/// compared by lookup_key; nullptr if none.
template <typename T>
const T* find_by_name(const std::vector<T>& items, std::string_view name) {
  const std::string key = lookup_key(name);
  for (const T& item : items) {
    if (lookup_key(item.id) == key) return &item;
  }
  for (const T& item : items) {
    for (const std::string& alias : item.aliases) {
      if (lookup_key(alias) == key) return &item;
    }
  }
  return nullptr;
}

/// Every id and alias of `items`, for suggestions.
template <typename T>
std::vector<std::string> names_of(const std::vector<T>& items) {
  std::vector<std::string> names;
  for (const T& item : items) {
    names.push_back(item.id);
    names.insert(names.end(), item.aliases.begin(), item.aliases.end());
  }
  return names;
}

/// `message` plus `; did you mean "x"?` when a close match exists.
std::string with_suggestion(std::string message, std::string_view name,
                            const std::vector<std::string_view>& known);

}  // namespace capcalc
