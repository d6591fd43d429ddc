#include "compiler/lower/arbitrate.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>
#include <unordered_map>

namespace collsched::compiler {

namespace {

/// The fifo and flood policies. Every outgoing channel has a queue; a message joins the queue
/// of the first channel of its route in the step its send is issued, and the queue of the
/// next channel in the step after it crossed one (a message that arrives at the end of step t
/// may leave at t+1). In each step a channel forwards up to its capacity (less the explicit
/// hops on it in that step) from the head of its queue. Queue order: earlier arrival first
/// (FIFO); at equal arrival, the larger remaining distance first, then the lower message id,
/// then the send written first.
///
/// Under flood, the sends of one message by one processor in one step are one multicast: the
/// union of their routes is a tree, a copy crosses each of its channels once, and a copy that
/// crosses a channel joins the queues of all the tree's channels after it (the router
/// replicates). Its remaining distance is the longest route still ahead of it. Both policies
/// walk a forest of route trees: under fifo every send is a chain of its own.
void arbitrate_fifo(const Topology& topo, std::span<const FifoSend> sends, std::span<const std::uint32_t> send_origins,
                    const ExplicitHops& explicit_hops, bool flood_policy, TransferSink& sink, Reporter& reporter) {
    const bool record = !send_origins.empty();
    struct TreeNode {
        ChannelId channel;
        std::uint32_t remaining;         // the longest route ahead, this channel included
        std::uint32_t kids = 0, kids_n = 0;  // range of `kids`
    };
    struct Unit {
        Step issue;
        MessageId message;
        std::uint32_t roots = 0, roots_n = 0;  // range of `kids`
    };
    std::vector<TreeNode> tree;
    std::vector<std::uint32_t> kids;
    std::vector<Unit> units;
    std::vector<ChannelId> route;
    std::vector<std::uint32_t> tree_origin;  // recording: per tree node, the send whose route added it
    const bool flood = flood_policy;
    // Group sends into units: one per send (fifo), one per (step, source, message) (flood).
    std::vector<std::uint32_t> order(sends.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    auto key = [&](std::uint32_t i) { return std::tuple(sends[i].issue, idx(sends[i].src), idx(sends[i].message)); };
    if (flood) std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return key(a) < key(b); });
    std::vector<std::pair<std::uint32_t, std::uint32_t>> unit_of_first;  // (first send index, unit) to number units in program order
    for (std::size_t g = 0; g < order.size();) {
        std::size_t h = g + 1;
        if (flood)
            while (h < order.size() && key(order[h]) == key(order[g])) ++h;
        // The union of the group's routes: per channel, the channels after it.
        std::vector<ChannelId> chans;                          // tree nodes of this unit, in discovery order
        std::unordered_map<std::uint32_t, std::uint32_t> at;   // channel -> position in chans
        std::vector<std::vector<std::uint32_t>> next;          // position -> positions after it
        std::vector<std::uint32_t> remaining, roots, origin;
        for (std::size_t k = g; k < h; ++k) {
            const FifoSend& f = sends[order[k]];
            route.clear();
            topo.route(f.src, f.dst, route);
            std::uint32_t prev = none;
            for (std::size_t j = 0; j < route.size(); ++j) {
                auto [it, fresh] = at.emplace(idx(route[j]), static_cast<std::uint32_t>(chans.size()));
                if (fresh) {
                    chans.push_back(route[j]);
                    next.emplace_back();
                    remaining.push_back(0);
                    if (record) origin.push_back(send_origins[order[k]]);
                }
                std::uint32_t pos = it->second;
                remaining[pos] = std::max(remaining[pos], static_cast<std::uint32_t>(route.size() - j));
                auto& list = prev == none ? roots : next[prev];
                if (std::find(list.begin(), list.end(), pos) == list.end()) list.push_back(pos);
                prev = pos;
            }
        }
        auto base = static_cast<std::uint32_t>(tree.size());
        for (std::size_t p = 0; p < chans.size(); ++p) {
            TreeNode node{chans[p], remaining[p]};
            node.kids = static_cast<std::uint32_t>(kids.size());
            node.kids_n = static_cast<std::uint32_t>(next[p].size());
            for (std::uint32_t q : next[p]) kids.push_back(base + q);
            tree.push_back(node);
            if (record) tree_origin.push_back(origin[p]);
        }
        Unit u{sends[order[g]].issue, sends[order[g]].message};
        u.roots = static_cast<std::uint32_t>(kids.size());
        u.roots_n = static_cast<std::uint32_t>(roots.size());
        for (std::uint32_t q : roots) kids.push_back(base + q);
        unit_of_first.emplace_back(*std::min_element(order.begin() + static_cast<std::ptrdiff_t>(g), order.begin() + static_cast<std::ptrdiff_t>(h)),
                                   static_cast<std::uint32_t>(units.size()));
        units.push_back(u);
        g = h;
    }
    // Units rank by the send written first (the last tie-break of the queue order).
    std::sort(unit_of_first.begin(), unit_of_first.end());
    std::vector<std::uint32_t> rank(units.size());
    for (std::uint32_t r = 0; r < unit_of_first.size(); ++r) rank[unit_of_first[r].second] = r;

