// capcalc_bench's serving simulator benchmarks (issue 23): Llama-2-7B (its Hugging Face config)
// in bf16 on an H100 under vLLM's defaults for it (8,192-token budget, 1,024 sequences, blocks
// of 16, 90 % of memory), 1,000 prompt + 250 output tokens.
//   BM_Serve_Llama2_7B_Saturation: 100,000 requests all arriving at once (the server saturated
//     throughout), step times already cached: the simulator alone.
//   BM_Serve_Llama2_7B_Cold: the same with a fresh step-time cache (the estimates included).
//   BM_Serve_Llama2_7B_Saturation_8Ranks: the saturated run on 8 data-parallel attention ranks
//     stepping together (each rank's cache and limits as above): the lockstep simulator alone.
//   BM_Serve_Llama2_7B_FindMaxRate: --find max-rate for ttft_p99=500ms,tpot_p99=50ms over runs
//     of 2,000 requests (the command's default), from a fresh cache.
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "capcalc/hardware.hpp"
#include "capcalc/model.hpp"
#include "capcalc/runtime.hpp"
#include "capcalc/serve.hpp"

namespace {

const std::string kServeDataDir = CAPCALC_BENCH_DATA_DIR;

struct Llama {
  capcalc::HardwareTable table = capcalc::load_hardware(kServeDataDir + "/hardware.json");
  capcalc::RuntimeTable runtimes = capcalc::load_runtimes(kServeDataDir + "/runtimes.json");
  const capcalc::Device& device = table.get("h100-sxm");
  capcalc::Workload workload;
  capcalc::BatchGraphBuilder build;
  capcalc::ServeSetup setup;

  Llama() {
    workload.precision = capcalc::Precision::kBf16;
    workload.runtime = runtimes.get("vllm");
    const std::string path = kServeDataDir + "/models/llama2_7b_hf.json";
    build = [path](std::int64_t batch, std::int64_t seq, std::int64_t cached) {
      capcalc::ModelOptions options;
      options.dims["batch"] = batch;
      if (seq > 0) options.dims["seq"] = seq;
      options.counting.kv_cache_length = cached;
      return capcalc::load_model(path, options);
    };
    const capcalc::ServingDefaults d =
        capcalc::serving_defaults_for(*workload.runtime->serving, device);
    setup.continuous.max_num_batched_tokens = d.max_num_batched_tokens;
    setup.continuous.max_num_seqs = d.max_num_seqs;
    setup.continuous.block_size = d.block_size;
    setup.continuous.kv_blocks =
        capcalc::kv_capacity(build, device, table.performance_for(device), workload, d.block_size,
                             d.max_num_batched_tokens, d.memory_utilization)
            .blocks;
    setup.load.prompt.a = 1000;
    setup.load.output.a = 250;
  }
  capcalc::ModelStepCost cost() const {
    return capcalc::ModelStepCost(build, device, table.performance_for(device), workload);
  }
};

const Llama& llama() {
  static const Llama instance;
  return instance;
}

std::size_t used_estimates(capcalc::StepCost& cost) {
  return static_cast<capcalc::ModelStepCost&>(cost).estimates();
}

void saturation(benchmark::State& state, bool warm, std::int64_t ranks = 1) {
  capcalc::ServeSetup setup = llama().setup;
  setup.continuous.attention_ranks = ranks;
  setup.load.requests = 100'000;
  setup.load.rate_per_s = 1e9;
  capcalc::ModelStepCost cost = llama().cost();
  if (warm) capcalc::serve(setup, cost);
  double tokens_per_s = 0;
  for (auto _ : state) {
    capcalc::ModelStepCost fresh = llama().cost();
    capcalc::StepCost& used = warm ? static_cast<capcalc::StepCost&>(cost) : fresh;
    const capcalc::ServeResult r = capcalc::serve(setup, used);
    tokens_per_s = r.output_tokens_per_s;
    state.counters["steps"] = static_cast<double>(r.steps);
    state.counters["preemptions"] = static_cast<double>(r.preemptions);
    state.counters["estimates"] = static_cast<double>(used_estimates(used));
  }
  state.counters["sim_output_tok_per_s"] = tokens_per_s;
  state.SetItemsProcessed(state.iterations() * setup.load.requests);
}

void BM_Serve_Llama2_7B_Saturation(benchmark::State& state) {
  saturation(state, true);
}
BENCHMARK(BM_Serve_Llama2_7B_Saturation)->Unit(benchmark::kMillisecond);

void BM_Serve_Llama2_7B_Cold(benchmark::State& state) {
  saturation(state, false);
}
BENCHMARK(BM_Serve_Llama2_7B_Cold)->Unit(benchmark::kMillisecond);

void BM_Serve_Llama2_7B_Saturation_8Ranks(benchmark::State& state) {
  saturation(state, true, 8);
}
BENCHMARK(BM_Serve_Llama2_7B_Saturation_8Ranks)->Unit(benchmark::kMillisecond);

void BM_Serve_Llama2_7B_FindMaxRate(benchmark::State& state) {
  capcalc::ServeSetup setup = llama().setup;
  setup.slo = capcalc::parse_slo("ttft_p99=500ms,tpot_p99=50ms");
  double rate = 0;
  int runs = 0;
  for (auto _ : state) {
    capcalc::ModelStepCost cost = llama().cost();
    const capcalc::RateSearch search = capcalc::find_max_rate(setup, cost);
    rate = search.rate_per_s;
    runs = search.runs;
  }
  state.counters["max_rate_per_s"] = rate;
  state.counters["runs"] = runs;
}
BENCHMARK(BM_Serve_Llama2_7B_FindMaxRate)->Unit(benchmark::kMillisecond);

}  // namespace
