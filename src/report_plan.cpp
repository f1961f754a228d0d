#include "capcalc/report_plan.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/report.hpp"
#include "capcalc/units.hpp"

#include "markup.hpp"
#include "report_json.hpp"
#include "report_words.hpp"
#include "table.hpp"

namespace capcalc {
namespace {

using Json = nlohmann::ordered_json;
using Align = TextTable::Align;

std::string short_name(const Device& device) {
  return device.aliases.empty() ? device.id : device.aliases.front();
}

std::string days(double seconds) {
  return fmt::format("{:.1f}", seconds / 86400);
}

std::string percent(double fraction) {
  return fmt::format("{:.1f} %", fraction * 100);
}

std::string optional_usd(const std::optional<double>& usd) {
  return usd ? format_usd(*usd) : "-";
}

std::string optional_kwh(const std::optional<double>& kwh) {
  if (!kwh) return "-";
  if (*kwh >= 1e6) return fmt::format("{:.3g} GWh", *kwh / 1e6);
  return *kwh >= 1e3 ? fmt::format("{:.3g} MWh", *kwh / 1e3) : fmt::format("{:.3g} kWh", *kwh);
}

Json optional_json(const std::optional<double>& value) {
  return value ? Json(*value) : Json(nullptr);
}

Json row_json(const PlanRow& row) {
  const Layout& l = row.layout;
  const StepBreakdown& b = row.breakdown;
  return Json{{"device", l.device->id},
              {"device_name", l.device->name},
              {"precision", std::string(precision_name(l.precision))},
              {"devices", l.devices},
              {"tensor_parallel", l.tensor_parallel},
              {"pipeline_parallel", l.pipeline_parallel},
              {"context_parallel", l.context_parallel},
              {"expert_parallel", l.expert_parallel},
              {"expert_tensor_parallel", l.whole_experts ? 1 : l.tensor_parallel},
              {"data_parallel", l.data_parallel},
              {"virtual_stages", l.virtual_stages},
              {"zero_stage", l.zero_stage},
              {"micro_batch_size", l.micro_batch_size},
              {"micro_batches", l.micro_batches},
              {"checkpointing", l.checkpointing},
              {"checkpoint_layers", l.checkpoint_layers},
              {"selective_recompute", l.selective_recompute},
              {"step_s", row.step_s},
              {"mfu", row.mfu},
              {"tokens_per_s", row.tokens_per_s},
              {"steps", row.steps},
              {"time_s", row.time_s},
              {"days", row.time_s / 86400},
              {"device_hours", row.device_hours},
              {"usd_per_device_hour", optional_json(row.usd_per_device_hour)},
              {"cost_usd", optional_json(row.cost_usd)},
              {"interruptions", row.interruptions},
              {"energy_kwh", optional_json(row.energy_kwh)},
              {"memory_bytes", row.memory_bytes},
              {"headroom_bytes", row.headroom_bytes},
              {"meets_ask", row.meets_ask},
              {"breakdown",
               {{"compute_s", b.compute_s},
                {"recompute_s", b.recompute_s},
                {"tensor_parallel_s", b.tensor_parallel_s},
                {"context_parallel_s", b.context_parallel_s},
                {"expert_parallel_s", b.expert_parallel_s},
                {"pipeline_send_s", b.pipeline_send_s},
                {"bubble_s", b.bubble_s},
                {"data_parallel_s", b.data_parallel_s},
                {"optimizer_s", b.optimizer_s}}}};
}

void add_plan_columns(TextTable& table, bool tokens) {
  table.add_column("#", Align::kRight);
  table.add_column("device", Align::kLeft);
  table.add_column("count", Align::kRight);
  table.add_column("layout", Align::kLeft);
  table.add_column("step", Align::kRight);
  table.add_column("MFU", Align::kRight);
  table.add_column(tokens ? "tokens/s" : "samples/s", Align::kRight);
  table.add_column("days", Align::kRight);
  table.add_column("device-h", Align::kRight);
  table.add_column("cost", Align::kRight);
  table.add_column("energy", Align::kRight);
  table.add_column("headroom", Align::kRight);
}

std::vector<std::string> plan_cells(std::size_t index, const PlanRow& row) {
  return {std::to_string(index),
          short_name(*row.layout.device) +
              (row.layout.precision == Precision::kBf16
                   ? ""
                   : " " + std::string(precision_name(row.layout.precision))),
          format_grouped(row.layout.devices),
          layout_text(row.layout),
          format_duration(row.step_s),
          percent(row.mfu),
          format_count(row.tokens_per_s),
          days(row.time_s),
          format_count(row.device_hours),
          optional_usd(row.cost_usd),
          optional_kwh(row.energy_kwh),
          format_bytes(row.headroom_bytes)};
}

std::string header_text(const PlanReportInput& in) {
  const PlanRequest& q = *in.request;
  const PlanResult& r = *in.result;
  // ", 12.9 G active per token" beside a mixture of experts' total.
  const std::string active = active_params_text(static_cast<std::int64_t>(in.params),
                                                static_cast<std::int64_t>(in.active_params));
  std::string text =
      in.has_tokens ? fmt::format(
                          "Plan: {} ({} parameters{}), {} tokens ({} samples), global batch {} "
                          "samples ({} tokens), {} optimizer\n",
                          in.model, format_count(in.params), active,
                          format_count(q.samples * in.tokens_per_sample), format_count(q.samples),
                          format_grouped(q.global_batch),
                          format_count(static_cast<double>(q.global_batch) * in.tokens_per_sample),
                          optimizer_name(q.optimizer))
                    : fmt::format(
                          "Plan: {} ({} parameters{}), {} samples, global batch {} samples, {} "
                          "optimizer\n",
                          in.model, format_count(in.params), active, format_count(q.samples),
                          format_grouped(q.global_batch), optimizer_name(q.optimizer));
  std::string ask;
  if (q.deadline_s) {
    const double days = *q.deadline_s / 86400;
    ask += fmt::format(", within {:g} day{}", days, days == 1 ? "" : "s");
  }
  if (q.budget_usd) ask += fmt::format(", within {}", format_usd(*q.budget_usd));
  text += fmt::format(
      "Searched {} on {} device type{} (≤ {} each); {} fit with {:.0f} % of "
      "memory kept free; ranked by {}{}.\n",
      counted(r.layouts_searched, "layout"), q.devices.size(), q.devices.size() == 1 ? "" : "s",
      counted(q.max_devices, "device"), format_grouped(r.layouts_fit), q.memory_reserve * 100,
      plan_objective_name(q.objective), ask);
  if (q.pricing.kind != PricingKind::kOnDemand || q.pricing.usd_per_device_hour ||
      q.pricing.discount > 0) {
    text += "Pricing: " + pricing_text(q.pricing) + ".\n";
  }
  return text;
}

std::string explain_text(const PlanReportInput& in) {
  const PlanRow& row = in.result->rows[in.explain_row - 1];
  const Estimate& e = *in.explain;
  const StepBreakdown& b = row.breakdown;
  const auto share = [&](double s) {
    return fmt::format("{:>10}  {:>6}", format_duration(s), percent(s / row.step_s));
  };
  std::string text = fmt::format("\nRow {}: {} {} ({}), {}\n", in.explain_row,
                                 format_grouped(row.layout.devices), short_name(*row.layout.device),
                                 layout_text(row.layout), precision_name(row.layout.precision));
  text += fmt::format("  Step {}: {} micro-batch{} of {} sample{} per replica\n",
                      format_duration(row.step_s), row.layout.micro_batches,
                      row.layout.micro_batches == 1 ? "" : "es", row.layout.micro_batch_size,
                      row.layout.micro_batch_size == 1 ? "" : "s");
  text += fmt::format("    compute (forward + backward)   {}\n", share(b.compute_s));
  text += fmt::format(
      "    {:<31}{}\n",
      row.layout.selective_recompute ? "recompute (selective)" : "recompute (checkpointing)",
      share(b.recompute_s));
  text += fmt::format("    tensor-parallel all-reduces    {}{}\n", share(b.tensor_parallel_s),
                      e.communication_link.empty() ? "" : "  over " + e.communication_link);
  if (row.layout.context_parallel > 1) {
    text += fmt::format("    ring attention sends (exposed) {}{}\n", share(b.context_parallel_s),
                        e.context_parallel_link.empty() ? "" : "  over " + e.context_parallel_link);
  }
  if (row.layout.expert_parallel > 1) {
    text += fmt::format(
        "    expert token exchanges         {}{}\n", share(b.expert_parallel_s),
        e.expert_parallel_link.empty()
            ? ""
            : fmt::format("  {} of {} sent over {}", counted(e.alltoalls, e.expert_collective),
                          format_bytes(e.alltoall_bytes), e.expert_parallel_link));
  }
  text += fmt::format("    pipeline sends                 {}{}\n", share(b.pipeline_send_s),
                      e.pipeline_link.empty() ? "" : "  over " + e.pipeline_link);
  text += fmt::format("    pipeline bubble                {}\n", share(b.bubble_s));
  text += fmt::format("    gradient sync (exposed)        {}{}\n", share(b.data_parallel_s),
                      e.data_parallel_link.empty()
                          ? ""
                          : fmt::format("  {} of {} over {}", format_duration(e.data_parallel_s),
                                        format_bytes(e.data_parallel_bytes), e.data_parallel_link));
  text += fmt::format("    optimizer update               {}\n", share(b.optimizer_s));
  const MemoryEstimate& m = e.memory;
  const double usable = row.layout.device->memory_bytes * (1 - in.request->memory_reserve);
  text += fmt::format(
      "  Memory per device {} of {} usable ({} less a {:.0f} % reserve): weights {}, gradients "
      "{}, optimizer {}, activations {}; headroom {}\n",
      format_bytes(m.total_bytes), format_bytes(usable),
      format_bytes(row.layout.device->memory_bytes), in.request->memory_reserve * 100,
      format_bytes(m.weight_bytes), format_bytes(m.gradient_bytes), format_bytes(m.optimizer_bytes),
      format_bytes(m.activation_bytes), format_bytes(row.headroom_bytes));
  text +=
      fmt::format("  Run: {} steps x {} = {} days; {} device-hours",
                  format_grouped(static_cast<std::int64_t>(row.steps)), format_duration(row.step_s),
                  days(row.time_s), format_count(row.device_hours));
  if (row.interruptions > 0) {
    text += fmt::format(" (with {:.1f} spot interruptions)", row.interruptions);
  }
  const Pricing& pricing = in.request->pricing;
  const Price* table_price = row.layout.device->price ? &*row.layout.device->price : nullptr;
  if (row.cost_usd && row.usd_per_device_hour) {
    text += fmt::format(" x {}/h = {}", format_usd(*row.usd_per_device_hour),
                        format_usd(*row.cost_usd));
    if (pricing.kind == PricingKind::kOwned) {
      text += " (owned: purchase over its life, plus power)";
    } else if (!pricing.usd_per_device_hour && table_price != nullptr) {
      text +=
          fmt::format(" (price {} {}{})", table_price->date, table_price->source,
                      pricing.discount > 0 ? fmt::format(", less {:g} %", pricing.discount * 100)
                                           : std::string());
    }
  }
  text += "\n";
  return text;
}

}  // namespace

std::string render_plan_text(const PlanReportInput& in) {
  const PlanResult& r = *in.result;
  std::string text = header_text(in);
  if (!r.infeasible.empty()) {
    text += "\n" + r.infeasible + "\n";
  } else {
    TextTable table;
    add_plan_columns(table, in.has_tokens);
    const std::size_t n = std::min(in.top, r.rows.size());
    for (std::size_t i = 0; i < n; ++i) {
      table.add_row(plan_cells(i + 1, r.rows[i]));
    }
    text += "\n" + table.render();
    if (r.rows.size() > n) {
      text += fmt::format("({} more; --top N shows more)\n",
                          format_grouped(static_cast<std::int64_t>(r.rows.size() - n)));
    }
    if (r.variants_hidden > 0) {
      text += fmt::format(
          "({} more within {:g} % of a listed layout that differ from it only in the "
          "data/context-parallel split and micro-batches are left out)\n",
          format_grouped(r.variants_hidden), kVariantTolerance * 100);
    }
  }
  if (!r.pareto.empty()) {
    text += "\nTime/cost Pareto front (every layout that fits; * meets the ask):\n";
    TextTable table;
    add_plan_columns(table, in.has_tokens);
    std::size_t i = 0;
    for (const PlanRow& row : r.pareto) {
      std::vector<std::string> cells = plan_cells(++i, row);
      if (row.meets_ask) cells[0] += "*";
      table.add_row(std::move(cells));
    }
    text += table.render();
  }
  if (in.explain != nullptr && in.explain_row >= 1 && in.explain_row <= r.rows.size()) {
    text += explain_text(in);
  }
  if (!r.notes.empty()) {
    text += "\nNotes:\n";
    for (const std::string& note : r.notes) {
      text += "  " + note + "\n";
    }
  }
  return text;
}

std::string render_plan_json(const PlanReportInput& in) {
  const PlanRequest& q = *in.request;
  const PlanResult& r = *in.result;
  Json j;
  j["schema_version"] = kOutputSchemaVersion;
  j["model"] = {{"name", in.model}, {"params", in.params}};
  j["run"] = {{"samples", q.samples},
              {"tokens", q.samples * in.tokens_per_sample},
              {"global_batch_samples", q.global_batch},
              {"moe_imbalance", q.moe_imbalance},
              {"moe_dispatcher", std::string(moe_dispatcher_name(q.moe_dispatcher))},
              {"recompute", recompute_modules_of(q.recompute)},
              {"lora_rank", q.lora_rank}};
  j["objective"] = std::string(plan_objective_name(q.objective));
  j["deadline_s"] = optional_json(q.deadline_s);
  j["budget_usd"] = optional_json(q.budget_usd);
  const Pricing& pricing = q.pricing;
  j["pricing"] = {{"kind", std::string(pricing_kind_name(pricing.kind))},
                  {"usd_per_device_hour", optional_json(pricing.usd_per_device_hour)},
                  {"discount", pricing.discount},
                  {"interruptions_per_device_day", pricing.interruptions_per_device_day},
                  {"restart_s", pricing.restart_s},
                  {"checkpoint_interval_s", pricing.checkpoint_interval_s},
                  {"capex_usd_per_device", optional_json(pricing.capex_usd_per_device)},
                  {"life_years", pricing.life_years},
                  {"power_usd_per_kwh", pricing.power_usd_per_kwh},
                  {"pue", pricing.pue}};
  j["max_devices"] = q.max_devices;
  j["memory_reserve"] = q.memory_reserve;
  j["layouts_searched"] = r.layouts_searched;
  j["layouts_fit"] = r.layouts_fit;
  j["variants_hidden"] = r.variants_hidden;
  Json rows = Json::array();
  for (std::size_t i = 0; i < std::min(in.top, r.rows.size()); ++i) {
    rows.push_back(row_json(r.rows[i]));
  }
  j["rows"] = rows;
  Json front = Json::array();
  for (const PlanRow& row : r.pareto) {
    front.push_back(row_json(row));
  }
  j["pareto"] = front;
  j["notes"] = r.notes;
  j["infeasible"] = r.infeasible.empty() ? Json(nullptr) : Json(r.infeasible);
  return json_text(j);
}

std::string render_plan_csv(const PlanReportInput& in) {
  std::string out =
      "rank,device,precision,devices,tensor_parallel,pipeline_parallel,context_parallel,"
      "expert_parallel,expert_tensor_parallel,data_parallel,virtual_stages,zero_stage,"
      "micro_batch_size,micro_batches,"
      "checkpointing,checkpoint_layers,selective_recompute,step_s,"
      "mfu,"
      "tokens_per_s,time_s,device_hours,cost_usd,energy_kwh,memory_bytes,headroom_bytes\n";
  const PlanResult& r = *in.result;
  for (std::size_t i = 0; i < std::min(in.top, r.rows.size()); ++i) {
    const PlanRow& row = r.rows[i];
    const Layout& l = row.layout;
    // Integers exactly, fractions in their shortest round-trip form (csv_number).
    const std::vector<std::string> cells = {std::to_string(i + 1),
                                            l.device->id,
                                            std::string(precision_name(l.precision)),
                                            std::to_string(l.devices),
                                            std::to_string(l.tensor_parallel),
                                            std::to_string(l.pipeline_parallel),
                                            std::to_string(l.context_parallel),
                                            std::to_string(l.expert_parallel),
                                            std::to_string(l.whole_experts ? 1 : l.tensor_parallel),
                                            std::to_string(l.data_parallel),
                                            std::to_string(l.virtual_stages),
                                            std::to_string(l.zero_stage),
                                            std::to_string(l.micro_batch_size),
                                            std::to_string(l.micro_batches),
                                            l.checkpointing ? "true" : "false",
                                            std::to_string(l.checkpoint_layers),
                                            l.selective_recompute ? "true" : "false",
                                            csv_number(row.step_s),
                                            csv_number(row.mfu),
                                            csv_number(row.tokens_per_s),
                                            csv_number(row.time_s),
                                            csv_number(row.device_hours),
                                            row.cost_usd ? csv_number(*row.cost_usd) : "",
                                            row.energy_kwh ? csv_number(*row.energy_kwh) : "",
                                            csv_number(row.memory_bytes),
                                            csv_number(row.headroom_bytes)};
    out += fmt::format("{}\n", fmt::join(cells, ","));
  }
  return out;
}

std::string render_plan_markdown(const PlanReportInput& in) {
  const PlanResult& r = *in.result;
  std::string out = header_text(in) + "\n";
  if (!r.infeasible.empty()) return out + r.infeasible + "\n";
  out +=
      "| # | device | count | layout | step | MFU | tokens/s | days | device-h | cost | energy | "
      "headroom |\n|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (std::size_t i = 0; i < std::min(in.top, r.rows.size()); ++i) {
    const std::vector<std::string> cells = plan_cells(i + 1, r.rows[i]);
    out += "|";
    for (const std::string& cell : cells) {
      out += " " + cell + " |";
    }
    out += "\n";
  }
  return out;
}

