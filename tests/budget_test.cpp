#include "capcalc/budget.hpp"

#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "capcalc/model.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/report_compare.hpp"
#include "capcalc/units.hpp"
#include "capcalc/workload_spec.hpp"

#include "catch.hpp"
#include "test_data.hpp"

using namespace capcalc;

namespace {

const HardwareTable& table() {
  static const HardwareTable t = load_hardware(test::data_path("hardware.json"));
  return t;
}

std::vector<CheckResult> check(const std::vector<Limit>& limits, const char* device = "A100",
                               const CompareRequest& request = {}) {
  const Graph graph = load_model(test::data_path("models/resnet50.json"));
  const Device& d = table().get(device);
  return check_limits(graph, d, table().performance_for(d), Precision::kFp32, request, limits, "");
}

}  // namespace

TEST_CASE("parse_limit uses the unit parser of the kind", "[budget]") {
  CHECK(parse_limit(LimitKind::kMaxLatency, "20ms").value == Approx(0.02));
  CHECK(parse_limit(LimitKind::kMinThroughput, "1k/s").value == 1000);
  CHECK(parse_limit(LimitKind::kMaxMemory, "16GiB").value == 16.0 * 1024 * 1024 * 1024);
  CHECK(parse_limit(LimitKind::kMaxCost, "500USD").value == 500);
  CHECK(parse_limit(LimitKind::kMaxTrainTime, "3d").value == 3 * 86400.0);
  CHECK(parse_limit(LimitKind::kMaxParams, "100M").value == 100e6);
  CHECK(parse_limit(LimitKind::kMaxMacs, "5G").value == 5e9);
  CHECK(parse_limit(LimitKind::kMaxLatency, "20ms").text == "20ms");
  REQUIRE_THROWS_WITH(parse_limit(LimitKind::kMaxMemory, "16 gigs"),
                      ContainsSubstring("invalid size \"16 gigs\""));
  // Only counts go without a unit.
  CHECK(parse_limit(LimitKind::kMaxParams, "25557032").value == 25557032);
  REQUIRE_THROWS_WITH(parse_limit(LimitKind::kMaxMemory, "16"),
                      "16 has no unit: write 16GB or 16GiB");
  REQUIRE_THROWS_WITH(parse_limit(LimitKind::kMaxTtft, "500"),
                      "500 has no unit: write 500ms or 500s");
  REQUIRE_THROWS_WITH(parse_limit(LimitKind::kMaxTrainTime, "3"), "3 has no unit: write 3h or 3d");
}

TEST_CASE("a limit of zero is refused: it never holds, or as a minimum always does", "[budget]") {
  REQUIRE_THROWS_WITH(parse_limit(LimitKind::kMaxLatency, "0ms"),
                      "a limit of 0ms never holds: give one above zero");
  REQUIRE_THROWS_WITH(parse_limit(LimitKind::kMaxMemory, "0 GiB"),
                      "a limit of 0 GiB never holds: give one above zero");
  REQUIRE_THROWS_WITH(parse_limit(LimitKind::kMaxCost, "$0"),
                      "a limit of $0 never holds: give one above zero");
  REQUIRE_THROWS_WITH(parse_limit(LimitKind::kMaxParams, "0"),
                      "a limit of 0 never holds: give one above zero");
  REQUIRE_THROWS_WITH(parse_limit(LimitKind::kMinThroughput, "0 tokens/s"),
                      "a minimum of 0 tokens/s always holds: give one above zero");
  // A bare number in a budget file is read as a count; zero is refused there too.
  REQUIRE_THROWS_WITH(parse_budget(R"({"budgets": [{"model": "m.json", "devices": ["a100"],
                                       "limits": {"max_macs": 0}}]})",
                                   "b.json"),
                      "b.json:/budgets/0/limits/max_macs: a limit of 0 never holds: give one "
                      "above zero");
}

