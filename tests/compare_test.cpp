#include "capcalc/compare.hpp"

#include <algorithm>
#include <cmath>

#include "capcalc/error.hpp"
#include "capcalc/fit.hpp"
#include "capcalc/model.hpp"
#include "capcalc/report_compare.hpp"

#include "catch.hpp"
#include "table.hpp"
#include "test_data.hpp"

using namespace capcalc;

namespace {

const HardwareTable& table() {
  static const HardwareTable t = load_hardware(test::data_path("hardware.json"));
  return t;
}

Graph resnet50(std::int64_t batch = 1) {
  ModelOptions options;
  options.dims["batch"] = batch;
  return load_model(test::data_path("models/resnet50.json"), options);
}

std::vector<const Device*> gpus() {
  std::vector<const Device*> out;
  for (const Device& d : table().devices) {
    if (d.type == DeviceType::kGpu) out.push_back(&d);
  }
  return out;
}

}  // namespace

TEST_CASE("a compare row agrees with estimate() and adds cost and energy", "[compare]") {
  const Graph graph = resnet50();
  const Device& a100 = table().get("A100");
  const PerformanceParams params = table().performance_for(a100);
  const CompareRow row = compare_row(graph, a100, params, Precision::kFp16, {});
  Workload workload;
  workload.precision = Precision::kFp16;
  const Estimate expected = estimate(graph, a100, params, workload);
  CHECK(row.supported);
  CHECK(row.latency_s == expected.latency_s);
  CHECK(row.throughput_per_s == expected.throughput_per_s);
  CHECK(row.memory_bytes == expected.memory.total_bytes);
  CHECK(row.fits);
  CHECK(row.devices_to_fit == 1);
  REQUIRE(a100.price);
  REQUIRE(row.cost_usd);
  // 1e6 samples take 1e6 / throughput seconds, paid per device-hour.
  const double hours = 1e6 / expected.throughput_per_s / 3600;
  CHECK(*row.cost_usd == Approx(hours * a100.price->usd_per_hour));
  REQUIRE(row.energy_kwh);
  CHECK(*row.energy_kwh == Approx(hours * a100.tdp_w / 1000));
}

TEST_CASE("a device without the precision is a row with a note", "[compare]") {
  const Graph graph = resnet50();
  const Device& t4 = table().get("T4");
  const CompareRow row = compare_row(graph, t4, table().performance_for(t4), Precision::kBf16, {});
  CHECK_FALSE(row.supported);
  CHECK(row.note == "no bf16 (has fp64, fp32, fp16, int8, int4)");
  CHECK_FALSE(row.cost_usd);
}

TEST_CASE("devices needed: the fewest that a change found by predicting it fits on", "[compare]") {
  const Graph graph = load_model(test::data_path("models/llama2_7b.json"));
  const Device& t4 = table().get("T4");
  CompareRequest request;
  request.workload.mode = Mode::kTraining;
  const CompareRow row =
      compare_row(graph, t4, table().performance_for(t4), Precision::kFp16, request);
  CHECK_FALSE(row.fits);
  // ceil(memory / device memory) is a lower bound: splitting never beats it.
  CHECK(row.devices_to_fit >=
        static_cast<std::int64_t>(std::ceil(row.memory_bytes / t4.memory_bytes)));
  Workload workload = request.workload;
  workload.precision = Precision::kFp16;
  const FitAdvice advice = advise_fit(graph, t4, table().performance_for(t4), workload);
  REQUIRE_FALSE(advice.options.empty());
  CHECK(row.devices_to_fit == advice.options.front().devices);
  CHECK(row.fit_flags == advice.options.front().flags);
}

