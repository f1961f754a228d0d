// Fitting a device's efficiency from a user's own measurements ("an AI capacity table").
//
// The records use the measurement format of data/validation (model, dims, device, precision,
// mode, profile, metric, value). For each device two factors are fitted:
// - a speed factor f, so that the geometric mean of predicted / measured speed is 1: the
//   device's efficiencies are divided by f (capped at 1) and its per-kernel floors multiplied
//   by f, repeated until it settles;
// - with two or more records, a floor factor on the per-kernel floors alone (golden-section
//   search on its log, 1/30 to 30, with a faint pull towards 1), chosen to minimise the sum of
//   squared log errors. Records of different batch sizes tell the two apart: the floor weighs
//   on small batches, the efficiencies on large ones.
// Where every record of a device is at least 90 % per-kernel floor (batch 1 of a small model),
// the records say nothing of the device's speed: the speed factor moves the floors alone.
// The result is a hardware file whose entries replace the built-in ones (`--hardware-file`).
#pragma once

#include <string>
#include <vector>

#include "capcalc/hardware.hpp"
#include "capcalc/validate.hpp"

namespace capcalc {

/// The fit for one device.
struct CalibrationFit {
  std::string device_id;
  std::size_t records = 0;
  double speed_factor = 1;  ///< Fitted: measured speed / predicted speed before the fit.
  double floor_factor = 1;  ///< Fitted: the per-kernel floors' extra factor (1 with one record).
  /// The smallest share of a record's predicted time that is per-kernel floor.
  double host_share = 0;
  /// Every record is at least 90 % floor: only the floors were fitted (by speed_factor), the
  /// efficiencies kept as the table has them.
  bool floors_only = false;
  PerformanceOverride fitted;
};

struct CalibrationResult {
  std::vector<CalibrationFit> fits;
  ValidationSummary before;           ///< The records against the table as given.
  ValidationSummary after;            ///< Against the calibrated devices.
  HardwareTable calibrated;           ///< The input table with the fitted overrides applied.
  std::vector<std::string> warnings;  ///< Fits the records cannot support well, one line each.
};

/// Fits every device that has records. `records` must outlive the result (summaries point
/// into it). `runtimes` resolves the records that name a runtime (validate()'s rule).
CalibrationResult calibrate(const std::vector<Measurement>& records, const HardwareTable& table,
                            const std::string& models_dir, const RuntimeTable* runtimes = nullptr);

/// A hardware file (schema_version 1) holding `devices`, in the table's units, with their
/// performance overrides: what `capcalc calibrate -o` writes.
std::string render_hardware_file(const std::vector<const Device*>& devices);

}  // namespace capcalc