TEST_CASE("a margin of 1,000 % or more is whole and grouped", "[budget]") {
  // resnet50: 25,557,032 parameters (torchvision model card); over a limit of 1,000 by
  // 25,556,032, which is 2,555,603.2 % of it.
  const auto results = check({parse_limit(LimitKind::kMaxParams, "1k")});
  REQUIRE(results.size() == 1);
  CHECK(results[0].message == "parameters 25.6 M exceeds max 1k by 25.6 M (2,555,603 %)");
}

TEST_CASE("limits pass or fail with the value and the margin", "[budget]") {
  // resnet50: 25,557,032 parameters, 4.09 G MACs (torchvision model card).
  const auto results =
      check({parse_limit(LimitKind::kMaxParams, "100M"), parse_limit(LimitKind::kMaxMacs, "4G"),
             parse_limit(LimitKind::kMustFit, "true")});
  REQUIRE(results.size() == 3);
  CHECK(results[0].passed);
  CHECK(*results[0].value == 25557032);
  CHECK(results[0].message == "parameters 25.6 M within max 100M (margin 74.4 M, 74.4 %)");
  CHECK_FALSE(results[1].passed);
  CHECK(results[1].message == "MACs per sample 4.09 G exceeds max 4G by 89.2 M (2.2 %)");
  CHECK(results[2].passed);
  CHECK_THAT(results[2].message, ContainsSubstring("fits in 80.0 GB"));
  CheckReport report{results};
  CHECK(report.failures() == 1);
  CHECK_FALSE(report.passed());
}

TEST_CASE("min throughput fails below the limit", "[budget]") {
  const auto results = check({parse_limit(LimitKind::kMinThroughput, "1G/s")});
  CHECK_FALSE(results[0].passed);
  CHECK_THAT(results[0].message, ContainsSubstring("is below min 1G/s by"));
}

// llama2_7b's sample is one sequence of its "seq" 4,096 tokens (data/models/llama2_7b.json,
// max_position_embeddings of the Llama-2-7b-hf config): tokens/s = sequences/s x 4,096.
TEST_CASE("a language model's min_throughput counts tokens or sequences", "[budget]") {
  const Graph graph = load_model(test::data_path("models/llama2_7b.json"));
  REQUIRE(graph.dims.at("seq") == 4096);
  const Device& a100 = table().get("A100");
  const PerformanceParams& params = table().performance_for(a100);
  const CompareRow row = compare_row(graph, a100, params, Precision::kFp16, {});
  // One batch of 1 sequence per latency.
  const double sequences = 1 / row.latency_s;
  CHECK(row.throughput_per_s == Approx(sequences));
  const double tokens = row.throughput_per_s * 4096;
  const auto at = [](double rate, const char* item) {
    return parse_limit(LimitKind::kMinThroughput, fmt::format("{:.9g} {}/s", rate, item));
  };
  const std::vector<Limit> limits = {at(tokens * 0.999, "tokens"), at(tokens * 1.001, "tokens"),
                                     at(sequences * 0.999, "sequences"),
                                     at(sequences * 1.001, "sequence")};
  const auto results = check_limits(graph, a100, params, Precision::kFp16, {}, limits, "");
  REQUIRE(results.size() == 4);
  CHECK(*results[0].value == tokens);
  CHECK(results[0].passed);
  CHECK_FALSE(results[1].passed);
  CHECK(*results[2].value == row.throughput_per_s);
  CHECK(results[2].passed);
  CHECK_FALSE(results[3].passed);
  CHECK(results[0].value_text == format_count(tokens) + " tokens/s");
  CHECK(results[0].message ==
        fmt::format("throughput {} tokens/s within min {} (margin {} tokens/s, 0.1 %)",
                    format_count(tokens), limits[0].text, format_count(tokens - limits[0].value)));
  CHECK(results[3].message ==
        fmt::format("throughput {} sequences/s is below min {} by {} sequences/s (0.1 %)",
                    format_count(sequences), limits[3].text,
                    format_count(limits[3].value - row.throughput_per_s)));
  // A sample names a sequence too; images are samples.
  CHECK(check_limits(graph, a100, params, Precision::kFp16, {}, {at(sequences * 0.999, "samples")},
                     "")[0]
            .passed);
}

