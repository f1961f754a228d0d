// Tests for the hardware table: invariants that every entry of data/hardware.json must keep,
// datasheet figures pinned with their sources, lookup by alias, and the located error messages of
// parse_hardware for malformed input.
#include "capcalc/hardware.hpp"

#include <cmath>
#include <functional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "capcalc/error.hpp"

#include "catch.hpp"
#include "input_file.hpp"
#include "json_view.hpp"
#include "test_data.hpp"

using capcalc::Device;
using capcalc::DeviceType;
using capcalc::HardwareTable;
using capcalc::Precision;

namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;

const HardwareTable& table() {
  static const HardwareTable loaded =
      capcalc::load_hardware(capcalc::test::data_path("hardware.json"));
  return loaded;
}

const nlohmann::json& raw_table() {
  static const nlohmann::json raw = capcalc::parse_json_text(
      capcalc::read_input_file(capcalc::test::data_path("hardware.json")), "hardware.json");
  return raw;
}

const Device& device(const std::string& id) {
  return table().get(id);
}

double tflops(const Device& d, Precision p, bool matrix) {
  const capcalc::PeakRate& rate = d.peak(p);
  return (matrix ? rate.matrix_flops_per_s : rate.vector_flops_per_s) / kTera;
}

// what() of the capcalc::Error thrown by `f`, or a marker if none was thrown.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const capcalc::Error& e) {
    return e.what();
  }
  return "<no capcalc::Error>";
}

// A valid one-device table; tests break one thing at a time.
nlohmann::json minimal_table() {
  return nlohmann::json::parse(R"({
    "schema_version": 1,
    "devices": [{
      "id": "dev-a", "name": "Device A", "aliases": ["Alpha"], "type": "gpu", "vendor": "acme",
      "dense_peak_tflops": {"fp32": {"vector": 10}, "fp16": {"vector": 20, "matrix": 100}},
      "memory_gb": 16, "memory_bandwidth_gb_per_s": 500,
      "sources": ["https://example.com/device-a"]
    }]})");
}

HardwareTable parse(const nlohmann::json& json) {
  return capcalc::parse_hardware(json.dump(2), "hw.json");
}

bool is_kebab(const std::string& id) {
  if (id.empty() || id.front() == '-' || id.back() == '-') return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) return false;
  }
  return id.find("--") == std::string::npos;
}

bool starts_with_http(const std::string& url) {
  return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Invariants over every entry.

TEST_CASE("the hardware table loads and has at least 35 devices", "[hardware]") {
  REQUIRE(table().devices.size() >= 35);
  CHECK(table().devices.size() == raw_table().at("devices").size());
  CHECK_FALSE(table().version.empty());
  CHECK_FALSE(table().updated.empty());
}

TEST_CASE("every device has a kebab-case unique id and unique names", "[hardware]") {
  std::set<std::string> ids;
  for (const Device& d : table().devices) {
    CAPTURE(d.id);
    CHECK(is_kebab(d.id));
    CHECK(ids.insert(d.id).second);
    CHECK_FALSE(d.name.empty());
    CHECK_FALSE(d.vendor.empty());
    // Each id and alias resolves back to its own device.
    CHECK(table().find(d.id) == &d);
    for (const std::string& alias : d.aliases) {
      CAPTURE(alias);
      CHECK(table().find(alias) == &d);
    }
  }
}

TEST_CASE("every device has positive memory, bandwidth and peak figures", "[hardware]") {
  for (const Device& d : table().devices) {
    CAPTURE(d.id);
    CHECK(d.memory_bytes > 0);
    CHECK(d.memory_bandwidth_bytes_per_s > 0);
    CHECK(d.cache_bytes >= 0);
    CHECK(d.tdp_w >= 0);
    CHECK_FALSE(d.precisions().empty());
    for (const capcalc::PeakRate& rate : d.dense_peak) {
      CHECK(std::isfinite(rate.vector_flops_per_s));
      CHECK(std::isfinite(rate.matrix_flops_per_s));
      CHECK(rate.vector_flops_per_s >= 0);
      CHECK(rate.matrix_flops_per_s >= 0);
    }
    if (d.release_year != 0) {
      CHECK(d.release_year >= 2000);
      CHECK(d.release_year <= 2030);
    }
  }
}

TEST_CASE("every GPU, TPU and accelerator has compute units and a clock, or says why not",
          "[hardware]") {
  // Figures no vendor document gives (data/hardware.json's notes say "NOT stored" and why).
  // Remove an id here when its figure is sourced.
  const std::set<std::string> no_units = {"a10g", "b200"};
  const std::set<std::string> no_clock = {"a10g",   "b200",     "tpu-v6e",
                                          "gaudi2", "m2-ultra", "m3-max"};
  for (const Device& d : table().devices) {
    CAPTURE(d.id);
    CHECK(d.compute_units >= 0);
    CHECK(d.compute_unit_name.empty() == (d.compute_units == 0));
    CHECK(d.boost_clock_hz >= 0);
    if (d.boost_clock_hz > 0) {
      CHECK(d.boost_clock_hz >= 500e6);  // MHz in the JSON, not GHz or Hz.
      CHECK(d.boost_clock_hz <= 6e9);
    }
    if (no_units.count(d.id) > 0 || no_clock.count(d.id) > 0) {
      CHECK(d.notes.find("NOT stored") != std::string::npos);
    }
    if (d.type == DeviceType::kCpu) {
      CHECK(d.compute_units > 0);
      CHECK(d.compute_unit_name == "core");
      CHECK(d.boost_clock_hz > 0);
      continue;
    }
    CHECK((d.compute_units > 0) == (no_units.count(d.id) == 0));
    CHECK((d.boost_clock_hz > 0) == (no_clock.count(d.id) == 0));
  }
  CHECK(device("tpu-v4").compute_unit_name == "MXU");
  CHECK(device("mi300x").compute_unit_name == "CU");
  CHECK(device("gaudi3").compute_unit_name == "MME");
  CHECK(device("m3-max").compute_unit_name == "GPU core");
  CHECK(device("i9-13900k").compute_units == 8 + 16);  // P-cores + E-cores (Intel ARK).
}

TEST_CASE("every precision listed in the JSON has a peak, and only those", "[hardware]") {
  const nlohmann::json& devices = raw_table().at("devices");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const Device& d = table().devices[i];
    CAPTURE(d.id);
    const nlohmann::json& peaks = devices[i].at("dense_peak_tflops");
    for (const auto& item : peaks.items()) {
      CAPTURE(item.key());
      const std::optional<Precision> precision = capcalc::parse_precision(item.key());
      REQUIRE(precision.has_value());
      CHECK(d.supports(*precision));
      CHECK((item.value().contains("vector") || item.value().contains("matrix")));
    }
    CHECK(d.precisions().size() == peaks.size());
  }
}

