// Tests for `capcalc probe`: the measurements give positive, plausible rates with exact FLOP
// counts, the JSON it writes is a hardware table that parse_hardware accepts with the measured
// figures, and the helpers (device id, vendor, cpuinfo fields) behave. Probes here run for
// about 0.3 s: the plausibility bounds are loose on purpose (the test machine is shared).
#include "capcalc/probe.hpp"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capcalc/error.hpp"
#include "capcalc/hardware.hpp"

#include "catch.hpp"
#include "probe_steps.hpp"
#include "test_data.hpp"

using capcalc::Device;
using capcalc::DeviceType;
using capcalc::Precision;
using capcalc::ProbeResult;
using capcalc::SimdKernel;

namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr double kTestSeconds = 0.3;

// what() of the capcalc::Error thrown by `f`, or a marker if none was thrown.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const capcalc::Error& e) {
    return e.what();
  }
  return "<no capcalc::Error>";
}

// A fixed result, for checks of the rendering that must not depend on this machine.
ProbeResult fixed_result() {
  ProbeResult r;
  r.cpu.model_name = "AMD EPYC 9654 96-Core Processor";
  r.cpu.vendor = "amd";
  r.cpu.hostname = "Build_Box.example";
  r.cpu.logical_cores = 4;
  r.cpu.memory_bytes = 64e9;
  r.fp32 = {123.456789e9, 123.456789e9 * 0.8, 0.8, 4, SimdKernel::kAvx512, 16, 12, 0.2};
  r.fp64 = {61.7e9, 61.7e9 * 0.8, 0.8, 4, SimdKernel::kAvx512, 8, 12, 0.2};
  r.memory.bytes_per_s = 20.98765e9;
  r.memory.bytes_per_repetition = 3.0 * 8 * 8 * 1024 * 1024;
  r.memory.best_seconds = r.memory.bytes_per_repetition / r.memory.bytes_per_s;
  r.memory.array_bytes = 64 * 1024 * 1024;
  r.memory.threads = 4;
  r.memory.repetitions = 9;
  r.timestamp = "2026-01-31T12:00:00Z";
  r.elapsed_s = 3.02;
  return r;
}

}  // namespace

TEST_CASE("probe measures positive, plausible FP32, FP64 and bandwidth", "[probe]") {
  const ProbeResult r = capcalc::probe_machine({kTestSeconds, 0});
  INFO(capcalc::render_probe_summary(r));

  CHECK(r.cpu.logical_cores >= 1);
  CHECK(r.fp32.threads == r.cpu.logical_cores);
  CHECK(r.cpu.memory_bytes > 0.1e9);
  CHECK(r.fp64.flops_per_s > 0);
  // Same kernel for both; a SIMD register holds twice as many fp32 lanes as fp64 ones. (Their
  // measured rates are not compared: two short timing windows on a loaded machine can invert.)
  CHECK(r.fp32.kernel == r.fp64.kernel);
  if (r.fp32.kernel != SimdKernel::kPortable) CHECK(r.fp32.lanes == 2 * r.fp64.lanes);
  // No core today does more than ~320 GFLOP/s FP32 (2 x 512-bit FMA x 5 GHz): 1 T is loose.
  CHECK(r.fp32.flops_per_s < 1e12 * r.fp32.threads);
  CHECK(r.memory.bytes_per_s > 0.1e9);
  CHECK(r.memory.bytes_per_s < 20e12);
  CHECK(r.memory.repetitions >= 2);
  CHECK(r.memory.array_bytes >= 64u * 1024 * 1024);
  CHECK(r.memory.bytes_per_repetition == 3.0 * static_cast<double>(r.memory.array_bytes));
  CHECK(r.fp32.flops_per_s == Approx(r.fp32.flops / r.fp32.seconds));
  CHECK(r.fp64.flops_per_s == Approx(r.fp64.flops / r.fp64.seconds));
  // The whole probe's wall time holds its timed parts. (No upper bound: under a sanitizer and
  // ctest -j the machine can be arbitrarily slower than the budget.)
  CHECK(r.elapsed_s >= r.fp32.seconds + r.fp64.seconds + r.memory.best_seconds);
}

TEST_CASE("probe counts FLOPs exactly on every kernel this CPU runs", "[probe]") {
  std::vector<SimdKernel> kernels{SimdKernel::kPortable};
  if (capcalc::best_simd_kernel() == SimdKernel::kAvx512) kernels.push_back(SimdKernel::kAvx2Fma);
  if (capcalc::best_simd_kernel() != SimdKernel::kPortable) {
    kernels.push_back(capcalc::best_simd_kernel());
  }
  for (SimdKernel kernel : kernels) {
    for (bool fp64 : {false, true}) {
      const capcalc::FlopsMeasurement m = capcalc::measure_flops(fp64, 1, 0.03, kernel);
      INFO(capcalc::simd_kernel_name(kernel) << (fp64 ? " fp64" : " fp32"));
      const int bits = kernel == SimdKernel::kAvx512 ? 512 : 256;
      CHECK(m.lanes == (kernel == SimdKernel::kPortable ? 8 : bits / (fp64 ? 64 : 32)));
      CHECK(m.accumulators == 12);
      // Whole calls of the kernel: 2^14 iterations x 12 accumulators x lanes FMAs, 2 FLOPs each.
      const double per_call = 2.0 * 16384 * 12 * m.lanes;
      CHECK(m.flops >= per_call);
      CHECK(m.flops / per_call == Approx(std::round(m.flops / per_call)));
      CHECK(m.flops_per_s > 0);
    }
  }
}

