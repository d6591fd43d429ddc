// NCCL's own rings and trees as graph files (verifier/constructions/nccl/nccl_graph_check.hpp
// nccl_algorithm_graphs; docs/exports.md, "NCCL's own rings and trees as graph files"). NVIDIA/nccl
// 5067397c: src/init.cc:1172-1186 (graph 0 the rings, graph 1 the trees on as many channels),
// src/graph/search.cc:1254-1257 (NCCL_TOPO_PATTERN_TREE: the tree leaves by the first GPU's NIC).
// And NCCL's rings weighted by the speed of their NICs (docs/exports.md, "Rings weighted by speed").
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

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

/// Per GPU e of a box with a NIC beside it in every box (a rail), one ring entering every box at GPU e and
/// leaving by its NIC (NCCL_CROSS_NIC=0, the last GPU reaching it over NVLink): NCCL's ring entering there if
/// there is one, else NCCL's first ring's order of a box's GPUs rotated to start there; one channel each. Each
/// node names the NIC by its own net id (a node numbers its nets in PCI order: with a NIC down, box 0's net d is
/// rail d+1), so the boxes' files differ where their NICs do.
std::vector<TableRing> net_rings(const NcclBoxes& b, const std::vector<Ring>& rings) {
    std::vector<TableRing> out;
    std::vector<std::uint32_t> base;
    for (std::uint32_t i = 0; i < b.per_box; ++i) base.push_back(b.local[idx(rings.front().order[i])]);
    for (Node nic : b.nics[0]) {
        const std::uint32_t e = b.local[idx(nic)];
        bool rail = true;
        for (std::uint32_t k = 1; k < b.count; ++k) rail = rail && b.nic[idx(b.members[k][e])] >= 0;
        if (!rail) continue;
        std::vector<std::uint32_t> order = base;
        std::rotate(order.begin(), std::find(order.begin(), order.end(), e), order.end());
        for (const Ring& r : rings)
            if (b.local[idx(r.order.front())] == e) {
                for (std::uint32_t i = 0; i < b.per_box; ++i) order[i] = b.local[idx(r.order[i])];
                break;
            }
        TableRing r;
        r.relay = true;
        for (std::uint32_t k = 0; k < b.count; ++k)
            for (std::uint32_t g : order) r.order.push_back(idx(b.members[k][g]));
        out.push_back(std::move(r));
    }
    return out;
}

/// Per GPU x_0 of a box, one ring that enters box 0 at x_0 and leaves every box by its last GPU's own NIC (no PXN
/// relay; crossnic="1" in the file, which NCCL_CROSS_NIC=0 refuses: search.cc:936): box k runs NCCL's first ring's
/// order of a box's GPUs from x_k round to the GPU before x_k, x_{k+1}, which box k + 1 enters at (the same rail);
/// the last box runs from x_{B-1} round that order to x_0 (skipping it on the way) and leaves by x_0 for box 0. A
/// ring whose GPU of entry or exit has no NIC in its box, or one box it enters and leaves by one GPU, is not offered.
std::vector<TableRing> crossnic_rings(const NcclBoxes& b, const std::vector<Ring>& rings) {
    const std::uint32_t n = b.per_box, B = b.count;
    std::vector<std::uint32_t> base, pos(n);
    for (std::uint32_t i = 0; i < n; ++i) base.push_back(b.local[idx(rings.front().order[i])]);
    for (std::uint32_t i = 0; i < n; ++i) pos[base[i]] = i;
    std::vector<TableRing> out;
    for (std::uint32_t x0 = 0; x0 < n && n >= 2; ++x0) {
        std::vector<std::uint32_t> x{x0};  // per box the local GPU it enters at; x[B] = x[0], where the last leaves
        for (std::uint32_t k = 1; k < B; ++k) x.push_back(base[(pos[x.back()] + n - 1) % n]);
        x.push_back(x0);
        TableRing r;
        bool ok = true;
        for (std::uint32_t k = 0; k < B && ok; ++k) {
            ok = x[k] != x[k + 1] && b.nic[idx(b.members[k][x[k]])] >= 0 && b.nic[idx(b.members[k][x[k + 1]])] >= 0;
            std::vector<std::uint32_t> order;
            for (std::uint32_t i = 0; i < n; ++i) order.push_back(base[(pos[x[k]] + i) % n]);
            if (k + 1 == B) {  // round from x[k], x[0] last
                order.erase(std::find(order.begin(), order.end(), x[0]));
                order.push_back(x[0]);
            }
            for (std::uint32_t g : order) r.order.push_back(idx(b.members[k][g]));
        }
        if (ok) out.push_back(std::move(r));
    }
    return out;
}

