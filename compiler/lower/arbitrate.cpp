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
namespace {

/// arbitrate_fifo's state, one method per stage, called in order by run(): the units (one per
/// send under fifo, one per (step, source, message) under flood) with their route trees, their
/// ranks, then the channel queues step by step.
class FifoArbiter {
public:
    FifoArbiter(const Topology& topo, std::span<const FifoSend> sends, std::span<const std::uint32_t> send_origins,
                const ExplicitHops& explicit_hops, bool flood, TransferSink& sink, Reporter& reporter)
        : topo_(topo), sends_(sends), send_origins_(send_origins), explicit_hops_(explicit_hops), flood_(flood), sink_(sink),
          reporter_(reporter), record_(!send_origins.empty()), queue_(topo.channels().size()), is_active_(topo.channels().size(), 0) {}

    void run() {
        units();
        rank_units();
        arbitrate();
    }

private:
    struct TreeNode {
        ChannelId channel;
        std::uint32_t remaining;             // the longest route ahead, this channel included
        std::uint32_t kids = 0, kids_n = 0;  // range of `kids_`
    };
    struct Unit {
        Step issue;
        MessageId message;
        std::uint32_t roots = 0, roots_n = 0;  // range of `kids_`
    };
    struct Entry {
        Step ready;
        std::uint32_t remaining;
        MessageId message;
        std::uint32_t rank;
        std::uint32_t node;
    };
    static bool later(const Entry& a, const Entry& b) {  // heap order: the top is the first to go
        if (a.ready != b.ready) return a.ready > b.ready;
        if (a.remaining != b.remaining) return a.remaining < b.remaining;
        if (a.message != b.message) return idx(a.message) > idx(b.message);
        return a.rank > b.rank;
    }
    auto key(std::uint32_t i) const { return std::tuple(sends_[i].issue, idx(sends_[i].src), idx(sends_[i].message)); }

    /// Groups sends into units: one per send (fifo), one per (step, source, message) (flood).
    void units() {
        order_.resize(sends_.size());
        for (std::uint32_t i = 0; i < order_.size(); ++i) order_[i] = i;
        if (flood_) std::stable_sort(order_.begin(), order_.end(), [&](std::uint32_t a, std::uint32_t b) { return key(a) < key(b); });
        for (std::size_t g = 0; g < order_.size();) {
            std::size_t h = g + 1;
            if (flood_)
                while (h < order_.size() && key(order_[h]) == key(order_[g])) ++h;
            add_unit(g, h);
            g = h;
        }
    }

    /// The unit of sends order_[g .. h): the union of their routes (per channel, the channels after it).
    void add_unit(std::size_t g, std::size_t h) {
        // The union of the group's routes: per channel, the channels after it.
        std::vector<ChannelId> chans;                          // tree nodes of this unit, in discovery order
        std::unordered_map<std::uint32_t, std::uint32_t> at;   // channel -> position in chans
        std::vector<std::vector<std::uint32_t>> next;          // position -> positions after it
        std::vector<std::uint32_t> remaining, roots, origin;
        for (std::size_t k = g; k < h; ++k) {
            const FifoSend& f = sends_[order_[k]];
            route_.clear();
            topo_.route(f.src, f.dst, route_);
            std::uint32_t prev = none;
            for (std::size_t j = 0; j < route_.size(); ++j) {
                auto [it, fresh] = at.emplace(idx(route_[j]), static_cast<std::uint32_t>(chans.size()));
                if (fresh) {
                    chans.push_back(route_[j]);
                    next.emplace_back();
                    remaining.push_back(0);
                    if (record_) origin.push_back(send_origins_[order_[k]]);
                }
                std::uint32_t pos = it->second;
                remaining[pos] = std::max(remaining[pos], static_cast<std::uint32_t>(route_.size() - j));
                auto& list = prev == none ? roots : next[prev];
                if (std::find(list.begin(), list.end(), pos) == list.end()) list.push_back(pos);
                prev = pos;
            }
        }
        auto base = static_cast<std::uint32_t>(tree_.size());
        for (std::size_t p = 0; p < chans.size(); ++p) {
            TreeNode node{chans[p], remaining[p]};
            node.kids = static_cast<std::uint32_t>(kids_.size());
            node.kids_n = static_cast<std::uint32_t>(next[p].size());
            for (std::uint32_t q : next[p]) kids_.push_back(base + q);
            tree_.push_back(node);
            if (record_) tree_origin_.push_back(origin[p]);
        }
        Unit u{sends_[order_[g]].issue, sends_[order_[g]].message};
        u.roots = static_cast<std::uint32_t>(kids_.size());
        u.roots_n = static_cast<std::uint32_t>(roots.size());
        for (std::uint32_t q : roots) kids_.push_back(base + q);
        unit_of_first_.emplace_back(*std::min_element(order_.begin() + static_cast<std::ptrdiff_t>(g), order_.begin() + static_cast<std::ptrdiff_t>(h)),
                                   static_cast<std::uint32_t>(units_.size()));
        units_.push_back(u);
    }

