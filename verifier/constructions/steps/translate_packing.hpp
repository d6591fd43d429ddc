/** \file
 * Allgather by translates of one tree set (issue 27): on a machine whose processors carry a
 * regular abelian group of automorphisms, here Z_B x Z_K acting on x = B b + i by adding to the
 * box b and the local index i (boxes of B GPUs with K boxes, rings and tori as Z_N or Z_a x Z_b),
 * every datum g follows the same C labelled out-trees, moved by g. Channel u->w then carries, in
 * step s, one chunk for every tree edge of step s whose difference y - x equals w - u (the
 * translate by u - x), so the whole schedule is valid exactly when, per step, the tree edges of
 * each difference d number at most cap(d) and, per link group (and port), the tree edges whose
 * differences lie in the group number at most its capacity (counted with multiplicity). This
 * is a broadcast of C chunks from one root in the quotient, of N elements instead of N^2
 * deliveries: a greedy that fills the scarcest resources first, with seeded tie-breaks and
 * restarts, reaches the cut bound exactly on the box machines where the bound's cut leaves one
 * processor outside (rail, multibox), and one step above it where the cut's drain forces that
 * (verifier/constructions/steps/tree_packing.hpp, least_rounds). The group is checked, not assumed: both generators
 * must map every channel to a channel of equal capacity and every link group to a group of
 * equal capacity. The table is verified by the caller.
 */
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/topology/topology.hpp"
#include "verifier/synth/symmetry/translations.hpp"
#include "verifier/constructions/steps/tree_packing.hpp"

namespace collsched {

/// The trees of pack_translates without the table (seeded greedy runs until one reaches
/// `target_steps`, 64 in a row do not improve, or the deadline); nullopt as there.
std::optional<QuotientTrees> grow_translates(const SynthInstance& in, std::uint32_t chunks, Step target_steps,
                                             std::chrono::steady_clock::time_point deadline);

/// The table of the trees: P times their edges, one per datum (not verified). Its size is
/// estimated first (bytes_per_transfer) and the limits are polled while it is written: either
/// throws LimitReached.
PackedSchedule expand_translates(const SynthInstance& in, const QuotientTrees& trees, const RunLimits& limits = {});

/// An allgather with `chunks` chunks by translates of one labelled tree set, in at most
/// `max_steps` steps of one round (tries seeded greedy runs until one reaches `target_steps` or
/// the deadline); nullopt when the model is not taken (half ports), there is no translation
/// group, or no run finished within `max_steps` (and under inject=once: a root sends to each of
/// its children). The table is not yet verified.
/// `limits` as expand_translates (LimitReached); their deadline counts with `deadline`.
std::optional<PackedSchedule> pack_translates(const SynthInstance& in, std::uint32_t chunks, Step target_steps,
                                              std::chrono::steady_clock::time_point deadline, const RunLimits& limits = {});

/// Total exchange by translates of one processor's messages (least steps, one chunk, one round
/// per step): under the same checked group, processor 0's message to d follows a shortest path
/// of the Cayley graph (a sequence of differences summing to d) and every processor g's message
/// to g + d follows it moved by g, at the same steps. The budgets are those of the allgather's
/// quotient (channel capacities per difference, link groups and ports per orbit), counted over
/// the hops of one step; a message moves at most once per step. Seeded first-fit list
/// scheduling, longest paths first, each message on the shortest path that finishes earliest,
/// until a run reaches `target_steps`, 16 runs in a row find nothing better, or the deadline.
/// nullopt when the model is not taken (half ports, wormhole timing), there is no translation
/// group, or P > 4096. The table is not yet verified.
/// `limits`: the table's size is estimated before it is built (LimitReached).
std::optional<SendTable> translate_alltoall(const SynthInstance& in, Step target_steps, std::chrono::steady_clock::time_point deadline,
                                            const RunLimits& limits = {});

}  // namespace collsched