/// The chains of NCCL's tree as rings over the boxes (nccl_tree_rings), or nullopt where NCCL's own rings serve: every
/// box numbers its nets alike and every ring enters each box at a GPU with a NIC, or no GPU has a NIC in every box. Else
/// NCCL's ring orders kept on rails (net_rings: one a rail, entering every box at the rail's GPU), channel c on the
/// c-th rail (mod the rails).
std::optional<std::vector<TableRing>> rail_chains(const NcclBoxes& b, const std::vector<Ring>& rings, std::uint32_t channels) {
    if (b.count < 2) return std::nullopt;
    bool nic_first = true;
    for (const Ring& r : rings)
        for (std::uint32_t k = 0; k < b.count; ++k) nic_first = nic_first && b.nic[idx(r.order[k * b.per_box])] >= 0;
    if (nic_first && !nccl_nodes_differ(b)) return std::nullopt;
    const std::vector<TableRing> rails = net_rings(b, rings);
    if (rails.empty()) return std::nullopt;  // no rail in every box: NCCL's own orders (a tree that may not hold, left out)
    std::vector<TableRing> out;
    for (std::uint32_t c = 0; c < channels; ++c) out.push_back(rails[c % rails.size()]);
    return out;
}

/// Per channel of a checked file, the least bandwidth a channel or link group of its hops between boxes has.
std::vector<double> between_box_capacities(const Topology& t, const NcclBoxes& b, const GraphCheck& g) {
    std::vector<double> cap;
    for (const Ring& r : g.rings) {
        double c = std::numeric_limits<double>::infinity();
        for (std::size_t i = 0; i < r.order.size(); ++i) {
            if (b.box[idx(r.order[i])] == b.box[idx(r.order[(i + 1) % r.order.size()])]) continue;
            for (ChannelId x : r.hops[i]) {
                c = std::min(c, t.speed(x).bandwidth);
                for (std::uint32_t grp : t.groups_of(x)) c = std::min(c, t.group_bandwidth(grp));
            }
        }
        cap.push_back(c);
    }
    return cap;
}

/// The rings' graph files (one every node reads, or one per node where the boxes differ) checked as `verify` reads them.
GraphCheck checked(const Topology& t, const std::vector<TableRing>& rings, std::vector<std::string>* xmls = nullptr) {
    const std::vector<NcclGraph> g = nccl_node_graphs_of_rings(t, rings);
    std::vector<std::string> texts;
    if (nccl_graphs_differ(g).empty()) texts.push_back(nccl_graph_xml(g.front()));
    else
        for (const NcclGraph& x : g) texts.push_back(nccl_graph_xml(x));
    std::vector<NcclGraphFile> files;
    std::vector<NcclGraphSource> set;
    for (std::size_t k = 0; k < texts.size(); ++k) files.push_back(read_nccl_graph(texts[k], "weighted rings"));
    for (std::size_t k = 0; k < texts.size(); ++k)
        set.push_back({&files[k], texts.size() == 1 ? "weighted rings" : fmt::format("weighted rings, node {}", k)});
    if (xmls) *xmls = std::move(texts);
    return check_nccl_graphs(set, t);
}

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

