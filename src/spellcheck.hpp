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

/// `message` plus `; did you mean "x"?` when a close match exists.
std::string with_suggestion(std::string message, std::string_view name,
                            const std::vector<std::string_view>& known);

}  // namespace capcalc
