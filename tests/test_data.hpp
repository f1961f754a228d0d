// Paths of the project's data for tests (set by tests/CMakeLists.txt), and scratch files.
#pragma once

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <stdlib.h>  // mkdtemp (POSIX)
#include <string>
#include <system_error>

namespace capcalc::test {

inline std::string data_path(const std::string& relative) {
  return std::string(CAPCALC_TEST_DATA_DIR) + "/" + relative;
}

/// A path named `name` in a scratch directory of this test process's own (made on first use,
/// removed with what it holds when the process ends), so that concurrent runs of the suite,
/// or of two build trees, never write the same file.
inline std::string temp_path(const std::string& name) {
  struct Scratch {
    std::filesystem::path dir;
    Scratch() {
      std::string pattern =
          (std::filesystem::temp_directory_path() / "capcalc_test_XXXXXX").string();
      if (::mkdtemp(pattern.data()) == nullptr)
        throw std::runtime_error("mkdtemp failed for " + pattern);
      dir = pattern;
    }
    ~Scratch() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
  };
  static const Scratch scratch;
  return (scratch.dir / name).string();
}

}  // namespace capcalc::test
