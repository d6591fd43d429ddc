/** \file
 * The best schedule collsched's constructions give for an instance (the papers' algorithms, the
 * XOR-invariant, translation-invariant, mirrored ring and direct total exchanges, rings, the
 * greedy list schedules), each verified by the direct checker. known_schedule
 * (problem/instance.hpp, search/duality.cpp) adds the reductions' schedule by duality, which
 * optimizes the dual collective and so lives in search/. A new construction is a file of this
 * room and a row of constructed_schedule (constructions/known.cpp).
 */
#pragma once

#include <chrono>
#include <optional>

#include "support/budget.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched {

/// The shortest verified schedule of the constructions that apply; nullopt for combining
/// instances (their schedule comes from the duality) and when none applies within the limits.
std::optional<KnownSchedule> constructed_schedule(const SynthInstance&, bool constructions = true,
                                                  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
                                                  const MemoryBudget& memory = {});

/// Total exchange where every goal pair has a channel of its own (complete graphs, switch boxes):
/// the demand coloured with as many matchings as its largest degree (Koenig), k colours a step.
/// Not yet verified (constructed_schedule verifies it); nullopt where it does not apply.
/// LimitReached once `deadline` passes while it lists, colours and writes the sends.
std::optional<SendTable> direct_alltoall(const SynthInstance&, Deadline deadline = {});

}  // namespace collsched
