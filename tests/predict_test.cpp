// The roofline prediction, checked against the formula in predict.hpp on a device with round
// figures (so the expected values are easy to follow by hand).
#include "capcalc/predict.hpp"

#include "capcalc/error.hpp"
#include "capcalc/model.hpp"

#include "catch.hpp"
#include "round_device.hpp"
#include "test_graphs.hpp"

using namespace capcalc;
using capcalc::test::attention_moe_block;
using capcalc::test::collective_round_params;
using capcalc::test::in_nodes_of_four;
using capcalc::test::linked_round_device;
using capcalc::test::mlp_blocks;
using capcalc::test::one_moe_layer;
using capcalc::test::round_device;
using capcalc::test::round_params;

namespace {

Graph one_linear(std::int64_t batch, std::int64_t in, std::int64_t out) {
  const std::string text = R"({"format": "capcalc-model/1", "name": "fc",
    "dims": {"batch": )" + std::to_string(batch) +
                           R"(},
    "inputs": [{"name": "x", "shape": ["batch", )" +
                           std::to_string(in) + R"(]}],
    "layers": [{"name": "fc", "op": "linear", "out_features": )" +
                           std::to_string(out) + R"(, "bias": false}]})";
  return parse_model(text, "fc.json");
}

}  // namespace

namespace {

// fp16 training on `devices` devices, the experts split over `expert_parallel` of them.
Workload fp16_training(std::int64_t devices, std::int64_t expert_parallel = 1) {
  Workload w;
  w.precision = Precision::kFp16;
  w.mode = Mode::kTraining;
  w.devices = devices;
  w.expert_parallel = expert_parallel;
  return w;
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
  CHECK(e.latency_s == Approx(2 * macs / 50e12));  // max(compute, memory, floor).
  CHECK(e.throughput_per_s == Approx(4096 / e.latency_s));
  CHECK(e.flops == Approx(2 * macs));
}

// AMD measures MI300X's matrix units holding 1,230 MHz under sustained fp8 products, against
// the 2,100 MHz its peaks are stated at: matrix work runs at that fraction of the peak, vector
// and memory work do not, and a precision without a stated clock keeps the peaks' clock.
TEST_CASE("predict: matrix work runs at the device's sustained clock where its vendor states one",
          "[predict]") {
  Device d = round_device();
  d.boost_clock_hz = 2000e6;
  d.sustained_matrix_clock_hz[static_cast<std::size_t>(Precision::kFp16)] = 1000e6;
  CHECK(d.matrix_clock_fraction(Precision::kFp16) == Approx(0.5));
  CHECK(d.matrix_clock_fraction(Precision::kFp32) == 1);
  const Graph g = one_linear(4096, 4096, 4096);
  Workload w;
  w.precision = Precision::kFp16;
  const Estimate e = estimate(g, d, round_params(), w);
  const double macs = 4096.0 * 4096 * 4096;
  // 100 TFLOP/s x 1000 / 2000 MHz x 0.5 efficiency = 25 TFLOP/s.
  CHECK(e.layers[0].compute_s == Approx(2 * macs / 25e12));
  const double bytes = (4096.0 * 4096 * 2 + 4096.0 * 4096) * 2;
  CHECK(e.layers[0].memory_s == Approx(bytes / (1e12 * 0.5)));  // Bandwidth untouched.
  // Attention's products of two activations run on the same matrix units at the same clock.
  Workload narrow;
  narrow.precision = Precision::kFp16;
  const Graph one = parse_model(R"({"format": "capcalc-model/1", "name": "attn",
    "dims": {"batch": 1}, "inputs": [{"name": "x", "shape": ["batch", 4096, 1024]}],
    "layers": [{"name": "attn", "op": "attention", "heads": 16}]})",
                                "attn.json");
  const Estimate slow = estimate(one, d, round_params(), narrow);
  const Estimate fast = estimate(one, round_device(), round_params(), narrow);
  CHECK(slow.layers[0].compute_s > 1.9 * fast.layers[0].compute_s);
  // Without a boost clock there is nothing to take a fraction of.
  d.boost_clock_hz = 0;
  CHECK(d.matrix_clock_fraction(Precision::kFp16) == 1);
}

TEST_CASE("predict: fp32 MACs run on vector units when there is no fp32 matrix peak", "[predict]") {
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
  CHECK(e.latency_s == Approx(bytes / 0.5e12));
}

TEST_CASE("predict: tiny layers are overhead-bound", "[predict]") {
  const Graph g = one_linear(1, 16, 16);
  const Estimate e = estimate(g, round_device(), round_params(), Workload{});
  CHECK(e.layers[0].bound == Bound::kHost);
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
  CHECK(step.optimizer_s == Approx(params * 28 / 0.5e12));  // Adam: 7 fp32 tensors.
  CHECK(step.memory.gradient_bytes == Approx(params * 2));
  CHECK(step.memory.optimizer_bytes == Approx(params * (8 + 4)));  // Moments + fp32 master.
  CHECK(step.memory.activation_bytes == Approx(64.0 * 1024 * 2));  // The layer's output.
  CHECK(step.latency_s > fwd.latency_s);
}

TEST_CASE("predict: a precision the device lacks is an error listing what it has", "[predict]") {
  const Graph g = one_linear(1, 16, 16);
  Workload w;
  w.precision = Precision::kInt8;
  REQUIRE_THROWS_WITH(estimate(g, round_device(), round_params(), w),
                      "Round GPU has no int8 peak in the hardware table (it has: fp32, fp16); "
                      "for int8 weights with fp16 math: --weight-precision int8 --precision fp16");
  w.precision = Precision::kFp8;  // Not a weight-only format: no such hint.
  REQUIRE_THROWS_WITH(estimate(g, round_device(), round_params(), w),
                      "Round GPU has no fp8 peak in the hardware table (it has: fp32, fp16)");
}

TEST_CASE("predict: not fitting is reported", "[predict]") {
  const Graph g = one_linear(1, 100000, 100000);  // 1e10 weights = 40 GB at fp32.
  const Estimate e = estimate(g, round_device(), round_params(), Workload{});
  CHECK_FALSE(e.fits);
}

namespace {

Graph parse(const std::string& layers, const std::string& input = "[\"batch\", 64, 32, 32]") {
  return parse_model(R"({"format": "capcalc-model/1", "name": "t", "dims": {"batch": 8},
    "inputs": [{"name": "x", "shape": )" +
                         input + R"(}], "layers": [)" + layers + "]}",
                     "t.json");
}

// The round parameters with the GPU floors: eager 60 µs, graph 30 µs, compiled as given.
PerformanceParams floored_params(double compiled_overhead_s) {
  PerformanceParams params = round_params();
  params.eager_overhead_s = 60e-6;
  params.graph_overhead_s = 30e-6;
  params.compiled_overhead_s = compiled_overhead_s;
  return params;
}

}  // namespace

TEST_CASE("predict: depthwise convolutions run on vector units", "[predict]") {
  // 9 MACs per output (3x3 depthwise) is below kMinMatrixReduction; a dense 3x3 has 576.
  const Graph g = parse(R"({"op": "conv2d", "out_channels": 64, "kernel": 3, "padding": 1,
                            "groups": 64, "bias": false},
                           {"op": "conv2d", "out_channels": 64, "kernel": 3, "padding": 1,
                            "bias": false})");
  Workload w;
  w.precision = Precision::kFp16;
  const Estimate e = estimate(g, round_device(), round_params(), w);
  CHECK_FALSE(e.layers[0].matrix_units);
  CHECK(e.layers[0].compute_s == Approx(2.0 * 8 * 64 * 32 * 32 * 9 / (20e12 * 0.5)));
  CHECK(e.layers[1].matrix_units);
}

TEST_CASE("predict: the compiled profile fuses elementwise layers and lowers the floor",
          "[predict]") {
  const Graph g = parse(R"({"op": "conv2d", "out_channels": 64, "kernel": 3, "padding": 1},
                           {"op": "batchnorm"}, {"op": "relu"})");
  Workload w;
  w.precision = Precision::kFp16;
  w.profile = Profile::kEager;
  const Estimate eager = estimate(g, round_device(), round_params(), w);
  w.profile = Profile::kCompiled;
  const Estimate compiled = estimate(g, round_device(), round_params(), w);
  CHECK(eager.layers[2].bound != Bound::kFused);
  CHECK(compiled.layers[1].bound == Bound::kFused);
  CHECK(compiled.layers[2].bound == Bound::kFused);
  CHECK(compiled.layers[2].bytes == 0);
  // A fused layer keeps its arithmetic: relu's 1 FLOP per element at the vector rate.
  CHECK(compiled.layers[2].time_s == Approx(8.0 * 64 * 32 * 32 / (20e12 * 0.5)));
  CHECK(compiled.latency_s < eager.latency_s);
  CHECK(compiled.profile == Profile::kCompiled);
  // Unset: the device type's default.
  w.profile.reset();
  CHECK(estimate(g, round_device(), round_params(), w).profile == Profile::kEager);
}

TEST_CASE("predict: the graph profile keeps every kernel at its own floor", "[predict]") {
  // A tiny elementwise chain: every kernel is below its floor, so the latency is the number
  // of kernels times the profile's floor, and nothing is fused.
  const Graph g = parse(R"({"op": "relu"}, {"op": "relu"}, {"op": "relu"})", "[\"batch\", 4]");
  const PerformanceParams params = floored_params(3e-6);
  Workload w;
  w.precision = Precision::kFp16;
  w.profile = Profile::kGraph;
  const Estimate graph = estimate(g, round_device(), params, w);
  CHECK(graph.profile == Profile::kGraph);
  for (const LayerEstimate& layer : graph.layers) {
    CHECK(layer.bound == Bound::kHost);
    CHECK(layer.time_s == Approx(30e-6));
  }
  CHECK(graph.latency_s == Approx(3 * 30e-6));
  w.profile = Profile::kEager;
  CHECK(estimate(g, round_device(), params, w).latency_s == Approx(3 * 60e-6));
  CHECK(parse_profile("graph") == Profile::kGraph);
  CHECK(profile_name(Profile::kGraph) == "graph");
}

TEST_CASE("predict: the inductor profile fuses as compiled and launches at the eager floor",
          "[predict]") {
  // torch.compile's default mode: Inductor fuses the elementwise layers, and its Python
  // wrapper launches each remaining kernel, forward and backward (AOTAutograd), one by one.
  const Graph g = parse(R"({"op": "conv2d", "out_channels": 8, "kernel": 1},
                           {"op": "batchnorm"}, {"op": "relu"},
                           {"op": "conv2d", "out_channels": 8, "kernel": 1}, {"op": "relu"})",
                        "[\"batch\", 4, 2, 2]");
  const PerformanceParams params = floored_params(7e-6);
  Workload w;
  w.precision = Precision::kFp16;
  w.profile = Profile::kCompiled;
  const Estimate compiled = estimate(g, round_device(), params, w);
  w.profile = Profile::kInductor;
  const Estimate inductor = estimate(g, round_device(), params, w);
  CHECK(inductor.profile == Profile::kInductor);
  std::size_t kernels = 0;
  for (std::size_t i = 0; i < g.layers.size(); ++i) {
    CHECK((inductor.layers[i].bound == Bound::kFused) ==
          (compiled.layers[i].bound == Bound::kFused));
    if (inductor.layers[i].bound == Bound::kFused) continue;
    ++kernels;
    CHECK(inductor.layers[i].time_s == Approx(60e-6));  // Tiny kernels: the floor.
  }
  CHECK(kernels == 2);  // The two convolutions; batchnorm and both relus fuse.
  CHECK(inductor.latency_s == Approx(compiled.latency_s - 2 * 7e-6 + 2 * 60e-6));
  // Training: batchnorm no longer fuses (its statistics are computed), every layer keeps a
  // backward of two kernels (a fused forward's too), launched from Python as well: 3 forward
  // kernels, 10 backward and the optimizer's update, each at the eager floor instead of the
  // compiled one.
  w.mode = Mode::kTraining;
  const Estimate step = estimate(g, round_device(), params, w);
  w.profile = Profile::kCompiled;
  const Estimate compiled_step = estimate(g, round_device(), params, w);
  CHECK(step.latency_s - compiled_step.latency_s == Approx(14 * (60e-6 - 7e-6)));
  CHECK(parse_profile("inductor") == Profile::kInductor);
  CHECK(profile_name(Profile::kInductor) == "inductor");
  CHECK(unknown_profile_message("inductr") ==
        "unknown profile \"inductr\"; expected \"eager\", \"graph\", \"compiled\" or "
        "\"inductor\"; did you mean \"inductor\"?");
}

TEST_CASE("predict: 2:4 sparsity speeds up weight MACs only where the hardware supports it",
          "[predict]") {
  const Graph g = one_linear(8192, 8192, 8192);
  Workload w;
  w.precision = Precision::kFp16;
  Device supported = round_device();
  supported.sparsity_2_4_speedup = 2;
  const Estimate dense = estimate(g, supported, round_params(), w);
  w.sparsity = Sparsity::k2of4;
  const Estimate sparse = estimate(g, supported, round_params(), w);
  CHECK(sparse.sparsity_speedup == 2);
  CHECK(sparse.layers[0].compute_s == Approx(dense.layers[0].compute_s / 2));
  // Kept half of the weights at 2 bytes plus 2 bits of index each.
  CHECK(sparse.memory.weight_bytes == Approx(8192.0 * 8192 * 0.5 * 2.25));
  const Estimate unsupported = estimate(g, round_device(), round_params(), w);
  CHECK(unsupported.sparsity_speedup == 1);
  CHECK(unsupported.layers[0].compute_s == Approx(dense.layers[0].compute_s));
  w.sparsity = Sparsity::kUnstructured;  // Dense hardware gains nothing.
  CHECK(estimate(g, supported, round_params(), w).latency_s == Approx(dense.latency_s));
}

TEST_CASE("predict: optimizer state and update traffic per optimizer", "[predict]") {
  const Graph g = one_linear(4, 1000, 1000);
  Workload w;
  w.mode = Mode::kTraining;
  w.optimizer = Optimizer::kSgd;
  CHECK(estimate(g, round_device(), round_params(), w).memory.optimizer_bytes == 0);
  w.optimizer = Optimizer::kMomentum;
  CHECK(estimate(g, round_device(), round_params(), w).memory.optimizer_bytes == Approx(4e6));
  w.optimizer = Optimizer::kAdam;  // fp32 training: no master copy.
  CHECK(estimate(g, round_device(), round_params(), w).memory.optimizer_bytes == Approx(8e6));
  CHECK(optimizer_update_bytes(Optimizer::kSgd) == 12);
  CHECK(parse_optimizer("adamw") == Optimizer::kAdam);
}

TEST_CASE("predict: the largest batch that fits", "[predict]") {
  const Graph g = one_linear(8, 1000, 500);  // Activations per sample: (1000 + 500) x 4 B.
  const Estimate e = estimate(g, round_device(), round_params(), Workload{});
  const double weights = 1000.0 * 500 * 4;
  CHECK(e.max_batch == static_cast<std::int64_t>((16e9 - weights) / (1500.0 * 4)));
}

TEST_CASE("predict: data parallelism scales throughput ideally", "[predict]") {
  const Graph g = one_linear(64, 1024, 1024);
  Workload w;
  w.devices = 8;
  const Estimate one = estimate(g, round_device(), round_params(), Workload{});
  const Estimate eight = estimate(g, round_device(), round_params(), w);
  CHECK(eight.latency_s == Approx(one.latency_s));
  CHECK(eight.throughput_per_s == Approx(8 * one.throughput_per_s));
}

TEST_CASE("training_totals: steps, time, device-hours, cost and energy", "[predict]") {
  Estimate step;
  step.latency_s = 0.5;
  TrainingRun run;
  run.samples = 1281167.0 * 90;  // ImageNet-1k, 90 epochs.
  run.price_per_device_hour_usd = 2.0;
  run.power_w = 400;
  Workload eight;
  eight.devices = 8;
  const TrainingTotals t = training_totals(step, 256, eight, run);
  const double steps = std::ceil(1281167.0 * 90 / (256 * 8));
  CHECK(t.steps == steps);
  CHECK(t.time_s == Approx(steps * 0.5));
  CHECK(t.device_hours == Approx(steps * 0.5 * 8 / 3600));
  CHECK(*t.cost_usd == Approx(t.device_hours * 2));
  CHECK(*t.energy_kwh == Approx(t.device_hours * 0.4));
  run.price_per_device_hour_usd.reset();
  run.power_w = 0;
  const TrainingTotals bare = training_totals(step, 256, eight, run);
  CHECK_FALSE(bare.cost_usd.has_value());
  CHECK_FALSE(bare.energy_kwh.has_value());
}

TEST_CASE("predict: tensor parallelism splits work and memory, not the kernel floor", "[predict]") {
  // 64 x 4096 x 4096: 1.07 G MACs, compute-bound on the round device at any split here.
  const Graph g = one_linear(64, 4096, 4096);
  Workload one;
  one.mode = Mode::kTraining;
  Workload tp4 = one;
  tp4.devices = 8;
  tp4.tensor_parallel = 4;  // Two replicas of four devices.
  const Estimate a = estimate(g, round_device(), round_params(), one);
  const Estimate b = estimate(g, round_device(), round_params(), tp4);
  CHECK(b.memory.weight_bytes == Approx(a.memory.weight_bytes / 4));
  CHECK(b.memory.optimizer_bytes == Approx(a.memory.optimizer_bytes / 4));
  CHECK(b.memory.activation_bytes == Approx(a.memory.activation_bytes / 4));
  CHECK(b.flops == Approx(a.flops / 4));
  CHECK(b.layers[0].compute_s == Approx(a.layers[0].compute_s / 4));
  CHECK(b.throughput_per_s == Approx(2.0 * static_cast<double>(g.batch) / b.latency_s));
  // The floor does not split: a tiny layer takes the floor on every device.
  const Graph tiny = one_linear(1, 16, 16);
  const Estimate c = estimate(tiny, round_device(), round_params(), tp4);
  CHECK(c.layers[0].time_s ==
        Approx(estimate(tiny, round_device(), round_params(), one).layers[0].time_s));
  // The global batch counts replicas; every device is paid for.
  Estimate step;
  step.latency_s = 1;
  TrainingRun run;
  run.samples = 64.0 * 2 * 100;
  const TrainingTotals totals = training_totals(step, 64, tp4, run);
  CHECK(totals.steps == 100);
  CHECK(totals.device_hours == Approx(100.0 * 8 / 3600));
  Workload uneven = tp4;
  uneven.devices = 6;
  CHECK_THROWS_WITH(estimate(g, round_device(), round_params(), uneven),
                    ContainsSubstring("6 devices do not split into tensor-parallel groups of 4"));
}

namespace {

// Two transformer layers, d = 1024 (16 heads of 64), batch 2 x seq 256.
Graph two_attention_layers() {
  return parse_model(R"({"format": "capcalc-model/1", "name": "two_layers",
    "dims": {"batch": 2, "seq": 256},
    "inputs": [{"name": "x", "shape": ["batch", "seq", 1024]}],
    "layers": [
      {"name": "attn0", "op": "attention", "heads": 16},
      {"name": "fc0", "op": "linear", "out_features": 1024},
      {"name": "attn1", "op": "attention", "heads": 16},
      {"name": "fc1", "op": "linear", "out_features": 1024}]})",
                     "two_layers.json");
}

}  // namespace

