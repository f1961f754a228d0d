// Two-level collectives (src/collectives.hpp), each time derived by hand on round links: a
// scale-up link of 100 GB/s per direction joining 4 devices a node, a network of 10 GB/s per
// direction per device, 10 us a level at 50 % of the bandwidth and 5 us per network step.
// Formulas: HCCL's "Hierarchical Communication Principles" (three levels across nodes),
// nccl-tests doc/PERFORMANCE.md (a ring all-reduce moves 2(n-1)/n of its bytes, a
// reduce-scatter or an all-gather (n-1)/n) and NCCL's tuning model for the network level
// (src/graph/tuning.cc: 2(m-1) ring steps or 2 log2(m) tree steps per all-reduce).
#include "collectives.hpp"

#include "catch.hpp"
#include "round_device.hpp"

using namespace capcalc;
using capcalc::test::round_device;
using capcalc::test::round_params;

namespace {

constexpr double kBytes = 1e9;
constexpr double kLatency = 10e-6;
constexpr double kStep = 5e-6;  // Per network step.

Device two_level_device() {
  Device d = round_device();
  d.intra_node = Link{"Round link", 200e9, "bidirectional"};  // 100 GB/s per direction.
  d.intra_node->domain_devices = 4;
  d.inter_node = Link{"Round network", 10e9, "per_direction"};
  return d;
}

PerformanceParams collective_params() {
  PerformanceParams p = round_params();
  p.allreduce_latency_s = kLatency;
  p.compiled_allreduce_latency_s = 4e-6;
  p.allreduce_efficiency = 0.5;
  p.network_step_latency_s = kStep;
  return p;
}

double time(const CollectiveGroup& group, Collective kind, Profile profile = Profile::kEager) {
  return collective_s(group, collective_params(), profile, kind, kBytes);
}

}  // namespace

TEST_CASE("collectives: a group inside one node is one ring over the scale-up link",
          "[collectives]") {
  const Device device = two_level_device();
  const CollectiveGroup group = collective_group(device, 1, 4);
  REQUIRE(group.modelled);
  CHECK(group.network == nullptr);
  CHECK(group.per_node == 4);
  CHECK(group.nodes == 1);
  CHECK(group.intra_per_direction == Approx(100e9));
  CHECK(group.link_name() == "Round link");
  // 2·3/4 of 1 GB at 50 GB/s; a reduce-scatter or an all-gather half of it.
  CHECK(time(group, Collective::kAllReduce) == Approx(kLatency + 1.5 * kBytes / 50e9));
  CHECK(time(group, Collective::kReduceScatter) == Approx(kLatency + 0.75 * kBytes / 50e9));
  CHECK(time(group, Collective::kAllGather) == Approx(kLatency + 0.75 * kBytes / 50e9));
  // Compiled engines' latency.
  CHECK(time(group, Collective::kAllReduce, Profile::kCompiled) ==
        Approx(4e-6 + 1.5 * kBytes / 50e9));
  // Two replicas of 2 (stride 2) fill the node: still inside it.
  CHECK(collective_group(device, 2, 2).network == nullptr);
}