TEST_CASE("sorting by cost puts devices without a price last", "[compare]") {
  const std::vector<Graph> graphs = {resnet50()};
  const CompareTable result =
      compare_devices(graphs, gpus(), table(), {Precision::kFp32}, {}, CompareSort::kCost);
  REQUIRE(result.rows.size() == gpus().size());
  bool seen_unknown = false;
  double last = 0;
  for (const CompareRow& row : result.rows) {
    if (!row.cost_usd) {
      seen_unknown = true;
      continue;
    }
    CHECK_FALSE(seen_unknown);  // No priced row after an unpriced one.
    CHECK(*row.cost_usd >= last);
    last = *row.cost_usd;
  }
}

TEST_CASE("a sweep has one row per device x value, a device's rows together", "[compare]") {
  const std::vector<Graph> graphs = {resnet50(32), resnet50(64)};
  const std::vector<const Device*> devices = {&table().get("T4"), &table().get("H100")};
  const CompareTable result = compare_devices(
      graphs, devices, table(), {Precision::kFp16, Precision::kBf16}, {}, CompareSort::kTime);
  REQUIRE(result.rows.size() == 8);
  CHECK(result.batch_sweep);
  CHECK(result.precision_sweep);
  CHECK(result.rows[0].device->id == "h100-sxm");  // Faster, so first.
  CHECK(result.rows[3].device->id == "h100-sxm");
  CHECK(result.rows[4].device->id == "t4");
  CHECK(result.rows[4].batch == 32);
  CHECK(result.rows[5].precision == Precision::kBf16);
  CHECK_FALSE(result.rows[5].supported);
  CHECK(result.rows[6].batch == 64);
}

TEST_CASE("a sweep's text table heads each device's rows and fits 80 columns", "[compare]") {
  const std::vector<Graph> graphs = {resnet50(1), resnet50(8), resnet50(64)};
  const std::vector<const Device*> devices = {&table().get("T4"), &table().get("A100")};
  const CompareTable result = compare_devices(
      graphs, devices, table(), {Precision::kFp16, Precision::kBf16}, {}, CompareSort::kTable);
  const std::string text = render_compare_text(result);
  CHECK_THAT(text, ContainsSubstring("\nbatch  prec  latency"));
  CHECK_THAT(text, ContainsSubstring("\nt4 (16 GB)\n    1  fp16  "));
  CHECK_THAT(text, ContainsSubstring("\na100-sxm4-80gb (80 GB)\n    1  fp16  "));
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    CHECK(display_width(text.substr(start, end - start)) <= 80);
    start = end + 1;
  }
}

TEST_CASE("a training run gives run time and cost per run", "[compare]") {
  const std::vector<Graph> graphs = {resnet50(256)};
  CompareRequest request;
  request.workload.mode = Mode::kTraining;
  request.run.dataset_size = 1281167;
  request.run.epochs = 90;
  const std::vector<const Device*> devices = {&table().get("A100")};
  const CompareTable result =
      compare_devices(graphs, devices, table(), {Precision::kBf16}, request, CompareSort::kTime);
  CHECK(result.cost_basis == CostBasis::kPerRun);
  REQUIRE(result.rows[0].run_time_s);
  CHECK(*result.rows[0].run_time_s ==
        Approx(std::ceil(1281167.0 * 90 / 256) * result.rows[0].latency_s));
  request.workload.mode = Mode::kInference;
  // The library names the settings by key; the CLI shows its flags in their place.
  try {
    compare_devices(graphs, devices, table(), {Precision::kBf16}, request, CompareSort::kTime);
    FAIL("a run size without training mode was accepted");
  } catch (const capcalc::Error& e) {
    CHECK(e.message() == "dataset_size and tokens describe a training run: add mode training");
    CHECK(e.keys() == std::vector<std::string>{"dataset_size", "tokens", "mode"});
  }
}