TEST_CASE("on GPUs the matrix peak is at least the vector peak within a precision", "[hardware]") {
  for (const Device& d : table().devices) {
    if (d.type != DeviceType::kGpu) continue;
    CAPTURE(d.id);
    for (Precision p : d.precisions()) {
      const capcalc::PeakRate& rate = d.peak(p);
      if (rate.vector_flops_per_s > 0 && rate.matrix_flops_per_s > 0) {
        CAPTURE(capcalc::precision_name(p));
        CHECK(rate.matrix_flops_per_s >= rate.vector_flops_per_s);
      }
    }
  }
}

TEST_CASE("sparsity factors, sources, links and prices are well formed", "[hardware]") {
  for (const Device& d : table().devices) {
    CAPTURE(d.id);
    CHECK(d.sparsity_2_4_speedup >= 1);
    REQUIRE_FALSE(d.sources.empty());
    for (const std::string& url : d.sources) {
      CAPTURE(url);
      CHECK(starts_with_http(url));
    }
    for (const std::optional<capcalc::Link>* link : {&d.intra_node, &d.inter_node}) {
      if (!link->has_value()) continue;
      CHECK_FALSE((*link)->name.empty());
      CHECK((*link)->bandwidth_bytes_per_s > 0);
      CHECK(((*link)->direction == "bidirectional" || (*link)->direction == "per_direction"));
    }
    if (d.price) {
      CHECK(d.price->usd_per_hour > 0);
      CHECK(d.price->date.size() >= 7);  // "YYYY-MM"
      CHECK(starts_with_http(d.price->source));
    }
  }
}

TEST_CASE("every device type has performance parameters between 0 and 1", "[hardware]") {
  for (DeviceType type :
       {DeviceType::kCpu, DeviceType::kGpu, DeviceType::kTpu, DeviceType::kAccelerator}) {
    const capcalc::PerformanceParams& params = table().performance_for(type);
    CAPTURE(capcalc::device_type_name(type));
    for (double fraction :
         {params.matrix_efficiency, params.vector_efficiency, params.memory_efficiency}) {
      CHECK(fraction > 0);
      CHECK(fraction <= 1);
    }
    CHECK(params.eager_overhead_s >= 0);
    CHECK(params.compiled_overhead_s >= 0);
    CHECK(params.compiled_overhead_s <= params.graph_overhead_s);
    CHECK(params.graph_overhead_s <= params.eager_overhead_s);
    CHECK(params.allreduce_efficiency > 0);
    CHECK(params.allreduce_efficiency <= 1);
    CHECK(params.compiled_allreduce_latency_s <= params.allreduce_latency_s);
  }
  // The gpu all-reduce parameters, from published collective benchmarks (hardware.json's
  // comment): the median of A100 231.5/300, H100 370/450 and MI300X 315.7/448 GB/s bus
  // bandwidth, NCCL's ~17-23 us small-message floor, one-shot serving kernels' ~6-12 us.
  const capcalc::PerformanceParams& gpu = table().performance_for(DeviceType::kGpu);
  CHECK(gpu.allreduce_efficiency == Approx(0.77));
  CHECK(gpu.allreduce_latency_s == Approx(20e-6));
  CHECK(gpu.compiled_allreduce_latency_s == Approx(8e-6));
  // NCCL's own per-step network latency, Simple protocol (src/graph/tuning.cc hwLatencies[NET]).
  CHECK(gpu.network_step_latency_s == Approx(14e-6));
}

// ---------------------------------------------------------------------------------------------
// Datasheet figures. JSON is in TFLOP/s and GB/s; the structs hold FLOP/s and bytes/s.

TEST_CASE("A100 figures match the NVIDIA A100 datasheet", "[hardware]") {
  // https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf
  // FP32 19.5 TFLOPS; FP16 tensor 312 (624* with sparsity); FP64 tensor 19.5;
  // A100 80GB SXM 2,039 GB/s; A100 40GB 1,555 GB/s.
  const Device& a100_80 = device("a100-sxm4-80gb");
  CHECK(a100_80.peak(Precision::kFp32).vector_flops_per_s == Approx(19.5 * kTera));
  CHECK(tflops(a100_80, Precision::kFp16, true) == Approx(624.0 / 2));  // Dense = sparse / 2.
  CHECK(tflops(a100_80, Precision::kFp64, true) == Approx(19.5));
  CHECK(a100_80.sparsity_2_4_speedup == Approx(2.0));
  CHECK(a100_80.memory_bandwidth_bytes_per_s == Approx(2039 * kGiga));
  CHECK(a100_80.memory_bytes == Approx(80 * kGiga));

  const Device& a100_40 = device("a100-sxm4-40gb");
  CHECK(a100_40.memory_bandwidth_bytes_per_s == Approx(1555 * kGiga));
  CHECK(a100_40.memory_bytes == Approx(40 * kGiga));
}

TEST_CASE("V100 figures match the Tesla V100 datasheet", "[hardware]") {
  // https://images.nvidia.com/content/technologies/volta/pdf/tesla-volta-v100-datasheet-letter-fnl-web.pdf
  // SXM2: tensor 125 TFLOPS (FP16 multiply), FP32 15.7, FP64 7.8, 900 GB/s.
  const Device& v100 = device("v100-sxm2-16gb");
  CHECK(tflops(v100, Precision::kFp16, true) == Approx(125));
  CHECK(tflops(v100, Precision::kFp32, false) == Approx(15.7));
  CHECK(v100.memory_bandwidth_bytes_per_s == Approx(900 * kGiga));
  CHECK_FALSE(v100.supports(Precision::kBf16));  // Volta tensor cores have no BF16.
  // https://wikimili.com/en/NVLink: 6 links x 50 GB/s bidirectional = 300 GB/s per V100.
  REQUIRE(v100.intra_node.has_value());
  CHECK(v100.intra_node->bandwidth_bytes_per_s == Approx(6 * 50 * kGiga));
  CHECK(v100.intra_node->direction == "bidirectional");
}

TEST_CASE("H100 SXM and H200 store the dense half of the datasheet's sparse figures",
          "[hardware]") {
  // https://archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html (NVIDIA table): BF16 1,979*,
  // FP8 3,958*, "* shown with sparsity, 1/2 lower without"; 3,350 GB/s; 700 W.
  // https://glennklockwood.com/garden/processors/h100: BF16 matrix 989.4 dense.
  const Device& h100 = device("h100-sxm");
  CHECK(tflops(h100, Precision::kBf16, true) == Approx(989.4));
  CHECK(tflops(h100, Precision::kBf16, true) == Approx(1979.0 / 2).epsilon(0.001));
  CHECK(tflops(h100, Precision::kFp8, true) == Approx(3958.0 / 2).epsilon(0.001));
  CHECK(h100.memory_bandwidth_bytes_per_s == Approx(3350 * kGiga));
  CHECK(h100.tdp_w == Approx(700));

  // https://lzwjava.github.io/nvidia-h200-gpu-specs-en: same compute, 141 GB, 4.8 TB/s.
  const Device& h200 = device("h200");
  CHECK(tflops(h200, Precision::kBf16, true) == Approx(989.4));
  CHECK(h200.memory_bytes == Approx(141 * kGiga));
  CHECK(h200.memory_bandwidth_bytes_per_s == Approx(4800 * kGiga));
}

