// The probe's renderings (probe.hpp): the hardware-table entry it writes (JSON), a summary for
// people, and the one-line summary beside --output.
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/probe.hpp"
#include "capcalc/units.hpp"

#include "probe_steps.hpp"
#include "report_json.hpp"

namespace capcalc {
namespace {

using Json = nlohmann::ordered_json;

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;

// 4 significant digits, as a double that prints as its decimal form (0.1234, not
// 0.12340000000000001).
double round4(double x) {
  return std::stod(fmt::format("{:.4g}", x));
}

std::string mib(std::size_t bytes) {
  return fmt::format("{:.0f} MiB", static_cast<double>(bytes) / kBytesPerMiB);
}

std::string flops_note(const char* precision, const FlopsMeasurement& m) {
  return fmt::format(
      "{}: {:.4g} FLOP/s from acc = acc * m + a on {} independent {} accumulators of {} lanes "
      "per thread, {} threads, {:.2f} s timed after {:.2f} s of warm-up; 1 FMA = 2 FLOPs, "
      "{:.4g} FLOPs counted; the fastest of {} runs (spread {:.1f} %).",
      precision, m.flops_per_s, m.accumulators, simd_kernel_name(m.kernel), m.lanes, m.threads,
      m.seconds, m.warmup_seconds, m.flops, m.runs, 100 * m.spread);
}

}  // namespace

std::string render_probe_json(const ProbeResult& r) {
  const BandwidthMeasurement& mem = r.memory;
  std::string notes = fmt::format(
      "Measured by capcalc probe on {} at {} in {:.2f} s. These are achievable rates, not "
      "datasheet peaks, so the efficiencies in \"performance\" are 1.0. ",
      r.cpu.hostname, r.timestamp, r.elapsed_s);
  notes += flops_note("FP32", r.fp32) + " " + flops_note("FP64", r.fp64) + " ";
  notes += fmt::format(
      "Memory bandwidth: {:.4g} B/s from the STREAM triad a[i] = b[i] + s * c[i] over three "
      "arrays of {} doubles ({} each) on {} threads, best of {} repetitions, counting 3 arrays "
      "x 8 bytes per element (STREAM's convention: write-allocate traffic is not counted). ",
      mem.bytes_per_s, mem.array_bytes / sizeof(double), mib(mem.array_bytes), mem.threads,
      mem.repetitions);
  for (const std::string& line : probe_noise_warnings(r))
    notes += "Noisy: " + line + ". ";
  notes += fmt::format(
      "memory_gb: MemTotal of /proc/meminfo. No matrix units (AMX, SME) or 16-bit rates are "
      "measured.");

  Json peaks;
  peaks["fp32"]["vector"] = round4(r.fp32.flops_per_s / kTera);
  peaks["fp64"]["vector"] = round4(r.fp64.flops_per_s / kTera);
  Json device;
  device["id"] = probe_device_id(r.cpu.hostname);
  device["name"] = r.cpu.model_name + " (probed)";
  device["aliases"] = {"local"};
  device["type"] = "cpu";
  device["vendor"] = r.cpu.vendor;
  device["dense_peak_tflops"] = peaks;
  device["memory_gb"] = round4(r.cpu.memory_bytes / kGiga);
  device["memory_bandwidth_gb_per_s"] = round4(mem.bytes_per_s / kGiga);
  device["performance"] = {
      {"matrix_efficiency", 1.0}, {"vector_efficiency", 1.0}, {"memory_efficiency", 1.0}};
  device["sources"] = {fmt::format("capcalc probe, {}, {}", r.timestamp, r.cpu.hostname)};
  device["notes"] = notes;

  Json doc;
  doc["schema_version"] = 1;
  doc["comment"] =
      "Written by `capcalc probe`. Use: capcalc estimate MODEL --gpu local --hardware-file FILE";
  doc["updated"] = r.timestamp.substr(0, 10);
  doc["devices"] = Json::array({device});
  return json_text(doc);
}

std::string render_probe_text(const ProbeResult& r) {
  const auto flops_row = [](const char* label, const FlopsMeasurement& m) {
    return fmt::format(
        "  {:<8} {:>16}   {} FMA, {} x {} lanes per thread, {:.2f} s, best of {} runs "
        "(spread {:.1f} %)\n",
        label, format_rate(m.flops_per_s, "FLOP/s"), simd_kernel_name(m.kernel), m.accumulators,
        m.lanes, m.seconds, m.runs, 100 * m.spread);
  };
  std::string out = fmt::format("{}: {} (probed), {} threads\n", probe_device_id(r.cpu.hostname),
                                r.cpu.model_name, r.fp32.threads);
  out += flops_row("fp32", r.fp32);
  out += flops_row("fp64", r.fp64);
  out += fmt::format("  {:<8} {:>16}   triad over 3 x {}, best of {} (spread {:.1f} %)\n", "memory",
                     format_rate(r.memory.bytes_per_s, "B/s"), mib(r.memory.array_bytes),
                     r.memory.repetitions, 100 * r.memory.spread);
  for (const std::string& line : probe_noise_warnings(r))
    out += "  noisy: " + line + "\n";
  out += fmt::format("  {:<8} {:>16}   MemTotal\n", "RAM", format_bytes(r.cpu.memory_bytes));
  out += fmt::format("measured in {:.2f} s at {}\n", r.elapsed_s, r.timestamp);
  out +=
      "use: capcalc probe -o probe.json, then capcalc estimate MODEL --gpu local "
      "--hardware-file probe.json\n";
  return out;
}

std::string render_probe_summary(const ProbeResult& r) {
  return fmt::format("{}: fp32 {}, fp64 {}, memory {} ({} threads, {:.2f} s)",
                     probe_device_id(r.cpu.hostname), format_rate(r.fp32.flops_per_s, "FLOP/s"),
                     format_rate(r.fp64.flops_per_s, "FLOP/s"),
                     format_rate(r.memory.bytes_per_s, "B/s"), r.fp32.threads, r.elapsed_s);
}

}  // namespace capcalc
