// Opening the user's files. Every input capcalc reads (models, hardware, runtime, budget and
// measurement files) goes through here, so that something that is not a file (a FIFO with no
// writer, /dev/zero, a directory) or a file past its size limit is a capcalc::Error naming it
// instead of a hang or an exhausted memory. The limits are in limits.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "limits.hpp"

namespace capcalc {

/// An input file opened for reading: a regular file no larger than `max_bytes`, else a
/// capcalc::Error: `path: cannot open file`, `path: not a regular file (a FIFO)`,
/// `path: the file is 3,221,225,472 bytes: larger than 2 GiB, the limit for ONNX files`. Opening
/// never blocks.
class InputFile {
 public:
  /// `kind` names the limit in messages: "JSON files", "ONNX files".
  InputFile(const std::string& path, std::int64_t max_bytes, std::string_view kind);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  int fd() const { return fd_; }
  /// Bytes, as stat() gave them when the file was opened.
  std::size_t size() const { return size_; }
  /// The whole file; a file that grows past the limit while being read is an error too.
  std::string read_all() const;

 private:
  [[noreturn]] void fail_too_large(std::int64_t bytes) const;  // 0: the size is not known.

  std::string path_;
  std::int64_t max_bytes_;
  std::string kind_;
  int fd_ = -1;
  std::size_t size_ = 0;
};

/// Reads a whole input file (InputFile's checks; JSON's limit unless given).
std::string read_input_file(const std::string& path, std::int64_t max_bytes = kMaxJsonFileBytes,
                            std::string_view kind = "JSON files");

/// Fails at the first NUL byte of a text file, with its line and column:
/// `model.onnxtxt:4:10: a NUL byte in ONNX text (a binary file?)`.
void reject_nul_bytes(std::string_view text, const std::string& file, std::string_view kind);

/// "64 MiB", "2 GiB", "3.2 GiB" for limits in messages and the README.
std::string format_bytes_binary(std::int64_t bytes);

}  // namespace capcalc
