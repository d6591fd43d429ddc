// The per-round capacity of a topology as a flow network, and max flows on it (Boost.Graph).
#include "verifier/synth/bounds/capacity_network.hpp"

#include <algorithm>

// Boost.Graph's adjacency list trips GCC 12's flow analysis (-Wmaybe-uninitialized on its edge
// iterators, -Wrestrict in code it inlines); both are false positives in the library's headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wrestrict"
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <fmt/format.h>

#include "support/assert.hpp"

namespace collsched {

namespace {

/// A capacity shared by a set of channels at one node: a link group or a port.
struct Budget {
    std::vector<ChannelId> channels;  // sorted
    std::uint64_t cap = 0;
    CapacityArc::Kind kind = CapacityArc::Kind::group;
    std::uint32_t what = 0;
    bool out = true;
};

bool subset(const std::vector<ChannelId>& a, const std::vector<ChannelId>& b) {
    return std::includes(b.begin(), b.end(), a.begin(), a.end());
}
bool disjoint(const std::vector<ChannelId>& a, const std::vector<ChannelId>& b) {
    auto i = a.begin();
    auto j = b.begin();
    while (i != a.end() && j != b.end()) {
        if (*i == *j) return false;
        if (*i < *j) ++i;
        else ++j;
    }
    return true;
}

/// Builds the network: keeps, per node and side, a laminar family of budgets as a chain of
/// vertices, and reports each budget it had to drop.
class Builder {
public:
    Builder(const Topology& t, const Model& m) : t_(t), m_(m) {
        net_.topology_nodes = t.nodes();
        net_.vertices = t.nodes();
        inner_out_.assign(t.channels().size(), kNone);
        inner_in_.assign(t.channels().size(), kNone);
        general_.assign(t.channels().size(), kNone);
    }

    CapacityNetwork build() {
        std::vector<std::vector<Budget>> outs(t_.nodes()), ins(t_.nodes());
        collect_ports(outs, ins);
        collect_groups(outs, ins);
        for (std::uint32_t u = 0; u < t_.nodes(); ++u) {
            chain(u, outs[u], true);
            chain(u, ins[u], false);
        }
        add_channels();
        return std::move(net_);
    }

private:
    static constexpr std::uint32_t kNone = 0xffffffffu;

    void collect_ports(std::vector<std::vector<Budget>>& outs, std::vector<std::vector<Budget>>& ins) {
        if (m_.ports == Ports::multi) return;
        if (m_.ports == Ports::half)
            net_.relaxations.push_back("ports=half counted as single ports (one send and one receive per round; a relaxation)");
        for (std::uint32_t p = 0; p < t_.processors(); ++p) {
            Node n{p};
            auto o = t_.out_channels(n);
            auto i = t_.in_channels(n);
            if (!o.empty()) outs[p].push_back({sorted(o), 1, CapacityArc::Kind::port, p, true});
            if (!i.empty()) ins[p].push_back({sorted(i), 1, CapacityArc::Kind::port, p, false});
        }
    }

    static std::vector<ChannelId> sorted(std::span<const ChannelId> cs) {
        std::vector<ChannelId> v(cs.begin(), cs.end());
        std::sort(v.begin(), v.end());
        return v;
    }

    void collect_groups(std::vector<std::vector<Budget>>& outs, std::vector<std::vector<Budget>>& ins) {
        const auto& gs = t_.groups();
        for (std::uint32_t g = 0; g < gs.size(); ++g) {
            const LinkGroup& grp = gs[g];
            bool one_tail = true, one_head = true;
            const Channel& c0 = t_.channel(grp.channels.front());
            for (ChannelId c : grp.channels) {
                one_tail = one_tail && t_.channel(c).from == c0.from;
                one_head = one_head && t_.channel(c).to == c0.to;
            }
            Budget b{grp.channels, grp.cap, CapacityArc::Kind::group, g, true};
            if (one_tail) outs[idx(c0.from)].push_back(std::move(b));
            else if (one_head) {
                b.out = false;
                ins[idx(c0.to)].push_back(std::move(b));
            } else {
                add_general(g);
            }
        }
    }

