/** \file
 * Shares by capacity (docs/time.md, "Constructions for time"): in the hierarchical shapes GPU
 * j of every box owns a share of each piece, reduced or gathered along rail j. On a machine whose
 * parts run at their catalog speed the shares are equal (one slot of the piece per GPU: the even
 * shapes, unchanged); where a NIC or a GPU's links in its box are slow or down, each rail's share
 * follows what it can carry: the slowest of its NICs across the boxes and of its GPUs' links in
 * their boxes, relative to the fastest. The table has equal-size chunks, so a share is a number of
 * slots of the piece, given to the owners by largest remainder.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/table/send_table.hpp"

namespace collsched::compose {

/// How the owners' shares of a piece are drawn in the hierarchical shapes: `even` (one slot per
/// GPU), `capacity` (per rail, its capacity relative to the fastest rail's), `full` (the rails of
/// parts below the fastest speed get nothing: a GPU whose own links in the box are slow then
/// receives only the result, the least any GPU can), `leaf` (a box with a NIC down takes no part of
/// some slots along the rails, and the rails of the NICs down carry slots among the other boxes:
/// verifier/constructions/compose/leaf.hpp).
enum class Shares : std::uint8_t { even, capacity, full, leaf };

/// Per rail (GPU j of every box), the least over the boxes of what GPU j can carry relative to
/// the fastest: min(its channels out of the box / the fastest such, its channels in the box / the
/// fastest such), each the sum of the channels' speeds capped by the link groups they are in, the
/// slower way of the two (out of GPU j and into it: a NIC that only sends carries nothing in); 0
/// for a rail with a NIC down or one way. All 1 on a machine whose parts have equal speeds.
std::vector<double> rail_capacity(const Topology&, const std::vector<std::vector<Node>>& boxes);

/// Per processor, what it can send out of its box and receive from outside it (rail_capacity's carry, each way on
/// its own: a NIC that only sends has `receive` 0).
struct Ways {
    std::vector<double> send, receive;
};
Ways nic_ways(const Topology&, const std::vector<std::vector<Node>>& boxes);

/// Per processor, whether nothing leaves its box from it or nothing enters it from outside (`collsched machine --nic-down`,
/// a NIC `--one-way`): its box is a leaf in the
/// shares `leaf` (leaf.hpp).
std::vector<char> cut_off(const Topology&, const std::vector<std::vector<Node>>& boxes);

/// Per processor, D when its links in its box carry less than the fastest processor's there and it has links out of
/// it: in the chained shapes (allreduce.hpp, Shape::chained) its NIC takes one chunk in D of its contribution and of
/// the result, D = round((in + out) / out) over what it carries in and out of the box (GPU 0's NVLink at half on 2 x
/// DGX A100, 150 GB/s against its NIC's 25: 7); 0 for the others.
std::vector<std::uint32_t> nic_share(const Topology&, const std::vector<std::vector<Node>>& boxes);
/// Per processor, whether its links in its box carry less than the fastest processor's there (`--slow-gpu`).
std::vector<char> slow_in_box(const Topology&, const std::vector<std::vector<Node>>& boxes);

/// The owner (rail) of every slot of a piece: `B` slots, slot j to rail j, when the shares are even
/// or every rail carries as much; else per `shares`, weights w_j (capacity: rail_capacity; full: 1
/// where it is 1, else 0) over the number of slots from B to 4B whose largest-remainder rounding
/// is nearest to the weights (the most a rail carries above its weight, least), ties to fewer
/// slots. Empty when no rail can carry anything.
std::vector<std::uint32_t> slot_owners(const std::vector<double>& capacity, Shares shares);

}  // namespace collsched::compose
