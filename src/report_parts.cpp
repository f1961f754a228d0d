// Pieces shared by the estimate's renderers (report_parts.hpp).
#include "report_parts.hpp"

#include <cmath>

#include <fmt/format.h>

#include "capcalc/ranges.hpp"
#include "capcalc/units.hpp"

#include "checked.hpp"
#include "report_words.hpp"

namespace capcalc {

double per_sample(std::int64_t value, std::int64_t batch) {
  return static_cast<double>(value) / static_cast<double>(batch);
}

// Bytes a layer moves at the workload's precision (activations and weights may differ).
double layer_bytes(const LayerCounts& c, Precision precision) {
  return static_cast<double>(c.input_elements + c.output_elements) *
             activation_bytes_per_element(precision) +
         static_cast<double>(c.weight_elements_read) * weight_bytes_per_element(precision);
}

// A whole number of steps or kernels, digits grouped; past what that shows (a run of 1e300
// samples), with an SI prefix instead.
std::string whole_count(double n) {
  return n < 1e15 ? format_grouped(clamp_to_int64(std::round(n))) : format_count(n);
}

std::string percent(double fraction) {
  return fmt::format("{:.1f} %", 100 * fraction);
}

// The workload line's context of a language model: ", prompt 512 + 128 generated tokens" when
// serving, ", seq 1,024" for a pass over whole sequences; nothing for other models.
std::string context_text(const ReportInput& in) {
  if (in.request != nullptr) {
    return fmt::format(", prompt {} + {} generated tokens",
                       format_grouped(in.request->prompt_tokens),
                       format_grouped(in.request->output_tokens));
  }
  if (const std::optional<std::int64_t> seq = sequence_length(in.graph)) {
    return fmt::format(", seq {}", format_grouped(*seq));
  }
  return "";
}

// The peak the model's MACs run at, for "achieved x % of peak".
double matrix_peak(const Device& device, Precision precision) {
  const PeakRate& peak = device.peak(precision);
  return peak.matrix_flops_per_s > 0 ? peak.matrix_flops_per_s : peak.vector_flops_per_s;
}

std::string describe_peak(const Device& device, Precision precision) {
  const PeakRate& peak = device.peak(precision);
  std::vector<std::string> parts;
  if (peak.matrix_flops_per_s > 0) {
    parts.push_back(format_rate(peak.matrix_flops_per_s, "FLOP/s") + " matrix");
  }
  if (peak.vector_flops_per_s > 0) {
    parts.push_back(format_rate(peak.vector_flops_per_s, "FLOP/s") + " vector");
  }
  return fmt::format("{} dense {}", precision_name(precision), fmt::join(parts, ", "));
}

std::string sustained_clock_text(const Device& device, Precision precision) {
  const double fraction = device.matrix_clock_fraction(precision);
  if (fraction >= 1) return "";
  return fmt::format(
      "matrix work at {:.0f} MHz of {:.0f} (the vendor's sustained figure): {:.1f} % "
      "of the matrix peak",
      device.boost_clock_hz * fraction / 1e6, device.boost_clock_hz / 1e6, 100 * fraction);
}

// A setting named in a hint, as the caller spells it (the CLI: its flag).
std::string setting(const ReportInput& in, std::string_view key) {
  return in.setting_name ? in.setting_name(key) : std::string(key);
}

std::optional<PredictionRange> range_of(const ReportInput& in, const Estimate& e) {
  if (in.ranges == nullptr) return std::nullopt;
  return in.ranges->range_for({e.profile, dominant_bound(e), in.device->type});
}

std::pair<double, double> range_factors(const Estimate& e, const PredictionRange& r) {
  if (e.input_s <= 0 || e.latency_s <= 0) return {r.low, r.high};
  // The model's own time ranges; the input pipeline's is the rate given, a floor.
  const double own = e.latency_s - e.input_wait_s;
  return {std::max(e.input_s, own * r.low) / e.latency_s,
          std::max(e.input_s, own * r.high) / e.latency_s};
}

// Whether the step waits for its input even at the high end of the model's own range.
bool input_bound_throughout(const Estimate& e, const PredictionRange& r) {
  return e.input_wait_s > 0 && (e.latency_s - e.input_wait_s) * r.high <= e.input_s;
}

// " (8.1-13.0 ms: 80 % of 37 measured cases of eager/host/gpu)" for a time.
std::string time_range_text(const ReportInput& in, const Estimate& e, double time_s) {
  const std::optional<PredictionRange> r = range_of(in, e);
  if (!r) return "";
  if (input_bound_throughout(e, *r))
    return " (the input rate's, at either end of the model's range)";
  const std::string basis =
      r->validated
          ? fmt::format("{:.0f} % of {} of {}", 100 * in.ranges->coverage,
                        counted(static_cast<std::int64_t>(r->cases), "measured case"), r->key)
          : fmt::format("no validated case of {}: the range of all {}",
                        class_key({e.profile, dominant_bound(e), in.device->type}),
                        counted(static_cast<std::int64_t>(r->cases), "case"));
  // "9.85-22.0 ms" when both ends share the unit. The step's ends scale the other times.
  const auto [low_factor, high_factor] = range_factors(e, *r);
  std::string low = format_duration(time_s * low_factor);
  const std::string high = format_duration(time_s * high_factor);
  const std::size_t space = low.rfind(' ');
  if (space != std::string::npos && high.size() > space &&
      high.substr(high.rfind(' ')) == low.substr(space)) {
    low.resize(space);
  }
  return fmt::format(" ({}-{}: {})", low, high, basis);
}

// " (75.1-118 samples/s)" for a rate.
std::string rate_range_text(const ReportInput& in, const Estimate& e, double rate,
                            std::string_view unit) {
  const std::optional<PredictionRange> r = range_of(in, e);
  if (!r || input_bound_throughout(e, *r)) return "";
  const auto [low_factor, high_factor] = range_factors(e, *r);
  return fmt::format(" ({}-{} {})", format_count(rate / high_factor),
                     format_count(rate / low_factor), unit);
}

}  // namespace capcalc
