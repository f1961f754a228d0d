#include "capcalc/probe.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <unistd.h>
#include <vector>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/names.hpp"
#include "capcalc/units.hpp"

#include "input_file.hpp"
#include "probe_steps.hpp"

#if defined(__linux__)
#include <sched.h>

#include <sys/mman.h>
#endif

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define CAPCALC_PROBE_X86 1
#include <immintrin.h>
#else
#define CAPCALC_PROBE_X86 0
#endif

namespace capcalc {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMiB = std::size_t{1} << 20;

// Twelve independent chains: FMA latency is 4-5 cycles on current x86 cores with two FMA
// pipes, so at least 8-10 chains in flight are needed to keep both busy every cycle.
constexpr int kAccumulators = 12;
// Iterations of the 12 FMAs between two looks at the clock: ~200 k vector FMAs, some 50 µs.
constexpr std::int64_t kChunkIterations = std::int64_t{1} << 14;
// The fraction of a FLOP measurement's budget run before timing, so that clocks settle
// (AVX-512 frequency licences, turbo ramp-up).
constexpr double kWarmupFraction = 0.2;
constexpr int kMaxTriadRepetitions = 100;

// The results are written here, so the compiler cannot drop the loops that make them.
volatile double g_sink = 0;

// A reusable barrier (std::barrier is C++20).
class Barrier {
 public:
  explicit Barrier(unsigned count) : count_(count) {}

  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const std::uint64_t generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      released_.notify_all();
      return;
    }
    released_.wait(lock, [&] { return generation_ != generation; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  unsigned count_;
  unsigned arrived_ = 0;
  std::uint64_t generation_ = 0;
};

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

Clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// --- The FMA kernels: acc = acc * m + a on kAccumulators independent vectors. ---------------
// m slightly below 1 keeps every chain bounded (it converges to a / (1 - m)) and away from
// denormals. Each returns the sum of its accumulators, which the caller keeps.

template <typename T>
double fma_portable(std::int64_t iterations, T m, T a) {
  constexpr int kLanes = 8;  // Plain arrays the compiler may map to any SIMD width.
  T acc[kAccumulators][kLanes];
  for (int i = 0; i < kAccumulators; ++i) {
    for (int l = 0; l < kLanes; ++l)
      acc[i][l] = static_cast<T>(1 + i * kLanes + l);
  }
  for (std::int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < kAccumulators; ++i) {
      for (int l = 0; l < kLanes; ++l)
        acc[i][l] = acc[i][l] * m + a;
    }
  }
  double sum = 0;
  for (int i = 0; i < kAccumulators; ++i) {
    for (int l = 0; l < kLanes; ++l)
      sum += static_cast<double>(acc[i][l]);
  }
  return sum;
}

#if CAPCALC_PROBE_X86

__attribute__((target("avx2,fma"))) double fma_avx2_f32(std::int64_t iterations, float m, float a) {
  const __m256 vm = _mm256_set1_ps(m);
  const __m256 va = _mm256_set1_ps(a);
  __m256 acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i)
    acc[i] = _mm256_set1_ps(static_cast<float>(i + 1));
  for (std::int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kAccumulators; ++i)
      acc[i] = _mm256_fmadd_ps(acc[i], vm, va);
  }
  __m256 total = acc[0];
  for (int i = 1; i < kAccumulators; ++i)
    total = _mm256_add_ps(total, acc[i]);
  float lanes[8];
  _mm256_storeu_ps(lanes, total);
  double sum = 0;
  for (float x : lanes)
    sum += static_cast<double>(x);
  return sum;
}

__attribute__((target("avx2,fma"))) double fma_avx2_f64(std::int64_t iterations, double m,
                                                        double a) {
  const __m256d vm = _mm256_set1_pd(m);
  const __m256d va = _mm256_set1_pd(a);
  __m256d acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i)
    acc[i] = _mm256_set1_pd(static_cast<double>(i + 1));
  for (std::int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kAccumulators; ++i)
      acc[i] = _mm256_fmadd_pd(acc[i], vm, va);
  }
  __m256d total = acc[0];
  for (int i = 1; i < kAccumulators; ++i)
    total = _mm256_add_pd(total, acc[i]);
  double lanes[4];
  _mm256_storeu_pd(lanes, total);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

