/** \file
 * What the synthesizer's rooms share inside the verifier (problem/internal.cpp): the goal pairs
 * of an instance, list scheduling of unit jobs, and the check of a schedule found. Not a public API.
 */
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "support/budget.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched::synth_internal {

inline constexpr std::uint32_t unreachable = std::numeric_limits<std::uint32_t>::max();

/// One goal: message m, from its origin src, must reach dst.
struct GoalPair {
    MessageId m;
    Node src, dst;
};

/// The goal pairs of the instance's collective, in message order. The list is reserved at once
/// (its size from the budget: RunLimits::reserve) and `limits` are polled every 65,536 pairs
/// (torus:64x64 allgather: 16.7 million pairs, a second or more on a loaded machine):
/// LimitReached ("time limit (listing the goal pairs)") once reached.
inline std::vector<GoalPair> goal_pairs(const SynthInstance& in, const RunLimits& limits = {}) {
    const std::uint32_t P = in.topology->processors();
    const std::uint64_t n = in.collective.goal_count(P);
    limits.reserve(mul_sat(n, sizeof(GoalPair)), "the goal pairs");
    std::vector<GoalPair> g;
    g.reserve(static_cast<std::size_t>(n));
    Messages ms = in.collective.messages(P);
    in.collective.for_each_goal(P, [&](MessageId m, Node d) {
        if ((g.size() & 0xffff) == 0xffff) limits.check("listing the goal pairs");
        g.push_back({m, ms.origin(m), d});
    });
    return g;
}

/// One unit job of a resource: it may be processed in step `release` or later, and `tail` more
/// steps must follow it. With `cap` jobs per step, the least possible max(step + tail) is what
/// list scheduling by largest tail achieves (for unit jobs with integer releases on identical
/// machines this rule is optimal: an exchange argument moves any job with a larger tail into
/// an earlier slot without delaying the other).
struct Job {
    Step release;
    Step tail;
};
Step least_makespan(std::vector<Job> jobs, std::uint32_t cap);

/// Whether `table` (its model set to the instance's) passes the direct checker.
bool holds(SendTable& table, const SynthInstance& in, bool fixed_routes,
           std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

}  // namespace collsched::synth_internal
