#include "capcalc/hardware.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/names.hpp"

#include "input_file.hpp"
#include "json_view.hpp"
#include "spellcheck.hpp"

namespace capcalc {
namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr double kMega = 1e6;
constexpr double kMicro = 1e-6;

constexpr auto kPrecisions = name_table<Precision>({{Precision::kFp64, "fp64"},
                                                    {Precision::kFp32, "fp32"},
                                                    {Precision::kTf32, "tf32"},
                                                    {Precision::kFp16, "fp16"},
                                                    {Precision::kBf16, "bf16"},
                                                    {Precision::kFp8, "fp8"},
                                                    {Precision::kInt8, "int8"},
                                                    {Precision::kInt4, "int4"}});
constexpr auto kDeviceTypes = name_table<DeviceType>({{DeviceType::kCpu, "cpu"},
                                                      {DeviceType::kGpu, "gpu"},
                                                      {DeviceType::kTpu, "tpu"},
                                                      {DeviceType::kAccelerator, "accelerator"}});
constexpr auto kProfiles = name_table<Profile>({{Profile::kEager, "eager"},
                                                {Profile::kGraph, "graph"},
                                                {Profile::kCompiled, "compiled"},
                                                {Profile::kInductor, "inductor"}});
static_assert(kPrecisions.rows.size() == kPrecisionCount);
static_assert(kDeviceTypes.rows.size() == kDeviceTypeCount);

const std::vector<std::string_view> kDeviceKeys = {"id",
                                                   "name",
                                                   "aliases",
                                                   "type",
                                                   "vendor",
                                                   "release_year",
                                                   "dense_peak_tflops",
                                                   "sparsity_2_4_speedup",
                                                   "memory_gb",
                                                   "memory_bandwidth_gb_per_s",
                                                   "cache_mb",
                                                   "compute_units",
                                                   "compute_unit_name",
                                                   "boost_clock_mhz",
                                                   "sustained_matrix_clock_mhz",
                                                   "tdp_w",
                                                   "interconnect",
                                                   "price_per_hour_usd",
                                                   "sources",
                                                   "corroboration",
                                                   "estimated_peaks",
                                                   "notes",
                                                   "performance",
                                                   "comment"};

const std::vector<std::string_view> kPerformanceKeys = {"matrix_efficiency",
                                                        "vector_efficiency",
                                                        "memory_efficiency",
                                                        "eager_overhead_us",
                                                        "graph_overhead_us",
                                                        "compiled_overhead_us",
                                                        "comment"};

bool is_kebab(std::string_view id) {
  if (id.empty() || id.front() == '-' || id.back() == '-') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

// The bounds of physical sense for a device's figures, in the file's units: far outside every
// device built or announced (a wafer-scale engine: 125 PFLOP/s, 21 PB/s on chip) and far below
// the slowest, so that a typo of exponents (1e308, 1e-320) is an error instead of an
// infinite or zero time in the report.
struct Range {
  std::string_view key;
  double low;
  double high;
};
constexpr std::array kPhysicalRanges = {
    Range{"dense_peak_tflops", 1e-6, 1e7},
    Range{"memory_gb", 1e-6, 1e7},
    Range{"memory_bandwidth_gb_per_s", 1e-3, 1e8},
    Range{"cache_mb", 1e-3, 1e7},
    Range{"boost_clock_mhz", 1, 1e6},
    Range{"tdp_w", 1e-3, 1e7},
    Range{"bandwidth_gb_per_s", 1e-3, 1e8},
    Range{"price_per_hour_usd", 1e-6, 1e6},
};

// A host overhead or collective latency past a second is a typo of units.
constexpr double kMaxOverheadUs = 1e6;

double physical(const JsonView& value, std::string_view key) {
  const double x = value.as_positive_number();
  for (const Range& range : kPhysicalRanges) {
    if (range.key == key && (x < range.low || x > range.high)) {
      value.fail(fmt::format("{} = {} is outside physical sense (expected {} to {})", key, x,
                             range.low, range.high));
    }
  }
  return x;
}

double optional_positive(const JsonView& device, std::string_view key, double scale) {
  if (auto value = device.find(key)) return physical(*value, key) * scale;
  return 0;
}

std::string non_empty(const JsonView& value) {
  std::string text = value.as_string();
  if (text.empty()) value.fail("must not be empty");
  return text;
}

// "2026-12-05" (or "2026-12" where `month_only` allows it), a real month and day.
std::string date(const JsonView& value, bool month_only) {
  const std::string text = value.as_string();
  const auto digits = [&](std::size_t at, std::size_t n) {
    int number = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (i >= text.size() || text[i] < '0' || text[i] > '9') return -1;
      number = number * 10 + (text[i] - '0');
    }
    return number;
  };
  const bool shape = (text.size() == 10 && text[4] == '-' && text[7] == '-') ||
                     (month_only && text.size() == 7 && text[4] == '-');
  const int year = digits(0, 4);
  const int month = digits(5, 2);
  const int day = text.size() == 10 ? digits(8, 2) : 1;
  // Days in each month; February has 29 in leap years (Gregorian rule).
  constexpr std::array<int, 12> kDays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
  const bool real = month >= 1 && month <= 12 && day >= 1 &&
                    day <= kDays[static_cast<std::size_t>(month - 1)] + (month == 2 && leap);
  if (!shape || year < 0 || !real) {
    value.fail(fmt::format("expected a date YYYY-MM-DD{}, got \"{}\"",
                           month_only ? " or YYYY-MM" : "", text));
  }
  return text;
}

std::optional<Link> parse_link(const std::optional<JsonView>& link) {
  if (!link) return std::nullopt;
  reject_unknown_keys(
      *link, {"name", "bandwidth_gb_per_s", "direction", "peers", "domain_devices", "comment"},
      "a link");
  Link result;
  result.name = non_empty(link->at("name"));
  result.bandwidth_bytes_per_s =
      physical(link->at("bandwidth_gb_per_s"), "bandwidth_gb_per_s") * kGiga;
  const JsonView direction = link->at("direction");
  result.direction = direction.as_string();
  if (result.direction != "bidirectional" && result.direction != "per_direction") {
    direction.fail(fmt::format("expected \"bidirectional\" or \"per_direction\", got \"{}\"",
                               result.direction));
  }
  if (auto peers = link->find("peers")) {
    const std::int64_t n = peers->as_positive_int();
    if (n > 1024) peers->fail(fmt::format("{} peers: expected at most 1024", n));
    result.peers = static_cast<int>(n);
  }
  if (auto domain = link->find("domain_devices")) {
    const std::int64_t n = domain->as_positive_int();
    if (n > 1'000'000) domain->fail(fmt::format("{} devices: expected at most 1000000", n));
    result.domain_devices = static_cast<int>(n);
  }
  return result;
}

// compute_units and compute_unit_name come together: a count means nothing without its unit.
void parse_compute_units(const JsonView& entry, Device& device) {
  const std::optional<JsonView> units = entry.find("compute_units");
  const std::optional<JsonView> name = entry.find("compute_unit_name");
  if (units) {
    const std::int64_t n = units->as_positive_int();
    if (n > 1'000'000) units->fail(fmt::format("{} compute units: expected at most 1000000", n));
    if (!name) entry.fail("\"compute_units\" needs \"compute_unit_name\" (\"SM\", \"CU\", ...)");
    device.compute_units = static_cast<int>(n);
  }
  if (name) {
    device.compute_unit_name = name->as_string();
    if (device.compute_unit_name.empty()) name->fail("a compute unit name cannot be empty");
    if (!units) entry.fail("\"compute_unit_name\" needs \"compute_units\"");
  }
}

PerformanceOverride parse_override(const JsonView& params);

// "estimated_peaks": {"fp16": {"vector": "why"}}: a peak no vendor document states, with the
// reason; it must name a peak the device has.
void parse_estimates(const JsonView& estimates, Device& device) {
  estimates.expect_object();
  for (const auto& item : estimates.json().items()) {
    const JsonView units = estimates.at(item.key());
    const std::optional<Precision> precision = parse_precision(item.key());
    if (!precision) units.fail(unknown_precision_message(item.key()));
    units.expect_object();
    reject_unknown_keys(units, {"vector", "matrix"}, "an estimated peak");
    PeakEstimate& estimate = device.peak_estimate[static_cast<std::size_t>(*precision)];
    const PeakRate& peak = device.peak(*precision);
    const auto reason = [&](std::string_view unit, double rate) {
      const std::optional<JsonView> text = units.find(unit);
      if (!text) return std::string();
      if (rate <= 0) {
        text->fail(fmt::format("no {} {} peak in dense_peak_tflops to call an estimate", item.key(),
                               unit));
      }
      std::string why = text->as_string();
      if (why.empty()) text->fail("say why the peak is an estimate");
      return why;
    };
    estimate.vector = reason("vector", peak.vector_flops_per_s);
    estimate.matrix = reason("matrix", peak.matrix_flops_per_s);
    if (estimate.empty()) units.fail("give a \"vector\" or a \"matrix\" reason");
  }
}

// "sustained_matrix_clock_mhz": {"fp8": 1230}: the clock the vendor measured under sustained
// dense matrix work, below the boost clock its peaks are stated at; it must name a matrix peak.
void parse_sustained_clocks(const JsonView& clocks, Device& device) {
  clocks.expect_object();
  if (device.boost_clock_hz <= 0) {
    clocks.fail("a sustained clock needs boost_clock_mhz, the clock the peaks are stated at");
  }
  for (const auto& item : clocks.json().items()) {
    const JsonView value = clocks.at(item.key());
    const std::optional<Precision> precision = parse_precision(item.key());
    if (!precision) value.fail(unknown_precision_message(item.key()));
    if (device.peak(*precision).matrix_flops_per_s <= 0) {
      value.fail(
          fmt::format("no {} matrix peak in dense_peak_tflops to run at this clock", item.key()));
    }
    const double hz = physical(value, "boost_clock_mhz") * kMega;
    if (hz > device.boost_clock_hz) {
      value.fail(
          fmt::format("{} MHz is above boost_clock_mhz ({} MHz): a sustained clock is at "
                      "most the one the peaks are stated at",
                      hz / kMega, device.boost_clock_hz / kMega));
    }
    device.sustained_matrix_clock_hz[static_cast<std::size_t>(*precision)] = hz;
  }
}

Device parse_device(const JsonView& entry) {
  entry.expect_object();
  reject_unknown_keys(entry, kDeviceKeys, "a device");
  Device device;
  const JsonView id = entry.at("id");
  device.id = id.as_string();
  if (!is_kebab(device.id))
    id.fail(fmt::format("id \"{}\" must be kebab-case (a-z, 0-9, -)", device.id));
  device.name = non_empty(entry.at("name"));
  if (auto aliases = entry.find("aliases")) {
    for (std::size_t i = 0; i < aliases->array_size(); ++i) {
      device.aliases.push_back(non_empty(aliases->at(i)));
    }
  }
  const JsonView type = entry.at("type");
  const std::optional<DeviceType> parsed_type = parse_device_type(type.as_string());
  if (!parsed_type) {
    type.fail(with_suggestion(fmt::format("unknown device type \"{}\"", type.as_string()),
                              type.as_string(), device_type_names()));
  }
  device.type = *parsed_type;
  device.vendor = non_empty(entry.at("vendor"));
  if (auto year = entry.find("release_year")) {
    const std::int64_t value = year->as_positive_int();
    if (value < 1940 || value > 2100) year->fail(fmt::format("expected a year, got {}", value));
    device.release_year = static_cast<int>(value);
  }

  const JsonView peaks = entry.at("dense_peak_tflops");
  peaks.expect_object();
  for (const auto& item : peaks.json().items()) {
    const JsonView rates = peaks.at(item.key());
    const std::optional<Precision> precision = parse_precision(item.key());
    if (!precision) {
      rates.fail(unknown_precision_message(item.key()));
    }
    reject_unknown_keys(rates, {"vector", "matrix"}, "a peak");
    PeakRate& rate = device.dense_peak[static_cast<std::size_t>(*precision)];
    for (const auto& [key, field] : {std::pair{"vector", &PeakRate::vector_flops_per_s},
                                     std::pair{"matrix", &PeakRate::matrix_flops_per_s}}) {
      if (auto value = rates.find(key)) rate.*field = physical(*value, "dense_peak_tflops") * kTera;
    }
    if (rate.vector_flops_per_s == 0 && rate.matrix_flops_per_s == 0) {
      rates.fail("give a \"vector\" or a \"matrix\" peak");
    }
  }
  if (device.precisions().empty()) peaks.fail("a device needs at least one precision");

  if (auto sparsity = entry.find("sparsity_2_4_speedup")) {
    device.sparsity_2_4_speedup = sparsity->as_positive_number();
    if (device.sparsity_2_4_speedup < 1) sparsity->fail("a speedup must be at least 1");
    if (device.sparsity_2_4_speedup > 2) {
      sparsity->fail("a speedup is at most 2: 2:4 sparsity skips half the products");
    }
  }
  device.memory_bytes = physical(entry.at("memory_gb"), "memory_gb") * kGiga;
  device.memory_bandwidth_bytes_per_s =
      physical(entry.at("memory_bandwidth_gb_per_s"), "memory_bandwidth_gb_per_s") * kGiga;
  device.cache_bytes = optional_positive(entry, "cache_mb", kMega);
  parse_compute_units(entry, device);
  device.boost_clock_hz = optional_positive(entry, "boost_clock_mhz", kMega);
  if (auto clocks = entry.find("sustained_matrix_clock_mhz"))
    parse_sustained_clocks(*clocks, device);
  device.tdp_w = optional_positive(entry, "tdp_w", 1);
  if (auto links = entry.find("interconnect")) {
    reject_unknown_keys(*links, {"intra_node", "inter_node", "comment"}, "an interconnect");
    device.intra_node = parse_link(links->find("intra_node"));
    device.inter_node = parse_link(links->find("inter_node"));
  }
  if (auto price = entry.find("price_per_hour_usd")) {
    reject_unknown_keys(*price, {"value", "date", "source"}, "a price");
    device.price = Price{physical(price->at("value"), "price_per_hour_usd"),
                         date(price->at("date"), true), non_empty(price->at("source"))};
  }
  const JsonView sources = entry.at("sources");
  for (std::size_t i = 0; i < sources.array_size(); ++i) {
    device.sources.push_back(non_empty(sources.at(i)));
  }
  if (device.sources.empty()) sources.fail("every device needs at least one source");
  if (auto copies = entry.find("corroboration")) {
    for (std::size_t i = 0; i < copies->array_size(); ++i) {
      device.corroboration.push_back(copies->at(i).as_string());
    }
  }
  if (auto estimates = entry.find("estimated_peaks")) parse_estimates(*estimates, device);
  if (auto notes = entry.find("notes")) device.notes = notes->as_string();
  if (auto performance = entry.find("performance")) {
    reject_unknown_keys(*performance, kPerformanceKeys, "a device's performance parameters");
    device.performance = parse_override(*performance);
  }
  return device;
}

// The performance keys of a device type or a device; each is optional.
PerformanceOverride parse_override(const JsonView& params) {
  PerformanceOverride result;
  const auto fraction = [&](std::string_view key) -> std::optional<double> {
    const std::optional<JsonView> value = params.find(key);
    if (!value) return std::nullopt;
    const double x = value->as_positive_number();
    if (x > 1) value->fail(fmt::format("an efficiency is a fraction in (0, 1], got {}", x));
    return x;
  };
  const auto overhead = [&](std::string_view key) -> std::optional<double> {
    const std::optional<JsonView> value = params.find(key);
    if (!value) return std::nullopt;
    const double us = value->as_number();
    if (us < 0) value->fail("an overhead cannot be negative");
    if (us > kMaxOverheadUs) value->fail(fmt::format("{} µs is outside physical sense", us));
    return us * kMicro;
  };
  result.matrix_efficiency = fraction("matrix_efficiency");
  result.vector_efficiency = fraction("vector_efficiency");
  result.memory_efficiency = fraction("memory_efficiency");
  result.eager_overhead_s = overhead("eager_overhead_us");
  result.compiled_overhead_s = overhead("compiled_overhead_us");
  result.graph_overhead_s = overhead("graph_overhead_us");
  return result;
}

void apply(PerformanceParams& params, const PerformanceOverride& o) {
  params.matrix_efficiency = o.matrix_efficiency.value_or(params.matrix_efficiency);
  params.vector_efficiency = o.vector_efficiency.value_or(params.vector_efficiency);
  params.memory_efficiency = o.memory_efficiency.value_or(params.memory_efficiency);
  params.eager_overhead_s = o.eager_overhead_s.value_or(params.eager_overhead_s);
  params.compiled_overhead_s = o.compiled_overhead_s.value_or(params.compiled_overhead_s);
  params.graph_overhead_s = o.graph_overhead_s.value_or(params.graph_overhead_s);
}

PerformanceParams parse_performance(const JsonView& params) {
  std::vector<std::string_view> keys = kPerformanceKeys;
  keys.insert(keys.end(),
              {"default_profile", "allreduce_latency_us", "compiled_allreduce_latency_us",
               "network_step_latency_us", "allreduce_efficiency", "misaligned_matrix_efficiency"});
  reject_unknown_keys(params, keys, "performance parameters");
  PerformanceParams result;
  apply(result, parse_override(params));
  for (const auto& [key, field] :
       {std::pair{"allreduce_latency_us", &PerformanceParams::allreduce_latency_s},
        std::pair{"compiled_allreduce_latency_us",
                  &PerformanceParams::compiled_allreduce_latency_s},
        std::pair{"network_step_latency_us", &PerformanceParams::network_step_latency_s}}) {
    if (auto value = params.find(key)) {
      const double us = value->as_number();
      if (us < 0) value->fail("a latency cannot be negative");
      if (us > kMaxOverheadUs) value->fail(fmt::format("{} µs is outside physical sense", us));
      result.*field = us * kMicro;
    }
  }
  for (const auto& [key, field] :
       {std::pair{"allreduce_efficiency", &PerformanceParams::allreduce_efficiency},
        std::pair{"misaligned_matrix_efficiency",
                  &PerformanceParams::misaligned_matrix_efficiency}}) {
    if (auto value = params.find(key)) {
      const double x = value->as_positive_number();
      if (x > 1) value->fail(fmt::format("an efficiency is a fraction in (0, 1], got {}", x));
      result.*field = x;
    }
  }
  if (auto profile = params.find("default_profile")) {
    const std::optional<Profile> parsed = parse_profile(profile->as_string());
    if (!parsed) profile->fail(unknown_profile_message(profile->as_string()));
    result.default_profile = *parsed;
  }
  return result;
}

}  // namespace

