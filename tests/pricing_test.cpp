// Pricing a run (issue 24 §2): each kind's cost derived by hand on round figures.
#include "capcalc/pricing.hpp"

#include <cmath>

#include "capcalc/error.hpp"

#include "catch.hpp"
#include "round_device.hpp"

namespace {

using capcalc::Pricing;
using capcalc::PricingKind;

// The round device with a $2.00/h on-demand price and a 500 W TDP.
capcalc::Device priced_device() {
  capcalc::Device d = capcalc::test::round_device();
  d.price = capcalc::Price{2.0, "2026-01", "https://example.invalid/price"};
  d.tdp_w = 500;
  return d;
}

}  // namespace

TEST_CASE("on-demand and reserved pay the rate for every device-hour", "[pricing]") {
  const capcalc::Device d = priced_device();
  Pricing p;  // On demand: the table's $2.00/h.
  // 10 devices x 36,000 s = 100 device-hours x $2.00 = $200.
  capcalc::RunCost c = capcalc::price_run(p, d, 36000, 10);
  CHECK(c.wall_s == 36000);
  CHECK(c.cost_usd.value() == Approx(200));
  p.kind = PricingKind::kReserved;
  p.discount = 0.4;  // $2.00 x 0.6 = $1.20/h: 100 device-hours = $120.
  c = capcalc::price_run(p, d, 36000, 10);
  CHECK(c.usd_per_device_hour.value() == Approx(1.2));
  CHECK(c.cost_usd.value() == Approx(120));
  p.usd_per_device_hour = 1.5;  // A rate given wins over the table's price: $150.
  CHECK(capcalc::price_run(p, d, 36000, 10).cost_usd.value() == Approx(150));
  // No price in the table and none given: no cost, the time unchanged.
  capcalc::Device unpriced = d;
  unpriced.price.reset();
  const capcalc::RunCost none = capcalc::price_run(Pricing{}, unpriced, 36000, 10);
  CHECK_FALSE(none.cost_usd.has_value());
  CHECK(none.wall_s == 36000);
}

TEST_CASE("spot interruptions stop the whole job and cost a restart and half an interval",
          "[pricing]") {
  const capcalc::Device d = priced_device();
  Pricing p;
  p.kind = PricingKind::kSpot;
  p.usd_per_device_hour = 1.0;
  p.interruptions_per_device_day = 0.1;  // 10 devices: 1 interruption per day of the job.
  p.restart_s = 3 * 3600;                // Each loses 3 h + 6 h / 2 = 6 h = 0.25 day.
  p.checkpoint_interval_s = 6 * 3600;
  // W = busy / (1 - 1/day x 0.25 day) = 3 days / 0.75 = 4 days; 4 interruptions over it.
  const capcalc::RunCost c = capcalc::price_run(p, d, 3 * 86400, 10);
  CHECK(c.wall_s == Approx(4 * 86400));
  CHECK(c.interruptions == Approx(4));
  // Paid for the wall clock: 10 devices x 96 h x $1.00 = $960.
  CHECK(c.cost_usd.value() == Approx(960));
  // Forty devices: 4 interruptions a day x 0.25 day = 1: the job never ends, and has no cost.
  const capcalc::RunCost never = capcalc::price_run(p, d, 3 * 86400, 40);
  CHECK(std::isinf(never.wall_s));
  CHECK_FALSE(never.cost_usd.has_value());
}

TEST_CASE("owned devices pay their purchase over their life plus power at TDP x PUE", "[pricing]") {
  const capcalc::Device d = priced_device();
  Pricing p;
  p.kind = PricingKind::kOwned;
  p.capex_usd_per_device = 43830;  // Over 5 years of 8,766 h: $1.00 per hour.
  p.life_years = 5;
  p.power_usd_per_kwh = 0.1;  // 0.5 kW x PUE 1.5 x $0.10 = $0.075 per hour.
  p.pue = 1.5;
  const capcalc::RunCost c = capcalc::price_run(p, d, 3600, 4);
  CHECK(c.usd_per_device_hour.value() == Approx(1.075));
  CHECK(c.cost_usd.value() == Approx(4 * 1.075));
  // The defaults, with their sources in pricing.hpp: 5 years, $0.0806/kWh, PUE 1.58.
  const Pricing defaults;
  CHECK(defaults.life_years == 5);
  CHECK(defaults.power_usd_per_kwh == 0.0806);
  CHECK(defaults.pue == 1.58);
  // Without a TDP the power is unknown: no cost rather than a cost without power.
  capcalc::Device no_tdp = d;
  no_tdp.tdp_w = 0;
  CHECK_FALSE(capcalc::price_run(p, no_tdp, 3600, 4).cost_usd.has_value());
}

TEST_CASE("a pricing out of range is refused, naming its field", "[pricing]") {
  Pricing p;
  p.discount = 1;
  CHECK_THROWS_WITH(capcalc::validate_pricing(p), Catch::Contains("discount"));
  p = Pricing{};
  p.kind = PricingKind::kOwned;
  CHECK_THROWS_WITH(capcalc::validate_pricing(p), Catch::Contains("capex_usd_per_device"));
  p.capex_usd_per_device = 1000;
  p.pue = 0.9;
  CHECK_THROWS_WITH(capcalc::validate_pricing(p), Catch::Contains("pue"));
  p.pue = 1.2;
  CHECK_NOTHROW(capcalc::validate_pricing(p));
  CHECK(capcalc::parse_pricing_kind("spot") == PricingKind::kSpot);
  CHECK_FALSE(capcalc::parse_pricing_kind("cheap").has_value());
}