__attribute__((target("avx512f"))) double fma_avx512_f32(std::int64_t iterations, float m,
                                                         float a) {
  const __m512 vm = _mm512_set1_ps(m);
  const __m512 va = _mm512_set1_ps(a);
  __m512 acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i)
    acc[i] = _mm512_set1_ps(static_cast<float>(i + 1));
  for (std::int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kAccumulators; ++i)
      acc[i] = _mm512_fmadd_ps(acc[i], vm, va);
  }
  __m512 total = acc[0];
  for (int i = 1; i < kAccumulators; ++i)
    total = _mm512_add_ps(total, acc[i]);
  float lanes[16];
  _mm512_storeu_ps(lanes, total);
  double sum = 0;
  for (float x : lanes)
    sum += static_cast<double>(x);
  return sum;
}

__attribute__((target("avx512f"))) double fma_avx512_f64(std::int64_t iterations, double m,
                                                         double a) {
  const __m512d vm = _mm512_set1_pd(m);
  const __m512d va = _mm512_set1_pd(a);
  __m512d acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i)
    acc[i] = _mm512_set1_pd(static_cast<double>(i + 1));
  for (std::int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kAccumulators; ++i)
      acc[i] = _mm512_fmadd_pd(acc[i], vm, va);
  }
  __m512d total = acc[0];
  for (int i = 1; i < kAccumulators; ++i)
    total = _mm512_add_pd(total, acc[i]);
  double lanes[8];
  _mm512_storeu_pd(lanes, total);
  double sum = 0;
  for (double x : lanes)
    sum += x;
  return sum;
}

#endif  // CAPCALC_PROBE_X86

int lanes_of(SimdKernel kernel, bool double_precision) {
  const int bits = kernel == SimdKernel::kAvx512 ? 512 : kernel == SimdKernel::kAvx2Fma ? 256 : 0;
  if (bits == 0) return 8;  // fma_portable's kLanes.
  return bits / (double_precision ? 64 : 32);
}

// One call of the chosen kernel; m and a come from the caller so they are not constants.
double run_fma_kernel(SimdKernel kernel, bool double_precision, std::int64_t iterations, double m,
                      double a) {
#if CAPCALC_PROBE_X86
  if (kernel == SimdKernel::kAvx512) {
    return double_precision
               ? fma_avx512_f64(iterations, m, a)
               : fma_avx512_f32(iterations, static_cast<float>(m), static_cast<float>(a));
  }
  if (kernel == SimdKernel::kAvx2Fma) {
    return double_precision
               ? fma_avx2_f64(iterations, m, a)
               : fma_avx2_f32(iterations, static_cast<float>(m), static_cast<float>(a));
  }
#endif
  return double_precision
             ? fma_portable<double>(iterations, m, a)
             : fma_portable<float>(iterations, static_cast<float>(m), static_cast<float>(a));
}

void require_positive_budget(double seconds) {
  if (!(std::isfinite(seconds) && seconds > 0)) {
    throw Error({}, fmt::format("probe: the time budget must be a positive number of seconds, "
                                "got {}",
                                seconds));
  }
}

// --- Reading the system. ---------------------------------------------------------------------

// The kernel's own files, through the checked reader all the same; "" if unreadable.
std::string read_whole_file(const char* path) {
  try {
    return read_input_file(path, std::int64_t{16} << 20, "system files");
  } catch (const Error&) {
    return "";
  }
}

// Trims and collapses runs of white space ("Intel(R) Xeon(R) CPU   @ 2.2GHz").
std::string tidy(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

// MemTotal from a /proc/meminfo text, in bytes (the kernel's "kB" is 1024 bytes); 0 if absent.
double meminfo_total_bytes(std::string_view meminfo) {
  const std::string value = cpuinfo_field(meminfo, "MemTotal");
  char* end = nullptr;
  const double kib = std::strtod(value.c_str(), &end);
  return end != value.c_str() && kib > 0 ? kib * 1024 : 0;
}

unsigned usable_cores() {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
#if defined(__linux__)
  // A container or `taskset` may allow fewer CPUs than the machine has.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
    const int count = CPU_COUNT(&allowed);
    if (count > 0) cores = std::min(cores, static_cast<unsigned>(count));
  }
#endif
  return cores;
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::string mib(std::size_t bytes) {
  return fmt::format("{:.0f} MiB", static_cast<double>(bytes) / static_cast<double>(kMiB));
}

}  // namespace