TEST_CASE("H100 NVL figures are per GPU from the NVIDIA H100 technical specifications",
          "[hardware]") {
  // https://www.nvidia.com/en-us/data-center/h100/ (technical specifications, H100 NVL column,
  // the later per-GPU version; also the NVIDIA H100 NVL datasheet hosted at
  // https://www.pny.com/file%20library/company/support/product%20brochures/nvidia%20data%20center%20gpus/english/h100-nvl-datasheet.pdf):
  // FP64 30, FP64 Tensor Core 60, FP32 60, TF32 835*, BF16/FP16 1,671*, FP8 3,341*, INT8 3,341*
  // (* with sparsity), 94 GB, 3.9 TB/s, 350-400 W, NVLink 600 GB/s.
  const Device& nvl = device("h100-nvl");
  CHECK(tflops(nvl, Precision::kFp64, false) == Approx(30));
  CHECK(tflops(nvl, Precision::kFp64, true) == Approx(60));
  CHECK(tflops(nvl, Precision::kFp32, false) == Approx(60));
  CHECK(tflops(nvl, Precision::kTf32, true) == Approx(835.0 / 2));  // Dense = sparse / 2.
  CHECK(tflops(nvl, Precision::kBf16, true) == Approx(1671.0 / 2));
  CHECK(tflops(nvl, Precision::kFp16, true) == Approx(1671.0 / 2));
  CHECK(tflops(nvl, Precision::kFp8, true) == Approx(3341.0 / 2));
  CHECK(tflops(nvl, Precision::kInt8, true) == Approx(3341.0 / 2));
  CHECK(nvl.sparsity_2_4_speedup == Approx(2.0));
  CHECK(nvl.memory_bytes == Approx(94 * kGiga));
  CHECK(nvl.memory_bandwidth_bytes_per_s == Approx(3900 * kGiga));
  CHECK(nvl.tdp_w == Approx(400));
  REQUIRE(nvl.intra_node.has_value());
  CHECK(nvl.intra_node->bandwidth_bytes_per_s == Approx(600 * kGiga));
  // Per GPU, not per NVL pair (the launch-era table doubled everything): 132 SMs x 128 FP32
  // lanes x 2 FLOP x 1.785 GHz = 60.3 TFLOPS, and one GPU has less than an H100 SXM.
  CHECK(tflops(nvl, Precision::kFp32, false) == Approx(132 * 128 * 2 * 1.785 / 1000).epsilon(0.01));
  CHECK(tflops(nvl, Precision::kBf16, true) < tflops(device("h100-sxm"), Precision::kBf16, true));
}

TEST_CASE("T4, L4 and B200 figures match their sources", "[hardware]") {
  // https://geektopia.es/es/technology/2018/09/13/noticias/nvidia-presenta-la-nueva-tesla-t4-basada-en-turing-orientada-a-inteligencia-artificial.html
  // T4: 8.1 TFLOPS FP32, 65 TFLOPS FP16 tensor, 130 TOPS INT8, 260 TOPS INT4.
  // https://sysrqmts.com/en/gpus/nvidia/tesla/t4: 320 GB/s, 70 W.
  const Device& t4 = device("t4");
  CHECK(tflops(t4, Precision::kFp32, false) == Approx(8.1));
  CHECK(tflops(t4, Precision::kFp16, true) == Approx(65));
  CHECK(tflops(t4, Precision::kInt8, true) == Approx(130));
  CHECK(tflops(t4, Precision::kInt4, true) == Approx(260));
  CHECK(t4.memory_bandwidth_bytes_per_s == Approx(320 * kGiga));
  CHECK(t4.sparsity_2_4_speedup == Approx(1.0));  // Turing: no structured sparsity.

  // https://grokipedia.com/page/NVIDIA_L4_vs_L40S: FP16 tensor 242* and FP8 485* (sparse),
  // 24 GB at 300 GB/s, 72 W.
  const Device& l4 = device("l4");
  CHECK(tflops(l4, Precision::kFp16, true) == Approx(242.0 / 2));
  CHECK(tflops(l4, Precision::kFp8, true) == Approx(485.0 / 2).epsilon(0.005));
  CHECK(l4.memory_bandwidth_bytes_per_s == Approx(300 * kGiga));
  CHECK(l4.tdp_w == Approx(72));

  // https://glennklockwood.com/garden/processors/B200: HGX B200 at 1000 W, BF16 2250 dense.
  const Device& b200 = device("b200");
  CHECK(tflops(b200, Precision::kBf16, true) == Approx(2250));
  CHECK(tflops(b200, Precision::kFp8, true) == Approx(4500));
}

TEST_CASE("NVIDIA dense FP16 tensor peaks are SMs x boost clock x tensor FLOP per clock per SM",
          "[hardware]") {
  // The FLOP per clock per SM of each architecture, dense, FP16 inputs with FP32 accumulate:
  const auto check = [](const char* id, int sms, double mhz, double flop_per_clock_per_sm) {
    CAPTURE(id);
    const Device& d = device(id);
    CHECK(d.compute_units == sms);
    CHECK(d.compute_unit_name == "SM");
    CHECK(d.boost_clock_hz == Approx(mhz * 1e6));
    const double predicted = d.compute_units * d.boost_clock_hz * flop_per_clock_per_sm;
    CHECK(d.peak(Precision::kFp16).matrix_flops_per_s == Approx(predicted).epsilon(0.02));
  };
  // NVIDIA H100 Tensor Core GPU Architecture whitepaper (GTC22): H100 SXM5 132 SMs; Hopper's SM
  // does twice A100's dense MMA rate, 4 tensor cores x 512 FP16 FMA = 4096 FLOP/clk; its
  // tensor peaks (989.4 dense) are stated at 1830 MHz (FP32 vector ones at the 1980 MHz maximum).
  check("h100-sxm", 132, 1830, 4096);
  // NVIDIA A100 Tensor Core GPU Architecture whitepaper: 108 SMs, 1410 MHz boost; "A100 has four
  // Tensor Cores per SM, which together deliver 1024 dense FP16/FP32 FMA operations per clock".
  check("a100-sxm4-80gb", 108, 1410, 2 * 1024);
  check("a100-pcie-40gb", 108, 1410, 2 * 1024);
  // NVIDIA Tesla V100 GPU Architecture whitepaper: 80 SMs, 1530 MHz boost (SXM2); 8 tensor
  // cores per SM, each 64 FP16 FMA per clock.
  check("v100-sxm2-16gb", 80, 1530, 2 * 8 * 64);
  // NVIDIA Turing GPU Architecture whitepaper (Tesla T4 appendix): 40 SMs, 1590 MHz boost;
  // 8 tensor cores per SM, each 64 FP16 FMA per clock.
  check("t4", 40, 1590, 2 * 8 * 64);
}

