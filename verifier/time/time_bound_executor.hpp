/** \file
 * A proved lower bound on the time of any table an executor runs (docs/time.md, "The bound on an
 * executor"). The executor model (runtime/executor/executor.hpp, runtime/timing.cpp) times a table
 * under one of the executor's protocols on changed speeds: every channel at its class's efficiency
 * over the protocol's wire factor (and NCCL's LL128 cap per network channel), every group likewise,
 * the protocol's hop added to the alpha of a channel out of a processor; every transfer holds its
 * connection or channel for the message cost before it ends; the launch comes before the first
 * transfer. The grain, NCCL's LL cap per GPU and the connections only lengthen a holding. So the
 * arguments of time_bound.hpp hold on those speeds (Lemma 1 needs only that a transfer holds each
 * of its resources exclusively for its bytes at the resource's rate and arrives its channel's delay
 * after that), shifted by the launch: for protocol p, T >= launch_p + bound(speeds_p). The
 * executor runs a table in its fastest protocol, so the bound is the least over the protocols.
 *
 * A row per (executor, protocol): the executor the times are for, and the nccl executor when
 * NCCL's own algorithms are timed on it beside another executor's tables (optimize --executor
 * mscclpp|msccl: candidates.hpp basis_of), so that the bound holds for every time the report
 * compares.
 */
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/executor/executor.hpp"
#include "verifier/time/time_bound.hpp"

namespace collsched {

/// One executor's protocol: its launch and the network's bounds on its speeds.
struct ExecutorBoundRow {
    std::string executor;  ///< the executor's name ("nccl")
    Protocol protocol = Protocol::simple;
    double launch = 0;     ///< seconds, before the first transfer
    TimeBounds bounds;     ///< time_bounds on the protocol's speeds (the launch not in it)
};

struct ExecutorBounds {
    std::string space;                     ///< the tables and times it holds for
    std::vector<std::string> assumptions;  ///< what the proof reads of the executor model
    std::vector<ExecutorBoundRow> rows;
};

/// The bound at one size: the least over the rows of launch + the row's bound.
struct ExecutorBound {
    double size = 0;
    double seconds = 0;
    std::size_t row = 0;  ///< the row that gives it
    TimeBound at;         ///< that row's network bound (seconds = this one's less the launch)
};

/// The bounds of `collective` on `topology` for the times of `executors` (each in every protocol
/// it has; ideal executors are skipped), under `link` (--link) as the time model takes it.
/// nullopt when time_bounds has none (wormhole timing, collectives without bounds) or no
/// executor is given. Each row polls `limits` (what a limit stops is in its bounds' `stopped`).
std::optional<ExecutorBounds> executor_time_bounds(const Topology&, const Collective&, const Model&, const std::vector<ExecutorModel>& executors,
                                                   const std::optional<LinkSpeed>& link, const RunLimits& limits = {});

ExecutorBound evaluate(const ExecutorBounds&, double size);

/// "" when the bound is at or below `predicted` (to a relative 1e-9), else a message with both.
std::string bound_violation(const ExecutorBound&, const ExecutorBounds&, double predicted, std::string_view what);

/// The bound as one paragraph: the value, the row (executor, protocol, launch) and its term, the
/// other rows' values, the space and assumptions.
std::string bound_text(const ExecutorBounds&, const ExecutorBound&);

}  // namespace collsched
