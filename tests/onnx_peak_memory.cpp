// Peak memory of loading one ONNX file, measured in a process of its own (issue 20, section 5:
// at most 25 % of the file's size plus 50 MB).
//
//   capcalc_onnx_peak_memory --write PATH LAYERS   writes tests/onnx_big_model.hpp's model
//   capcalc_onnx_peak_memory PATH                  loads PATH; prints its size and the peak RSS
//
// The check mode exits 1 when the peak passes the target, so that ctest can run it.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>

#include <sys/resource.h>

#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

#include "onnx_big_model.hpp"

int main(int argc, char** argv) {
  try {
    if (argc == 4 && std::string(argv[1]) == "--write") {
      const std::int64_t bytes = capcalc::test::write_big_onnx(argv[2], std::atoi(argv[3]));
      std::printf("wrote %s: %lld bytes\n", argv[2], static_cast<long long>(bytes));
      return 0;
    }
    if (argc != 2) {
      std::fputs("usage: capcalc_onnx_peak_memory [--write PATH LAYERS | PATH]\n", stderr);
      return 2;
    }
    const std::int64_t file_bytes =
        std::ifstream(argv[1], std::ios::binary | std::ios::ate).tellg();
    const capcalc::Graph g = capcalc::load_model(argv[1]);
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const double peak_mb = static_cast<double>(usage.ru_maxrss) * 1024.0 / 1e6;  // KiB on Linux.
    const double file_mb = static_cast<double>(file_bytes) / 1e6;
    const double target_mb = 0.25 * file_mb + 50.0;
    std::printf(
        "%s: %.1f MB file, %zu layers, %lld parameters; peak RSS %.1f MB (target %.1f MB)\n",
        argv[1], file_mb, g.layers.size(), static_cast<long long>(capcalc::graph_totals(g).params),
        peak_mb, target_mb);
    return peak_mb <= target_mb ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "capcalc_onnx_peak_memory: %s\n", e.what());
    return 2;
  }
}
