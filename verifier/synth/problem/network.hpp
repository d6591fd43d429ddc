/** \file
 * What every room of the synthesizer reads off the network (moved out of sat/encode.hpp, issue
 * 42): distances over channels, the most transfers a set of channels carries in one step, the
 * channels crossing a node set's boundary, and whether routers hold what they receive.
 */
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "verifier/synth/problem/instance.hpp"

namespace collsched::synth {

/// Distances in the graph of channels (BFS, every channel usable), from one node to all.
std::vector<std::uint32_t> bfs_distances(const Topology&, Node from);
/// Distances from every node to one node (BFS over reversed channels).
std::vector<std::uint32_t> bfs_distances_to(const Topology&, Node to);

/// The most transfers a set of channels carries together in one step of one round, and what
/// limits it. Three upper bounds, the least wins: the channels' capacities summed per sending
/// node and per receiving node, a processor's share cut to 1 under single or half ports; and the
/// link groups, each channel counted once in the group that holds most channels of the set, a
/// group's share cut to its capacity (a channel in no group counts its own capacity). Any
/// assignment of channels to one of their groups gives an upper bound; the largest group first
/// makes it tight for a processor's in- or out-group (docs/synthesis.md, "Lower bounds").
struct StepCapacity {
    std::uint64_t hops = 0;
    bool by_ports = false;   ///< the ports cut it below the channel capacities
    bool by_groups = false;  ///< the link groups cut it below the other two
};
StepCapacity step_capacity(const Topology&, Ports, std::span<const ChannelId> channels);
/// The channels that cross a node set's boundary: into it (`into`) or out of it.
std::vector<ChannelId> crossing_channels(const Topology&, const std::vector<char>& inside, bool into);

/// Whether routers keep what they receive in the encoding of this kind (they are "holders"):
/// dissemination with replicate=yes and unbounded queues; free_route with unbounded queues
/// (one copy per message is enough there, so replicate does not matter; docs/synthesis.md).
bool routers_hold(const SynthInstance&, EncodingKind);

}  // namespace collsched::synth