std::string_view precision_name(Precision precision) {
  return kPrecisions.name(precision);
}

std::optional<Precision> parse_precision(std::string_view name) {
  return kPrecisions.parse(lookup_key(name));
}

std::string unknown_precision_message(std::string_view name) {
  return with_suggestion(fmt::format("unknown precision \"{}\"", name), name, precision_names());
}

std::vector<std::string_view> precision_names() {
  return kPrecisions.names();
}

std::string_view device_type_name(DeviceType type) {
  return kDeviceTypes.name(type);
}

std::optional<DeviceType> parse_device_type(std::string_view name) {
  return kDeviceTypes.parse(name);
}

std::vector<std::string_view> device_type_names() {
  return kDeviceTypes.names();
}

double weight_bytes_per_element(Precision precision) {
  switch (precision) {
    case Precision::kFp64:
      return 8;
    case Precision::kFp32:
    case Precision::kTf32:  // TF32 is a compute mode; storage stays fp32.
      return 4;
    case Precision::kFp16:
    case Precision::kBf16:
      return 2;
    case Precision::kFp8:
    case Precision::kInt8:
      return 1;
    case Precision::kInt4:
      // 4 bits plus one fp16 scale per group of 128 weights (GPTQ/AWQ layout): 4.125 bits.
      return 0.5 + 2.0 / 128;
  }
  return 4;
}

