/** \file
 * Lower bounds on sets of processors (docs/synthesis.md, "Lower bounds" and "The direct encoding
 * of combining"): the partitions tried (the sets joined by channels of at least each bandwidth
 * the machine has: its boxes) and the drain of a box's entries for dissemination. Not a public API.
 */
#pragma once

#include <cstdint>
#include <vector>

#include "verifier/synth/problem/instance.hpp"
#include "verifier/synth/problem/internal.hpp"

namespace collsched::synth {

/// One partition of the processors: per processor its set, the number of sets, and the least
/// bandwidth of the channels that join a set (bytes per second).
struct BoxPartition {
    std::vector<std::uint32_t> set;
    std::uint32_t sets = 0;
    double speed = 0;
};

/// The partitions into 2 .. P-1 sets by the channels of at least each bandwidth the topology has,
/// each once, fastest first.
std::vector<BoxPartition> box_partitions(const Topology&);

/// Per processor, the most transfers that can arrive at it (incoming) or leave it per step over
/// its channels from (to) other sets of `part`: step_capacity over those channels.
std::uint64_t cross_capacity(const Topology&, Ports, const BoxPartition& part, bool incoming);

/// Box entries (dissemination, hop timing, one round per step): for a set S of s processors, D
/// data from outside S that every member needs, and K transfers a step into S: a datum first
/// entering S in the last step T needs s arrivals in step T (no member held it to pass on), any
/// other one arrival before T, so D <= (T-1) K + floor(K / s). The best over the sets of every
/// partition; none where it gives nothing (steps 0).
Bound box_entries(const SynthInstance&, const std::vector<synth_internal::GoalPair>& goals);

}  // namespace collsched::synth
