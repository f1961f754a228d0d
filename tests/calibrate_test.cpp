// calibrate: records made with known, slower parameters must be fitted back.
#include "capcalc/calibrate.hpp"

#include "capcalc/model.hpp"
#include "capcalc/predict.hpp"

#include "catch.hpp"
#include "test_data.hpp"

using namespace capcalc;

namespace {

Measurement record(const std::string& id, std::int64_t batch, bool training, double value) {
  Measurement m;
  m.id = id;
  m.model = "resnet50.json";
  m.dims["batch"] = batch;
  m.device = "A100";
  m.workload.precision = Precision::kFp16;
  m.workload.mode = training ? Mode::kTraining : Mode::kInference;
  m.workload.profile = Profile::kEager;
  m.metric = Metric::kThroughput;
  m.value = value;
  return m;
}

// What the A100 would measure if its efficiencies were `scale` times the table's and its
// floors `floor` / scale times: the "truth" the fit should find.
double truth(const HardwareTable& table, std::int64_t batch, bool training, double scale,
             double floor = 1) {
  const Device& d = table.get("A100");
  PerformanceParams p = table.performance_for(d);
  p.matrix_efficiency *= scale;
  p.vector_efficiency *= scale;
  p.memory_efficiency *= scale;
  p.eager_overhead_s *= floor / scale;
  p.compiled_overhead_s *= floor / scale;
  p.graph_overhead_s *= floor / scale;  // eager backward kernels run at the graph floor
  ModelOptions options;
  options.dims["batch"] = batch;
  const Graph g = load_model(test::data_path("models/resnet50.json"), options);
  Workload w;
  w.precision = Precision::kFp16;
  w.mode = training ? Mode::kTraining : Mode::kInference;
  w.profile = Profile::kEager;
  return estimate(g, d, p, w).throughput_per_s;
}

}  // namespace

TEST_CASE("calibrate recovers a device's speed from its records", "[calibrate]") {
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  const double scale = 0.6;
  const std::vector<Measurement> records = {
      record("train-64", 64, true, truth(table, 64, true, scale)),
      record("train-256", 256, true, truth(table, 256, true, scale)),
      record("infer-1", 1, false, truth(table, 1, false, scale)),
      record("infer-128", 128, false, truth(table, 128, false, scale)),
  };
  const CalibrationResult result = calibrate(records, table, test::data_path("models"));
  REQUIRE(result.fits.size() == 1);
  const CalibrationFit& fit = result.fits[0];
  CHECK(fit.device_id == "a100-sxm4-80gb");
  CHECK(fit.records == 4);
  // Every record is reproduced, and the efficiencies are the scaled ones.
  CHECK(result.before.median_abs_error > 0.3);
  CHECK(result.after.median_abs_error < 0.01);
  CHECK(result.after.worst_factor < 1.01);
  const PerformanceParams base = table.performance_for(table.get("A100"));
  CHECK(*fit.fitted.matrix_efficiency == Approx(base.matrix_efficiency * scale).epsilon(0.01));
  CHECK(*fit.fitted.memory_efficiency == Approx(base.memory_efficiency * scale).epsilon(0.01));
  CHECK(*fit.fitted.eager_overhead_s == Approx(base.eager_overhead_s / scale).epsilon(0.01));
  CHECK(fit.speed_factor == Approx(scale).epsilon(0.01));
  CHECK(fit.floor_factor == Approx(1).epsilon(0.02));
}

TEST_CASE("calibrate tells the per-kernel floor apart from the speed", "[calibrate]") {
  // A device 0.7x as efficient whose floors are 2.5x longer again: small batches suffer
  // more than large ones, which one speed factor cannot reproduce.
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  const double scale = 0.7, floor = 2.5;
  const std::vector<Measurement> records = {
      record("infer-1", 1, false, truth(table, 1, false, scale, floor)),
      record("infer-8", 8, false, truth(table, 8, false, scale, floor)),
      record("infer-256", 256, false, truth(table, 256, false, scale, floor)),
  };
  const CalibrationResult result = calibrate(records, table, test::data_path("models"));
  REQUIRE(result.fits.size() == 1);
  const CalibrationFit& fit = result.fits[0];
  CHECK(fit.floor_factor == Approx(floor).epsilon(0.02));
  CHECK(fit.speed_factor == Approx(scale).epsilon(0.02));
  CHECK(result.after.worst_factor < 1.01);
  const PerformanceParams base = table.performance_for(table.get("A100"));
  CHECK(*fit.fitted.eager_overhead_s ==
        Approx(base.eager_overhead_s * floor / scale).epsilon(0.03));
}

TEST_CASE("calibrate leaves the floor alone with a single record", "[calibrate]") {
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  const std::vector<Measurement> records = {record("one", 1, false, 300)};
  const CalibrationResult result = calibrate(records, table, test::data_path("models"));
  REQUIRE(result.fits.size() == 1);
  CHECK(result.fits[0].floor_factor == 1);
  CHECK(result.after.worst_factor < 1.01);
}