namespace {

std::string leading_overhead(const StepBreakdown& b) {
  const double communication = b.communication_s();
  const double other = b.recompute_s + b.optimizer_s;
  if (communication >= b.bubble_s && communication >= other) return "communication";
  if (b.bubble_s >= other) return "bubble";
  return b.recompute_s >= b.optimizer_s ? "recompute" : "optimizer";
}

}  // namespace

std::string render_scale_text(const ScaleResult& scale, const std::string& model,
                              const std::string& device) {
  std::string text = fmt::format(
      "Scaling: {} on {} ({}; the fastest layout per count)\n\n", model, device,
      scale.weak ? "weak scaling: the global batch grows with the count, speed-up in tokens/s"
                 : "strong scaling: the global batch stays, speed-up in steps/s");
  TextTable table;
  table.add_column("devices", Align::kRight);
  table.add_column("batch", Align::kRight);
  table.add_column("layout", Align::kLeft);
  table.add_column("step", Align::kRight);
  table.add_column("speed-up", Align::kRight);
  table.add_column("efficiency", Align::kRight);
  table.add_column("MFU", Align::kRight);
  table.add_column("compute", Align::kRight);
  table.add_column("comm", Align::kRight);
  table.add_column("bubble", Align::kRight);
  table.add_column("leading overhead", Align::kLeft);
  for (const ScalePoint& p : scale.points) {
    if (!p.best) {
      table.add_row({format_grouped(p.devices), format_grouped(p.global_batch), "no layout fits",
                     "-", "-", "-", "-", "-", "-", "-", "-"});
      continue;
    }
    const PlanRow& row = *p.best;
    const StepBreakdown& b = row.breakdown;
    table.add_row({format_grouped(p.devices), format_grouped(p.global_batch),
                   layout_text(row.layout), format_duration(row.step_s),
                   fmt::format("{:.2f}x", p.speedup), percent(p.efficiency), percent(row.mfu),
                   percent(b.compute_s / row.step_s), percent(b.communication_s() / row.step_s),
                   percent(b.bubble_s / row.step_s), leading_overhead(b)});
  }
  text += table.render();
  text += "\n";
  text += scale.communication_leads_from > 0
              ? fmt::format("Exposed communication is the largest overhead from {} devices.\n",
                            format_grouped(scale.communication_leads_from))
              : "Exposed communication is never the largest overhead.\n";
  text += scale.bubble_leads_from > 0
              ? fmt::format("The pipeline bubble is the largest overhead from {} devices.\n",
                            format_grouped(scale.bubble_leads_from))
              : "The pipeline bubble is never the largest overhead.\n";
  for (const std::string& note : scale.notes) {
    text += "Note: " + note + "\n";
  }
  return text;
}