TEST_CASE("predict: tensor parallelism all-reduces each block's output twice over the link",
          "[predict]") {
  // Two transformer layers, d = 1024, batch 2 x seq 256: each attention layer's output is
  // 2·256·1024 = 524,288 elements.
  const Graph g = two_attention_layers();
  Device d = round_device();
  d.intra_node = Link{"Round link", 200e9, "bidirectional"};  // 100 GB/s per direction.
  PerformanceParams p = round_params();
  p.allreduce_latency_s = 10e-6;
  p.compiled_allreduce_latency_s = 4e-6;
  p.allreduce_efficiency = 0.5;
  Workload w;
  w.precision = Precision::kFp16;
  w.devices = 4;
  w.tensor_parallel = 4;
  const double bytes = 524288.0 * 2;
  // Ring over 4: 2·3/4 of the bytes cross each device's link at 50 GB/s.
  const double one = 10e-6 + 1.5 * bytes / 50e9;
  const Estimate e = estimate(g, d, p, w);
  CHECK(e.communication_modelled);
  CHECK(e.allreduces == 4);
  CHECK(e.allreduce_bytes == Approx(4 * bytes));
  CHECK(e.communication_s == Approx(4 * one));
  // It is part of the latency: the layers' times plus the all-reduces.
  double layers = 0;
  for (const LayerEstimate& l : e.layers)
    layers += l.time_s;
  CHECK(e.latency_s == Approx(layers + 4 * one));

  // Compiled engines: the one-shot kernel's latency.
  w.profile = Profile::kCompiled;
  CHECK(estimate(g, d, p, w).communication_s == Approx(4 * (4e-6 + 1.5 * bytes / 50e9)));
  w.profile.reset();
  // fp8 all-reduces its activations in 16 bits.
  d.dense_peak[static_cast<std::size_t>(Precision::kFp8)] = {0, 200e12};
  Workload fp8 = w;
  fp8.precision = Precision::kFp8;
  CHECK(estimate(g, d, p, fp8).allreduce_bytes == Approx(4 * bytes));
  // Training: as many again for the input gradients; checkpointing recomputes the forward's.
  // Training defaults to sequence parallelism: each all-reduce is a reduce-scatter and an
  // all-gather, 3/4 of the bytes each at 50 GB/s, with a latency each: one all-reduce and 10 us.
  Workload train = w;
  train.mode = Mode::kTraining;
  CHECK(estimate(g, d, p, train).allreduces == 8);
  CHECK(estimate(g, d, p, train).sequence_parallel);
  train.checkpointing = true;
  CHECK(estimate(g, d, p, train).communication_s == Approx(12 * (one + 10e-6)));
  train.sequence_parallel = false;
  CHECK(estimate(g, d, p, train).communication_s == Approx(12 * one));
  train.sequence_parallel.reset();
  // Two devices: 2·1/2 of the bytes.
  w.devices = 2;
  w.tensor_parallel = 2;
  CHECK(estimate(g, d, p, w).communication_s == Approx(4 * (10e-6 + bytes / 50e9)));
  // A switchless full mesh of 7 peers (MI300X): 2 of 8 devices have one of the 7 links
  // between them, a seventh of the bandwidth; 4 have three; 8 have all of it.
  Device mesh = d;
  mesh.intra_node->peers = 7;
  CHECK(estimate(g, mesh, p, w).communication_s == Approx(4 * (10e-6 + bytes / (50e9 / 7))));
  w.devices = 4;
  w.tensor_parallel = 4;
  CHECK(estimate(g, mesh, p, w).communication_s ==
        Approx(4 * (10e-6 + 1.5 * bytes / (50e9 * 3 / 7))));
  w.devices = 8;
  w.tensor_parallel = 8;
  CHECK(estimate(g, mesh, p, w).communication_s == Approx(estimate(g, d, p, w).communication_s));
  w.devices = 2;
  w.tensor_parallel = 2;
  // No tensor parallelism, no all-reduce; no link in the table, not modelled (and said so).
  w.devices = 1;
  w.tensor_parallel = 1;
  CHECK(estimate(g, d, p, w).communication_s == 0);
  w.devices = 4;
  w.tensor_parallel = 4;
  const Estimate unlinked = estimate(g, round_device(), p, w);
  CHECK_FALSE(unlinked.communication_modelled);
  CHECK(unlinked.communication_s == 0);
  // A group of 4 over a link that joins 2 devices crosses the network: with none in the table
  // it is not modelled; with 10 GB/s per direction per device it runs in two levels (HCCL's
  // hierarchical all-reduce), 2 members a node over 2 nodes: reduce-scatter in the node (1/2 of
  // the bytes at 50 GB/s), all-reduce of each member's half over the 2 nodes (2·1/2 of it at
  // 5 GB/s, a ring of 2 network steps of 5 us), all-gather in the node, each level 10 us.
  Device pairs = d;
  pairs.intra_node->domain_devices = 2;
  CHECK_FALSE(estimate(g, pairs, p, w).communication_modelled);
  pairs.inter_node = Link{"Round network", 10e9, "per_direction"};
  const Estimate across = estimate(g, pairs, p, w);
  CHECK(across.communication_link == "Round link + Round network");
  CHECK(across.communication_bandwidth == Approx(10e9));
  const double two_level = 2 * (10e-6 + 0.5 * bytes / 50e9) + 10e-6 + 2 * 5e-6 + (bytes / 2) / 5e9;
  CHECK(across.communication_s == Approx(4 * two_level));
  // Training with checkpointing: three passes' worth (12) of reduce-scatter + all-gather
  // pairs, each level's halves of the all-reduce's bytes with a latency each and one network
  // step each: one more latency, the same 2 steps.
  CHECK(estimate(g, pairs, p, train).communication_s == Approx(12 * (two_level + 10e-6)));
  // Within the domain the link carries it.
  w.devices = 2;
  w.tensor_parallel = 2;
  CHECK(estimate(g, pairs, p, w).communication_link == "Round link");
}

TEST_CASE("predict: context parallelism splits the tokens and rings K and V", "[predict]") {
  // Two attention layers, d = 1024 (16 heads of 64, no grouping: K and V are 2 x 1024 elements a
  // token), batch 2 x seq 256 = 512 tokens. Over a context-parallel ring of 2, each device
  // holds 256 tokens: its K and V chunk is 2,048 x 256 elements, 1,048,576 bytes in fp16, sent
  // once a pass to its neighbour: 10 us + 1,048,576 B / (0.5 x 100 GB/s) = 30.97 us. Forward,
  // backward (K and V again and their gradients) make 3 such sends a layer.
  const Graph g = two_attention_layers();
  Device d = linked_round_device("Round link", 200e9);  // 100 GB/s per direction.
  PerformanceParams p = collective_round_params();
  Workload one;
  one.precision = Precision::kFp16;
  one.mode = Mode::kTraining;
  Workload ring = one;
  ring.context_parallel = 2;
  ring.devices = 2;
  const Estimate whole = estimate(g, d, p, one);
  const Estimate split = estimate(g, d, p, ring);
  const double send = 10e-6 + 1048576.0 / 50e9;
  CHECK(split.context_parallel_modelled);
  CHECK(split.context_parallel_link == "Round link");
  CHECK(split.context_parallel_send_s == Approx(2 * 3 * send));
  double exposed = 0;
  for (std::size_t i : {std::size_t{0}, std::size_t{2}})
    exposed += std::max(0.0, 3 * send - split.layers[i].time_s);
  CHECK(split.context_parallel_s == Approx(exposed).margin(1e-12));
  // Each device computes half of every layer's products and keeps half the activations; the
  // weights and their state are whole on each.
  CHECK(split.flops == Approx(whole.flops / 2));
  CHECK(split.memory.activation_bytes == Approx(whole.memory.activation_bytes / 2));
  CHECK(split.memory.weight_bytes == Approx(whole.memory.weight_bytes));
  // The two hold the same weights: their gradients are all-reduced, as replicas' are.
  CHECK(whole.data_parallel_s == 0);
  CHECK(split.data_parallel_s > 0);
  // Checkpointing recomputes the forward: a fourth send a layer.
  ring.checkpointing = true;
  CHECK(estimate(g, d, p, ring).context_parallel_send_s == Approx(2 * 4 * send));
  // Inference has no context parallelism here; the devices must split into whole rings.
  ring.checkpointing = false;
  ring.mode = Mode::kInference;
  CHECK_THROWS_WITH(estimate(g, d, p, ring),
                    "context parallelism splits training sequences: add --mode training");
  ring.mode = Mode::kTraining;
  ring.devices = 3;
  CHECK_THROWS_WITH(estimate(g, d, p, ring),
                    "3 devices do not split into model replicas of 2 (tensor-parallel 1 x "
                    "pipeline 1 x context-parallel 2)");
}

// gpt-oss ships its routed experts in MXFP4 and the rest in bf16: --expert-weight-precision
// stores and reads the experts' weights at their own size, the router's at the others'.
TEST_CASE("predict: the routed experts' weights can have their own storage", "[predict]") {
  const Graph g = one_moe_layer();
  const double expert = 3.0 * 1024 * 512;
  const double router = 1024.0 * 8;
  Workload w;
  w.precision = Precision::kFp16;
  Workload int8 = w;
  int8.expert_weight_precision = Precision::kInt8;
  const Estimate fp16 = estimate(g, round_device(), round_params(), w);
  const Estimate mixed = estimate(g, round_device(), round_params(), int8);
  // Router 2 bytes a weight, the 8 experts 1.
  CHECK(fp16.memory.weight_bytes == Approx(2 * (router + 8 * expert)));
  CHECK(mixed.memory.weight_bytes == Approx(2 * router + 8 * expert));
  // 512 tokens x 2 reach all 8 experts: each is read once, at 1 byte a weight, not 2.
  CHECK(fp16.layers[0].bytes - mixed.layers[0].bytes == Approx(8 * expert));
  // With 4 devices of experts, each reads the 2 it holds.
  Workload ep = int8;
  ep.devices = 4;
  ep.expert_parallel = 4;
  Workload ep16 = ep;
  ep16.expert_weight_precision.reset();
  CHECK(estimate(g, round_device(), round_params(), ep16).layers[0].bytes -
            estimate(g, round_device(), round_params(), ep).layers[0].bytes ==
        Approx(2 * expert));
  // Inference only, and only for a model with routed experts.
  Workload training = int8;
  training.mode = Mode::kTraining;
  CHECK_THROWS_WITH(estimate(g, round_device(), round_params(), training),
                    ContainsSubstring("--expert-weight-precision is for inference"));
  CHECK_THROWS_WITH(estimate(one_linear(64, 4096, 4096), round_device(), round_params(), int8),
                    ContainsSubstring("the model has no \"moe\" layer"));
}