    /// Units rank by the send written first (the last tie-break of the queue order).
    void rank_units() {
        std::sort(unit_of_first_.begin(), unit_of_first_.end());
        rank_.resize(units_.size());
        for (std::uint32_t r = 0; r < unit_of_first_.size(); ++r) rank_[unit_of_first_[r].second] = r;
    }

    void enqueue(Entry e) {
        std::uint32_t c = idx(tree_[e.node].channel);
        auto& q = queue_[c];
        q.push_back(e);
        std::push_heap(q.begin(), q.end(), later);
        if (!is_active_[c]) {
            is_active_[c] = 1;
            active_.push_back(c);
        }
    }

    /// Step by step, every active channel sends the first of its queue up to its capacity
    /// (less the explicit hops on it), and each copy joins the queues of the channels after it.
    void arbitrate() {
        Step t = std::numeric_limits<Step>::max();
        for (std::uint32_t u = 0; u < units_.size(); ++u) {
            for (std::uint32_t k = 0; k < units_[u].roots_n; ++k) {
                std::uint32_t node = kids_[units_[u].roots + k];
                enqueue({units_[u].issue, tree_[node].remaining, units_[u].message, rank_[u], node});
            }
            t = std::min(t, units_[u].issue);
        }
        while (!active_.empty()) {
            std::sort(active_.begin(), active_.end());
            std::vector<std::uint32_t> now;
            now.swap(active_);
            for (std::uint32_t c : now) is_active_[c] = 0;
            for (std::uint32_t c : now) {
                auto& q = queue_[c];
                std::int64_t room = topo_.channel(ChannelId{c}).cap;
                if (auto it = explicit_hops_.find((std::uint64_t{t} << 32) | c); it != explicit_hops_.end()) room -= it->second;
                while (!q.empty() && q.front().ready <= t && room > 0) {
                    std::pop_heap(q.begin(), q.end(), later);
                    Entry e = q.back();
                    q.pop_back();
                    --room;
                    sink_.push({t, ChannelId{c}, e.message});
                    if (record_) sink_.origin(1, tree_origin_[e.node]);
                    const TreeNode& node = tree_[e.node];
                    if (node.kids_n > 0 && t + 1 >= max_step) {
                        reporter_.report("E025", {}, "the fifo lowering runs past step 2^31");
                        throw Stop{};
                    }
                    for (std::uint32_t k = 0; k < node.kids_n; ++k) {
                        std::uint32_t child = kids_[node.kids + k];
                        enqueue({t + 1, tree_[child].remaining, e.message, e.rank, child});
                    }
                }
                if (!q.empty() && !is_active_[c]) {
                    is_active_[c] = 1;
                    active_.push_back(c);
                }
            }
            Step next = std::numeric_limits<Step>::max();
            for (std::uint32_t c : active_) next = std::min(next, queue_[c].front().ready);
            t = std::max(t + 1, next);
        }
    }

    const Topology& topo_;
    std::span<const FifoSend> sends_;
    std::span<const std::uint32_t> send_origins_;
    const ExplicitHops& explicit_hops_;
    const bool flood_;
    TransferSink& sink_;
    Reporter& reporter_;
    const bool record_;  ///< origins are recorded
    std::vector<TreeNode> tree_;
    std::vector<std::uint32_t> kids_;
    std::vector<Unit> units_;
    std::vector<ChannelId> route_;
    std::vector<std::uint32_t> tree_origin_;  ///< recording: per tree node, the send whose route added it
    std::vector<std::uint32_t> order_;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> unit_of_first_;  ///< (first send index, unit) to number units in program order
    std::vector<std::uint32_t> rank_;
    std::vector<std::vector<Entry>> queue_;
    std::vector<std::uint32_t> active_;
    std::vector<char> is_active_;
};

}  // namespace

void arbitrate_fifo(const Topology& topo, std::span<const FifoSend> sends, std::span<const std::uint32_t> send_origins,
                    const ExplicitHops& explicit_hops, bool flood_policy, TransferSink& sink, Reporter& reporter) {
    FifoArbiter(topo, sends, send_origins, explicit_hops, flood_policy, sink, reporter).run();
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