TEST_CASE("min_throughput refuses a rate the model does not count", "[budget]") {
  const Graph llama = load_model(test::data_path("models/llama2_7b.json"));
  const Device& a100 = table().get("A100");
  const auto run = [&](const Graph& graph, const char* text) {
    return check_limits(graph, a100, table().performance_for(a100), Precision::kFp16, {},
                        {parse_limit(LimitKind::kMinThroughput, text)}, "");
  };
  // A bare rate is ambiguous by a factor of 4,096.
  REQUIRE_THROWS_WITH(run(llama, "100/s"),
                      "min_throughput \"100/s\": a sample of llama2_7b is a sequence of 4,096 "
                      "tokens; write 100 tokens/s or 100 sequences/s");
  REQUIRE_THROWS_WITH(run(llama, "1.5k/min"),
                      "min_throughput \"1.5k/min\": a sample of llama2_7b is a sequence of 4,096 "
                      "tokens; write 1.5k tokens/min or 1.5k sequences/min");
  const Graph resnet = load_model(test::data_path("models/resnet50.json"));
  REQUIRE_THROWS_WITH(run(resnet, "100 tokens/s"),
                      "min_throughput \"100 tokens/s\": resnet50 has no sequence dimension, so it "
                      "counts no tokens; write 100/s or 100 samples/s");
  REQUIRE_THROWS_WITH(run(resnet, "2ksequences/s"),
                      "min_throughput \"2ksequences/s\": resnet50 has no sequence dimension, so "
                      "it counts no sequences; write 2k/s or 2k samples/s");
  // Bare, samples and images all count resnet50's images.
  const double images = *run(resnet, "1/s")[0].value;
  CHECK(*run(resnet, "1 image/s")[0].value == images);
  CHECK(*run(resnet, "1 samples/s")[0].value == images);
  CHECK(run(resnet, "1 images/s")[0].value_text == format_count(images) + " images/s");
  CHECK(run(resnet, "1/s")[0].value_text == format_count(images) + "/s");
}

TEST_CASE("a budget's min_throughput is refused at its JSON pointer", "[budget]") {
  const std::string file = test::data_path("budget.json");
  const auto check_text = [&](const char* text) {
    return check_budgets(parse_budget(text, file), table());
  };
  REQUIRE_THROWS_WITH(
      check_text(R"({"budgets": [{"model": "models/llama2_7b.json", "devices": ["a100"],
                                  "precision": "fp16", "limits": {"min_throughput": "100/s"}}]})"),
      file +
          ":/budgets/0/limits/min_throughput: \"100/s\": a sample of llama2_7b is a sequence "
          "of 4,096 tokens; write 100 tokens/s or 100 sequences/s");
  REQUIRE_THROWS_WITH(
      check_text(R"({"defaults": {"limits": {"min_throughput": "5 tokens/s"}},
                     "budgets": [{"model": "models/resnet50.json", "devices": ["a100"]}]})"),
      file +
          ":/defaults/limits/min_throughput: \"5 tokens/s\": resnet50 has no sequence "
          "dimension, so it counts no tokens; write 5/s or 5 samples/s");
  // Serving counts generated tokens: a limit in sequences is refused there.
  REQUIRE_THROWS_WITH(
      check_text(R"({"budgets": [{"model": "models/llama2_7b.json", "devices": ["h100"],
                                  "precision": "fp16", "prompt_tokens": 512,
                                  "limits": {"min_throughput": "2 sequences/s"}}]})"),
      file +
          ":/budgets/0/limits/min_throughput: \"2 sequences/s\": serving (prompt_tokens) "
          "counts generated tokens, not sequences; write the limit in tokens/s");
  // Written with its item, it checks the token rate.
  const CheckReport report =
      check_text(R"({"budgets": [{"model": "models/llama2_7b.json", "devices": ["a100"],
                     "precision": "fp16", "limits": {"min_throughput": "1 token/s"}}]})");
  REQUIRE(report.results.size() == 1);
  CHECK(report.results[0].passed);
  CHECK_THAT(report.results[0].message, ContainsSubstring(" tokens/s within min 1 token/s"));
}