TEST_CASE("collectives: a group over 2 nodes x 4 devices runs in two levels", "[collectives]") {
  const Device device = two_level_device();
  const CollectiveGroup group = collective_group(device, 1, 8);
  REQUIRE(group.modelled);
  CHECK(group.per_node == 4);
  CHECK(group.nodes == 2);
  CHECK(group.intra_per_direction == Approx(100e9));
  CHECK(group.network_per_direction == Approx(10e9));
  CHECK(group.link_name() == "Round link + Round network");
  // Reduce-scatter in the node: 10 us + 3/4 x 1 GB / 50 GB/s = 15.01 ms; all-reduce of each
  // device's 1/4 (250 MB) over 2 nodes, a ring of 2 network steps: 10 us + 2 x 5 us + 2·1/2 x
  // 250 MB / 5 GB/s = 50.02 ms (a tree, 2 log2 2 = 2 steps at 0.46 x 5 GB/s, would take
  // 108.7 ms); all-gather in the node: 15.01 ms again. 80.04 ms, where a flat ring at the
  // network's 5 GB/s would take 2·7/8 x 1 GB / 5 GB/s = 350 ms.
  const double intra = kLatency + 0.75 * kBytes / 50e9;
  const double across = kLatency + 2 * kStep + 1.0 * (kBytes / 4) / 5e9;
  CHECK(time(group, Collective::kAllReduce) == Approx(2 * intra + across));
  CHECK(time(group, Collective::kAllReduce) == Approx(0.08004));
  // A reduce-scatter: one level each, (n-1)/n: in the node, then 1/2 of the 250 MB across in
  // one network step.
  const double half_across = kLatency + kStep + 0.5 * (kBytes / 4) / 5e9;
  CHECK(time(group, Collective::kReduceScatter) == Approx(intra + half_across));
  CHECK(time(group, Collective::kAllGather) == Approx(intra + half_across));
  // Tensor-parallel pairs (stride 2), 4 replicas: 2 per node, 2 nodes.
  const CollectiveGroup pairs = collective_group(device, 2, 4);
  CHECK(pairs.per_node == 2);
  CHECK(pairs.nodes == 2);
  CHECK(time(pairs, Collective::kAllReduce) ==
        Approx(2 * (kLatency + 0.5 * kBytes / 50e9) + kLatency + 2 * kStep + (kBytes / 2) / 5e9));
  // 6 members with room for 4 a node: 3 in each of 2 nodes (the same count in every node).
  const CollectiveGroup six = collective_group(device, 1, 6);
  CHECK(six.per_node == 3);
  CHECK(six.nodes == 2);
  // A switchless full mesh of 7 peers: 4 members in a node use 3 of the 7 links.
  Device mesh = two_level_device();
  mesh.intra_node->peers = 7;
  CHECK(collective_group(mesh, 1, 8).intra_per_direction == Approx(100e9 * 3 / 7));
}

TEST_CASE("collectives: members a whole node apart skip the steps inside the node",
          "[collectives]") {
  // Replicas of 4-way tensor parallelism (stride 4) on 4-device nodes: one member a node.
  const Device device = two_level_device();
  const CollectiveGroup group = collective_group(device, 4, 2);
  REQUIRE(group.modelled);
  CHECK(group.per_node == 1);
  CHECK(group.nodes == 2);
  CHECK(group.intra == nullptr);
  CHECK(group.link_name() == "Round network");
  // One ring of 2 over the network: 2 steps, 2·1/2 x 1 GB / 5 GB/s; a reduce-scatter 1 step and
  // half the bytes.
  CHECK(time(group, Collective::kAllReduce) == Approx(kLatency + 2 * kStep + kBytes / 5e9));
  CHECK(time(group, Collective::kReduceScatter) == Approx(kLatency + kStep + 0.5 * kBytes / 5e9));
  // A stride wider than a node (tensor parallelism of 8): one member a node too.
  CHECK(collective_group(device, 8, 4).per_node == 1);
  // A prime group larger than a node: no even split, one member a node.
  CHECK(collective_group(device, 1, 7).per_node == 1);
}

TEST_CASE("collectives: across many nodes a small all-reduce runs as NCCL's tree",
          "[collectives]") {
  // 64 nodes, one member each (4-way tensor-parallel replicas, stride 4). NCCL's tuner times a
  // ring (2·63 = 126 network steps) and a tree (2 log2 64 = 12 steps at 0.92 x 1/2 of the bus
  // bandwidth) and runs the faster.
  const Device device = two_level_device();
  const CollectiveGroup group = collective_group(device, 4, 64);
  REQUIRE(group.nodes == 64);
  REQUIRE(group.per_node == 1);
  const PerformanceParams p = collective_params();
  // 1 MB: ring 10 + 630 + 2·63/64 x 1 MB / 5 GB/s (393.75) = 1,033.75 us; tree 10 + 60 +
  // 1 MB / 2.3 GB/s (434.78) = 504.78 us: the tree.
  const double small = 1e6;
  const double tree = kLatency + 12 * kStep + small / (0.46 * 5e9);
  CHECK(tree == Approx(504.78e-6).epsilon(1e-4));
  CHECK(collective_s(group, p, Profile::kEager, Collective::kAllReduce, small) == Approx(tree));
  // 1 GB: ring 0.64 ms + 393.75 ms = 394.39 ms; tree 0.07 ms + 434.78 ms: the ring.
  const double ring = kLatency + 126 * kStep + 2 * 63.0 / 64 * kBytes / 5e9;
  CHECK(ring == Approx(0.39439).epsilon(1e-4));
  CHECK(collective_s(group, p, Profile::kEager, Collective::kAllReduce, kBytes) == Approx(ring));
  // A reduce-scatter or an all-gather is a ring: 63 steps, 63/64 of the bytes.
  CHECK(collective_s(group, p, Profile::kEager, Collective::kAllGather, small) ==
        Approx(kLatency + 63 * kStep + 63.0 / 64 * small / 5e9));
  // Without the network's step latency the ring would win at every size.
  PerformanceParams flat = p;
  flat.network_step_latency_s = 0;
  CHECK(collective_s(group, flat, Profile::kEager, Collective::kAllReduce, small) ==
        Approx(kLatency + 2 * 63.0 / 64 * small / 5e9));
}

