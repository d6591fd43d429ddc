/** \file
 * The exact cut bound on rounds per chunk by max flow (issue 27). For a set S of nodes (routers
 * and the group and port vertices of verifier/synth/bounds/capacity_network.hpp included), let D(S) be the
 * number of data that start inside S and must reach a processor outside it: each of their C
 * chunks crosses an arc leaving S at least once, and a round carries at most c(S) chunks across,
 * so R/C >= D(S)/c(S). This file finds the largest D(S)/c(S) over *every* S, not a list of
 * candidates, by Newton's method on the ratio (Dinkelbach): at x = p/q, a cut with
 * q D(S) > p c(S) exists exactly when some max flow falls short, and its min cut is a better S;
 * when no flow falls short, x is the maximum and the last S is its certificate. Per collective:
 *
 * - allgather: D(S) = |S ∩ P| when some processor is outside S (ForestColl's bound); one flow
 *   per sink processor t (a super source gives every processor q), or one per orbit of t;
 * - broadcast(r), multicast(r, M): D(S) = 1 when r is in S and a member is not: 1 / the least
 *   r-t max flow over the members t;
 * - scatter(r): D(S) = |P \ S| for S containing r: one flow from r to a super sink that takes q
 *   from every other processor;
 * - gather(r), reduce(r), reduce_scatter: the same on the reversed network (data must *enter*
 *   a set: the dual collective's cut read backwards).
 *
 * The bound holds for routers under replicate=no and replicate=yes alike (it only counts
 * crossings) and for any route; it is exact (the largest cut bound there is) when the capacity
 * network is exact, and a valid lower bound otherwise (the relaxations are named). Alltoall's
 * demand |S ∩ P| |P \ S| is no flow: it keeps the enumerated cuts (docs/synthesis.md).
 */
#pragma once

#include <optional>

#include "verifier/synth/problem/pareto.hpp"

namespace collsched {

/// The flow bound of `in`'s collective (chunks ignored: the bound is per datum), or nullopt when
/// the collective has none here (alltoall, allreduce, scan, custom; wormhole timing).
/// `limits`: the flow network's size is estimated first (300 bytes per arc) and refused when it
/// does not fit what is left of the memory budget (LimitReached); the limits are polled between
/// max flows, and once reached the search stops with the best cut so far (CutCertificate::stopped:
/// still a proved bound, perhaps not the largest). One flow at least is always computed.
std::optional<BandwidthBound> flow_bandwidth_bound(const SynthInstance& in, const RunLimits& limits = {});

}  // namespace collsched
