// `capcalc serve --mix` and `--validate`: runs taken from a file, each prepared as `serve`
// prepares one (serve_run.hpp).
#include <string>
#include <vector>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/serve.hpp"
#include "capcalc/serve_mix.hpp"
#include "capcalc/serve_validation.hpp"

#include "commands.hpp"
#include "formats.hpp"
#include "gates.hpp"
#include "output_file.hpp"
#include "serve_run.hpp"

namespace capcalc::cli {
namespace {

// The flags `serve` would take for one workload of a mix on one candidate.
ServeOptions mix_options(const ServeOptions& o, const MixWorkload& w, const std::string& device,
                         std::int64_t tensor_parallel) {
  ServeOptions run;
  run.hardware = o.hardware;
  run.price_per_hour = o.price_per_hour;
  run.model.path = w.model;
  run.device = device;
  run.precision = w.precision;
  run.kv_precision = w.kv_precision;
  run.runtime = w.runtime;
  run.tensor_parallel = tensor_parallel;
  run.rate = w.rate;
  run.slo = w.slo;
  run.find = "replicas";
  run.prompt_tokens = w.prompt_tokens;
  run.output_tokens = w.output_tokens;
  run.requests = w.requests;
  run.seed = w.seed;
  run.max_batch = w.max_batch;
  run.preferred_batch = w.preferred_batch;
  run.max_queue_delay = w.max_queue_delay;
  return run;
}

// One workload's candidates, each with the fewest replicas meeting its SLO; the cheapest chosen
// (fewer devices, then the first listed, among equals).
FleetPool choose_pool(const ServeOptions& o, const HardwareTable& table, const Mix& mix,
                      const MixWorkload& w) {
  ModelArgs model;
  model.path = w.model;
  try {
    load_model_from(model);  // A model that cannot be read is the mix's error, not a candidate's.
  } catch (const Error& e) {
    if (e.where().file.empty()) throw Error(w.where, e.message());
    // A file that does not open (not a file, too big) is the mix's key's error.
    if (e.where().file != w.model || !e.where().pointer.empty() || e.where().line != 0) throw;
    throw Error({w.where.file, w.where.pointer + "/model", 0, 0},
                fmt::format("{}: {}", w.model, e.message()));
  }
  FleetPool pool;
  pool.workload = &w;
  const std::vector<std::string>& devices = w.devices.empty() ? mix.devices : w.devices;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    try {
      table.get(devices[i]);  // A name the table lacks is the mix's error, not a candidate's.
    } catch (const Error& e) {
      const std::string list = w.devices.empty() ? "/devices/" : w.where.pointer + "/devices/";
      throw Error({w.where.file, list + std::to_string(i), 0, 0}, e.message());
    }
  }
  const std::vector<std::int64_t> sizes =
      w.tensor_parallel.empty() ? std::vector<std::int64_t>{1} : w.tensor_parallel;
  // Cheaper, or as cheap on fewer devices (the first listed among equals).
  const auto better = [](const FleetCandidate& c, const FleetCandidate& best) {
    return c.usd_per_hour < best.usd_per_hour ||
           (c.usd_per_hour == best.usd_per_hour &&
            c.tensor_parallel * c.replicas < best.tensor_parallel * best.replicas);
  };
  for (const std::string& device : devices) {
    for (std::int64_t tp : sizes) {
      FleetCandidate c;
      c.device = device;
      c.tensor_parallel = tp;
      try {
        PreparedRun prepared = prepare_run(mix_options(o, w, device, tp), table, false);
        c.device = prepared.device.id;
        const double price = prepared.setup.usd_per_device_hour;
        ReplicaSearch search = find_replicas(prepared.setup, *prepared.cost, mix.max_replicas);
        c.replicas = search.replicas;
        if (search.replicas == 0) {
          c.why = fmt::format("the SLO is missed even with {} replicas", mix.max_replicas);
        } else if (price <= 0) {
          c.why = fmt::format("{} replica{} meet the SLO, but the table has no price",
                              search.replicas, search.replicas == 1 ? "" : "s");
        } else {
          c.usd_per_hour = price * static_cast<double>(tp * search.replicas);
          if (!pool.chosen || better(c, pool.candidates[*pool.chosen])) {
            pool.chosen = pool.candidates.size();
            pool.result = std::move(search.at_replicas);
            pool.device_name = prepared.device.name;
          }
        }
      } catch (const Error& e) {
        c.why = e.message();
      }
      pool.candidates.push_back(c);
    }
  }
  return pool;
}

}  // namespace

