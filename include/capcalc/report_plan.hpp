// Rendering `capcalc plan` and `capcalc scale`: text for people, JSON (data/schema/
// plan-output.schema.json) and CSV for programs, Markdown for documents. Everything renders to
// a string; the CLI only prints.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "capcalc/plan.hpp"

namespace capcalc {

/// What the renderers say about the ask beside the result.
struct PlanReportInput {
  const PlanRequest* request = nullptr;
  const PlanResult* result = nullptr;
  std::string model;             ///< The model's name.
  double params = 0;             ///< Its parameters.
  double active_params = 0;      ///< Of them, used per token (a mixture of experts); 0: all.
  double tokens_per_sample = 1;  ///< The "seq" dimension (1 without one).
  bool has_tokens = true;        ///< The model has a "seq" dimension: speak of tokens.
  std::size_t top = 10;          ///< Rows to print (text, markdown, CSV).
  /// `--explain N`: the row (1-based) to break down, and its full estimate.
  std::size_t explain_row = 0;
  const Estimate* explain = nullptr;
};

std::string render_plan_text(const PlanReportInput& input);
std::string render_plan_json(const PlanReportInput& input);
std::string render_plan_csv(const PlanReportInput& input);
std::string render_plan_markdown(const PlanReportInput& input);

/// `capcalc scale`: one row per device count.
std::string render_scale_text(const ScaleResult& scale, const std::string& model,
                              const std::string& device);
std::string render_scale_json(const ScaleResult& scale, const std::string& model,
                              const std::string& device);
std::string render_scale_csv(const ScaleResult& scale);
/// The speed-up against the device count on log-log axes, with ideal scaling dashed.
std::string render_scale_svg(const ScaleResult& scale, const std::string& model,
                             const std::string& device);

}  // namespace capcalc
