// One table per enumeration (include/capcalc/names.hpp): each value has one printed name that
// parses back to it, aliases parse but are never printed, and the lists the CLI offers are
// the tables' own.
#include "capcalc/names.hpp"

#include <set>
#include <string>
#include <vector>

#include "capcalc/budget.hpp"
#include "capcalc/compare.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/model.hpp"
#include "capcalc/plan.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/pricing.hpp"

#include "catch.hpp"

using namespace capcalc;

namespace {

enum class Colour { kRed, kGreen, kBlue };

constexpr auto kColours = name_table<Colour>(
    {{Colour::kRed, "red"}, {Colour::kGreen, "green"}, {Colour::kRed, "scarlet", true}});

// Every printed name parses back to a value that prints as it, and no name repeats.
template <typename Parse, typename Name>
void check_round_trip(const std::vector<std::string_view>& names, Parse parse, Name name) {
  REQUIRE(!names.empty());
  CHECK(std::set<std::string_view>(names.begin(), names.end()).size() == names.size());
  for (std::string_view n : names) {
    const auto value = parse(n);
    REQUIRE(value.has_value());
    CHECK(name(*value) == n);
  }
}

}  // namespace

TEST_CASE("names: a table prints one name per value and parses its aliases", "[names]") {
  static_assert(kColours.name(Colour::kRed) == "red");
  static_assert(kColours.parse("scarlet") == Colour::kRed);
  CHECK(kColours.name(Colour::kBlue).empty());  // No row: no name.
  CHECK(!kColours.parse("Red").has_value());    // Exact spelling only.
  CHECK(kColours.names() == std::vector<std::string_view>{"red", "green"});
  CHECK(kColours.names(true) == std::vector<std::string_view>{"red", "green", "scarlet"});
}

TEST_CASE("names: every enumeration's names round-trip", "[names]") {
  check_round_trip(precision_names(), parse_precision, precision_name);
  check_round_trip(device_type_names(), parse_device_type, device_type_name);
  check_round_trip(profile_names(), parse_profile, profile_name);
  check_round_trip(mode_names(), parse_mode, mode_name);
  check_round_trip(optimizer_names(false), parse_optimizer, optimizer_name);
  check_round_trip(sparsity_names(), parse_sparsity, sparsity_name);
  check_round_trip(causal_counting_names(), parse_causal_counting, causal_counting_name);
  check_round_trip(plan_objective_names(), parse_plan_objective, plan_objective_name);
  check_round_trip(compare_sort_names(), parse_compare_sort, compare_sort_name);
  check_round_trip(pricing_kind_names(), parse_pricing_kind, pricing_kind_name);
  check_round_trip(limit_names(), parse_limit_kind, limit_name);
  CHECK(device_type_names() == std::vector<std::string_view>{"cpu", "gpu", "tpu", "accelerator"});
  CHECK(sparsity_names() == std::vector<std::string_view>{"dense", "2:4", "unstructured"});
}

TEST_CASE("names: the optimizer's alias parses but is not printed", "[names]") {
  CHECK(parse_optimizer("adamw") == Optimizer::kAdam);
  CHECK(optimizer_name(Optimizer::kAdam) == "adam");
  CHECK(optimizer_names() == std::vector<std::string_view>{"sgd", "momentum", "adam", "adamw"});
  CHECK(optimizer_names(false) == std::vector<std::string_view>{"sgd", "momentum", "adam"});
}