// --- Public: system facts. -------------------------------------------------------------------

std::string cpuinfo_field(std::string_view cpuinfo, std::string_view key) {
  std::size_t start = 0;
  while (start < cpuinfo.size()) {
    std::size_t end = cpuinfo.find('\n', start);
    if (end == std::string_view::npos) end = cpuinfo.size();
    const std::string_view line = cpuinfo.substr(start, end - start);
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && tidy(line.substr(0, colon)) == key) {
      return tidy(line.substr(colon + 1));
    }
    start = end + 1;
  }
  return "";
}

std::string vendor_from_id(std::string_view vendor_id) {
  struct Known {
    std::string_view id;
    std::string_view vendor;
  };
  static constexpr Known kKnown[] = {
      {"GenuineIntel", "intel"},   {"AuthenticAMD", "amd"}, {"HygonGenuine", "hygon"},
      {"CentaurHauls", "zhaoxin"}, {"Shanghai", "zhaoxin"}, {"VIA VIA VIA", "via"},
  };
  const std::string id = tidy(vendor_id);
  for (const Known& known : kKnown) {
    if (id == known.id) return std::string(known.vendor);
  }
  return "unknown";
}

std::string probe_device_id(std::string_view hostname) {
  std::string name;
  for (char c : hostname) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 && u < 128) {
      name.push_back(static_cast<char>(std::tolower(u)));
    } else if (!name.empty() && name.back() != '-') {
      name.push_back('-');
    }
  }
  while (!name.empty() && name.back() == '-')
    name.pop_back();
  return "probe-" + (name.empty() ? std::string("localhost") : name);
}

CpuInfo read_cpu_info() {
  CpuInfo info;
  info.logical_cores = usable_cores();
  const std::string cpuinfo = read_whole_file("/proc/cpuinfo");
  for (const char* key : {"model name", "Processor", "cpu model"}) {  // x86, old ARM, MIPS.
    std::string name = cpuinfo_field(cpuinfo, key);
    if (!name.empty()) {
      info.model_name = std::move(name);
      break;
    }
  }
  info.vendor = vendor_from_id(cpuinfo_field(cpuinfo, "vendor_id"));
  info.memory_bytes = meminfo_total_bytes(read_whole_file("/proc/meminfo"));
  if (info.memory_bytes <= 0) {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0) {
      info.memory_bytes = static_cast<double>(pages) * static_cast<double>(page_size);
    }
  }
  if (info.memory_bytes <= 0) {
    throw Error({"/proc/meminfo"}, "cannot find the size of this machine's memory (MemTotal)");
  }
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0 && host[0] != '\0') info.hostname = host;
#if defined(_SC_LEVEL3_CACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
  long cache = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (cache <= 0) cache = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (cache > 0) info.last_level_cache_bytes = static_cast<double>(cache);
#endif
  return info;
}

// --- Public: the FMA measurement. ------------------------------------------------------------

std::string_view simd_kernel_name(SimdKernel kernel) {
  constexpr auto kNames = name_table<SimdKernel>({{SimdKernel::kPortable, "portable"},
                                                  {SimdKernel::kAvx2Fma, "avx2+fma"},
                                                  {SimdKernel::kAvx512, "avx512f"}});
  return kNames.name(kernel);
}

SimdKernel best_simd_kernel() {
#if CAPCALC_PROBE_X86
  __builtin_cpu_init();
  // libgcc's and compiler-rt's checks include the OS's XSAVE support of the registers.
  if (__builtin_cpu_supports("avx512f")) return SimdKernel::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return SimdKernel::kAvx2Fma;
#endif
  return SimdKernel::kPortable;
}

