// Writing a rendered document to the file a user named, or to stdout.
#pragma once

#include <cstdio>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "capcalc/error.hpp"

namespace capcalc::cli {

/// Writes `text` to `path` (stdout when empty). The file is written beside it as PATH.tmp and
/// renamed into place, so a failure never leaves half a file; on failure, capcalc::Error
/// "PATH: cannot write file".
inline void write_output(const std::string& path, const std::string& text) {
  if (path.empty()) {
    fmt::print("{}", text);
    return;
  }
  const std::string temporary = path + ".tmp";
  bool ok = false;
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (out) {
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      out.close();
      ok = !out.fail();
    }
  }
  if (ok) ok = std::rename(temporary.c_str(), path.c_str()) == 0;
  if (!ok) {
    std::remove(temporary.c_str());
    throw Error({path}, "cannot write file");
  }
}

}  // namespace capcalc::cli