TEST_CASE("max_train_time needs a run", "[budget]") {
  REQUIRE_THROWS_WITH(check({parse_limit(LimitKind::kMaxTrainTime, "3d")}),
                      ContainsSubstring("max_train_time needs a training run"));
}

TEST_CASE("a budget file merges defaults and resolves models next to it", "[budget]") {
  const char* text = R"({
    "schema_version": 1,
    "defaults": {"devices": ["t4"], "precision": "fp16", "limits": {"must_fit": true}},
    "budgets": [
      {"name": "serving", "model": "models/resnet50.json", "batch": 8,
       "limits": {"max_latency": "20ms", "max_memory": "16GB"}},
      {"model": "models/resnet18.json", "devices": ["a100", "h100"], "limits": {"must_fit": false,
       "max_params": 20000000}}
    ]})";
  const std::vector<Budget> budgets = parse_budget(text, test::data_path("budget.json"));
  REQUIRE(budgets.size() == 2);
  CHECK(budgets[0].model_path == test::data_path("models/resnet50.json"));
  CHECK(budgets[0].devices == std::vector<std::string>{"t4"});
  CHECK(budgets[0].precision == Precision::kFp16);
  CHECK(budgets[0].model_options.dims.at("batch") == 8);
  CHECK(budgets[0].limits.size() == 3);
  CHECK(budgets[1].limits.size() == 1);  // must_fit false drops the default.
  CHECK(budgets[1].devices.size() == 2);
  const CheckReport report = check_budgets(budgets, table());
  CHECK(report.results.size() == 3 + 2);
  // resnet18: 11,689,512 parameters (torchvision model card) < 20M.
  CHECK(report.results[3].passed);
}

TEST_CASE("a budget's tensor_parallel multiplies its data-parallel replicas", "[budget]") {
  const char* text = R"({
    "schema_version": 1,
    "defaults": {"devices": ["h100"], "data_parallel": 2, "limits": {"must_fit": true}},
    "budgets": [{"model": "models/llama2_70b.json", "tensor_parallel": 4, "precision": "fp16"},
                {"model": "models/llama2_70b.json", "precision": "fp16"}]})";
  const std::vector<Budget> budgets = parse_budget(text, test::data_path("budget.json"));
  REQUIRE(budgets.size() == 2);
  CHECK(budgets[0].request.workload.devices == 8);
  CHECK(budgets[0].request.workload.tensor_parallel == 4);
  CHECK(budgets[1].request.workload.devices == 2);
  CHECK(budgets[0].request.workload.zero_stage == 0);
  // 138 GB of fp16 weights: a quarter fits on an 80 GB H100, the whole does not.
  const CheckReport report = check_budgets(budgets, table());
  REQUIRE(report.results.size() == 2);
  CHECK(report.results[0].passed);
  CHECK_FALSE(report.results[1].passed);
}

