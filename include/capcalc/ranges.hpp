// Prediction ranges: how far measured times have fallen from capcalc's predictions, per class of
// prediction (the runtime's profile x the bound that takes most of the time x the device
// type). `capcalc validate --write-ranges` derives them from the validation sets' residuals;
// estimates then print each time and rate with the range that covers the middle 80 % of the
// measured cases of its class (data/ranges.json says how it was made).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "capcalc/hardware.hpp"
#include "capcalc/predict.hpp"

namespace capcalc {

/// What a prediction's range is drawn from.
struct PredictionClass {
  Profile profile = Profile::kEager;
  Bound bound = Bound::kCompute;  ///< The bound of the largest share of the layer time.
  DeviceType device_type = DeviceType::kGpu;
};

/// "eager/overhead/gpu".
std::string class_key(const PredictionClass& cls);

/// The bound that takes the largest share of an estimate's layer time (compute when none).
Bound dominant_bound(const Estimate& estimate);

/// A predicted time t is measured within [t x low, t x high] in `coverage` of the `cases` of
/// its class (a rate r within [r / high, r / low]).
struct PredictionRange {
  double low = 1;
  double high = 1;
  std::size_t cases = 0;
  std::string key;         ///< The class, or "all" for the overall range.
  bool validated = false;  ///< False: the class has too few cases; the overall range.
};

/// Ranges per class and overall.
struct RangeTable {
  double coverage = 0.8;      ///< Of the cases inside each range.
  std::size_t min_cases = 5;  ///< Fewer in a class: the overall range.
  std::string made_from;      ///< The measurement files, as given.
  std::map<std::string, PredictionRange> classes;
  PredictionRange overall;

  /// The class's range, or the overall one where the class has too few cases.
  PredictionRange range_for(const PredictionClass& cls) const;
};

/// One validated case: its class and measured time over predicted time (for a rate metric,
/// predicted rate over measured rate).
struct Residual {
  PredictionClass cls;
  double time_ratio = 1;
};

/// The 10th-90th percentile ranges (for coverage 0.8) of the residuals, per class and overall.
RangeTable derive_ranges(const std::vector<Residual>& residuals, double coverage,
                         std::size_t min_cases, std::string made_from);

/// Reads and writes the ranges file (data/ranges.json); problems are capcalc::Error with file
/// and JSON pointer.
RangeTable parse_ranges(std::string_view text, const std::string& file);
RangeTable load_ranges(const std::string& path);
std::string render_ranges_json(const RangeTable& table);

}  // namespace capcalc
