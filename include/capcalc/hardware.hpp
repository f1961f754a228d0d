// The hardware table: CPUs, GPUs, TPUs and other accelerators with their dense peak rates per
// precision, memory, bandwidth and the free parameters of the performance model.
//
// The JSON format is documented in docs/hardware.md. JSON figures are in
// human units (TFLOP/s, GB, GB/s); these structs hold SI base units (FLOP/s, bytes, bytes/s).
// Peaks are dense: 2:4 structured sparsity is the separate factor sparsity_2_4_speedup.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace capcalc {

enum class DeviceType { kCpu, kGpu, kTpu, kAccelerator };
inline constexpr std::size_t kDeviceTypeCount = 4;

/// Number formats a device can compute in.
enum class Precision { kFp64, kFp32, kTf32, kFp16, kBf16, kFp8, kInt8, kInt4 };
inline constexpr std::size_t kPrecisionCount = 8;

std::string_view precision_name(Precision precision);  ///< "fp32", "bf16", ...
std::optional<Precision> parse_precision(std::string_view name);
std::vector<std::string_view> precision_names();
/// "unknown precision \"fp17\" (did you mean \"fp16\"?)": the message for a name that
/// parse_precision() does not know.
std::string unknown_precision_message(std::string_view name);
std::string_view device_type_name(DeviceType type);  ///< "cpu", "gpu", "tpu", "accelerator"
std::optional<DeviceType> parse_device_type(std::string_view name);
std::vector<std::string_view> device_type_names();  ///< In the table's order.

/// Storage bytes of one weight element (fp32 4, fp16 2, int8 1, int4 4.125 bits with one fp16
/// scale per group of 128).
double weight_bytes_per_element(Precision precision);
/// Storage bytes of one activation element between layers: 16 bits under fp8 (recipes
/// quantize a product's inputs as it reads them) and with int4 weights.
double activation_bytes_per_element(Precision precision);
/// Bytes of one activation element kept in memory at `precision`: a KV cache, or what a
/// training step saves for backward (an fp8 copy keeps 1 B).
double stored_activation_bytes(Precision precision);

/// Dense peak rates for one precision; 0 where the device has no such unit.
struct PeakRate {
  double vector_flops_per_s = 0;  ///< SIMD / CUDA cores / VPU.
  double matrix_flops_per_s = 0;  ///< Tensor cores / MXU / AMX / XMX / MFMA.
};

/// Why a peak is an estimate rather than a vendor's figure; "" where it is sourced.
struct PeakEstimate {
  std::string vector;  ///< Reason for the vector peak.
  std::string matrix;  ///< Reason for the matrix peak.
  bool empty() const { return vector.empty() && matrix.empty(); }
};

/// An interconnect link.
struct Link {
  std::string name;                  ///< "NVLink 4", "PCIe 5.0 x16".
  double bandwidth_bytes_per_s = 0;  ///< As the source states it; see `direction`.
  std::string direction;             ///< "bidirectional" or "per_direction".
  /// A full mesh without a switch (MI300X's xGMI, Gaudi's scale-up ports): the bandwidth is
  /// split evenly over direct links to this many other devices; 0 where a switch (NVSwitch)
  /// or a single link gives every device all of it.
  int peers = 0;
  /// How many devices this link joins in the vendor's reference system (a DGX's 8 GPUs over
  /// NVLink, a TPU slice over ICI): a data-parallel group larger than that crosses
  /// `inter_node`. 0 where the table does not say (PCIe cards: it depends on the server).
  int domain_devices = 0;
};

/// A link's bandwidth in one direction (half a bidirectional figure).
inline double link_per_direction(const Link& link) {
  return link.direction == "bidirectional" ? link.bandwidth_bytes_per_s / 2
                                           : link.bandwidth_bytes_per_s;
}

/// The bandwidth in one direction that each member of a group of `group` devices can use for
/// the group's collectives: all of it through a switch; on a full mesh, only its links to the
/// group's other members (2 of 8 MI300Xs: one xGMI link of seven).
inline double group_per_direction(const Link& link, std::int64_t group) {
  const double all = link_per_direction(link);
  if (link.peers <= 0 || group <= 1 || group - 1 >= link.peers) return all;
  return all * static_cast<double>(group - 1) / link.peers;
}

/// An indicative on-demand price.
struct Price {
  double usd_per_hour = 0;  ///< Per device-hour.
  std::string date;         ///< "YYYY-MM" when the price was seen.
  std::string source;
};