TEST_CASE("a budget's pipeline stages multiply its replicas' devices", "[budget]") {
  const char* text = R"({
    "schema_version": 1,
    "defaults": {"devices": ["h100"], "mode": "training", "precision": "bf16",
                 "limits": {"must_fit": true}},
    "budgets": [{"model": "models/llama2_70b.json", "tensor_parallel": 8,
                 "pipeline_parallel": 4, "micro_batches": 16, "virtual_stages": 2,
                 "data_parallel": 2},
                {"model": "models/llama2_70b.json", "tensor_parallel": 8}]})";
  const std::vector<Budget> budgets = parse_budget(text, test::data_path("budget.json"));
  REQUIRE(budgets.size() == 2);
  CHECK(budgets[0].request.workload.devices == 64);
  CHECK(budgets[0].request.workload.pipeline_parallel == 4);
  CHECK(budgets[0].request.workload.micro_batches == 16);
  CHECK(budgets[0].request.workload.virtual_stages == 2);
  CHECK(budgets[1].request.workload.virtual_stages == 1);
  CHECK(budgets[1].request.workload.pipeline_parallel == 1);
  // Training Llama 2 70B with Adam: 16 bytes of state per parameter, 1.1 TB in all; an eighth
  // (tensor parallel) does not fit in 80 GB, a thirty-second (x 4 stages) does.
  const CheckReport report = check_budgets(budgets, table());
  REQUIRE(report.results.size() == 2);
  CHECK(report.results[0].passed);
  CHECK_FALSE(report.results[1].passed);
  CHECK_THROWS_WITH(parse_budget(R"({"budgets": [{"model": "m.json", "devices": ["t4"],
                                                  "pipeline_parallel": 0}]})",
                                 "b.json"),
                    ContainsSubstring("b.json:/budgets/0/pipeline_parallel"));
}

TEST_CASE("a serving budget gates time to first token, token rate and cost per token",
          "[budget][serving]") {
  // Llama 2 7B's config served 512 + 128 tokens a sequence on an H100: the limits read the
  // same figures as compare's serving rows.
  const char* text = R"({
    "budgets": [{"model": "models/llama2_7b_hf.json", "devices": ["h100"], "precision": "fp16",
                 "prompt_tokens": 512, "output_tokens": 128,
                 "limits": {"max_ttft": "1s", "min_throughput": "1G/s", "max_latency": "1h"}}]})";
  const std::vector<Budget> budgets = parse_budget(text, test::data_path("budget.json"));
  REQUIRE(budgets.size() == 1);
  REQUIRE(budgets[0].request.serving);
  CHECK(budgets[0].request.serving->prompt_tokens == 512);
  const CheckReport report = check_budgets(budgets, table());
  REQUIRE(report.results.size() == 3);
  // Sorted by kind: max_latency (the request), min_throughput, max_ttft.
  CHECK(report.results[0].passed);
  CHECK_THAT(report.results[0].message, ContainsSubstring("request time"));
  CHECK_FALSE(report.results[1].passed);
  CHECK_THAT(report.results[1].message,
             ContainsSubstring(" generated tokens/s is below min 1G/s by "));
  CHECK_THAT(report.results[1].value_text, ContainsSubstring(" generated tokens/s"));
  CHECK(report.results[2].passed);
  CHECK_THAT(report.results[2].message, ContainsSubstring("time to first token"));
  CHECK_THAT(report.results[2].workload,
             ContainsSubstring("serving 512 prompt + 128 generated tokens"));
  // The TTFT it checks is the serving estimate's.
  const Device& h100 = table().get("h100");
  const CompareRow row =
      compare_row(load_model(budgets[0].model_path, budgets[0].model_options), h100,
                  table().performance_for(h100), Precision::kFp16, budgets[0].request);
  REQUIRE(row.ttft_s);
  CHECK(*report.results[2].value == Approx(*row.ttft_s));

  // max_ttft needs a serving request; serving is inference.
  REQUIRE_THROWS_WITH(check({parse_limit(LimitKind::kMaxTtft, "1s")}),
                      ContainsSubstring("max_ttft needs LLM serving"));
  CHECK_THROWS_WITH(
      parse_budget(R"({"budgets": [{"model": "m.json", "devices": ["h100"], "mode": "training",
                                    "prompt_tokens": 512, "limits": {"must_fit": true}}]})",
                   "b.json"),
      ContainsSubstring("b.json:/budgets/0/prompt_tokens: \"prompt_tokens\" and "
                        "\"output_tokens\" describe serving: use \"mode\" inference"));
}

