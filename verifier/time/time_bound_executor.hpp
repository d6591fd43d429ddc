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
 * compares. There only NCCL's own tables are timed on nccl, a finite set each timed exactly: their
 * least time is a lower bound on every one of them, so it may stand in the least for the nccl
 * executor's rows (bound_exactly; docs/time.md, "The bound on an executor").
 */
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/executor/executor.hpp"
#include "verifier/time/ring_bound.hpp"
#include "verifier/time/time_bound.hpp"

namespace collsched {

/// One executor's protocol: its launch and the network's bounds on its speeds.
struct ExecutorBoundRow {
    std::string executor;  ///< the executor's name ("nccl")
    Protocol protocol = Protocol::simple;
    double launch = 0;     ///< seconds, before the first transfer
    TimeBounds bounds;     ///< time_bounds on the protocol's speeds (the launch not in it)
};

/// A finite set of tables timed exactly on one executor, in the least beside the rows: per size the
/// least of their times (both timings), so at or below the time of every one of them.
struct ExecutorExact {
    std::string executor;  ///< the executor that times them ("nccl")
    std::string what;      ///< the set, as the space names it
    std::vector<double> sizes;
    std::vector<double> seconds;     ///< per size: the least time of a table of the set
    std::vector<std::string> table;  ///< per size: that table
    std::vector<Protocol> protocol;  ///< per size: its protocol
};

struct ExecutorBounds {
    std::string space;                     ///< the tables and times it holds for
    std::vector<std::string> assumptions;  ///< what the proof reads of the executor model
    std::vector<ExecutorBoundRow> rows;
    /// per executor of the rows: its name and the tables its rows hold for (the space is made of these)
    std::vector<std::pair<std::string, std::string>> parts = {};
    std::optional<ExecutorExact> exact = std::nullopt;
    /// When the rows are narrowed to a family of tables (bound_ring_family): the rows as they were, the bound on any
    /// table the executor times (printed beside: what a custom executor on the same transport could reach).
    std::vector<ExecutorBoundRow> any_rows = {};
    std::string family = "";  ///< the family the rows hold for ("" when any table)
    bool asynchronous = false;  ///< the rows hold for the asynchronous time only (else for both timings)
};

/// The bound at one size: the least over the rows of launch + the row's bound, and the exact set's time.
struct ExecutorBound {
    double size = 0;
    double seconds = 0;
    std::size_t row = 0;  ///< the row that gives the least over the rows
    TimeBound at;         ///< that row's network bound (seconds = the row's value less the launch)
    std::optional<std::size_t> exact = std::nullopt;  ///< when the exact set's time gives it: its index of sizes
};

/// The bounds of `collective` on `topology` for the times of `executors` (each in every protocol
/// it has; ideal executors are skipped), under `link` (--link) as the time model takes it.
/// nullopt when time_bounds has none (wormhole timing, collectives without bounds) or no
/// executor is given. Each row polls `limits` (what a limit stops is in its bounds' `stopped`). `asynchronous`: the
/// bounds of the asynchronous time only (time_bounds' `asynchronous`: a group's message counts), which the space says.
std::optional<ExecutorBounds> executor_time_bounds(const Topology&, const Collective&, const Model&, const std::vector<ExecutorModel>& executors,
                                                   const std::optional<LinkSpeed>& link, const RunLimits& limits = {}, bool asynchronous = false);

ExecutorBound evaluate(const ExecutorBounds&, double size);

/// Puts the exact set in the least. With `whole` (every table the set's executor times in the space is
/// in it, or left out by a lower bound above one of them) the rows of that executor leave the least and
/// the space names the set instead of any table on it; else they stay (a table of it not timed may be
/// faster). The rows of another executor stay in every case.
void bound_exactly(ExecutorBounds&, ExecutorExact, bool whole);

/// On executor `e` (nccl) with NCCL graph files: each row of e's gets the crossing family's cut terms on its protocol's
/// speeds (ring_bound.hpp: every ring a graph file holds is in the family), and the rings' chain (ring_chain_term) where
/// every one of `tables` (the run's tables on e that are not NCCL's own, by name) has a chain at least as long on those
/// speeds (chain_latency; else a note in `notes` says which falls short, and the row keeps the cuts alone); the rows as
/// they were kept in any_rows, and the space names the family instead of any table. Only for a run whose every table on
/// e is in the family (the caller checks each: ring_family_miss) or in an exact set. LimitReached (from the flows and
/// chains) leaves `b` as it was.
void bound_ring_family(ExecutorBounds& b, const Topology&, const Model&, const ExecutorModel& e, const std::optional<LinkSpeed>& link,
                       const RingFamily& family, const std::vector<std::pair<std::string, const SendTable*>>& tables, std::vector<std::string>& notes,
                       const RunLimits& limits = {});

/// The least over the rows of any table (any_rows, else the rows) at `size`: the bound without a family.
double any_table_seconds(const ExecutorBounds&, double size);

/// "" when the bound is at or below `predicted` (to a relative 1e-9), else a message with both.
std::string bound_violation(const ExecutorBound&, const ExecutorBounds&, double predicted, std::string_view what);

/// The bound as one paragraph: the value, the row (executor, protocol, launch) and its term, the
/// other rows' values, the space and assumptions.
std::string bound_text(const ExecutorBounds&, const ExecutorBound&);

}  // namespace collsched
