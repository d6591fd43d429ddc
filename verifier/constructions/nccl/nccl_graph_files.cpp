// NCCL's own rings and trees as graph files (verifier/constructions/nccl/nccl_graph_check.hpp
// nccl_algorithm_graphs; docs/exports.md, "NCCL's own rings and trees as graph files"). NVIDIA/nccl
// 5067397c: src/init.cc:1172-1186 (graph 0 the rings, graph 1 the trees on as many channels),
// src/graph/search.cc:1254-1257 (NCCL_TOPO_PATTERN_TREE: the tree leaves by the first GPU's NIC).
// And NCCL's rings weighted by the speed of their NICs (docs/exports.md, "Rings weighted by speed").
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

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

/// Per net device of NCCL's rings: the first ring entering (and, NCCL_CROSS_NIC=0, leaving) every box by
/// it, and the least bandwidth a channel or link group of its hops between boxes has.
struct NetRing {
    const Ring* ring = nullptr;
    double capacity = std::numeric_limits<double>::infinity();
};

/// Channels per net: n_d in proportion to capacity c_d, N = sum n_d at most 32 (NCCL doubles them,
/// connect.cc:460, up to MAXCHANNELS 64), the N and n_d of least max_d n_d / (N c_d) (the time the
/// busiest NIC takes for its share), the fewest channels among equals; each N filled greedily, one
/// channel at a time to the net it raises least (a NIC at a tenth gets none: 1 of N at a tenth takes
/// longer than the others' shares).
std::vector<std::uint32_t> channels_by_capacity(const std::vector<double>& cap) {
    const std::size_t D = cap.size();
    std::vector<std::uint32_t> best;
    double best_time = std::numeric_limits<double>::infinity();
    std::vector<std::uint32_t> n(D, 0);
    for (std::uint32_t N = 1; N <= max_graph_channels; ++N) {
        std::size_t d = 0;
        for (std::size_t e = 1; e < D; ++e)
            if ((n[e] + 1) / cap[e] < (n[d] + 1) / cap[d]) d = e;
        ++n[d];
        double t = 0;
        for (std::size_t e = 0; e < D; ++e) t = std::max(t, n[e] / (N * cap[e]));
        if (t < best_time * (1 - 1e-9)) best_time = t, best = n;
    }
    return best;
}

}  // namespace

std::optional<WeightedRings> nccl_weighted_rings(std::shared_ptr<const Topology> topo, const Model& model, CollectiveKind kind,
                                                 Deadline deadline, std::string& why) {
    const Topology& t = *topo;
    const System s = nccl_system(t);
    const Layout l = nccl_layout(t);
    const std::vector<Ring> rings = nccl_rings(t, l, s, nccl_ring_graph(s).channels, deadline);
    const NcclBoxes b = nccl_graph_boxes(t);
    if (b.count < 2) return why = "one box: its rings use no NIC", std::nullopt;
    std::map<int, NetRing> nets;
    for (const Ring& r : rings) {
        const int d = b.nic[idx(r.order.front())];
        if (d < 0) return why = fmt::format("NCCL's rings enter a box at GPU {}, which has no NIC", b.local[idx(r.order.front())]), std::nullopt;
        NetRing& n = nets[d];
        if (!n.ring) n.ring = &r;
        for (std::size_t i = 0; i < r.order.size(); ++i) {
            if (l.box_of[idx(r.order[i])] == l.box_of[idx(r.order[(i + 1) % r.order.size()])]) continue;
            for (ChannelId c : r.hops[i]) {
                n.capacity = std::min(n.capacity, t.speed(c).bandwidth);
                for (std::uint32_t g : t.groups_of(c)) n.capacity = std::min(n.capacity, t.group_bandwidth(g));
            }
        }
    }
    std::vector<double> cap;
    for (const auto& [d, n] : nets) cap.push_back(n.capacity);
    const std::vector<std::uint32_t> per = channels_by_capacity(cap);
    if (std::all_of(per.begin(), per.end(), [&](std::uint32_t x) { return x == per.front(); }))
        return why = fmt::format("the {} NICs NCCL's rings use are equally fast: NCCL's own rings", nets.size()), std::nullopt;
    std::vector<TableRing> weighted;
    std::string spread;
    std::size_t i = 0;
    for (const auto& [d, n] : nets) {
        if (per[i] == 0) {
            ++i;
            spread += fmt::format("{}{:x}:0", spread.empty() ? "" : " ", d);
            continue;
        }
        TableRing r;
        r.relay = s.nic_per_gpu, r.channels = per[i++];
        for (Node x : n.ring->order) r.order.push_back(idx(x));
        weighted.push_back(std::move(r));
        spread += fmt::format("{}{:x}:{}", spread.empty() ? "" : " ", d, weighted.back().channels);
    }
    WeightedRings out;
    out.xml = nccl_graph_xml(nccl_graph_of_rings(t, weighted));
    const GraphCheck check = check_nccl_graph(read_nccl_graph(out.xml, "weighted rings"), "weighted rings", t);
    if (!check.holds()) return why = "its graph file does not hold on the machine: " + check.findings.front().what, std::nullopt;
    out.channels = static_cast<std::uint32_t>(check.rings.size());
    out.transfers = nccl_graph_transfers(check, kind, t.processors());
    out.source = fmt::format("NCCL's rings weighted by NIC speed: {} channels, per net device (hex) its channels {} (an NCCL graph file; "
                             "verifier/constructions/nccl/nccl_graph_files.cpp)",
                             out.channels, spread);
    if (out.transfers > max_weighted_transfers)
        return why = fmt::format("its table would have about {} transfers, above {}", out.transfers, max_weighted_transfers), std::nullopt;
    out.table = nccl_graph_table(std::move(topo), model, kind, check);
    return out;
}

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