bool nccl_nodes_differ(const NcclBoxes& b) {
    for (std::uint32_t k = 1; k < b.count; ++k)
        for (std::uint32_t i = 0; i < b.per_box; ++i)
            if (b.nic[idx(b.members[k][i])] != b.nic[idx(b.members[0][i])]) return true;
    return false;
}

std::vector<Ring> nccl_tree_rings(const Topology& t, Deadline deadline) {
    const System s = nccl_system(t);
    const std::uint32_t channels = nccl_ring_graph(s).channels;
    std::vector<Ring> rings = nccl_rings(t, nccl_layout(t), s, channels, deadline);
    const std::optional<std::vector<TableRing>> rails = rail_chains(nccl_graph_boxes(t), rings, channels);
    if (!rails) return rings;
    rings.clear();
    for (const TableRing& x : *rails) {
        Ring r;
        for (std::uint32_t p : x.order) r.order.push_back(Node{p});
        for (std::size_t i = 0; i < r.order.size(); ++i) r.hops.push_back(connection(t, r.order[i], r.order[(i + 1) % r.order.size()], std::nullopt));
        rings.push_back(std::move(r));
    }
    return rings;
}

std::optional<WeightedRings> nccl_weighted_rings(std::shared_ptr<const Topology> topo, const Model& model, CollectiveKind kind,
                                                 Deadline deadline, std::string& why, std::uint32_t times, bool cross_nic,
                                                 std::uint64_t max_transfers) {
    const Topology& t = *topo;
    const System s = nccl_system(t);
    const std::vector<Ring> rings = nccl_rings(t, nccl_layout(t), s, nccl_ring_graph(s).channels, deadline);
    const NcclBoxes b = nccl_graph_boxes(t);
    if (b.count < 2) return why = "one box: its rings use no NIC", std::nullopt;
    if (!s.nic_per_gpu || b.nics[0].size() < 2 || rings.empty()) return why = "one NIC a box", std::nullopt;
    std::vector<TableRing> uniform;
    // a ring the machine cannot carry (one that enters a box by a NIC that only sends, `collsched machine --one-way`) is
    // left out, as a NIC down leaves its rail out; the others keep their NICs, that one's sending side included
    std::string dropped;
    for (TableRing& r : cross_nic ? crossnic_rings(b, rings) : net_rings(b, rings)) {
        if (const GraphCheck alone = checked(t, {r}); alone.holds()) uniform.push_back(std::move(r));
        else if (dropped.empty()) dropped = alone.findings.front().what;
    }
    if (uniform.size() < 2)
        return why = dropped.empty() ? "fewer than 2 GPUs have a NIC beside them in every box"
                                     : "fewer than 2 rings the machine carries (a ring a NIC does not hold on the machine: " + dropped + ")",
               std::nullopt;
    bool same_nets = true;  // every box numbers its NICs alike: NCCL's rings keep a channel on one rail
    for (std::uint32_t k = 1; k < b.count; ++k)
        for (std::uint32_t i = 0; i < b.per_box; ++i) same_nets = same_nets && b.nic[idx(b.members[k][i])] == b.nic[idx(b.members[0][i])];
    const GraphCheck one = checked(t, uniform);  // one channel a NIC, for the routes the file's rings take
    if (!one.holds()) return why = "a ring a NIC does not hold on the machine: " + one.findings.front().what, std::nullopt;
    std::vector<std::uint32_t> per = channels_by_capacity(between_box_capacities(t, b, one));
    std::uint32_t common = 0;  // the exporter writes a ring's channels over the greatest common divisor: the file it writes back
    for (std::uint32_t x : per) common = std::gcd(common, x);
    for (std::uint32_t& x : per) x /= common;
    if (times == 0)  // as many times as a graph file holds (at least once)
        times = std::max(1u, max_graph_channels / std::max(1u, std::accumulate(per.begin(), per.end(), 0u)));
    for (std::uint32_t& x : per) x *= times;
    if (const std::uint32_t n = std::accumulate(per.begin(), per.end(), 0u); n > max_graph_channels)
        return why = fmt::format("{} channels, above the {} a graph file holds", n, max_graph_channels), std::nullopt;
    const bool own = same_nets && rings.size() == uniform.size() &&
                     std::all_of(rings.begin(), rings.end(), [&](const Ring& r) { return b.nic[idx(r.order.front())] >= 0; });
    if (!cross_nic && own && std::all_of(per.begin(), per.end(), [&](std::uint32_t x) { return x == per.front(); }))
        return why = fmt::format("the {} NICs NCCL's rings use are equally fast: NCCL's own rings", uniform.size()), std::nullopt;
    std::vector<TableRing> weighted;
    std::string spread;
    for (std::size_t d = 0; d < uniform.size(); ++d) {
        spread += fmt::format("{}{:x}:{}", d ? " " : "", b.nic[uniform[d].order.front()], per[d]);
        if (per[d] == 0) continue;
        uniform[d].channels = per[d];
        weighted.push_back(std::move(uniform[d]));
    }
    WeightedRings out;
    const GraphCheck check = checked(t, weighted, &out.xmls);
    out.xml = out.xmls.front();
    if (!check.holds()) return why = "its graph file does not hold on the machine: " + check.findings.front().what, std::nullopt;
    out.channels = static_cast<std::uint32_t>(check.rings.size());
    out.transfers = nccl_graph_transfers(check, kind, t.processors());
    out.source = fmt::format("{} weighted by NIC speed: {} channels, per net device of box 0 (hex) its channels {} ({}; "
                             "verifier/constructions/nccl/nccl_graph_files.cpp)",
                             cross_nic ? "rings leaving each box by its last GPU's own NIC (crossnic, no PXN relay)" : "NCCL's rings",
                             out.channels, spread,
                             out.xmls.size() == 1 ? "an NCCL graph file" : fmt::format("an NCCL graph file per node, {} files", out.xmls.size()));
    if (out.transfers > max_transfers)
        return why = fmt::format("its table would have about {} transfers, above {}", out.transfers, max_transfers), std::nullopt;
    out.table = nccl_graph_table(std::move(topo), model, kind, check, deadline);
    return out;
}

