// The steps of `capcalc probe` (include/capcalc/probe.hpp) that tests check one by one:
// parsing /proc/cpuinfo, choosing the SIMD kernel, the timed kernels and how the triad's
// arrays are sized. Private: the public API is probe_machine() and its renderers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "capcalc/probe.hpp"

namespace capcalc {

/// "GenuineIntel" -> "intel", "AuthenticAMD" -> "amd", ...; "unknown" for anything else.
std::string vendor_from_id(std::string_view vendor_id);
/// The value of the first "key : value" line of a /proc/cpuinfo text with that key; "" if none.
std::string cpuinfo_field(std::string_view cpuinfo, std::string_view key);
/// The device id for a host: "probe-" + the name in kebab-case (a-z, 0-9, '-'), e.g.
/// "Build_Box.local" -> "probe-build-box-local"; "probe-localhost" when nothing is left.
std::string probe_device_id(std::string_view hostname);

/// The widest kernel this CPU (and OS) can run.
SimdKernel best_simd_kernel();

/// Runs acc = acc * m + a on independent accumulators on `threads` threads for about
/// `seconds` (the first fifth untimed, to let clocks settle). `double_precision` picks FP64.
FlopsMeasurement measure_flops(bool double_precision, unsigned threads, double seconds,
                               SimdKernel kernel);

/// How far apart repeated measurements of one rate are: (max - min) / max; 0 for fewer than two.
double rate_spread(const std::vector<double>& rates);

/// Per-array size for the triad: twice the last-level cache, at least 64 MiB and at most
/// 192 MiB (three arrays stay under ~600 MB), and at most 1/8 of memory each. A probe of
/// under 1 s (`probe_seconds`) keeps to 64 MiB: first touching the pages of larger arrays can
/// take longer than the whole budget (a second for 576 MiB on a VM).
std::size_t triad_array_bytes(const CpuInfo& cpu, double probe_seconds);

/// Runs the triad on `threads` threads over three arrays of `array_bytes` each for about
/// `seconds`, at least two timed repetitions.
BandwidthMeasurement measure_bandwidth(unsigned threads, std::size_t array_bytes, double seconds);

}  // namespace capcalc