    /// A group of several senders and several receivers: a switch vertex pair Gi -> Go of the
    /// group's capacity that every channel of the group passes through. Paths Gi -> Go -> v'
    /// for pairs that are no channel are a relaxation.
    void add_general(std::uint32_t g) {
        const LinkGroup& grp = t_.groups()[g];
        const std::uint32_t gi = net_.vertices++, go = net_.vertices++;
        net_.arcs.push_back({gi, go, grp.cap, CapacityArc::Kind::group, g, true});
        general_in_.push_back(gi);
        net_.relaxations.push_back(fmt::format("group {} joins several senders and receivers: one switch vertex (a relaxation)", grp.name));
        const std::uint32_t slot = static_cast<std::uint32_t>(general_in_.size() - 1);
        general_group_.push_back(g);
        for (ChannelId c : grp.channels) {
            std::uint32_t& cur = general_[idx(c)];
            if (cur == kNone || t_.groups()[general_group_[cur]].cap > grp.cap) {
                if (cur != kNone)
                    net_.relaxations.push_back(fmt::format("channel {} is in several such groups: only the smallest is kept", idx(c)));
                cur = slot;
            }
        }
    }

    /// Node u's budgets on one side, largest first: a budget is kept when it nests with (or is
    /// disjoint from) every one kept before; its vertex hangs behind the innermost kept budget
    /// that holds it (or u itself).
    void chain(std::uint32_t u, std::vector<Budget>& bs, bool out) {
        std::stable_sort(bs.begin(), bs.end(), [](const Budget& a, const Budget& b) { return a.channels.size() > b.channels.size(); });
        std::vector<const Budget*> kept;
        std::vector<std::uint32_t>& inner = out ? inner_out_ : inner_in_;
        for (const Budget& b : bs) {
            bool laminar = true;
            for (const Budget* k : kept) laminar = laminar && (subset(b.channels, k->channels) || disjoint(b.channels, k->channels));
            if (!laminar) {
                net_.relaxations.push_back(fmt::format("{} of node {} overlaps another without nesting: left out (a relaxation)",
                                                       b.kind == CapacityArc::Kind::port ? std::string("the port") : "group " + t_.groups()[b.what].name,
                                                       t_.node_name(Node{u})));
                continue;
            }
            kept.push_back(&b);
            const std::uint32_t parent = inner[idx(b.channels.front())] == kNone ? u : inner[idx(b.channels.front())];
            const std::uint32_t v = net_.vertices++;
            if (out) net_.arcs.push_back({parent, v, b.cap, b.kind, b.what, true});
            else net_.arcs.push_back({v, parent, b.cap, b.kind, b.what, false});
            for (ChannelId c : b.channels) inner[idx(c)] = v;
        }
    }

    void add_channels() {
        for (std::uint32_t c = 0; c < t_.channels().size(); ++c) {
            const Channel& ch = t_.channel(ChannelId{c});
            const std::uint32_t from = inner_out_[c] == kNone ? idx(ch.from) : inner_out_[c];
            const std::uint32_t to = inner_in_[c] == kNone ? idx(ch.to) : inner_in_[c];
            if (general_[c] == kNone) {
                net_.arcs.push_back({from, to, ch.cap, CapacityArc::Kind::channel, c, true});
            } else {
                const std::uint32_t gi = general_in_[general_[c]];
                net_.arcs.push_back({from, gi, ch.cap, CapacityArc::Kind::channel, c, true});
                net_.arcs.push_back({gi + 1, to, ch.cap, CapacityArc::Kind::channel, c, true});
            }
        }
    }