TEST_CASE("budget file errors are located", "[budget]") {
  REQUIRE_THROWS_WITH(
      parse_budget(R"({"budgets": [{"model": "m.json", "devices": ["t4"],
                                    "limits": {"max_latncy": "20ms"}}]})",
                   "b.json"),
      "b.json:/budgets/0/limits/max_latncy: unknown key \"max_latncy\"; did you mean "
      "\"max_latency\"?");
  REQUIRE_THROWS_WITH(
      parse_budget(R"({"budgets": [{"model": "m.json", "devices": ["t4"],
                                    "limits": {"max_latency": "20 parsecs"}}]})",
                   "b.json"),
      ContainsSubstring("b.json:/budgets/0/limits/max_latency: invalid duration \"20 parsecs\""));
  // A number is a count: anything with a unit needs it written, wherever it is.
  REQUIRE_THROWS_WITH(parse_budget(R"({"budgets": [{"model": "m.json", "devices": ["t4"],
                                    "limits": {"max_memory": 16}}]})",
                                   "b.json"),
                      "b.json:/budgets/0/limits/max_memory: 16 has no unit: write 16GB or 16GiB");
  REQUIRE_THROWS_WITH(parse_budget(R"({"defaults": {"limits": {"max_latency": 20}},
                      "budgets": [{"model": "m.json", "devices": ["t4"]}]})",
                                   "b.json"),
                      "b.json:/defaults/limits/max_latency: 20 has no unit: write 20ms or 20s");
  REQUIRE_THROWS_WITH(
      parse_budget(R"({"budgets": [{"model": "m.json", "limits": {"must_fit": true}}]})", "b.json"),
      "b.json:/budgets/0: missing \"devices\" (here or in \"defaults\")");
  REQUIRE_THROWS_WITH(parse_budget(R"({"budgets": [{"model": "m.json", "devices": ["t4"],
                                    "zero_stage": 5, "limits": {"must_fit": true}}]})",
                                   "b.json"),
                      "b.json:/budgets/0/zero_stage: expected 0 to 3, got 5");
}

TEST_CASE("check reports render as text, JSON, JUnit and Markdown", "[budget][report]") {
  const CheckReport report{
      check({parse_limit(LimitKind::kMaxParams, "10M"), parse_limit(LimitKind::kMaxMacs, "5G")})};
  const std::string text = render_check_text(report);
  CHECK_THAT(text, ContainsSubstring("FAIL  resnet50 on a100-sxm4-80gb (inference, fp32, batch 1): "
                                     "parameters 25.6 M exceeds max 10M"));
  CHECK_THAT(text, ContainsSubstring("1 of 2 budgets exceeded"));
  const std::string junit = render_check_junit(report);
  CHECK_THAT(junit,
             ContainsSubstring("<testsuites name=\"capcalc check\" tests=\"2\" failures=\"1\">"));
  CHECK_THAT(junit, ContainsSubstring("<failure message=\"parameters 25.6 M exceeds max 10M"));
  CHECK_THAT(render_check_json(report), ContainsSubstring("\"passed\": false"));
  CHECK_THAT(render_check_markdown(report), ContainsSubstring("| **FAIL** | resnet50 |"));
}

// max_cost of a training run is its wall-clock time x the devices x the table's price per
// device-hour (the run's cost, not a price per hour); max_train_time is that wall-clock time.
// Limits 1 % either side of the value pass and fail.
TEST_CASE("max_cost is the run's device-hours at the table's price, limits bite at the value",
          "[budget]") {
  CompareRequest request;
  request.workload.mode = Mode::kTraining;
  request.workload.devices = 4;
  request.run.dataset_size = 1281167;  // ImageNet-1k's training set, one epoch.
  const Device& a100 = table().get("A100");
  REQUIRE(a100.price);
  const Graph graph = load_model(test::data_path("models/resnet50.json"));
  const CompareRow row =
      compare_row(graph, a100, table().performance_for(a100), Precision::kFp32, request);
  REQUIRE(row.run_time_s);
  // The run: ceil(1,281,167 / (4 replicas x batch 1)) steps of one step's time.
  const Estimate step = estimate(graph, a100, table().performance_for(a100), request.workload);
  CHECK(*row.run_time_s == Approx(std::ceil(1281167.0 / 4) * step.latency_s));
  const double cost = *row.run_time_s / 3600 * 4 * a100.price->usd_per_hour;
  for (const auto& [factor, passes] :
       std::vector<std::pair<double, bool>>{{1.01, true}, {0.99, false}}) {
    const std::string usd = fmt::format("{:.4f}USD", cost * factor);
    const std::string hours = fmt::format("{:.6f}h", *row.run_time_s * factor / 3600);
    const auto results =
        check({parse_limit(LimitKind::kMaxCost, usd), parse_limit(LimitKind::kMaxTrainTime, hours)},
              "A100", request);
    REQUIRE(results.size() == 2);
    CHECK(*results[0].value == Approx(cost));
    CHECK(results[0].passed == passes);
    CHECK(*results[1].value == Approx(*row.run_time_s));
    CHECK(results[1].passed == passes);
  }
}

