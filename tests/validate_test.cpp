// capcalc::validate's reading of measurement files and its LLM serving metrics: each one is
// the figure estimate_serving gives for the same request, and malformed cases name their place.
#include "capcalc/validate.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "capcalc/error.hpp"
#include "capcalc/model.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/runtime.hpp"

#include "catch.hpp"
#include "test_data.hpp"

using namespace capcalc;

namespace {

// A measurement file of one case, written to a temporary path.
std::string write_cases(const nlohmann::json& cases, const std::string& stem) {
  const std::string path = test::temp_path("validate_" + stem + ".json");
  std::ofstream(path) << nlohmann::json{{"schema_version", 1}, {"cases", cases}}.dump(2);
  return path;
}

nlohmann::json serving_case(const std::string& metric) {
  return {{"id", "llama2-7b-" + metric},
          {"model", "llama2_7b_hf.json"},
          {"dims", {{"batch", 4}}},
          {"device", "h100-sxm"},
          {"devices", 2},
          {"precision", "fp16"},
          {"weight_precision", "int4"},
          {"mode", "inference"},
          {"metric", metric},
          {"value", 1.0},
          {"per", "device"},
          {"prompt_tokens", 300},
          {"output_tokens", 50},
          {"profile", "compiled"},
          {"source", "https://example.org/"},
          {"quote", "x"}};
}

}  // namespace

TEST_CASE("validate: LLM serving metrics are estimate_serving's figures", "[validate]") {
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  nlohmann::json cases = nlohmann::json::array();
  for (const char* metric :
       {"ttft_s", "inter_token_latency_s", "request_latency_s", "output_tokens_per_s"}) {
    cases.push_back(serving_case(metric));
  }
  const std::vector<Measurement> measurements = load_measurements(write_cases(cases, "serving"));
  REQUIRE(measurements.size() == 4);
  CHECK(measurements[0].prompt_tokens == 300);
  CHECK(measurements[0].workload.weight_precision == Precision::kInt4);
  const ValidationSummary summary = validate(measurements, table, test::data_path("models"));

  // The same request through estimate_serving: 4 sequences per replica, 2 replicas.
  const Device& device = table.get("h100-sxm");
  Workload w;
  w.precision = Precision::kFp16;
  w.weight_precision = Precision::kInt4;
  w.profile = Profile::kCompiled;
  w.devices = 2;
  ServingRequest request;
  request.prompt_tokens = 300;
  request.output_tokens = 50;
  const ServingEstimate s = estimate_serving(
      [](std::int64_t seq, std::int64_t cached) {
        ModelOptions options;
        options.dims["batch"] = 4;
        options.dims["seq"] = seq;
        options.counting.kv_cache_length = cached;
        return load_model(test::data_path("models/llama2_7b_hf.json"), options);
      },
      device, table.performance_for(device), w, request);
  CHECK(summary.results[0].predicted == Approx(s.ttft_s));
  CHECK(summary.results[1].predicted == Approx(s.decode_step_s));
  CHECK(summary.results[2].predicted == Approx(s.ttft_s + 49 * s.decode_step_s));
  // 2 x 4 sequences x 50 tokens over the request's time, per device.
  CHECK(summary.results[3].predicted == Approx(8.0 * 50 / s.request_latency_s / 2));
  CHECK(is_time_metric(Metric::kTtft));
  CHECK(!is_time_metric(Metric::kOutputTokensPerSecond));
}

// calibrate validates the same cases hundreds of times: a cache loads each model once per
// file and options, and the predictions are the same as without it.
TEST_CASE("validate: a model cache loads each model once and changes no prediction", "[validate]") {
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  const std::vector<Measurement> measurements =
      load_measurements(test::data_path("validation/measured_h200.json"));
  const RuntimeTable runtimes = load_runtimes(test::data_path("runtimes.json"));
  const std::string models = test::data_path("models");
  const ValidationSummary plain = validate(measurements, table, models, &runtimes);
  ModelCache cache;
  const ValidationSummary first = validate(measurements, table, models, &runtimes, &cache);
  const std::size_t loaded = cache.size();
  CHECK(loaded > 0);
  CHECK(loaded < 3 * measurements.size());  // Cases share shapes; serving loads two each.
  const ValidationSummary again = validate(measurements, table, models, &runtimes, &cache);
  CHECK(cache.size() == loaded);  // Nothing new to load.
  REQUIRE(plain.results.size() == again.results.size());
  for (std::size_t i = 0; i < plain.results.size(); ++i) {
    CHECK(first.results[i].predicted == plain.results[i].predicted);
    CHECK(again.results[i].predicted == plain.results[i].predicted);
  }
  // Options that change the graph are told apart: another batch or cache length is another graph.
  ModelOptions a;
  a.dims["batch"] = 1;
  ModelOptions b = a;
  b.dims["batch"] = 2;
  ModelOptions c = a;
  c.counting.kv_cache_length = 64;
  const std::string path = test::data_path("models/resnet50.json");
  int loads = 0;
  const auto load = [&](const ModelOptions& o) {
    return [&, o] {
      ++loads;
      return load_model(path, o);
    };
  };
  ModelCache small;
  const Graph& one = small.get(path, a, load(a));
  CHECK(&small.get(path, a, load(a)) == &one);
  CHECK(small.get(path, b, load(b)).batch == 2);
  (void)small.get(path, c, load(c));
  CHECK(loads == 3);
  CHECK(one.batch == 1);
}

