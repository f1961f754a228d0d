#include "collectives.hpp"

#include <algorithm>

namespace capcalc {
namespace {

// The largest divisor of `group` no larger than `cap`: members per node, the same in every node.
std::int64_t members_per_node(std::int64_t group, std::int64_t cap) {
  for (std::int64_t g = std::min(cap, group); g > 1; --g) {
    if (group % g == 0) return g;
  }
  return 1;
}

// A ring over n members moves (n-1)/n of its bytes over each member's link per reduce-scatter
// or all-gather, twice that per all-reduce (nccl-tests doc/PERFORMANCE.md, bus bandwidth).
double ring_factor(Collective kind, std::int64_t n) {
  const auto members = static_cast<double>(n);
  const double one = (members - 1) / members;
  return kind == Collective::kAllReduce ? 2 * one : one;
}

// Intra-node and network bytes sent at once: lat + max(intra / (e bw_intra), network / (e bw_net)).
double exchange_s(const CollectiveGroup& group, double latency, double efficiency,
                  double intra_bytes, double network_bytes) {
  const double intra =
      group.intra != nullptr ? intra_bytes / (efficiency * group.intra_per_direction) : 0;
  if (group.network == nullptr) return latency + intra;
  return latency + std::max(intra, network_bytes / (efficiency * group.network_per_direction));
}

// NCCL's all-to-all is grouped point-to-point sends, all at once (nccl-tests src/alltoall.cu:
// ncclSend and ncclRecv to every rank between ncclGroupStart and ncclGroupEnd): a member sends
// (n-1)/n of its buffer, 1/n to each other member (there, bus bandwidth = algorithm bandwidth x
// (n-1)/n). Inside a node that is
//   lat + (n-1)/n B / (e bw_intra);
// across nodes, the (n-g)/n of B bound for the other nodes leaves over the member's own network
// port while the (g-1)/n for its node mates crosses the scale-up link; the slower bounds it:
//   lat + max((g-1)/n B / (e bw_intra), (n-g)/n B / (e bw_net)).
double all_to_all_s(const CollectiveGroup& group, double latency, double efficiency, double bytes) {
  const auto n = static_cast<double>(group.per_node * group.nodes);
  const auto g = static_cast<double>(group.per_node);
  return exchange_s(group, latency, efficiency, (g - 1) / n * bytes, (n - g) / n * bytes);
}

// The chance that `held` of `experts` experts hold none of a token's `top_k` distinct ones,
// drawn without replacement: C(E - h, k) / C(E, k) = prod over i < k of (E - h - i) / (E - i).
double none_held(std::int64_t experts, std::int64_t held, std::int64_t top_k) {
  double chance = 1;
  for (std::int64_t i = 0; i < top_k; ++i) {
    if (experts - held - i <= 0) return 0;
    chance *= static_cast<double>(experts - held - i) / static_cast<double>(experts - i);
  }
  return chance;
}

// C(n, r) as a double (the group counts are small).
double choose(std::int64_t n, std::int64_t r) {
  if (r < 0 || r > n) return 0;
  double c = 1;
  for (std::int64_t i = 0; i < r; ++i)
    c = c * static_cast<double>(n - i) / static_cast<double>(i + 1);
  return c;
}

// none_held under the routing's group limit (dispatch_copies' comment gives the sums).
double none_held(const Routing& r, std::int64_t held) {
  const std::int64_t groups = r.groups;
  const std::int64_t picked = r.groups_per_token;
  if (groups > 1 && picked > 0 && picked < groups && r.experts % groups == 0) {
    const std::int64_t per_group = r.experts / groups;
    const std::int64_t pool = picked * per_group;  // The experts a token may take.
    if (held % per_group == 0) {
      const std::int64_t whole = held / per_group;
      double chance = 0;
      for (std::int64_t j = 0; j <= std::min(whole, picked); ++j) {
        chance += choose(whole, j) * choose(groups - whole, picked - j) / choose(groups, picked) *
                  none_held(pool, j * per_group, r.top_k);
      }
      return chance;
    }
    if (per_group % held == 0) {
      const double share = static_cast<double>(picked) / static_cast<double>(groups);
      return (1 - share) + share * none_held(pool, held, r.top_k);
    }
  }
  return none_held(r.experts, held, r.top_k);
}

// log2 of n, rounded down (NCCL's log2i): a tree over n nodes has that many levels.
double tree_levels(std::int64_t n) {
  double levels = 0;
  for (std::int64_t k = n; k > 1; k /= 2)
    levels += 1;
  return levels;
}

// The level across m nodes, each member's `share` over its own network port at bus bandwidth
// W, as NCCL's tuning model times it (src/graph/tuning.cc at 5067397c, ncclTopoTuneModel, Simple
// protocol): a ring crosses the network 2(m-1) times for an all-reduce and m-1 times for a
// reduce-scatter or an all-gather, each step adding `step` (hwLatencies[NET][RING]); an
// all-reduce may instead run as a tree, 2 log2(m) steps (hwLatencies[NET][TREE]) at 0.92 of the
// ring's bus bandwidth and half of that as algorithm bandwidth (busBw * .92, ratio .5), and the
// tuner runs whichever is faster (ncclTopoGetAlgoTime: latency + bytes / bandwidth):
//   ring: lat + 2(m-1) step + 2(m-1)/m share / W;   tree: lat + 2 log2(m) step + share / (0.46 W).
double network_level_s(Collective kind, std::int64_t nodes, double share, double latency,
                       double step, double bus_bandwidth) {
  const auto m = static_cast<double>(nodes);
  const double ring_steps = kind == Collective::kAllReduce ? 2 * (m - 1) : m - 1;
  const double ring =
      latency + ring_steps * step + ring_factor(kind, nodes) * share / bus_bandwidth;
  if (kind != Collective::kAllReduce) return ring;
  const double tree =
      latency + 2 * tree_levels(nodes) * step + share / (0.92 * 0.5 * bus_bandwidth);
  return std::min(ring, tree);
}

}  // namespace

std::string CollectiveGroup::link_name() const {
  if (!modelled) return "";
  if (network == nullptr) return intra->name;
  if (intra == nullptr) return network->name;
  return intra->name + " + " + network->name;
}

CollectiveGroup collective_group(const Device& device, std::int64_t stride, std::int64_t group) {
  CollectiveGroup result;
  if (!device.intra_node) return result;
  const Link& intra = *device.intra_node;
  const std::int64_t domain = intra.domain_devices;
  if (domain == 0 || stride * group <= domain) {
    result.intra = &intra;
    result.per_node = group;
    result.intra_per_direction = group_per_direction(intra, group);
    result.modelled = true;
    return result;
  }
  if (!device.inter_node) return result;
  result.per_node = members_per_node(group, std::max<std::int64_t>(1, domain / stride));
  result.nodes = group / result.per_node;
  result.network = &*device.inter_node;
  result.network_per_direction = link_per_direction(*device.inter_node);
  if (result.per_node > 1) {
    result.intra = &intra;
    result.intra_per_direction = group_per_direction(intra, result.per_node);
  }
  result.modelled = true;
  return result;
}

// Across nodes, HCCL's "Hierarchical Communication Principles": an all-reduce reduce-scatters
// inside each node, all-reduces each member's 1/g share across the m nodes over the member's own
// network port (NCCL runs one ring per NIC), and all-gathers inside the node:
//   2 [lat + (g-1)/g B / (e bw_intra)] + network_level_s(B/g, W = e bw_net).
// A reduce-scatter or an all-gather is one step on each level, half the bandwidth terms.
double collective_s(const CollectiveGroup& group, const PerformanceParams& params, Profile profile,
                    Collective kind, double bytes) {
  if (!group.modelled) return 0;
  const double latency = params.allreduce_latency(profile);
  const double efficiency = params.allreduce_efficiency;
  if (kind == Collective::kAllToAll) return all_to_all_s(group, latency, efficiency, bytes);
  if (group.network == nullptr) {
    return latency +
           ring_factor(kind, group.per_node) * bytes / (efficiency * group.intra_per_direction);
  }
  double t = 0;
  if (group.intra != nullptr) {
    const double intra_steps = kind == Collective::kAllReduce ? 2 : 1;
    t += intra_steps * (latency + ring_factor(Collective::kAllGather, group.per_node) * bytes /
                                      (efficiency * group.intra_per_direction));
  }
  const double share = bytes / static_cast<double>(group.per_node);
  return t + network_level_s(kind, group.nodes, share, latency, params.network_step_latency_s,
                             efficiency * group.network_per_direction);
}

// DeepEP (deepseek-ai/DeepEP v1.2.1, csrc/kernels/layout.cu, get_dispatch_layout) marks a
// token once for each rank holding any of its experts (is_token_in_rank) and once for each
// RDMA rank, a node of NUM_MAX_NVL_PEERS = 8 ranks (num_tokens_per_rdma_rank); its internode
// kernels send it over RDMA to the rank of the same local index in each such node, which
// forwards it over NVLink ("forwarding data from NVLink domain to RDMA domain", its README), and
// the combine reduces on the way back. HybridEP does the same ("Similar to DeepEP, Hybrid-EP
// first performs IB communication between peer GPUs, then each rank distributes the received
// inter-node data locally": docs/Hybrid-EP_Implementation.md, hybrid-ep branch at 94a9f8f).
TokenCopies dispatch_copies(const CollectiveGroup& group, const Routing& routing,
                            bool deduplicated) {
  const std::int64_t n = group.per_node * group.nodes;
  const auto g = static_cast<double>(group.per_node);
  const auto m = static_cast<double>(group.nodes);
  const auto k = static_cast<double>(routing.top_k);
  if (!deduplicated || n <= 1 || routing.experts % n != 0) {
    return {k * (g - 1) / static_cast<double>(n), k * (m - 1) / m};
  }
  const std::int64_t per_member = routing.experts / n;
  const double members = (g - 1) * (1 - none_held(routing, per_member));
  if (group.network == nullptr) return {members, 0};
  return {m * members, (m - 1) * (1 - none_held(routing, per_member * group.per_node))};
}

double token_exchange_s(const CollectiveGroup& group, const PerformanceParams& params,
                        Profile profile, const TokenCopies& copies, double token_bytes) {
  if (!group.modelled) return 0;
  return exchange_s(group, params.allreduce_latency(profile), params.allreduce_efficiency,
                    copies.intra * token_bytes, copies.network * token_bytes);
}

double send_s(const PerformanceParams& params, Profile profile, double bytes,
              double per_direction) {
  return params.allreduce_latency(profile) + bytes / (params.allreduce_efficiency * per_direction);
}

}  // namespace capcalc
