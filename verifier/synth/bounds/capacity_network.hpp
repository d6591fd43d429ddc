/** \file
 * What one round can carry, as a flow network (issue 27): the topology's nodes plus one vertex
 * per link group and per port, so that every per-round load a table may put on the channels
 * (channel capacities, link groups, single ports) is exactly a flow of this network, and every
 * cut of it bounds what can cross between two sets of nodes. A link group whose channels all
 * leave one node becomes a vertex behind that node (one arc of the group's capacity in), one
 * whose channels all enter one node a vertex in front of it; nested groups of one node chain
 * (a single port is the outermost group of its processor); channel u->v is then one arc from
 * u's innermost group to v's with the channel's capacity. Each path through the gadget is
 * exactly one channel. What cannot be expressed this way is relaxed (a group of several senders
 * and receivers becomes a switch vertex; groups of one node that overlap without nesting keep
 * only a laminar part; half duplex counts as single ports): the network then carries at least
 * what the model allows, so every bound read from it stays a lower bound, and `relaxations`
 * says what was given up. docs/synthesis.md, "The bandwidth bound by flows".
 */
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "compiler/core/model.hpp"
#include "compiler/topology/topology.hpp"

namespace collsched {

struct CapacityArc {
    enum class Kind : std::uint8_t { channel, group, port };
    std::uint32_t from = 0, to = 0;
    std::uint64_t cap = 0;  ///< per round
    Kind kind = Kind::channel;
    std::uint32_t what = 0;  ///< channel id, group index, or the port's node
    bool out_port = true;    ///< Kind::port: the sending side (else receiving)
};

struct CapacityNetwork {
    std::uint32_t topology_nodes = 0;  ///< vertices 0 .. topology_nodes-1 are the topology's nodes
    std::uint32_t vertices = 0;
    std::vector<CapacityArc> arcs;
    std::vector<std::string> relaxations;  ///< empty: exact for the model
    bool exact() const { return relaxations.empty(); }
    /// "channel 3->7 (2)", "group gpu7.in (1)", "port of 5 (in, 1)".
    std::string arc_text(const Topology&, const CapacityArc&) const;
};

/// The network of one round of `model` on `topology` (hop timing; wormhole is not a per-round
/// capacity model and is refused by the callers).
CapacityNetwork capacity_network(const Topology&, const Model&);

/// Every arc reversed: the network of the dual collective (gather from scatter, reduce-scatter
/// from allgather), whose cuts are the original's read backwards.
CapacityNetwork reversed(CapacityNetwork);

/// Max flows on one network with a super source joined to every vertex and a super sink joined
/// from every vertex; each query sets the arcs' multiplier and the capacities of those joins.
/// Boost.Graph's push-relabel (docs/synthesis.md says why no flow of our own).
class FlowSolver {
public:
    /// Sink joins come from `sink_vertices[v]` for topology node v (default: v itself).
    explicit FlowSolver(const CapacityNetwork&, const std::vector<std::uint32_t>& sink_vertices = {});
    ~FlowSolver();
    FlowSolver(const FlowSolver&) = delete;
    FlowSolver& operator=(const FlowSolver&) = delete;
    /// Max flow from the super source to vertex `sink` (or to the super sink when sink is
    /// `super_sink`), with every network arc's capacity times `scale`, source joins
    /// `source_caps[v]` and sink joins `sink_caps[v]` (empty: none).
    std::int64_t max_flow(std::uint64_t scale, const std::vector<std::int64_t>& source_caps, const std::vector<std::int64_t>& sink_caps,
                          std::uint32_t sink);
    /// The same with every network arc's capacity given (`arc_caps[i]` for arc i).
    std::int64_t max_flow_arcs(const std::vector<std::int64_t>& arc_caps, const std::vector<std::int64_t>& source_caps,
                               const std::vector<std::int64_t>& sink_caps, std::uint32_t sink);
    /// After max_flow: the flow on network arc i.
    std::int64_t arc_flow(std::size_t i) const;
    /// After max_flow: the network vertices on the source side of a minimum cut.
    std::vector<char> source_side() const;
    static constexpr std::uint32_t super_sink = 0xffffffffu;
    /// A join capacity meaning "no limit". The solver replaces it by one more than the sum of
    /// every finite capacity of the query (a capacity no cut can use), so push-relabel's sums
    /// of capacities never overflow; a query whose finite capacities alone would overflow is
    /// refused by assertion.
    static constexpr std::int64_t unbounded = std::numeric_limits<std::int64_t>::max();

private:
    struct Impl;
    Impl* impl_;
};

/// The capacity per round of the arcs leaving `side` (a vertex set of the network).
std::uint64_t cut_capacity(const CapacityNetwork&, const std::vector<char>& side);

}  // namespace collsched
