/** \file
 * The automorphisms of a topology that map a collective's goals to themselves, found by a
 * search over processor permutations and each checked whole: the Pareto walk first searches
 * among the schedules invariant under them (a restriction that proves nothing by itself).
 */
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "verifier/synth/problem/instance.hpp"

namespace collsched {

/// The automorphisms of the topology that map the collective's goals to themselves: node
/// permutations preserving every channel and link group with every attribute the models read
/// (AutomorphismCheck: capacities, levels, speeds), and the
/// collective (a root stays fixed). Topologies without routers only (empty otherwise), at most
/// `limit` elements (the identity left out).
/// The search stops at `deadline` with what it found (fewer automorphisms only narrow a search
/// that proves nothing by itself).
std::vector<std::vector<std::uint32_t>> automorphisms(const SynthInstance&, std::size_t limit = 64,
                                                     std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

}  // namespace collsched