// serve --mix: the fleet; exit 1 when a workload has no candidate meeting its SLO.
int run_serve_mix(const ServeOptions& o) {
  check_writable(o.output);
  if (!o.model.path.empty() || !o.device.empty()) {
    throw Error({}, "--mix runs the file's workloads: no MODEL or --gpu");
  }
  serve_mix_formats().find(o.format);  // Before any work: --format csv is refused.
  const HardwareTable table = load_table(o.hardware);
  const Mix mix = load_mix(o.mix);
  Fleet fleet;
  fleet.file = o.mix;
  fleet.hours_per_month = mix.hours_per_month;
  for (const MixWorkload& w : mix.workloads)
    fleet.pools.push_back(choose_pool(o, table, mix, w));
  write_output(o.output, serve_mix_formats().render(o.format, fleet));
  for (const FleetPool& pool : fleet.pools) {
    if (!pool.chosen) {
      fmt::print(stderr, "capcalc: serve --mix: no candidate meets the SLO of \"{}\"\n",
                 pool.workload->name);
    }
  }
  return fleet.complete() ? 0 : 1;
}

// Every case of a serving validation file, run as `serve` would run it: offline (every request
// at once) or, with an SLO, at the highest rate that meets it. Exit 1 when a gate is exceeded.
int run_serve_validation(const ServeOptions& o) {
  check_writable(o.output);
  if (!o.model.path.empty() || !o.device.empty()) {
    throw Error({}, "--validate runs the file's cases: no MODEL or --gpu");
  }
  // Before the cases run: the summary has no CSV (it used to print the table instead).
  const auto& format = serve_validation_formats().find(o.format);
  const HardwareTable table = load_table(o.hardware);
  const std::vector<ServingCase> cases = load_serving_cases(o.validate);
  std::vector<ServingCheck> checks;
  for (const ServingCase& c : cases) {
    ServeOptions run;
    run.hardware = o.hardware;
    run.model.path = data_dir() + "/models/" + c.model;
    run.device = c.device;
    run.precision = c.precision;
    run.kv_precision = c.kv_precision;
    run.runtime = c.runtime;
    run.tensor_parallel = c.tensor_parallel;
    run.replicas = c.devices / c.tensor_parallel;
    run.prompt_tokens = std::to_string(c.prompt_tokens);
    run.output_tokens = std::to_string(c.output_tokens);
    run.requests = c.requests;
    run.max_num_seqs = c.max_num_seqs;
    run.max_num_batched_tokens = c.max_num_batched_tokens;
    run.slo = c.slo;
    run.rate = "1/s";
    ServeResult result;
    try {
      PreparedRun prepared = prepare_run(run, table, false);
      if (c.slo.empty()) {
        prepared.setup.load.rate_per_s = 1e9;  // Every request queued at once.
        result = serve(prepared.setup, *prepared.cost);
      } else {
        result = find_max_rate(prepared.setup, *prepared.cost).at_rate;
      }
    } catch (const Error& e) {
      throw Error(c.where, e.message());
    }
    checks.push_back({&c, serving_metric(result, c.metric)});
  }
  const ServingSummary summary = summarize_serving(std::move(checks));
  write_output(o.output, format.render(summary));
  const bool failed = gates_fail(
      "serve --validate",
      {summary.median_abs_error, summary.worst_factor, summary.within_2x, summary.checks.size()},
      o.gates);
  return failed ? 1 : 0;
}

}  // namespace capcalc::cli
