// Collectives over a device's links, for tensor-parallel all-reduces and data-parallel gradient
// sync. A group inside one node is one ring over the scale-up link; a group that spans nodes
// runs in two levels, as HCCL's hierarchical algorithm does: reduce-scatter inside each node,
// an all-reduce of each member's 1/g share across the nodes over its own network port, then an
// all-gather inside the node; the level across nodes is timed as NCCL's tuner times its ring
// and tree. An all-to-all (expert parallelism's token exchange) is grouped
// point-to-point sends, each member's own. docs/performance-model.md gives the formulas and
// their sources.
#pragma once

#include <cstdint>
#include <string>

#include "capcalc/hardware.hpp"

namespace capcalc {

enum class Collective { kAllReduce, kReduceScatter, kAllGather, kAllToAll };

/// How a group of devices is laid over the links, and what each member gets on them.
struct CollectiveGroup {
  /// The scale-up link, when the collective has a step inside a node (nullptr: none, as for a
  /// group whose members are a whole node apart).
  const Link* intra = nullptr;
  const Link* network = nullptr;     ///< Between nodes (nullptr: the group fits one node).
  std::int64_t per_node = 1;         ///< g: members in each node.
  std::int64_t nodes = 1;            ///< m: nodes the group spans.
  double intra_per_direction = 0;    ///< Bytes/s a member gets on the scale-up link, group of g.
  double network_per_direction = 0;  ///< Bytes/s a member gets on its own network port.
  bool modelled = false;             ///< False: the table has no link for this group.

  /// "NVLink 4"; both links across nodes ("NVLink 4 + InfiniBand ..."); "" when not modelled.
  std::string link_name() const;
  /// Bytes/s a member gets on the link the collective is bound by: its network port across
  /// nodes, else the scale-up link.
  double per_direction() const {
    return network != nullptr ? network_per_direction : intra_per_direction;
  }
};

/// The links a collective of `group` devices crosses, its members `stride` devices apart
/// (Megatron's order: a replica's tensor-parallel group at stride 1, its data-parallel peers at
/// stride tp). It stays in a node while stride x group devices fit `intra_node.domain_devices`
/// (or the table gives no node size); beyond, g is the largest divisor of the group that fits
/// a node (domain / stride, at least 1) and m = group / g. The result points into `device`.
CollectiveGroup collective_group(const Device& device, std::int64_t stride, std::int64_t group);
CollectiveGroup collective_group(Device&&, std::int64_t, std::int64_t) = delete;

/// Seconds for one collective of `bytes` per member (the all-reduce's operand; a reduce-scatter's
/// input; an all-gather's output; an all-to-all's send buffer, 1/n of it for each member, its
/// own share included). Each level pays `params.allreduce_latency(profile)` and moves its bytes
/// at `params.allreduce_efficiency` of the bandwidth; the level across nodes also pays
/// `params.network_step_latency_s` per network step of NCCL's ring or tree, the faster for an
/// all-reduce. An all-to-all pays one latency. 0 when not modelled.
double collective_s(const CollectiveGroup& group, const PerformanceParams& params, Profile profile,
                    Collective kind, double bytes);

/// Copies of one token that a member of an expert-parallel `group` sends in a dispatch (a
/// combine returns as many): over the scale-up link and over its network port.
struct TokenCopies {
  double intra = 0;
  double network = 0;
};

/// How a moe layer routes a token: to `top_k` distinct of its `experts`, all within
/// `groups_per_token` of `groups` equal groups where those are set (DeepSeek's group-limited
/// routing; 0: no limit).
struct Routing {
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  std::int64_t groups = 0;
  std::int64_t groups_per_token = 0;
};

/// The copies for a token routed to `top_k` distinct experts of `experts` spread evenly over
/// the group's n members (g a node, m nodes), the experts drawn uniformly (balanced routing).
/// An all-to-all sends one copy for each expert: k (g-1)/n within the node, k (n-g)/n beyond.
/// Deduplicated (DeepEP, HybridEP) sends one copy for each member holding any of them, and
/// across nodes one for each node, to the member of the same local rank there, which forwards
/// what it receives from each of the m nodes (its own included) to its node mates:
///   network (m-1)(1 - q(g)),  intra m (g-1)(1 - q(1))  (within one node: (g-1)(1 - q(1))),
/// q(s) the chance that s members' s E/n experts hold none of the k: the product over i < k of
/// (E - s E/n - i) / (E - i). With group-limited routing (G groups of E/G, the token's k among
/// the T groups it picks, uniformly), s members holding h whole groups miss the token when the
/// T groups hold j of them and the k miss those j: the sum over j of C(h,j) C(G-h,T-j) / C(G,T)
/// x C((T-j) E/G, k) / C(T E/G, k); holding part of one group, (1 - T/G) + T/G x
/// C(T E/G - s E/n, k) / C(T E/G, k). Sets that neither fit nor split a group: as unlimited.
TokenCopies dispatch_copies(const CollectiveGroup& group, const Routing& routing,
                            bool deduplicated);

/// Seconds for one exchange of `copies` of tokens of `token_bytes` in all per member: as an
/// all-to-all, one latency, the copies for node mates over the scale-up link and the others over
/// the network port at once, the slower bounding it. 0 when not modelled.
double token_exchange_s(const CollectiveGroup& group, const PerformanceParams& params,
                        Profile profile, const TokenCopies& copies, double token_bytes);

/// Seconds for a point-to-point send of `bytes` over a link of `per_direction` bytes/s.
double send_s(const PerformanceParams& params, Profile profile, double bytes, double per_direction);

}  // namespace capcalc