TEST_CASE("predict: expert parallelism splits the experts and exchanges tokens all-to-all",
          "[predict]") {
  const Graph g = one_moe_layer();
  const double expert = 3.0 * 1024 * 512;
  const double router = 1024.0 * 8;
  REQUIRE(g.layers[0].counts.expert_params == 8 * 1572864);
  Device d = linked_round_device("Round link", 200e9);  // 100 GB/s per direction.
  PerformanceParams p = collective_round_params();
  const Workload w = fp16_training(8);
  const Workload ep = fp16_training(8, 8);
  const Estimate whole = estimate(g, d, p, w);
  const Estimate split = estimate(g, d, p, ep);
  // Each of the 8 devices holds the router and one expert: 2 bytes a weight as weights and as
  // gradients, 12 (Adam's two fp32 moments and the fp32 master) as optimizer state.
  const double held = router + expert;
  CHECK(whole.memory.weight_bytes == Approx(2 * (router + 8 * expert)));
  CHECK(split.memory.weight_bytes == Approx(2 * held));
  CHECK(split.memory.gradient_bytes == Approx(2 * held));
  CHECK(split.memory.optimizer_bytes == Approx(12 * held));
  // Balanced routing: the same products on every device, but each reads only its own expert's
  // weights: 7 experts fewer, once forward and twice backward.
  CHECK(split.flops == Approx(whole.flops));
  CHECK(whole.layers[0].bytes - split.layers[0].bytes == Approx(3 * 7 * expert * 2));
  // Dispatch and combine forward, both again backward: 4 all-to-alls of 512 tokens x 2
  // experts x 1,024 x 2 bytes (2 MiB), 7/8 of it to the 7 others at 50 GB/s, 10 us each.
  const double buffer = 512.0 * 2 * 1024 * 2;
  const double alltoall = 10e-6 + 7.0 / 8 * buffer / 50e9;
  CHECK(whole.expert_parallel_s == 0);
  CHECK(split.expert_parallel_modelled);
  CHECK(split.expert_parallel_link == "Round link");
  CHECK(split.alltoalls == 4);
  CHECK(split.expert_parallel_s == Approx(4 * alltoall));
  CHECK(split.alltoall_bytes == Approx(4 * 7.0 / 8 * buffer));
  // Only the router's gradients are all-reduced over the 8: each expert lives on one device.
  CHECK(split.data_parallel_s == Approx(10e-6 + 1.75 * router * 2 / 50e9));
  CHECK(split.latency_s == Approx(split.layers[0].time_s + 4 * alltoall +
                                  split.data_parallel_exposed_s + split.optimizer_s));
  // Recompute repeats the forward's two; inference has only those.
  Workload again = ep;
  again.checkpointing = true;
  CHECK(estimate(g, d, p, again).expert_parallel_s == Approx(6 * alltoall));
  Workload inference = ep;
  inference.mode = Mode::kInference;
  CHECK(estimate(g, d, p, inference).expert_parallel_s == Approx(2 * alltoall));
  // 16 devices, ZeRO-1: the router's state shards over all 16, each expert's over its 2
  // holders (8 apart); the router's gradients reduce over 16 (2 x 15/16), the expert's over 2.
  Workload zero = ep;
  zero.devices = 16;
  zero.zero_stage = 1;
  const Estimate sharded = estimate(g, d, p, zero);
  CHECK(sharded.memory.optimizer_bytes == Approx(12 * (router / 16 + expert / 2)));
  CHECK(sharded.memory.gradient_bytes == Approx(2 * held));
  CHECK(sharded.data_parallel_s ==
        Approx(10e-6 + 1.875 * router * 2 / 50e9 + 10e-6 + 1.0 * expert * 2 / 50e9));
  // Tensor-parallel pairs: each device dispatches half the tokens, to devices 2 apart.
  Workload pairs = ep;
  pairs.tensor_parallel = 2;
  pairs.devices = 16;
  CHECK(estimate(g, d, p, pairs).expert_parallel_s ==
        Approx(4 * (10e-6 + 7.0 / 8 * buffer / 2 / 50e9)));
  // Over 2 nodes of 4: half the buffer leaves over the device's network port at 5 GB/s.
  const Device nodes = in_nodes_of_four(d);
  const Estimate across = estimate(g, nodes, p, ep);
  CHECK(across.expert_parallel_link == "Round link + Round network");
  CHECK(across.expert_parallel_s == Approx(4 * (10e-6 + 0.5 * buffer / 5e9)));
  // The busiest expert's 1.5 times the mean load: the layer takes 1.5 times as long.
  Workload skewed = ep;
  skewed.moe_imbalance = 1.5;
  CHECK(estimate(g, d, p, skewed).layers[0].time_s == Approx(1.5 * split.layers[0].time_s));
}

// DeepEP and HybridEP (Megatron-Core's flex dispatcher) send a token once for each device
// holding any of its experts, and across nodes once for each node, forwarded over the scale-up
// link there (collectives.cpp, dispatch_copies).
TEST_CASE("predict: DeepEP sends a token once for each device and node holding its experts",
          "[predict]") {
  const Graph g = one_moe_layer();         // 8 experts, 2 a token; 512 tokens of 1,024.
  const double tokens = 512.0 * 1024 * 2;  // Each device's tokens at 2 bytes: 1 MiB.
  Device d = linked_round_device("Round link", 200e9);  // 100 GB/s per direction.
  PerformanceParams p = collective_round_params();
  Workload all_to_all = fp16_training(8, 8);
  Workload deepep = all_to_all;
  deepep.moe_dispatcher = MoeDispatcher::kDeepEP;
  // One expert a device: a token's 2 experts are 2 devices, so the same 7/8 of 2 copies
  // (1.75) go either way: 7 others x (1 - C(7,2)/C(8,2) = 1 - 21/28).
  const Estimate a = estimate(g, d, p, all_to_all);
  const Estimate b = estimate(g, d, p, deepep);
  CHECK(b.expert_parallel_s == Approx(4 * (10e-6 + 1.75 * tokens / 50e9)));
  CHECK(b.expert_parallel_s == Approx(a.expert_parallel_s));
  CHECK(b.alltoall_bytes == Approx(a.alltoall_bytes));
  // Two experts a device (EP 4): a token reaches each of the 3 others unless both its experts
  // miss that device's two, C(6,2)/C(8,2) = 15/28: 3 x 13/28 = 39/28 copies against the
  // all-to-all's 2 x 3/4 = 42/28.
  all_to_all.expert_parallel = 4;
  deepep.expert_parallel = 4;
  CHECK(estimate(g, d, p, all_to_all).expert_parallel_s ==
        Approx(4 * (10e-6 + 42.0 / 28 * tokens / 50e9)));
  CHECK(estimate(g, d, p, deepep).expert_parallel_s ==
        Approx(4 * (10e-6 + 39.0 / 28 * tokens / 50e9)));
  // Over 2 nodes of 4 (EP 8, 5 GB/s a device over the network): the all-to-all sends the
  // 2 x 1/2 copies bound for the other node over the network port (1 MiB at 5 GB/s). DeepEP
  // sends one copy there unless both experts are in the device's own node, C(4,2)/C(8,2) =
  // 6/28: 22/28; and forwards the tokens of both nodes to its 3 node mates, 2 x 3 x 1/4 =
  // 1.5 copies at 50 GB/s, which the network's share outlasts.
  const Device nodes = in_nodes_of_four(d);
  all_to_all.expert_parallel = 8;
  deepep.expert_parallel = 8;
  CHECK(estimate(g, nodes, p, all_to_all).expert_parallel_s ==
        Approx(4 * (10e-6 + 1.0 * tokens / 5e9)));
  const Estimate across = estimate(g, nodes, p, deepep);
  CHECK(across.expert_parallel_s == Approx(4 * (10e-6 + 22.0 / 28 * tokens / 5e9)));
  CHECK(across.alltoall_bytes == Approx(4 * (1.5 + 22.0 / 28) * tokens));
  // DeepSeek's group-limited routing, 4 groups of 2 with 2 a token: each node holds 2 whole
  // groups, and the other node gets a copy for 13/18 of the tokens (collectives_test derives it).
  const Graph grouped = parse_model(R"({"format": "capcalc-model/1", "name": "moe",
    "dims": {"batch": 2, "seq": 256},
    "inputs": [{"name": "x", "shape": ["batch", "seq", 1024]}],
    "layers": [{"name": "moe", "op": "moe", "experts": 8, "experts_per_token": 2,
                "hidden": 512, "groups": 4, "groups_per_token": 2}]})",
                                    "moe.json");
  CHECK(estimate(grouped, nodes, p, deepep).expert_parallel_s ==
        Approx(4 * (10e-6 + 13.0 / 18 * tokens / 5e9)));
  CHECK(estimate(grouped, nodes, p, all_to_all).expert_parallel_s ==
        Approx(4 * (10e-6 + 1.0 * tokens / 5e9)));
  // HybridEP is timed alike.
  Workload hybridep = deepep;
  hybridep.moe_dispatcher = MoeDispatcher::kHybridEP;
  CHECK(estimate(g, nodes, p, hybridep).expert_parallel_s == Approx(across.expert_parallel_s));
  CHECK_THAT(parallelism_text(deepep), ContainsSubstring("(expert-parallel 8, DeepEP dispatch)"));
  // Without expert parallelism there is nothing to dispatch.
  deepep.expert_parallel = 1;
  CHECK_THROWS_WITH(estimate(g, d, p, deepep),
                    "the DeepEP dispatcher sends tokens to experts on other devices: add "
                    "--expert-parallel");
}

// Megatron-Core's expert_tensor_parallel_size=1 ("MoE parallel folding"): with tensor
// parallelism 2 each routed expert stays whole on one device, the expert grid folds over the
// tensor-parallel devices too, and the moe layer drops its tensor-parallel collective.
TEST_CASE("predict: whole experts fold the expert grid over the tensor-parallel devices",
          "[predict]") {
  // An attention layer (16 heads of 64) and Mixtral's block of 8 experts of 3 x 1024 x 512,
  // 2 a token; batch 2 x seq 256 = 512 tokens of d = 1024.
  const Graph g = attention_moe_block();
  const double expert = 3.0 * 1024 * 512;
  Device d = linked_round_device("Round link", 200e9);  // 100 GB/s per direction.
  PerformanceParams p = collective_round_params();
  Workload split;  // TP 2 x 8 replicas, EP 8: each device holds half of one expert.
  split.precision = Precision::kFp16;
  split.mode = Mode::kTraining;
  split.devices = 16;
  split.tensor_parallel = 2;
  split.expert_parallel = 8;
  Workload whole = split;
  whole.expert_tensor_parallel = 1;
  const Estimate a = estimate(g, d, p, split);
  const Estimate b = estimate(g, d, p, whole);
  // The same work on every device; the whole expert is twice the weights, read once forward and
  // twice backward, and kept as weights and gradients (2 bytes each).
  CHECK(b.flops == Approx(a.flops));
  CHECK(b.memory.weight_bytes - a.memory.weight_bytes == Approx(2 * expert / 2));
  CHECK(b.memory.gradient_bytes - a.memory.gradient_bytes == Approx(2 * expert / 2));
  CHECK(b.layers[1].bytes - a.layers[1].bytes == Approx(3 * expert / 2 * 2));
  // Tensor parallelism: the attention's two reduce-scatter + all-gather pairs forward and two
  // backward; the moe layer's pair goes with whole experts, so half of them remain (both
  // layers' outputs are 512 x 1024).
  CHECK(a.allreduces == 4);
  CHECK(b.allreduces == 2);
  CHECK(b.communication_s == Approx(a.communication_s / 2));
  // The all-to-all carries each device's half of the tokens either way.
  const double buffer = 512.0 * 2 * 1024 * 2 / 2;
  CHECK(b.expert_parallel_s == Approx(4 * (10e-6 + 7.0 / 8 * buffer / 50e9)));
  CHECK(b.expert_parallel_s == Approx(a.expert_parallel_s));
  // Gradients: the dense ones reduce over the 8 replicas alike; split, each half-expert has one
  // holder (16 / (8 x 2)), whole, each expert two (2 x 8 / 8): one more all-reduce, of the
  // expert's 2-byte gradients, 2 x (2 - 1) / 2 of them over 50 GB/s.
  CHECK(b.data_parallel_s == Approx(a.data_parallel_s + 10e-6 + 1.0 * expert * 2 / 50e9));
  // Whole experts fold over tensor-parallel x replicas: EP 16 divides 2 x 8, not the 8 replicas
  // (a block of 32 experts, so that the experts divide).
  const Graph many = parse_model(R"({"format": "capcalc-model/1", "name": "many",
    "dims": {"batch": 2, "seq": 256},
    "inputs": [{"name": "x", "shape": ["batch", "seq", 1024]}],
    "layers": [{"name": "moe", "op": "moe", "experts": 32, "experts_per_token": 2,
                "hidden": 512}]})",
                                 "many.json");
  Workload sixteen = whole;
  sixteen.expert_parallel = 16;
  CHECK_NOTHROW(estimate(many, d, p, sixteen));
  sixteen.expert_tensor_parallel.reset();
  CHECK_THROWS_WITH(estimate(many, d, p, sixteen),
                    "--expert-parallel 16 does not divide the 8 devices that hold the same "
                    "weights (8 data-parallel replicas x context-parallel 1)");
  Workload wide = whole;
  wide.expert_parallel = 32;
  CHECK_THROWS_WITH(estimate(many, d, p, wide),
                    "--expert-parallel 32 does not divide the 16 devices whole experts fold "
                    "over (tensor-parallel 2 x 8 data-parallel replicas x context-parallel 1)");
  Workload four = whole;
  four.expert_tensor_parallel = 4;
  CHECK_THROWS_WITH(estimate(g, d, p, four),
                    "--expert-tensor-parallel must be 1 or the tensor parallelism (2), got 4");
  // The description says so.
  CHECK_THAT(parallelism_text(whole), ContainsSubstring("(expert-parallel 8, whole experts)"));
  // A model without routed experts has nothing to keep whole.
  Workload dense = whole;
  dense.expert_parallel = 1;
  CHECK_THROWS_WITH(estimate(one_linear(8, 64, 64), d, p, dense),
                    "--expert-tensor-parallel: the model has no \"moe\" layer");
}

