// Pieces shared by the renderers of one estimate (private): the text, the explanation, the
// JSON and the layer table each read the same ReportInput, and derive these figures from it
// the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/ranges.hpp"
#include "capcalc/report.hpp"

namespace capcalc {

/// `value` / `batch` as a double.
double per_sample(std::int64_t value, std::int64_t batch);
/// Bytes a layer moves at the workload's precision (activations and weights may differ).
double layer_bytes(const LayerCounts& c, Precision precision);
/// A whole number of steps or kernels, digits grouped ("1,024"); past 1e15 with an SI prefix.
std::string whole_count(double n);
/// "12.5 %" for 0.125.
std::string percent(double fraction);
/// ", prompt 512 + 128 generated tokens" when serving, ", seq 1,024" for a language model's
/// pass over whole sequences, "" for other models.
std::string context_text(const ReportInput& in);
/// The peak the model's MACs run at (matrix, else vector), in FLOP/s.
double matrix_peak(const Device& device, Precision precision);
/// "fp16 dense 989 TFLOP/s matrix, 134 TFLOP/s vector".
std::string describe_peak(const Device& device, Precision precision);
/// "matrix work at 1230 MHz of 2100 (…): 58.6 % of the matrix peak", or "" where the device
/// runs its matrix units at the clock its peaks are stated at.
std::string sustained_clock_text(const Device& device, Precision precision);
/// A setting named in a hint, as the caller spells it (the CLI: its flag).
std::string setting(const ReportInput& in, std::string_view key);

/// The range of a prediction of `e`'s class; none when the report has no ranges.
std::optional<PredictionRange> range_of(const ReportInput& in, const Estimate& e);

/// The range's factors on the estimate's times: the class's, or, where the step waits for its
/// input, the model's own time's ends floored at the input's time (the rate the user gave).
std::pair<double, double> range_factors(const Estimate& e, const PredictionRange& r);
/// " (8.1-13.0 ms: 80 % of 37 measured cases of eager/host/gpu)"; "" without ranges.
std::string time_range_text(const ReportInput& in, const Estimate& e, double time_s);
/// " (75.1-118 samples/s)"; "" without ranges.
std::string rate_range_text(const ReportInput& in, const Estimate& e, double rate,
                            std::string_view unit);

/// `capcalc estimate --explain`'s section (report_explain.cpp).
std::string render_explain_text(const ReportInput& in);

}  // namespace capcalc
