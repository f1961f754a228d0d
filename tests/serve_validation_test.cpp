// The serving validation set's reader and summary (serve_validation.hpp).
#include "capcalc/serve_validation.hpp"

#include <string>

#include "catch.hpp"

using namespace capcalc;

namespace {

std::string one_case(const std::string& metric, const std::string& slo) {
  return R"({"schema_version": 1, "cases": [{"id": "a", "runtime": "vllm",
    "model": "llama3_8b.json", "device": "h100-sxm", "devices": 2, "tensor_parallel": 1,
    "precision": "fp8", "prompt_tokens": 128, "output_tokens": 256, "requests": 100,
    "slo": )" +
         slo + R"(, "metric": ")" + metric + R"(", "value": 1000, "unit": "tokens/s",
    "per": "total", "software": "x", "source": "https://example.com", "quote": "1000"}]})";
}

}  // namespace

TEST_CASE("serve validation: cases are read with their SLO and metric", "[serve][validation]") {
  const auto cases = parse_serving_cases(one_case("output_tokens_per_s", "\"ttft_p99=2s\""), "v");
  REQUIRE(cases.size() == 1);
  CHECK(cases[0].devices == 2);
  CHECK(cases[0].slo == "ttft_p99=2s");
  CHECK(cases[0].where.pointer == "/cases/0");
  CHECK(parse_serving_cases(one_case("requests_per_s", "null"), "v")[0].slo.empty());
  // The batch limits a benchmark tool set (trtllm-bench's), where the case gives them.
  CHECK_FALSE(cases[0].max_num_batched_tokens);
  std::string text = one_case("requests_per_s", "null");
  text.insert(text.find("\"id\""), "\"max_num_seqs\": 96, \"max_num_batched_tokens\": 5096, ");
  const auto limited = parse_serving_cases(text, "v");
  CHECK(limited[0].max_num_seqs == 96);
  CHECK(limited[0].max_num_batched_tokens == 5096);
  text = one_case("requests_per_s", "null");
  text.insert(text.find("\"id\""), "\"max_num_batched_tokens\": 0, ");
  CHECK_THROWS_WITH(parse_serving_cases(text, "v.json"),
                    ContainsSubstring("v.json:/cases/0/max_num_batched_tokens:"));
}

TEST_CASE("serve validation: bad cases name the file and pointer", "[serve][validation][errors]") {
  CHECK_THROWS_WITH(parse_serving_cases(one_case("tokens", "null"), "v.json"),
                    ContainsSubstring("v.json:/cases/0/metric: unknown metric \"tokens\""));
  // The file's own key, not the CLI's flag: "slo", never "--slo".
  CHECK_THROWS_WITH(parse_serving_cases(one_case("requests_per_s", "\"ttft_p99=2\""), "v.json"),
                    "v.json:/cases/0/slo: slo ttft_p99: 2 has no unit: write 2ms or 2s");
}

TEST_CASE("serve validation: unknown keys are errors with a suggestion",
          "[serve][validation][errors]") {
  std::string text = one_case("requests_per_s", "null");
  text.insert(text.find("\"id\""), "\"held_ot\": true, ");
  CHECK_THROWS_WITH(parse_serving_cases(text, "v.json"),
                    "v.json:/cases/0/held_ot: unknown key \"held_ot\" in a serving case; did you "
                    "mean \"held_out\"?");
  text = one_case("requests_per_s", "null");
  text.insert(text.find("\"cases\""), "\"coment\": \"x\", ");
  CHECK_THROWS_WITH(parse_serving_cases(text, "v.json"),
                    "v.json:/coment: unknown key \"coment\" in a serving validation file; did you "
                    "mean \"comment\"?");
  // Free text must be text, as in every other capcalc file.
  text = one_case("requests_per_s", "null");
  text.insert(text.find("\"id\""), "\"notes\": 3, ");
  CHECK_THROWS_WITH(parse_serving_cases(text, "v.json"),
                    "v.json:/cases/0/notes: expected a string, got a number");
}

TEST_CASE("serve validation: the metric of a run and the summary", "[serve][validation]") {
  ServeResult r;
  r.output_tokens_per_s = 300;
  r.input_tokens_per_s = 100;
  r.requests_per_s = 2;
  CHECK(serving_metric(r, "output_tokens_per_s") == 300);
  CHECK(serving_metric(r, "total_tokens_per_s") == 400);
  CHECK(serving_metric(r, "requests_per_s") == 2);

  // Predicted / measured: 1.1, 0.5 and 3: |errors| 0.1, 0.5, 2 (median 0.5); worst 3x; two of
  // three within 2x (0.5 is exactly 2x).
  ServingCase a, b, c;
  a.value = b.value = c.value = 100;
  c.held_out = true;
  const ServingSummary s = summarize_serving({{&a, 110}, {&b, 50}, {&c, 300}});
  CHECK(s.median_abs_error == Approx(0.5));
  CHECK(s.worst_factor == Approx(3));
  CHECK(s.within_2x == 2);
  CHECK(s.held_out == 1);
  CHECK(s.held_out_median_abs_error == Approx(2));
  CHECK_THAT(render_serving_validation_text(s),
             ContainsSubstring("3 cases: median |error| 50.0 %, worst 3.00x, 2 within 2x"));
}