TEST_CASE("predict: expert parallelism's degree divides the replicas and the experts",
          "[predict]") {
  const Graph g = one_moe_layer();
  const Device d = round_device();
  const PerformanceParams p = round_params();
  Workload w;
  w.precision = Precision::kFp16;
  w.mode = Mode::kTraining;
  w.devices = 12;
  w.expert_parallel = 8;
  CHECK_THROWS_WITH(estimate(g, d, p, w),
                    "--expert-parallel 8 does not divide the 12 devices that hold the same "
                    "weights (12 data-parallel replicas x context-parallel 1)");
  w.devices = 3;
  w.expert_parallel = 3;
  CHECK_THROWS_WITH(estimate(g, d, p, w),
                    "--expert-parallel 3 does not divide the 8 experts of "
                    "\"moe\"");
  w.expert_parallel = 1;
  w.moe_imbalance = 0.5;
  CHECK_THROWS_WITH(estimate(g, d, p, w), "--moe-imbalance must be between 1 and 1000 (got 0.5)");
  const Graph dense = one_linear(8, 64, 64);
  w.devices = 2;
  w.moe_imbalance = 1.2;
  CHECK_THROWS_WITH(estimate(dense, d, p, w), "--moe-imbalance: the model has no \"moe\" layer");
  w.moe_imbalance = 1;
  w.expert_parallel = 2;
  CHECK_THROWS_WITH(estimate(dense, d, p, w), "--expert-parallel: the model has no \"moe\" layer");
}

TEST_CASE("predict: without sequence parallelism every device runs the norms whole", "[predict]") {
  // d = 1024, batch 2 x seq 256: a LayerNorm and a GELU on the model's width (the attention
  // layer's output) lie between the tensor-parallel regions; the GELU after the 4,096-wide
  // projection lies inside one. Over 4 devices, sequence parallelism gives each device 1/4 of
  // every layer; without it, each runs the width-1024 layers whole: 4 times the bytes, and in
  // training keeps their activations whole (3/4 more of theirs than 1/4).
  const Graph g = parse_model(R"({"format": "capcalc-model/1", "name": "regions",
    "dims": {"batch": 2, "seq": 256},
    "inputs": [{"name": "x", "shape": ["batch", "seq", 1024]}],
    "layers": [
      {"name": "ln", "op": "layernorm"},
      {"name": "attn", "op": "attention", "heads": 16},
      {"name": "act_h", "op": "gelu"},
      {"name": "up", "op": "linear", "out_features": 4096},
      {"name": "act_4h", "op": "gelu"},
      {"name": "down", "op": "linear", "out_features": 1024}]})",
                              "regions.json");
  Device d = round_device();
  d.intra_node = Link{"Round link", 200e9, "bidirectional"};
  const PerformanceParams p = round_params();
  Workload w;
  w.precision = Precision::kFp16;
  w.mode = Mode::kTraining;
  w.devices = 4;
  w.tensor_parallel = 4;
  const Estimate on = estimate(g, d, p, w);
  w.sequence_parallel = false;
  const Estimate off = estimate(g, d, p, w);
  CHECK(on.sequence_parallel);
  CHECK_FALSE(off.sequence_parallel);
  CHECK(off.layers[0].bytes == Approx(4 * on.layers[0].bytes));  // ln
  CHECK(off.layers[2].bytes == Approx(4 * on.layers[2].bytes));  // act_h
  CHECK(off.layers[4].bytes == Approx(on.layers[4].bytes));      // act_4h: inside a region
  CHECK(off.layers[1].bytes == Approx(on.layers[1].bytes));      // attention
  double whole = 0;
  for (std::size_t i : {std::size_t{0}, std::size_t{2}}) {
    whole +=
        static_cast<double>(element_count(g.layers[i].output) + g.layers[i].counts.saved_elements);
  }
  CHECK(off.memory.activation_bytes - on.memory.activation_bytes == Approx(whole * 2 * (1 - 0.25)));
  // Inference defaults to none (vLLM, TensorRT-LLM): the norms run whole.
  w.mode = Mode::kInference;
  w.sequence_parallel.reset();
  const Estimate served = estimate(g, d, p, w);
  CHECK_FALSE(served.sequence_parallel);
  w.sequence_parallel = true;
  CHECK(served.layers[0].bytes == Approx(4 * estimate(g, d, p, w).layers[0].bytes));
}

TEST_CASE("predict: data parallelism all-reduces the gradients once a step, behind backward",
          "[predict]") {
  // 8 x 4096 -> 4096 in fp16: 16.8 M weights, 33.6 MB of gradients per replica.
  const Graph g = one_linear(8, 4096, 4096);
  const double grads = 4096.0 * 4096 * 2;
  Device d = linked_round_device("Slow link", 2e9);  // 1 GB/s per direction.
  PerformanceParams p = collective_round_params();
  Workload w;
  w.mode = Mode::kTraining;
  w.precision = Precision::kFp16;
  w.devices = 8;
  Workload inference = w;
  inference.mode = Mode::kInference;
  const double forward_s = estimate(g, d, p, inference).layers[0].time_s;
  const Estimate e = estimate(g, d, p, w);
  const double backward_s = e.layers[0].time_s - forward_s;
  // Ring over 8: 2·7/8 of the bytes at 0.5 GB/s; backward hides its own duration of it.
  const double ring = 10e-6 + 1.75 * grads / 0.5e9;
  CHECK(e.data_parallel_modelled);
  CHECK(e.data_parallel_link == "Slow link");
  CHECK(e.data_parallel_bytes == Approx(grads));
  CHECK(e.data_parallel_s == Approx(ring));
  CHECK(e.data_parallel_exposed_s == Approx(ring - backward_s));
  CHECK(e.latency_s == Approx(e.layers[0].time_s + ring - backward_s + e.optimizer_s));
  CHECK(e.throughput_per_s == Approx(8.0 * 8 / e.latency_s));
  // A fast link and a longer backward (batch 256): all of it hidden, a replica's step as on
  // one device.
  Device fast = d;
  fast.intra_node = Link{"Fast link", 1800e9, "bidirectional"};
  const Graph big = one_linear(256, 4096, 4096);
  const Estimate hidden = estimate(big, fast, p, w);
  CHECK(hidden.data_parallel_s > 0);
  CHECK(hidden.data_parallel_exposed_s == 0);
  Workload single = w;
  single.devices = 1;
  CHECK(hidden.latency_s == Approx(estimate(big, fast, p, single).latency_s));
  CHECK(estimate(big, fast, p, single).data_parallel_s == 0);
  // ZeRO-3 adds the weights' two all-gathers: three collectives of 7/8 of the bytes each
  // (the weights twice, the gradients once), 1.5x the ring's bytes.
  Workload zero3 = w;
  zero3.zero_stage = 3;
  CHECK(estimate(g, d, p, zero3).data_parallel_s == Approx(3 * 10e-6 + 1.5 * 1.75 * grads / 0.5e9));
  // Beyond the link's domain (4 devices) the replicas span 2 nodes of 4: reduce-scatter in the
  // node (3/4 of the gradients at 450 GB/s), all-reduce of each device's quarter over its own
  // port (2·1/2 of it at 0.5 GB/s, a ring of 2 network steps of 5 us), all-gather in the
  // node; each level 10 us.
  fast.intra_node->domain_devices = 4;
  const Estimate unnetworked = estimate(g, fast, p, w);
  CHECK_FALSE(unnetworked.data_parallel_modelled);
  CHECK(unnetworked.data_parallel_s == 0);
  fast.inter_node = Link{"Network", 1e9, "per_direction"};
  const Estimate across = estimate(g, fast, p, w);
  CHECK(across.data_parallel_link == "Fast link + Network");
  CHECK(across.data_parallel_bandwidth == Approx(1e9));
  CHECK(across.data_parallel_s ==
        Approx(2 * (10e-6 + 0.75 * grads / 450e9) + 10e-6 + 2 * 5e-6 + (grads / 4) / 0.5e9));
  // Tensor-parallel pairs: 8 replicas of 2 span 16 devices, 2 replicas a node (stride 2) over
  // 4 nodes, each device reducing its half of the gradients (a ring of 2·3 network steps; a
  // tree's 2 log2 4 = 4 steps at 0.46 of the bandwidth is slower for these bytes).
  Workload tp2 = w;
  tp2.devices = 16;
  tp2.tensor_parallel = 2;
  const Estimate pairs = estimate(g, fast, p, tp2);
  const double half = grads / 2;
  CHECK(pairs.data_parallel_bytes == Approx(half));
  CHECK(pairs.data_parallel_s ==
        Approx(2 * (10e-6 + 0.5 * half / 450e9) + 10e-6 + 6 * 5e-6 + 1.5 * (half / 2) / 0.5e9));
  // Tensor-parallel groups of 4 fill a node: their replicas are a node apart, one ring of 8
  // over the network, 2·7 steps.
  Workload tp4 = w;
  tp4.devices = 32;
  tp4.tensor_parallel = 4;
  const Estimate apart = estimate(g, fast, p, tp4);
  CHECK(apart.data_parallel_link == "Network");
  CHECK(apart.data_parallel_s == Approx(10e-6 + 14 * 5e-6 + 1.75 * (grads / 4) / 0.5e9));
  // Within the domain (4 replicas) the scale-up link carries it.
  w.devices = 4;
  CHECK(estimate(g, fast, p, w).data_parallel_link == "Fast link");
  // fp8 training reduces bf16 gradients (Transformer Engine's weight gradients): 2 bytes per
  // weight, not 1; ZeRO-3's all-gathers move the fp8 weights.
  Workload fp8 = w;
  fp8.precision = Precision::kFp8;
  fast.dense_peak[static_cast<std::size_t>(Precision::kFp8)] = {0, 200e12};
  CHECK(estimate(g, fast, p, fp8).data_parallel_bytes == Approx(grads));
  CHECK(estimate(g, fast, p, fp8).memory.gradient_bytes == Approx(grads));
  fp8.zero_stage = 3;
  CHECK(estimate(g, fast, p, fp8).data_parallel_bytes == Approx(0.5 * grads + grads / 2));
  // Inference replicas exchange nothing.
  inference.devices = 8;
  CHECK(estimate(g, d, p, inference).data_parallel_s == 0);
}

namespace {

// The data-parallel sync of the ZeRO stages, derived by hand: 8 x 4096 -> 4096 in fp16, so
// W = G = 4096^2 x 2 bytes; 8 replicas of one device over a link of 1 GB/s per direction at
// 50 % and 10 us a call; 4 micro-batches. Each reduce-scatter or all-gather takes 10 us +
// 7/8 x 33.6 MB / 0.5 GB/s = 58.7 ms.
struct ZeroCase {
  Graph g;
  double bytes = 4096.0 * 4096 * 2;
  Device d;
  PerformanceParams p;
  Workload w;
  double forward_s = 0;  // One micro-batch's forward, without ZeRO.
  double collective = 10e-6 + 0.875 * bytes / 0.5e9;

  explicit ZeroCase(int stage)
      : g(one_linear(8, 4096, 4096)), d(round_device()), p(round_params()) {
    d.intra_node = Link{"Slow link", 2e9, "bidirectional"};
    p.allreduce_latency_s = 10e-6;
    p.allreduce_efficiency = 0.5;
    w.mode = Mode::kTraining;
    w.precision = Precision::kFp16;
    w.devices = 8;
    w.micro_batches = 4;
    w.zero_stage = stage;
    Workload inference = w;
    inference.mode = Mode::kInference;
    inference.micro_batches = 1;
    inference.zero_stage = 0;
    forward_s = estimate(g, d, p, inference).layers[0].time_s;
  }
};

}  // namespace

TEST_CASE("predict: ZeRO-3 gathers the weights for every micro-batch", "[predict]") {
  // PyTorch FSDP2 (fully_shard) and DeepSpeed ZeRO-3 all-gather the sharded weights before each
  // forward and each backward and reduce-scatter the gradients after each backward, so with
  // gradient accumulation every micro-batch pays them; prefetch hides the forward's gather
  // behind the forward and the backward's gather and reduce-scatter behind the backward.
  const ZeroCase z(3);
  const auto& [g, bytes, d, p, w, forward_s, collective] = z;
  const Estimate e = estimate(g, d, p, w);
  const double backward_s = e.layers[0].time_s - forward_s;
  // Per micro-batch: gather (forward), gather + reduce-scatter (backward); four micro-batches.
  CHECK(e.data_parallel_s == Approx(4 * 3 * collective));
  CHECK(e.data_parallel_bytes == Approx(4 * (bytes + bytes / 2)));
  // The slow link outlasts both passes: each micro-batch exposes
  // (collective - forward) + (2 collectives - backward).
  const double exposed = 4 * ((collective - forward_s) + (2 * collective - backward_s));
  CHECK(e.data_parallel_exposed_s == Approx(exposed));
  CHECK(e.latency_s == Approx(4 * e.layers[0].time_s + exposed + e.optimizer_s));
  // ZeRO-1 keeps whole gradients: one all-reduce of them a step, whatever the count.
  Workload zero1 = w;
  zero1.zero_stage = 1;
  const Estimate one = estimate(g, d, p, zero1);
  CHECK(one.data_parallel_s == Approx(10e-6 + 1.75 * bytes / 0.5e9));
  CHECK(one.data_parallel_bytes == Approx(bytes));
  CHECK(one.data_parallel_exposed_s == Approx(one.data_parallel_s - backward_s));
  // A fast link (900 GB/s per direction at 50 %) and a long pass (batch 256) hide all of it.
  Device fast = d;
  fast.intra_node = Link{"Fast link", 1800e9, "bidirectional"};
  const Estimate hidden = estimate(one_linear(256, 4096, 4096), fast, p, w);
  CHECK(hidden.data_parallel_s == Approx(4 * 3 * (10e-6 + 0.875 * bytes / 450e9)));
  CHECK(hidden.data_parallel_exposed_s == 0);
}