FlopsMeasurement measure_flops(bool double_precision, unsigned threads, double seconds,
                               SimdKernel kernel) {
  require_positive_budget(seconds);
  threads = std::max(1u, threads);
  FlopsMeasurement result;
  result.threads = threads;
  result.kernel = kernel;
  result.lanes = lanes_of(kernel, double_precision);
  result.accumulators = kAccumulators;
  result.warmup_seconds = seconds * kWarmupFraction;
  // Per call of the kernel: iterations x accumulators x lanes FMAs, 2 FLOPs each.
  const double flops_per_chunk =
      2.0 * static_cast<double>(kChunkIterations) * kAccumulators * result.lanes;
  // Close to 1 in both precisions (float's epsilon is 1.2e-7).
  const double m = 1 - 1.0 / 1024 / 1024;
  const double a = 1.0 / 1024;

  struct Slot {
    Clock::time_point start, end;
    std::int64_t chunks = 0;
    double sum = 0;
  };
  std::vector<Slot> slots(threads);
  Barrier timed_start(threads);
  const Clock::duration warmup = to_duration(seconds * kWarmupFraction);
  const Clock::duration timed = to_duration(seconds * (1 - kWarmupFraction));
  const Clock::time_point warm_until = Clock::now() + warmup;

  const auto work = [&](Slot& slot) {
    double sum = 0;
    while (Clock::now() < warm_until)
      sum += run_fma_kernel(kernel, double_precision, kChunkIterations, m, a);
    timed_start.arrive_and_wait();
    slot.start = Clock::now();
    const Clock::time_point until = slot.start + timed;
    do {  // At least one chunk, so every thread counts some work.
      sum += run_fma_kernel(kernel, double_precision, kChunkIterations, m, a);
      ++slot.chunks;
    } while (Clock::now() < until);
    slot.end = Clock::now();
    slot.sum = sum;
  };
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (Slot& slot : slots)
    workers.emplace_back(work, std::ref(slot));
  for (std::thread& worker : workers)
    worker.join();

  Clock::time_point first = slots.front().start;
  Clock::time_point last = slots.front().end;
  double sum = 0;
  for (const Slot& slot : slots) {
    first = std::min(first, slot.start);
    last = std::max(last, slot.end);
    result.flops += static_cast<double>(slot.chunks) * flops_per_chunk;
    sum += slot.sum;
  }
  g_sink = sum;
  result.seconds = std::max(seconds_between(first, last), 1e-9);
  result.flops_per_s = result.flops / result.seconds;
  return result;
}

// --- Public: the triad. ----------------------------------------------------------------------

std::size_t triad_array_bytes(const CpuInfo& cpu, double probe_seconds) {
  const double cache = probe_seconds < 1 ? 0 : cpu.last_level_cache_bytes;
  const double wanted = std::clamp(2 * cache, 64.0 * kMiB, 192.0 * kMiB);
  const double most = std::max(cpu.memory_bytes / 8, 1.0 * kMiB);
  const auto bytes = static_cast<std::size_t>(std::min(wanted, most));
  return bytes / kMiB * kMiB;
}

BandwidthMeasurement measure_bandwidth(unsigned threads, std::size_t array_bytes, double seconds) {
  require_positive_budget(seconds);
  const Clock::time_point deadline = Clock::now() + to_duration(seconds);
  threads = std::max(1u, threads);
  const std::size_t n = std::max<std::size_t>(array_bytes / sizeof(double), threads);

  struct FreeDeleter {
    void operator()(double* p) const { std::free(p); }
  };
  using Array = std::unique_ptr<double[], FreeDeleter>;
  // Not value-initialised: each thread first touches its own part (pages land on its node).
  // Aligned to 2 MiB and marked for transparent huge pages: faulting in 4 KiB pages can cost
  // 5 µs each on a VM, a second or more for these arrays; huge pages take a small fraction.
  constexpr std::size_t kHugePage = 2 * kMiB;
  const std::size_t allocation = (n * sizeof(double) + kHugePage - 1) / kHugePage * kHugePage;
  const auto allocate = [&] {
    Array array(static_cast<double*>(std::aligned_alloc(kHugePage, allocation)));
    if (!array) {
      throw Error({}, fmt::format("probe: cannot allocate 3 x {} for the memory bandwidth test",
                                  mib(allocation)));
    }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(array.get(), allocation, MADV_HUGEPAGE);  // A hint: failure only costs time.
#endif
    return array;
  };
  const Array a = allocate();
  const Array b = allocate();
  const Array c = allocate();
  const double s = 3;

  struct Slot {
    Clock::time_point start, end;
  };
  std::vector<Slot> slots(threads);
  Barrier barrier(threads);
  std::atomic<bool> stop{false};
  BandwidthMeasurement result;
  result.threads = threads;
  result.array_bytes = n * sizeof(double);
  result.bytes_per_repetition = 3.0 * sizeof(double) * static_cast<double>(n);
  double best = 0;
  double worst = 0;

  const auto work = [&](unsigned t) {
    const std::size_t begin = n * t / threads;
    const std::size_t end = n * (t + 1) / threads;
    double* pa = a.get();
    double* pb = b.get();
    double* pc = c.get();
    for (std::size_t i = begin; i < end; ++i) {
      pa[i] = 0;
      pb[i] = 1;
      pc[i] = 2;
    }
    for (;;) {
      barrier.arrive_and_wait();
      if (stop.load()) break;
      slots[t].start = Clock::now();
      for (std::size_t i = begin; i < end; ++i)
        pa[i] = pb[i] + s * pc[i];
      slots[t].end = Clock::now();
      barrier.arrive_and_wait();
      if (t == 0) {  // The others wait at the next barrier until this is decided.
        Clock::time_point first = slots.front().start;
        Clock::time_point last = slots.front().end;
        for (const Slot& slot : slots) {
          first = std::min(first, slot.start);
          last = std::max(last, slot.end);
        }
        const double took = std::max(seconds_between(first, last), 1e-9);
        best = result.repetitions == 0 ? took : std::min(best, took);
        worst = result.repetitions == 0 ? took : std::max(worst, took);
        ++result.repetitions;
        stop = result.repetitions >= kMaxTriadRepetitions ||
               (result.repetitions >= 2 && Clock::now() >= deadline);
      }
    }
  };
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back(work, t);
  for (std::thread& worker : workers)
    worker.join();

  g_sink = a[0] + a[n / 2] + a[n - 1];  // Each is 1 + 3 x 2 = 7.
  result.best_seconds = best;
  result.bytes_per_s = result.bytes_per_repetition / best;
  result.spread = rate_spread({1 / best, 1 / worst});
  return result;
}

