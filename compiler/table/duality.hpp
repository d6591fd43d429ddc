/** \file
 * Reductions from dissemination by duality, as SCCL does (docs/synthesis.md, "Reductions by
 * duality"): a reduce is a broadcast reversed in time and direction, a reduce-scatter an
 * allgather reversed, and an allreduce a reduce-scatter followed by an allgather. The
 * transforms take a verified broadcast or allgather table on a network whose every channel has a
 * reverse of the same capacity and whose routers, if any, forward (replicate=no: each copy in
 * leaves once, so reversed each partial in leaves once and no router combines), and give a table of partials under the
 * buffer rule (docs/semantics.md, "Reductions"): reduce(r) with C = 1; reduce_scatter and
 * allreduce with C = P chunks, chunk s reduced to processor s.
 */
#pragma once

#include <string>

#include "compiler/table/send_table.hpp"
#include "support/budget.hpp"

namespace collsched {

/// Why the duality does not apply to a topology and model ("" when it does): routers that copy
/// (replicate=yes), a channel without a reverse of the same capacity, or wormhole timing.
std::string duality_problem(const Topology&, const Model&);

/// The allgather's first arrival of every b(s) at every processor (a spanning arborescence per
/// s; other transfers are dropped), reversed: the arrival of b(s) at v over u -> v in step t
/// becomes v's send of its partial of chunk s to u in step T + 1 - t. Every processor sends
/// each chunk's partial once, after all partials of its subtree arrived, so the table holds and
/// has the allgather's T steps. The allgather must be complete and causal.
/// `deadline`: LimitReached once it passes while the tree is reversed, the partials resolved or
/// the composites numbered (a million partials on 1,024 processors take seconds).
SendTable reduce_scatter_from_allgather(const SendTable& allgather, Deadline deadline = {});

/// The broadcast's first arrivals reversed, as above: reduce(r) of the broadcast's T steps.
SendTable reduce_from_broadcast(const SendTable& broadcast);

/// reduce_scatter_from_allgather in steps 1..T, then the allgather itself in steps T+1..2T
/// with b(s) replaced by the full partial of chunk s: an allreduce of 2T steps.
/// `deadline` as for reduce_scatter_from_allgather.
SendTable allreduce_from_allgather(const SendTable& allgather, Deadline deadline = {});

}  // namespace collsched