double activation_bytes_per_element(Precision precision) {
  // FP8 recipes quantize each product's inputs as it reads them; the activations between
  // layers stay in 16 bits (Transformer Engine's modules take and return bf16; TensorRT-LLM's
  // FP8 layers likewise), as do int4 weights' activations.
  if (precision == Precision::kFp8 || precision == Precision::kInt4) return 2;
  return weight_bytes_per_element(precision);
}

double stored_activation_bytes(Precision precision) {
  return precision == Precision::kInt4 ? 2 : weight_bytes_per_element(precision);
}

std::vector<Precision> Device::precisions() const {
  std::vector<Precision> result;
  for (std::size_t i = 0; i < kPrecisionCount; ++i) {
    if (supports(static_cast<Precision>(i))) result.push_back(static_cast<Precision>(i));
  }
  return result;
}

const Device* HardwareTable::find(std::string_view name) const {
  return find_by_name(devices, name);
}

const Device& HardwareTable::get(std::string_view name) const {
  if (const Device* device = find(name)) return *device;
  const std::vector<std::string> keys = names_of(devices);
  const std::vector<std::string_view> known(keys.begin(), keys.end());
  std::string message = fmt::format("unknown device \"{}\"", name);
  if (auto guess = closest_match(name, known)) {
    message += fmt::format("; did you mean \"{}\"?", *guess);
  }
  message += fmt::format(" (closest: {}; `capcalc hw list` shows all)",
                         fmt::join(closest_matches(lookup_key(name), known, 4), ", "));
  throw Error({}, message);
}

