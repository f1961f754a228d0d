#include "capcalc/serve_mix.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string_view>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capcalc/units.hpp"

#include "input_file.hpp"
#include "json_view.hpp"
#include "report_json.hpp"
#include "table.hpp"

namespace capcalc {
namespace {

const std::vector<std::string_view> kMixKeys = {"schema_version",  "description",  "devices",
                                                "hours_per_month", "max_replicas", "workloads"};

const std::vector<std::string_view> kWorkloadKeys = {"name",
                                                     "model",
                                                     "rate",
                                                     "slo",
                                                     "prompt_tokens",
                                                     "output_tokens",
                                                     "devices",
                                                     "tensor_parallel",
                                                     "precision",
                                                     "kv_precision",
                                                     "runtime",
                                                     "max_batch",
                                                     "preferred_batch",
                                                     "max_queue_delay",
                                                     "requests",
                                                     "seed"};

// A string member read and checked by `check` (which throws capcalc::Error); the error is
// located at the member.
template <typename F>
std::string checked_string(const JsonView& object, std::string_view key, F check) {
  const JsonView value = object.at(key);
  std::string text = value.as_string();
  try {
    check(text);
  } catch (const Error& e) {
    value.fail(e.message());
  }
  return text;
}

// A length: a whole number or a distribution's text ("uniform:500..1500").
std::string length_text(const JsonView& value, std::string_view key) {
  std::string text =
      value.is_number() ? std::to_string(value.as_positive_int()) : value.as_string();
  try {
    parse_length_distribution(text, std::string(key));
  } catch (const Error& e) {
    value.fail(e.message());
  }
  return text;
}

std::vector<std::string> device_list(const JsonView& list) {
  std::vector<std::string> ids;
  if (list.array_size() == 0) list.fail("no devices: list at least one device id");
  for (std::size_t i = 0; i < list.array_size(); ++i)
    ids.push_back(list.at(i).as_string());
  return ids;
}

MixWorkload parse_workload(const JsonView& w, const std::string& folder) {
  w.expect_object();
  reject_unknown_keys(w, kWorkloadKeys, "a mix workload");
  MixWorkload m;
  m.where = {w.file(), w.pointer(), 0, 0};
  m.name = w.at("name").as_string();
  if (m.name.empty()) w.at("name").fail("a workload needs a name");
  m.model = w.at("model").as_string();
  std::error_code ignored;
  if (!m.model.empty() && m.model.front() != '/' &&
      std::filesystem::exists(std::filesystem::symlink_status(folder + m.model, ignored))) {
    // Beside the mix file (whatever it is: reading refuses a FIFO), else a zoo name or a path
    // from here.
    m.model = folder + m.model;
  }
  m.rate = checked_string(w, "rate", [&](const std::string& t) {
    m.rate_per_s = parse_rate(t);
    if (!(m.rate_per_s >= 1e-6 && m.rate_per_s <= 1e9)) {  // As serve --rate: the clock's range.
      throw Error(
          {}, fmt::format("a rate must be between 1e-6/s and 1e9/s (got {:g}/s)", m.rate_per_s));
    }
  });
  m.slo = checked_string(w, "slo", [](const std::string& t) { parse_slo(t); });
  if (auto prompt = w.find("prompt_tokens"))
    m.prompt_tokens = length_text(*prompt, "prompt_tokens");
  if (auto output = w.find("output_tokens")) {
    if (m.prompt_tokens.empty()) output->fail("output_tokens needs prompt_tokens (an LLM)");
    m.output_tokens = length_text(*output, "output_tokens");
  }
  if (auto devices = w.find("devices")) m.devices = device_list(*devices);
  if (auto tp = w.find("tensor_parallel")) {
    if (tp->array_size() == 0) tp->fail("no sizes: list at least one");
    for (std::size_t i = 0; i < tp->array_size(); ++i)
      m.tensor_parallel.push_back(tp->at(i).as_positive_int());
  }
  for (auto [key, field] :
       {std::pair{"precision", &m.precision}, std::pair{"kv_precision", &m.kv_precision},
        std::pair{"runtime", &m.runtime}, std::pair{"preferred_batch", &m.preferred_batch}}) {
    if (auto value = w.find(key)) *field = value->as_string();
  }
  if (auto delay = w.find("max_queue_delay")) {
    m.max_queue_delay =
        checked_string(w, "max_queue_delay", [](const std::string& t) { parse_duration(t); });
  }
  if (auto batch = w.find("max_batch")) m.max_batch = batch->as_positive_int();
  const bool batcher = m.max_batch || !m.preferred_batch.empty() || !m.max_queue_delay.empty();
  if (batcher && !m.prompt_tokens.empty()) {
    w.fail(
        "max_batch, preferred_batch and max_queue_delay set Triton's dynamic batcher: an LLM "
        "(prompt_tokens) is served by continuous batching");
  }
  if (auto requests = w.find("requests")) {
    m.requests = requests->as_positive_int();
    if (m.requests > 1'000'000) requests->fail("at most 1,000,000 requests");
  }
  if (auto seed = w.find("seed")) m.seed = seed->as_integer();
  if (m.seed < 0) w.at("seed").fail("a seed is 0 or more");
  return m;
}

}  // namespace

Mix parse_mix(const std::string& text, const std::string& file) {
  const nlohmann::json document = parse_json_text(text, file);
  const JsonView root(document, file);
  root.expect_object();
  reject_unknown_keys(root, kMixKeys, "a mix file");
  const JsonView version = root.at("schema_version");
  if (version.as_positive_int() != 1) version.fail("unsupported schema_version; expected 1");
  Mix mix;
  if (auto devices = root.find("devices")) mix.devices = device_list(*devices);
  if (auto hours = root.find("hours_per_month")) {
    mix.hours_per_month = hours->as_positive_number();
    if (mix.hours_per_month > 744) hours->fail("a month has at most 744 hours (31 days)");
  }
  if (auto most = root.find("max_replicas")) {
    mix.max_replicas = most->as_positive_int();
    if (mix.max_replicas > 4096) most->fail("at most 4096 replicas per workload");
  }
  const std::size_t slash = file.rfind('/');
  const std::string folder = slash == std::string::npos ? "" : file.substr(0, slash + 1);
  const JsonView workloads = root.at("workloads");
  if (workloads.array_size() == 0) workloads.fail("no workloads: a mix needs one");
  for (std::size_t i = 0; i < workloads.array_size(); ++i) {
    const JsonView w = workloads.at(i);
    mix.workloads.push_back(parse_workload(w, folder));
    const MixWorkload& added = mix.workloads.back();
    if (added.devices.empty() && mix.devices.empty()) {
      w.fail("no devices to try: give the workload \"devices\" or the mix a \"devices\" list");
    }
    for (std::size_t j = 0; j + 1 < mix.workloads.size(); ++j) {
      if (mix.workloads[j].name == added.name) {
        w.at("name").fail(fmt::format("the name \"{}\" is used twice", added.name));
      }
    }
  }
  return mix;
}

Mix load_mix(const std::string& path) {
  return parse_mix(read_input_file(path), path);
}

double Fleet::usd_per_hour() const {
  double total = 0;
  for (const FleetPool& pool : pools) {
    if (pool.chosen) total += pool.candidates[*pool.chosen].usd_per_hour;
  }
  return total;
}

bool Fleet::complete() const {
  return std::all_of(pools.begin(), pools.end(),
                     [](const FleetPool& pool) { return pool.chosen.has_value(); });
}

namespace {

// "ttft_p99 182 ms, tpot_p99 13 ms": the SLO's statistics as the run met them.
std::string slo_text(const ServeResult& r) {
  std::vector<std::string> parts;
  for (const SloLimit& limit : r.slo) {
    parts.push_back(fmt::format("{}_{} {}", limit.metric, limit.statistic,
                                format_duration(slo_value(r, limit))));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string candidate_text(const FleetCandidate& c) {
  const std::string name =
      c.tensor_parallel > 1 ? fmt::format("{} x{}", c.device, c.tensor_parallel) : c.device;
  if (!c.why.empty()) return fmt::format("{}: {}", name, c.why);
  return fmt::format("{}: {} replica{}, {}/h", name, c.replicas, c.replicas == 1 ? "" : "s",
                     format_usd(c.usd_per_hour));
}

}  // namespace

std::string render_fleet_text(const Fleet& fleet) {
  std::string out =
      fmt::format("Fleet for {}: the cheapest devices meeting each workload's SLO\n", fleet.file);
  TextTable table;
  table.add_column("workload", TextTable::Align::kLeft);
  table.add_column("rate", TextTable::Align::kRight);
  table.add_column("device", TextTable::Align::kLeft);
  table.add_column("TP", TextTable::Align::kRight);
  table.add_column("replicas", TextTable::Align::kRight);
  table.add_column("busy", TextTable::Align::kRight);
  table.add_column("at the SLO", TextTable::Align::kLeft);
  table.add_column("per month", TextTable::Align::kRight);
  for (const FleetPool& pool : fleet.pools) {
    if (!pool.chosen) {
      table.add_row(
          {pool.workload->name, pool.workload->rate, "none meets the SLO", "", "", "", "", ""});
      continue;
    }
    const FleetCandidate& c = pool.candidates[*pool.chosen];
    table.add_row({pool.workload->name, pool.workload->rate, pool.device_name,
                   std::to_string(c.tensor_parallel), std::to_string(c.replicas),
                   fmt::format("{:.0f} %", pool.result.busy_fraction * 100), slo_text(pool.result),
                   format_usd(c.usd_per_hour * fleet.hours_per_month)});
  }
  out += table.render("  ");
  out +=
      fmt::format("  total        {} per month ({}/h over {:g} h a month){}\n",
                  format_usd(fleet.usd_per_hour() * fleet.hours_per_month),
                  format_usd(fleet.usd_per_hour()), fleet.hours_per_month,
                  fleet.complete() ? "" : "; INCOMPLETE: a workload has no device meeting its SLO");
  out += "\nCandidates tried (the table's indicative prices)\n";
  for (const FleetPool& pool : fleet.pools) {
    std::vector<std::string> tried;
    for (const FleetCandidate& c : pool.candidates)
      tried.push_back(candidate_text(c));
    out += fmt::format("  {}: {}\n", pool.workload->name, fmt::join(tried, "; "));
  }
  return out;
}

std::string render_fleet_json(const Fleet& fleet) {
  nlohmann::ordered_json doc;
  doc["schema_version"] = 1;
  doc["file"] = fleet.file;
  doc["hours_per_month"] = fleet.hours_per_month;
  doc["complete"] = fleet.complete();
  doc["usd_per_hour"] = fleet.usd_per_hour();
  doc["usd_per_month"] = fleet.usd_per_hour() * fleet.hours_per_month;
  nlohmann::ordered_json pools = nlohmann::ordered_json::array();
  for (const FleetPool& pool : fleet.pools) {
    nlohmann::ordered_json p;
    p["workload"] = pool.workload->name;
    p["model"] = pool.workload->model;
    p["rate_per_s"] = pool.workload->rate_per_s;
    nlohmann::ordered_json tried = nlohmann::ordered_json::array();
    for (const FleetCandidate& c : pool.candidates) {
      nlohmann::ordered_json j;
      j["device"] = c.device;
      j["tensor_parallel"] = c.tensor_parallel;
      j["replicas"] = c.replicas;
      j["usd_per_hour"] = c.usd_per_hour;
      j["why_not"] = c.why.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(c.why);
      tried.push_back(j);
    }
    if (pool.chosen) {
      const FleetCandidate& c = pool.candidates[*pool.chosen];
      p["choice"] = {{"device", c.device},
                     {"device_name", pool.device_name},
                     {"tensor_parallel", c.tensor_parallel},
                     {"replicas", c.replicas},
                     {"busy_fraction", pool.result.busy_fraction},
                     {"slo_met", pool.result.slo_met},
                     {"usd_per_hour", c.usd_per_hour},
                     {"usd_per_month", c.usd_per_hour * fleet.hours_per_month}};
    } else {
      p["choice"] = nullptr;
    }
    p["candidates"] = tried;
    pools.push_back(p);
  }
  doc["pools"] = pools;
  return json_text(doc);
}

}  // namespace capcalc
