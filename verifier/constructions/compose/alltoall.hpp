/** \file
 * Alltoall on many shortest paths (docs/time.md, "Constructions for time"): on a network
 * where some pairs of processors are not joined by a channel or a route through routers only (the
 * DGX-1's cube mesh, tori, rail networks between boxes off the rail), every message m(s,d) is cut
 * into C chunks and each chunk takes one of the shortest paths between s and d in processor hops
 * (a hop: a channel or a route through routers only), chosen greedily to keep the busiest channel
 * or link group, in seconds at their bandwidths, least. The paths end at one logical step (hop h of a
 * path of n hops is step L - n + h, L the most hops), so that of the transfers ready at once those
 * with more hops to go leave first; relaying processors forward what they received (alltoall
 * combines nothing). The least-steps schedule
 * takes one path per message; on the DGX-1 its busiest link carries 2.4 times the bound's share.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/table/send_table.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched::compose {

/// The table with C chunks per message, or nullopt with `why` (not alltoall, more than 256
/// processors, every pair one hop apart so one path each is all there is, no path, too many chunks).
std::optional<SendTable> multipath_alltoall(const SynthInstance&, std::uint32_t chunks, std::string* why);

}  // namespace collsched::compose