    const Topology& t_;
    const Model& m_;
    CapacityNetwork net_;
    std::vector<std::uint32_t> inner_out_, inner_in_, general_;
    std::vector<std::uint32_t> general_in_, general_group_;
};

}  // namespace

CapacityNetwork capacity_network(const Topology& t, const Model& m) { return Builder(t, m).build(); }

CapacityNetwork reversed(CapacityNetwork n) {
    for (CapacityArc& a : n.arcs) std::swap(a.from, a.to);
    return n;
}

std::string CapacityNetwork::arc_text(const Topology& t, const CapacityArc& a) const {
    switch (a.kind) {
        case CapacityArc::Kind::channel: {
            const Channel& ch = t.channel(ChannelId{a.what});
            return fmt::format("channel {}->{} ({})", t.node_name(ch.from), t.node_name(ch.to), a.cap);
        }
        case CapacityArc::Kind::group: return fmt::format("group {} ({})", t.groups()[a.what].name, a.cap);
        case CapacityArc::Kind::port: return fmt::format("{} port of {} ({})", a.out_port ? "send" : "receive", a.what, a.cap);
    }
    return "";
}

std::uint64_t cut_capacity(const CapacityNetwork& n, const std::vector<char>& side) {
    std::uint64_t c = 0;
    for (const CapacityArc& a : n.arcs)
        if (side[a.from] && !side[a.to]) c += a.cap;
    return c;
}

// ---- max flow -------------------------------------------------------------------------------

namespace {
using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using Graph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<boost::edge_capacity_t, std::int64_t,
                    boost::property<boost::edge_residual_capacity_t, std::int64_t, boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
using Edge = Traits::edge_descriptor;
}  // namespace

struct FlowSolver::Impl {
    Graph g;
    std::uint32_t n = 0;          // network vertices
    std::uint32_t s = 0, t = 0;   // super source, super sink
    std::vector<Edge> arcs;       // network arcs, in order
    std::vector<std::uint64_t> base;
    std::vector<Edge> source_joins, sink_joins;  // per topology node
    std::vector<Edge> reverse_of;                // all reverse edges, zeroed per query

    Edge add(std::uint32_t a, std::uint32_t b) {
        auto cap = boost::get(boost::edge_capacity, g);
        auto rev = boost::get(boost::edge_reverse, g);
        Edge e = boost::add_edge(a, b, g).first;
        Edge r = boost::add_edge(b, a, g).first;
        cap[e] = 0;
        cap[r] = 0;
        rev[e] = r;
        rev[r] = e;
        reverse_of.push_back(r);
        return e;
    }