TEST_CASE("validate: a serving case without its lengths is an error at the case", "[validate]") {
  nlohmann::json c = serving_case("ttft_s");
  c.erase("output_tokens");
  const std::string path = write_cases(nlohmann::json::array({c}), "no_lengths");
  CHECK_THROWS_WITH(load_measurements(path),
                    Catch::Contains(path + ":/cases/0: a ttft_s case needs \"prompt_tokens\" and "
                                           "\"output_tokens\""));
  c = serving_case("ttft_s");
  c["kv_precision"] = "fp9";
  CHECK_THROWS_WITH(load_measurements(write_cases(nlohmann::json::array({c}), "bad_kv")),
                    Catch::Contains(":/cases/0/kv_precision: unknown precision \"fp9\""));
  c = serving_case("ttft_s");
  c["mode"] = "training";
  CHECK_THROWS_WITH(load_measurements(write_cases(nlohmann::json::array({c}), "training")),
                    Catch::Contains(":/cases/0/mode: an LLM serving metric needs \"mode\": "
                                    "\"inference\""));
}

TEST_CASE("validate: held-out cases get their own median", "[validate]") {
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  nlohmann::json fitted = serving_case("ttft_s");
  nlohmann::json held = serving_case("inter_token_latency_s");
  held["held_out"] = true;
  const std::vector<Measurement> measurements =
      load_measurements(write_cases(nlohmann::json::array({fitted, held}), "held_out"));
  CHECK(!measurements[0].held_out);
  CHECK(measurements[1].held_out);
  const ValidationSummary summary = validate(measurements, table, test::data_path("models"));
  CHECK(summary.held_out == 1);
  CHECK(summary.held_out_median_abs_error == Approx(std::fabs(summary.results[1].ratio - 1)));
}

// The median of an odd count is the middle value, of an even count the mean of the two middle
// ones: seven cases whose errors are set through the measured value (predicted / (1 + e)).
TEST_CASE("validate: medians of odd and even counts", "[validate]") {
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  const double predicted =
      validate(load_measurements(
                   write_cases(nlohmann::json::array({serving_case("ttft_s")}), "median_probe")),
               table, test::data_path("models"))
          .results[0]
          .predicted;
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& [error, held_out] : std::vector<std::pair<double, bool>>{{0.9, false},
                                                                            {0.1, true},
                                                                            {0.6, false},
                                                                            {0.5, true},
                                                                            {0.2, false},
                                                                            {0.7, true},
                                                                            {0.3, true}}) {
    nlohmann::json c = serving_case("ttft_s");
    c["id"] = "case-" + std::to_string(cases.size());
    c["value"] = predicted / (1 + error);
    c["held_out"] = held_out;
    cases.push_back(c);
  }
  const ValidationSummary summary =
      validate(load_measurements(write_cases(cases, "medians")), table, test::data_path("models"));
  CHECK(summary.results.size() == 7);
  CHECK(summary.median_abs_error == Approx(0.5));  // 0.1 0.2 0.3 [0.5] 0.6 0.7 0.9
  CHECK(summary.held_out == 4);
  CHECK(summary.held_out_median_abs_error == Approx(0.4));  // 0.1 [0.3 0.5] 0.7
  CHECK(summary.worst_factor == Approx(1.9));
}