TEST_CASE("predict: ZeRO-2 reduce-scatters every micro-batch and gathers the weights once",
          "[predict]") {
  // DeepSpeed's stage 2 keeps only its shard of the gradients, so it reduce-scatters them after
  // every micro-batch's backward (DeepSpeed's engine.py: "ZeRO stage 2 communicates during non
  // gradient accumulation boundaries as well"), and after the optimizer step all-gathers the
  // updated weights (stage_1_and_2.py: step() calls all_gather_dp_groups). Each reduce-scatter or
  // all-gather takes ZeroCase's collective.
  const ZeroCase z(2);
  const auto& [g, bytes, d, p, w, forward_s, collective] = z;
  const Estimate e = estimate(g, d, p, w);
  const double backward_s = e.layers[0].time_s - forward_s;
  // Four reduce-scatters and one all-gather; as an all-reduce's operand, (4 G + W) / 2.
  CHECK(e.data_parallel_s == Approx(5 * collective));
  CHECK(e.data_parallel_bytes == Approx((4 * bytes + bytes) / 2));
  // Each reduce-scatter outlasts its micro-batch's backward; the all-gather shows whole.
  const double exposed = 4 * (collective - backward_s) + collective;
  CHECK(e.data_parallel_exposed_s == Approx(exposed));
  CHECK(e.latency_s == Approx(4 * e.layers[0].time_s + exposed + e.optimizer_s));
  // With one micro-batch, a reduce-scatter and an all-gather move an all-reduce's bytes, but
  // only the reduce-scatter hides behind backward.
  Workload single = w;
  single.micro_batches = 1;
  const Estimate once = estimate(g, d, p, single);
  CHECK(once.data_parallel_bytes == Approx(bytes));
  CHECK(once.data_parallel_s == Approx(2 * collective));
  // A fast link (900 GB/s per direction at 50 %) and a long backward (batch 256) hide every
  // reduce-scatter; the all-gather after the step still shows.
  Device fast = d;
  fast.intra_node = Link{"Fast link", 1800e9, "bidirectional"};
  const Estimate hidden = estimate(one_linear(256, 4096, 4096), fast, p, w);
  const double fast_collective = 10e-6 + 0.875 * bytes / 450e9;
  CHECK(hidden.data_parallel_s == Approx(5 * fast_collective));
  CHECK(hidden.data_parallel_exposed_s == Approx(fast_collective));
  // Across nodes of 4 (network 1 GB/s per direction per device), two levels each: in the node
  // 3/4 of the bytes at 450 GB/s, then 1/2 of each device's quarter at 0.5 GB/s in one network
  // step of 5 us.
  fast.intra_node->domain_devices = 4;
  fast.inter_node = Link{"Network", 1e9, "per_direction"};
  const double two_level = 2 * 10e-6 + 5e-6 + 0.75 * bytes / 450e9 + 0.5 * (bytes / 4) / 0.5e9;
  const Estimate across = estimate(g, fast, p, w);
  CHECK(across.data_parallel_link == "Fast link + Network");
  CHECK(across.data_parallel_s == Approx(5 * two_level));
}

TEST_CASE("predict: ZeRO stages shard state over the data-parallel replicas", "[predict]") {
  // Rajbhandari et al. 2020 (arXiv:1910.02054), Figure 1: with Nd replicas, stage 1 keeps
  // 1/Nd of the optimizer state, stage 2 also of the gradients, stage 3 also of the weights.
  const Graph g = one_linear(64, 4096, 4096);
  Workload base;
  base.mode = Mode::kTraining;
  base.precision = Precision::kFp16;
  base.devices = 16;
  base.tensor_parallel = 2;  // Eight replicas.
  const Estimate none = estimate(g, round_device(), round_params(), base);
  Workload w = base;
  for (int stage = 1; stage <= 3; ++stage) {
    w.zero_stage = stage;
    const Estimate e = estimate(g, round_device(), round_params(), w);
    CHECK(e.memory.optimizer_bytes == Approx(none.memory.optimizer_bytes / 8));
    CHECK(e.memory.gradient_bytes == Approx(none.memory.gradient_bytes / (stage >= 2 ? 8 : 1)));
    CHECK(e.memory.weight_bytes == Approx(none.memory.weight_bytes / (stage == 3 ? 8 : 1)));
    CHECK(e.memory.activation_bytes == Approx(none.memory.activation_bytes));
    // Each replica updates its 1/8 of the state: 4096^2 / 2 (TP) weights x 28 bytes (Adam's
    // seven fp32 tensors) / 8 over 0.5 TB/s, exactly 1/8 of the unsharded update.
    CHECK(none.optimizer_s == Approx(4096.0 * 4096 / 2 * 28 / 0.5e12));
    CHECK(e.optimizer_s == Approx(4096.0 * 4096 / 2 * 28 / 8 / 0.5e12));
  }
  w.zero_stage = 1;
  w.mode = Mode::kInference;
  CHECK_THROWS_WITH(estimate(g, round_device(), round_params(), w),
                    ContainsSubstring("ZeRO shards training state"));
  w.mode = Mode::kTraining;
  w.zero_stage = 4;
  CHECK_THROWS_WITH(estimate(g, round_device(), round_params(), w),
                    ContainsSubstring("ZeRO stage 4 does not exist"));
}

// An input projection, four attention blocks and a wide output layer: the blocks are the
// top-level entries with attention; "pre" comes before them, "head" after.
Graph four_blocks_and_a_head() {
  return parse_model(R"({"format": "capcalc-model/1", "name": "four_blocks",
    "dims": {"batch": 2, "seq": 128},
    "inputs": [{"name": "x", "shape": ["batch", "seq", 512]}],
    "layers": [
      {"name": "pre", "op": "linear", "out_features": 512, "bias": false},
      {"name": "a0", "op": "attention", "heads": 8},
      {"name": "a1", "op": "attention", "heads": 8},
      {"name": "a2", "op": "attention", "heads": 8},
      {"name": "a3", "op": "attention", "heads": 8},
      {"name": "head", "op": "linear", "out_features": 32768, "bias": false}]})",
                     "four_blocks.json");
}

TEST_CASE("predict: the heaviest pipeline stage sets the pace, the output layer on the last",
          "[predict]") {
  // Megatron-Core places chunk c of P x V on stage c mod P, the layers before the blocks with
  // the first chunk and those after them with the last (get_transformer_layer_offset): with
  // 1F1B the heaviest stage runs every micro-batch and the others only fill and drain, so a
  // step is M x heaviest + (sum of the stages - heaviest) / V + optimizer.
  const Graph g = four_blocks_and_a_head();
  Workload base;
  base.mode = Mode::kTraining;
  base.precision = Precision::kFp16;
  const Estimate one = estimate(g, round_device(), round_params(), base);
  const double pre = one.layers[0].time_s;
  const double block = one.layers[1].time_s;
  const double head = one.layers[5].time_s;
  REQUIRE(head > 2 * block);  // 512 x 32,768 weights: the heaviest layer.
  const auto step = [&](const Workload& w, double heaviest, double sum) {
    const Estimate e = estimate(g, round_device(), round_params(), w);
    CHECK(e.pipeline_bubble_s == Approx((sum - heaviest) / static_cast<double>(w.virtual_stages)));
    CHECK(e.latency_s == Approx(static_cast<double>(w.micro_batches) * heaviest +
                                e.pipeline_bubble_s + e.optimizer_s));
    CHECK(e.pipeline_imbalance ==
          Approx(heaviest * static_cast<double>(w.pipeline_parallel) / sum));
    return e;
  };
  const double sum = pre + 4 * block + head;

  // Two stages, 4 micro-batches: pre + a0 + a1 and a2 + a3 + head.
  Workload w = base;
  w.pipeline_parallel = 2;
  w.devices = 2;
  w.micro_batches = 4;
  const Estimate two = step(w, 2 * block + head, sum);
  CHECK(two.pipeline_heaviest_stage == 1);
  CHECK(two.pipeline_imbalance > 1);

  // Interleaved, 2 chunks a stage of one block each: stage 0 holds pre, a0 and a2, stage 1 a1,
  // a3 and head; the fill and drain take half.
  w.virtual_stages = 2;
  step(w, 2 * block + head, sum);

  // Three stages: 4 blocks do not split in 3, 4 + 2 do (Megatron's
  // account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split): pre + a0,
  // a1 + a2, a3 + head.
  w.virtual_stages = 1;
  w.pipeline_parallel = 3;
  w.devices = 3;
  w.micro_batches = 6;
  step(w, std::max(2 * block, block + head), sum);

  // A model without attention splits evenly, as before: (M + P - 1) stage times of 1/P.
  const Graph plain = one_linear(64, 4096, 4096);
  Workload even = base;
  even.pipeline_parallel = 2;
  even.devices = 2;
  even.micro_batches = 4;
  const Estimate e = estimate(plain, round_device(), round_params(), even);
  CHECK(e.pipeline_imbalance == Approx(1));
}

TEST_CASE("predict: pipeline stages run micro-batches through a 1F1B schedule", "[predict]") {
  // Narayanan et al. 2021 (arXiv:2104.04473), section 2.2: with p stages and m micro-batches
  // a step takes (m + p - 1) stage times, the bubble being (p - 1) of them; 1F1B keeps at most
  // p micro-batches' activations in flight on the first stage.
  const Graph g = one_linear(64, 4096, 4096);
  Workload base;
  base.mode = Mode::kTraining;
  base.precision = Precision::kFp16;
  const Estimate one = estimate(g, round_device(), round_params(), base);
  const double pass = one.latency_s - one.optimizer_s;  // One micro-batch, forward + backward.

  Workload w = base;
  w.pipeline_parallel = 4;
  w.micro_batches = 8;
  w.devices = 8;  // Two replicas of 4 stages.
  const Estimate e = estimate(g, round_device(), round_params(), w);
  const double stage = pass / 4;
  CHECK(e.pipeline_bubble_s == Approx(3 * stage));
  CHECK(e.latency_s == Approx((8 + 3) * stage + e.optimizer_s));
  CHECK(e.optimizer_s <= one.optimizer_s);
  CHECK(e.throughput_per_s == Approx(64.0 * 8 * 2 / e.latency_s));
  CHECK(e.memory.weight_bytes == Approx(one.memory.weight_bytes / 4));
  CHECK(e.memory.gradient_bytes == Approx(one.memory.gradient_bytes / 4));
  CHECK(e.memory.optimizer_bytes == Approx(one.memory.optimizer_bytes / 4));
  // Four micro-batches in flight of a quarter of the layers: one micro-batch's worth.
  CHECK(e.memory.activation_bytes == Approx(one.memory.activation_bytes));
  CHECK(e.flops == Approx(one.flops * 8 / 4).epsilon(1e-6));
  CHECK(e.layer_repeats == Approx(2.0));
  // Fewer micro-batches than stages: fewer in flight, more bubble.
  w.micro_batches = 2;
  const Estimate few = estimate(g, round_device(), round_params(), w);
  CHECK(few.memory.activation_bytes == Approx(one.memory.activation_bytes / 2));
  CHECK(few.pipeline_bubble_s / few.latency_s > e.pipeline_bubble_s / e.latency_s);

  // Gradient accumulation alone: micro-batch after micro-batch, one optimizer update, one
  // micro-batch's activations at a time.
  Workload accumulate = base;
  accumulate.micro_batches = 4;
  const Estimate a = estimate(g, round_device(), round_params(), accumulate);
  CHECK(a.pipeline_bubble_s == 0);
  CHECK(a.latency_s == Approx(4 * pass + one.optimizer_s));
  CHECK(a.memory.activation_bytes == Approx(one.memory.activation_bytes));
  CHECK(a.throughput_per_s == Approx(64.0 * 4 / a.latency_s));
  TrainingRun run;
  run.samples = 64.0 * 4 * 10;
  CHECK(training_totals(a, 64, accumulate, run).steps == 10);

  // Training only, and whole replicas.
  Workload inference = w;
  inference.mode = Mode::kInference;
  CHECK_THROWS_WITH(estimate(g, round_device(), round_params(), inference),
                    ContainsSubstring("pipeline stages and micro-batches are for training"));
  w.devices = 6;
  CHECK_THROWS_WITH(estimate(g, round_device(), round_params(), w),
                    ContainsSubstring("6 devices do not split into model replicas of 4"));
}

TEST_CASE("predict: interleaved stages cut the bubble V-fold, stage sends cross the link",
          "[predict]") {
  // Narayanan et al. 2021 (arXiv:2104.04473), section 2.2.2: with v model chunks per device
  // the bubble is (p - 1) / v stage times. Megatron-LM's interleaved schedule warms up
  // 2(p-1) + (v-1)p chunk passes on the first stage (schedules.py,
  // num_warmup_microbatches) and keeps one more in flight.
  const Graph g = parse_model(R"({"format": "capcalc-model/1", "name": "two", "dims": {"batch": 64},
    "inputs": [{"name": "x", "shape": ["batch", 4096]}],
    "layers": [{"name": "fc1", "op": "linear", "out_features": 4096, "bias": false},
               {"name": "fc2", "op": "linear", "out_features": 4096, "bias": false}]})",
                              "two.json");
  Workload base;
  base.mode = Mode::kTraining;
  base.precision = Precision::kFp16;
  const Estimate one = estimate(g, round_device(), round_params(), base);
  const double pass = one.latency_s - one.optimizer_s;
  Workload w = base;
  w.pipeline_parallel = 2;
  w.micro_batches = 4;
  w.devices = 2;
  w.virtual_stages = 2;
  const Estimate e = estimate(g, round_device(), round_params(), w);
  const double stage = pass / 2;
  CHECK(e.pipeline_bubble_s == Approx(stage / 2));
  CHECK(e.latency_s == Approx((4 + 0.5) * stage + e.optimizer_s));
  // min(2(2-1) + (2-1)2 + 1, 4 x 2) = 5 chunk passes of a quarter of the layers.
  CHECK(e.memory.activation_bytes == Approx(one.memory.activation_bytes * 5 / 4));
  // The round device has no link: the sends are not modelled, and say so.
  CHECK_FALSE(e.pipeline_sends_modelled);
  CHECK(e.pipeline_send_s == 0);

  // Over a link: each micro-batch sends fc1's output (64 x 4096 x 2 B) forward and its
  // gradient back. 1F1B blocks on both; in every stage time, the bubble's too.
  Device d = linked_round_device("Slow link", 2e9);  // 1 GB/s per direction.
  PerformanceParams p = collective_round_params();
  const double bytes = 64.0 * 4096 * 2;
  const double send = 10e-6 + bytes / 0.5e9;
  Workload blocking = w;
  blocking.virtual_stages = 1;
  const Estimate b = estimate(g, d, p, blocking);
  const double linked_stage = (estimate(g, d, p, base).latency_s - one.optimizer_s) / 2;
  CHECK(b.pipeline_sends_modelled);
  CHECK(b.pipeline_link == "Slow link");
  CHECK(b.pipeline_send_bytes == Approx(bytes));
  CHECK(b.pipeline_send_s == Approx((4 + 1) * 2 * send));
  CHECK(b.latency_s == Approx((4 + 1) * (linked_stage + 2 * send) + b.optimizer_s));
  // Interleaved: twice as many sends, each chunk's overlapped with its compute.
  const Estimate overlapped = estimate(g, d, p, w);
  const double chunk = linked_stage / 2;
  CHECK(overlapped.pipeline_send_s ==
        Approx((4 + 0.5) * 2 * std::max(0.0, 2 * send - chunk)).margin(1e-12));
  // Beyond the link's domain the stages' sends cross the network, device by device.
  d.intra_node->domain_devices = 1;
  CHECK_FALSE(estimate(g, d, p, blocking).pipeline_sends_modelled);
  d.inter_node = Link{"Network", 4e9, "per_direction"};
  CHECK(estimate(g, d, p, blocking).pipeline_link == "Network");
  CHECK(estimate(g, d, p, blocking).pipeline_send_s == Approx((4 + 1) * 2 * (10e-6 + bytes / 2e9)));

  // Megatron's conditions: a pipeline to interleave, micro-batches a multiple of its stages.
  Workload unpiped = base;
  unpiped.virtual_stages = 2;
  CHECK_THROWS_WITH(estimate(g, round_device(), round_params(), unpiped),
                    ContainsSubstring("virtual stages interleave a pipeline"));
  w.micro_batches = 3;
  CHECK_THROWS_WITH(estimate(g, round_device(), round_params(), w),
                    ContainsSubstring("needs micro-batches (3) to be a multiple of the pipeline "
                                      "stages (2)"));
}

