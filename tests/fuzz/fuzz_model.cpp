// Fuzz target: capcalc's model JSON and Hugging Face config.json (parse_model), then the
// counts and a prediction for every mode on one GPU, so that shapes the parser accepts are
// also fed to the counting and timing code.
#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/model.hpp"
#include "capcalc/predict.hpp"

#include "fuzz_target.hpp"

namespace {

const capcalc::HardwareTable& table() {
  static const capcalc::HardwareTable loaded =
      capcalc::load_hardware(CAPCALC_FUZZ_DATA_DIR "/hardware.json");
  return loaded;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  capcalc::fuzz::expect_located_errors([&] {
    const capcalc::Graph graph =
        capcalc::parse_model(capcalc::fuzz::as_text(data, size), "fuzz.json");
    (void)capcalc::graph_totals(graph);
    const capcalc::Device& device = table().get("h100-sxm");
    for (capcalc::Mode mode : {capcalc::Mode::kInference, capcalc::Mode::kTraining}) {
      capcalc::Workload workload;
      workload.precision = capcalc::Precision::kBf16;
      workload.mode = mode;
      (void)capcalc::estimate(graph, device, table().performance_for(device), workload);
    }
  });
  return 0;
}
