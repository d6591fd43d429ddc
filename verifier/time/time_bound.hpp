/** \file
 * Proved lower bounds on the time of a collective at size M (issue 43; docs/time.md, "Lower
 * bounds on time", where every bound is proved). They hold for the asynchronous and the
 * synchronous time of docs/time.md alike, for any table the model accepts: any route, any
 * number of chunks, any rounds, routers under replicate=no and yes; reductions combine only at
 * processors (no in-network reduction). Each bound is a term:
 *
 *  - a latency term: a byte a goal needs crosses a chain of channels from its source, each
 *    adding its latency: T >= the largest alpha-distance over the pairs the collective joins;
 *  - a cut term: `demand` x M bytes must cross a set of arcs of the capacity network
 *    (verifier/synth/bounds/capacity_network.hpp, channels, link groups and ports) whose bandwidths are
 *    B_a and whose channels' least latency is alpha_a; arc a carries at most B_a max(0, T -
 *    alpha_a) bytes in a run of T seconds (its last byte must still arrive), so T is at least
 *    the least T with sum_a B_a max(0, T - alpha_a) >= demand x M. Without latencies this is
 *    demand x M / sum_a B_a; the latencies add exactly what is proved (no more: max is the
 *    combination of terms, a sum only inside a term).
 *
 * The cuts: allgather and reduce_scatter ForestColl's (M/P) |S ∩ P| over every set of nodes, by
 * max flow on the link speeds (Newton's method on the ratio, as verifier/synth/bandwidth_bound);
 * allreduce the one-way gossip (2(P-1) transfers per byte) on every partition tried: single
 * processors (Patarasuk and Yuan's 2(P-1)/P x M / B_gpu), boxes, rails, the allgather's cut,
 * each set's region found by max flow; alltoall the cuts around processors, boxes and halves and
 * the hops of every message; broadcast, reduce, scatter and gather the cut around the root.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/core/model.hpp"
#include "compiler/table/collective.hpp"
#include "compiler/topology/topology.hpp"
#include "support/budget.hpp"

namespace collsched {

struct TimeOptions;

/// An arc of a cut on link speeds: its bandwidth (bytes per second) and the least latency of the
/// channels that pass through it.
struct CutArc {
    double bandwidth = 0;
    double alpha = 0;
};

/// One proved bound (see the file comment).
struct TimeTerm {
    std::string name;    ///< "latency", "cut (max flow)", "gossip per processor (Patarasuk and Yuan)", ...
    std::string detail;  ///< the argument with its numbers, independent of M
    double latency = 0;  ///< a latency term: seconds
    double demand = 0;   ///< a cut term: bytes that must cross per byte of M
    std::vector<CutArc> arcs;
    std::vector<std::uint32_t> inside;  ///< the processors of the cut's set (empty: a sum over several sets or none)
    std::vector<std::string> crossing;  ///< the arcs as text ("channel 3->11 (25 GB/s, 2.7 us)"), at most 12 and "... (n more)"
    /// The bound at size M (bytes, NCCL's convention: docs/time.md "Sizes").
    double seconds(double size) const;
    double bandwidth() const;  ///< sum of the arcs' bandwidths
};

struct TimeBounds {
    std::string model;                     ///< the time model named: "docs/time.md asynchronous and synchronous; ..."
    std::vector<std::string> assumptions;  ///< what every term assumes
    std::vector<TimeTerm> terms;           ///< the latency term first, then the cut terms
    std::string no_bandwidth;              ///< why there is no cut term ("" when there is one)
    std::uint32_t max_flows = 0;
    /// The arguments a limit stopped, each with the limit ("cut: time limit (the densest cut: ...)").
    /// The terms kept are each proved; without the stopped ones the bound is weaker, never wrong.
    std::vector<std::string> stopped;
};

/// The bound at one size: the largest term.
struct TimeBound {
    double size = 0;
    double seconds = 0;
    std::size_t best = 0;      ///< the term that gives it
    double latency_s = 0;      ///< the latency term alone
    double bandwidth_s = 0;    ///< the largest cut term
};

/// Every bound for `collective` on `topology` under `model` (hop timing; nullopt for wormhole
/// timing and for the collectives without one: prefix, scan, custom). `uniform` replaces the
/// link speeds as `--link` does.
/// `limits`: each argument polls them, a max flow starts only when the last one on its network fits
/// in the time left, and what a limit stops is named in `stopped`.
std::optional<TimeBounds> time_bounds(const Topology&, const Collective&, const Model&, const std::optional<LinkSpeed>& uniform = {},
                                      const RunLimits& limits = {});
/// The same on the speeds the time model takes under `speeds` (its --link and executor costs:
/// channel_speed, group_speed, and the message cost added to every channel's latency, not to a
/// group's): the network part of the bound on an executor (time_bound_executor.hpp). The launch
/// is not in it. `asynchronous`: for the asynchronous time only, where a group's holding also ends a message before
/// the arrival over a channel no faster than the group (WeightedNetwork::group_delay); the model says so.
std::optional<TimeBounds> time_bounds(const Topology&, const Collective&, const Model&, const TimeOptions& speeds, const RunLimits& limits = {},
                                      bool asynchronous = false);

TimeBound evaluate(const TimeBounds&, double size);

/// The internal-consistency rule: a proved lower bound above a verified schedule's predicted time
/// is a bug. "" when bound <= predicted (to a relative 1e-9), else a message with both numbers.
std::string bound_violation(const TimeBound&, const TimeBounds&, double predicted, std::string_view what);

/// The bound as one paragraph: the value, the term that gives it and its argument, the latency
/// and bandwidth parts, the model and the assumptions.
std::string bound_text(const TimeBounds&, const TimeBound&);

}  // namespace collsched