TEST_CASE("a budget sets every workload setting the flags do", "[budget]") {
  // GPT-2 training on 2 H100s (tensor parallel): SGD keeps no moments and checkpointing keeps
  // one activation per block, so the same budget with Adam and every activation needs more.
  const auto budget_text = [](const char* extra) {
    return fmt::format(R"({{"budgets": [{{"model": "models/gpt2.json", "devices": ["h100"],
      "batch": 8, "mode": "training", "precision": "bf16", "device_count": 2,
      "tensor_parallel": 2{}, "limits": {{"max_memory": "80GB"}}}}]}})",
                       extra);
  };
  const std::string file = test::data_path("budget.json");
  const std::vector<Budget> lean = parse_budget(
      budget_text(R"(, "optimizer": "sgd", "checkpointing": true, "sparsity": "2:4")"), file);
  const std::vector<Budget> plain = parse_budget(budget_text(""), file);
  REQUIRE(lean.size() == 1);
  const Workload& w = lean[0].request.workload;
  CHECK(w.optimizer == Optimizer::kSgd);
  CHECK(w.checkpointing);
  CHECK(w.sparsity == Sparsity::k2of4);
  CHECK(w.devices == 2);
  CHECK(w.tensor_parallel == 2);

  // The figure the budget gates is estimate()'s for the workload the flags build, exactly.
  WorkloadSpec spec;
  spec.mode = "training";
  spec.precision = "bf16";
  spec.optimizer = "sgd";
  spec.checkpointing = true;
  spec.sparsity = "2:4";
  spec.devices = 2;
  spec.tensor_parallel = 2;
  const Device& h100 = table().get("h100");
  const Graph graph = load_model(lean[0].model_path, lean[0].model_options);
  const Estimate expected =
      estimate(graph, h100, table().performance_for(h100), workload_from(spec));
  const CheckReport lean_report = check_budgets(lean, table());
  const CheckReport plain_report = check_budgets(plain, table());
  REQUIRE(lean_report.results.size() == 1);
  REQUIRE(plain_report.results.size() == 1);
  CHECK(*lean_report.results[0].value == expected.memory.total_bytes);
  // Adam's two fp32 moments and the kept activations: the plain budget needs more memory, and
  // a limit between the two passes the lean one only.
  const double lean_bytes = *lean_report.results[0].value;
  const double plain_bytes = *plain_report.results[0].value;
  REQUIRE(plain_bytes > lean_bytes);
  const std::string between = fmt::format(R"(, "limits": {{"max_memory": "{:.0f}MB"}})",
                                          (lean_bytes + plain_bytes) / 2 / 1e6);
  const auto gate = [&](const char* extra) {
    std::string text = budget_text(extra);
    text.replace(text.find(R"(, "limits")"), std::string::npos, between + "}]}");
    return check_budgets(parse_budget(text, file), table()).results.at(0).passed;
  };
  CHECK(gate(R"(, "optimizer": "sgd", "checkpointing": true, "sparsity": "2:4")"));
  CHECK_FALSE(gate(""));
}