    struct Entry {
        Step ready;
        std::uint32_t remaining;
        MessageId message;
        std::uint32_t rank;
        std::uint32_t node;
    };
    auto later = [](const Entry& a, const Entry& b) {  // heap order: the top is the first to go
        if (a.ready != b.ready) return a.ready > b.ready;
        if (a.remaining != b.remaining) return a.remaining < b.remaining;
        if (a.message != b.message) return idx(a.message) > idx(b.message);
        return a.rank > b.rank;
    };
    std::vector<std::vector<Entry>> queue(topo.channels().size());
    std::vector<std::uint32_t> active;
    std::vector<char> is_active(queue.size(), 0);
    auto enqueue = [&](Entry e) {
        std::uint32_t c = idx(tree[e.node].channel);
        auto& q = queue[c];
        q.push_back(e);
        std::push_heap(q.begin(), q.end(), later);
        if (!is_active[c]) {
            is_active[c] = 1;
            active.push_back(c);
        }
    };
    Step t = std::numeric_limits<Step>::max();
    for (std::uint32_t u = 0; u < units.size(); ++u) {
        for (std::uint32_t k = 0; k < units[u].roots_n; ++k) {
            std::uint32_t node = kids[units[u].roots + k];
            enqueue({units[u].issue, tree[node].remaining, units[u].message, rank[u], node});
        }
        t = std::min(t, units[u].issue);
    }
    while (!active.empty()) {
        std::sort(active.begin(), active.end());
        std::vector<std::uint32_t> now;
        now.swap(active);
        for (std::uint32_t c : now) is_active[c] = 0;
        for (std::uint32_t c : now) {
            auto& q = queue[c];
            std::int64_t room = topo.channel(ChannelId{c}).cap;
            if (auto it = explicit_hops.find((std::uint64_t{t} << 32) | c); it != explicit_hops.end()) room -= it->second;
            while (!q.empty() && q.front().ready <= t && room > 0) {
                std::pop_heap(q.begin(), q.end(), later);
                Entry e = q.back();
                q.pop_back();
                --room;
                sink.push({t, ChannelId{c}, e.message});
                if (record) sink.origin(1, tree_origin[e.node]);
                const TreeNode& node = tree[e.node];
                if (node.kids_n > 0 && t + 1 >= max_step) {
                    reporter.report("E025", {}, "the fifo lowering runs past step 2^31");
                    throw Stop{};
                }
                for (std::uint32_t k = 0; k < node.kids_n; ++k) {
                    std::uint32_t child = kids[node.kids + k];
                    enqueue({t + 1, tree[child].remaining, e.message, e.rank, child});
                }
            }
            if (!q.empty() && !is_active[c]) {
                is_active[c] = 1;
                active.push_back(c);
            }
        }
        Step next = std::numeric_limits<Step>::max();
        for (std::uint32_t c : active) next = std::min(next, queue[c].front().ready);
        t = std::max(t + 1, next);
    }
}

/// The adaptive policy (the Connection Machine router, Stanfill 1987): every node keeps one
/// queue of the messages it holds for forwarding. In each step each node, in queue order
/// (earlier arrival first; then the larger remaining distance, the lower message id, the send
/// written first), sends every message it can over a channel that brings it one step closer
/// to its destination and still has room in that step: the channel of the topology's route
/// first, else the other such channels in the order of their far end. A message that finds
/// no room waits (it is buffered) and tries again in the next step. A message that reaches
/// a node at the end of step t joins its queue for step t+1; at its destination it leaves.
void arbitrate_adaptive(const Topology& topo, std::span<const FifoSend> sends, std::span<const std::uint32_t> send_origins,
                        const ExplicitHops& explicit_hops, TransferSink& sink, Reporter& reporter) {
    const bool record = !send_origins.empty();
    struct Entry {
        Step ready;
        std::uint32_t remaining;
        MessageId message;
        std::uint32_t send;
    };
    auto before = [](const Entry& a, const Entry& b) {
        if (a.ready != b.ready) return a.ready < b.ready;
        if (a.remaining != b.remaining) return a.remaining > b.remaining;
        if (a.message != b.message) return idx(a.message) < idx(b.message);
        return a.send < b.send;
    };
        std::vector<std::vector<Entry>> queue(topo.nodes());
    std::vector<std::uint32_t> active;
    std::vector<char> is_active(topo.nodes(), 0);
    auto enqueue = [&](std::uint32_t v, Entry e) {
        queue[v].push_back(e);
        if (!is_active[v]) {
            is_active[v] = 1;
            active.push_back(v);
        }
    };
    Step t = std::numeric_limits<Step>::max();
    for (std::uint32_t i = 0; i < sends.size(); ++i) {
        const FifoSend& f = sends[i];
        enqueue(idx(f.src), {f.issue, topo.distance(f.src, f.dst), f.message, i});
        t = std::min(t, f.issue);
    }
    std::vector<std::int64_t> room(topo.channels().size());
    std::vector<Step> stamp(topo.channels().size(), 0);  // the step room[c] is for
    std::vector<ChannelId> route;
    while (!active.empty()) {
        std::sort(active.begin(), active.end());
        std::vector<std::uint32_t> now;
        now.swap(active);
        for (std::uint32_t v : now) is_active[v] = 0;
        auto room_of = [&](ChannelId c) -> std::int64_t& {
            std::uint32_t k = idx(c);
            if (stamp[k] != t) {
                stamp[k] = t;
                room[k] = topo.channel(c).cap;
                if (auto it = explicit_hops.find((std::uint64_t{t} << 32) | k); it != explicit_hops.end()) room[k] -= it->second;
            }
            return room[k];
        };
        std::vector<std::pair<std::uint32_t, Entry>> arrivals;
        for (std::uint32_t v : now) {
            auto& q = queue[v];
            std::sort(q.begin(), q.end(), before);
            std::vector<Entry> stay;
            for (const Entry& e : q) {
                if (e.ready > t) {
                    stay.push_back(e);
                    continue;
                }
                Node dst = sends[e.send].dst;
                route.clear();
                topo.route(Node{v}, dst, route);
                std::optional<ChannelId> pick;
                if (room_of(route.front()) > 0) pick = route.front();
                for (ChannelId c : topo.out_channels(Node{v})) {
                    if (pick) break;
                    Node w = topo.channel(c).to;
                    if (topo.distance(w, dst) + 1 == e.remaining && room_of(c) > 0) pick = c;
                }
                if (!pick) {
                    stay.push_back(e);
                    continue;
                }
                --room_of(*pick);
                sink.push({t, *pick, e.message});
                if (record) sink.origin(1, send_origins[e.send]);
                Node w = topo.channel(*pick).to;
                if (w != dst) {
                    if (t + 1 >= max_step) {
                        reporter.report("E025", {}, "the adaptive lowering runs past step 2^31");
                        throw Stop{};
                    }
                    arrivals.emplace_back(idx(w), Entry{t + 1, e.remaining - 1, e.message, e.send});
                }
            }
            q.swap(stay);
            if (!q.empty() && !is_active[v]) {
                is_active[v] = 1;
                active.push_back(v);
            }
        }
        for (auto& [v, e] : arrivals) enqueue(v, e);
        Step next = std::numeric_limits<Step>::max();
        for (std::uint32_t v : active)
            for (const Entry& e : queue[v]) next = std::min(next, e.ready);
        t = std::max(t + 1, next);
    }
}

}  // namespace

void arbitrate(Evaluated& ev, Reporter& reporter) {
    switch (ev.policy) {
        case LoweringPolicy::cut_through: return;
        case LoweringPolicy::fifo:
        case LoweringPolicy::flood:
            arbitrate_fifo(*ev.topology, ev.sends, ev.send_origins, ev.explicit_hops, ev.policy == LoweringPolicy::flood, ev.sink, reporter);
            return;
        case LoweringPolicy::adaptive:
            arbitrate_adaptive(*ev.topology, ev.sends, ev.send_origins, ev.explicit_hops, ev.sink, reporter);
            return;
    }
}

}  // namespace collsched::compiler
