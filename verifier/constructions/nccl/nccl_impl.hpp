/** \file
 * The pieces of verifier/constructions/nccl/ that its files share (not a public API): the boxes of a
 * machine and the builders of NCCL's tables.
 */
#pragma once

#include <cstdint>
#include <vector>

#include "verifier/constructions/nccl/nccl.hpp"

namespace collsched::nccl {

/// The boxes: per box its processors (increasing), per node its box (UINT32_MAX for a router in
/// no box, an InfiniBand switch), per processor whether it has channels out of its box (its NIC).
struct Layout {
    std::vector<std::vector<Node>> boxes;
    std::vector<std::uint32_t> box_of;
    std::vector<char> nic_gpu;
};

/// The per-channel speeds NCCL's search tries, fastest first (search.cc:1051-1059): one box
/// (`inter` false) or several, Volta and Ampere or Hopper.
std::vector<double> search_speeds(Arch, bool inter);

/// Throws InputError for boxes of different sizes or fewer than 2 processors.
Layout nccl_layout(const Topology&);

/// The route of one NCCL connection from u to v: inside a box the topology's route; between boxes
/// through `via` (the GPU of the channel's NIC in u's box, NCCL's PXN) when given, else the route.
std::vector<ChannelId> connection(const Topology&, Node u, Node v, std::optional<Node> via);

/// Per channel, its ring (nccl.hpp's Ring); LimitReached once `deadline` passes.
std::vector<Ring> nccl_rings(const Topology&, const Layout&, const System&, std::uint32_t channels, Deadline deadline = {});

/// A box's parent in NCCL's double binary tree over n boxes (src/graph/trees.cc ncclGetDtree; tree
/// 0 or 1), -1 for the root, and whether the box is its parent's first child (0) or second (1).
struct DtreeUp {
    int parent = -1, child_type = 0;
};
DtreeUp dtree_up(int n, int tree, int node);

/// The tables (each holds in the direct checker; steps with more transfers than capacities get
/// rounds). Each polls `deadline` as it writes, resolves and sorts (LimitReached once it passes:
/// a table on 128 GPUs took 12 s after optimize --size's --timeout 5).
SendTable ring_table(std::shared_ptr<const Topology>, const Model&, CollectiveKind, const std::vector<Ring>&, std::uint32_t pieces,
                     Deadline deadline = {});
SendTable tree_table(std::shared_ptr<const Topology>, const Model&, const Layout&, const std::vector<Ring>&, std::uint32_t pieces,
                     Deadline deadline = {});
/// NCCL's trees of one channel (trees 0 and 1): per processor its parent (-1 for the root) and the routes up to it
/// and down from it.
struct TreeLinks {
    std::vector<std::int64_t> parent[2];
    std::vector<std::vector<ChannelId>> up[2], down[2];
};
/// NCCL's tree allreduce on the given trees, `pieces` chunks per tree (tree_table on its rings' chains and the
/// topology's routes; nccl_graph_tree_table on a graph file's).
SendTable tree_table_of(std::shared_ptr<const Topology>, const Model&, const std::vector<TreeLinks>&, std::uint32_t pieces,
                        Deadline deadline = {});
SendTable pat_table(std::shared_ptr<const Topology>, const Model&, CollectiveKind, Deadline deadline = {});
SendTable p2p_table(std::shared_ptr<const Topology>, const Model&, const Layout&, Deadline deadline = {});

/// LimitReached("time limit (NCCL's <what>)") once `deadline` has passed.
void poll_deadline(Deadline deadline, std::string_view what);

/// Sets each step's rounds to the least that fits its transfers in every channel, link group and
/// (single or half ports) port.
void fit_rounds(SendTable&);

}  // namespace collsched::nccl