TEST_CASE("TPU figures match the Cloud TPU documentation", "[hardware]") {
  // https://cloud.google.com/tpu/docs/v4: 275 TFLOPS bf16 per chip, 32 GiB HBM2, 1200 GB/s.
  const Device& v4 = device("tpu-v4");
  CHECK(v4.type == DeviceType::kTpu);
  CHECK(tflops(v4, Precision::kBf16, true) == Approx(275));
  CHECK(v4.memory_bytes == Approx(32.0 * 1024 * 1024 * 1024).epsilon(0.001));  // 32 GiB.
  // https://cloud.google.com/tpu/docs/v5e: 197 TFLOPs bf16, 393 TOPs int8, 16 GB at 819 GBps,
  // 400 GBps bidirectional ICI per chip.
  const Device& v5e = device("tpu-v5e");
  CHECK(tflops(v5e, Precision::kBf16, true) == Approx(197));
  CHECK(tflops(v5e, Precision::kInt8, true) == Approx(393));
  CHECK(v5e.memory_bandwidth_bytes_per_s == Approx(819 * kGiga));
  REQUIRE(v5e.intra_node.has_value());
  CHECK(v5e.intra_node->bandwidth_bytes_per_s == Approx(400 * kGiga));
}

TEST_CASE("scale-up and scale-out links per device, with their direction", "[hardware]") {
  // https://docs.habana.ai/en/latest/Management_and_Monitoring/Network_Configuration/index.html:
  // Gaudi 3 has "21 scale-up ports and three scale-out ports running at 200Gbps": "21*200Gbps
  // = ... 1050 GB/s bidirectional", "3*200Gbps = 75 GB/s in each direction"; Gaudi 2 the same
  // at 100 Gbps (525 GB/s bidirectional, 37.5 GB/s in each direction).
  const Device& gaudi3 = device("gaudi3");
  REQUIRE(gaudi3.intra_node.has_value());
  REQUIRE(gaudi3.inter_node.has_value());
  CHECK(gaudi3.intra_node->bandwidth_bytes_per_s == Approx(1050 * kGiga));
  CHECK(gaudi3.intra_node->direction == "bidirectional");
  CHECK(gaudi3.inter_node->bandwidth_bytes_per_s == Approx(75 * kGiga));
  CHECK(gaudi3.inter_node->direction == "per_direction");
  const Device& gaudi2 = device("gaudi2");
  REQUIRE(gaudi2.inter_node.has_value());
  CHECK(gaudi2.intra_node->bandwidth_bytes_per_s == Approx(525 * kGiga));
  CHECK(gaudi2.inter_node->bandwidth_bytes_per_s == Approx(37.5 * kGiga));
  // https://docs.nvidia.com/dgx/dgxb200-user-guide/introduction-to-dgxb200.html: "4 x OSFP
  // ports for 8 x NVIDIA ConnectX-7 Single Port Cards ... Up to 400Gbps": 50 GB/s per GPU.
  for (const char* id : {"h100-sxm", "h200", "b200"}) {
    CAPTURE(id);
    const Device& d = device(id);
    REQUIRE(d.inter_node.has_value());
    CHECK(d.inter_node->bandwidth_bytes_per_s == Approx(50 * kGiga));
    CHECK(d.inter_node->direction == "per_direction");
  }
  // https://docs.cloud.google.com/tpu/docs/v5p: "Data center network (DCN) bandwidth per chip
  // (Gbps) 50"; ICI (1200 GBps bidirectional) spans the hosts of a slice.
  const Device& v5p = device("tpu-v5p");
  REQUIRE(v5p.inter_node.has_value());
  CHECK(v5p.inter_node->bandwidth_bytes_per_s == Approx(6.25 * kGiga));
  CHECK(v5p.intra_node->bandwidth_bytes_per_s == Approx(1200 * kGiga));
  // The devices one scale-up link joins in the reference system: DGX H100, H200 and B200
  // ("8 x NVIDIA ConnectX-7" for eight GPUs, above), a v5p slice ("up to 6144 chips", the
  // entry's notes); PCIe cards have none (the server decides).
  for (const char* id : {"h100-sxm", "h200", "b200", "mi300x", "gaudi2", "gaudi3"}) {
    CAPTURE(id);
    CHECK(device(id).intra_node->domain_devices == 8);
  }
  CHECK(v5p.intra_node->domain_devices == 6144);
  CHECK(device("h100-pcie").intra_node->domain_devices == 0);
}

TEST_CASE("MI300X stores AMD's dense figures", "[hardware]") {
  // https://raw.githubusercontent.com/alpharomercoma/MI300X-vs-H200/6077fdc7bfc215171c33435b7cd76ca4c5f2b236/METHODOLOGY.md
  // BF16 dense 1307.4, FP8 dense 2614.9, 192 GB, 5.3 TB/s, 750 W TBP.
  const Device& mi300x = device("mi300x");
  CHECK(tflops(mi300x, Precision::kBf16, true) == Approx(1307.4));
  CHECK(tflops(mi300x, Precision::kFp8, true) == Approx(2614.9));
  CHECK(mi300x.memory_bytes == Approx(192 * kGiga));
  CHECK(mi300x.memory_bandwidth_bytes_per_s == Approx(5300 * kGiga));
  CHECK(mi300x.tdp_w == Approx(750));
  CHECK(mi300x.sparsity_2_4_speedup == Approx(2.0));
}

TEST_CASE("MI300X figures match the AMD product page and the ROCm MI300 table", "[hardware]") {
  // https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html (footnote MI300-17:
  // dense TF32 653.7, FP16/BF16 1307.4, FP8 2614.9, INT8 2614.9; with sparsity FP16 2,614.9,
  // FP8 5,229.8) and https://rocm.docs.amd.com/en/latest/conceptual/gpu-arch/mi300.html:
  // Matrix FP64 163.4, Vector FP64 81.7, Matrix FP32 163.4, Vector FP32 163.4.
  const Device& mi300x = device("mi300x");
  CHECK(tflops(mi300x, Precision::kFp64, false) == Approx(81.7));
  CHECK(tflops(mi300x, Precision::kFp64, true) == Approx(163.4));
  CHECK(tflops(mi300x, Precision::kFp32, false) == Approx(163.4));
  CHECK(tflops(mi300x, Precision::kFp32, true) == Approx(163.4));
  CHECK(tflops(mi300x, Precision::kTf32, true) == Approx(653.7));
  CHECK(tflops(mi300x, Precision::kFp16, true) == Approx(1307.4));
  CHECK(tflops(mi300x, Precision::kInt8, true) == Approx(2614.9));
  // AMD's sparse figures are the dense ones times the stored speedup, not the stored peaks.
  CHECK(tflops(mi300x, Precision::kFp16, true) * mi300x.sparsity_2_4_speedup ==
        Approx(2614.9).epsilon(0.001));
  CHECK(tflops(mi300x, Precision::kFp8, true) * mi300x.sparsity_2_4_speedup ==
        Approx(5229.8).epsilon(0.001));
  // 304 CUs x 2.1 GHz x FLOPS/clock/CU (128 FP64 vector, 2048 BF16 matrix).
  CHECK(tflops(mi300x, Precision::kFp64, false) == Approx(304 * 2.1 * 128 / 1000).epsilon(0.001));
  CHECK(tflops(mi300x, Precision::kBf16, true) == Approx(304 * 2.1 * 2048 / 1000).epsilon(0.001));
}