TEST_CASE("probe JSON is a hardware table with the measured figures", "[probe]") {
  const ProbeResult r = capcalc::probe_machine({kTestSeconds, 0});
  const std::string json = capcalc::render_probe_json(r);
  const capcalc::HardwareTable table = capcalc::parse_hardware(json, "probe.json");
  REQUIRE(table.devices.size() == 1);
  const Device& d = table.devices.front();
  CHECK(d.id == capcalc::probe_device_id(r.cpu.hostname));
  CHECK(d.type == DeviceType::kCpu);
  CHECK(d.name == r.cpu.model_name + " (probed)");
  // The JSON keeps 4 significant digits: a relative error below 5e-4.
  CHECK(d.peak(Precision::kFp32).vector_flops_per_s == Approx(r.fp32.flops_per_s).epsilon(5e-4));
  CHECK(d.peak(Precision::kFp64).vector_flops_per_s == Approx(r.fp64.flops_per_s).epsilon(5e-4));
  CHECK(d.memory_bandwidth_bytes_per_s == Approx(r.memory.bytes_per_s).epsilon(5e-4));
  CHECK(d.memory_bytes == Approx(r.cpu.memory_bytes).epsilon(5e-4));
  CHECK(d.precisions() == std::vector<Precision>{Precision::kFp64, Precision::kFp32});

  // On top of the built-in table, "local" finds it and its rates are used as they are.
  capcalc::HardwareTable merged = capcalc::load_hardware(capcalc::test::data_path("hardware.json"));
  capcalc::merge_hardware(merged, table);
  const Device& local = merged.get("local");
  CHECK(local.id == d.id);
  const capcalc::PerformanceParams params = merged.performance_for(local);
  CHECK(params.matrix_efficiency == 1.0);
  CHECK(params.vector_efficiency == 1.0);
  CHECK(params.memory_efficiency == 1.0);
}

TEST_CASE("probe JSON names the device, its source and how each figure was measured", "[probe]") {
  const std::string text = capcalc::render_probe_json(fixed_result());
  const nlohmann::json doc = nlohmann::json::parse(text);
  CHECK(doc["schema_version"] == 1);
  CHECK(doc["updated"] == "2026-01-31");
  const nlohmann::json& d = doc["devices"][0];
  CHECK(d["id"] == "probe-build-box-example");
  CHECK(d["name"] == "AMD EPYC 9654 96-Core Processor (probed)");
  CHECK(d["aliases"] == nlohmann::json::array({"local"}));
  CHECK(d["type"] == "cpu");
  CHECK(d["vendor"] == "amd");
  // TFLOP/s and GB/s, 4 significant digits.
  CHECK(d["dense_peak_tflops"]["fp32"]["vector"].get<double>() == 0.1235);
  CHECK(d["dense_peak_tflops"]["fp64"]["vector"].get<double>() == 0.0617);
  CHECK(d["memory_bandwidth_gb_per_s"].get<double>() == 20.99);
  CHECK(d["memory_gb"].get<double>() == 64);
  CHECK(d["performance"] ==
        nlohmann::json::parse(
            R"({"matrix_efficiency": 1.0, "vector_efficiency": 1.0, "memory_efficiency": 1.0})"));
  CHECK(d["sources"] ==
        nlohmann::json::array({"capcalc probe, 2026-01-31T12:00:00Z, Build_Box.example"}));
  const std::string notes = d["notes"];
  CHECK_THAT(notes, ContainsSubstring("achievable rates, not datasheet peaks"));
  CHECK_THAT(notes, ContainsSubstring("12 independent avx512f accumulators of 16 lanes"));
  CHECK_THAT(notes, ContainsSubstring("4 threads, 0.80 s timed after 0.20 s of warm-up"));
  CHECK_THAT(notes, ContainsSubstring("1 FMA = 2 FLOPs"));
  CHECK_THAT(notes, ContainsSubstring("STREAM triad a[i] = b[i] + s * c[i]"));
  CHECK_THAT(notes, ContainsSubstring("three arrays of 8388608 doubles (64 MiB each)"));
  CHECK_THAT(notes, ContainsSubstring("best of 9 repetitions"));
  CHECK_THAT(notes, ContainsSubstring("3 arrays x 8 bytes per element"));

  const std::string table = capcalc::render_probe_text(fixed_result());
  CHECK_THAT(table, ContainsSubstring("probe-build-box-example: AMD EPYC 9654"));
  CHECK_THAT(table, ContainsSubstring("123 GFLOP/s"));
  CHECK_THAT(table, ContainsSubstring("--gpu local"));
  CHECK(capcalc::render_probe_summary(fixed_result()) ==
        "probe-build-box-example: fp32 123 GFLOP/s, fp64 61.7 GFLOP/s, memory 21.0 GB/s "
        "(4 threads, 3.02 s)");
}

