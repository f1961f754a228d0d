// Shared by the fuzz targets: the contract every parser keeps on any input.
//
// A parser either returns or throws capcalc::Error (a located, one-line message). Anything
// else escaping it (a std::exception from nlohmann or protobuf, a crash, a sanitizer report)
// is a bug: the target lets it through, and libFuzzer, or the replay runner, fails on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "capcalc/error.hpp"

namespace capcalc::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Runs `parse`, accepting only a normal return or a capcalc::Error.
template <typename Parse>
void expect_located_errors(Parse&& parse) {
  try {
    parse();
  } catch (const capcalc::Error& e) {
    // Bad input, reported with its location: the expected outcome for most inputs. The
    // message is one line (the CLI prints it as `file:place: message`).
    if (e.message().find('\n') != std::string::npos) {
      std::fprintf(stderr, "capcalc::Error over more than one line: %s\n", e.what());
      std::abort();
    }
  }
}

}  // namespace capcalc::fuzz
