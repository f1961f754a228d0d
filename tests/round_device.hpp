// A device and performance parameters with round figures, so that the expected times in the
// prediction tests can be worked out by hand.
#pragma once

#include <string>

#include "capcalc/hardware.hpp"

namespace capcalc::test {

/// fp32: 10 TFLOP/s on vector units only; fp16: 20 vector, 100 matrix; 16 GB at 1 TB/s.
inline Device round_device() {
  Device d;
  d.id = "round";
  d.name = "Round GPU";
  d.type = DeviceType::kGpu;
  d.dense_peak[static_cast<std::size_t>(Precision::kFp32)] = {10e12, 0};       // Vector only.
  d.dense_peak[static_cast<std::size_t>(Precision::kFp16)] = {20e12, 100e12};  // + matrix.
  d.memory_bytes = 16e9;
  d.memory_bandwidth_bytes_per_s = 1e12;
  d.sources = {"https://example.invalid/test-device"};
  return d;
}

/// Half of every peak; 1 us per kernel eager, 0.1 us compiled.
inline PerformanceParams round_params() {
  PerformanceParams p;
  p.matrix_efficiency = 0.5;
  p.vector_efficiency = 0.5;
  p.memory_efficiency = 0.5;
  p.eager_overhead_s = 1e-6;
  p.compiled_overhead_s = 1e-7;
  p.network_step_latency_s = 5e-6;  // Each ring or tree step across nodes.
  return p;
}

/// The round device joined to its peers by a link of `bidirectional` bytes/s (half of it each
/// way).
inline Device linked_round_device(const std::string& name, double bidirectional) {
  Device d = round_device();
  d.intra_node = Link{name, bidirectional, "bidirectional"};
  return d;
}

/// The round parameters with collectives of 10 us latency at half the link's bandwidth.
inline PerformanceParams collective_round_params() {
  PerformanceParams p = round_params();
  p.allreduce_latency_s = 10e-6;
  p.allreduce_efficiency = 0.5;
  return p;
}

/// `d` in nodes of 4, joined by a network of 5 GB/s a device each way.
inline Device in_nodes_of_four(Device d) {
  d.intra_node->domain_devices = 4;
  d.inter_node = Link{"Round network", 10e9, "per_direction"};
  return d;
}

}  // namespace capcalc::test