    /// Sets the joins' capacities after the network arcs'. `unbounded` joins get one more than
    /// the sum of every finite capacity in the graph: no minimum cut can cross such a join, and
    /// push-relabel, which sums capacities (a vertex's excess, the source's preflow), stays
    /// far below overflow. The sum is kept in 128 bits and asserted to fit a quarter of 2^63.
    void set_joins(const std::vector<std::int64_t>& source_caps, const std::vector<std::int64_t>& sink_caps) {
        __extension__ typedef unsigned __int128 u128;  // GCC's and Clang's; -Wpedantic knows no 128-bit type
        auto cap = boost::get(boost::edge_capacity, g);
        u128 finite = 0;
        std::size_t unbounded_joins = 0;
        for (Edge e : arcs) finite += static_cast<std::uint64_t>(cap[e]);
        auto take = [&](const std::vector<std::int64_t>& caps, std::size_t v) -> std::int64_t {
            const std::int64_t c = v < caps.size() ? caps[v] : 0;
            COLLSCHED_ASSERT(c >= 0);
            if (c == FlowSolver::unbounded) ++unbounded_joins; else finite += static_cast<std::uint64_t>(c);
            return c;
        };
        for (std::size_t v = 0; v < source_joins.size(); ++v) {
            cap[source_joins[v]] = take(source_caps, v);
            cap[sink_joins[v]] = take(sink_caps, v);
        }
        const u128 infinity = finite + 1;
        COLLSCHED_ASSERT(finite + infinity * unbounded_joins < (static_cast<u128>(1) << 61));
        for (std::size_t v = 0; v < source_joins.size(); ++v)
            for (Edge e : {source_joins[v], sink_joins[v]})
                if (cap[e] == FlowSolver::unbounded) cap[e] = static_cast<std::int64_t>(infinity);
    }
};

FlowSolver::FlowSolver(const CapacityNetwork& net, const std::vector<std::uint32_t>& sink_vertices) : impl_(new Impl) {
    Impl& I = *impl_;
    I.n = net.vertices;
    I.g = Graph(net.vertices + 2);
    I.s = net.vertices;
    I.t = net.vertices + 1;
    for (const CapacityArc& a : net.arcs) {
        I.arcs.push_back(I.add(a.from, a.to));
        I.base.push_back(a.cap);
    }
    for (std::uint32_t v = 0; v < net.topology_nodes; ++v) {
        I.source_joins.push_back(I.add(I.s, v));
        I.sink_joins.push_back(I.add(sink_vertices.empty() ? v : sink_vertices[v], I.t));
    }
}

FlowSolver::~FlowSolver() { delete impl_; }

std::int64_t FlowSolver::max_flow(std::uint64_t scale, const std::vector<std::int64_t>& source_caps, const std::vector<std::int64_t>& sink_caps,
                                  std::uint32_t sink) {
    Impl& I = *impl_;
    auto cap = boost::get(boost::edge_capacity, I.g);
    for (Edge r : I.reverse_of) cap[r] = 0;
    for (std::size_t i = 0; i < I.arcs.size(); ++i) {
        std::uint64_t c = 0;
        const bool overflow = __builtin_mul_overflow(I.base[i], scale, &c);
        COLLSCHED_ASSERT(!overflow && c <= static_cast<std::uint64_t>(unbounded) / 2);
        cap[I.arcs[i]] = static_cast<std::int64_t>(c);
    }
    I.set_joins(source_caps, sink_caps);
    const std::uint32_t target = sink == super_sink ? I.t : sink;
    COLLSCHED_ASSERT(target != I.s);
    return boost::push_relabel_max_flow(I.g, I.s, target);
}

std::int64_t FlowSolver::max_flow_arcs(const std::vector<std::int64_t>& arc_caps, const std::vector<std::int64_t>& source_caps,
                                       const std::vector<std::int64_t>& sink_caps, std::uint32_t sink) {
    Impl& I = *impl_;
    COLLSCHED_ASSERT(arc_caps.size() == I.arcs.size());
    auto cap = boost::get(boost::edge_capacity, I.g);
    for (Edge r : I.reverse_of) cap[r] = 0;
    for (std::size_t i = 0; i < I.arcs.size(); ++i) {
        COLLSCHED_ASSERT(arc_caps[i] >= 0 && arc_caps[i] != unbounded);
        cap[I.arcs[i]] = arc_caps[i];
    }
    I.set_joins(source_caps, sink_caps);
    return boost::push_relabel_max_flow(I.g, I.s, sink == super_sink ? I.t : sink);
}

std::int64_t FlowSolver::arc_flow(std::size_t i) const {
    const Impl& I = *impl_;
    auto cap = boost::get(boost::edge_capacity, I.g);
    auto res = boost::get(boost::edge_residual_capacity, I.g);
    return cap[I.arcs[i]] - res[I.arcs[i]];
}

std::vector<char> FlowSolver::source_side() const {
    const Impl& I = *impl_;
    auto res = boost::get(boost::edge_residual_capacity, I.g);
    std::vector<char> seen(I.n + 2, 0);
    std::vector<std::uint32_t> stack{I.s};
    seen[I.s] = 1;
    while (!stack.empty()) {
        std::uint32_t u = stack.back();
        stack.pop_back();
        for (auto [e, end] = boost::out_edges(u, I.g); e != end; ++e) {
            std::uint32_t v = static_cast<std::uint32_t>(boost::target(*e, I.g));
            if (!seen[v] && res[*e] > 0) {
                seen[v] = 1;
                stack.push_back(v);
            }
        }
    }
    seen.resize(I.n);
    return seen;
}

}  // namespace collsched

#pragma GCC diagnostic pop
