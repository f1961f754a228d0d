#include "capcalc/calibrate.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace capcalc {
namespace {

constexpr int kMaxIterations = 20;
constexpr double kTolerance = 1e-4;  // |log f| at which the fit has settled.
// The per-kernel floor factor is searched (golden section on its log) within these bounds.
constexpr double kMinFloorFactor = 1.0 / 30;
constexpr double kMaxFloorFactor = 30;
constexpr int kFloorSteps = 40;
constexpr double kFloorPull = 1e-6;
// Records this much per-kernel floor (or more) fit the floor only.
constexpr double kFloorOnlyShare = 0.9;

// How much faster the prediction is than the measurement (> 1: predicted too fast).
double predicted_speedup(const ValidationResult& r) {
  const Metric metric = r.measurement->metric;
  const bool time_like = is_time_metric(metric);
  return time_like ? 1 / r.ratio : r.ratio;
}

Device* find_mutable(HardwareTable& table, const std::string& id) {
  for (Device& d : table.devices) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

struct SpeedFit {
  double speed_factor = 1;  // measured / predicted speed, before the fit
  double log_error = 0;     // sum of squared log(predicted / measured speed) after it
};

// Sets `device`'s overrides to `base` with its per-kernel floors times `floor_factor`, then
// fits one speed factor f so that the geometric mean of predicted / measured speed is 1:
// efficiencies divided by f (capped at 1), floors multiplied by f, until it settles.
// With `floors_only`, f moves the floors alone and the efficiencies stay as given.
SpeedFit fit_speed(const std::vector<Measurement>& own, const HardwareTable& table, Device& device,
                   PerformanceParams params, double floor_factor, const std::string& models_dir,
                   const RuntimeTable* runtimes, ModelCache& cache, bool floors_only = false) {
  params.eager_overhead_s *= floor_factor;
  params.compiled_overhead_s *= floor_factor;
  params.graph_overhead_s *= floor_factor;
  SpeedFit fit;
  for (int iteration = 0; iteration < kMaxIterations; ++iteration) {
    device.performance = {params.matrix_efficiency,   params.vector_efficiency,
                          params.memory_efficiency,   params.eager_overhead_s,
                          params.compiled_overhead_s, params.graph_overhead_s};
    const ValidationSummary now = validate(own, table, models_dir, runtimes, &cache);
    double log_sum = 0;
    fit.log_error = 0;
    for (const ValidationResult& r : now.results) {
      const double l = std::log(predicted_speedup(r));
      log_sum += l;
      fit.log_error += l * l;
    }
    const double f = std::exp(log_sum / static_cast<double>(now.results.size()));
    if (std::fabs(std::log(f)) < kTolerance) break;
    fit.speed_factor /= f;
    if (!floors_only) {
      params.matrix_efficiency = std::min(1.0, params.matrix_efficiency / f);
      params.vector_efficiency = std::min(1.0, params.vector_efficiency / f);
      params.memory_efficiency = std::min(1.0, params.memory_efficiency / f);
    }
    params.eager_overhead_s *= f;
    params.compiled_overhead_s *= f;
    params.graph_overhead_s *= f;
  }
  return fit;
}

// The floor factor's objective: the fit error plus a small pull towards 1, so that records
// which cannot tell the floor apart (all of one shape) leave it as the table has it.
double penalised(const SpeedFit& fit, double log_floor) {
  return fit.log_error + kFloorPull * log_floor * log_floor;
}

// The share of each record's predicted time that is per-kernel floor: how much the time grows
// when the floors double (a layer held by its floor doubles; one held by compute or memory does
// not move until the floor passes it).
std::vector<double> host_shares(const std::vector<Measurement>& own, const HardwareTable& table,
                                Device& device, const PerformanceParams& base,
                                const std::string& models_dir, const RuntimeTable* runtimes,
                                ModelCache& cache) {
  const auto times = [&](double floor_factor) {
    device.performance = {base.matrix_efficiency,
                          base.vector_efficiency,
                          base.memory_efficiency,
                          base.eager_overhead_s * floor_factor,
                          base.compiled_overhead_s * floor_factor,
                          base.graph_overhead_s * floor_factor};
    std::vector<double> t;
    for (const ValidationResult& r : validate(own, table, models_dir, runtimes, &cache).results)
      t.push_back(1 / predicted_speedup(r));  // Proportional to the predicted time.
    return t;
  };
  const std::vector<double> once = times(1);
  const std::vector<double> twice = times(2);
  std::vector<double> shares;
  for (std::size_t i = 0; i < once.size(); ++i)
    shares.push_back(std::clamp(twice[i] / once[i] - 1, 0.0, 1.0));
  return shares;
}

}  // namespace

CalibrationResult calibrate(const std::vector<Measurement>& records, const HardwareTable& table,
                            const std::string& models_dir, const RuntimeTable* runtimes) {
  CalibrationResult result;
  result.calibrated = table;
  // The fit validates the same records a few hundred times with only the device's parameters
  // changing: each model is read and expanded once.
  ModelCache cache;
  result.before = validate(records, table, models_dir, runtimes, &cache);

  // Records per device (by id, whatever name the record used).
  std::vector<std::string> ids;
  for (const Measurement& m : records) {
    const std::string id = measured_device(m, table).id;
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  for (const std::string& id : ids) {
    std::vector<Measurement> own;
    for (const Measurement& m : records) {
      if (measured_device(m, table).id == id) own.push_back(m);
    }
    Device& device = *find_mutable(result.calibrated, id);
    const PerformanceParams base = result.calibrated.performance_for(device);
    CalibrationFit fit;
    fit.device_id = id;
    fit.records = own.size();
    // Records whose predicted time is nearly all per-kernel floor (batch 1, small models) say
    // how long the host takes to launch kernels, nothing of the device's speed: they move the
    // floor alone.
    const std::vector<double> shares =
        host_shares(own, result.calibrated, device, base, models_dir, runtimes, cache);
    fit.host_share = *std::min_element(shares.begin(), shares.end());
    fit.floors_only = fit.host_share >= kFloorOnlyShare;
    const auto at = [&](double floor_factor) {
      return fit_speed(own, result.calibrated, device, base, floor_factor, models_dir, runtimes,
                       cache, fit.floors_only);
    };
    // The floor factor only where records can tell it apart from the speed: two or more.
    double floor_factor = 1;
    if (own.size() >= 2 && !fit.floors_only) {
      double lo = std::log(kMinFloorFactor), hi = std::log(kMaxFloorFactor);
      const double golden = (std::sqrt(5.0) - 1) / 2;
      double a = hi - golden * (hi - lo), b = lo + golden * (hi - lo);
      double fa = penalised(at(std::exp(a)), a), fb = penalised(at(std::exp(b)), b);
      for (int step = 0; step < kFloorSteps; ++step) {
        if (fa < fb) {
          hi = b, b = a, fb = fa;
          a = hi - golden * (hi - lo);
          fa = penalised(at(std::exp(a)), a);
        } else {
          lo = a, a = b, fa = fb;
          b = lo + golden * (hi - lo);
          fb = penalised(at(std::exp(b)), b);
        }
      }
      floor_factor = std::exp((lo + hi) / 2);
    }
    const SpeedFit best = at(floor_factor);
    fit.speed_factor = best.speed_factor;
    fit.floor_factor = floor_factor;
    fit.fitted = device.performance;
    if (fit.floors_only) {
      result.warnings.push_back(fmt::format(
          "{}: {} of its predicted time is the per-kernel floor in every record ({} record{}): "
          "only the floor was fitted, the efficiencies kept; a large-batch record would fit them",
          id, fmt::format("{:.0f} %", 100 * fit.host_share), own.size(),
          own.size() == 1 ? "" : "s"));
    } else if (own.size() == 1) {
      result.warnings.push_back(fmt::format(
          "{}: one record decides the whole fit; records at several batch sizes tell the "
          "device's speed from its per-kernel floor",
          id));
    }
    result.fits.push_back(fit);
  }
  result.after = validate(records, result.calibrated, models_dir, runtimes, &cache);
  return result;
}

}  // namespace capcalc
