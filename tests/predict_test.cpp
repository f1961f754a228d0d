// The roofline prediction, checked against the formula in predict.hpp on a device with round
// figures (so the expected values are easy to follow by hand).
#include "capcalc/predict.hpp"

#include "capcalc/error.hpp"
#include "capcalc/model.hpp"
#include "catch.hpp"

using namespace capcalc;

namespace {

Device round_device() {
  Device d;
  d.id = "round";
  d.name = "Round GPU";
  d.type = DeviceType::kGpu;
  d.dense_peak[static_cast<std::size_t>(Precision::kFp32)] = {10e12, 0};         // Vector only.
  d.dense_peak[static_cast<std::size_t>(Precision::kFp16)] = {20e12, 100e12};    // + matrix.
  d.memory_bytes = 16e9;
  d.memory_bandwidth_bytes_per_s = 1e12;
  d.sources = {"https://example.invalid/test-device"};
  return d;
}

PerformanceParams round_params() {
  PerformanceParams p;
  p.matrix_efficiency = 0.5;
  p.vector_efficiency = 0.5;
  p.memory_efficiency = 0.5;
  p.layer_overhead_s = 1e-6;
  return p;
}

Graph one_linear(std::int64_t batch, std::int64_t in, std::int64_t out) {
  const std::string text = R"({"format": "capcalc-model/1", "name": "fc",
    "dims": {"batch": )" + std::to_string(batch) + R"(},
    "inputs": [{"name": "x", "shape": ["batch", )" + std::to_string(in) + R"(]}],
    "layers": [{"name": "fc", "op": "linear", "out_features": )" + std::to_string(out) +
                           R"(, "bias": false}]})";
  return parse_model(text, "fc.json");
}

}  // namespace

TEST_CASE("predict: a large GEMM is compute-bound on matrix units", "[predict]") {
  const Graph g = one_linear(4096, 4096, 4096);
  Workload w;
  w.precision = Precision::kFp16;
  const Estimate e = estimate(g, round_device(), round_params(), w);
  REQUIRE(e.layers.size() == 1);
  const double macs = 4096.0 * 4096 * 4096;
  const double bytes = (4096.0 * 4096 * 2 + 4096.0 * 4096) * 2;  // In + out + weights, 2 B each.
  CHECK(e.layers[0].compute_s == Approx(2 * macs / (100e12 * 0.5)));
  CHECK(e.layers[0].memory_s == Approx(bytes / (1e12 * 0.5)));
  CHECK(e.layers[0].bound == Bound::kCompute);
  CHECK(e.latency_s == Approx(2 * macs / 50e12 + 1e-6));
  CHECK(e.throughput_per_s == Approx(4096 / e.latency_s));
  CHECK(e.flops == Approx(2 * macs));
}

TEST_CASE("predict: fp32 MACs run on vector units when there is no fp32 matrix peak",
          "[predict]") {
  const Graph g = one_linear(4096, 4096, 4096);
  const Estimate e = estimate(g, round_device(), round_params(), Workload{});
  CHECK(e.layers[0].compute_s == Approx(2.0 * 4096 * 4096 * 4096 / (10e12 * 0.5)));
}

TEST_CASE("predict: batch-1 matrix-vector work is memory-bound", "[predict]") {
  const Graph g = one_linear(1, 8192, 8192);
  Workload w;
  w.precision = Precision::kFp16;
  const Estimate e = estimate(g, round_device(), round_params(), w);
  CHECK(e.layers[0].bound == Bound::kMemory);
  const double bytes = (8192.0 + 8192 + 8192.0 * 8192) * 2;
  CHECK(e.latency_s == Approx(bytes / 0.5e12 + 1e-6));
}

TEST_CASE("predict: tiny layers are overhead-bound", "[predict]") {
  const Graph g = one_linear(1, 16, 16);
  const Estimate e = estimate(g, round_device(), round_params(), Workload{});
  CHECK(e.layers[0].bound == Bound::kOverhead);
}

TEST_CASE("predict: inference memory is weights plus peak live activations", "[predict]") {
  const Graph g = one_linear(8, 1000, 500);
  Workload w;
  w.precision = Precision::kFp16;
  const Estimate e = estimate(g, round_device(), round_params(), w);
  CHECK(e.memory.weight_bytes == Approx(1000.0 * 500 * 2));
  CHECK(e.memory.activation_bytes == Approx((8.0 * 1000 + 8.0 * 500) * 2));  // Input and output.
  CHECK(e.memory.gradient_bytes == 0);
  CHECK(e.fits);
}

TEST_CASE("predict: training adds backward, Adam state and saved activations", "[predict]") {
  const Graph g = one_linear(64, 1024, 1024);
  Workload inference;
  inference.precision = Precision::kFp16;
  Workload training = inference;
  training.mode = Mode::kTraining;
  const Estimate fwd = estimate(g, round_device(), round_params(), inference);
  const Estimate step = estimate(g, round_device(), round_params(), training);
  const double params = 1024.0 * 1024;
  // The layer reads a model input: weight gradient only, so backward MACs = forward MACs.
  CHECK(step.flops == Approx(fwd.flops * 2 + 0));
  CHECK(step.optimizer_s == Approx(params * 28 / 0.5e12 + 1e-6));
  CHECK(step.memory.gradient_bytes == Approx(params * 2));
  CHECK(step.memory.optimizer_bytes == Approx(params * (8 + 4)));  // Moments + fp32 master.
  CHECK(step.memory.activation_bytes == Approx(64.0 * 1024 * 2));  // The layer's output.
  CHECK(step.latency_s > fwd.latency_s);
}

TEST_CASE("predict: a precision the device lacks is an error listing what it has",
          "[predict]") {
  const Graph g = one_linear(1, 16, 16);
  Workload w;
  w.precision = Precision::kInt8;
  REQUIRE_THROWS_WITH(estimate(g, round_device(), round_params(), w),
                      "Round GPU has no int8 peak in the hardware table (it has: fp32, fp16)");
}

TEST_CASE("predict: not fitting is reported", "[predict]") {
  const Graph g = one_linear(1, 100000, 100000);  // 1e10 weights = 40 GB at fp32.
  const Estimate e = estimate(g, round_device(), round_params(), Workload{});
  CHECK_FALSE(e.fits);
}