/// How the model is run: one kernel per layer dispatched by a framework from Python (PyTorch
/// eager); one kernel per layer from a graph executor (TensorFlow 1 graphs without XLA,
/// TorchScript), with cheaper dispatch; compiled (TensorRT, XLA, CUDA graphs such as
/// torch.compile's "reduce-overhead" mode) with elementwise layers fused into their
/// neighbours and the cheapest launch per kernel; or inductor (torch.compile's default mode):
/// fused as compiled, each kernel launched from Python as in eager.
enum class Profile { kEager, kGraph, kCompiled, kInductor };
std::string_view profile_name(Profile profile);  ///< "eager", "graph", "compiled", "inductor".
std::optional<Profile> parse_profile(std::string_view name);
/// All profile names, in the order above.
std::vector<std::string_view> profile_names();
/// `unknown profile "x"; expected "eager", "graph", "compiled" or "inductor"` (did you mean).
std::string unknown_profile_message(std::string_view name);
/// Whether elementwise layers fuse into their neighbours (compiled and inductor).
bool fuses_elementwise(Profile profile);

/// Free parameters of the performance model for one device type (data, not code).
struct PerformanceParams {
  double matrix_efficiency = 0.7;     ///< Fraction of the matrix peak large products reach.
  double vector_efficiency = 0.6;     ///< Fraction of the vector peak elementwise work reaches.
  double memory_efficiency = 0.8;     ///< Fraction of the peak bandwidth streaming reaches.
  double eager_overhead_s = 10e-6;    ///< Per kernel, framework eager (dispatch + launch).
  double graph_overhead_s = 5e-6;     ///< Per kernel, graph executor without fusion.
  double compiled_overhead_s = 3e-6;  ///< Per kernel, compiled (graph launch).
  Profile default_profile = Profile::kEager;  ///< The profile when none is asked for.
  /// Tensor-parallel all-reduce: t = latency + 2(n-1)/n · bytes / (efficiency · link
  /// bandwidth per direction), the ring algorithm's traffic (nccl-tests' bus bandwidth).
  double allreduce_latency_s = 20e-6;          ///< Per all-reduce, a library call (NCCL).
  double compiled_allreduce_latency_s = 8e-6;  ///< Compiled: fused one-shot kernels in graphs.
  double allreduce_efficiency = 0.77;          ///< Bus bandwidth / link bandwidth.
  /// Across nodes: each ring or tree step over the network adds this (NCCL's per-step network
  /// latency); the library call's own latency is paid once per level, as above.
  double network_step_latency_s = 14e-6;
  /// NVIDIA: fraction of the dense matrix peak a product with weights reaches when its output
  /// or input features are not a multiple of 16 bytes (cuBLAS's unaligned kernels); 0: timed
  /// like the others.
  double misaligned_matrix_efficiency = 0;

  double allreduce_latency(Profile profile) const {
    return profile == Profile::kCompiled ? compiled_allreduce_latency_s : allreduce_latency_s;
  }

  double overhead_s(Profile profile) const {
    switch (profile) {
      case Profile::kEager:
      case Profile::kInductor:  // Inductor's wrapper launches each kernel from Python.
        return eager_overhead_s;
      case Profile::kGraph:
        return graph_overhead_s;
      case Profile::kCompiled:
        break;
    }
    return compiled_overhead_s;
  }
};

/// A device's own values for some performance parameters (from `capcalc calibrate` or a user
/// file); unset ones come from the device type's.
struct PerformanceOverride {
  std::optional<double> matrix_efficiency;
  std::optional<double> vector_efficiency;
  std::optional<double> memory_efficiency;
  std::optional<double> eager_overhead_s;
  std::optional<double> compiled_overhead_s;
  std::optional<double> graph_overhead_s;
  bool empty() const {
    return !matrix_efficiency && !vector_efficiency && !memory_efficiency && !eager_overhead_s &&
           !compiled_overhead_s && !graph_overhead_s;
  }
};