HardwareTable parse_hardware(std::string_view text, const std::string& file) {
  const nlohmann::json document = parse_json_text(text, file);
  const JsonView root(document, file);
  root.expect_object();
  reject_unknown_keys(root,
                      {"$schema", "schema_version", "version", "updated", "performance_model",
                       "devices", "comment"},
                      "the hardware table");
  const JsonView version = root.at("schema_version");
  if (version.as_positive_int() != 1) version.fail("unsupported schema_version; expected 1");

  HardwareTable table;
  if (auto text_version = root.find("version")) table.version = text_version->as_string();
  if (auto updated = root.find("updated")) table.updated = date(*updated, false);
  if (auto performance = root.find("performance_model")) {
    performance->expect_object();
    for (const auto& item : performance->json().items()) {
      if (item.key() == "comment") {
        check_free_text(performance->at("comment"), "comment");
        continue;
      }
      const JsonView params = performance->at(item.key());
      const std::optional<DeviceType> type = parse_device_type(item.key());
      if (!type) {
        params.fail(with_suggestion(fmt::format("unknown device type \"{}\"", item.key()),
                                    item.key(), device_type_names()));
      }
      table.performance[static_cast<std::size_t>(*type)] = parse_performance(params);
      table.performance_given[static_cast<std::size_t>(*type)] = true;
    }
  }

  const JsonView devices = root.at("devices");
  std::map<std::string, std::string> owner;  // Normalised name -> device id, for uniqueness.
  for (std::size_t i = 0; i < devices.array_size(); ++i) {
    const JsonView entry = devices.at(i);
    Device device = parse_device(entry);
    std::vector<std::string> names{device.id};
    names.insert(names.end(), device.aliases.begin(), device.aliases.end());
    for (std::size_t n = 0; n < names.size(); ++n) {
      const auto [it, fresh] = owner.emplace(lookup_key(names[n]), device.id);
      if (!fresh &&
          !(n > 0 && it->second == device.id && lookup_key(names[n]) == lookup_key(device.id))) {
        const JsonView where = n == 0 ? entry.at("id") : entry.at("aliases").at(n - 1);
        where.fail(
            fmt::format("the name \"{}\" is already used by device \"{}\"", names[n], it->second));
      }
    }
    table.devices.push_back(std::move(device));
  }
  return table;
}