TEST_CASE("MI325X figures match the AMD CDNA 3 white paper footnote MI325-019", "[hardware]") {
  // https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/white-papers/amd-cdna-3-white-paper.pdf
  // MI325X (1000 W): 163.4 FP64 matrix, 81.7 FP64, 163.4 FP32 matrix, 163.4 FP32, 653.7 TF32,
  // 1307.4 FP16/BF16, 2614.9 FP8, 2614.9 INT8 TOPS; 256 GB HBM3E at 6 TB/s (MI325-001A).
  const Device& mi325x = device("mi325x");
  CHECK(tflops(mi325x, Precision::kFp64, false) == Approx(81.7));
  CHECK(tflops(mi325x, Precision::kFp64, true) == Approx(163.4));
  CHECK(tflops(mi325x, Precision::kFp32, false) == Approx(163.4));
  CHECK(tflops(mi325x, Precision::kFp32, true) == Approx(163.4));
  CHECK(tflops(mi325x, Precision::kTf32, true) == Approx(653.7));
  CHECK(tflops(mi325x, Precision::kBf16, true) == Approx(1307.4));
  CHECK(tflops(mi325x, Precision::kFp8, true) == Approx(2614.9));
  CHECK(tflops(mi325x, Precision::kInt8, true) == Approx(2614.9));
  CHECK(mi325x.memory_bytes == Approx(256 * kGiga));
  CHECK(mi325x.memory_bandwidth_bytes_per_s == Approx(6000 * kGiga));
  CHECK(mi325x.tdp_w == Approx(1000));
  // Same CDNA3 compute as MI300X: only memory and power differ.
  const Device& mi300x = device("mi300x");
  CHECK(mi325x.precisions() == mi300x.precisions());
  for (Precision p : mi300x.precisions()) {
    CAPTURE(capcalc::precision_name(p));
    CHECK(mi325x.peak(p).vector_flops_per_s == Approx(mi300x.peak(p).vector_flops_per_s));
    CHECK(mi325x.peak(p).matrix_flops_per_s == Approx(mi300x.peak(p).matrix_flops_per_s));
  }
}

TEST_CASE("H200 and MI300X carry an indicative dated price", "[hardware]") {
  // https://www.spheron.network/blog/nvidia-h200-vs-b200-vs-gb200: H200 $4.54/hr, 17 March 2026.
  // https://www.cliffcenter.com/research/amd-inference-economics: MI300X median $1.99, 18 May 2026.
  const Device& h200 = device("h200");
  REQUIRE(h200.price.has_value());
  CHECK(h200.price->usd_per_hour == Approx(4.54));
  CHECK(h200.price->date == "2026-03");
  const Device& mi300x = device("mi300x");
  REQUIRE(mi300x.price.has_value());
  CHECK(mi300x.price->usd_per_hour == Approx(1.99));
  CHECK(mi300x.price->date == "2026-05");
}

TEST_CASE("CPU peaks follow cores x clock x FLOP per cycle", "[hardware]") {
  // i9-13900K has no AVX-512 (disabled on hybrid Raptor Lake) and no AMX, so no matrix peak:
  // https://www.sisoftware.co.uk/2022/10/19/intel-13th-gen-core-raptorlake-i9-13900ks/
  // Max turbo clocks per core type (Intel ARK, P-core 5.40 GHz, E-core 4.30 GHz, as scraped in
  // https://github.com/felixsteinke/cpu-spec-dataset/blob/ebf377d8160044bfea6456fb13d98b948c7c119c/dataset/intel-cpus.csv):
  // 8 P-cores with two 256-bit FMA (32 FP32 FLOP/cycle) plus 16 E-cores with 16 FP32 FLOP/cycle.
  // Not base clocks (3.0 / 2.2 GHz): OpenVINO's published FP32 ResNet-50 throughput on this CPU
  // (235.56 images/s x 8.22 GFLOP = 1.94 TFLOP/s) is above the base-clock figure (1.33).
  const Device& i9 = device("i9-13900k");
  CHECK(i9.type == DeviceType::kCpu);
  CHECK(i9.notes.find("No AVX-512") != std::string::npos);
  for (Precision p : i9.precisions()) {
    CHECK(i9.peak(p).matrix_flops_per_s == 0);
  }
  const double fp32_gflops = 8 * 5.4 * 32 + 16 * 4.3 * 16;
  CHECK(fp32_gflops / 1000 > 235.56 * 8.22 / 1000);
  CHECK(tflops(i9, Precision::kFp32, false) == Approx(fp32_gflops / 1000).epsilon(0.001));
  CHECK(tflops(i9, Precision::kFp64, false) == Approx(fp32_gflops / 2000).epsilon(0.001));

  // Xeon Platinum 8480+: 56 cores at 2.0 GHz base (StorageReview spec table,
  // https://www.storagereview.com/fr/review/intel-xeon-platinum-8592-processor-review-dell-poweredge-r760),
  // AVX-512 with two FMA units = 64 FP32 FLOP/cycle; AMX 1024 BF16 FLOP/cycle/core.
  const Device& xeon = device("xeon-platinum-8480plus");
  CHECK(tflops(xeon, Precision::kFp32, false) == Approx(56 * 2.0 * 64 / 1000));
  CHECK(tflops(xeon, Precision::kBf16, true) == Approx(56 * 2.0 * 1024 / 1000).epsilon(0.001));
  // 8 channels of DDR5-4800, 8 bytes wide.
  CHECK(xeon.memory_bandwidth_bytes_per_s == Approx(8 * 8 * 4800e6));

  // EPYC 9654: 96 Zen 4 cores at AMD's all-core boost, 3.55 GHz ("All Core Boost Speed" in AMD's
  // product table, as saved in
  // https://github.com/felixsteinke/cpu-spec-dataset/blob/14477c8547b106d82c0e5f6015ad49f637ccc975/dataset/amd-cpus.csv),
  // AVX-512 on two 256-bit FMA pipes = 32 FP32 FLOP/cycle.
  const Device& epyc = device("epyc-9654");
  CHECK(tflops(epyc, Precision::kFp32, false) == Approx(96 * 3.55 * 32 / 1000).epsilon(0.001));
  CHECK(tflops(epyc, Precision::kFp64, false) == Approx(96 * 3.55 * 16 / 1000).epsilon(0.001));
}