TEST_CASE("probe helpers: device id, vendor, cpuinfo fields, array size", "[probe]") {
  CHECK(capcalc::probe_device_id("Build_Box.local") == "probe-build-box-local");
  CHECK(capcalc::probe_device_id("--gpu-node 07--") == "probe-gpu-node-07");
  CHECK(capcalc::probe_device_id("") == "probe-localhost");
  CHECK(capcalc::probe_device_id("\xc3\xa9t\xc3\xa9") == "probe-t");

  CHECK(capcalc::vendor_from_id("GenuineIntel") == "intel");
  CHECK(capcalc::vendor_from_id("AuthenticAMD") == "amd");
  CHECK(capcalc::vendor_from_id("ARM") == "unknown");
  CHECK(capcalc::vendor_from_id("") == "unknown");

  const char* cpuinfo =
      "processor\t: 0\nvendor_id\t: GenuineIntel\n"
      "model name\t: Intel(R) Xeon(R) CPU   @ 2.20GHz  \nprocessor\t: 1\n";
  CHECK(capcalc::cpuinfo_field(cpuinfo, "model name") == "Intel(R) Xeon(R) CPU @ 2.20GHz");
  CHECK(capcalc::cpuinfo_field(cpuinfo, "vendor_id") == "GenuineIntel");
  CHECK(capcalc::cpuinfo_field(cpuinfo, "processor") == "0");
  CHECK(capcalc::cpuinfo_field(cpuinfo, "model") == "");

  capcalc::CpuInfo cpu;
  cpu.memory_bytes = 64e9;
  cpu.last_level_cache_bytes = 0;
  CHECK(capcalc::triad_array_bytes(cpu, 3) == 64u << 20);
  cpu.last_level_cache_bytes = 80e6;  // Twice the cache: 160 MB, rounded down to whole MiB.
  CHECK(capcalc::triad_array_bytes(cpu, 3) == 152u << 20);
  cpu.last_level_cache_bytes = 1e9;
  CHECK(capcalc::triad_array_bytes(cpu, 3) == 192u << 20);
  CHECK(capcalc::triad_array_bytes(cpu, 0.3) == 64u << 20);  // A short probe: the smallest.
  cpu.memory_bytes = 256e6;                                  // At most an eighth of memory each.
  CHECK(capcalc::triad_array_bytes(cpu, 3) == 30u << 20);
}

TEST_CASE("probe rejects a budget that is not a positive number of seconds", "[probe]") {
  CHECK(error_of([] {
          capcalc::probe_machine({0, 0});
        }) == "probe: the time budget must be a positive number of seconds, got 0");
  CHECK(error_of([] { capcalc::measure_flops(false, 1, -1, SimdKernel::kPortable); }) ==
        "probe: the time budget must be a positive number of seconds, got -1");
  CHECK(error_of([] { capcalc::measure_bandwidth(1, 1 << 20, std::nan("")); }) ==
        "probe: the time budget must be a positive number of seconds, got nan");
}

TEST_CASE("probe: the spread of repeated runs, and when the machine was noisy", "[probe]") {
  CHECK(capcalc::rate_spread({}) == 0);
  CHECK(capcalc::rate_spread({100}) == 0);
  CHECK(capcalc::rate_spread({100, 80, 95}) == Approx(0.2));  // (100 - 80) / 100.
  ProbeResult r;
  r.fp32.runs = r.fp64.runs = 3;
  r.memory.repetitions = 5;
  r.fp32.spread = 0.05;
  r.fp64.spread = 0.10;  // At the limit: not noisy.
  r.memory.spread = 0.02;
  CHECK(capcalc::probe_noise_warnings(r).empty());
  r.fp64.spread = 0.14;
  r.memory.spread = 0.25;
  const std::vector<std::string> lines = capcalc::probe_noise_warnings(r);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] ==
        "fp64 varied 14 % over 3 runs (more than 10 %): the machine was busy; the fastest is "
        "kept, but probe again when it is idle");
  CHECK_THAT(lines[1], ContainsSubstring("memory bandwidth varied 25 % over 5 repetitions"));
  CHECK_THAT(capcalc::render_probe_text(r), ContainsSubstring("  noisy: fp64 varied 14 %"));
}

TEST_CASE("probe: each FLOP rate is the fastest of its runs", "[probe]") {
  capcalc::ProbeOptions options;
  options.seconds = kTestSeconds;
  options.runs = 3;
  const ProbeResult r = capcalc::probe_machine(options);
  CHECK(r.fp32.runs == 3);
  CHECK(r.fp64.runs == 3);
  CHECK(r.fp32.spread >= 0);
  CHECK(r.fp32.spread < 1);
  CHECK(r.memory.spread >= 0);
  CHECK(r.memory.spread < 1);
}
