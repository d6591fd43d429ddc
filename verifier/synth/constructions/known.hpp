/** \file
 * The best schedule collsched's constructions give for an instance (the papers' algorithms, the
 * XOR-invariant, translation-invariant, mirrored ring and direct total exchanges, rings, the
 * greedy list schedules), each verified by the direct checker. known_schedule
 * (problem/instance.hpp, search/duality.cpp) adds the reductions' schedule by duality, which
 * optimizes the dual collective and so lives in search/. A new construction is a file of this
 * room and a row of step_constructions (constructions/known.cpp); the registry of every
 * construction (verifier/time/constructions.hpp) lists these rows with the time objective's.
 */
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "support/budget.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched {

/// What a row of step_constructions builds from: the instance, the deadline and the schedules the rows before it
/// found (verified; the XOR-invariant total exchange asks for fewer steps than the first).
struct StepBuild {
    const SynthInstance& in;
    std::chrono::steady_clock::time_point deadline;
    const std::vector<KnownSchedule>& found;
};

/// A construction of optimize's upper bound (least steps): one row each, tried in order.
struct StepConstruction {
    std::string name;    ///< unique among every construction (verifier/time/constructions.hpp)
    std::string file;    ///< where it is built
    std::string source;  ///< the schedule's source as optimize prints it
    bool own = false;    ///< collsched's own construction: left out under --no-constructions
    bool fixed_routes = false;  ///< verified with every message on the topology's route
    /// Why it does not apply to the instance (of this encoding); empty when it does.
    std::function<std::string(const SynthInstance&, EncodingKind)> why_not;
    /// Its table, not yet verified; nullopt where it finds none within the deadline.
    std::function<std::optional<SendTable>(const StepBuild&)> build;
    bool stops_when_late = true;  ///< not started past the deadline or the memory budget (else: no deadline of its own)
};

/// The rows constructed_schedule tries, in order.
const std::vector<StepConstruction>& step_constructions();

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