std::vector<std::vector<NcclGraphEntry>> nccl_algorithm_node_graphs(const Topology& t, std::string_view algorithm) {
    if (algorithm != "ring" && algorithm != "tree" && algorithm != "*")
        throw InputError(fmt::format("nccl:{}: NCCL's graph files hold its rings (graph 0) and trees (graph 1): nccl:ring, nccl:tree, or "
                                     "nccl:* for both in one file (PAT and p2p read no graph)",
                                     algorithm));
    const NcclBoxes b = nccl_graph_boxes(t);
    if (algorithm != "tree") {
        if (b.count > 1 && nccl_nodes_differ(b))
            throw InputError(fmt::format("nccl:{}: {}'s boxes number their nets differently, and NCCL's own rings, net c in every node, "
                                         "cross rails there: no graph file holds them (nccl:tree writes its trees, one file per node)",
                                         algorithm, t.spec()));
        return {nccl_algorithm_graphs(t, algorithm)};
    }
    const System s = nccl_system(t);
    const Graph g = nccl_ring_graph(s);
    const std::optional<std::vector<TableRing>> chains = rail_chains(b, nccl_rings(t, nccl_layout(t), s, g.channels), g.channels);
    if (!chains) return {nccl_algorithm_graphs(t, algorithm)};
    std::vector<NcclGraph> graphs = nccl_node_graphs_of_rings(t, *chains);
    for (NcclGraph& x : graphs) x.speed_intra = g.bw_intra, x.speed_inter = g.bw_inter, x.same_channels = false;
    if (nccl_graphs_differ(graphs).empty()) graphs.resize(1);
    std::vector<std::vector<NcclGraphEntry>> out;
    for (NcclGraph& x : graphs) out.push_back({{1, nccl_pattern_tree, std::move(x)}});
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
