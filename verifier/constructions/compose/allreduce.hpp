/** \file
 * Constructions for time (docs/time.md, "Constructions for time"): allreduce,
 * reduce-scatter and allgather built directly as send tables for a machine of boxes (the
 * components of its fast channels, K boxes of B processors, GPU j of every box on rail j), in
 * two phases per piece: inside every box (direct one-step exchanges on the box's switch) and
 * across the boxes along every rail (direct, ring, recursive halving and doubling), the buffer
 * cut into k pieces that run pipelined. Every shape is a family in k; for a buffer of M bytes
 * the k with the least predicted asynchronous time (docs/time.md) is kept among k = 1, 4, 16,
 * 64 (or the most within the budget of transfers where four times as many would pass it), and
 * the table is verified by the direct checker. The machine as one box (B = P) and as
 * P boxes of one (K = P: flat recursive doubling, Rabenseifner, ring) are tried as well, so
 * switch boxes (nvswitch8, dgx2) and cube meshes (dgx1) get the latency end too, and machines
 * of one box NCCL's rings on the cycles they run at once (verifier/synth's ring_schedule).
 */
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "runtime/compare.hpp"
#include "runtime/timing.hpp"
#include "support/budget.hpp"
#include "support/parallel.hpp"
#include "verifier/constructions/compose/shares.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched::compose {

/// How the processors inside a box exchange: `none` (boxes of one), `rsag` (direct
/// reduce-scatter to the box's owners, then direct allgather from them: 2 hops, (B-1)/B of the
/// piece out of every GPU each way), `ar` (every GPU sends its whole piece to every box-mate:
/// 1 hop, B - 1 pieces; every rail then carries the whole piece), `ring` (reduce-scatter and
/// allgather on a ring along a Hamiltonian cycle of the box's processors: boxes that are not
/// complete, as the DGX-1's cube mesh in NDv2, where the direct exchange would relay through a
/// processor; B - 1 hops each way, (B-1)/B of the piece over one link), `halving` (recursive
/// halving, then doubling, in boxes of a power of two whose members m and m ^ 2^k are joined, as
/// the cube mesh: log B hops each way over a different link each, so under first-come
/// first-served links the pieces pipeline, where a ring's first hop of every piece, ready at
/// once, would go before any piece's second).
enum class InBox : std::uint8_t { none, rsag, ar, ring, halving };
/// How the boxes exchange along a rail: `none` (one box), `direct_ar` (1 hop, K - 1 pieces per
/// GPU), `direct_rsag` (2 hops, 2(K-1)/K), `ring` (2(K-1) hops, 2(K-1)/K), `halving` (recursive
/// halving then doubling, 2 log K hops, 2(K-1)/K; K a power of two), `doubling` (recursive
/// doubling, log K hops, log K pieces; K a power of two). Reduce-scatter runs the first half of
/// `direct_rsag`, `ring`, `halving`; allgather the second (its recursive doubling is `halving`).
enum class Across : std::uint8_t { none, direct_ar, direct_rsag, ring, halving, doubling };

struct Shape {
    InBox inbox = InBox::none;
    Across across = Across::none;
    bool flat = false;  ///< the machine taken as P boxes of one (or one box of P)
    /// the owners' shares of a piece (shares.hpp): other than even only for allreduce's rsag in boxes
    Shares shares = Shares::even;
    /// shares `leaf` (leaf.hpp): the slots of kind all per up rail, for one around the leaves and one through a down rail
    std::uint32_t leaf_all = 0;
    /// allreduce's in-box reduce-scatter as a chain per chunk from the GPUs that own no slot through the other owners
    /// to the chunk's (chain.hpp): each send but the first waits for the one before it, so the sends of the later
    /// pieces become ready as the first GPUs' data comes in, not all at once
    bool chained = false;
};
/// "hierarchical rsag+ring", "flat doubling"; reduce_scatter and allgather name their half
/// ("hierarchical rs+halving", "hierarchical ag+doubling"); shares other than even are named
/// ("hierarchical rsag+direct, shares by capacity"; "hierarchical rsag+direct, a box with a NIC down a leaf in 2 of 7
/// slots").
std::string shape_name(const Shape&, CollectiveKind = CollectiveKind::allreduce);

/// Every shape of even shares, the one list of them (docs/architecture.md, "The constructions' registry"): each way
/// in a box (none first) with each way across the rails (none first). time_candidates tries those that apply to the
/// machine (and the shares by capacity of rsag), `collsched compose --pieces` builds them all.
std::vector<Shape> every_shape();

