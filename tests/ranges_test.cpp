// Prediction ranges: percentiles of the validation residuals per class, checked by hand.
#include "capcalc/ranges.hpp"

#include <string>
#include <vector>

#include "capcalc/error.hpp"

#include "catch.hpp"

using namespace capcalc;

namespace {

const PredictionClass kEagerGpu{Profile::kEager, Bound::kHost, DeviceType::kGpu};
const PredictionClass kCompiledTpu{Profile::kCompiled, Bound::kCompute, DeviceType::kTpu};

}  // namespace

// Eleven residuals 0.5, 0.6, ..., 1.5 of one class: the 10th percentile is the 2nd value (0.6)
// and the 90th the 10th (1.4), by linear interpolation between order statistics (position
// q x (n - 1) = 1 and 9). Three residuals of another class are too few (5 needed): that class
// takes the overall range of all 14.
TEST_CASE("ranges: the middle 80 % of a class's residuals, else the overall range", "[ranges]") {
  std::vector<Residual> residuals;
  for (int i = 0; i <= 10; ++i)
    residuals.push_back({kEagerGpu, 0.5 + 0.1 * i});
  for (double r : {2.0, 3.0, 4.0})
    residuals.push_back({kCompiledTpu, r});
  const RangeTable table = derive_ranges(residuals, 0.8, 5, "test");
  REQUIRE(table.classes.count("eager/host/gpu") == 1);
  CHECK(table.classes.count("compiled/compute/tpu") == 0);
  const PredictionRange eager = table.range_for(kEagerGpu);
  CHECK(eager.validated);
  CHECK(eager.cases == 11);
  CHECK(eager.low == Approx(0.6));
  CHECK(eager.high == Approx(1.4));
  // All 14 sorted: 0.5 ... 1.5, 2, 3, 4. Position 0.1 x 13 = 1.3: 0.6 + 0.3 x 0.1 = 0.63;
  // 0.9 x 13 = 11.7: 2 + 0.7 x (3 - 2) = 2.7.
  const PredictionRange tpu = table.range_for(kCompiledTpu);
  CHECK_FALSE(tpu.validated);
  CHECK(tpu.cases == 14);
  CHECK(tpu.low == Approx(0.63));
  CHECK(tpu.high == Approx(2.7));
  CHECK(class_key(kCompiledTpu) == "compiled/compute/tpu");
}

TEST_CASE("ranges: the file round-trips and bad values are located", "[ranges][errors]") {
  std::vector<Residual> residuals;
  for (int i = 0; i < 6; ++i)
    residuals.push_back({kEagerGpu, 1.0 + 0.1 * i});
  const RangeTable table = derive_ranges(residuals, 0.8, 5, "a.json");
  const RangeTable back = parse_ranges(render_ranges_json(table), "ranges.json");
  CHECK(back.range_for(kEagerGpu).low == Approx(table.range_for(kEagerGpu).low));
  CHECK(back.range_for(kEagerGpu).high == Approx(table.range_for(kEagerGpu).high));
  CHECK(back.made_from == "a.json");
  REQUIRE_THROWS_WITH(parse_ranges(R"({"schema_version": 1, "coverage": 0.8, "min_cases": 5,
        "overall": {"low": 2, "high": 1, "cases": 3}, "classes": {}})",
                                   "ranges.json"),
                      "ranges.json:/overall/high: high is below low");
  REQUIRE_THROWS_WITH(parse_ranges(R"({"schema_version": 1, "coverage": 1.5, "min_cases": 5,
        "overall": {"low": 1, "high": 2, "cases": 3}, "classes": {}})",
                                   "ranges.json"),
                      "ranges.json:/coverage: expected a fraction below 1");
}

// The dominant bound is the bound of the largest share of the layer time.
TEST_CASE("ranges: an estimate's class is its bound of most time", "[ranges]") {
  Estimate e;
  LayerEstimate compute;
  compute.bound = Bound::kCompute;
  compute.time_s = 1;
  LayerEstimate overhead;
  overhead.bound = Bound::kHost;
  overhead.time_s = 0.6;
  e.layers = {compute, overhead, overhead};
  CHECK(dominant_bound(e) == Bound::kHost);
  e.layers = {compute, overhead};
  CHECK(dominant_bound(e) == Bound::kCompute);
}