TEST_CASE("A10G carries an indicative dated price", "[hardware]") {
  // https://www.factualminds.com/blog/amazon-ec2-on-demand-pricing-instance-families-2026/:
  // g5.xlarge (1x A10G) $1.006/hr on-demand, us-east-1, June 2026.
  const Device& a10g = device("a10g");
  REQUIRE(a10g.price.has_value());
  CHECK(a10g.price->usd_per_hour == Approx(1.006));
  CHECK(a10g.price->date == "2026-06");
}

TEST_CASE("Gaudi 2 and Gaudi 3 carry Intel Tiber AI Cloud's price per card", "[hardware]") {
  // intel/gaudi-reference-cloud at 07efbd0, docs/source/_static/files/df_ai_hl_225_specs.html:
  // "bm-spr-gaudi2 | Bare Metal | On-demand | 8 | ... | $10.40"; df_ai_hl_325_specs.html:
  // "bm-gnr-gaudi3-smc | Bare Metal | On-demand | 8 | ... | $19.92". Per card: / 8.
  const Device& gaudi2 = device("gaudi2");
  REQUIRE(gaudi2.price.has_value());
  CHECK(gaudi2.price->usd_per_hour == Approx(10.40 / 8));
  const Device& gaudi3 = device("gaudi3");
  REQUIRE(gaudi3.price.has_value());
  CHECK(gaudi3.price->usd_per_hour == Approx(19.92 / 8));
  CHECK(gaudi3.price->source.find("gaudi-reference-cloud") != std::string::npos);
}

TEST_CASE("CPU prices per socket: the EPYC 9654 by an AWS proxy, the Xeon 8480+ by Intel's cloud",
          "[hardware]") {
  // skypilot-catalog at 001367d, catalogs/v7/aws/vms.csv: "c7a.48xlarge,,,192.0,384.0,,9.85344"
  // (two 96-core EPYC 9R14), per socket / 2. intel/gaudi-reference-cloud at 07efbd0,
  // df_cpu_4th_gen_specs.html: "bm-spr ... 112 ... $3.62" (two 56-core Sapphire Rapids), / 2.
  const Device& epyc = device("epyc-9654");
  REQUIRE(epyc.price.has_value());
  CHECK(epyc.price->usd_per_hour == Approx(9.85344 / 2));
  const Device& xeon = device("xeon-platinum-8480plus");
  REQUIRE(xeon.price.has_value());
  CHECK(xeon.price->usd_per_hour == Approx(3.62 / 2));
}

TEST_CASE("V100 PCIe carries IBM Cloud's price, the MI250X and i9-13900K labelled proxies",
          "[hardware]") {
  // skypilot-catalog at 6cd128a, catalogs/v5/ibm/vms.csv:
  // "gx2-8x64x1v100,V100,1.0,8,64,V100,2.497,,us-south,us-south-1"; ibm-cloud-docs/vpc at
  // 63f33e1, vsi_is_profiles.md: "GPU -v100 profiles include 1 or 2 NVIDIA V100 PCIe 16 GB".
  const Device& v100 = device("v100-pcie-16gb");
  REQUIRE(v100.price.has_value());
  CHECK(v100.price->usd_per_hour == Approx(2.497));
  // No cloud rents an MI250X: the MI250's RunPod price stands in (lukepiette/takehome-cro-eng
  // at cc0bdb2: 'price: "$2.10/hr"'), and the notes say so.
  const Device& mi250x = device("mi250x");
  REQUIRE(mi250x.price.has_value());
  CHECK(mi250x.price->usd_per_hour == Approx(device("mi250").price->usd_per_hour));
  CHECK(mi250x.notes.find("a proxy") != std::string::npos);
  // RE-NODE/.github at beab8b7: "i9 14900k (32 cores) | 128 GB | 3 TB | $168.00" a month.
  const Device& i9 = device("i9-13900k");
  REQUIRE(i9.price.has_value());
  CHECK(i9.price->usd_per_hour == Approx(168.0 / 730).epsilon(0.01));
  CHECK(i9.notes.find("proxy") != std::string::npos);
  // Nobody rents Apple's chips by the hour: no price, and the notes say why.
  for (const char* id : {"m2-ultra", "m3-max"}) {
    CAPTURE(id);
    CHECK_FALSE(device(id).price.has_value());
    CHECK(device(id).notes.find("No price") != std::string::npos);
  }
}

// ---------------------------------------------------------------------------------------------
// Lookup.

TEST_CASE("lookup ignores case and treats -, _ and space alike", "[hardware]") {
  const Device* a100 = table().find("a100-sxm4-80gb");
  REQUIRE(a100 != nullptr);
  CHECK(table().find("a100") == a100);
  CHECK(table().find("A100") == a100);  // The documented default for plain "A100".
  CHECK(table().find("A100-80GB") == a100);
  CHECK(table().find("a100 80gb") == a100);
  CHECK(table().find("A100_80GB") == a100);
  CHECK(table().find("A100-SXM4-80GB") == a100);
  CHECK(table().find("a100-40gb") == table().find("a100-sxm4-40gb"));
  CHECK(table().find("h100") == table().find("h100-sxm"));
  CHECK(table().find("no-such-device") == nullptr);
  CHECK(&table().get("Tesla T4") == table().find("t4"));
}

TEST_CASE("an unknown device is an error that suggests a close name", "[hardware]") {
  const std::string message = error_of([] { (void)table().get("h100-sm"); });
  CHECK_THAT(message, ContainsSubstring("unknown device \"h100-sm\""));
  CHECK_THAT(message, ContainsSubstring("did you mean \"h100-sxm\"?"));
  CHECK_THAT(message, ContainsSubstring("`capcalc hw list` shows all"));
}

// ---------------------------------------------------------------------------------------------
// parse_hardware errors: located, compiler style, no nlohmann text.

TEST_CASE("compute units and the boost clock parse into SI units", "[hardware]") {
  nlohmann::json json = minimal_table();
  json["devices"][0]["compute_units"] = 132;
  json["devices"][0]["compute_unit_name"] = "SM";
  json["devices"][0]["boost_clock_mhz"] = 1830;
  const Device d = parse(json).devices[0];  // A copy: the parsed table is a temporary.
  CHECK(d.compute_units == 132);
  CHECK(d.compute_unit_name == "SM");
  CHECK(d.boost_clock_hz == Approx(1.83e9));
  const Device bare = parse(minimal_table()).devices[0];  // Both optional: 0 and "" if absent.
  CHECK(bare.compute_units == 0);
  CHECK(bare.compute_unit_name.empty());
  CHECK(bare.boost_clock_hz == 0);
}