/// A construction's table with what it is.
struct Candidate {
    std::string name;    ///< e.g. "hierarchical rsag+ring, 32 pieces"
    std::string how;     ///< how it was built (the shape, the boxes, why this k)
    std::uint32_t pieces = 1;
    SendTable table;     ///< verified by the direct checker under the instance's model
    double predicted_s = 0;  ///< asynchronous time at the size asked for
    std::optional<TimingPlan> plan = std::nullopt;  ///< the table's timing plan, when the shapes built it
    /// its asynchronous time at every size asked for (TimeOptions{size}); NaN at a size before the first that
    /// asked for the table (the caller predicts those); empty when not predicted
    std::vector<double> seconds = {};
    /// on an executor: per size the protocol of `seconds` (the first of the executor's fastest; none at NaN)
    std::vector<Protocol> protocols = {};
};

/// The shapes beyond every_shape() that time_candidates tries on `boxes` of a machine with a slow or failed part
/// (rail_capacity below 1 somewhere): the in-box direct exchange with the shares by capacity and on full-speed rails
/// (each also chained where a rail owns nothing) and, with a NIC down, the leaf shares; none on other machines.
std::vector<Shape> fault_shapes(const Topology&, const std::vector<std::vector<Node>>& boxes);

/// The boxes of a machine: box b's processors in increasing order (GPU j of box b is boxes[b][j]).
struct Boxes {
    std::vector<std::vector<Node>> boxes;
    std::string why;  ///< empty when found; else why the machine is not K boxes of B
};
/// A Hamiltonian cycle of a box's processors over channels between processors (both ways), the
/// first processor first; empty when there is none (searched depth-first, boxes of up to 16).
std::vector<Node> box_cycle(const Topology&, const std::vector<Node>& box);
/// Every two processors of the box joined by a channel each way.
bool box_complete(const Topology&, const std::vector<Node>& box);

/// The boxes: processors joined by channels of at least a quarter of the fastest bandwidth at a
/// processor (NVLink against a NIC, as the machine view draws boxes), or by such channels to one
/// router (a box's NVSwitch as a router); K >= 1 boxes of equal size B, else `why`.
Boxes find_boxes(const Topology&);

/// The table of one shape with k pieces on `boxes` for the instance's collective (allreduce,
/// reduce_scatter or allgather; the instance's chunk count is replaced by the shape's), or
/// nullopt with `why`. Not verified.
std::optional<SendTable> build_shape(const SynthInstance&, const std::vector<std::vector<Node>>& boxes, const Shape&, std::uint32_t pieces,
                                     std::string* why, Deadline deadline = {});

/// The number of pieces time_candidates tries after `k` pieces whose table has `transfers`: `factor`
/// times as many (four; two on an executor other than ideal), up to 64, while the table stays within the budget of 500,000 transfers; where
/// `factor` times would pass the budget, the most pieces within it (tables grow with the pieces: rail
/// 16 x 8 allreduce through routers has 260,096 transfers at 4 pieces, 1,040,384 at 16, 455,168
/// at 7); 0 when there is none.
std::uint32_t next_pieces(std::uint32_t k, std::size_t transfers, std::uint32_t factor = 4);

/// Every shape that applies to the instance (allreduce, reduce_scatter, allgather), each with
/// its fastest k at `size_bytes`, verified by the direct checker, fastest first. Empty for other
/// collectives and models the constructions do not cover (they say nothing then). Past
/// `deadline` no more pieces, shapes or rings are tried (the shapes built so far, at least one,
/// are verified and returned): the caller's --timeout. Memory: at most 500,000 transfers per
/// table (about 90 MB at 128 GPUs).
std::vector<Candidate> time_candidates(const SynthInstance&, double size_bytes,
                                       std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());
/// The same for several sizes at once: each shape's table at each number of pieces is built once
/// and predicted at every size; the result is every (shape, pieces) that some size chose, once
/// (predicted_s: at the first size that chose it), fastest first. `verify` false: the shapes'
/// tables are not checked here (the caller checks them: the time objective checks those that
/// can win, verifier/time/candidates.hpp). `jobs` threads build and time the shapes with one
/// piece (each on its own) and the predictions of each larger table at the sizes; the answer does
/// not depend on them. With `cores` (shared with other work running at once, support/parallel.hpp)
/// every thread but the calling one runs only on a core it borrowed there. Every time (the
/// pieces each size chooses, `predicted_s`, `seconds`) is on `basis`: its link speeds, and on an
/// executor other than ideal the fastest of its protocols (docs/time.md, "Optimizing on an
/// executor": the per-message, synchronization and launch costs choose the pieces).
std::vector<Candidate> time_candidates(const SynthInstance&, const std::vector<double>& sizes,
                                       std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
                                       bool verify = true, unsigned jobs = 1, Cores* cores = nullptr, const TimeBasis& basis = TimeBasis{});

}  // namespace collsched::compose
