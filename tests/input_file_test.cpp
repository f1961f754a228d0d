#include "input_file.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include <sys/stat.h>

#include "capcalc/budget.hpp"
#include "capcalc/error.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/model.hpp"
#include "capcalc/runtime.hpp"
#include "capcalc/validate.hpp"

#include "catch.hpp"
#include "test_data.hpp"

using capcalc::Error;
using capcalc::read_input_file;

namespace {

// A scratch directory of its own per test run, removed with what it holds.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = std::string(P_tmpdir) + "/capcalc_input_XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    for (const std::string& name : made_)
      std::remove(name.c_str());
    ::rmdir(path_.c_str());
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string file(const std::string& name, const std::string& text) {
    const std::string path = track(name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string fifo(const std::string& name) {
    const std::string path = track(name);
    if (::mkfifo(path.c_str(), 0600) != 0) throw std::runtime_error("mkfifo failed");
    return path;
  }
  // A file of `bytes` zeros that takes no disk space.
  std::string sparse(const std::string& name, std::int64_t bytes) {
    const std::string path = file(name, "");
    if (::truncate(path.c_str(), static_cast<off_t>(bytes)) != 0) {
      throw std::runtime_error("truncate failed");
    }
    return path;
  }
  const std::string& path() const { return path_; }

 private:
  std::string track(const std::string& name) {
    made_.push_back(path_ + "/" + name);
    return made_.back();
  }
  std::string path_;
  std::vector<std::string> made_;
};

}  // namespace

TEST_CASE("read_input_file reads a regular file whole", "[input]") {
  ScratchDir dir;
  const std::string text = std::string("{\"a\": 1}\n") + std::string(100'000, ' ');
  CHECK(read_input_file(dir.file("m.json", text)) == text);
  CHECK(read_input_file(dir.file("empty.json", "")).empty());
  // Files in /proc report a size of 0 and are read to their end all the same.
  CHECK(read_input_file("/proc/self/status").find("Name:") != std::string::npos);
}

TEST_CASE("read_input_file names a missing file", "[input]") {
  REQUIRE_THROWS_WITH(read_input_file("/nonexistent/model.json"),
                      "/nonexistent/model.json: cannot open file");
}

TEST_CASE("what is not a regular file is refused at once, without reading it", "[input]") {
  ScratchDir dir;
  // A FIFO without a writer blocked forever; /dev/zero read until std::bad_alloc.
  const std::string fifo = dir.fifo("fifo.json");
  const auto start = std::chrono::steady_clock::now();
  REQUIRE_THROWS_WITH(read_input_file(fifo), fifo + ": not a regular file (a FIFO)");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  REQUIRE_THROWS_WITH(read_input_file("/dev/zero"),
                      "/dev/zero: not a regular file (a character device)");
  REQUIRE_THROWS_WITH(read_input_file(dir.path()),
                      dir.path() + ": not a regular file (a directory)");
}

TEST_CASE("a file past its size limit is refused before it is read", "[input]") {
  ScratchDir dir;
  const std::string big = dir.sparse("big.json", capcalc::kMaxJsonFileBytes + 1);
  REQUIRE_THROWS_WITH(read_input_file(big),
                      big +
                          ": the file is 67,108,865 bytes: larger than 64 MiB, the limit for "
                          "JSON files");
  const std::string huge = dir.sparse("huge.onnx", std::int64_t{3} << 30);
  REQUIRE_THROWS_WITH(capcalc::load_model(huge),
                      huge +
                          ": the file is 3,221,225,472 bytes: larger than 2 GiB, the limit "
                          "for ONNX files");
  // At the limit exactly, a file is read.
  const std::string at_limit = dir.file("limit.json", std::string(1000, ' '));
  CHECK(read_input_file(at_limit, 1000, "test files").size() == 1000);
  REQUIRE_THROWS_WITH(
      read_input_file(dir.file("over.json", std::string(1001, ' ')), 1000, "test files"),
      ContainsSubstring("the file is 1,001 bytes: larger than 1,000 bytes, the "
                        "limit for test files"));
}

TEST_CASE("every loader reads through the checked reader", "[input]") {
  ScratchDir dir;
  const std::string fifo = dir.fifo("fifo");
  const std::string expected = fifo + ": not a regular file (a FIFO)";
  // Models of every format (the extension picks the reader), and every other input file.
  for (const char* name : {"fifo.json", "fifo.onnx", "fifo.onnxtxt", "fifo.pbtxt"}) {
    const std::string model = dir.fifo(name);
    REQUIRE_THROWS_WITH(capcalc::load_model(model), model + ": not a regular file (a FIFO)");
  }
  REQUIRE_THROWS_WITH(capcalc::load_hardware(fifo), expected);
  REQUIRE_THROWS_WITH(
      capcalc::load_hardware(capcalc::test::data_path("hardware.json"), {"/dev/zero"}),
      "/dev/zero: not a regular file (a character device)");
  REQUIRE_THROWS_WITH(capcalc::load_runtimes(fifo), expected);
  REQUIRE_THROWS_WITH(capcalc::load_budget(fifo), expected);
  REQUIRE_THROWS_WITH(capcalc::load_measurements(fifo), expected);
}

TEST_CASE("format_bytes_binary writes limits as people do", "[input]") {
  CHECK(capcalc::format_bytes_binary(1000) == "1,000 bytes");
  CHECK(capcalc::format_bytes_binary(capcalc::kMaxJsonFileBytes) == "64 MiB");
  CHECK(capcalc::format_bytes_binary(capcalc::kMaxOnnxFileBytes) == "2 GiB");
  CHECK(capcalc::format_bytes_binary(std::int64_t{3} << 29) == "1.5 GiB");
}
