// Catch2 v2 (Debian 12) and v3 behind one include.
#pragma once

#include <string>

#if __has_include(<catch2/catch_test_macros.hpp>)  // Catch2 v3
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
using Catch::Approx;
using Catch::Matchers::ContainsSubstring;
#else  // Catch2 v2
#include <catch2/catch.hpp>
inline auto ContainsSubstring(const std::string& text) {
  return Catch::Matchers::Contains(text);
}
#endif