// --- Public: the whole probe and its renderings. ---------------------------------------------

double rate_spread(const std::vector<double>& rates) {
  if (rates.size() < 2) return 0;
  const auto [lo, hi] = std::minmax_element(rates.begin(), rates.end());
  return *hi > 0 ? (*hi - *lo) / *hi : 0;
}

std::vector<std::string> probe_noise_warnings(const ProbeResult& r) {
  std::vector<std::string> lines;
  const auto check = [&](const char* what, double spread, const std::string& over) {
    if (spread > kNoisySpread) {
      lines.push_back(fmt::format(
          "{} varied {:.0f} % over {} (more than {:.0f} %): the machine was busy; the fastest "
          "is kept, but probe again when it is idle",
          what, 100 * spread, over, 100 * kNoisySpread));
    }
  };
  check("fp32", r.fp32.spread, fmt::format("{} runs", r.fp32.runs));
  check("fp64", r.fp64.spread, fmt::format("{} runs", r.fp64.runs));
  check("memory bandwidth", r.memory.spread, fmt::format("{} repetitions", r.memory.repetitions));
  return lines;
}

ProbeResult probe_machine(const ProbeOptions& options) {
  require_positive_budget(options.seconds);
  const Clock::time_point start = Clock::now();
  ProbeResult result;
  result.timestamp = utc_timestamp();
  result.cpu = read_cpu_info();
  const unsigned threads = options.threads > 0 ? options.threads : result.cpu.logical_cores;
  const SimdKernel kernel = best_simd_kernel();
  // Each rate measured in several runs: the fastest is kept, the spread says how quiet the
  // machine was.
  const int runs = std::max(1, options.runs);
  const auto best_of_runs = [&](bool fp64) {
    FlopsMeasurement best;
    std::vector<double> rates;
    for (int run = 0; run < runs; ++run) {
      const FlopsMeasurement m = measure_flops(fp64, threads, 0.3 * options.seconds / runs, kernel);
      rates.push_back(m.flops_per_s);
      if (m.flops_per_s > best.flops_per_s) best = m;
    }
    best.runs = runs;
    best.spread = rate_spread(rates);
    return best;
  };
  result.fp32 = best_of_runs(false);
  result.fp64 = best_of_runs(true);
  const std::size_t array_bytes = triad_array_bytes(result.cpu, options.seconds);
  result.memory = measure_bandwidth(threads, array_bytes, 0.4 * options.seconds);
  result.elapsed_s = seconds_between(start, Clock::now());
  return result;
}

}  // namespace capcalc