TEST_CASE("a budget's recompute key selects Megatron-Core's recomputed modules", "[budget]") {
  const auto parse = [](const char* recompute) {
    return parse_budget(fmt::format(R"({{"budgets": [{{"model": "m.json", "devices": ["h100"],
      "mode": "training", "recompute": {}, "limits": {{"must_fit": true}}}}]}})",
                                    recompute),
                        "b.json");
  };
  CHECK(parse(R"(["layernorm", "moe_act"])").at(0).request.workload.recompute ==
        (static_cast<unsigned>(RecomputeModule::kLayernorm) |
         static_cast<unsigned>(RecomputeModule::kMoeAct)));
  CHECK_THROWS_WITH(parse(R"(["layernorm", "moe_acts"])"),
                    "b.json:/budgets/0/recompute/1: unknown recompute module \"moe_acts\"; did "
                    "you mean \"moe_act\"?");
  CHECK_THROWS_WITH(parse(R"("mlp")"), ContainsSubstring("b.json:/budgets/0/recompute: "));
}

TEST_CASE("a serving budget's kv_precision stores the KV cache", "[budget][serving]") {
  // GPT-2 serving 8 sequences of 512 + 64 tokens: an fp8 cache is half an fp16 one.
  const auto memory = [](const char* kv) {
    const std::string text = fmt::format(
        R"({{"budgets": [{{"model": "models/gpt2.json", "devices": ["h100"], "batch": 8,
        "precision": "fp16", "prompt_tokens": 512, "output_tokens": 64{},
        "limits": {{"max_memory": "80GB"}}}}]}})",
        kv);
    return *check_budgets(parse_budget(text, test::data_path("budget.json")), table())
                .results.at(0)
                .value;
  };
  CHECK(memory(R"(, "kv_precision": "fp8")") < memory(""));
  // Only serving keeps a cache.
  CHECK_THROWS_WITH(parse_budget(R"({"budgets": [{"model": "m.json", "devices": ["h100"],
                                    "kv_precision": "fp8", "limits": {"must_fit": true}}]})",
                                 "b.json"),
                    "b.json:/budgets/0/kv_precision: \"kv_precision\" sets the KV cache's "
                    "storage: add \"prompt_tokens\" (LLM serving)");
}

TEST_CASE("budget workload keys: unknown ones get a suggestion, replicas or a total", "[budget]") {
  CHECK_THROWS_WITH(parse_budget(R"({"budgets": [{"model": "m.json", "devices": ["h100"],
                                    "optimiser": "sgd", "limits": {"must_fit": true}}]})",
                                 "b.json"),
                    "b.json:/budgets/0/optimiser: unknown key \"optimiser\"; did you mean "
                    "\"optimizer\"?");
  // data_parallel counts replicas of tensor_parallel devices, device_count all of them.
  const auto devices = [](const char* layout) {
    return parse_budget(fmt::format(R"({{"budgets": [{{"model": "m.json", "devices": ["h100"],
                                    {}, "limits": {{"must_fit": true}}}}]}})",
                                    layout),
                        "b.json")
        .at(0)
        .request.workload.devices;
  };
  CHECK(devices(R"("data_parallel": 4, "tensor_parallel": 2)") == 8);
  CHECK(devices(R"("device_count": 8, "tensor_parallel": 2)") == 8);
  CHECK_THROWS_WITH(devices(R"("device_count": 8, "data_parallel": 4)"),
                    "b.json:/budgets/0/data_parallel: give \"device_count\" (devices in all) or "
                    "\"data_parallel\" (replicas), not both");
  CHECK_THROWS_WITH(devices(R"("device_count": 6, "tensor_parallel": 4)"),
                    "b.json:/budgets/0/tensor_parallel: \"device_count\" 6 is not a multiple of "
                    "\"tensor_parallel\" 4");
  // A run is dataset_size [x epochs] or tokens: epochs with tokens is refused in any mode.
  CHECK_THROWS_WITH(devices(R"("tokens": 1e9, "epochs": 2)"),
                    "b.json:/budgets/0/epochs: \"epochs\" needs \"dataset_size\", not "
                    "\"tokens\"");
}
