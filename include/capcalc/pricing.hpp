// How a run is paid for: on-demand or reserved devices at a rate per device-hour, spot devices
// whose interruptions cost restart time and the work since the last checkpoint, or owned
// devices whose purchase is spread over their service life, plus the power they draw.
//
//   on-demand, reserved   cost = rate × devices × wall hours
//   spot                  wall = busy / (1 − Λ × (restart + interval / 2)), Λ = r × devices / day
//                         cost = rate × devices × wall hours
//   owned                 rate = capex / (life × 8,766 h) + TDP × PUE × power price
//                         cost = rate × devices × wall hours
//
// A synchronous job stops when any one of its devices is interrupted, so a spot job of N devices
// is interrupted N times as often as one device; each interruption costs the restart and, on
// average, half a checkpoint interval of lost work. Owned devices are charged for the hours
// the run holds them, as if they were busy for their whole life. docs/planning.md has the
// derivation and the sources of the defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capcalc/hardware.hpp"

namespace capcalc {

enum class PricingKind { kOnDemand, kReserved, kSpot, kOwned };
std::string_view pricing_kind_name(
    PricingKind kind);  ///< "on-demand", "reserved", "spot", "owned".
std::optional<PricingKind> parse_pricing_kind(std::string_view name);
/// All pricing names, in the order above.
std::vector<std::string_view> pricing_kind_names();

/// Service life of owned devices: Amazon's 2024 Form 10-K (filed 2025-02-07) shortened the
/// useful life of a subset of its servers and networking equipment from six years to five,
/// from 2025-01-01, citing the pace of AI hardware.
inline constexpr double kDefaultLifeYears = 5;
/// USD per kWh: the U.S. average retail price of electricity to industrial customers in 2023,
/// 8.06 ¢/kWh (EIA, Electric Power Annual 2023, released 2024-10-17).
inline constexpr double kDefaultPowerUsdPerKwh = 0.0806;
/// Power usage effectiveness: the industry average of 1.58 in 2023 (Uptime Institute, Global
/// Data Center Survey 2023; Intelligence Update 221).
inline constexpr double kDefaultPue = 1.58;
/// Hours in a year of 365.25 days.
inline constexpr double kHoursPerYear = 8766;

/// How the devices are paid for.
struct Pricing {
  PricingKind kind = PricingKind::kOnDemand;
  /// USD per device-hour (on-demand, reserved, spot). Unset: the hardware table's on-demand
  /// price less `discount`.
  std::optional<double> usd_per_device_hour;
  double discount = 0;  ///< Fraction off the table's on-demand price, in [0, 1).
  // Spot.
  double interruptions_per_device_day = 0;  ///< Each one stops the whole synchronous job.
  double restart_s = 0;                     ///< From an interruption to training again.
  double checkpoint_interval_s = 0;         ///< Half of one is lost per interruption, on average.
  // Owned.
  std::optional<double> capex_usd_per_device;  ///< With its share of server and network.
  double life_years = kDefaultLifeYears;
  double power_usd_per_kwh = kDefaultPowerUsdPerKwh;
  double pue = kDefaultPue;
};

/// A run's wall clock and cost under a pricing.
struct RunCost {
  double wall_s = 0;         ///< Busy time plus, on spot, what interruptions cost; inf: never ends.
  double interruptions = 0;  ///< Expected interruptions over the run (spot).
  /// Unset: no price (the table has none for the device; owned without a TDP).
  std::optional<double> usd_per_device_hour;
  std::optional<double> cost_usd;
};

/// Throws Error when a figure is out of range (a negative rate, a discount of 100 % or more,
/// owned without a purchase price). Messages name the Pricing field.
void validate_pricing(const Pricing& pricing);

/// The USD per device-hour of `device` under `pricing`; unset when there is none.
std::optional<double> device_hour_usd(const Pricing& pricing, const Device& device);

/// `busy_s` of `devices` devices of one type, as paid for under `pricing`.
RunCost price_run(const Pricing& pricing, const Device& device, double busy_s,
                  std::int64_t devices);

/// One line for a report: "spot at $2.00 per device-hour; 0.01 interruptions per device-day,
/// 15 min restart, checkpoint every 1 h".
std::string pricing_text(const Pricing& pricing);

}  // namespace capcalc
