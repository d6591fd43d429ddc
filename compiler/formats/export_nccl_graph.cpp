// NCCL graph files out (docs/exports.md, "NCCL graph files"): the rings of a send table as the
// <graphs> XML of NCCL_GRAPH_FILE (NVIDIA/nccl src/graph/search.cc:886-1035).
#include "compiler/formats/export_nccl_graph.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "compiler/topology/machine_view.hpp"
#include "support/error.hpp"

namespace collsched {

namespace {

constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
/// NCCL's graphs hold at most MAXCHANNELS/2 = 32 channels (src/include/device.h MAXCHANNELS 64;
/// search.cc gives a graph at most half, the other half are its duplicates).
constexpr std::size_t max_nccl_channels = 32;

using Hops = std::set<std::pair<std::uint32_t, std::uint32_t>>;

/// Per message, its hops from processor to processor (a transfer into a router continues with
/// the router's transfers of the same message).
std::vector<Hops> message_hops(const SendTable& t) {
    const Topology& topo = *t.topology;
    std::map<std::uint32_t, std::map<std::uint32_t, std::vector<std::uint32_t>>> out;  // message -> node -> next nodes
    for (const Transfer& x : t.transfers) {
        const Channel& c = topo.channel(x.channel);
        auto& next = out[idx(x.message)][idx(c.from)];
        if (std::find(next.begin(), next.end(), idx(c.to)) == next.end()) next.push_back(idx(c.to));
    }
    std::vector<Hops> hops;
    for (auto& [m, next] : out) {
        Hops h;
        for (auto& [from, tos] : next) {
            if (!topo.is_processor(Node{from})) continue;
            std::vector<std::uint32_t> stack = tos;
            std::set<std::uint32_t> seen;
            while (!stack.empty()) {
                const std::uint32_t n = stack.back();
                stack.pop_back();
                if (!seen.insert(n).second) continue;
                if (topo.is_processor(Node{n})) {
                    h.emplace(from, n);
                } else if (auto it = next.find(n); it != next.end()) {
                    for (std::uint32_t y : it->second) stack.push_back(y);
                }
            }
        }
        hops.push_back(std::move(h));
    }
    return hops;
}

/// The cycle through all p processors that the hops lie on, if they fix one: every processor
/// at most one successor and one predecessor, and a path or cycle through all of them.
std::vector<std::uint32_t> full_cycle(const Hops& h, std::uint32_t p) {
    std::vector<std::uint32_t> succ(p, none), pred(p, none);
    for (auto [u, v] : h) {
        if (succ[u] != none || pred[v] != none) return {};
        succ[u] = v, pred[v] = u;
    }
    std::uint32_t start = 0;
    for (std::uint32_t u = 0; u < p; ++u)
        if (pred[u] == none) start = u;
    std::vector<std::uint32_t> order{start};
    for (std::uint32_t u = succ[start]; u != none && u != start && order.size() <= p; u = succ[u]) order.push_back(u);
    if (order.size() != p) return {};
    std::rotate(order.begin(), std::min_element(order.begin(), order.end()), order.end());
    return order;
}

bool on_cycle(const Hops& h, const std::vector<std::uint32_t>& order) {
    std::vector<std::uint32_t> succ(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) succ[order[i]] = order[(i + 1) % order.size()];
    return std::all_of(h.begin(), h.end(), [&](auto hop) { return succ[hop.first] == hop.second; });
}

std::string hop_list(const Hops& h) {
    std::string s;
    for (auto [u, v] : h) s += fmt::format("{}{}->{}", s.empty() ? "" : ", ", u, v);
    return s.size() > 200 ? s.substr(0, 200) + " ..." : s;
}

using Boxes = NcclBoxes;

/// Rings per channel and per link group over all rings' hops; the least bandwidth a ring gets on
/// the hops inside boxes and on those between them, in GB/s.
void ring_speeds(const Topology& topo, const Boxes& b, const std::vector<TableRing>& rings, NcclGraph& g) {
    std::map<std::uint32_t, std::uint32_t> on_channel, on_group;
    std::vector<std::pair<bool, std::vector<ChannelId>>> hops;  // (between boxes, route)
    for (const TableRing& r : rings) {
        for (std::size_t i = 0; i < r.order.size(); ++i) {
            const std::uint32_t u = r.order[i], v = r.order[(i + 1) % r.order.size()];
            std::vector<ChannelId> route;
            if (auto c = topo.find_channel(Node{u}, Node{v})) route.push_back(*c);
            else route = topo.route(Node{u}, Node{v});
            if (route.empty()) throw InputError(fmt::format("nccl-graph: the machine has no path from {} to {}", u, v));
            for (ChannelId c : route) {
                ++on_channel[idx(c)];
                for (std::uint32_t grp : topo.groups_of(c)) ++on_group[grp];
            }
            hops.emplace_back(b.box[u] != b.box[v], std::move(route));
        }
    }
    double intra = std::numeric_limits<double>::infinity(), inter = intra;
    for (const auto& [between, route] : hops) {
        double bw = std::numeric_limits<double>::infinity();
        for (ChannelId c : route) {
            bw = std::min(bw, topo.speed(c).bandwidth / on_channel[idx(c)]);
            for (std::uint32_t grp : topo.groups_of(c)) bw = std::min(bw, topo.group_bandwidth(grp) / on_group[grp]);
        }
        (between ? inter : intra) = std::min(between ? inter : intra, bw);
    }
    g.speed_intra = std::isfinite(intra) ? intra / 1e9 : 0;
    g.speed_inter = std::isfinite(inter) ? inter / 1e9 : 0;
}

/// Whether router r leads out of box k: some processor of another box is reached from it through
/// routers alone (a NIC behind PCIe does, an NVSwitch of the box does not).
bool reaches_out(const Topology& topo, const std::vector<std::uint32_t>& box, Node r, std::uint32_t k) {
    std::vector<char> seen(topo.nodes(), 0);
    std::vector<Node> stack{r};
    seen[idx(r)] = 1;
    while (!stack.empty()) {
        const Node n = stack.back();
        stack.pop_back();
        for (ChannelId c : topo.out_channels(n)) {
            const Node w = topo.channel(c).to;
            if (seen[idx(w)]) continue;
            seen[idx(w)] = 1;
            if (topo.is_processor(w)) {
                if (box[idx(w)] != k) return true;
            } else {
                stack.push_back(w);
            }
        }
    }
    return false;
}

}  // namespace

NcclBoxes nccl_graph_boxes(const Topology& topo) {
    const std::uint32_t p = topo.processors();
    const double threshold = fastest_processor_channel(topo) / 4;
    NcclBoxes b;
    if (const std::uint32_t k = topo.declared_boxes()) {  // the file says what its boxes are
        b.box.resize(p);
        for (std::uint32_t g = 0; g < p; ++g) b.box[g] = g / (p / k);
    } else {
        b.box = processor_components(topo, threshold);
        b.inferred = true;
    }
    b.count = 1 + *std::max_element(b.box.begin(), b.box.end());
    b.members.assign(b.count, {});
    for (std::uint32_t g = 0; g < p; ++g) b.members[b.box[g]].push_back(Node{g});
    b.per_box = static_cast<std::uint32_t>(b.members[0].size());
    b.local.assign(p, 0);
    b.nic.assign(p, -1);
    b.nics.assign(b.count, {});
    for (std::uint32_t k = 0; k < b.count; ++k) {
        if (b.members[k].size() != b.per_box)
            throw InputError(fmt::format("nccl-graph: box {} has {} GPUs and box 0 {}: NCCL's graph file has one count of GPUs per box", k,
                                         b.members[k].size(), b.per_box));
        std::set<std::uint32_t> routers;  // the first nodes outside the box that its GPUs reach
        bool direct = false;
        for (std::uint32_t i = 0; i < b.per_box; ++i) {
            const std::uint32_t g = idx(b.members[k][i]);
            b.local[g] = i;
            for (ChannelId c : topo.out_channels(Node{g})) {
                const std::uint32_t to = idx(topo.channel(c).to);
                const bool out = topo.is_processor(Node{to}) ? b.box[to] != k
                                                             : topo.speed(c).bandwidth < threshold || reaches_out(topo, b.box, Node{to}, k);
                if (!out) continue;
                if (topo.is_processor(Node{to})) direct = true;
                else routers.insert(to);
                if (b.nic[g] < 0) b.nic[g] = 0;  // numbered below
            }
        }
        const bool shared = !direct && routers.size() == 1;  // one NIC behind PCIe for the whole box (ndv2)
        if (shared) b.nics[k].push_back(Node{*routers.begin()});
        for (Node g : b.members[k]) {
            if (b.nic[idx(g)] < 0) continue;
            if (shared) {
                b.nic[idx(g)] = 0;
            } else {
                b.nic[idx(g)] = static_cast<int>(b.nics[k].size());
                b.nics[k].push_back(g);
            }
        }
    }
    return b;
}

std::vector<TableRing> table_rings(const SendTable& t) {
    const std::uint32_t p = t.topology->processors();
    if (p < 2) throw InputError("nccl-graph: a ring needs at least 2 processors");
    if (t.transfers.empty()) throw InputError("nccl-graph: the table has no transfers, so no rings");
    const std::vector<Hops> hops = message_hops(t);
    std::vector<TableRing> rings;
    for (const Hops& h : hops) {  // the messages that go all the way round fix the rings
        std::vector<std::uint32_t> c = full_cycle(h, p);
        if (c.empty()) continue;
        auto it = std::find_if(rings.begin(), rings.end(), [&](const TableRing& r) { return r.order == c; });
        if (it == rings.end()) rings.push_back({std::move(c), 0});
    }
    if (rings.empty()) {  // a single ring whose messages each go part of the way (reduce-scatter)
        Hops all;
        for (const Hops& h : hops) all.insert(h.begin(), h.end());
        if (std::vector<std::uint32_t> c = full_cycle(all, p); !c.empty()) rings.push_back({std::move(c), 0});
    }
    if (rings.empty())
        throw InputError("nccl-graph: no message of the table travels on a ring through all processors (NCCL graph files hold rings)");
    for (const Hops& h : hops) {
        auto it = std::find_if(rings.begin(), rings.end(), [&](const TableRing& r) { return on_cycle(h, r.order); });
        if (it == rings.end())
            throw InputError(fmt::format("nccl-graph: a message's hops ({}) lie on none of the table's {} ring{}: the table is not rings",
                                         hop_list(h), rings.size(), rings.size() == 1 ? "" : "s"));
        ++it->messages;
    }
    return rings;
}

NcclGraph nccl_graph_of_rings(const Topology& topo, const std::vector<TableRing>& rings) {
    if (rings.size() > max_nccl_channels)
        throw InputError(fmt::format("nccl-graph: {} rings, NCCL's graph holds at most {} channels", rings.size(), max_nccl_channels));
    const Boxes b = nccl_graph_boxes(topo);
    NcclGraph g;
    g.boxes = b.count, g.gpus_per_box = b.per_box;
    for (const TableRing& r : rings) {
        std::vector<std::uint32_t> order = r.order;
        const std::size_t n = order.size();
        if (b.count > 1) {  // start where the ring enters box 0
            std::size_t start = n;
            for (std::size_t i = 0; i < n && start == n; ++i)
                if (b.box[order[i]] == 0 && b.box[order[(i + n - 1) % n]] != 0) start = i;
            if (start == n) throw InputError("nccl-graph: a ring never enters box 0");
            std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(start), order.end());
        }
        NcclChannel c;
        for (std::uint32_t i = 0; i < b.per_box; ++i) c.gpus.push_back(b.local[order[i]]);
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint32_t k = static_cast<std::uint32_t>(i / b.per_box);
            if (b.box[order[i]] != k || b.local[order[i]] != c.gpus[i % b.per_box])
                throw InputError(fmt::format(
                    "nccl-graph: ring {} is not one NCCL channel: NCCL visits box 0, 1, ... in turn with the same order of GPUs "
                    "in every box ({} first), but place {} of the ring is processor {} (box {}, GPU {})",
                    &r - rings.data(), order[0], i, order[i], b.box[order[i]], b.local[order[i]]));
        }
        if (b.count > 1) {
            const std::uint32_t first = order[0], last = order[b.per_box - 1];
            if (b.nic[first] < 0 || b.nic[last] < 0)
                throw InputError(fmt::format("nccl-graph: ring {} {} the box at GPU {}, which has no NIC", &r - rings.data(),
                                             b.nic[first] < 0 ? "enters" : "leaves", b.local[b.nic[first] < 0 ? first : last]));
            c.net_in = b.nic[first], c.net_out = b.nic[last];
            g.cross_nic = g.cross_nic || c.net_in != c.net_out;
        }
        g.channels.push_back(std::move(c));
    }
    ring_speeds(topo, b, rings, g);
    return g;
}