TEST_CASE("predict: training activations of a transformer layer match Korthikanti et al.",
          "[predict]") {
  // Korthikanti et al. 2022 (arXiv:2205.05198), eq. 1: a GPT layer keeps
  // s·b·h·(34 + 5·a·s/h) bytes at 16-bit for backward; with fused attention (no stored score
  // matrix) the second term is gone: 34·s·b·h. capcalc saves layer outputs and attention's
  // Q, K, V and context; it keeps no dropout masks (2·s·b·h of the 34).
  const std::int64_t s = 1024;
  const std::int64_t b = 4;
  const std::int64_t h = 1024;
  const Graph g = parse_model(R"({"format": "capcalc-model/1", "name": "layer",
    "dims": {"batch": 4, "seq": 1024},
    "inputs": [{"name": "x", "shape": ["batch", "seq", 1024]}],
    "layers": [
      {"name": "ln1", "op": "layernorm"},
      {"name": "attn", "op": "attention", "heads": 16},
      {"name": "res1", "op": "add", "inputs": ["attn", "x"]},
      {"name": "ln2", "op": "layernorm"},
      {"name": "fc1", "op": "linear", "out_features": 4096},
      {"name": "act", "op": "gelu"},
      {"name": "fc2", "op": "linear", "out_features": 1024},
      {"name": "res2", "op": "add", "inputs": ["fc2", "res1"]}]})",
                              "layer.json");
  Workload w;
  w.precision = Precision::kFp16;
  w.mode = Mode::kTraining;
  const Estimate e = estimate(g, round_device(), round_params(), w);
  const double paper = 34.0 * s * b * h;
  CHECK(e.memory.activation_bytes == Approx(32.0 * s * b * h));  // 16 sbh elements x 2 B.
  CHECK(std::fabs(e.memory.activation_bytes / paper - 1) < 0.1);
}

TEST_CASE("predict: activation checkpointing trades a forward pass for memory", "[predict]") {
  // Two blocks of two linears: checkpoints are the blocks' outputs, plus one block's
  // internals while it is recomputed.
  const Graph g = mlp_blocks(2);
  Workload w;
  w.mode = Mode::kTraining;
  const Estimate all = estimate(g, round_device(), round_params(), w);
  w.checkpointing = true;
  const Estimate ckpt = estimate(g, round_device(), round_params(), w);
  CHECK(all.memory.activation_bytes == Approx(16.0 * (4000 + 1000) * 2 * 4));
  CHECK(ckpt.memory.activation_bytes == Approx(16.0 * (1000 * 2 + (4000 + 1000)) * 4));
  double forward = 0;
  for (const LayerEstimate& layer :
       estimate(g, round_device(), round_params(), Workload{}).layers) {
    forward += layer.time_s;
  }
  CHECK(ckpt.recompute_s == Approx(forward));
  CHECK(ckpt.latency_s == Approx(all.latency_s + forward));
}

namespace {

// A two-layer decoder with GQA: d 512, 8 heads of 64, 2 KV heads.
Graph decoder(std::int64_t seq, std::int64_t cached, std::int64_t window = 0) {
  ModelOptions options;
  options.dims["seq"] = seq;
  options.counting.kv_cache_length = cached;
  const std::string attention =
      window > 0
          ? R"({"op": "attention", "heads": 8, "kv_heads": 2, "causal": true, "bias": false, "window": )" +
                std::to_string(window) + "}"
          : R"({"op": "attention", "heads": 8, "kv_heads": 2, "causal": true, "bias": false})";
  return parse_model(
      R"({"format": "capcalc-model/1", "name": "dec", "dims": {"batch": 4, "seq": 16},
    "inputs": [{"name": "x", "shape": ["batch", "seq", 512]}],
    "blocks": {"layer": {"layers": [)" +
          attention + R"(,
      {"op": "linear", "out_features": 512, "bias": false}]}},
    "layers": [{"name": "h", "block": "layer", "repeat": 2}]})",
      "dec.json", options);
}

// The decoder above serving a request of `prompt` + `output` tokens on the round GPU.
ServingEstimate serve_decoder(std::int64_t prompt, std::int64_t output, const Workload& w) {
  ServingRequest request;
  request.prompt_tokens = prompt;
  request.output_tokens = output;
  return estimate_serving(
      [](std::int64_t seq, std::int64_t cached) { return decoder(seq, cached); }, round_device(),
      round_params(), w, request);
}

}  // namespace

TEST_CASE("serving: the KV cache is GQA-aware and honours the window", "[predict][serving]") {
  // 2 layers x (K + V) x 2 KV heads x 64 = 512 elements per token.
  CHECK(kv_cache_elements(decoder(16, 0), 1) == 2 * 2 * 2 * 64);
  CHECK(kv_cache_elements(decoder(16, 0), 1000) == 1000 * 512);
  CHECK(kv_cache_elements(decoder(16, 0, 256), 1000) == 256 * 512);
  // Decode reads the cache: 4 sequences x 1000 cached x 256 elements per layer.
  const Graph step = decoder(1, 1000);
  CHECK(step.layers[0].counts.kv_cache_read_elements == 4 * 1000 * 2 * 2 * 64);
  // Scores: each new token against the 1000 cached keys and itself, per head.
  CHECK(step.layers[0].counts.score_macs == 2 * 4 * 8 * 1001 * 64);
}

TEST_CASE("serving: prefill, decode, TTFT and capacity", "[predict][serving]") {
  Workload w;
  w.precision = Precision::kFp16;
  const ServingEstimate s = serve_decoder(100, 21, w);
  CHECK(s.mean_context == 110);  // Steps read 100 .. 119 cached tokens.
  CHECK(s.ttft_s == Approx(s.prefill.latency_s));
  CHECK(s.decode_step_s == Approx(s.decode.latency_s));
  CHECK(s.request_latency_s == Approx(s.ttft_s + 20 * s.decode_step_s));
  CHECK(s.tokens_per_s == Approx(4 / s.decode_step_s));
  CHECK(s.kv_bytes_per_token == Approx(512 * 2));
  CHECK(s.kv_bytes == Approx(4.0 * 121 * 512 * 2));
  const double weights = 2.0 * (4 * 512 * 512 - 2 * 512 * 384 + 512 * 512) * 2;
  CHECK(s.prefill.memory.weight_bytes == Approx(weights));
  CHECK(s.max_cached_tokens == static_cast<std::int64_t>((16e9 - weights) / (512 * 2)));
  // A narrower KV cache holds more tokens.
  w.kv_precision = Precision::kFp8;
  const ServingEstimate fp8 = serve_decoder(100, 21, w);
  CHECK(fp8.kv_bytes_per_token == Approx(512));
}

// Serving runtimes compute the logits of each sequence's last prompt token only (vLLM's
// logits_indices, SGLang's LogitsProcessor, TensorRT-LLM's gather_last_token_logits,
// transformers' logits_to_keep = 1): the decoder's output product runs on 4 rows, not 400.
TEST_CASE("serving: the prefill's output product runs on each sequence's last token",
          "[predict][serving]") {
  Workload w;
  w.precision = Precision::kFp16;
  const ServingEstimate s = serve_decoder(100, 2, w);
  const Estimate full = estimate(decoder(100, 0), round_device(), round_params(), w);
  REQUIRE(s.prefill.layers.size() == full.layers.size());
  const LayerEstimate& head = s.prefill.layers.back();
  // 4 rows x 512 x 512 MACs; 4 x 512 in, 512 x 512 weights, 4 x 512 out, 2 bytes each, at
  // half of 1 TB/s: memory-bound, 1.06 us.
  CHECK(head.flops == Approx(2.0 * 4 * 512 * 512));
  CHECK(head.bytes == Approx((4.0 * 512 + 512 * 512 + 4 * 512) * 2));
  CHECK(head.memory_s == Approx((4.0 * 512 + 512 * 512 + 4 * 512) * 2 / 0.5e12));
  CHECK(head.bound == Bound::kMemory);
  // Over every prompt token it would be 400 rows: compute-bound at half of 100 TFLOP/s.
  CHECK(full.layers.back().flops == Approx(2.0 * 400 * 512 * 512));
  CHECK(s.prefill.flops == Approx(full.flops - 2.0 * 396 * 512 * 512));
  CHECK(s.ttft_s < full.latency_s);
  // Every other layer is the same.
  for (std::size_t i = 0; i + 1 < full.layers.size(); ++i)
    CHECK(s.prefill.layers[i].time_s == Approx(full.layers[i].time_s));
}

TEST_CASE("serving: weight-only int4 stores 4.125 bits per weight", "[predict][serving]") {
  CHECK(weight_bytes_per_element(Precision::kInt4) == Approx(0.515625));
  Workload w;
  w.precision = Precision::kFp16;
  w.weight_precision = Precision::kInt4;
  const Estimate e = estimate(decoder(1, 100), round_device(), round_params(), w);
  const Estimate dense = [&] {
    Workload fp16;
    fp16.precision = Precision::kFp16;
    return estimate(decoder(1, 100), round_device(), round_params(), fp16);
  }();
  CHECK(e.memory.weight_bytes == Approx(dense.memory.weight_bytes * 0.515625 / 2));
  CHECK(e.bytes < dense.bytes);
}

TEST_CASE("predict: linear layers off the tensor cores' granularity are named", "[predict]") {
  // NVIDIA's Matrix Multiplication Background User's Guide: dimensions in multiples of 16
  // bytes, 8 elements in fp16/bf16, 4 in tf32, 16 in fp8/int8.
  Device nvidia = round_device();
  nvidia.vendor = "nvidia";
  nvidia.dense_peak[static_cast<std::size_t>(Precision::kTf32)] = {0, 50e12};
  // 100 input features: not a multiple of 8, of 4 in tf32 it is.
  const Graph g = one_linear(64, 100, 4096);
  const std::vector<MisalignedLayer> fp16 = misaligned_matrix_layers(g, nvidia, Precision::kFp16);
  REQUIRE(fp16.size() == 1);
  CHECK(fp16[0].name == "fc");
  CHECK(fp16[0].dimension == "input features");
  CHECK(fp16[0].size == 100);
  CHECK(fp16[0].multiple == 8);
  CHECK(fp16[0].padded == 128);
  CHECK(fp16[0].share_of_macs == Approx(1.0));
  CHECK(misaligned_matrix_layers(g, nvidia, Precision::kTf32).empty());
  // The output features are checked first; aligned layers, fp32 (no tensor-core rule), devices
  // of other vendors and precisions without a matrix peak get nothing.
  const Graph head = one_linear(64, 768, 50257);
  const auto lm = misaligned_matrix_layers(head, nvidia, Precision::kFp16);
  REQUIRE(lm.size() == 1);
  CHECK(lm[0].dimension == "output features");
  CHECK(lm[0].padded == 50304);  // nanoGPT's padded GPT-2 vocabulary.
  CHECK(misaligned_matrix_layers(one_linear(64, 4096, 11008), nvidia, Precision::kFp16).empty());
  CHECK(misaligned_matrix_layers(head, nvidia, Precision::kFp32).empty());
  CHECK(misaligned_matrix_layers(head, nvidia, Precision::kBf16).empty());  // No bf16 peak.
  Device other = nvidia;
  other.vendor = "amd";
  CHECK(misaligned_matrix_layers(head, other, Precision::kFp16).empty());
}

// Tile quantisation (NVIDIA's "Matrix Multiplication Background" guide: tensor-core kernels
// compute the output in 128-wide tiles and the reduction in 64-deep slices; partial tiles
// waste the rest). N = 192 fills 192 / 256 of two output tiles; K = 96 fills 96 / 128 of two
// slices: the product runs at 0.75 x 0.75 of the matrix rate.
TEST_CASE("predict: partial tiles of N and K slow a product by their fill", "[predict]") {
  const Graph full = one_linear(4096, 128, 256);
  const Graph partial = one_linear(4096, 96, 192);
  Workload w;
  w.precision = Precision::kFp16;
  const Estimate e = estimate(partial, round_device(), round_params(), w);
  const double macs = 4096.0 * 96 * 192;
  CHECK(e.layers[0].matrix_units);
  CHECK(e.layers[0].compute_s == Approx(2 * macs / (100e12 * 0.5 * (192.0 / 256) * (96.0 / 128))));
  // Multiples of the tile lose nothing.
  const Estimate f = estimate(full, round_device(), round_params(), w);
  CHECK(f.layers[0].compute_s == Approx(2 * 4096.0 * 128 * 256 / (100e12 * 0.5)));
}

// GPT-2's LM head has 50,257 outputs: on NVIDIA tensor cores a 16-bit product whose features
// are not a multiple of 8 elements (16 bytes) runs on cuBLAS's unaligned kernels, at the
// misaligned matrix efficiency of the dense peak. [4096, 256] x [256, 1020]: 1,020 is not a
// multiple of 8 and fills 1,020 / 1,024 of its last 128-wide tile, so 10 % of 100 TFLOP/s x
// that fill; elsewhere 50 % x the fill.
TEST_CASE("predict: an unaligned product runs at the misaligned matrix efficiency", "[predict]") {
  const Graph g = one_linear(4096, 256, 1020);
  Device nvidia = round_device();
  nvidia.vendor = "nvidia";
  PerformanceParams p = round_params();
  p.misaligned_matrix_efficiency = 0.1;
  Workload w;
  w.precision = Precision::kFp16;
  const double macs = 4096.0 * 256 * 1020;
  const double fill = 1020.0 / 1024;
  CHECK(estimate(g, nvidia, p, w).layers[0].compute_s == Approx(2 * macs / (100e12 * 0.1 * fill)));
  // Another vendor, or no such parameter: timed like an aligned product.
  const double plain = 2 * macs / (100e12 * 0.5 * fill);
  CHECK(estimate(g, round_device(), p, w).layers[0].compute_s == Approx(plain));
  CHECK(estimate(g, nvidia, round_params(), w).layers[0].compute_s == Approx(plain));
  // Aligned features (1,024) take the full rate.
  CHECK(estimate(one_linear(4096, 256, 1024), nvidia, p, w).layers[0].compute_s ==
        Approx(2 * 4096.0 * 256 * 1024 / (100e12 * 0.5)));
  // A runtime that pads the vocabulary to a multiple of 128 (Megatron) aligns the output
  // layer's features: the full rate, and no alignment warning for it.
  Runtime megatron;
  megatron.vocab_padding = 128;
  w.runtime = megatron;
  CHECK(estimate(g, nvidia, p, w).layers[0].compute_s == Approx(plain));
  CHECK(misaligned_matrix_layers(g, nvidia, Precision::kFp16, w.runtime).empty());
  CHECK(misaligned_matrix_layers(g, nvidia, Precision::kFp16).size() == 1);
  // A padding that is no multiple of 8 elements leaves it unaligned.
  megatron.vocab_padding = 4;
  w.runtime = megatron;
  CHECK(estimate(g, nvidia, p, w).layers[0].compute_s == Approx(2 * macs / (100e12 * 0.1 * fill)));
}

