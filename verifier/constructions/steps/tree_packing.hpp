/** \file
 * A schedule for the bandwidth end of the frontier (issue 27): every chunk of every datum is
 * delivered down a spanning out-tree (arborescence) rooted at its origin, the trees packed into
 * steps by one max flow per step. In step s the capacity network of one round
 * (verifier/synth/bounds/capacity_network.hpp, with each processor split into a sending and a receiving
 * side) carries as many chunks as it can from holders to processors that lack them: a channel
 * u->v may carry up to cap(u->v) chunks, and no more than u holds and v lacks; groups and ports
 * cap the sums. The flow fixes how many chunks cross each channel; each receiver then takes, for
 * every unit, a chunk its sender holds and it lacks and no other sender brings it in this step,
 * the rarest first (the fewest holders), so that no datum spreads ahead of the others. The first
 * arrival of a chunk at every processor is its tree edge. Every step lasts one round, so the
 * table has R = S; with C chunks its R/C is S/C, and when that equals the flow bound
 * (verifier/synth/bounds/bandwidth.hpp) the schedule is proved bandwidth-optimal by the cut. The table
 * is verified by the direct checker before it is returned.
 *
 * Scope: allgather and broadcast on networks of processors (link groups and ports are fine;
 * routers are not: a step moves a chunk one channel, and a router would need the next step);
 * reduce-scatter and reduce are these reversed (compiler/table/duality.hpp).
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/table/send_table.hpp"
#include "verifier/synth/problem/pareto.hpp"

namespace collsched {

struct PackedSchedule {
    SendTable table;           ///< verified by the direct checker
    std::uint32_t chunks = 1;  ///< C
    Step steps = 0;            ///< S
    Step rounds = 0;           ///< R (the table's step_rounds; S = R when every step has one round)
    std::uint32_t depth = 0;   ///< the deepest tree: most channels from an origin to a first arrival
    /// The least R any schedule with `chunks` chunks can take by the bound's cut (least_rounds);
    /// 0 when no bound was given. steps == least_rounds: proved optimal for its C.
    Step least_rounds = 0;
    std::string method;        ///< "translates of one tree set (Z_8 x Z_16)" or "flow per step"
    Ratio rounds_per_chunk() const { return Ratio::of(rounds, chunks); }
};

struct PackingOptions {
    /// Chunks per datum to try, in order; the first whose R/C meets `target` wins, else the best.
    std::vector<std::uint32_t> chunks = {1};
    std::optional<Ratio> target = {};
    /// Refuse when P * P * C (allgather) chunk deliveries exceed this (the table's size).
    std::uint64_t max_deliveries = std::uint64_t{1} << 27;
    /// Stop trying further chunk counts (and abandon a run) after this many seconds; 0: none.
    double seconds = 0;
    /// Processors outside the bound's cut (CutCertificate): 2 or more add the drain (least_rounds).
    std::uint32_t outside = 1;
    /// Merge consecutive steps into steps of several rounds where no chunk would cross two
    /// channels in one step (merge_steps): the same R with fewer steps S.
    bool merge = true;
    /// The run's limits (with `seconds`, the earlier deadline counts): every stage polls them (the
    /// flows of a step, the growing of trees, their expansion, merging and verification), and a
    /// table's size is estimated before it is built (bytes_per_transfer); a run they stop is left
    /// out and the best table so far is returned.
    RunLimits limits;
    /// When set: receives the limit that stopped a run or the packing ("" when none did).
    std::string* stopped = nullptr;
};

/// What one transfer of a packed table costs while it is built, merged and verified (the table,
/// the merge's arrivals, the checker's regrouping): estimated before a table is built.
inline constexpr std::uint64_t bytes_per_transfer = 48;

/// The fewest steps the packed table fits in with the same rounds: consecutive one-round steps
/// become one step of as many rounds while no transfer of a step depends on an arrival inside
/// the same merged step (hop timing: a chunk crosses one channel per step). A step of r rounds
/// multiplies every capacity, group and port by r, and each merged step's loads are sums of r
/// one-round loads, so the table stays valid; R is unchanged and S drops to at least the depth.
/// Greedy from the first step: a merged step ends just before the first step with a transfer
/// whose sender received its chunk inside it, which is the least number of consecutive pieces.
/// The table is verified again by the caller. Polls `limits` (LimitReached); a merge whose
/// arrival table does not fit the memory left is not done (the table stays as it is).
void merge_steps(PackedSchedule&, const RunLimits& limits = {});

/// The least rounds R of any allgather (or broadcast) with C chunks, by a cut S of ratio
/// b = D(S)/c(S) with m processors outside S: every chunk of the D(S) C that start inside
/// crosses S's boundary once at least, c(S) per round. When m >= 2, a chunk that first crosses
/// in the last step (r_T >= 1 rounds) lands at one node and cannot be forwarded within that
/// step, so it crosses m times in that step; with a chunks crossing before it and b' in it,
/// D(S) C = a + b' <= (R - r_T) c(S) + r_T c(S) / m, hence R >= b C + (1 - 1/m): the bound b is
/// then attained at no C (a drain of at least (1 - 1/m)/C per chunk). m = 1: R >= ceil(b C).
Step least_rounds(const Ratio& bound, std::uint32_t chunks, std::uint32_t outside);

/// The processors outside the flow bound's cut (P minus those inside); 1 for reversed cuts (the
/// drain argument is made for data leaving a set, not for reductions entering it).
std::uint32_t cut_outside(const BandwidthBound& bound, std::uint32_t processors);

/// Why pack_trees does not take `in` ("" when it does).
std::string packing_problem(const SynthInstance& in);

/// The packed schedule with the least R/C over opt.chunks, or nullopt when none completed (a
/// step in which nothing could move: the greedy stalled) or packing_problem says no.
std::optional<PackedSchedule> pack_trees(const SynthInstance& in, const PackingOptions& opt);

/// The chunk counts worth trying for a bound p/q: q, 2q, 3q, 4q (R = p, 2p, ... would meet it),
/// at most `limit` (and 1 when q > limit). With `outside` >= 2 (the drain of least_rounds, which
/// shrinks as 1/C) also 8q, 16q, ... while P^2 C stays within 2^22 deliveries.
std::vector<std::uint32_t> chunks_for(const Ratio& bound, std::uint32_t limit, std::uint32_t outside = 1, std::uint32_t processors = 0);

}  // namespace collsched