std::string nccl_graphs_xml(const std::vector<NcclGraphEntry>& graphs) {
    std::string s = "<graphs version=\"1\">\n";
    for (const auto& [id, pattern, g] : graphs) {
        s += fmt::format("  <graph id=\"{}\" pattern=\"{}\" crossnic=\"{}\" nchannels=\"{}\" speedintra=\"{:g}\" speedinter=\"{:g}\" "
                         "latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"{}\" samechannels=\"{}\">\n",
                         id, pattern, g.cross_nic ? 1 : 0, g.channels.size(), g.speed_intra, g.boxes > 1 ? g.speed_inter : g.speed_intra,
                         g.boxes > 1 ? "PIX" : "LOC", g.same_channels ? 1 : 0);
        const bool tree = pattern == 3;  // NCCL_TOPO_PATTERN_TREE: all NIC traffic to and from the first GPU
        for (const NcclChannel& c : g.channels) {
            s += "    <channel>\n";
            const int in = c.net_in, out = tree ? c.net_in : c.net_out;
            if (in >= 0) s += fmt::format("      <net dev=\"{:x}\"/>\n", in);
            for (std::uint32_t d : c.gpus) s += fmt::format("      <gpu dev=\"{:x}\"/>\n", d);
            if (out >= 0) s += fmt::format("      <net dev=\"{:x}\"/>\n", out);
            s += "    </channel>\n";
        }
        s += "  </graph>\n";
    }
    return s + "</graphs>\n";
}

std::string nccl_graph_xml(const NcclGraph& g) { return nccl_graphs_xml({{0, 4, g}, {1, 3, g}}); }

void write_table_nccl_graph(const SendTable& t, fmt::memory_buffer& out, const Flush& flush) {
    const std::string xml = nccl_graph_xml(nccl_graph_of_rings(*t.topology, table_rings(t)));
    out.append(xml);
    flush(out);
}

}  // namespace collsched