/// One device of the table.
struct Device {
  std::string id;                    ///< Kebab-case, e.g. "a100-sxm4-80gb".
  std::string name;                  ///< Vendor's name.
  std::vector<std::string> aliases;  ///< Other names `--gpu` accepts.
  DeviceType type = DeviceType::kGpu;
  std::string vendor;
  int release_year = 0;                                ///< 0 if unknown.
  std::array<PeakRate, kPrecisionCount> dense_peak{};  ///< Indexed by Precision.
  double sparsity_2_4_speedup = 1;  ///< Matrix-op gain from 2:4 sparsity; 1 = no support.
  double memory_bytes = 0;
  double memory_bandwidth_bytes_per_s = 0;
  double cache_bytes = 0;  ///< On-chip L2/SRAM; 0 if unknown.
  /// The independent units a GEMM's output tiles are spread over: NVIDIA SMs, AMD CUs, TPU MXUs,
  /// Gaudi MMEs, Apple GPU cores, CPU cores; 0 if unknown.
  int compute_units = 0;
  std::string compute_unit_name;  ///< "SM", "CU", "MXU", "MME", "GPU core", "core"; "" if unknown.
  double boost_clock_hz = 0;      ///< The clock the matrix peaks are stated at; 0 if unknown.
  /// The clock the vendor measured its own libraries holding under sustained dense matrix work,
  /// per precision (indexed by Precision); 0 where no vendor states one.
  std::array<double, kPrecisionCount> sustained_matrix_clock_hz{};
  double tdp_w = 0;  ///< 0 if unknown.
  std::optional<Link> intra_node;
  std::optional<Link> inter_node;
  std::optional<Price> price;
  /// Primary documents of the figures (vendor datasheets, whitepapers, product pages, the
  /// runtime's own docs): the built-in table's test holds every peak to one of these.
  std::vector<std::string> sources;
  /// Secondary copies that agree with the figures (aggregators, mirrors, price trackers).
  std::vector<std::string> corroboration;
  /// Why a peak is an estimate that no vendor document states, per precision (indexed by
  /// Precision); empty where the sources state it or primary facts derive it.
  std::array<PeakEstimate, kPrecisionCount> peak_estimate{};
  std::string notes;
  PerformanceOverride performance;  ///< The device's own performance parameters, if any.

  const PeakRate& peak(Precision precision) const {
    return dense_peak[static_cast<std::size_t>(precision)];
  }
  bool supports(Precision precision) const {
    return peak(precision).vector_flops_per_s > 0 || peak(precision).matrix_flops_per_s > 0;
  }
  std::vector<Precision> precisions() const;  ///< Those the device supports.
  /// The fraction of `precision`'s matrix peak the device's clock leaves under sustained matrix
  /// work (sustained over boost clock); 1 where the vendor states no sustained clock.
  double matrix_clock_fraction(Precision precision) const {
    const double clock = sustained_matrix_clock_hz[static_cast<std::size_t>(precision)];
    return clock > 0 && boost_clock_hz > 0 ? std::min(1.0, clock / boost_clock_hz) : 1.0;
  }
  /// Why `precision`'s peaks are unsourced estimates; empty strings where they are sourced.
  const PeakEstimate& estimate_of(Precision precision) const {
    return peak_estimate[static_cast<std::size_t>(precision)];
  }
};

/// The whole table.
struct HardwareTable {
  std::string version;  ///< e.g. "2026.12".
  std::string updated;  ///< Date of the last change of figures.
  std::array<PerformanceParams, kDeviceTypeCount> performance{};  ///< Indexed by DeviceType.
  std::array<bool, kDeviceTypeCount> performance_given{};  ///< Types the file gave values for.
  std::vector<Device> devices;

  /// By id or alias, ignoring case and treating '-', '_' and ' ' alike; nullptr if none.
  const Device* find(std::string_view name) const;
  /// The device, or a capcalc::Error listing the closest names ("did you mean").
  const Device& get(std::string_view name) const;
  const PerformanceParams& performance_for(DeviceType type) const {
    return performance[static_cast<std::size_t>(type)];
  }
  /// The device type's parameters with the device's own overrides applied.
  PerformanceParams performance_for(const Device& device) const;
};

/// Parses a hardware table; problems are capcalc::Error with file and JSON pointer.
HardwareTable parse_hardware(std::string_view text, const std::string& file);
HardwareTable load_hardware(const std::string& path);

/// Puts a user's table on top of `base`: a device with the same id replaces the built-in one,
/// new devices come first (so their aliases win), and the performance parameters the overlay
/// gives for a device type replace the base's.
void merge_hardware(HardwareTable& base, HardwareTable overlay);

/// The table at `path` with each of `overlays` merged on top, in order.
HardwareTable load_hardware(const std::string& path, const std::vector<std::string>& overlays);

}  // namespace capcalc