HardwareTable load_hardware(const std::string& path) {
  return parse_hardware(read_input_file(path), path);
}

// An overlay's entry replaces the device with its id. A name of it (id or alias) that belongs
// to another device would take that one over silently ("H100" asked for, a custom entry
// answered): an error naming the entry's key.
void check_overlay_names(const HardwareTable& base, const std::string& base_file,
                         const HardwareTable& overlay, const std::string& file) {
  for (std::size_t i = 0; i < overlay.devices.size(); ++i) {
    const Device& device = overlay.devices[i];
    std::vector<std::string> names{device.id};
    names.insert(names.end(), device.aliases.begin(), device.aliases.end());
    for (std::size_t n = 0; n < names.size(); ++n) {
      const Device* owner = base.find(names[n]);
      if (owner == nullptr || owner->id == device.id) continue;
      const std::string pointer = n == 0 ? fmt::format("/devices/{}/id", i)
                                         : fmt::format("/devices/{}/aliases/{}", i, n - 1);
      throw Error({file, pointer, 0, 0},
                  fmt::format("the name \"{}\" is already used by device \"{}\" of {}; to "
                              "replace that device, give this entry the id \"{}\"",
                              names[n], owner->id, base_file, owner->id));
    }
  }
}

HardwareTable load_hardware(const std::string& path, const std::vector<std::string>& overlays) {
  HardwareTable table = load_hardware(path);
  for (const std::string& overlay : overlays) {
    HardwareTable extra = load_hardware(overlay);
    check_overlay_names(table, path, extra, overlay);
    merge_hardware(table, std::move(extra));
  }
  return table;
}