TEST_CASE("calibrate's hardware file loads back and carries the fit", "[calibrate]") {
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  const std::vector<Measurement> records = {record("one", 256, true, 1000)};
  const CalibrationResult result = calibrate(records, table, test::data_path("models"));
  const Device* fitted = result.calibrated.find("a100-sxm4-80gb");
  REQUIRE(fitted != nullptr);
  const HardwareTable reloaded = parse_hardware(render_hardware_file({fitted}), "cal.json");
  REQUIRE(reloaded.devices.size() == 1);
  const Device& d = reloaded.devices[0];
  CHECK(d.id == "a100-sxm4-80gb");
  CHECK(d.memory_bandwidth_bytes_per_s == Approx(fitted->memory_bandwidth_bytes_per_s));
  CHECK(d.peak(Precision::kFp16).matrix_flops_per_s ==
        Approx(fitted->peak(Precision::kFp16).matrix_flops_per_s));
  CHECK(*d.performance.matrix_efficiency == Approx(*fitted->performance.matrix_efficiency));
  CHECK(d.sources == fitted->sources);
  CHECK(d.cache_bytes == Approx(fitted->cache_bytes));
  CHECK(d.compute_units == fitted->compute_units);  // 108 SMs at 1410 MHz in the built-in table.
  CHECK(d.compute_unit_name == fitted->compute_unit_name);
  CHECK(d.boost_clock_hz == Approx(fitted->boost_clock_hz));
  // Merged on top of the built-in table, the estimate reproduces the record.
  HardwareTable merged = table;
  merge_hardware(merged, reloaded);
  const ValidationSummary check = validate(records, merged, test::data_path("models"));
  CHECK(check.results[0].ratio == Approx(1).epsilon(0.005));
}

// A device's sustained matrix clocks survive the hardware file calibrate writes (MI300X's, from
// AMD's max-achievable FLOPS measurements), so that a calibrated MI300X keeps them.
TEST_CASE("calibrate's hardware file keeps the sustained matrix clocks", "[calibrate]") {
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  const Device& mi300x = table.get("mi300x");
  REQUIRE(mi300x.matrix_clock_fraction(Precision::kFp8) == Approx(1230.0 / 2100));
  const HardwareTable reloaded = parse_hardware(render_hardware_file({&mi300x}), "cal.json");
  REQUIRE(reloaded.devices.size() == 1);
  CHECK(reloaded.devices[0].sustained_matrix_clock_hz == mi300x.sustained_matrix_clock_hz);
}

// A batch-1 ResNet-50 on an A100 is all per-kernel floor in the model (174 eager kernels at
// the floor, each far longer than its work): a record of it says how fast the host launches
// kernels, not how fast the device computes. Its fit moves the floors only (was: one 7.5 ms
// record raised the efficiencies to 84/100/97 %).
TEST_CASE("calibrate: a record that is all floor moves the floor, not the efficiencies",
          "[calibrate]") {
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  const PerformanceParams base = table.performance_for(table.get("A100"));
  const std::vector<Measurement> records = {record("batch-1", 1, false, 1 / 7.5e-3)};
  const CalibrationResult result = calibrate(records, table, test::data_path("models"));
  REQUIRE(result.fits.size() == 1);
  const CalibrationFit& fit = result.fits[0];
  CHECK(fit.floors_only);
  CHECK(fit.host_share >= 0.9);
  CHECK(*fit.fitted.matrix_efficiency == base.matrix_efficiency);
  CHECK(*fit.fitted.vector_efficiency == base.vector_efficiency);
  CHECK(*fit.fitted.memory_efficiency == base.memory_efficiency);
  // Faster than predicted: shorter floors, by about the ratio of the times.
  const double predicted_s = 1 / result.before.results[0].predicted;
  CHECK(*fit.fitted.eager_overhead_s ==
        Approx(base.eager_overhead_s * 7.5e-3 / predicted_s).epsilon(0.05));
  CHECK(result.after.worst_factor < 1.01);
  REQUIRE(result.warnings.size() == 1);
  CHECK_THAT(result.warnings[0], ContainsSubstring("only the floor was fitted"));
}

TEST_CASE("calibrate: a single record that is not all floor fits the speed, with a warning",
          "[calibrate]") {
  const HardwareTable table = load_hardware(test::data_path("hardware.json"));
  const std::vector<Measurement> records = {
      record("train-256", 256, true, truth(table, 256, true, 0.8))};
  const CalibrationResult result = calibrate(records, table, test::data_path("models"));
  REQUIRE(result.fits.size() == 1);
  CHECK_FALSE(result.fits[0].floors_only);
  CHECK(result.fits[0].host_share < 0.9);
  CHECK(result.fits[0].speed_factor == Approx(0.8).epsilon(0.05));
  REQUIRE(result.warnings.size() == 1);
  CHECK_THAT(result.warnings[0], ContainsSubstring("one record decides the whole fit"));
}

TEST_CASE("calibrate: a user's records need no source, the validation set's do", "[calibrate]") {
  const std::string records = R"({"schema_version": 1, "cases": [{"id": "mine",
    "model": "resnet50.json", "dims": {"batch": 8}, "device": "A100", "precision": "fp16",
    "mode": "inference", "metric": "throughput_per_s", "value": 900, "per": "device"}]})";
  CHECK(parse_measurements(records, "mine.json", Provenance::kOptional).size() == 1);
  CHECK_THROWS_WITH(parse_measurements(records, "mine.json"),
                    ContainsSubstring("mine.json:/cases/0"));
}
