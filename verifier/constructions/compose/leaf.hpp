/** \file
 * Allreduce with a NIC down (`collsched machine --nic-down`; docs/time.md, "Shares by capacity"): the
 * shares by capacity give the rail of the NIC down nothing in every box, so each box sends its share
 * through its other B - 1 NICs, and the box with the NIC down paces every rail. Here that box (a *leaf*)
 * takes part in only some of the rails' reductions; the other boxes carry the rest, using the down
 * rail's NICs among themselves. A slot has K sub-chunks and is of one of three kinds, on a rail j whose
 * NICs are all up (`a` : 1 : 1):
 *
 *  - **all**: the hierarchical rsag+direct of every box along rail j (sub-chunk r held by box r);
 *  - **around**: the same along rail j, but the leaves hold no sub-chunk (a leaf's goes to another box):
 *    a leaf sends its box's sum and receives the result, (K-1)/K less of its NIC each way;
 *  - **through**: the slot is reduced along a down rail d among the boxes that are not leaves; a leaf
 *    reduces it in its box to GPU j, which sends sub-chunk r to GPU j of the box holding r, which adds
 *    it in before its own box's reduce-scatter to GPU d; the sums come back the same way after the
 *    box's allgather.
 *
 * Per byte of a slot and direction, with K boxes of which one is a leaf: all puts 2(K-1)/K on every NIC of
 * rail j; around 1 on the leaf's NIC j, 1 + 2/(K-1) on the others'; through 1 on the leaf's NIC j, 1/(K-1)
 * on the others' NIC j and 2 (K-2)/(K-1) on their NIC d. Over a + 2 rounds (a piece: every up rail has `a`
 * slots of all and one of each other kind) the NICs j of every box carry 1.5 a + 2 at K = 4, the others' NIC
 * d 7 x 4/3 with 7 up rails: a = 5 balances them; the time model prefers a = 6 (the fastest of 5, 6, 7).
 * On h100rail 4 x 8 with NIC 0 down every NIC carries 0.196 M each way (a = 6) against 0.214 M with the
 * shares by capacity; box 0's GPUs 1 to 7 carry 1.857 M over NVLink each way (4.43 ms at 1 GiB, above the
 * bound's 4.17 ms). **Handed**: in the later half of the pieces a leaf's GPU without a NIC (else owning
 * nothing) takes the in-box reduce-scatter of the first up rail's slot, hands the sum to GPU `rail`, and
 * sends the result it gets back to the others: GPU 1's NVLink falls to 3.6 ms and the others' links run at
 * 0.99 of their speed, 4.48 ms against 4.62 (handed in every piece, or a rail's slot in turn: 4.78 to 5.06
 * ms): bench/results/faults.md.
 *
 * **Reduce-scatter with a NIC that sends but receives nothing** (`collsched machine --one-way`): in the
 * shapes by capacity box L, whose NIC on rail d only sends, takes in 3/4 of the data on B - 1 NICs while it sends
 * 3/4 on B (h100rail 4 x 8: 3/28 of the buffer per NIC, 2.38 ms at 1 GiB against the bound's 2.09). Here, as in
 * the even rs+direct, processor (r, j)'s piece is reduced in every box to GPU j and along rail j; but GPU d of box L
 * (its NIC takes nothing in) has its piece in B - 1 parts, each reduced on a rail c that box L receives on, in turn,
 * among the other boxes into a proxy box x (in turn), which sends box L the sum once, and box L's GPU c hands it to
 * GPU d with its own partial added. Box L takes in (3 (B-1) + 1)/(B-1) of a GPU's piece per NIC (0.098 of the buffer
 * against 0.107), its NICs send 3 B/B, the others' NICs on the rails that box L receives on send 3 + 1/(B-1) (what
 * a box sends on rail d cannot go to box L, so its other B - 1 NICs carry 22 of its 24 sums on 4 x 8): 1.048 times
 * box L's way out. Two details keep the rails busy:
 *  - in a box other than L, GPU d takes nothing for box L's GPU d in that box's turn for box L; its own box's
 *    partials come in then instead of after every piece, so its NIC's sends for the other boxes keep their turn
 *    (else they came a turn early and met box L's on rail d: 2.47 ms);
 *  - the last pieces (one in 16) go direct to box L on the rail c: a chain's second hop would end after them
 *    (16 MiB: 37.8 us against 39.7).
 * At 16 MiB and 1 GiB 37.8 us and 2.18 ms against 35.2 us and 2.09 ms (the crossings between the boxes: 3 M into
 * 31 NICs, time_bound.cpp).
 *
 * **Allgather with a NIC that receives but sends nothing** is the mirror: GPU d of box L hands each part to GPU c of
 * its box (a rail that sends, in turn), which sends it to a proxy box x (in turn) that passes it on along rail c to
 * the other boxes. Box L's other GPUs send their parts on its sending rails in turn too (GPU j's own rail one part in
 * B - 1): their parts, ready at 0, otherwise all went before any chained part, ready after its hop (first come first
 * served), so the proxies passed every chain on at the end (16 MiB: 38.9 us; in turn 37.2 us, 2.16 ms at 1 GiB, against
 * 35.2 us and 2.09 ms). The last pieces go from GPU c to every box at once, as above.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "verifier/constructions/compose/plan.hpp"

namespace collsched::compose {

/// The slots of the leaf shape (see the file comment), or `why` it does not apply: piece q has one slot per up
/// rail, slot u on rail up[u] of kind (q + u) mod (all + 2): 0 through (the down rails in turn), 1 around, else all;
/// so that a piece has as many chunks as the shares by capacity's (U K) and as many pieces fit in the transfer
/// budget, while every all + 2 pieces carry each kind in proportion.
struct LeafSlots {
    enum class Kind : std::uint8_t { all, around, through };
    struct Slot {
        Kind kind = Kind::all;
        std::uint32_t rail = 0;  ///< the up rail j (through: the rail the leaves enter by)
        std::uint32_t down = 0;  ///< through: the down rail that reduces it
    };
    std::vector<std::uint32_t> up, down;  ///< the rails whose NICs are all up, and the others
    std::vector<char> leaf;               ///< per box: a NIC of it is down
    std::vector<std::uint32_t> cut;       ///< per leaf: its first GPU without a NIC (B for the other boxes)
    std::uint32_t all = 0;
    std::string why;
    Slot at(std::uint32_t q, std::uint32_t u) const;
};

/// The leaf shape's slots on `boxes` with `a` slots of kind all per rail whose NICs are all up, for each one of
/// kind around and one of kind through: applies where the boxes with a NIC down (the leaves) are fewer than K - 1.
LeafSlots leaf_slots(const Topology&, const std::vector<std::vector<Node>>& boxes, std::uint32_t a);

/// Allreduce of the leaf shape in `pieces` pieces into `plan` (chunk (q U + u) K + r: piece q, slot u, sub-chunk r).
void leaf_allreduce_plan(Plan& plan, const std::vector<std::vector<Node>>& boxes, const LeafSlots& slots, std::uint32_t pieces);

/// The rails each box's NIC carries the collective's way on for the leaf reduce-scatter (into the box) or allgather (out
/// of it; its mirror: a GPU whose NIC sends nothing hands its parts to the rails that send, in turn, and a proxy box
/// passes each on to the others), or `why` it does not apply: 3 boxes or more, every NIC carrying the other way, some
/// NIC not this way, and each rail that carries it in a box carrying it in another box too.
struct OneWayLeaf {
    std::vector<std::vector<char>> way;  ///< per box, per rail: its NIC there carries the way
    std::vector<std::vector<std::uint32_t>> up;  ///< per box, the rails its NIC carries the way on
    /// the parts of a processor's piece: the fewest rails a box with a NIC that does not carry the way has, so that
    /// every piece spreads such a GPU's parts over all of them
    std::uint32_t parts = 1;
    std::string why;
};
OneWayLeaf one_way_leaf(const Topology&, const std::vector<std::vector<Node>>& boxes, CollectiveKind = CollectiveKind::reduce_scatter);

/// Reduce-scatter of the leaf shape in `pieces` pieces of `slots.parts` parts into `plan` (chunk (p pieces + q) parts
/// + s: processor p's part s of piece q).
void leaf_reduce_scatter_plan(Plan& plan, const std::vector<std::vector<Node>>& boxes, const OneWayLeaf& slots, std::uint32_t pieces);
/// Allgather of the leaf shape (its mirror), pieces q parts s as chunk q parts + s of every datum.
void leaf_allgather_plan(Plan& plan, const std::vector<std::vector<Node>>& boxes, const OneWayLeaf& slots, std::uint32_t pieces);

}  // namespace collsched::compose
