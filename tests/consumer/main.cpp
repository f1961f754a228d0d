// Counts a model with the installed library: `consumer MODEL HARDWARE DEVICE` prints the
// parameters, the forward MACs and whether the model fits the device.
#include <cstdio>

#include "capcalc/error.hpp"
#include "capcalc/graph.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/model.hpp"
#include "capcalc/predict.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fputs("usage: consumer MODEL HARDWARE DEVICE\n", stderr);
    return 2;
  }
  try {
    const capcalc::Graph graph = capcalc::load_model(argv[1]);
    const capcalc::GraphTotals totals = capcalc::graph_totals(graph);
    const capcalc::HardwareTable table = capcalc::load_hardware(argv[2]);
    const capcalc::Device& device = table.get(argv[3]);
    const capcalc::Estimate estimate =
        capcalc::estimate(graph, device, table.performance_for(device), capcalc::Workload{});
    std::printf("params %lld macs %lld fits %s\n", static_cast<long long>(totals.params),
                static_cast<long long>(totals.macs), estimate.fits ? "yes" : "no");
    return 0;
  } catch (const capcalc::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 2;
  }
}