TEST_CASE("collectives: no network link, no node size, no link", "[collectives]") {
  // A group beyond the node with no network in the table: not modelled, no time.
  Device island = two_level_device();
  island.inter_node.reset();
  const CollectiveGroup lost = collective_group(island, 1, 8);
  CHECK_FALSE(lost.modelled);
  CHECK(lost.link_name().empty());
  CHECK(time(lost, Collective::kAllReduce) == 0);
  // Inside the node it still runs on the scale-up link.
  CHECK(collective_group(island, 1, 4).modelled);
  // No node size in the table (domain 0, PCIe cards): every group is one ring on the link,
  // 2·15/16 of the bytes for 16 members.
  Device unsized = two_level_device();
  unsized.intra_node->domain_devices = 0;
  const CollectiveGroup ring = collective_group(unsized, 1, 16);
  CHECK(ring.network == nullptr);
  CHECK(time(ring, Collective::kAllReduce) == Approx(kLatency + 2 * 15.0 / 16 * kBytes / 50e9));
  // No scale-up link at all: nothing is modelled.
  const Device unlinked = round_device();
  CHECK_FALSE(collective_group(unlinked, 1, 2).modelled);
}

TEST_CASE("collectives: a send is one latency and its bytes at the efficiency", "[collectives]") {
  CHECK(send_s(collective_params(), Profile::kEager, kBytes, 100e9) ==
        Approx(kLatency + kBytes / 50e9));
}

TEST_CASE("collectives: an all-to-all sends (n-1)/n of its buffer, bound by the slower link",
          "[collectives]") {
  // NCCL's all-to-all: grouped sends of 1/n of the buffer to every other member (nccl-tests
  // src/alltoall.cu, bus bandwidth = algorithm bandwidth x (n-1)/n).
  const Device device = two_level_device();
  // 4 in a node: 3/4 of 1 GB at 50 GB/s = 15 ms, one latency.
  CHECK(time(collective_group(device, 1, 4), Collective::kAllToAll) ==
        Approx(kLatency + 0.75 * kBytes / 50e9));
  // 8 over 2 nodes of 4: 4/8 of the buffer leaves over the device's own port (0.5 GB at
  // 5 GB/s = 100 ms) while 3/8 goes to its node mates (0.375 GB at 50 GB/s = 7.5 ms): 100 ms.
  CHECK(time(collective_group(device, 1, 8), Collective::kAllToAll) ==
        Approx(kLatency + 0.5 * kBytes / 5e9));
  // Members a node apart (stride 4), 2 of them: half the buffer over the network.
  CHECK(time(collective_group(device, 4, 2), Collective::kAllToAll) ==
        Approx(kLatency + 0.5 * kBytes / 5e9));
  // A fast network: the scale-up share bounds it (3/8 of 1 GB at 50 GB/s = 7.5 ms against
  // 4/8 at 500 GB/s = 1 ms).
  Device fast = two_level_device();
  fast.inter_node = Link{"Fast network", 1000e9, "per_direction"};
  CHECK(time(collective_group(fast, 1, 8), Collective::kAllToAll) ==
        Approx(kLatency + 0.375 * kBytes / 50e9));
}