TEST_CASE("the compare table fits 80 columns, JSON and CSV carry the same rows",
          "[compare][report]") {
  const std::vector<Graph> graphs = {resnet50()};
  const CompareTable result =
      compare_devices(graphs, gpus(), table(), {Precision::kFp32}, {}, CompareSort::kCost);
  const std::string text = render_compare_text(result);
  std::size_t start = 0;
  std::size_t lines = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start);
    CHECK(display_width(line) <= 80);
    start = end + 1;
    ++lines;
  }
  CHECK(lines >= result.rows.size() + 3);
  const std::string csv = render_compare_csv(result);
  CHECK(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')) ==
        result.rows.size() + 1);
  const std::string json = render_compare_json(result);
  CHECK_THAT(json, ContainsSubstring("\"schema_version\": 1"));
  std::size_t devices_in_json = 0;
  for (std::size_t at = json.find("\"device\":"); at != std::string::npos;
       at = json.find("\"device\":", at + 1)) {
    ++devices_in_json;
  }
  CHECK(devices_in_json == result.rows.size());
}

TEST_CASE("serving rows agree with estimate_serving() and cost per 1M generated tokens",
          "[compare][serving]") {
  // Llama 2 7B from its config.json, 4 sequences of 512 + 128 tokens, tensor-parallel 2 over
  // 4 H100s (two replicas).
  const std::string path = test::data_path("models/llama2_7b_hf.json");
  const auto build = [&](std::int64_t batch, std::int64_t seq, std::int64_t cached) {
    ModelOptions options;
    options.dims["batch"] = batch;
    options.dims["seq"] = seq;
    options.counting.kv_cache_length = cached;
    return load_model(path, options);
  };
  CompareRequest request;
  request.workload.devices = 4;
  request.workload.tensor_parallel = 2;
  request.serving = ServingRequest{512, 128};
  request.serving_graph = build;
  const Device& h100 = table().get("h100-sxm");
  const PerformanceParams params = table().performance_for(h100);
  const Graph prefill = build(4, 512, 0);
  const CompareRow row = compare_row(prefill, h100, params, Precision::kFp16, request);
  Workload workload = request.workload;
  workload.precision = Precision::kFp16;
  const ServingEstimate s =
      estimate_serving([&](std::int64_t seq, std::int64_t cached) { return build(4, seq, cached); },
                       h100, params, workload, *request.serving);
  REQUIRE(row.ttft_s);
  CHECK(*row.ttft_s == Approx(s.ttft_s));
  CHECK(row.latency_s == Approx(s.request_latency_s));
  // 4 sequences x 2 replicas x 128 tokens over the request's time.
  CHECK(row.throughput_per_s == Approx(4.0 * 2 * 128 / s.request_latency_s));
  CHECK(row.memory_bytes == Approx(s.memory_bytes));
  CHECK(row.fits == s.fits);
  REQUIRE(row.cost_usd);
  const double device_hours = 1e6 / row.throughput_per_s * 4 / 3600;
  CHECK(*row.cost_usd == Approx(device_hours * h100.price->usd_per_hour));

  // The table says what it is; serving is inference.
  const CompareTable t =
      compare_devices({prefill}, {&h100}, table(), {Precision::kFp16}, request, CompareSort::kCost);
  CHECK(t.cost_basis == CostBasis::kPerMillionTokens);
  REQUIRE(t.serving);
  const std::string text = render_compare_text(t);
  CHECK_THAT(text, ContainsSubstring("serving 512 prompt + 128 generated tokens a sequence"));
  CHECK_THAT(text, ContainsSubstring("TTFT"));
  CHECK_THAT(text, ContainsSubstring("tokens/s"));
  CHECK_THAT(text, ContainsSubstring("$/1M tok"));
  CHECK_THAT(render_compare_json(t), ContainsSubstring("\"cost_basis\": \"per_million_tokens\""));
  request.workload.mode = Mode::kTraining;
  CHECK_THROWS_WITH(
      compare_devices({prefill}, {&h100}, table(), {Precision::kFp16}, request, CompareSort::kCost),
      ContainsSubstring("describe serving: use --mode inference"));
}
