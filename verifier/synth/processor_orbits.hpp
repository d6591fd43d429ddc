/** \file
 * Processors that a symmetry of the topology maps onto each other, found cheaply and soundly,
 * so that a bound that is the same for every processor of an orbit needs one max flow per
 * orbit instead of one per processor (issue 27). Candidate permutations of the processors are
 * the regular shapes generated machines have (a rotation inside blocks of B consecutive
 * processors, a shift by B, an exclusive-or with a power of two); routers follow by their
 * neighbourhoods. A candidate counts only after it is checked to map every channel onto a
 * channel of the same capacity and every link group onto a group of the same capacity, so the
 * orbits are unions of true orbits' parts: never too coarse. Finding fewer symmetries only
 * costs time.
 */
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/topology/topology.hpp"

namespace collsched {

struct ProcessorOrbits {
    std::vector<std::uint32_t> orbit;           ///< per processor: the least processor of its orbit
    std::vector<std::uint32_t> representatives;  ///< one processor per orbit, ascending
    std::uint32_t automorphisms = 0;            ///< verified candidates that were used
};

/// The orbits of the processors under the verified candidate automorphisms (every processor its
/// own orbit when none holds). With `speeds` the automorphisms must also keep every channel's
/// latency and bandwidth and every group's bandwidth (verifier/time's cuts on link speeds).
ProcessorOrbits processor_orbits(const Topology&, bool speeds = false);

/// Whether `image` (a permutation of all nodes) maps every channel onto a channel of the same
/// capacity and every link group onto a group of the same capacity (with `speeds`: and the same
/// link speeds).
bool is_automorphism(const Topology&, const std::vector<std::uint32_t>& image, bool speeds = false);

}  // namespace collsched
