// capcalc_bench — how long the library takes from model text to a prediction, and whether that
// cost grows linearly in the number of layers.
//
// Each benchmark times one stage, or the whole pipeline, on text prepared outside the timed loop:
//   parse_model (JSON syntax, block expansion, shape inference, per-layer counts)
//   graph_totals (sums and activation liveness)
//   estimate (the roofline per layer) against the "A100" of data/hardware.json, fp16 inference.
// Inputs are data/models/resnet50.json and a generated chain of N layers (linear, relu,
// layernorm, residual add; width 256). items_per_second is layers per second; the generated
// families fit a big-O in N. The serving benchmarks time an LLM request (512 prompt + 128 output
// tokens) from a Hugging Face config: translation, prefill and a decode step.
//
// `capcalc_bench --capcalc_once=N` skips Google Benchmark and runs the pipeline once on the
// N-layer model, for measuring peak memory: /usr/bin/time -v capcalc_bench --capcalc_once=100000
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>

#include <benchmark/benchmark.h>

#include "capcalc/calibrate.hpp"
#include "capcalc/error.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/model.hpp"
#include "capcalc/plan.hpp"
#include "capcalc/predict.hpp"
#include "capcalc/runtime.hpp"
#include "capcalc/validate.hpp"

namespace {

const std::string kDataDir = CAPCALC_BENCH_DATA_DIR;
constexpr std::string_view kDeviceName = "A100";  // An alias of a100-sxm4-80gb.
capcalc::Workload fp16_inference() {
  capcalc::Workload workload;
  workload.precision = capcalc::Precision::kFp16;
  return workload;
}
const capcalc::Workload kWorkload = fp16_inference();

// Reads a whole file (the bench's own: the library's reader lives in a private header).
std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw capcalc::Error({path}, "cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const capcalc::HardwareTable& hardware() {
  static const capcalc::HardwareTable table = capcalc::load_hardware(kDataDir + "/hardware.json");
  return table;
}

const capcalc::Device& device() {
  return hardware().get(kDeviceName);
}

const capcalc::PerformanceParams& params() {
  return hardware().performance_for(device().type);
}

// A chain of `layers` layers named l0, l1, ... on input x of shape [batch, 256], repeating
//   linear(256) -> relu -> layernorm -> add(layernorm, block input)
// so every fourth layer is a residual add with two named inputs.
std::string generated_model_text(std::int64_t layers) {
  std::string text;
  text.reserve(static_cast<std::size_t>(layers) * 64 + 256);
  text +=
      "{\"format\": \"capcalc-model/1\", \"name\": \"chain\", \"dims\": {\"batch\": 8},\n"
      " \"inputs\": [{\"name\": \"x\", \"shape\": [\"batch\", 256]}],\n"
      " \"layers\": [\n";
  for (std::int64_t k = 0; k < layers; ++k) {
    const std::string name = "l" + std::to_string(k);
    if (k > 0) text += ",\n";
    switch (k % 4) {
      case 0:
        text += "  {\"name\": \"" + name + "\", \"op\": \"linear\", \"out_features\": 256}";
        break;
      case 1:
        text += "  {\"name\": \"" + name + "\", \"op\": \"relu\"}";
        break;
      case 2:
        text += "  {\"name\": \"" + name + "\", \"op\": \"layernorm\"}";
        break;
      default: {
        const std::string block_input = k == 3 ? "x" : "l" + std::to_string(k - 4);
        text += "  {\"name\": \"" + name + "\", \"op\": \"add\", \"inputs\": [\"l" +
                std::to_string(k - 1) + "\", \"" + block_input + "\"]}";
        break;
      }
    }
  }
  text += "\n]}\n";
  return text;
}

const std::string& generated_text(std::int64_t layers) {
  static std::map<std::int64_t, std::string> cache;
  auto it = cache.find(layers);
  if (it == cache.end()) it = cache.emplace(layers, generated_model_text(layers)).first;
  return it->second;
}

const std::string& resnet50_text() {
  static const std::string text = read_file(kDataDir + "/models/resnet50.json");
  return text;
}

const capcalc::Graph& generated_graph(std::int64_t layers) {
  static std::map<std::int64_t, capcalc::Graph> cache;
  auto it = cache.find(layers);
  if (it == cache.end()) {
    it = cache.emplace(layers, capcalc::parse_model(generated_text(layers), "chain.json")).first;
  }
  return it->second;
}

// The whole pipeline: what `capcalc estimate` does before rendering.
double run_pipeline(const std::string& text, const std::string& file, std::size_t* layer_count) {
  const capcalc::Graph graph = capcalc::parse_model(text, file);
  const capcalc::GraphTotals totals = capcalc::graph_totals(graph);
  const capcalc::Estimate result = capcalc::estimate(graph, device(), params(), kWorkload);
  *layer_count = graph.layers.size();
  return result.latency_s + static_cast<double>(totals.peak_live_elements);
}

void set_layer_counters(benchmark::State& state, std::size_t layers) {
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(layers));
  state.counters["layers"] = static_cast<double>(layers);
}