TEST_CASE("collectives: a deduplicated dispatch sends a token once for each device and node",
          "[collectives]") {
  const Device device = two_level_device();
  const CollectiveGroup one_node = collective_group(device, 1, 4);
  const CollectiveGroup two_nodes = collective_group(device, 1, 8);
  // The all-to-all: a copy for each of a token's k experts, k (g-1)/n to node mates and
  // k (m-1)/m beyond: 2 x 3/4 in one node of 4; 2 x 3/8 and 2 x 1/2 over 2 nodes of 4.
  TokenCopies copies = dispatch_copies(one_node, Routing{8, 2}, false);
  CHECK(copies.intra == Approx(1.5));
  CHECK(copies.network == 0);
  copies = dispatch_copies(two_nodes, Routing{8, 2}, false);
  CHECK(copies.intra == Approx(0.75));
  CHECK(copies.network == Approx(1.0));
  // Deduplicated, 8 experts over 4 devices (2 each), 2 a token: a node mate gets a copy unless
  // both experts miss its two, C(6,2)/C(8,2) = 15/28 of the 28 pairs: 3 x 13/28.
  copies = dispatch_copies(one_node, Routing{8, 2}, true);
  CHECK(copies.intra == Approx(39.0 / 28));
  CHECK(copies.network == 0);
  // Over 2 nodes, one expert a device: the other node gets one copy unless both experts are in
  // this node (6 of the 28 pairs), 22/28; each device forwards what reaches it from both nodes
  // to its 3 node mates, each holding one of the 2 experts with chance 1 - 21/28: 2 x 3 x 1/4.
  copies = dispatch_copies(two_nodes, Routing{8, 2}, true);
  CHECK(copies.intra == Approx(1.5));
  CHECK(copies.network == Approx(22.0 / 28));
  // One expert a token: one copy to one place either way across nodes.
  CHECK(dispatch_copies(two_nodes, Routing{8, 1}, true).network ==
        Approx(dispatch_copies(two_nodes, Routing{8, 1}, false).network));
  // Timed as an all-to-all of those copies, 1 GB a copy: the network's 22/28 GB at 5 GB/s
  // outlasts the 1.5 GB at 50 GB/s.
  CHECK(token_exchange_s(two_nodes, collective_params(), Profile::kEager, copies, kBytes) ==
        Approx(kLatency + 22.0 / 28 * kBytes / 5e9));
  // The all-to-all's copies time as collective_s's all-to-all of the k-copy buffer.
  CHECK(token_exchange_s(two_nodes, collective_params(), Profile::kEager,
                         dispatch_copies(two_nodes, Routing{8, 2}, false),
                         kBytes / 2) == Approx(time(two_nodes, Collective::kAllToAll)));
}

TEST_CASE("collectives: group-limited routing sends fewer copies beyond the node",
          "[collectives]") {
  // DeepSeek's group-limited routing: 8 experts in 4 groups of 2, a token's 2 experts within the
  // 2 groups it picks; one expert a device, 2 nodes of 4, so each node holds 2 whole groups.
  const Device device = two_level_device();
  const CollectiveGroup two_nodes = collective_group(device, 1, 8);
  const Routing limited{8, 2, 4, 2};
  // The other node is missed when the token picks both of this node's groups (1 of the 6
  // pairs), or one group of each (4 of 6) and both experts in this node's (1 of the 6 pairs of
  // those 4 experts): 1/6 + 4/6 x 1/6 = 5/18, so 13/18 copies against 22/28 unlimited.
  const TokenCopies copies = dispatch_copies(two_nodes, limited, true);
  CHECK(copies.network == Approx(13.0 / 18));
  CHECK(dispatch_copies(two_nodes, Routing{8, 2}, true).network == Approx(22.0 / 28));
  // One device's expert is any one expert, 2/8 of tokens either way: 2 x 3 x 1/4 forwarded.
  CHECK(copies.intra == Approx(1.5));
  // Every group picked is no limit; the all-to-all ignores the groups.
  CHECK(dispatch_copies(two_nodes, Routing{8, 2, 4, 4}, true).network == Approx(22.0 / 28));
  CHECK(dispatch_copies(two_nodes, limited, false).network == Approx(1.0));
}
