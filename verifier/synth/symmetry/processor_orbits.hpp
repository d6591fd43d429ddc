/** \file
 * Processors that a symmetry of the topology maps onto each other, found cheaply and soundly,
 * so that a bound that is the same for every processor of an orbit needs one max flow per
 * orbit instead of one per processor (issue 27). Candidate permutations of the processors are
 * the regular shapes generated machines have (a rotation inside blocks of B consecutive
 * processors, a shift by B, an exclusive-or with a power of two); routers follow by their
 * neighbourhoods. A candidate counts only after AutomorphismCheck has checked it, so the
 * orbits are unions of true orbits' parts: never too coarse. Finding fewer symmetries only
 * costs time.
 */
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "compiler/topology/topology.hpp"
#include "support/budget.hpp"

namespace collsched {

struct ProcessorOrbits {
    std::vector<std::uint32_t> orbit;           ///< per processor: the least processor of its orbit
    std::vector<std::uint32_t> representatives;  ///< one processor per orbit, ascending
    std::uint32_t automorphisms = 0;            ///< verified candidates that were used
};

/// The orbits of the processors under the verified candidate automorphisms (every processor its
/// own orbit when none holds).
/// `limits`: no further candidate is checked once they are reached (each check reads every
/// channel: 2.1 million on 512 rail-optimized boxes); the orbits found by then are sound.
ProcessorOrbits processor_orbits(const Topology&, const RunLimits& limits = {});

/// The one check of a symmetry that every bound, construction and quotient relies on (issue 41):
/// a permutation of the nodes is an automorphism when it maps every channel onto a channel with
/// the same attributes (capacity, tree level, latency, bandwidth) and every link group onto a
/// group with the same channels' images, capacity and bandwidth: everything the step model, the
/// time model and the bounds read. A symmetry of the capacities alone is not enough: class
/// counting reads link speeds, the time model latencies and bandwidths.
class AutomorphismCheck {
public:
    /// `limits` are polled while the groups are indexed and every few thousand channels of a
    /// check (4,096 GPUs: 2 million channels, 4 million grouped): LimitReached once reached.
    explicit AutomorphismCheck(const Topology& t, const RunLimits& limits = {});
    /// Whether `image` (per node, its image; a permutation) is an automorphism: every node's
    /// channels, sorted by their heads' images, against its image's (one pass over the channels,
    /// no search), then every group against the group of its channels' images.
    bool operator()(std::span<const std::uint32_t> image) const;

private:
    const Topology& t_;
    RunLimits limits_;
    /// A group's channels (sorted) -> the (capacity, bandwidth) of every group on exactly them.
    std::map<std::vector<std::uint32_t>, std::vector<std::pair<std::uint32_t, double>>> groups_;
};

/// AutomorphismCheck(t)(image), for one candidate.
bool is_automorphism(const Topology& t, std::span<const std::uint32_t> image);

}  // namespace collsched