TEST_CASE("a sustained matrix clock is per precision, at most the boost clock", "[hardware]") {
  nlohmann::json json = minimal_table();
  json["devices"][0]["boost_clock_mhz"] = 2100;
  json["devices"][0]["sustained_matrix_clock_mhz"] = {{"fp16", 1115}};
  const Device d = parse(json).devices[0];
  CHECK(d.sustained_matrix_clock_hz[static_cast<std::size_t>(Precision::kFp16)] == Approx(1115e6));
  CHECK(d.matrix_clock_fraction(Precision::kFp16) == Approx(1115.0 / 2100));
  CHECK(d.matrix_clock_fraction(Precision::kFp32) == 1);
  const auto error = [&](const nlohmann::json& clocks, bool boost = true) {
    nlohmann::json bad = minimal_table();
    if (boost) bad["devices"][0]["boost_clock_mhz"] = 2100;
    bad["devices"][0]["sustained_matrix_clock_mhz"] = clocks;
    return error_of([&] { parse(bad); });
  };
  CHECK(error({{"fp16", 1115}}, false) ==
        "hw.json:/devices/0/sustained_matrix_clock_mhz: a sustained clock needs boost_clock_mhz, "
        "the clock the peaks are stated at");
  CHECK(error({{"fp16", 2500}}) ==
        "hw.json:/devices/0/sustained_matrix_clock_mhz/fp16: 2500 MHz is above boost_clock_mhz "
        "(2100 MHz): a sustained clock is at most the one the peaks are stated at");
  CHECK(error({{"fp32", 1000}}) ==
        "hw.json:/devices/0/sustained_matrix_clock_mhz/fp32: no fp32 matrix peak in "
        "dense_peak_tflops to run at this clock");
  CHECK_THAT(error({{"fp61", 1000}}), ContainsSubstring("unknown precision \"fp61\""));
  CHECK_THAT(error({{"fp16", -5}}), ContainsSubstring("expected a positive number"));
  CHECK_THAT(error({{"fp16", 1e-9}}), ContainsSubstring("sustained_matrix_clock_mhz/fp16"));
  CHECK_THAT(error(nlohmann::json::array()), ContainsSubstring("sustained_matrix_clock_mhz"));
}

TEST_CASE("parse_hardware accepts the minimal table", "[hardware][errors]") {
  const HardwareTable parsed = parse(minimal_table());
  REQUIRE(parsed.devices.size() == 1);
  const Device& d = parsed.devices[0];
  CHECK(d.id == "dev-a");
  CHECK(d.peak(Precision::kFp16).matrix_flops_per_s == Approx(100 * kTera));
  CHECK(d.sparsity_2_4_speedup == 1);  // Absent means no support.
  CHECK(parsed.find("ALPHA") == &d);
  // Absent performance_model: the documented defaults.
  CHECK(parsed.performance_for(DeviceType::kGpu).matrix_efficiency == Approx(0.7));
}

TEST_CASE("a syntax error names file:line:col", "[hardware][errors]") {
  const std::string text = "{\n  \"schema_version\": 1,\n  \"devices\": [,]\n}\n";
  const std::string message = error_of([&] { capcalc::parse_hardware(text, "hw.json"); });
  CHECK(message ==
        "hw.json:3:15: syntax error while parsing value - unexpected ','; expected '[', '{', or "
        "a literal");
}