std::string render_scale_json(const ScaleResult& scale, const std::string& model,
                              const std::string& device) {
  Json j;
  j["schema_version"] = kOutputSchemaVersion;
  j["model"] = model;
  j["device"] = device;
  j["weak"] = scale.weak;
  Json points = Json::array();
  for (const ScalePoint& p : scale.points) {
    points.push_back({{"devices", p.devices},
                      {"global_batch_samples", p.global_batch},
                      {"best", p.best ? row_json(*p.best) : Json(nullptr)},
                      {"speedup", p.best ? Json(p.speedup) : Json(nullptr)},
                      {"efficiency", p.best ? Json(p.efficiency) : Json(nullptr)}});
  }
  j["points"] = points;
  j["communication_leads_from"] = scale.communication_leads_from;
  j["bubble_leads_from"] = scale.bubble_leads_from;
  j["notes"] = scale.notes;
  return json_text(j);
}

std::string render_scale_csv(const ScaleResult& scale) {
  std::string out =
      "devices,tensor_parallel,pipeline_parallel,context_parallel,data_parallel,step_s,speedup,"
      "efficiency,mfu,"
      "compute_s,communication_s,bubble_s\n";
  for (const ScalePoint& p : scale.points) {
    if (!p.best) {
      out += fmt::format("{},,,,,,,,,,,\n", p.devices);
      continue;
    }
    const PlanRow& row = *p.best;
    out += fmt::format(
        "{},{},{},{},{},{}\n", p.devices, row.layout.tensor_parallel, row.layout.pipeline_parallel,
        row.layout.context_parallel, row.layout.data_parallel,
        fmt::join(std::vector<std::string>{csv_number(row.step_s), csv_number(p.speedup),
                                           csv_number(p.efficiency), csv_number(row.mfu),
                                           csv_number(row.breakdown.compute_s),
                                           csv_number(row.breakdown.communication_s()),
                                           csv_number(row.breakdown.bubble_s)},
                  ","));
  }
  return out;
}

