/** \file
 * Lower bounds on rounds per chunk (R/C) for any number of chunks and steps, the bounds the
 * Pareto walk and the bandwidth end start from (docs/synthesis.md, "The bandwidth bound").
 */
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "verifier/synth/problem/pareto.hpp"

namespace collsched {

/// Every bandwidth bound collsched proves by counting, the largest first (docs/synthesis.md,
/// "The bandwidth bound"). Cut: for a set X of processors, every chunk of a datum that starts
/// outside X and must reach a goal inside X crosses a channel into X, and a step of r rounds
/// carries at most r times the capacity into X (ports and groups included). Hops (personalized
/// collectives): every chunk makes at least dist(s, d) hops, and a round carries at most the
/// sum of all capacities.
/// The flow bound (verifier/synth/bounds/bandwidth.hpp) replaces the enumerated cuts where it applies.
/// At `deadline` the cuts not yet counted are left out: every bound returned is still proved, the
/// largest may be missed (pareto's --timeout covers the counting too).
std::vector<BandwidthBound> bandwidth_bounds(const SynthInstance&,
                                             std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());
/// The cut bound by enumerating processor sets (every set up to 16 processors; above that each
/// processor, its complement and balls): the bound of issue 15, kept for alltoall and as the
/// reference the flow bound is tested against; at `deadline` the sets not yet counted are left out.
std::optional<BandwidthBound> enumerated_cut_bound(const SynthInstance&,
                                                   std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

}  // namespace collsched