TEST_CASE("parse_hardware errors name the JSON pointer", "[hardware][errors]") {
  SECTION("wrong type") {
    nlohmann::json json = minimal_table();
    json["devices"][0]["memory_gb"] = "16";
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/memory_gb: expected a number, got a string");
  }
  SECTION("negative figure") {
    nlohmann::json json = minimal_table();
    json["devices"][0]["memory_bandwidth_gb_per_s"] = -5;
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/memory_bandwidth_gb_per_s: expected a positive number, got -5");
  }
  SECTION("negative peak") {
    nlohmann::json json = minimal_table();
    json["devices"][0]["dense_peak_tflops"]["fp32"]["vector"] = -1;
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/dense_peak_tflops/fp32/vector: expected a positive number, got -1");
  }
  SECTION("unknown precision") {
    nlohmann::json json = minimal_table();
    json["devices"][0]["dense_peak_tflops"]["bf61"] = {{"matrix", 10}};
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/dense_peak_tflops/bf61: unknown precision \"bf61\"; "
          "did you mean \"bf16\"?");
  }
  SECTION("a precision without a rate") {
    nlohmann::json json = minimal_table();
    json["devices"][0]["dense_peak_tflops"]["fp8"] = nlohmann::json::object();
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/dense_peak_tflops/fp8: give a \"vector\" or a \"matrix\" peak");
  }
  SECTION("unknown key") {
    nlohmann::json json = minimal_table();
    json["devices"][0]["memory_gbs"] = 16;
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/memory_gbs: unknown key \"memory_gbs\" in a device; "
          "did you mean \"memory_gb\"?");
  }
  SECTION("unknown device type") {
    nlohmann::json json = minimal_table();
    json["devices"][0]["type"] = "gpy";
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/type: unknown device type \"gpy\"; did you mean \"gpu\"?");
  }
  SECTION("id not kebab-case") {
    nlohmann::json json = minimal_table();
    json["devices"][0]["id"] = "Dev_A";
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/id: id \"Dev_A\" must be kebab-case (a-z, 0-9, -)");
  }
  SECTION("missing sources") {
    nlohmann::json json = minimal_table();
    json["devices"][0].erase("sources");
    CHECK(error_of([&] { parse(json); }) == "hw.json:/devices/0: missing required key \"sources\"");
  }
  SECTION("empty sources") {
    nlohmann::json json = minimal_table();
    json["devices"][0]["sources"] = nlohmann::json::array();
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/sources: every device needs at least one source");
  }
  SECTION("sparsity below 1") {
    nlohmann::json json = minimal_table();
    json["devices"][0]["sparsity_2_4_speedup"] = 0.5;
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/sparsity_2_4_speedup: a speedup must be at least 1");
  }
  SECTION("bad link direction") {
    nlohmann::json json = minimal_table();
    json["devices"][0]["interconnect"] = {
        {"intra_node", {{"name", "NVLink"}, {"bandwidth_gb_per_s", 900}, {"direction", "both"}}}};
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/interconnect/intra_node/direction: expected \"bidirectional\" or "
          "\"per_direction\", got \"both\"");
  }
  SECTION("efficiency above 1") {
    nlohmann::json json = minimal_table();
    json["performance_model"] = {{"gpu",
                                  {{"matrix_efficiency", 1.5},
                                   {"vector_efficiency", 0.5},
                                   {"memory_efficiency", 0.5},
                                   {"eager_overhead_us", 4}}}};
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/performance_model/gpu/matrix_efficiency: an efficiency is a fraction in "
          "(0, 1], got 1.5");
  }
  SECTION("a mesh's peers not a positive integer") {
    nlohmann::json json = minimal_table();
    json["devices"][0]["interconnect"] = {{"intra_node",
                                           {{"name", "xGMI"},
                                            {"bandwidth_gb_per_s", 896},
                                            {"direction", "bidirectional"},
                                            {"peers", 0}}}};
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/interconnect/intra_node/peers: expected a positive integer, got 0");
    json["devices"][0]["interconnect"]["intra_node"]["peers"] = 3.5;
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/interconnect/intra_node/peers: expected a positive integer, got 3.5");
    json["devices"][0]["interconnect"]["intra_node"]["peers"] = 7;
    CHECK(parse(json).devices[0].intra_node->peers == 7);
  }
  SECTION("a link's domain not a positive integer") {
    nlohmann::json json = minimal_table();
    json["devices"][0]["interconnect"] = {{"intra_node",
                                           {{"name", "NVLink 4"},
                                            {"bandwidth_gb_per_s", 900},
                                            {"direction", "bidirectional"},
                                            {"domain_devices", -8}}}};
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/interconnect/intra_node/domain_devices: expected a positive "
          "integer, got -8");
    json["devices"][0]["interconnect"]["intra_node"]["domain_devices"] = 8;
    CHECK(parse(json).devices[0].intra_node->domain_devices == 8);
  }
  SECTION("negative all-reduce latency, all-reduce efficiency above 1") {
    nlohmann::json json = minimal_table();
    json["performance_model"] = {{"gpu", {{"allreduce_latency_us", -1}}}};
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/performance_model/gpu/allreduce_latency_us: a latency cannot be negative");
    json["performance_model"] = {{"gpu", {{"network_step_latency_us", -2}}}};
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/performance_model/gpu/network_step_latency_us: a latency cannot be negative");
    json["performance_model"] = {{"gpu", {{"network_step_latency_us", 5}}}};
    CHECK(parse(json).performance_for(DeviceType::kGpu).network_step_latency_s == Approx(5e-6));
    json["performance_model"] = {{"gpu", {{"allreduce_efficiency", 1.2}}}};
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/performance_model/gpu/allreduce_efficiency: an efficiency is a fraction in "
          "(0, 1], got 1.2");
  }
  SECTION("compute units not a positive integer, or without their name") {
    nlohmann::json json = minimal_table();
    json["devices"][0]["compute_units"] = -4;
    json["devices"][0]["compute_unit_name"] = "SM";
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/compute_units: expected a positive integer, got -4");
    json["devices"][0]["compute_units"] = 0;
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/compute_units: expected a positive integer, got 0");
    json["devices"][0]["compute_units"] = 132;
    json["devices"][0].erase("compute_unit_name");
    CHECK(
        error_of([&] { parse(json); }) ==
        "hw.json:/devices/0: \"compute_units\" needs \"compute_unit_name\" (\"SM\", \"CU\", ...)");
    json["devices"][0]["compute_unit_name"] = "";
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/compute_unit_name: a compute unit name cannot be empty");
    json["devices"][0].erase("compute_units");
    json["devices"][0]["compute_unit_name"] = "SM";
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0: \"compute_unit_name\" needs \"compute_units\"");
  }
  SECTION("negative boost clock") {
    nlohmann::json json = minimal_table();
    json["devices"][0]["boost_clock_mhz"] = -1830;
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/0/boost_clock_mhz: expected a positive number, got -1830");
  }
  SECTION("unsupported schema version") {
    nlohmann::json json = minimal_table();
    json["schema_version"] = 2;
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/schema_version: unsupported schema_version; expected 1");
  }
}

TEST_CASE("names must be unique across the table, ignoring case and separators",
          "[hardware][errors]") {
  SECTION("an alias used by another device") {
    nlohmann::json json = minimal_table();
    nlohmann::json second = json["devices"][0];
    second["id"] = "dev-b";
    second["aliases"] = {"alpha"};
    json["devices"].push_back(second);
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/1/aliases/0: the name \"alpha\" is already used by device \"dev-a\"");
  }
  SECTION("an alias spelling another device's id") {
    nlohmann::json json = minimal_table();
    nlohmann::json second = json["devices"][0];
    second["id"] = "dev-b";
    second["aliases"] = {"DEV_A"};
    json["devices"].push_back(second);
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/1/aliases/0: the name \"DEV_A\" is already used by device \"dev-a\"");
  }
  SECTION("a duplicate id") {
    nlohmann::json json = minimal_table();
    nlohmann::json second = json["devices"][0];
    second["aliases"] = nlohmann::json::array();
    json["devices"].push_back(second);
    CHECK(error_of([&] { parse(json); }) ==
          "hw.json:/devices/1/id: the name \"dev-a\" is already used by device \"dev-a\"");
  }
}

TEST_CASE("load_hardware reports a missing file", "[hardware][errors]") {
  CHECK(error_of([] { capcalc::load_hardware("no/such/hardware.json"); }) ==
        "no/such/hardware.json: cannot open file");
}

TEST_CASE("merge_hardware: a user entry with the same id replaces the built-in one",
          "[hardware][merge]") {
  HardwareTable base = capcalc::load_hardware(capcalc::test::data_path("hardware.json"));
  const std::size_t count = base.devices.size();
  const std::string overlay_text = R"({"schema_version": 1,
    "performance_model": {"gpu": {"matrix_efficiency": 0.5}},
    "devices": [
      {"id": "a100-sxm4-80gb", "name": "My A100", "aliases": ["A100"], "type": "gpu",
       "vendor": "nvidia", "dense_peak_tflops": {"fp32": {"vector": 19.5}},
       "memory_gb": 80, "memory_bandwidth_gb_per_s": 2039,
       "performance": {"memory_efficiency": 0.9},
       "sources": ["https://example.invalid/mine"]},
      {"id": "my-box", "name": "My box", "type": "cpu", "vendor": "me",
       "dense_peak_tflops": {"fp32": {"vector": 1}}, "memory_gb": 64,
       "memory_bandwidth_gb_per_s": 50, "sources": ["https://example.invalid/probe"]}]})";
  capcalc::merge_hardware(base, capcalc::parse_hardware(overlay_text, "mine.json"));
  CHECK(base.devices.size() == count + 1);
  REQUIRE(base.find("A100") != nullptr);
  CHECK(base.find("A100")->name == "My A100");
  CHECK(base.find("a100-sxm4-80gb")->name == "My A100");
  CHECK(base.find("my box") != nullptr);
  // The overlay's gpu parameters replace the built-in ones; the device override applies on top.
  const capcalc::PerformanceParams p = base.performance_for(*base.find("A100"));
  CHECK(p.matrix_efficiency == Approx(0.5));
  CHECK(p.memory_efficiency == Approx(0.9));
  CHECK(base.performance_for(*base.find("h100")).memory_efficiency != Approx(0.9));
}
