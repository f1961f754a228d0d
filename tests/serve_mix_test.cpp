// The mix file reader (`serve --mix`): what it takes, where its errors point.
#include "capcalc/serve_mix.hpp"

#include <string>

#include "catch.hpp"
#include "test_data.hpp"

using namespace capcalc;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_mix(text, "mix.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("serve mix: a mix file's workloads, with serve's defaults", "[serve][mix]") {
  const Mix mix = parse_mix(R"({"schema_version": 1, "devices": ["h100", "l4"],
    "workloads": [
      {"name": "chat", "model": "llama3_8b", "rate": "20/s", "slo": "ttft_p99=500ms",
       "prompt_tokens": "uniform:500..1500", "output_tokens": 100, "tensor_parallel": [1, 2]},
      {"name": "vision", "model": "resnet50", "rate": "300/s", "slo": "e2e_p99=40ms",
       "devices": ["t4"], "max_batch": 16, "max_queue_delay": "2ms", "requests": 500}]})",
                            "mix.json");
  CHECK(mix.devices == std::vector<std::string>{"h100", "l4"});
  CHECK(mix.hours_per_month == 730);
  CHECK(mix.max_replicas == 1024);
  REQUIRE(mix.workloads.size() == 2);
  const MixWorkload& chat = mix.workloads[0];
  CHECK(chat.rate_per_s == 20);
  CHECK(chat.model == "llama3_8b");  // No such file beside mix.json: a zoo name.
  CHECK(chat.prompt_tokens == "uniform:500..1500");
  CHECK(chat.output_tokens == "100");
  CHECK(chat.tensor_parallel == std::vector<std::int64_t>{1, 2});
  CHECK(chat.devices.empty());
  CHECK(chat.requests == 2000);
  CHECK(chat.where.pointer == "/workloads/0");
  const MixWorkload& vision = mix.workloads[1];
  CHECK(vision.devices == std::vector<std::string>{"t4"});
  CHECK(vision.max_batch == 16);
  CHECK(vision.max_queue_delay == "2ms");
  CHECK(vision.requests == 500);
}

TEST_CASE("serve mix: a model file is found beside the mix file", "[serve][mix]") {
  const std::string dir = std::string(CAPCALC_TEST_DIR) + "/cli/";
  const Mix mix = parse_mix(R"({"schema_version": 1, "devices": ["t4"], "workloads": [
      {"name": "a", "model": "serve_mix.json", "rate": "1/s", "slo": "e2e_p99=1s"}]})",
                            dir + "mix.json");
  CHECK(mix.workloads[0].model == dir + "serve_mix.json");
}

TEST_CASE("serve mix: errors name the place", "[serve][mix]") {
  const std::string head = R"({"schema_version": 1, "devices": ["h100"], "workloads": [)";
  const std::string chat = R"({"name": "chat", "model": "m", "rate": "20/s", "slo": "ttft_p99=1s")";
  CHECK(error_of(head + chat + R"(, "rate": "20"}]})") ==
        "mix.json:1:127: duplicate key \"rate\" in the object at /workloads/0");
  CHECK(
      error_of(head + R"({"name": "chat", "model": "m", "rate": "20", "slo": "ttft_p99=1s"}]})") ==
      "mix.json:/workloads/0/rate: 20 has no unit: write 20/s or 20/min");
  CHECK(
      error_of(head + R"({"name": "chat", "model": "m", "rate": "2/s", "slo": "ttft_p99=1"}]})") ==
      "mix.json:/workloads/0/slo: slo ttft_p99: 1 has no unit: write 1ms or 1s");
  CHECK(error_of(head + chat + "}, " + chat + "}]}") ==
        "mix.json:/workloads/1/name: the name \"chat\" is used twice");
  CHECK(error_of(head + chat + R"(, "output_tokens": 5}]})") ==
        "mix.json:/workloads/0/output_tokens: output_tokens needs prompt_tokens (an LLM)");
  CHECK(error_of(head + chat + R"(, "prompt_tokens": 5, "max_batch": 8}]})") ==
        "mix.json:/workloads/0: max_batch, preferred_batch and max_queue_delay set Triton's "
        "dynamic batcher: an LLM (prompt_tokens) is served by continuous batching");
  CHECK(error_of(R"({"schema_version": 1, "workloads": [)" + chat + "}]}") ==
        "mix.json:/workloads/0: no devices to try: give the workload \"devices\" or the mix a "
        "\"devices\" list");
  CHECK(error_of(head + "]}") == "mix.json:/workloads: no workloads: a mix needs one");
  CHECK(error_of(R"({"schema_version": 1, "hours_per_month": 800, "devices": ["a"],
    "workloads": [)" +
                 chat + "}]}") ==
        "mix.json:/hours_per_month: a month has at most 744 hours (31 days)");
}