TEST_CASE("validate: a training case's layout reaches the estimate", "[validate]") {
  // NeMo's Llama 2 13B row (16 H100s, GBS 128, MBS 1, PP 4, VP 10): 4 replicas of 4 stages,
  // 32 micro-batches a step; the prediction is the estimate of that layout, per device.
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  nlohmann::json c = {{"id", "pp"},
                      {"model", "llama2_13b.json"},
                      {"dims", {{"batch", 1}, {"seq", 4096}}},
                      {"device", "h100-sxm"},
                      {"devices", 16},
                      {"pipeline_parallel", 4},
                      {"virtual_stages", 10},
                      {"micro_batches", 32},
                      {"zero_stage", 1},
                      {"precision", "fp8"},
                      {"mode", "training"},
                      {"metric", "tokens_per_s"},
                      {"value", 8646.0},
                      {"per", "device"},
                      {"source", "https://example.org/"},
                      {"quote", "x"}};
  const std::vector<Measurement> measurements =
      load_measurements(write_cases(nlohmann::json::array({c}), "layout"));
  REQUIRE(measurements.size() == 1);
  CHECK(measurements[0].workload.pipeline_parallel == 4);
  CHECK(measurements[0].workload.virtual_stages == 10);
  CHECK(measurements[0].workload.micro_batches == 32);
  CHECK(measurements[0].workload.zero_stage == 1);
  const ValidationSummary summary = validate(measurements, table, test::data_path("models"));

  ModelOptions options;
  options.dims = {{"batch", 1}, {"seq", 4096}};
  const Graph graph = load_model(test::data_path("models/llama2_13b.json"), options);
  Workload w;
  w.precision = Precision::kFp8;
  w.mode = Mode::kTraining;
  w.devices = 16;
  w.pipeline_parallel = 4;
  w.virtual_stages = 10;
  w.micro_batches = 32;
  w.zero_stage = 1;
  const Device& device = table.get("h100-sxm");
  const Estimate e = estimate(graph, device, table.performance_for(device), w);
  CHECK(summary.results[0].predicted == Approx(e.throughput_per_s / 16 * 4096));
  // Without the layout the same devices are 16 replicas that update after every sample.
  w.pipeline_parallel = 1;
  w.virtual_stages = 1;
  w.micro_batches = 1;
  CHECK(estimate(graph, device, table.performance_for(device), w).throughput_per_s !=
        Approx(e.throughput_per_s));

  nlohmann::json bad = c;
  bad["pipeline_parallel"] = 3;
  CHECK_THROWS_WITH(
      load_measurements(write_cases(nlohmann::json::array({bad}), "bad_pp")),
      Catch::Contains(":/cases/0/pipeline_parallel: \"devices\" 16 is not a multiple of "
                      "\"tensor_parallel\" 1 x \"pipeline_parallel\" 3 (3)"));
  bad = c;
  bad["zero_stage"] = 4;
  CHECK_THROWS_WITH(load_measurements(write_cases(nlohmann::json::array({bad}), "bad_zero")),
                    Catch::Contains(":/cases/0/zero_stage: expected 0 to 3, got 4"));
  bad = c;
  bad["micro_batches"] = 0;
  CHECK_THROWS_WITH(load_measurements(write_cases(nlohmann::json::array({bad}), "bad_mb")),
                    Catch::Contains(":/cases/0/micro_batches: expected a positive integer, got 0"));
}

TEST_CASE("validate: a case's workload is read and checked as a budget's", "[validate]") {
  // The serving case's workload, through workload_spec's reader: devices, weight precision.
  const std::vector<Measurement> read =
      load_measurements(write_cases(nlohmann::json::array({serving_case("ttft_s")}), "spec"));
  REQUIRE(read.size() == 1);
  CHECK(read[0].workload.devices == 2);
  CHECK(read[0].workload.weight_precision == Precision::kInt4);
  CHECK(read[0].workload.profile == Profile::kCompiled);
  // Settings that only training has are refused at their key, keys quoted.
  nlohmann::json c = serving_case("ttft_s");
  c["optimizer"] = "sgd";
  CHECK_THROWS_WITH(load_measurements(write_cases(nlohmann::json::array({c}), "optimizer")),
                    Catch::EndsWith(":/cases/0/optimizer: \"optimizer\" is for training: add "
                                    "\"mode\" training"));
  c = serving_case("ttft_s");
  c["checkpointing"] = true;
  CHECK_THROWS_WITH(load_measurements(write_cases(nlohmann::json::array({c}), "ckpt")),
                    Catch::EndsWith(":/cases/0/checkpointing: \"checkpointing\" is for "
                                    "training: add \"mode\" training"));
  c = serving_case("ttft_s");
  c["optimizer"] = "adamm";
  CHECK_THROWS_WITH(load_measurements(write_cases(nlohmann::json::array({c}), "adamm")),
                    Catch::EndsWith(":/cases/0/optimizer: unknown optimizer \"adamm\"; did you "
                                    "mean \"adam\"?"));
}

TEST_CASE("validate: a case takes the workload's keys, less a run's size and price", "[validate]") {
  // The workload's keys come from its reader: sparsity, which no list in validate.cpp names.
  nlohmann::json c = serving_case("ttft_s");
  c["sparsity"] = "2:4";
  const std::vector<Measurement> read =
      load_measurements(write_cases(nlohmann::json::array({c}), "sparsity"));
  REQUIRE(read.size() == 1);
  CHECK(read[0].workload.sparsity == Sparsity::k2of4);
  // A training run's size and price, and replicas, mean nothing to a measurement.
  for (const char* key : {"dataset_size", "epochs", "price_per_hour_usd", "data_parallel"}) {
    c = serving_case("ttft_s");
    c[key] = 2;
    CHECK_THROWS_WITH(
        load_measurements(write_cases(nlohmann::json::array({c}), key)),
        Catch::Contains(std::string(":/cases/0/") + key) && Catch::Contains("unknown key"));
  }
}

TEST_CASE("validate: every shipped case names the runtime it ran, one of the runtime table's",
          "[validate][data]") {
  // Issue 19 §6: "Each case names its runtime" (41 published cases named none before).
  const RuntimeTable runtimes = load_runtimes(test::data_path("runtimes.json"));
  for (const char* file : {"validation/measurements.json", "validation/measured_h200.json"}) {
    for (const Measurement& m : load_measurements(test::data_path(file))) {
      INFO(file << ": " << m.id);
      CHECK_FALSE(m.runtime.empty());
      CHECK(runtimes.find(m.runtime) != nullptr);
    }
  }
}