// The ConvNeXt case: its channels-last MLP is a linear layer on [B, 7, 7, 768]. The matrix
// units see one [49B, 768] x [768, 3072] product: the layer is timed exactly as that GEMM, not
// with the image's 7-wide axis taken for the output width.
TEST_CASE("predict: a linear layer over image axes is timed as its flattened GEMM", "[predict]") {
  const Graph image = parse_model(R"({"format": "capcalc-model/1", "name": "mlp",
    "dims": {"batch": 1024}, "inputs": [{"name": "x", "shape": ["batch", 7, 7, 768]}],
    "layers": [{"name": "pwconv1", "op": "linear", "out_features": 3072, "bias": false}]})",
                                  "mlp.json");
  const Graph rows = one_linear(49 * 1024, 768, 3072);
  REQUIRE(image.layers[0].traits.gemm);
  const GemmView& gemm = *image.layers[0].traits.gemm;
  CHECK(gemm.m == 49 * 1024);
  CHECK(gemm.n == 3072);
  CHECK(gemm.k == 768);
  CHECK(gemm.count == 1);
  Workload w;
  w.precision = Precision::kFp16;
  const Estimate a = estimate(image, round_device(), round_params(), w);
  const Estimate b = estimate(rows, round_device(), round_params(), w);
  // 3072 and 768 are whole tiles: the full matrix rate.
  const double macs = 49.0 * 1024 * 768 * 3072;
  CHECK(a.layers[0].compute_s == Approx(2 * macs / 50e12));
  CHECK(a.layers[0].compute_s == Approx(b.layers[0].compute_s));
  CHECK(a.layers[0].time_s == Approx(b.layers[0].time_s));
}

// Fusion is the operator's trait: under the compiled profile an elementwise layer keeps its
// arithmetic and loses its traffic and launch; batch normalisation folds at inference only.
TEST_CASE("predict: fusion follows the operator's trait", "[predict]") {
  const Graph g = parse_model(R"({"format": "capcalc-model/1", "name": "cbr",
    "dims": {"batch": 8}, "inputs": [{"name": "x", "shape": ["batch", 64, 32, 32]}],
    "layers": [{"name": "conv", "op": "conv2d", "out_channels": 64, "kernel": 3, "padding": 1},
               {"name": "bn", "op": "batchnorm"},
               {"name": "relu", "op": "relu"},
               {"name": "pool", "op": "maxpool2d", "kernel": 2, "stride": 2}]})",
                              "cbr.json");
  Workload w;
  w.precision = Precision::kFp16;
  w.profile = Profile::kCompiled;
  const Estimate inference = estimate(g, round_device(), round_params(), w);
  CHECK(inference.layers[1].bound == Bound::kFused);
  CHECK(inference.layers[2].bound == Bound::kFused);
  CHECK(inference.layers[2].bytes == 0);
  CHECK(inference.layers[3].bound != Bound::kFused);  // Pooling is never fused.
  w.mode = Mode::kTraining;
  const Estimate training = estimate(g, round_device(), round_params(), w);
  CHECK(training.layers[1].bound != Bound::kFused);  // Batch statistics: its own kernel.
}

namespace {

Device round_gpu_with_units(int units) {
  Device d = round_device();
  d.compute_units = units;
  return d;
}

}  // namespace

// Wave quantisation on a device of 100 units (NVIDIA's "Matrix Multiplication Background"
// guide): [12800, 128] x [128, 1280] has 100 x 10 = 1,000 output tiles of 128 x 128: ten full
// waves, nothing lost. [12928, ...] has 101 x 10 = 1,010 tiles: eleven waves, the last with 10
// tiles, so 1,010 / 1,100 of the rate (and 12,928 rows fill their tiles exactly).
TEST_CASE("predict: a partial last wave of tiles idles units", "[predict]") {
  Workload w;
  w.precision = Precision::kFp16;
  const Device d = round_gpu_with_units(100);
  const Estimate full = estimate(one_linear(12800, 128, 1280), d, round_params(), w);
  CHECK(full.layers[0].compute_s == Approx(2.0 * 12800 * 128 * 1280 / 50e12));
  const Estimate partial = estimate(one_linear(12928, 128, 1280), d, round_params(), w);
  CHECK(partial.layers[0].compute_s == Approx(2.0 * 12928 * 128 * 1280 / (50e12 * 1010.0 / 1100)));
  // Without a unit count (or on a CPU) there is no wave penalty.
  const Estimate unknown =
      estimate(one_linear(12928, 128, 1280), round_device(), round_params(), w);
  CHECK(unknown.layers[0].compute_s == Approx(2.0 * 12928 * 128 * 1280 / 50e12));
}

// Fewer tiles than units: the reduction is split over idle units in 64-deep slices. [256, 512]
// x [512, 256] has 2 x 2 = 4 tiles on 100 units: split 25 ways (512 / 64 = 8 slices allow only
// 8), so 4 x 8 = 32 of 100 units work. [256, 4096] x [4096, 256]: 64 slices, split 25 ways,
// all 100 units.
TEST_CASE("predict: too few tiles split the reduction over idle units", "[predict]") {
  Workload w;
  w.precision = Precision::kFp16;
  const Device d = round_gpu_with_units(100);
  const Estimate shallow = estimate(one_linear(256, 512, 256), d, round_params(), w);
  CHECK(shallow.layers[0].compute_s == Approx(2.0 * 256 * 512 * 256 / (50e12 * 0.32)));
  const Estimate deep = estimate(one_linear(256, 4096, 256), d, round_params(), w);
  CHECK(deep.layers[0].compute_s == Approx(2.0 * 256 * 4096 * 256 / 50e12));
}

// Last-level cache: fc's output (64 x 1024 fp16 = 128 kB) is read by relu straight after, and
// fits a 1 MB cache, so relu reads it from there: relu's DRAM traffic is only its write,
// 128 kB, not 256 kB. fc itself reads the model input, which no layer wrote: all from DRAM.
// With a 64 kB cache nothing fits and relu moves both.
TEST_CASE("predict: an activation the next layer reads from the cache is not read from DRAM",
          "[predict]") {
  const Graph g = parse_model(R"({"format": "capcalc-model/1", "name": "fc_relu",
    "dims": {"batch": 64}, "inputs": [{"name": "x", "shape": ["batch", 1024]}],
    "layers": [{"name": "fc", "op": "linear", "out_features": 1024, "bias": false},
               {"name": "relu", "op": "relu"}]})",
                              "fc_relu.json");
  Workload w;
  w.precision = Precision::kFp16;
  Device cached = round_device();
  cached.cache_bytes = 1e6;
  const double tensor = 64.0 * 1024 * 2;
  const Estimate e = estimate(g, cached, round_params(), w);
  CHECK(e.layers[1].bytes == Approx(tensor));
  CHECK(e.layers[1].memory_s == Approx(tensor / 0.5e12));
  CHECK(e.layers[0].bytes == Approx(tensor + tensor + 1024.0 * 1024 * 2));
  Device small = round_device();
  small.cache_bytes = 64e3;
  CHECK(estimate(g, small, round_params(), w).layers[1].bytes == Approx(2 * tensor));
  // Backward reads what forward saved, not from the cache: twice the uncached traffic.
  w.mode = Mode::kTraining;
  const Estimate t = estimate(g, cached, round_params(), w);
  CHECK(t.layers[1].bytes == Approx(tensor + 2 * 2 * tensor));
}

// Eager training: PyTorch's autograd engine launches the backward kernels from C++
// (torch/csrc/autograd/engine.cpp), so they pay the graph executor's floor, not the Python
// dispatch of the forward. Inductor (AOTAutograd) and graphs keep their own floor both ways.
TEST_CASE("predict: eager backward kernels launch at the graph executor's floor", "[predict]") {
  const Graph g = one_linear(1, 16, 16);  // Far below every floor: all three bound by the host.
  PerformanceParams p = round_params();   // Eager 1 us per kernel, compiled 0.1 us.
  p.graph_overhead_s = 0.25e-6;
  Workload w;
  w.mode = Mode::kTraining;
  // One forward kernel at 1 us, two backward kernels (input and weight gradient) at 0.25 us;
  // the optimizer's update (256 x 28 bytes, 14 ns) takes the forward's floor, 1 us.
  const Estimate eager = estimate(g, round_device(), p, w);
  REQUIRE(eager.layers.size() == 1);
  CHECK(eager.layers[0].kernels == 3);
  CHECK(eager.layers[0].overhead_s == Approx(1e-6 + 2 * 0.25e-6));
  CHECK(eager.layers[0].time_s == Approx(1.5e-6));
  CHECK(eager.optimizer_s == Approx(1e-6));
  CHECK(eager.latency_s == Approx(2.5e-6));
  // Inductor launches its compiled backward from Python too: 1 us each way.
  w.profile = Profile::kInductor;
  CHECK(estimate(g, round_device(), p, w).layers[0].time_s == Approx(3e-6));
  // The graph profile pays 0.25 us per kernel both ways.
  w.profile = Profile::kGraph;
  CHECK(estimate(g, round_device(), p, w).layers[0].time_s == Approx(0.75e-6));
  // A graph floor above the eager one never slows eager's backward: min(5 us, 1 us).
  p.graph_overhead_s = 5e-6;
  w.profile = Profile::kEager;
  CHECK(estimate(g, round_device(), p, w).layers[0].time_s == Approx(3e-6));
}

// fp8 and int8 recipes quantise the weight GEMMs; QK^T and AV stay in 16 bits (Transformer
// Engine's FP8 recipe, TensorRT's fused MHA): an attention layer's score MACs run at the fp16
// matrix peak, its projections at the fp8 one.
TEST_CASE("predict: 8-bit attention runs its score products at the 16-bit matrix peak",
          "[predict]") {
  Device d = round_device();
  d.dense_peak[static_cast<std::size_t>(Precision::kFp8)] = {0, 200e12};  // Matrix only.
  const Graph g = decoder(512, 0);
  const Layer& attention = g.layers[0];
  REQUIRE(attention.op == "attention");
  const auto macs = static_cast<double>(attention.counts.macs);
  const auto score = static_cast<double>(attention.counts.score_macs);
  const auto other = static_cast<double>(attention.counts.other_flops);
  REQUIRE(score > 0);
  Workload w;
  w.precision = Precision::kFp8;
  const Estimate e = estimate(g, d, round_params(), w);
  // Projections at 200 x 0.5, scores at 100 x 0.5 TFLOP/s, softmax on fp32's vector units (fp8
  // has none of its own): 10 x 0.5.
  CHECK(e.layers[0].compute_s ==
        Approx(2 * (macs - score) / 100e12 + 2 * score / 50e12 + other / 5e12));
  // In fp16 both run at 100 x 0.5, the softmax at fp16's vector 20 x 0.5.
  w.precision = Precision::kFp16;
  CHECK(estimate(g, d, round_params(), w).layers[0].compute_s ==
        Approx(2 * macs / 50e12 + other / 10e12));
}

// A FlashAttention-style runtime (flash_attention): a causal layer's masked pairs, counted
// under "causal: full", take no time, forward or backward, and the backward recomputes QKᵀ
// (2.5 forward products' worth, FlashAttention's own count). The counts do not change.
TEST_CASE("predict: FlashAttention kernels skip the masked pairs and recompute QK in backward",
          "[predict]") {
  // Batch 4, 512 tokens, 8 heads of 64: per head 512 x 512 pairs counted, 512 x 513 / 2 seen.
  const Graph g = parse_model(R"({"format": "capcalc-model/1", "name": "a",
    "inputs": [{"name": "x", "shape": [4, 512, 512]}],
    "layers": [{"name": "attn", "op": "attention", "heads": 8, "causal": true, "bias": false}]})",
                              "a.json");
  const LayerCounts& c = g.layers[0].counts;
  const double masked_pairs = 4.0 * 8 * (512 * 512 - 512 * 513 / 2);
  REQUIRE(static_cast<double>(c.masked_score_macs) == masked_pairs * 2 * 64);  // QKᵀ and AV.
  REQUIRE(static_cast<double>(c.masked_other_flops) == masked_pairs * 6);
  const auto macs = static_cast<double>(c.macs);
  const auto score = static_cast<double>(c.score_macs);
  const auto masked = static_cast<double>(c.masked_score_macs);
  const auto other = static_cast<double>(c.other_flops);
  const auto masked_other = static_cast<double>(c.masked_other_flops);
  Workload w;
  w.precision = Precision::kFp16;
  // fp16 on the round GPU: matrix 100 x 0.5, vector 20 x 0.5 TFLOP/s.
  const Estimate dense = estimate(g, round_device(), round_params(), w);
  CHECK(dense.layers[0].compute_s == Approx(2 * macs / 50e12 + other / 10e12));
  Runtime flash;
  flash.flash_attention = true;
  w.runtime = flash;
  const Estimate skipped = estimate(g, round_device(), round_params(), w);
  CHECK(skipped.layers[0].compute_s ==
        Approx(2 * (macs - masked) / 50e12 + (other - masked_other) / 10e12));
  // The counted FLOPs stay the model's; the executed ones (a roofline point's) leave the
  // masked pairs out.
  CHECK(skipped.flops == Approx(dense.flops));
  CHECK(skipped.executed_flops == Approx(dense.flops - 2 * masked - masked_other));
  CHECK(dense.executed_flops == Approx(dense.flops));
  // Training: the backward's score products (twice the forward's) skip the masked pairs too,
  // and add the recomputed QKᵀ, half the forward's performed score MACs; the softmax's
  // gradient skips them. The projections' gradients are untouched.
  w.mode = Mode::kTraining;
  w.runtime.reset();
  const double dense_training = estimate(g, round_device(), round_params(), w).layers[0].compute_s;
  const auto backward = static_cast<double>(c.backward_macs);
  CHECK(dense_training ==
        Approx(2 * macs / 50e12 + other / 10e12 + 2 * backward / 50e12 + 2 * other / 10e12));
  w.runtime = flash;
  const double performed = score - masked;
  CHECK(estimate(g, round_device(), round_params(), w).layers[0].compute_s ==
        Approx(2 * (macs - masked) / 50e12 + (other - masked_other) / 10e12 +
               2 * (backward - 2 * score + 2.5 * performed) / 50e12 +
               2 * (other - masked_other) / 10e12));
  // Counted half, nothing is masked: the runtime changes only the backward's recompute.
  ModelOptions half;
  half.counting.causal = CausalCounting::kHalf;
  const Graph halved = parse_model(R"({"format": "capcalc-model/1", "name": "a",
    "inputs": [{"name": "x", "shape": [4, 512, 512]}],
    "layers": [{"name": "attn", "op": "attention", "heads": 8, "causal": true, "bias": false}]})",
                                   "a.json", half);
  REQUIRE(halved.layers[0].counts.masked_score_macs == 0);
  w.mode = Mode::kInference;
  CHECK(estimate(halved, round_device(), round_params(), w).layers[0].compute_s ==
        Approx(skipped.layers[0].compute_s));
}

