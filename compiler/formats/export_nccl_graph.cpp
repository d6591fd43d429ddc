// NCCL graph files out (docs/exports.md, "NCCL graph files"): the rings of a send table as the
// <graphs> XML of NCCL_GRAPH_FILE (NVIDIA/nccl src/graph/search.cc:886-1035).
#include "compiler/formats/export_nccl_graph.hpp"

#include <algorithm>
#include <deque>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "compiler/topology/machine_view.hpp"
#include "support/error.hpp"

namespace collsched {

namespace {

constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
/// NCCL's graphs hold at most MAXCHANNELS/2 = 32 channels (src/include/device.h:91 MAXCHANNELS 64;
/// src/graph/connect.cc:460 ncclTopoPostset doubles the channels read, min(MAXCHANNELS, 2n): past 32 the
/// copies would be cut short and the channels' shares no longer the file's).
constexpr std::size_t max_nccl_channels = 32;

using Hops = std::set<std::pair<std::uint32_t, std::uint32_t>>;

/// The chunk a message carries: a base message's, a partial's (its `lo`), the common chunk of a
/// bundle's parts; nullopt for a combined value of C > 1 chunks or a bundle of several.
std::optional<std::uint32_t> chunk_of(const Messages& ms, MessageId m) {
    if (!ms.is_composite(m)) return ms.chunk(m);
    const Composite& c = ms.composite(m);
    if (c.kind == MessageKind::partial) return c.lo;
    if (c.kind == MessageKind::combined) return ms.chunks() == 1 ? std::optional<std::uint32_t>(0) : std::nullopt;
    std::optional<std::uint32_t> k;
    for (MessageId x : c.parts) {
        const std::optional<std::uint32_t> y = chunk_of(ms, x);
        if (!y || (k && *k != *y)) return std::nullopt;
        k = y;
    }
    return k;
}

/// The hops from processor to processor (a transfer into a router continues with the router's
/// transfers of the same message) of each group of messages: all messages of one chunk together
/// (NCCL's ring algorithms move a chunk round one ring), a message whose chunk is not known alone.
struct HopGroups {
    std::vector<Hops> groups;  ///< the chunks' first, in chunk order, then the messages alone
    std::size_t chunks = 0;    ///< how many of them are chunks
};
/// One message's hops from processor to processor, each copy that enters a router matched with a departure of its own
/// (first in, first out: the earliest copy not yet taken that arrived in an earlier step, as the step semantics matches
/// them under replicate=no): a share that crosses a box's NVSwitch once a hop keeps its path (0 -> sw -> 1, 1 -> sw -> 2
/// is 0 -> 1, 1 -> 2, not 0 -> 1..7). False where a departure finds no copy (a router that copies): reach() then.
bool matched_hops(const Topology& topo, const std::vector<const Transfer*>& xs, Hops& h) {
    std::map<std::uint32_t, std::deque<std::pair<Step, std::uint32_t>>> copies;  // router -> (arrival step, processor it came from)
    for (const Transfer* x : xs) {
        const Channel& c = topo.channel(x->channel);
        std::uint32_t from = idx(c.from);
        if (!topo.is_processor(c.from)) {
            auto& q = copies[from];
            if (q.empty() || q.front().first >= x->step) return false;
            from = q.front().second;
            q.pop_front();
        }
        if (topo.is_processor(c.to)) h.emplace(from, idx(c.to));
        else copies[idx(c.to)].emplace_back(x->step, from);
    }
    return true;
}

/// One message's hops by reachability: from a processor through any router the message leaves to a processor.
void reach(const Topology& topo, const std::vector<const Transfer*>& xs, Hops& h) {
    std::map<std::uint32_t, std::vector<std::uint32_t>> next;  // node -> next nodes
    for (const Transfer* x : xs) {
        const Channel& c = topo.channel(x->channel);
        auto& n = next[idx(c.from)];
        if (std::find(n.begin(), n.end(), idx(c.to)) == n.end()) n.push_back(idx(c.to));
    }
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
}

HopGroups chunk_hops(const SendTable& t) {
    const Topology& topo = *t.topology;
    const Messages ms = t.messages();
    std::map<std::uint32_t, std::vector<const Transfer*>> of;  // message -> its transfers, in table (step) order
    for (const Transfer& x : t.transfers) of[idx(x.message)].push_back(&x);
    for (auto& [m, xs] : of) std::ranges::stable_sort(xs, {}, [](const Transfer* x) { return x->step; });
    std::map<std::uint32_t, Hops> by_chunk;
    std::vector<Hops> alone;
    for (auto& [m, xs] : of) {
        const std::optional<std::uint32_t> k = chunk_of(ms, MessageId{m});
        Hops& h = k ? by_chunk[*k] : alone.emplace_back();
        Hops mine;
        if (!matched_hops(topo, xs, mine)) mine.clear(), reach(topo, xs, mine);
        h.insert(mine.begin(), mine.end());
    }
    HopGroups g;
    for (auto& [k, h] : by_chunk) g.groups.push_back(std::move(h));
    g.chunks = g.groups.size();
    std::ranges::move(alone, std::back_inserter(g.groups));
    return g;
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

/// The hops with NCCL's PXN relays taken out (NCCL_CROSS_NIC=0, src/graph/search.cc ncclTopoGetNetDev:
/// a ring leaves a box by the NIC it entered by, the last GPU reaching that NIC's GPU over NVLink):
/// a processor d with an in-box and a cross-box successor, or an in-box and a cross-box predecessor,
/// is the box's entry GPU relaying; its in-box predecessor u and cross-box successor w become the ring's
/// hop u -> w (`relays`: each d). Empty where a processor has more than two successors or predecessors,
/// or the pair is not there.
Hops without_relays(const Hops& h, const std::vector<std::uint32_t>& box, std::uint32_t p, std::vector<std::uint32_t>& relays) {
    std::vector<std::vector<std::uint32_t>> succ(p), pred(p);
    for (auto [u, v] : h) succ[u].push_back(v), pred[v].push_back(u);
    Hops out = h;
    relays.clear();
    for (std::uint32_t d = 0; d < p; ++d) {
        if (succ[d].size() > 2 || pred[d].size() > 2) return {};
        if (succ[d].size() < 2 && pred[d].size() < 2) continue;
        std::uint32_t u = none, w = none;
        for (std::uint32_t x : pred[d])
            if (box[x] == box[d]) u = x;
        for (std::uint32_t x : succ[d])
            if (box[x] != box[d]) w = x;
        if (u == none || w == none) return {};
        out.erase({u, d});
        out.erase({d, w});
        out.emplace(u, w);
        relays.push_back(d);
    }
    return out;
}

/// Why the ring `c` of hops `r`, the relays `relays` taken out of `h`, is not NCCL's PXN, or "": NCCL writes one
/// NIC both ways for the whole ring (nccl_graph_of_rings), so every box must be left through the GPU the ring
/// enters it at (a relay through another GPU leaves by that GPU's NIC; a box left directly, by its last GPU's).
std::string not_pxn(const std::vector<std::uint32_t>& c, const std::vector<std::uint32_t>& relays, const Hops& r, const Hops& h,
                    const std::vector<std::uint32_t>& box) {
    const std::size_t n = c.size();
    std::vector<std::size_t> at(n);
    for (std::size_t i = 0; i < n; ++i) at[c[i]] = i;
    for (std::uint32_t d : relays)
        if (box[c[(at[d] + n - 1) % n]] == box[d])
            return fmt::format("nccl-graph: a ring leaves box {} through GPU {}, which is not the GPU it enters the box at: NCCL's PXN "
                               "(NCCL_CROSS_NIC=0) leaves a box by the NIC it entered by",
                               box[d], d);
    for (auto [u, w] : r)
        if (box[u] != box[w] && h.contains({u, w}))
            return fmt::format("nccl-graph: a ring leaves box {} from GPU {} directly and another box through the GPU it entered it at: "
                               "NCCL's graph file gives a ring one way out of every box",
                               box[u], u);
    return "";
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
            auto add = [&](std::uint32_t x, std::uint32_t y) {
                if (auto c = topo.find_channel(Node{x}, Node{y})) route.push_back(*c);
                else if (std::vector<ChannelId> p = topo.route(Node{x}, Node{y}); !p.empty()) route.insert(route.end(), p.begin(), p.end());
                else throw InputError(fmt::format("nccl-graph: the machine has no path from {} to {}", x, y));
            };
            const std::size_t n = r.order.size();
            const std::uint32_t entry = r.order[(i + n + 1 - b.per_box) % n];  // the GPU u's box was entered at (PXN relay)
            if (r.relay && b.box[u] != b.box[v] && entry != u) add(u, entry), add(entry, v);
            else add(u, v);
            for (ChannelId c : route) {
                on_channel[idx(c)] += r.channels;
                for (std::uint32_t grp : topo.groups_of(c)) on_group[grp] += r.channels;
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
    const HopGroups hg = chunk_hops(t);
    std::optional<std::vector<std::uint32_t>> box;  // read only where a group is not a ring as it stands
    // per group: the ring it travels on, and whether through NCCL's PXN relays
    std::string refused;  // a ring through relays that are not NCCL's PXN (not_pxn): said when the table does not export
    auto ring_of = [&](const Hops& h) -> std::pair<std::vector<std::uint32_t>, bool> {
        if (std::vector<std::uint32_t> c = full_cycle(h, p); !c.empty()) return {std::move(c), false};
        if (!box) box = nccl_graph_boxes(*t.topology).box;
        std::vector<std::uint32_t> relays;
        if (const Hops r = without_relays(h, *box, p, relays); !r.empty() && r != h)
            if (std::vector<std::uint32_t> c = full_cycle(r, p); !c.empty()) {
                if (std::string why = not_pxn(c, relays, r, h, *box); !why.empty()) {
                    if (refused.empty()) refused = std::move(why);
                    return {};
                }
                return {std::move(c), true};
            }
        return {};
    };
    std::vector<TableRing> rings;
    std::vector<std::int64_t> ring_of_group(hg.groups.size(), -1);
    for (std::size_t i = 0; i < hg.groups.size(); ++i) {  // the chunks (and messages) that go all the way round fix the rings
        auto [c, relay] = ring_of(hg.groups[i]);
        if (c.empty()) continue;
        auto it = std::find_if(rings.begin(), rings.end(), [&](const TableRing& r) { return r.order == c && r.relay == relay; });
        if (it == rings.end()) it = rings.insert(rings.end(), {std::move(c), 0, 0, relay});
        ring_of_group[i] = it - rings.begin();
        if (i < hg.chunks) ++it->chunks;
    }
    if (rings.empty()) {  // a single ring whose messages each go part of the way (reduce-scatter)
        Hops all;
        for (const Hops& h : hg.groups) all.insert(h.begin(), h.end());
        if (auto [c, relay] = ring_of(all); !c.empty()) rings.push_back({std::move(c), 0, 0, relay});
    }
    if (!refused.empty()) throw InputError(refused);
    if (rings.empty())
        throw InputError("nccl-graph: no message of the table travels on a ring through all processors (NCCL graph files hold rings)");
    for (std::size_t i = 0; i < hg.groups.size(); ++i) {
        const Hops& h = hg.groups[i];
        auto holds_h = [&](const TableRing& r) { return !r.relay && on_cycle(h, r.order); };
        auto it = ring_of_group[i] >= 0 ? rings.begin() + ring_of_group[i] : std::find_if(rings.begin(), rings.end(), holds_h);
        if (it == rings.end())
            throw InputError(fmt::format("nccl-graph: a message's hops ({}) lie on none of the table's {} ring{}: the table is not rings",
                                         hop_list(h), rings.size(), rings.size() == 1 ? "" : "s"));
        ++it->messages;
    }
    // NCCL gives every channel the same share of the data (connect.cc:460 ncclTopoPostset duplicates the channels as
    // they are): a ring with k times another's chunks is k channels
    std::uint64_t g = 0;
    for (const TableRing& r : rings) g = std::gcd(g, r.chunks);
    for (TableRing& r : rings) r.channels = g && r.chunks ? static_cast<std::uint32_t>(std::min<std::uint64_t>(r.chunks / g, 1u << 16)) : 1;
    if (std::any_of(rings.begin(), rings.end(), [](const TableRing& r) { return r.chunks == 0; }))
        for (TableRing& r : rings) r.channels = 1;
    return rings;
}

std::vector<NcclGraph> nccl_node_graphs_of_rings(const Topology& topo, const std::vector<TableRing>& rings) {
    std::uint64_t channels = 0;
    for (const TableRing& r : rings) channels += r.channels;
    if (channels > max_nccl_channels)
        throw InputError(fmt::format("nccl-graph: {} ring{} as {} channels (NCCL gives each channel the same share of the data), and NCCL's "
                                     "graph holds at most {}",
                                     rings.size(), rings.size() == 1 ? "" : "s", channels, max_nccl_channels));
    const Boxes b = nccl_graph_boxes(topo);
    std::vector<NcclGraph> g(b.count);
    for (NcclGraph& x : g) x.boxes = b.count, x.gpus_per_box = b.per_box;
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
        // NCCL joins the nodes in rank order (connect.cc:96-113 connectRings), each node's part of channel c read from its own
        // file: box k holds places k x G to (k + 1) x G - 1 of the ring
        for (std::size_t i = 0; i < n; ++i)
            if (b.box[order[i]] != i / b.per_box)
                throw InputError(fmt::format("nccl-graph: ring {} is not one NCCL channel: NCCL visits box 0, 1, ... in turn ({} first), "
                                             "but place {} of the ring is processor {} (box {})",
                                             &r - rings.data(), order[0], i, order[i], b.box[order[i]]));
        bool cross = false;  // leaves some box by another NIC than it entered by
        for (std::uint32_t k = 0; k < b.count && b.count > 1 && !r.relay; ++k)
            cross = cross || b.nic[order[k * b.per_box]] != b.nic[order[k * b.per_box + b.per_box - 1]];
        for (std::uint32_t k = 0; k < b.count; ++k) {
            NcclChannel c;
            for (std::uint32_t i = 0; i < b.per_box; ++i) c.gpus.push_back(b.local[order[k * b.per_box + i]]);
            if (b.count > 1) {
                const std::uint32_t first = order[k * b.per_box], last = order[k * b.per_box + b.per_box - 1];
                if (b.nic[first] < 0 || (!r.relay && b.nic[last] < 0))
                    throw InputError(fmt::format("nccl-graph: ring {} {} box {} at GPU {}, which has no NIC", &r - rings.data(),
                                                 b.nic[first] < 0 ? "enters" : "leaves", k, b.local[b.nic[first] < 0 ? first : last]));
                c.net_in = b.nic[first], c.net_out = r.relay ? c.net_in : b.nic[last];
                g[k].cross_nic = g[k].cross_nic || cross;
            }
            NcclChannel tree = c;
            if (cross) {  // the trees' chain on box 0's rail of entry
                const std::uint32_t rail = b.local[order[0]];
                const std::uint32_t head = idx(b.members[k][rail]);
                if (b.nic[head] < 0)
                    throw InputError(fmt::format("nccl-graph: ring {} enters box 0 at GPU {}, and GPU {} of box {} has no NIC for the trees' chain "
                                                 "on that rail", &r - rings.data(), rail, rail, k));
                std::rotate(tree.gpus.begin(), std::find(tree.gpus.begin(), tree.gpus.end(), rail), tree.gpus.end());
                tree.net_in = tree.net_out = b.nic[head];
            }
            for (std::uint32_t x = 0; x < r.channels; ++x) g[k].channels.push_back(c), g[k].tree.push_back(tree);
        }
    }
    NcclGraph speeds;
    ring_speeds(topo, b, rings, speeds);
    for (NcclGraph& x : g) x.speed_intra = speeds.speed_intra, x.speed_inter = speeds.speed_inter;
    return g;
}

std::string nccl_graphs_differ(const std::vector<NcclGraph>& g) {
    for (std::size_t k = 1; k < g.size(); ++k)
        for (std::size_t c = 0; c < g[0].channels.size(); ++c) {
            const NcclChannel &a = g[0].channels[c], &x = g[k].channels[c];
            if (a.net_in != x.net_in || a.net_out != x.net_out)
                return fmt::format("channel {} enters and leaves box 0 by nets {:x} and {:x}, box {} by {:x} and {:x} (NCCL numbers a "
                                   "node's nets in PCI order)",
                                   c, a.net_in, a.net_out, k, x.net_in, x.net_out);
            if (a.gpus != x.gpus) return fmt::format("channel {} orders box 0's GPUs otherwise than box {}'s", c, k);
            if (c < g[0].tree.size() && c < g[k].tree.size() && (g[0].tree[c].gpus != g[k].tree[c].gpus || g[0].tree[c].net_in != g[k].tree[c].net_in))
                return fmt::format("channel {}'s trees' chain differs between box 0 and box {}", c, k);
            if (g[0].cross_nic != g[k].cross_nic) return fmt::format("box 0 and box {} differ in crossnic", k);
        }
    return "";
}

NcclGraph nccl_graph_of_rings(const Topology& topo, const std::vector<TableRing>& rings) {
    std::vector<NcclGraph> g = nccl_node_graphs_of_rings(topo, rings);
    if (std::string why = nccl_graphs_differ(g); !why.empty())
        throw InputError(fmt::format("nccl-graph: the boxes read different graph files ({}): one file per node", why));
    return std::move(g.front());
}

std::string nccl_graph_node_path(const std::string& path, std::uint32_t node) {
    const std::string stem = path.ends_with(".xml") ? path.substr(0, path.size() - 4) : path;
    return fmt::format("{}.node{}.xml", stem, node);
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

std::string nccl_graph_xml(const NcclGraph& g) {
    NcclGraph trees = g;
    if (!g.tree.empty()) trees.channels = g.tree;
    return nccl_graphs_xml({{0, 4, g}, {1, 3, trees}});
}

std::vector<std::string> nccl_graph_files_xml(const SendTable& t) {
    const std::vector<NcclGraph> g = nccl_node_graphs_of_rings(*t.topology, table_rings(t));
    if (nccl_graphs_differ(g).empty()) return {nccl_graph_xml(g.front())};
    std::vector<std::string> out;
    for (const NcclGraph& x : g) out.push_back(nccl_graph_xml(x));
    return out;
}

void write_table_nccl_graph(const SendTable& t, fmt::memory_buffer& out, const Flush& flush) {
    const std::vector<NcclGraph> g = nccl_node_graphs_of_rings(*t.topology, table_rings(t));
    if (std::string why = nccl_graphs_differ(g); !why.empty())
        throw InputError(fmt::format("nccl-graph: the boxes need different graph files ({}): give -o FILE.xml, written as one file per "
                                     "node, FILE.node0.xml to FILE.node{}.xml",
                                     why, g.size() - 1));
    out.append(nccl_graph_xml(g.front()));
    flush(out);
}

}  // namespace collsched
