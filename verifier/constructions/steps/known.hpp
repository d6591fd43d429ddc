/** \file
 * collsched's constructions of least steps (the papers' algorithms, the XOR-invariant,
 * translation-invariant, mirrored ring and direct total exchanges, the ring allgather, the greedy
 * list schedules, the translates): each a steps builder, named by one row of the constructions'
 * registry (verifier/time/constructions.cpp, docs/architecture.md "The constructions' registry"),
 * with why it does not apply. constructed_schedule and stage_schedule (problem/construction.hpp,
 * defined here) try the rows they are handed and verify what they build by the direct checker.
 */
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "support/budget.hpp"
#include "verifier/synth/problem/construction.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched {

// Why a row does not apply (empty: it does).
std::string alltoall_on_bft(const SynthInstance&, EncodingKind);
std::string personal_only(const SynthInstance&, EncodingKind);
std::string any_route_only(const SynthInstance&, EncodingKind);
std::string dissemination_only(const SynthInstance&, EncodingKind);
std::string end_to_end_only(const SynthInstance&, EncodingKind);

// The steps builders (StepBuilder) of the rows: stage `known`, not yet verified, with the row's source.
std::optional<KnownSchedule> bft_phase_schedule(const StepBuild&);               ///< compiler/table/builder.cpp's bft_phase_alltoall
std::optional<KnownSchedule> xor_invariant_schedule(const StepBuild&);           ///< fewer steps than the first found
std::optional<KnownSchedule> translation_invariant_schedule(const StepBuild&);
std::optional<KnownSchedule> mirrored_ring_schedule(const StepBuild&);
std::optional<KnownSchedule> direct_alltoall_schedule(const StepBuild&);
std::optional<KnownSchedule> greedy_personal_schedule(const StepBuild&);         ///< greedy.hpp
std::optional<KnownSchedule> greedy_free_route_schedule(const StepBuild&);       ///< greedy.hpp
std::optional<KnownSchedule> ring_allgather_schedule(const StepBuild&);          ///< a Hamiltonian cycle (single-port paper)
std::optional<KnownSchedule> greedy_flood_schedule(const StepBuild&);            ///< greedy.hpp
std::optional<KnownSchedule> greedy_end_to_end_schedule(const StepBuild&);       ///< greedy.hpp
/// Stage `translates`: translate_packing.hpp's translates on a checked translation group, verified, with the group
/// in the source; nullopt where the group, the table or the limits do not allow it.
std::optional<KnownSchedule> translates_schedule(const StepBuild&);
/// Stage `chunks`: ring_schedule (rings.cpp), verified.
std::optional<KnownSchedule> rings_schedule(const StepBuild&);

/// Total exchange where every goal pair has a channel of its own (complete graphs, switch boxes):
/// the demand coloured with as many matchings as its largest degree (Koenig), k colours a step.
/// Not yet verified (constructed_schedule verifies it); nullopt where it does not apply.
/// LimitReached once `deadline` passes while it lists, colours and writes the sends.
std::optional<SendTable> direct_alltoall(const SynthInstance&, Deadline deadline = {});

}  // namespace collsched
