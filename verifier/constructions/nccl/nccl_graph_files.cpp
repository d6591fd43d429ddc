// NCCL's own rings and trees as graph files (verifier/constructions/nccl/nccl_graph_check.hpp
// nccl_algorithm_graphs; docs/exports.md, "NCCL's own rings and trees as graph files"). NVIDIA/nccl
// 5067397c: src/init.cc:1172-1186 (graph 0 the rings, graph 1 the trees on as many channels),
// src/graph/search.cc:1254-1257 (NCCL_TOPO_PATTERN_TREE: the tree leaves by the first GPU's NIC).
#include <fmt/format.h>

#include "support/error.hpp"
#include "verifier/constructions/nccl/nccl_graph_check.hpp"

namespace collsched::nccl {

namespace {

/// The channels of nccl_rings as a graph file's: per ring, box 0's GPUs in ring order (their
/// indices in the box, as every box runs them) and the NIC of the first at both ends.
NcclGraph own_graph(const Topology& t) {
    const System s = nccl_system(t);
    const Layout l = nccl_layout(t);
    const Graph g = nccl_ring_graph(s);
    const std::vector<Ring> rings = nccl_rings(t, l, s, g.channels);
    const NcclBoxes b = nccl_graph_boxes(t);
    if (b.count != s.nodes || b.per_box != s.gpus_per_node)
        throw InputError(fmt::format("{}: NCCL's model reads {} box{} of {} GPUs and the graph file {} of {}: no graph file for NCCL's "
                                     "rings",
                                     t.spec(), s.nodes, s.nodes == 1 ? "" : "es", s.gpus_per_node, b.count, b.per_box));
    NcclGraph out;
    out.boxes = b.count, out.gpus_per_box = b.per_box;
    out.speed_intra = g.bw_intra, out.speed_inter = g.bw_inter;
    out.same_channels = g.same_channels;
    for (const Ring& r : rings) {
        NcclChannel c;
        const std::uint32_t first = idx(r.order.front());
        for (std::uint32_t i = 0; i < b.per_box; ++i) {
            const std::uint32_t p = idx(r.order[i]);
            if (b.box[p] != b.box[first])
                throw InputError(fmt::format("{}: NCCL's ring {} leaves its first box after {} GPUs: no graph file channel",
                                             t.spec(), out.channels.size(), i));
            c.gpus.push_back(b.local[p]);
        }
        if (b.count > 1) {
            if (b.nic[first] < 0)
                throw InputError(fmt::format("{}: NCCL's ring {} enters its box at GPU {}, which has no NIC", t.spec(), out.channels.size(),
                                             b.local[first]));
            c.net_in = c.net_out = b.nic[first];  // NCCL_CROSS_NIC=0: out by the NIC it came in by (PXN)
        }
        out.channels.push_back(std::move(c));
    }
    return out;
}

}  // namespace

std::vector<NcclGraphEntry> nccl_algorithm_graphs(const Topology& t, std::string_view algorithm) {
    if (algorithm != "ring" && algorithm != "tree" && algorithm != "*")
        throw InputError(fmt::format("nccl:{}: NCCL's graph files hold its rings (graph 0) and trees (graph 1): nccl:ring, nccl:tree, or "
                                     "nccl:* for both in one file (PAT and p2p read no graph)",
                                     algorithm));
    const NcclGraph g = own_graph(t);
    std::vector<NcclGraphEntry> out;
    if (algorithm != "tree") out.push_back({0, nccl_pattern_ring, g});
    if (algorithm != "ring") out.push_back({1, nccl_pattern_tree, g});
    return out;
}

}  // namespace collsched::nccl
