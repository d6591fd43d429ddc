/** \file
 * Windows on a cut (reduce-scatter and allgather): the cut terms of time_bound.cpp with each arc's time
 * shortened by where what crosses it comes from and where it still has to go. Not a public API; the
 * proof is in time_bound_windows.cpp, the statement in docs/time.md, "Lower bounds on time".
 */
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/table/collective.hpp"
#include "verifier/time/weighted_network.hpp"

namespace collsched::time_internal {

/// Adds to `out` the window terms of `kind` (reduce_scatter or allgather) on the sets of processors `sets`,
/// each taken as the side a value enters: per set its classes (the whole far side and its parts by `parts`)
/// and its single processors at the other end, the term that is largest at each of a few sizes kept. Nothing
/// above `window_processors` processors. Polls `limits`; its flows count in out.max_flows.
void add_window_terms(TimeBounds& out, const Topology&, CollectiveKind kind, WeightedNetwork& forward, const TimeOptions& speeds,
                      const std::vector<std::vector<std::uint32_t>>& sets, const std::vector<Partition>& parts, const RunLimits& limits);

/// The most processors the window terms are tried on (their sets and classes grow with P).
inline constexpr std::uint32_t window_processors = 256;

}  // namespace collsched::time_internal