// --- resnet50.json ---------------------------------------------------------------------------

void BM_EndToEnd_ResNet50(benchmark::State& state) {
  const std::string& text = resnet50_text();
  std::size_t layers = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(run_pipeline(text, "resnet50.json", &layers));
  set_layer_counters(state, layers);
}
BENCHMARK(BM_EndToEnd_ResNet50)->Unit(benchmark::kMicrosecond);

void BM_Parse_ResNet50(benchmark::State& state) {
  const std::string& text = resnet50_text();
  std::size_t layers = 0;
  for (auto _ : state) {
    const capcalc::Graph graph = capcalc::parse_model(text, "resnet50.json");
    layers = graph.layers.size();
    benchmark::DoNotOptimize(graph.layers.data());
  }
  set_layer_counters(state, layers);
}
BENCHMARK(BM_Parse_ResNet50)->Unit(benchmark::kMicrosecond);

void BM_CountAndEstimate_ResNet50(benchmark::State& state) {
  const capcalc::Graph graph = capcalc::parse_model(resnet50_text(), "resnet50.json");
  for (auto _ : state) {
    const capcalc::GraphTotals totals = capcalc::graph_totals(graph);
    const capcalc::Estimate result = capcalc::estimate(graph, device(), params(), kWorkload);
    benchmark::DoNotOptimize(totals.peak_live_elements);
    benchmark::DoNotOptimize(result.latency_s);
  }
  set_layer_counters(state, graph.layers.size());
}
BENCHMARK(BM_CountAndEstimate_ResNet50)->Unit(benchmark::kMicrosecond);

// --- LLM serving from Hugging Face configs -----------------------------------------------------

// `capcalc estimate CONFIG --prompt-tokens 512 --output-tokens 128`'s library work: the config
// translated and counted twice (prefill, and a decode step over the cache), each estimated.
void serving(benchmark::State& state, const std::string& file) {
  const std::string text = read_file(kDataDir + "/models/" + file);
  capcalc::ServingRequest request;
  request.prompt_tokens = 512;
  request.output_tokens = 128;
  for (auto _ : state) {
    const capcalc::ServingEstimate s = capcalc::estimate_serving(
        [&](std::int64_t seq, std::int64_t cached) {
          capcalc::ModelOptions options;
          options.dims["seq"] = seq;
          options.counting.kv_cache_length = cached;
          return capcalc::parse_model(text, file, options);
        },
        device(), params(), kWorkload, request);
    benchmark::DoNotOptimize(s.decode_step_s);
  }
}

void BM_Serving_Llama2_7B(benchmark::State& state) {
  serving(state, "llama2_7b_hf.json");
}
BENCHMARK(BM_Serving_Llama2_7B)->Unit(benchmark::kMillisecond);

// With a SigLIP tower beside the decoder (dropped from the decode step).
void BM_Serving_Gemma3_4B(benchmark::State& state) {
  serving(state, "gemma3_4b_hf.json");
}
BENCHMARK(BM_Serving_Gemma3_4B)->Unit(benchmark::kMillisecond);

// 61 layers called one by one (3 dense, 58 MoE) with latent attention: DeepSeek-V3.
void BM_Serving_DeepSeekV3(benchmark::State& state) {
  serving(state, "deepseek_v3_hf.json");
}
BENCHMARK(BM_Serving_DeepSeekV3)->Unit(benchmark::kMillisecond);

// --- generated chains of N layers ------------------------------------------------------------