void merge_hardware(HardwareTable& base, HardwareTable overlay) {
  for (std::size_t t = 0; t < kDeviceTypeCount; ++t) {
    if (overlay.performance_given[t]) {
      base.performance[t] = overlay.performance[t];
      base.performance_given[t] = true;
    }
  }
  std::vector<Device> merged = std::move(overlay.devices);
  for (Device& device : base.devices) {
    const bool replaced = std::any_of(merged.begin(), merged.end(),
                                      [&](const Device& d) { return d.id == device.id; });
    if (!replaced) merged.push_back(std::move(device));
  }
  base.devices = std::move(merged);
}

PerformanceParams HardwareTable::performance_for(const Device& device) const {
  PerformanceParams params = performance_for(device.type);
  apply(params, device.performance);
  return params;
}

std::string_view profile_name(Profile profile) {
  return kProfiles.name(profile);
}

std::optional<Profile> parse_profile(std::string_view name) {
  return kProfiles.parse(name);
}

std::vector<std::string_view> profile_names() {
  return kProfiles.names();
}

std::string unknown_profile_message(std::string_view name) {
  const std::vector<std::string_view> names = profile_names();
  return with_suggestion(
      fmt::format("unknown profile \"{}\"; expected {}", name, quoted_choices(names)), name, names);
}

bool fuses_elementwise(Profile profile) {
  return profile == Profile::kCompiled || profile == Profile::kInductor;
}

}  // namespace capcalc
