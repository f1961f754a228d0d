#include "capcalc/pricing.hpp"

#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/names.hpp"
#include "capcalc/units.hpp"

namespace capcalc {
namespace {

constexpr auto kNames = name_table<PricingKind>({{PricingKind::kOnDemand, "on-demand"},
                                                 {PricingKind::kReserved, "reserved"},
                                                 {PricingKind::kSpot, "spot"},
                                                 {PricingKind::kOwned, "owned"}});

void require(bool ok, std::string_view field, const std::string& what) {
  if (!ok) throw Error({}, fmt::format("pricing {}: {}", field, what));
}

bool finite_at_least(double value, double low) {
  return std::isfinite(value) && value >= low;
}

}  // namespace

std::string_view pricing_kind_name(PricingKind kind) {
  return kNames.name(kind);
}

std::optional<PricingKind> parse_pricing_kind(std::string_view name) {
  return kNames.parse(name);
}

std::vector<std::string_view> pricing_kind_names() {
  return kNames.names();
}

void validate_pricing(const Pricing& p) {
  if (p.usd_per_device_hour) {
    require(finite_at_least(*p.usd_per_device_hour, 0), "usd_per_device_hour",
            "must be a finite amount ≥ 0");
  }
  require(std::isfinite(p.discount) && p.discount >= 0 && p.discount < 1, "discount",
          fmt::format("{:g} is not a fraction in [0, 1)", p.discount));
  require(finite_at_least(p.interruptions_per_device_day, 0), "interruptions_per_device_day",
          "must be ≥ 0");
  require(finite_at_least(p.restart_s, 0), "restart_s", "must be ≥ 0");
  require(finite_at_least(p.checkpoint_interval_s, 0), "checkpoint_interval_s", "must be ≥ 0");
  if (p.kind == PricingKind::kOwned) {
    require(p.capex_usd_per_device.has_value(), "capex_usd_per_device",
            "owned devices need their purchase price");
    require(finite_at_least(*p.capex_usd_per_device, 0), "capex_usd_per_device",
            "must be a finite amount ≥ 0");
  }
  require(std::isfinite(p.life_years) && p.life_years > 0, "life_years", "must be > 0");
  require(finite_at_least(p.power_usd_per_kwh, 0), "power_usd_per_kwh", "must be ≥ 0");
  require(std::isfinite(p.pue) && p.pue >= 1, "pue", "must be ≥ 1 (total power / IT power)");
}

std::optional<double> device_hour_usd(const Pricing& p, const Device& device) {
  if (p.kind == PricingKind::kOwned) {
    if (!p.capex_usd_per_device || device.tdp_w <= 0) return std::nullopt;
    return *p.capex_usd_per_device / (p.life_years * kHoursPerYear) +
           device.tdp_w / 1000 * p.pue * p.power_usd_per_kwh;
  }
  if (p.usd_per_device_hour) return *p.usd_per_device_hour;
  if (!device.price) return std::nullopt;
  return device.price->usd_per_hour * (1 - p.discount);
}

RunCost price_run(const Pricing& p, const Device& device, double busy_s, std::int64_t devices) {
  RunCost cost;
  cost.wall_s = busy_s;
  if (p.kind == PricingKind::kSpot && p.interruptions_per_device_day > 0) {
    // Λ interruptions per second of wall clock, each losing the restart and half an interval;
    // over a wall clock W: busy = W − Λ W L, so W = busy / (1 − Λ L).
    const double rate = p.interruptions_per_device_day * static_cast<double>(devices) / 86400;
    const double lost = p.restart_s + p.checkpoint_interval_s / 2;
    const double kept = 1 - rate * lost;
    cost.wall_s = kept > 0 ? busy_s / kept : HUGE_VAL;
    cost.interruptions = rate * cost.wall_s;
  }
  cost.usd_per_device_hour = device_hour_usd(p, device);
  if (cost.usd_per_device_hour && std::isfinite(cost.wall_s)) {
    cost.cost_usd = *cost.usd_per_device_hour * static_cast<double>(devices) * cost.wall_s / 3600;
  }
  return cost;
}

std::string pricing_text(const Pricing& p) {
  std::string rate;
  if (p.usd_per_device_hour) {
    rate = fmt::format(" at {} per device-hour", format_usd(*p.usd_per_device_hour));
  } else if (p.discount > 0) {
    rate = fmt::format(" at the table's on-demand price less {:g} %", p.discount * 100);
  } else {
    rate = " at the table's on-demand price";
  }
  switch (p.kind) {
    case PricingKind::kOnDemand:
    case PricingKind::kReserved:
      return fmt::format("{}{}", pricing_kind_name(p.kind), rate);
    case PricingKind::kSpot:
      return fmt::format(
          "spot{}; {:g} interruptions per device-day, each costing a {} restart and half of a "
          "{} checkpoint interval",
          rate, p.interruptions_per_device_day, format_duration(p.restart_s),
          format_duration(p.checkpoint_interval_s));
    case PricingKind::kOwned:
      return fmt::format(
          "owned: {} per device over {:g} years, plus power at TDP x PUE {:g} x {}/kWh",
          format_usd(p.capex_usd_per_device.value_or(0)), p.life_years, p.pue,
          format_usd(p.power_usd_per_kwh));
  }
  return std::string(pricing_kind_name(p.kind));
}

}  // namespace capcalc
