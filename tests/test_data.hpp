// Paths of the project's data for tests (set by tests/CMakeLists.txt).
#pragma once

#include <string>

namespace capcalc::test {

inline std::string data_path(const std::string& relative) {
  return std::string(CAPCALC_TEST_DATA_DIR) + "/" + relative;
}

}  // namespace capcalc::test
