/** \file
 * Lower bounds on the time of allreduce when the network may reduce (issue 44; docs/time.md,
 * "Bounds with reduction in the network"). Each bound names itself, says whether it assumes that
 * reduction in the network is possible or that it is not, and is valid in collsched's time model
 * (docs/time.md: every channel and link group moves at most its bandwidth; a partial or value of
 * a chunk has the chunk's size) for a buffer of M bytes per rank:
 *
 * - per GPU, any network: every processor p must send, for every byte of the buffer, something
 *   that carries its contribution (else no other processor can end with the sum), and receive,
 *   for every byte, something that carries the others' contributions: M out and M in, so
 *   T >= M / B_out(p) and T >= M / B_in(p). It assumes nothing, so it holds with in-network
 *   reduction; without it the Patarasuk-Yuan form below is larger by 2 (P - 1) / P.
 * - per GPU without in-network reduction: T >= 2 (P - 1) M / sum_p B_in(p) (Patarasuk and Yuan,
 *   JPDC 2009: 2 (P - 1) transfers of every byte in all, so what all processors receive together
 *   divides it; 2 (P - 1) / P x M / B_gpu on a uniform machine); valid only when no router combines
 *   partials.
 * - boxes contracted (a box is the processors joined by its fast channels, machine_view.hpp):
 *   every box must send M and receive M across its cut, T >= M / B_box (valid with SHARP
 *   between the boxes: it assumes nothing); without reduction between the boxes (no router
 *   outside the boxes combines) the contracted gossip bound 2 (N - 1) M / sum_b B_in(b) holds
 *   (2 (N - 1) / N x M / B_box for equal boxes).
 * B_out(p) is an upper bound on what p can send per second: its channels' bandwidths, with the
 * channels of a link group over them counted at the group's bandwidth instead (disjoint groups
 * chosen greedily, each valid choice giving a valid bound).
 */
#pragma once

#include <string>
#include <vector>

#include "compiler/topology/topology.hpp"

namespace collsched::time {

struct InNetworkBound {
    std::string name;         ///< "per-GPU, in-network", ...
    double seconds = 0;       ///< the bound at the size asked
    bool assumes_in_network;  ///< true: valid when the network reduces (it assumes nothing); false: valid only when it does not
    bool valid = true;        ///< whether it holds on this machine (a bound without in-network reduction on a machine whose routers reduce does not)
    std::string detail;       ///< the numbers: "M / B_out(0) = 1 GiB / 450 GB/s"
};

/// The bounds above for allreduce of `bytes` per rank on `topo`, those valid first; `reduces`
/// says whether routers may combine partials (the table's model: combine=routers and the
/// topology's switches), deciding which bounds are valid. The largest valid one is the bound.
std::vector<InNetworkBound> allreduce_innetwork_bounds(const Topology& topo, double bytes, bool reduces);

/// The largest valid bound of allreduce_innetwork_bounds (0 when none applies).
double allreduce_innetwork_bound(const Topology& topo, double bytes, bool reduces);

/// Upper bounds on what processor p can send (out) or receive (in) per second, as above.
double processor_out_bandwidth(const Topology& topo, Node p);
double processor_in_bandwidth(const Topology& topo, Node p);

}  // namespace collsched::time
