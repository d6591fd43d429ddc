/** \file
 * The greedy synthesizer for any size (issue 28; the idea of TACOS, Won et al., MICRO'24, on
 * collsched's model): step by step on the time-expanded network, every channel is matched with a
 * chunk its sender holds and its receiver lacks, within the channel capacities, the ports and the
 * link groups. Allgather and broadcast (every processor needs every chunk: each channel takes
 * the oldest chunk its sender holds that its receiver has not got nor is getting this step),
 * alltoall (every message along the topology's route, store and forward at processors; each
 * channel sends the oldest message waiting for it), reduce_scatter and reduce (an allgather or a
 * broadcast reversed, compiler/table/duality.hpp). Seeded and deterministic: the seed fixes the order
 * in which senders and channels are visited in each step. The result is a send table verified by
 * the direct checker; it is an upper bound, never a proof (docs/synthesis.md, "Synthesis at scale").
 */
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "compiler/table/send_table.hpp"
#include "support/budget.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched {

struct GreedyOptions {
    std::uint64_t seed = 1;
    Deadline deadline;    ///< checked every step; the run gives up (no table) once it passes
    MemoryBudget memory;  ///< the size is estimated before the work and polled every step
};

struct GreedyResult {
    std::optional<SendTable> table;  ///< verified by verify_direct
    std::string source;              ///< "greedy matching of chunks to channels (seed 1)"
    std::string reason;              ///< no table: why (time limit, memory limit, stalled)
    double seconds = 0;              ///< synthesis and verification
    double verify_seconds = 0;
    std::uint64_t transfers = 0;
};

/// Why the greedy does not take an instance ("" when it does): it takes hop timing on networks
/// without routers (processors joined by channels, with any capacities, ports and link groups),
/// allgather, broadcast, alltoall, reduce_scatter (C = P chunks) and reduce (C = 1), one chunk per
/// datum otherwise, one round per step, injections unrestricted.
std::string greedy_problem(const SynthInstance&);

/// The greedy schedule, verified. Throws InputError when greedy_problem is not empty.
GreedyResult greedy_synthesize(const SynthInstance&, const GreedyOptions& = {});

}  // namespace collsched

namespace collsched::synth_internal {

/// Greedy list schedules (the second half of constructions/greedy.cpp); nullopt when the greedy does not apply or
/// the deadline passes.
std::optional<SendTable> greedy_personal(const SynthInstance&, std::chrono::steady_clock::time_point deadline);
std::optional<SendTable> greedy_free_route(const SynthInstance&, std::chrono::steady_clock::time_point deadline);
std::optional<SendTable> greedy_flood(const SynthInstance&, std::chrono::steady_clock::time_point deadline);
std::optional<SendTable> greedy_end_to_end(const SynthInstance&, std::chrono::steady_clock::time_point deadline);

}  // namespace collsched::synth_internal