// FP8: the products' inputs are quantized as they are read; activations between layers stay in
// 16 bits (2 B moved per element), a KV cache and what training saves at 1 B. A runtime's
// fp8_quantize_bytes adds, in training, a memory pass over each weighted product's input
// (forward) and output gradient (backward).
TEST_CASE("predict: fp8 activations move 16 bits, and training pays the quantize passes",
          "[predict]") {
  Device d = round_device();
  d.dense_peak[static_cast<std::size_t>(Precision::kFp8)] = {0, 200e12};
  // 4096 x 1024 by 1024 x 1024: 4 M input and 4 M output elements.
  const Graph g = one_linear(4096, 1024, 1024);
  const double elements = 4096.0 * 1024;
  Workload w;
  w.precision = Precision::kFp8;
  const Estimate inference = estimate(g, d, round_params(), w);
  // Input and output at 2 B, the weights at 1 B, over 1 TB/s x 0.5.
  CHECK(inference.layers[0].memory_s == Approx((2 * elements * 2 + 1024.0 * 1024) / 0.5e12));
  w.mode = Mode::kTraining;
  const Estimate plain = estimate(g, d, round_params(), w);
  Runtime te;
  te.fp8_quantize_bytes = 4;
  w.runtime = te;
  const Estimate quantized = estimate(g, d, round_params(), w);
  CHECK(quantized.layers[0].time_s - plain.layers[0].time_s ==
        Approx(4 * elements / 0.5e12 + 4 * elements / 0.5e12));
  // Saved for backward at 1 B: the same activation memory either way, half of fp16's.
  CHECK(quantized.memory.activation_bytes == Approx(plain.memory.activation_bytes));
  w.precision = Precision::kFp16;
  w.runtime.reset();
  CHECK(estimate(g, d, round_params(), w).memory.activation_bytes ==
        Approx(2 * plain.memory.activation_bytes));
  // Inference and other precisions quantize nothing.
  w.runtime = te;
  w.mode = Mode::kInference;
  w.precision = Precision::kFp8;
  CHECK(estimate(g, d, round_params(), w).layers[0].time_s == Approx(inference.layers[0].time_s));
}

namespace {

// A Mixtral-style MoE layer: d 512, 8 experts of hidden 1024, top-2 routing.
Graph moe(std::int64_t batch) {
  return parse_model(R"({"format": "capcalc-model/1", "name": "moe", "dims": {"batch": )" +
                         std::to_string(batch) + R"(},
    "inputs": [{"name": "x", "shape": ["batch", 512]}],
    "layers": [{"name": "experts", "op": "moe", "experts": 8, "experts_per_token": 2,
                "hidden": 1024}]})",
                     "moe.json");
}

}  // namespace

// MoE weight traffic: a step reads the router and the experts its tokens touch, at most one
// per token-expert pair (balanced routing), never more than all of them.
TEST_CASE("predict: an MoE layer reads only the experts its batch touches", "[predict]") {
  const std::int64_t router = 512 * 8;
  const std::int64_t expert = 3 * 512 * 1024;  // gate, up, down.
  // One token picks 2 experts: router + 2 experts.
  const Graph one = moe(1);
  CHECK(one.layers[0].counts.weight_elements_read == router + 2 * expert);
  CHECK(one.layers[0].counts.params == router + 8 * expert);
  // Three tokens: 6 pairs, 6 experts. Eight tokens: 16 pairs, but only 8 experts exist.
  CHECK(moe(3).layers[0].counts.weight_elements_read == router + 6 * expert);
  CHECK(moe(8).layers[0].counts.weight_elements_read == router + 8 * expert);
  // At batch 1 in fp16 the layer is memory-bound: its bytes are those weights plus its
  // activations at 2 bytes over 0.5 TB/s: the input of 512 read by the router and by each of
  // the 2 pairs' gate and up, the output of 512 written, and, each written and read, the 8
  // router logits and per pair the gate, up and product of 1024 and the down output of 512.
  Workload w;
  w.precision = Precision::kFp16;
  const Estimate e = estimate(one, round_device(), round_params(), w);
  const double activations = 512.0 + 2 * 512 + 512 + 2 * (8 + 2 * (3 * 1024 + 512));
  const double bytes = (static_cast<double>(router + 2 * expert) + activations) * 2;
  CHECK(e.layers[0].bound == Bound::kMemory);
  CHECK(e.layers[0].bytes == Approx(bytes));
  CHECK(e.layers[0].time_s == Approx(bytes / 0.5e12));
}

// LLM decode: each step reads every weight once and the KV cache of every sequence; at batch
// 4 over 1000 cached tokens the two-layer decoder is memory-bound on the round device.
TEST_CASE("serving: a decode step's time is its weights, cache and activations over bandwidth",
          "[predict][serving]") {
  const Graph step = decoder(1, 1000);
  Workload w;
  w.precision = Precision::kFp16;
  const Estimate e = estimate(step, round_device(), round_params(), w);
  // Per layer: attention Q and O 512 x 512, K and V 512 x 128 (2 KV heads of 64), the linear
  // 512 x 512; the cache: 4 sequences x 1000 tokens x (K + V) x 128.
  const double weights = 2 * (2 * 512.0 * 512 + 2 * 512.0 * 128 + 512.0 * 512);
  const double cache = 2 * (4 * 1000.0 * 2 * 128);
  double activations = 0;
  for (const Layer& layer : step.layers)
    activations += static_cast<double>(layer.counts.input_elements + layer.counts.output_elements);
  const double bytes = (weights + cache) * 2 + activations * 2;
  for (const LayerEstimate& layer : e.layers)
    CHECK(layer.bound == Bound::kMemory);
  CHECK(e.bytes == Approx(bytes));
  CHECK(e.latency_s == Approx(bytes / 0.5e12));
  // int4 weights (4.125 bits: 0.515625 bytes) cut only the weight term.
  w.weight_precision = Precision::kInt4;
  const Estimate q = estimate(step, round_device(), round_params(), w);
  CHECK(q.bytes == Approx(weights * 0.515625 + cache * 2 + activations * 2));
  // Prefill of 100 tokens at batch 4: the linear layer's 400 x 512 x 512 MACs at 100 x 0.5
  // TFLOP/s take 4.19 us, above its 1.3 MB over 0.5 TB/s (2.6 us) and its 1 us floor; the
  // attention's products and scores run at the same rate, its softmax at fp16's 20 x 0.5.
  const Graph prefill = decoder(100, 0);
  w.weight_precision.reset();
  const Estimate p = estimate(prefill, round_device(), round_params(), w);
  REQUIRE(prefill.layers[1].op == "linear");
  CHECK(p.layers[1].bound == Bound::kCompute);
  CHECK(p.layers[1].time_s == Approx(2 * 400.0 * 512 * 512 / 50e12));
  const LayerCounts& a = prefill.layers[0].counts;
  CHECK(p.layers[0].compute_s == Approx(2.0 * static_cast<double>(a.macs) / 50e12 +
                                        static_cast<double>(a.other_flops) / 10e12));
}

namespace {

// 4,096 tokens of width 1,024 through fc1 (1024 -> 1024), a GQA attention layer (16 heads of
// 64, 4 KV heads) and the output layer fc2 (1024 -> 1024), no biases.
Graph lora_model() {
  return parse_model(R"({"format": "capcalc-model/1", "name": "lora",
    "dims": {"batch": 4, "seq": 1024},
    "inputs": [{"name": "x", "shape": ["batch", "seq", 1024]}],
    "layers": [
      {"name": "fc1", "op": "linear", "out_features": 1024, "bias": false},
      {"name": "attn", "op": "attention", "heads": 16, "kv_heads": 4, "bias": false},
      {"name": "fc2", "op": "linear", "out_features": 1024, "bias": false}]})",
                     "lora.json");
}

}  // namespace

// LoRA (Hu et al. 2021): each adapted matrix W (in -> out) gains A (in x r) and B (r x out);
// the frozen weights take no weight gradient and hold no gradient or optimizer state.
TEST_CASE("predict: LoRA trains the adapters only and drops the frozen weight gradients",
          "[predict]") {
  const Graph g = lora_model();
  Workload w;
  w.mode = Mode::kTraining;
  w.precision = Precision::kFp16;
  Workload lora = w;
  lora.lora_rank = 8;
  const Estimate full = estimate(g, round_device(), round_params(), w);
  const Estimate e = estimate(g, round_device(), round_params(), lora);
  // Adapters per unit of rank: fc1 1024 + 1024; attention's projections q 1024 + 1024, k and v
  // 1024 + 256 each, out 1024 + 1024 = 6,656; fc2 is the output layer and gets none.
  const double per_rank = 2048 + 6656;
  CHECK(e.lora_params == Approx(8 * per_rank));
  // Memory: the frozen weights stay in fp16 beside the adapters'; gradients in fp16 and Adam's
  // moments + fp32 master copy (12 bytes) for the adapters only.
  const double weights = 1024.0 * 1024 * 2 + 1024.0 * (1024 + 2 * 256 + 1024);
  CHECK(e.memory.weight_bytes == Approx((weights + 8 * per_rank) * 2));
  CHECK(e.memory.gradient_bytes == Approx(8 * per_rank * 2));
  CHECK(e.memory.optimizer_bytes == Approx(8 * per_rank * 12));
  CHECK(full.memory.optimizer_bytes == Approx(weights * 12));
  // Work, in MACs of the 4,096 tokens. fc1 reads the model input: without LoRA its backward is
  // its weight gradient alone; with LoRA that goes, and its adapter's forward (4096 x 8 x 2048)
  // comes back twice (input and weight gradients). fc2: input gradient only.
  const double tokens = 4096;
  const double fc = tokens * 1024 * 1024;
  const double attention_weights = tokens * 1024 * (1024 + 2 * 256 + 1024);
  const double fc1_adapter = tokens * 8 * 2048;
  const double attention_adapter = tokens * 8 * 6656;
  const double scores = static_cast<double>(g.layers[1].counts.score_macs);
  const double attention_backward = static_cast<double>(g.layers[1].counts.backward_macs);
  // fc1: forward fc + adapter; backward 2 x adapter.
  CHECK(e.layers[0].flops == Approx(2 * (fc + fc1_adapter + 2 * fc1_adapter)));
  CHECK(full.layers[0].flops == Approx(2 * (fc + fc)));
  // fc2 (no adapter): forward and the input gradient.
  CHECK(e.layers[2].flops == Approx(2 * (fc + fc)));
  CHECK(full.layers[2].flops == Approx(2 * (fc + 2 * fc)));
  // Attention: its weight gradients (as many MACs as its projections) go, its adapters come.
  const double attention_other =
      static_cast<double>(g.layers[1].counts.other_flops + g.layers[1].counts.backward_other_flops);
  // MFU's model FLOPs are what runs, on one device without recompute.
  CHECK(training_model_flops(g, lora) == Approx(e.flops));
  CHECK(training_model_flops(g, w) == Approx(full.flops));
  CHECK(e.layers[1].flops ==
        Approx(2 * (attention_weights + scores + attention_adapter) +
               2 * (attention_backward - attention_weights + 2 * attention_adapter) +
               attention_other));
}

TEST_CASE("predict: LoRA on attention only adapts the attention layers", "[predict]") {
  Workload w;
  w.mode = Mode::kTraining;
  w.precision = Precision::kFp16;
  w.lora_rank = 16;
  w.lora_attention_only = true;
  w.devices = 2;
  Device d = round_device();
  d.intra_node = Link{"Link", 2e9, "bidirectional"};
  const Estimate e = estimate(lora_model(), d, round_params(), w);
  CHECK(e.lora_params == Approx(16 * 6656));
  // Two replicas all-reduce the adapters' fp16 gradients only.
  CHECK(e.data_parallel_bytes == Approx(16 * 6656 * 2));
  // ZeRO-2 reduce-scatters them and gathers what the update changed, the adapters (half an
  // all-reduce's operand each); ZeRO-3 gathers the model's weights twice a micro-batch.
  w.zero_stage = 2;
  CHECK(estimate(lora_model(), d, round_params(), w).data_parallel_bytes ==
        Approx((16 * 6656 * 2 + 16 * 6656 * 2) / 2.0));
  w.zero_stage = 3;
  const double weights = 1024.0 * 1024 * 2 + 1024.0 * (1024 + 2 * 256 + 1024);
  CHECK(estimate(lora_model(), d, round_params(), w).data_parallel_bytes ==
        Approx((2 * weights * 2 + 16 * 6656 * 2) / 2.0));
}

// The input pipeline: [4096 x 4096] x [4096 x 4096] in fp16 is 2.75 ms on the round device
// (2 x 4096^3 MACs at 50 TFLOP/s). At 1,000 samples/s a replica, the batch's 4,096 samples take
// 4.096 s: the step waits 4.096 - 0.00275 s for them, and throughput is the input's 1,000/s.
// At 10 M/s they take 0.41 ms, inside the step: nothing changes.
TEST_CASE("predict: a step waits for its samples where the input pipeline is slower", "[predict]") {
  const Graph g = one_linear(4096, 4096, 4096);
  Workload w;
  w.precision = Precision::kFp16;
  const double own = 2.0 * 4096 * 4096 * 4096 / 50e12;
  w.input_rate_per_s = 1000;
  const Estimate slow = estimate(g, round_device(), round_params(), w);
  CHECK(slow.input_s == Approx(4.096));
  CHECK(slow.input_wait_s == Approx(4.096 - own));
  CHECK(slow.latency_s == Approx(4.096));
  CHECK(slow.throughput_per_s == Approx(1000));
  CHECK(slow.achieved_flops_per_s == Approx(slow.flops / 4.096));
  w.input_rate_per_s = 1e7;
  const Estimate fast = estimate(g, round_device(), round_params(), w);
  CHECK(fast.input_s == Approx(4096 / 1e7));
  CHECK(fast.input_wait_s == 0);
  CHECK(fast.latency_s == Approx(own));
  // Training: each of 2 replicas reads 4 micro-batches of 4,096 a step, 16.384 s at 1,000/s;
  // the whole job takes 2,000 samples/s.
  Workload t;
  t.precision = Precision::kFp16;
  t.mode = Mode::kTraining;
  t.devices = 2;
  t.micro_batches = 4;
  t.input_rate_per_s = 1000;
  const Estimate step = estimate(g, round_device(), round_params(), t);
  CHECK(step.input_s == Approx(16.384));
  CHECK(step.latency_s == Approx(16.384));
  CHECK(step.throughput_per_s == Approx(2000));
  // A rate of none, a negative or a past-the-limit one is refused.
  Workload bad = w;
  bad.input_rate_per_s = -1;
  CHECK_THROWS_WITH(estimate(g, round_device(), round_params(), bad),
                    Catch::Matchers::Contains("--input-rate must be above 0"));
}
