// Loading a 512 MiB ONNX file whose weights are inline (tests/onnx_big_model.hpp): the rate
// in bytes of file per second (issue 20, section 5: at least 1 GB/s). The file is written once,
// so it is read from the page cache: this measures capcalc, not the disk.
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include "capcalc/graph.hpp"
#include "capcalc/model.hpp"

#include "onnx_big_model.hpp"

namespace {

// Written on first use, removed at exit.
struct BigModel {
  std::string path =
      std::string(P_tmpdir) + "/capcalc_bench_" + std::to_string(::getpid()) + ".onnx";
  BigModel() { capcalc::test::write_big_onnx(path, 32); }  // 32 x 16 MiB.
  ~BigModel() { std::remove(path.c_str()); }
};

const std::string& big_model_path() {
  static const BigModel model;
  return model.path;
}

void BM_LoadOnnx512MiB(benchmark::State& state) {
  const std::string& path = big_model_path();
  const std::int64_t bytes = std::ifstream(path, std::ios::binary | std::ios::ate).tellg();
  for (auto _ : state) {
    benchmark::DoNotOptimize(capcalc::load_model(path));
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}
BENCHMARK(BM_LoadOnnx512MiB)->Unit(benchmark::kMillisecond);

// torchvision's Swin-T as torch 1.13 exports it (tests/exports/torch113, weights stripped): its
// window reshapes are computed from Shape at run time, one chain after another, which the
// importer folds and infers in one pass rather than one round of whole-graph inference each.
void BM_LoadOnnx_SwinT(benchmark::State& state) {
  const std::string path = std::string(CAPCALC_BENCH_EXPORTS_DIR) + "/swin_t.fixed.onnx";
  for (auto _ : state) {
    benchmark::DoNotOptimize(capcalc::load_model(path));
  }
}
BENCHMARK(BM_LoadOnnx_SwinT)->Unit(benchmark::kMillisecond);

}  // namespace
