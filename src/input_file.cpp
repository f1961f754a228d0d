#include "input_file.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <sys/stat.h>

#include "capcalc/error.hpp"
#include "capcalc/units.hpp"

namespace capcalc {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

std::string_view file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

}  // namespace

std::string format_bytes_binary(std::int64_t bytes) {
  const auto in = [bytes](std::int64_t unit) {
    const std::string text =
        fmt::format("{:.1f}", static_cast<double>(bytes) / static_cast<double>(unit));
    return text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0
               ? text.substr(0, text.size() - 2)
               : text;
  };
  if (bytes >= kGiB - 1) return in(kGiB) + " GiB";
  if (bytes >= kMiB) return in(kMiB) + " MiB";
  return format_grouped(bytes) + " bytes";
}

InputFile::InputFile(const std::string& path, std::int64_t max_bytes, std::string_view kind)
    : path_(path), max_bytes_(max_bytes), kind_(kind) {
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait for one, forever.
  do {
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) throw Error({path, "", 0, 0}, "cannot open file");
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    ::close(fd_);
    throw Error({path, "", 0, 0}, "cannot read file");
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd_);
    throw Error({path, "", 0, 0},
                fmt::format("not a regular file ({})", file_type_name(info.st_mode)));
  }
  if (info.st_size > max_bytes) {
    ::close(fd_);
    fail_too_large(info.st_size);
  }
  size_ = static_cast<std::size_t>(info.st_size);
}

InputFile::~InputFile() {
  ::close(fd_);
}

void InputFile::fail_too_large(std::int64_t bytes) const {
  const std::string limit =
      fmt::format("larger than {}, the limit for {}", format_bytes_binary(max_bytes_), kind_);
  throw Error({path_, "", 0, 0},
              bytes > 0 ? fmt::format("the file is {} bytes: {}", format_grouped(bytes), limit)
                        : "the file is " + limit);
}

std::string InputFile::read_all() const {
  // Read to the end rather than trust the size: files in /proc report 0, and a file may grow.
  std::string text(size_ + 1, '\0');
  std::size_t used = 0;
  for (;;) {
    if (used == text.size()) {
      if (static_cast<std::int64_t>(used) > max_bytes_) fail_too_large(0);  // It grew.
      text.resize(std::min<std::size_t>(text.size() * 2, static_cast<std::size_t>(max_bytes_) + 1));
    }
    const ssize_t got = ::read(fd_, text.data() + used, text.size() - used);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error({path_, "", 0, 0}, "cannot read file");
    if (got == 0) break;
    used += static_cast<std::size_t>(got);
  }
  text.resize(used);
  return text;
}

void reject_nul_bytes(std::string_view text, const std::string& file, std::string_view kind) {
  const std::size_t at = text.find('\0');
  if (at == std::string_view::npos) return;
  const std::size_t line_start = text.rfind('\n', at);
  const auto line =
      1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  const std::size_t column = line_start == std::string_view::npos ? at + 1 : at - line_start;
  throw Error({file, "", static_cast<int>(std::min<std::ptrdiff_t>(line, INT32_MAX)),
               static_cast<int>(std::min<std::size_t>(column, INT32_MAX))},
              fmt::format("a NUL byte in {} (a binary file?)", kind));
}

std::string read_input_file(const std::string& path, std::int64_t max_bytes,
                            std::string_view kind) {
  return InputFile(path, max_bytes, kind).read_all();
}

}  // namespace capcalc
