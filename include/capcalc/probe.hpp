// Measuring this machine: `capcalc probe` times a vectorised FMA kernel (FP32 and FP64) and a
// STREAM-like triad on every core, reads the CPU's name and memory size, and writes the result
// as a one-device hardware table (docs/hardware.md) that --hardware-file
// accepts. The figures are achievable rates, not datasheet peaks, so the entry carries
// efficiencies of 1.0.
//
// Every measurement runs under a time budget; the whole probe takes about `seconds` (3 s by
// default; a little more when the triad's arrays take longer than their share to set up).
// Rates are in SI base units (FLOP/s, bytes/s); 1 FMA = 2 FLOPs. The library measures and
// renders to strings; it never prints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace capcalc {

/// What the machine says about itself (/proc/cpuinfo, /proc/meminfo, gethostname).
struct CpuInfo {
  std::string model_name = "unknown CPU";  ///< cpuinfo "model name"; "unknown CPU" if absent.
  std::string vendor = "unknown";          ///< "intel", "amd", ... from cpuinfo "vendor_id".
  std::string hostname = "localhost";      ///< gethostname(); "localhost" if it fails.
  unsigned logical_cores = 1;              ///< std::thread::hardware_concurrency(), at least 1.
  double memory_bytes = 0;                 ///< MemTotal (bytes; 1 kB = 1024 B as the kernel means).
  double last_level_cache_bytes = 0;       ///< As the C library reports it; 0 if unknown.
};

/// Reads this machine's CpuInfo. Throws capcalc::Error if the memory size cannot be found.
CpuInfo read_cpu_info();

/// The SIMD code a kernel ran with, chosen at run time from what the CPU supports.
enum class SimdKernel { kPortable, kAvx2Fma, kAvx512 };
std::string_view simd_kernel_name(SimdKernel kernel);  ///< "portable", "avx2+fma", "avx512f".

/// One timed run of the FMA kernel on `threads` threads.
struct FlopsMeasurement {
  double flops_per_s = 0;  ///< flops / seconds.
  double flops = 0;        ///< FLOPs done in the timed part, counted exactly (1 FMA = 2).
  double seconds = 0;      ///< Wall time of the timed part: first thread's start to last's end.
  unsigned threads = 0;
  SimdKernel kernel = SimdKernel::kPortable;
  int lanes = 0;              ///< Elements per vector register.
  int accumulators = 0;       ///< Independent vector accumulators per thread (hide FMA latency).
  double warmup_seconds = 0;  ///< Untimed run before, so that clocks settle.
  int runs = 1;               ///< Independent runs; the figures above are the fastest's.
  double spread = 0;          ///< (fastest - slowest rate) / fastest over the runs.
};

/// STREAM-like triad a[i] = b[i] + s * c[i], best of several repetitions.
struct BandwidthMeasurement {
  double bytes_per_s = 0;           ///< bytes_per_repetition / best_seconds.
  double bytes_per_repetition = 0;  ///< 3 arrays x 8 bytes x elements (STREAM's convention).
  double best_seconds = 0;          ///< The fastest repetition.
  std::size_t array_bytes = 0;      ///< Size of each of the three double arrays.
  unsigned threads = 0;
  int repetitions = 0;  ///< Timed repetitions (after a first pass that sets the arrays).
  double spread = 0;    ///< 1 - slowest / fastest repetition's rate.
};

/// Above this spread a measurement was disturbed by other work on the machine.
inline constexpr double kNoisySpread = 0.10;

/// How long and on how many threads to probe.
struct ProbeOptions {
  double seconds = 3.0;  ///< Total budget: 30 % FP32, 30 % FP64, 40 % memory. Must be > 0.
  unsigned threads = 0;  ///< 0 = one per logical core.
  int runs = 3;          ///< Runs of each FLOP measurement (the budget split between them).
};

/// Everything `capcalc probe` found.
struct ProbeResult {
  CpuInfo cpu;
  FlopsMeasurement fp32;
  FlopsMeasurement fp64;
  BandwidthMeasurement memory;
  std::string timestamp;  ///< UTC, ISO 8601: "2026-01-31T12:00:00Z".
  double elapsed_s = 0;   ///< Wall time of the whole probe.
};

/// Measures this machine. Throws capcalc::Error for a bad option.
ProbeResult probe_machine(const ProbeOptions& options = {});

/// The hardware table (schema_version 1) with one "cpu" device: id "probe-" + the host name in
/// kebab-case ("Build_Box.local" -> "probe-build-box-local"),
/// alias "local", the measured rates in TFLOP/s and GB/s (4 significant digits), notes on
/// how each was measured, and efficiencies of 1.0.
std::string render_probe_json(const ProbeResult& result);
/// One line per measurement whose spread passes kNoisySpread: what varied, by how much, and
/// what to do. Empty on a quiet machine.
std::vector<std::string> probe_noise_warnings(const ProbeResult& result);
/// A few lines for people: the figures and how to use them.
std::string render_probe_text(const ProbeResult& result);
/// One line: "probe-host: fp32 120 GFLOP/s, fp64 60 GFLOP/s, memory 20 GB/s (2 threads, 3.0 s)".
std::string render_probe_summary(const ProbeResult& result);

}  // namespace capcalc
