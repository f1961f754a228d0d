// `capcalc scale`: the fastest layout at each device count from plan()'s search, the
// speed-up and efficiency against the first count, and where communication or the pipeline
// bubble starts to lead (plan.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "capcalc/plan.hpp"

namespace capcalc {

ScaleResult plan_scaling(const PlanGraphBuilder& build, const HardwareTable& table,
                         PlanRequest request, const std::vector<std::int64_t>& counts, bool weak) {
  request.deadline_s.reset();
  request.budget_usd.reset();
  request.objective = PlanObjective::kTime;
  ScaleResult scale;
  scale.weak = weak;
  // The fastest layout at each count: one search over all counts for strong scaling; one per
  // count for weak scaling, whose global batch differs per count.
  std::vector<std::optional<PlanRow>> best(counts.size());
  std::vector<std::int64_t> batches(counts.size(), request.global_batch);
  const auto search = [&](PlanRequest at, const std::vector<std::int64_t>& some) {
    at.device_counts = some;
    at.max_devices = *std::max_element(some.begin(), some.end());
    PlanResult result = plan(build, table, at);
    for (std::string& note : result.notes) {
      if (std::find(scale.notes.begin(), scale.notes.end(), note) == scale.notes.end()) {
        scale.notes.push_back(std::move(note));
      }
    }
    return result.fastest_per_count;
  };
  if (counts.empty()) return scale;
  if (!weak) {
    const std::vector<PlanRow> rows = search(request, counts);
    for (std::size_t i = 0; i < counts.size(); ++i) {
      for (const PlanRow& row : rows) {
        if (row.layout.devices == counts[i]) best[i] = row;
      }
    }
  } else {
    const auto base = static_cast<double>(counts.front());
    for (std::size_t i = 0; i < counts.size(); ++i) {
      PlanRequest at = request;
      at.global_batch =
          std::max<std::int64_t>(1, std::llround(static_cast<double>(request.global_batch) *
                                                 static_cast<double>(counts[i]) / base));
      at.global_batch = std::min(at.global_batch, kMaxGlobalBatch);
      at.samples = std::max(request.samples, static_cast<double>(at.global_batch));
      batches[i] = at.global_batch;
      const std::vector<PlanRow> rows = search(at, {counts[i]});
      if (!rows.empty()) best[i] = rows.front();
    }
  }
  double first_rate = 0;  // The first count with a layout: the base of the speed-up.
  double first_devices = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    ScalePoint point;
    point.devices = counts[i];
    point.global_batch = batches[i];
    point.best = best[i];
    if (point.best) {
      const double rate = weak ? point.best->tokens_per_s : 1 / point.best->step_s;
      if (first_devices == 0) {
        first_rate = rate;
        first_devices = static_cast<double>(counts[i]);
      }
      point.speedup = rate / first_rate;
      point.efficiency = point.speedup * first_devices / static_cast<double>(counts[i]);
      const StepBreakdown& b = point.best->breakdown;
      const double communication = b.communication_s();
      const double other = b.recompute_s + b.optimizer_s;
      if (scale.communication_leads_from == 0 && communication > b.bubble_s &&
          communication > other) {
        scale.communication_leads_from = counts[i];
      }
      if (scale.bubble_leads_from == 0 && b.bubble_s > communication && b.bubble_s > other) {
        scale.bubble_leads_from = counts[i];
      }
    }
    scale.points.push_back(std::move(point));
  }
  return scale;
}

}  // namespace capcalc
