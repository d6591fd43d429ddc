// Allgather on boxes joined by links between their GPUs: a tree per chunk, balanced by the links' seconds (box_links.hpp).
#include "verifier/constructions/compose/box_links.hpp"

#include <algorithm>
#include <limits>
#include <queue>

#include <fmt/format.h>

#include "runtime/timing.hpp"
#include "support/error.hpp"
#include "verifier/constructions/compose/allreduce.hpp"
#include "verifier/constructions/compose/plan.hpp"

namespace collsched::compose {

namespace {

constexpr std::uint32_t unset = std::numeric_limits<std::uint32_t>::max();

struct Hop {
    std::uint32_t to;
    ChannelId channel;
};
struct Link {
    std::uint32_t from, to;
    ChannelId channel;
};

/// The machine the trees are built on: its boxes, the channels inside each box, the links between boxes, and the
/// distances (in channels) inside each box.
struct Machine {
    std::uint32_t P = 0, K = 0;
    std::vector<std::uint32_t> box;                  ///< per processor
    std::vector<std::vector<std::uint32_t>> members;  ///< per box, increasing
    std::vector<std::vector<Hop>> in_box;             ///< per processor: its channels to processors of its box
    std::vector<std::vector<Link>> links;             ///< per ordered pair of boxes a * K + b: the channels from a to b
    std::vector<std::uint32_t> dist;                  ///< u * P + v, u and v in one box
    std::vector<std::vector<std::uint32_t>> order;    ///< per processor: the others of its box, nearest first
};

std::optional<Machine> machine_of(const Topology& t, std::string* why) {
    auto fail = [&](std::string w) -> std::optional<Machine> {
        if (why) *why = std::move(w);
        return std::nullopt;
    };
    Machine m;
    m.P = t.processors();
    if (t.routers() != 0) return fail("routers: the boxes' links are channels between processors");
    if (m.P > 256) return fail("more than 256 processors");
    std::vector<std::vector<Node>> boxes;
    if (const std::uint32_t K = t.declared_boxes(); K > 1) {
        for (std::uint32_t b = 0; b < K; ++b) {
            boxes.emplace_back();
            for (std::uint32_t j = 0; j < m.P / K; ++j) boxes.back().push_back(Node{b * (m.P / K) + j});
        }
    } else {
        Boxes found = find_boxes(t);
        if (!found.why.empty()) return fail(found.why);
        boxes = std::move(found.boxes);
    }
    m.K = static_cast<std::uint32_t>(boxes.size());
    if (m.K < 2) return fail("one box: no links between boxes");
    m.box.assign(m.P, 0);
    m.members.resize(m.K);
    for (std::uint32_t b = 0; b < m.K; ++b)
        for (Node n : boxes[b]) m.box[idx(n)] = b, m.members[b].push_back(idx(n));
    m.in_box.resize(m.P);
    m.links.resize(std::size_t{m.K} * m.K);
    for (std::uint32_t c = 0; c < t.channels().size(); ++c) {
        const Channel& ch = t.channel(ChannelId{c});
        const std::uint32_t u = idx(ch.from), v = idx(ch.to);
        if (m.box[u] == m.box[v]) m.in_box[u].push_back({v, ChannelId{c}});
        else m.links[std::size_t{m.box[u]} * m.K + m.box[v]].push_back({u, v, ChannelId{c}});
    }
    for (std::uint32_t a = 0; a < m.K; ++a)
        for (std::uint32_t b = 0; b < m.K; ++b)
            if (a != b && m.links[std::size_t{a} * m.K + b].empty())
                return fail(fmt::format("no channel from the box of processor {} to the box of processor {}", m.members[a][0], m.members[b][0]));
    m.dist.assign(std::size_t{m.P} * m.P, unset);
    m.order.resize(m.P);
    for (std::uint32_t s = 0; s < m.P; ++s) {
        std::queue<std::uint32_t> q;
        m.dist[std::size_t{s} * m.P + s] = 0;
        q.push(s);
        while (!q.empty()) {
            const std::uint32_t u = q.front();
            q.pop();
            if (u != s) m.order[s].push_back(u);
            for (const Hop& h : m.in_box[u])
                if (std::uint32_t& d = m.dist[std::size_t{s} * m.P + h.to]; d == unset) d = m.dist[std::size_t{s} * m.P + u] + 1, q.push(h.to);
        }
        if (m.order[s].size() + 1 != m.members[m.box[s]].size())
            return fail(fmt::format("processor {} does not reach every processor of its box over channels inside it", s));
    }
    return m;
}

/// Seconds per chunk each channel and link group has been given so far.
class Loads {
public:
    explicit Loads(const Topology& t) : t_(t) {
        const TimeOptions opt{1, std::nullopt};
        inv_c_.resize(t.channels().size()), inv_g_.resize(t.groups().size());
        for (std::uint32_t c = 0; c < inv_c_.size(); ++c) inv_c_[c] = 1 / channel_speed(t, ChannelId{c}, opt).bandwidth;
        for (std::uint32_t g = 0; g < inv_g_.size(); ++g) inv_g_[g] = 1 / group_speed(t, g, opt);
        load_c_.assign(inv_c_.size(), 0), load_g_.assign(inv_g_.size(), 0);
    }
    /// The busiest of c and its groups once one more chunk is on c.
    double after(ChannelId c) const {
        double worst = load_c_[idx(c)] + inv_c_[idx(c)];
        for (std::uint32_t g : t_.groups_of(c)) worst = std::max(worst, load_g_[g] + inv_g_[g]);
        return worst;
    }
    void add(ChannelId c) {
        load_c_[idx(c)] += inv_c_[idx(c)];
        for (std::uint32_t g : t_.groups_of(c)) load_g_[g] += inv_g_[g];
    }

private:
    const Topology& t_;
    std::vector<double> inv_c_, inv_g_, load_c_, load_g_;
};

struct Edge {
    std::uint32_t from, to;
    ChannelId channel;
};

/// One chunk's tree: the depth of every processor it reached (unset: not yet) and its edges.
struct Tree {
    std::vector<std::uint32_t> depth;
    std::vector<Edge> edges;
    void add(std::uint32_t u, std::uint32_t w, ChannelId c) { depth[w] = depth[u] + 1, edges.push_back({u, w, c}); }
};

/// Reaches the rest of r's box from r (in the tree) along shortest paths from r: each processor, nearest first, from
/// the parent one channel nearer r whose channel is least loaded (`avoid` only where it is the one such parent).
void spread(const Machine& m, Loads& loads, Tree& tree, std::uint32_t r, std::uint32_t avoid) {
    const std::uint32_t* dr = &m.dist[std::size_t{r} * m.P];
    for (std::uint32_t w : m.order[r]) {
        if (tree.depth[w] != unset) continue;
        const Hop* best = nullptr;
        std::uint32_t from = unset;
        double best_cost = std::numeric_limits<double>::infinity();
        bool best_avoided = true;
        for (std::uint32_t u : m.members[m.box[r]]) {
            if (tree.depth[u] == unset || dr[u] + 1 != dr[w]) continue;
            for (const Hop& h : m.in_box[u]) {
                if (h.to != w) continue;
                const bool avoided = u == avoid;
                const double cost = loads.after(h.channel);
                if ((best_avoided && !avoided) || (avoided == best_avoided && cost < best_cost)) best = &h, from = u, best_cost = cost, best_avoided = avoided;
            }
        }
        if (!best) continue;  // every parent nearer r is off the tree: the caller finds w off it
        loads.add(best->channel);
        tree.add(from, w, best->channel);
    }
}

}  // namespace

std::string link_trees_name(LinkTrees f) { return f == LinkTrees::shortest ? "shortest" : "balanced"; }

std::optional<SendTable> box_link_allgather(const SynthInstance& in, std::uint32_t chunks, LinkTrees form, std::string* why, Deadline deadline) {
    auto fail = [&](std::string w) -> std::optional<SendTable> {
        if (why) *why = std::move(w);
        return std::nullopt;
    };
    const Topology& t = *in.topology;
    if (in.collective.kind != CollectiveKind::allgather) return fail("link trees build allgather only");
    if (in.model.timing != Timing::hop || in.model.inject_once) return fail("hop timing only");
    const std::optional<Machine> found = machine_of(t, why);
    if (!found) return std::nullopt;
    const Machine& m = *found;
    Collective coll = in.collective;
    try {
        coll.set_chunks(chunks, t);
    } catch (const InputError& e) {
        return fail(e.what());
    }
    const Messages ms(m.P, nullptr, chunks);
    Plan plan(in.topology, in.model, coll, deadline);
    Loads loads(t);
    Tree tree{std::vector<std::uint32_t>(m.P, unset), {}};
    for (std::uint32_t c = 0; c < chunks; ++c)
        for (std::uint32_t s = 0; s < m.P; ++s) {
            std::ranges::fill(tree.depth, unset);
            tree.edges.clear();
            tree.depth[s] = 0;
            spread(m, loads, tree, s, unset);
            const std::uint32_t a = m.box[s];
            for (std::uint32_t i = 1; i < m.K; ++i) {
                // the link to box b whose sender is nearest the owner, the least loaded of those
                const std::uint32_t b = (a + i) % m.K;
                const Link* link = nullptr;
                double link_cost = std::numeric_limits<double>::infinity();
                for (const Link& l : m.links[std::size_t{a} * m.K + b]) {
                    const double cost = loads.after(l.channel);
                    if (!link || tree.depth[l.from] < tree.depth[link->from] || (tree.depth[l.from] == tree.depth[link->from] && cost < link_cost))
                        link = &l, link_cost = cost;
                }
                loads.add(link->channel);
                tree.add(link->from, link->to, link->channel);
                const std::uint32_t y = link->to;
                if (form == LinkTrees::shortest) {
                    spread(m, loads, tree, y, unset);
                    continue;
                }
                // the relay: y itself or one of its channels' ends in the box, in turn over the chunks (from the owner's
                // place on): every datum's forwarding spread evenly over the relays whatever order its chunks arrive in
                // (a relay chosen by the loads alone left the ports idle while the links sent one datum after another:
                // DGX-2 x 2 at 1 GB 9.2 ms against 7.76 ms)
                const std::vector<Hop>& near = m.in_box[y];
                const std::size_t k = (c + s) % (near.size() + 1);
                if (k > 0) {
                    loads.add(near[k - 1].channel);
                    tree.add(y, near[k - 1].to, near[k - 1].channel);
                }
                spread(m, loads, tree, k > 0 ? near[k - 1].to : y, y);
            }
            for (std::uint32_t x = 0; x < m.P; ++x)
                if (tree.depth[x] == unset) return fail(fmt::format("processor {} is off the tree of b({}, {})", x, s, c));
            for (const Edge& e : tree.edges) plan.send(tree.depth[e.to], Node{e.from}, Node{e.to}, static_cast<std::uint32_t>(idx(ms.broadcast(s, c))));
        }
    return plan.lower(why, deadline);
}

}  // namespace collsched::compose
