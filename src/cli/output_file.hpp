// Writing a rendered document to the file a user named, or to stdout.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>

#include <fmt/format.h>
#include <sys/stat.h>

#include "capcalc/error.hpp"

namespace capcalc::cli {

/// Writes `text` to something that is not a regular file (/dev/stdout, a pipe) in place: a
/// rename would replace the device or pipe itself. A FIFO that no process reads is an error, not
/// a wait; a failed write is one as in write_output (/dev/full).
inline void write_in_place(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    throw Error({path}, errno == ENXIO ? "a FIFO that no process reads" : "cannot write file");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // Then write as a pipe does: wait.
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 || done < text.size()) throw Error({path}, "cannot write file");
}

/// Fails as write_output would, before a long computation whose result goes to `path`: a
/// folder, a regular file that cannot be written, or a new file in a folder that cannot take
/// one. Devices and pipes are left to write_output (opening a FIFO here would end its reader's
/// input).
inline void check_writable(const std::string& path) {
  if (path.empty()) return;
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) throw Error({path}, "is a directory, not a file to write");
    if (S_ISREG(info.st_mode) && ::access(path.c_str(), W_OK) != 0)
      throw Error({path}, "cannot write file");
    if (!S_ISREG(info.st_mode)) return;
  }
  // The file is written beside itself and renamed: its folder must take a new file.
  const std::string::size_type slash = path.find_last_of('/');
  const std::string folder =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  if (::access(folder.c_str(), W_OK | X_OK) != 0) throw Error({path}, "cannot write file");
}

/// Writes `text` to `path` (stdout when empty). A regular file is written beside it as PATH.tmp
/// and renamed into place, so a failure never leaves half a file (a symbolic link is followed
/// to its file); a device or pipe is written in place; on failure, capcalc::Error
/// "PATH: cannot write file" ("PATH: is a directory").
inline void write_output(const std::string& path, const std::string& text) {
  if (path.empty()) {
    fmt::print("{}", text);
    return;
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) throw Error({path}, "is a directory, not a file to write");
    if (!S_ISREG(info.st_mode)) return write_in_place(path, text);
  }
  std::string target = path;
  const std::unique_ptr<char, decltype(&std::free)> resolved(::realpath(path.c_str(), nullptr),
                                                             &std::free);
  if (resolved) target = resolved.get();
  const std::string temporary = target + ".tmp";
  bool ok = false;
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (out) {
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      out.close();
      ok = !out.fail();
    }
  }
  if (ok) ok = std::rename(temporary.c_str(), target.c_str()) == 0;
  if (!ok) {
    std::remove(temporary.c_str());
    throw Error({path}, "cannot write file");
  }
}

}  // namespace capcalc::cli
