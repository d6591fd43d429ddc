/** \file
 * The bound on the rings an NCCL graph file holds (docs/time.md, "The bound on an executor"; the
 * proof: verifier/time/OBJECTIVE.md, "The rings of a graph file"). A *crossing family* F(X, d): the
 * tables in which, for every set X of `sets` (each processor, and each box of the graph file when
 * there are two or more), distinct messages of at least d x M bytes in all leave X (each has
 * transfers that carry it from a processor of X, through routers only, to a processor outside X)
 * and as many enter X. A table of F crosses every cut between X and the other processors with at
 * least d x M bytes, so by the cut rule (time_bound.hpp, Lemma 2, with the latency on to a
 * processor) T >= T*(d M) on the least such cut, on any speeds: on executor E's protocol p, T >=
 * launch_p + that (time_bound_executor.hpp's proof). Every ring an NCCL graph file holds, run as NCCL
 * runs it (each channel a cycle through all processors, the same share of the data from every
 * processor on it), is in F with d = (P-1)/P (allgather, reduce_scatter) or 2(P-1)/P (allreduce):
 * OBJECTIVE.md. Whether a given table is in F is checked on the table (ring_family_miss), so the
 * bound is used only for tables that are.
 *
 * The chain (OBJECTIVE.md, "The chain of a ring"): in such a ring a share passes P-1 hops one after another (allreduce
 * 2(P-1)), each at least the least latency out of its sender (into its receiver), so every ring's table has a chain
 * (chain_latency, runtime/timing.hpp) of at least ring_chain_term's latency; the run checks it on each table.
 */
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "runtime/timing.hpp"
#include "support/budget.hpp"
#include "verifier/time/time_bound.hpp"

namespace collsched {

/// The sets and the demand of the crossing family of a collective on a machine.
struct RingFamily {
    std::vector<std::vector<std::uint32_t>> sets;  ///< each processor, then each box (two or more boxes)
    std::vector<std::string> names;                ///< "GPU 3", "box 1 (GPUs 8-15)"
    double demand = 0;                             ///< d: bytes per byte of M out of and into every set
    std::string demand_text;                       ///< "(P-1)/P = 31/32"
    std::uint32_t passes = 1;                      ///< times a share goes round its ring (allreduce: 2)
};

/// The family for allgather, reduce_scatter and allreduce on `topology` (boxes as the NCCL graph
/// file reads them, nccl_graph_boxes); nullopt for the other collectives and under 2 processors.
std::optional<RingFamily> ring_family(const Topology&, CollectiveKind);

/// "" when table `t` is in the family, else the first set and direction it misses by, with the bytes.
std::string ring_family_miss(const SendTable& t, const RingFamily&);

/// Appends to `bounds` the family's cut terms on the speeds the time model takes under `speeds` (an
/// executor's protocol, as time_bounds takes them): per set, out of it and into it, the least cut
/// (max flow) with demand d; a processor's only for the least of its orbit (processor_orbits: the same cuts).
/// Polls `limits` (LimitReached).
void add_ring_terms(TimeBounds& bounds, const Topology&, const Model&, const TimeOptions& speeds, const RingFamily&, const RunLimits& limits);

/// The family's chain on the speeds the time model takes under `speeds`: with h(u) the least latency (chain_weights, on
/// any route) from processor u to another and g(v) into v, H = sum h, G = sum g, a latency term of
/// max(H - max h, G - max g) (allreduce: max(2H - the two largest h, 2G - the two largest g, H + G - max (h + g))).
/// nullopt where a processor reaches no other.
std::optional<TimeTerm> ring_chain_term(const Topology&, const TimeOptions& speeds, const RingFamily&);

}  // namespace collsched