std::string render_scale_svg(const ScaleResult& scale, const std::string& model,
                             const std::string& device) {
  // Both axes in powers of two: devices (x) and speed-up (y); ideal scaling is the diagonal.
  constexpr double kLeft = 70, kTop = 50, kWidth = 600, kHeight = 400;
  std::vector<const ScalePoint*> points;
  for (const ScalePoint& p : scale.points) {
    if (p.best) points.push_back(&p);
  }
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"25\" font-size=\"15\">{} on {}: speed-up of the "
      "fastest layout per device count</text>\n",
      kLeft + kWidth + 40, kTop + kHeight + 60, kLeft, escape_markup(model), escape_markup(device));
  if (points.empty()) return svg + "<text x=\"70\" y=\"80\">no layout fits</text>\n</svg>\n";
  const double base = static_cast<double>(points.front()->devices);
  const double x_hi =
      std::max(1.0, std::ceil(std::log2(static_cast<double>(points.back()->devices) / base)));
  const auto x_of = [&](double ratio) { return kLeft + std::log2(ratio) / x_hi * kWidth; };
  const auto y_of = [&](double speedup) {
    return kTop + kHeight - std::log2(std::max(speedup, 1.0 / 1024)) / x_hi * kHeight;
  };
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
      "stroke=\"#888\"/>\n",
      kLeft, kTop, kWidth, kHeight);
  for (int i = 0; i <= static_cast<int>(x_hi); ++i) {
    const double ratio = std::pow(2.0, i);
    svg +=
        fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x_of(ratio),
                    kTop + kHeight + 18, format_grouped(static_cast<std::int64_t>(base * ratio)));
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}x</text>\n", kLeft - 6,
                       y_of(ratio) + 4, ratio);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">devices</text>\n",
                     kLeft + kWidth / 2, kTop + kHeight + 40);
  svg += fmt::format(
      "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#888\" "
      "stroke-dasharray=\"6 4\"/>\n<text x=\"{}\" y=\"{}\" fill=\"#888\">ideal</text>\n",
      x_of(1), y_of(1), x_of(std::pow(2.0, x_hi)), y_of(std::pow(2.0, x_hi)),
      x_of(std::pow(2.0, x_hi)) - 40, y_of(std::pow(2.0, x_hi)) + 20);
  std::string path;
  for (const ScalePoint* p : points) {
    const double x = x_of(static_cast<double>(p->devices) / base);
    const double y = y_of(p->speedup);
    path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", x, y);
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"#c00\"><title>{} "
        "devices: {:.2f}x, {:.0f} % efficient ({})</title></circle>\n",
        x, y, format_grouped(p->devices), p->speedup, p->efficiency * 100,
        escape_markup(layout_text(p->best->layout)));
  }
  svg += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#c00\" stroke-width=\"2\"/>\n", path);
  return svg + "</svg>\n";
}

}  // namespace capcalc