void generated_sizes(benchmark::internal::Benchmark* b) {
  b->Arg(1'000)
      ->Arg(10'000)
      ->Arg(100'000)
      ->Unit(benchmark::kMillisecond)
      ->Complexity(benchmark::oN);
}

void BM_EndToEnd_Generated(benchmark::State& state) {
  const std::string& text = generated_text(state.range(0));
  std::size_t layers = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(run_pipeline(text, "chain.json", &layers));
  set_layer_counters(state, layers);
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_EndToEnd_Generated)->Apply(generated_sizes);

void BM_Parse_Generated(benchmark::State& state) {
  const std::string& text = generated_text(state.range(0));
  std::size_t layers = 0;
  for (auto _ : state) {
    const capcalc::Graph graph = capcalc::parse_model(text, "chain.json");
    layers = graph.layers.size();
    benchmark::DoNotOptimize(graph.layers.data());
  }
  set_layer_counters(state, layers);
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_Parse_Generated)->Apply(generated_sizes);

void BM_Count_Generated(benchmark::State& state) {
  const capcalc::Graph& graph = generated_graph(state.range(0));
  for (auto _ : state) {
    const capcalc::GraphTotals totals = capcalc::graph_totals(graph);
    benchmark::DoNotOptimize(totals.peak_live_elements);
  }
  set_layer_counters(state, graph.layers.size());
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_Count_Generated)->Apply(generated_sizes);

void BM_Estimate_Generated(benchmark::State& state) {
  const capcalc::Graph& graph = generated_graph(state.range(0));
  for (auto _ : state) {
    const capcalc::Estimate result = capcalc::estimate(graph, device(), params(), kWorkload);
    benchmark::DoNotOptimize(result.latency_s);
  }
  set_layer_counters(state, graph.layers.size());
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_Estimate_Generated)->Apply(generated_sizes);

// --- layout search ---------------------------------------------------------------------------

// `capcalc plan` for Llama 3.1 405B (15.6 T tokens, a global batch of 512 sequences of 8,192
// tokens) over five device types up to 16,384 devices each, bf16 with Adam: the whole search,
// the graph of each micro-batch size included. items_per_second is layouts timed per second.
void BM_Plan_Llama3_405B(benchmark::State& state) {
  const std::string text = read_file(kDataDir + "/models/llama3_405b.json");
  const capcalc::HardwareTable& table = hardware();
  capcalc::PlanRequest request;
  for (const char* name : {"h100-sxm", "h200", "b200", "mi300x", "a100-sxm4-80gb"}) {
    request.devices.push_back(&table.get(name));
  }
  request.max_devices = 16384;
  request.global_batch = 512;
  request.samples = 15.6e12 / 8192;
  const capcalc::PlanGraphBuilder build = [&text](std::int64_t batch) {
    capcalc::ModelOptions options;
    options.dims["batch"] = batch;
    return capcalc::parse_model(text, "llama3_405b.json", options);
  };
  std::int64_t layouts = 0;
  for (auto _ : state) {
    const capcalc::PlanResult result = capcalc::plan(build, table, request);
    layouts = result.layouts_searched;
    benchmark::DoNotOptimize(result.rows.data());
  }
  state.counters["layouts"] = static_cast<double>(layouts);
  state.SetItemsProcessed(state.iterations() * layouts);
}
BENCHMARK(BM_Plan_Llama3_405B)->Unit(benchmark::kSecond)->Iterations(1);

// DeepSeek-V3 training with its multi-token-prediction module on 256 B200s (PP 16, EP 16 over
// two nodes, HybridEP's per-node dispatch): loading the config with the module appended, and
// one estimate of the step.
void BM_Training_DeepSeekV3_MTP(benchmark::State& state) {
  const std::string text = read_file(kDataDir + "/models/deepseek_v3_hf.json");
  const capcalc::Device& b200 = hardware().get("b200");
  capcalc::Workload w;
  w.mode = capcalc::Mode::kTraining;
  w.precision = capcalc::Precision::kFp8;
  w.devices = 256;
  w.pipeline_parallel = 16;
  w.expert_parallel = 16;
  w.micro_batches = 128;
  w.moe_dispatcher = capcalc::MoeDispatcher::kHybridEP;
  capcalc::ModelOptions options;
  options.dims["seq"] = 4096;
  options.mtp_layers = 1;
  for (auto _ : state) {
    const capcalc::Graph graph = capcalc::parse_model(text, "deepseek_v3_hf.json", options);
    benchmark::DoNotOptimize(capcalc::estimate(graph, b200, hardware().performance_for(b200), w));
  }
}
BENCHMARK(BM_Training_DeepSeekV3_MTP)->Unit(benchmark::kMillisecond);

// calibrate on the project's 44 H200 measurements (six zoo models, serving cases among them):
// a few hundred validations of the same cases, each model read and expanded once (ModelCache).
void BM_Calibrate_H200(benchmark::State& state) {
  const capcalc::HardwareTable& table = hardware();
  const capcalc::RuntimeTable runtimes = capcalc::load_runtimes(kDataDir + "/runtimes.json");
  const std::vector<capcalc::Measurement> records =
      capcalc::load_measurements(kDataDir + "/validation/measured_h200.json");
  for (auto _ : state) {
    const capcalc::CalibrationResult result =
        capcalc::calibrate(records, table, kDataDir + "/models", &runtimes);
    benchmark::DoNotOptimize(result.fits.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(records.size()));
}
BENCHMARK(BM_Calibrate_H200)->Unit(benchmark::kSecond)->Iterations(1);

// --- driver mode for peak-memory measurement -------------------------------------------------

int run_once(std::int64_t layers) {
  const std::string& text = generated_text(layers);
  const auto start = std::chrono::steady_clock::now();
  std::size_t count = 0;
  const double sink = run_pipeline(text, "chain.json", &count);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  std::printf("capcalc_once: %zu layers, %zu bytes of JSON, end to end %.3f s (checksum %g)\n",
              count, text.size(), elapsed.count(), sink);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  constexpr std::string_view kOnce = "--capcalc_once=";
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (arg.substr(0, kOnce.size()) == kOnce) {
        return run_once(std::strtoll(argv[i] + kOnce.size(), nullptr, 10));
      }
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  } catch (const capcalc::Error& e) {
    std::fprintf(stderr, "capcalc_bench: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
