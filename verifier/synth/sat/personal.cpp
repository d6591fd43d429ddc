// The personalized encoding (EncodingKind::personal; docs/synthesis.md, "What is encoded"): every
// message on its fixed route, cut into segments where it may wait, each segment's start an order
// encoding over its window of steps.
//
// Exactness and clauses (moved from docs/synthesis.md, "What is encoded"; the user's summary stays there).
//
// Fixed routes are exact on trees with queues:
//
// On fat trees (`bft`, `cbft`, `ebft`, `fattree`, `ideal`) and `linear:N` the route is the only
// simple path. A chain from s to d crosses every channel of it, and the last crossing of each comes
// after the last crossing of the one before (after its last crossing of channel j the walk stays on
// d's side). Keeping only those last crossings gives a walk along the route with waits at its nodes:
// valid where every node may hold (processors; routers with `queues=unbounded`). So `personal` is
// exact for any route there (`fixed_routes_exact()`). Under `queues=none` it is not (a detour
// through a neighbour is a wait), so those trees and `ideal` get `free_route`; their optima in
// findings.md stand (counting bounds for any route).
//
// Personal: segment start steps, order encoded:
//
// A message with route c_1..c_k is cut into *segments*: a new one starts at hop j > 1 when the node
// between c_{j-1} and c_j can hold (a processor, or a router with `queues=unbounded`). A segment's
// trajectory is fixed by its start step (a queue-free router forwards in the next step), so **the only
// variables are segment start steps** (on a queue-free fat tree one injection step per message; with
// unbounded queues one per hop), each order-encoded over its window [j0+1, H-(k-1-j0)]. Segments of a
// message keep their order; per channel and step the segments crossing it stay within its capacity;
// `single` ports allow one send and one receive per processor and step, `half` one of the two;
// completion is `deadline[T] ->` every last segment started by T - len + 1.
//
// Implied constraints (--no-implied leaves them out; each follows from the constraints, no answer changes):
// - Personal, per channel or port with more uses than capacity (*cumulative capacity*): by step t
//   at most `cap * (t - e + 1)` uses are done (e: earliest use) and at most `cap * (l - t)` remain
//   (l: latest). Skipped above 64 hops per channel (ebft:64's root channels carry 1,024).
//
// Symmetry breaking (`--no-symmetry` leaves it out):
//
// Personal: rules 1 to 3; free route: rule 1 (a chain's k-th hop is at step >= k+1, so shifting stays
// in the windows). Each rule is justified by a transformation mapping any schedule completing by T to
// one satisfying it.
//
// 1. **Time shift**: some first hop happens in step 1 (if none, shift every transfer one step
//    earlier; the constraints are shift-invariant and data is held from time 0).
// 2. **Transitivity** (alltoall on bft, fattree, ideal): that hop is from processor 0 (the tree's
//    automorphisms act transitively on leaves, preserving routes, distances, capacities and the
//    goal set).
// 3. **Child order** (alltoall around processor 0; scatter and gather around the root): for every
//    router v whose subtree lacks the pivot p, with children a_1, a_2, ..., the earliest departure of
//    a message tied to a leaf under a_i is at most that for a_{i+1} (tied to d: m(p,d) for alltoall
//    and scatter, m(d,p) for gather): `by[m(p,d)][t] -> OR_{d' under a_i} by[m(p,d')][t]`. Argument:
//    top-down, permute v's children (an automorphism fixing p) to sort their earliest departures;
//    this permutes leaves inside subtree(v) only, so earlier rules stay true.
//
// Not used: time reversal (combining it soundly with rule 1 costs more than it saves), and
// symmetry breaking for dissemination.
#include "verifier/synth/sat/encode.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "support/assert.hpp"

namespace collsched::synth {

namespace {


/// One segment of a message's route: hops [j0, j0+len) cross their channels in consecutive
/// steps, starting at a step in [lo, hi]. order[t-lo] (t < hi) means "started by step t";
/// at_[t-lo] means "started exactly at step t".
struct Segment {
    std::uint32_t goal;
    std::uint32_t j0, len;
    Step lo, hi;
    std::vector<int> order;
    std::vector<int> at_;
    int by(std::int64_t t) const {
        if (t < lo) return -Formula::top;
        if (t >= hi) return Formula::top;
        return order[t - lo];
    }
    int at(std::int64_t t) const {
        if (t < lo || t > hi) return -Formula::top;
        return at_[t - lo];
    }
};

/// A load on a resource: segment s crosses it `off` steps after the segment starts.
struct Use {
    std::uint32_t seg;
    std::uint32_t off;
};

struct Resource {
    std::uint32_t cap;
    std::vector<Use> uses;
};

struct Tree {
    std::vector<std::vector<Node>> children;  // per node, sorted by smallest leaf below
    std::vector<std::vector<std::uint32_t>> leaves;
};

Tree tree_shape(const Topology& t) {
    Tree tr;
    tr.children.resize(t.nodes());
    tr.leaves.resize(t.nodes());
    for (const Channel& c : t.channels())
        if (t.level(c.to) < t.level(c.from)) tr.children[idx(c.from)].push_back(c.to);
    // Leaves bottom-up by level.
    std::vector<Node> order;
    for (std::uint32_t v = 0; v < t.nodes(); ++v) order.push_back(Node{v});
    std::sort(order.begin(), order.end(), [&](Node a, Node b) { return t.level(a) < t.level(b); });
    for (Node v : order) {
        if (t.is_processor(v)) {
            tr.leaves[idx(v)] = {idx(v)};
            continue;
        }
        auto& ch = tr.children[idx(v)];
        std::sort(ch.begin(), ch.end(), [&](Node a, Node b) { return tr.leaves[idx(a)].front() < tr.leaves[idx(b)].front(); });
        for (Node c : ch) {
            const auto& l = tr.leaves[idx(c)];
            tr.leaves[idx(v)].insert(tr.leaves[idx(v)].end(), l.begin(), l.end());
        }
        std::sort(tr.leaves[idx(v)].begin(), tr.leaves[idx(v)].end());
    }
    return tr;
}

/// The personalized encoding (docs/synthesis.md, "What is encoded"): every goal's message follows its
/// fixed route, cut into segments at the nodes where it may wait; a segment's start is an order
/// encoding over its window of steps. One method per constraint family, called in order by
/// encode().
class PersonalEncoder : EncoderBase {
public:
    PersonalEncoder(const SynthInstance& in, Step H, const SynthOptions& opt, Encoding& e)
        : EncoderBase(in, H, opt, e) {}

    void encode() {
        e_.fixed_routes = true;
        collect_goals();
        if (H_ < longest_) {
            f_.clause({});
            return;
        }
        cut_segments();
        start_literals();
        segments_in_order();
        resources();
        if (opt_.symmetry) symmetry();
        deadlines();
        decoding();
    }

private:
    struct Goal {
        MessageId m;
        Node src, dst;
        std::vector<ChannelId> route;
        std::uint32_t first_seg, segs;
    };

    void collect_goals() {
        Messages ms = in_.collective.messages(topo_.processors());
        in_.collective.for_each_goal(topo_.processors(), [&](MessageId m, Node d) {
            if (goals_.size() % 1024 == 0) check_deadline(opt_);
            goals_.push_back({m, ms.origin(m), d, topo_.route(ms.origin(m), d), 0, 0});
        });
        check_deadline(opt_);
        for (const Goal& g : goals_) longest_ = std::max<Step>(longest_, static_cast<Step>(g.route.size()));
        e_.min_horizon = longest_;
    }

    /// Segments: a new one starts at every hop leaving a node where the message may wait.
    void cut_segments() {
        for (std::uint32_t gi = 0; gi < goals_.size(); ++gi) {
            if (gi % 256 == 0) check_deadline(opt_);
            Goal& g = goals_[gi];
            const std::uint32_t k = static_cast<std::uint32_t>(g.route.size());
            g.first_seg = static_cast<std::uint32_t>(segs_.size());
            std::uint32_t j0 = 0;
            for (std::uint32_t j = 1; j <= k; ++j) {
                bool cut = j == k;
                if (!cut) {
                    Node at = topo_.channel(g.route[j]).from;
                    cut = topo_.is_processor(at) || model_.queues != QueueKind::none;
                }
                if (!cut) continue;
                Segment s{gi, j0, j - j0, j0 + 1, H_ - (k - 1 - j0), {}, {}};
                segs_.push_back(std::move(s));
                j0 = j;
            }
            g.segs = static_cast<std::uint32_t>(segs_.size()) - g.first_seg;
        }
    }

    /// Order encoding of each segment's start, and the exact "starts at t" literals.
    void start_literals() {
        std::size_t seen = 0;
        for (Segment& s : segs_) {
            if (++seen % 1024 == 0) check_deadline(opt_);
            for (Step t = s.lo; t < s.hi; ++t) s.order.push_back(f_.new_var());
            for (std::size_t i = 0; i + 1 < s.order.size(); ++i) f_.clause({-s.order[i], s.order[i + 1]});
            for (Step t = s.lo; t <= s.hi; ++t) {
                int now = s.by(t), before = s.by(static_cast<std::int64_t>(t) - 1);
                int x = f_.and_of(now, -before);
                s.at_.push_back(x);
            }
        }
    }

    /// Segments of one message in order: the next starts after the previous has ended.
    void segments_in_order() {
        for (std::size_t gi = 0; gi < goals_.size(); ++gi) {
            if (gi % 1024 == 0) check_deadline(opt_);
            const Goal& g = goals_[gi];
            for (std::uint32_t i = 1; i < g.segs; ++i) {
                const Segment& a = segs_[g.first_seg + i - 1];
                const Segment& b = segs_[g.first_seg + i];
                for (Step t = b.lo; t <= b.hi; ++t) f_.clause({-b.by(t), a.by(static_cast<std::int64_t>(t) - a.len)});
            }
        }
    }

    /// Resources: channels, then processor ports; each with the segments that load it.
    void resources() {
        std::vector<Resource> res(topo_.channels().size());
        for (std::size_t c = 0; c < res.size(); ++c) res[c].cap = topo_.channels()[c].cap;
        const std::size_t P = topo_.processors();
        std::size_t send0 = res.size(), recv0 = res.size();
        if (model_.ports == Ports::single) {
            send0 = res.size();
            recv0 = send0 + P;
            res.resize(res.size() + 2 * P, Resource{1, {}});
        } else if (model_.ports == Ports::half) {
            send0 = recv0 = res.size();
            res.resize(res.size() + P, Resource{1, {}});
        }
        for (std::uint32_t si = 0; si < segs_.size(); ++si) {
            if (si % 1024 == 0) check_deadline(opt_);
            const Segment& s = segs_[si];
            const Goal& g = goals_[s.goal];
            for (std::uint32_t j = s.j0; j < s.j0 + s.len; ++j) {
                const Channel& ch = topo_.channel(g.route[j]);
                res[idx(g.route[j])].uses.push_back({si, j - s.j0});
                if (model_.ports != Ports::multi) {
                    // A single-port limit equal to a single channel of capacity 1 adds nothing.
                    auto same = [&](std::span<const ChannelId> cs) {
                        return model_.ports == Ports::single && cs.size() == 1 && topo_.channel(cs[0]).cap <= 1;
                    };
                    if (topo_.is_processor(ch.from) && !same(topo_.out_channels(ch.from)))
                        res[send0 + idx(ch.from)].uses.push_back({si, j - s.j0});
                    if (topo_.is_processor(ch.to) && !same(topo_.in_channels(ch.to)))
                        res[recv0 + idx(ch.to)].uses.push_back({si, j - s.j0});
                }
            }
        }
        std::size_t implied = 0;
        for (const Resource& r : res) {
            check_deadline(opt_);
            if (r.uses.size() <= r.cap) continue;
            capacity(r);
            if (opt_.implied) implied += cumulative(r);
        }
        if (opt_.implied) e_.notes.push_back(fmt::format("implied: {} cumulative counting constraints", implied));
    }

    /// At most cap uses of the resource in every step.
    void capacity(const Resource& r) {
        std::vector<std::vector<int>> per_step(H_ + 1);
        std::size_t seen = 0;
        for (const Use& u : r.uses) {
            if (++seen % 4096 == 0) check_deadline(opt_);
            const Segment& s = segs_[u.seg];
            for (Step t = s.lo; t <= s.hi; ++t) per_step[t + u.off].push_back(s.at(t));
        }
        for (Step t = 1; t <= H_; ++t) f_.at_most(std::move(per_step[t]), r.cap);
    }

    /// Cumulative counting (implied): by step t at most cap*(t-emin+1) uses are done, and at most
    /// cap*(lmax-t) are still to come. Each constraint costs about n * min(k, n - k) clauses in
    /// CNF: skip resources where the counters would dwarf the rest of the formula (they are
    /// implied, so leaving them out is safe). Returns the cardinality constraints added.
    std::size_t cumulative(const Resource& r) {
        Step emin = H_, lmax = 0;
        for (const Use& u : r.uses) {
            const Segment& s = segs_[u.seg];
            emin = std::min<Step>(emin, s.lo + u.off);
            lmax = std::max<Step>(lmax, s.hi + u.off);
        }
        if (r.uses.size() * std::min<std::size_t>(r.uses.size(), 64) > 4096) return 0;
        std::size_t implied = 0;
        for (Step t = emin; t < lmax; ++t) {
            check_deadline(opt_);
            std::vector<int> done, todo;
            for (const Use& u : r.uses) {
                int b = segs_[u.seg].by(static_cast<std::int64_t>(t) - u.off);
                done.push_back(b);
                todo.push_back(-b);
            }
            std::size_t before = f_.cards().size();
            f_.at_most(std::move(done), static_cast<std::int64_t>(r.cap) * (t - emin + 1));
            f_.at_most(std::move(todo), static_cast<std::int64_t>(r.cap) * (lmax - t));
            implied += f_.cards().size() - before;
        }
        return implied;
    }

    /// Symmetry breaking (docs/synthesis.md, "Symmetry"). Time shift: a schedule without a
    /// transfer in step 1 can be moved one step earlier, so some first hop happens in step 1.
    void symmetry() {
        std::vector<int> first;
        const bool tree = topo_.is_tree() && topo_.family() != Family::graph;
        const CollectiveKind ck = in_.collective.kind;
        // On trees, alltoall: any leaf can be mapped onto processor 0 by an automorphism.
        std::size_t seen = 0;
        for (const Goal& g : goals_) {
            if (++seen % 4096 == 0) check_deadline(opt_);
            if (!(tree && ck == CollectiveKind::alltoall) || idx(g.src) == 0) first.push_back(segs_[g.first_seg].at(1));
        }
        if (!first.empty()) {
            f_.clause(first);
            e_.notes.push_back("symmetry: some first hop in step 1 (time shift)");
        }
        if (tree) child_order();
    }

    /// Pivot p: processor 0 (alltoall) or the root of scatter/gather. For every router v whose
    /// subtree does not contain p, the messages tied to the leaves of v's children leave their
    /// source in child order (first departures non-decreasing).
    void child_order() {
        const CollectiveKind ck = in_.collective.kind;
        const std::size_t P = topo_.processors();
        Node pivot = ck == CollectiveKind::alltoall ? Node{0} : in_.collective.root;
        std::vector<int> seg_of_leaf(P, -1);
        check_deadline(opt_);
        for (const Goal& g : goals_) {
            if (ck == CollectiveKind::gather) {
                if (g.dst == pivot) seg_of_leaf[idx(g.src)] = static_cast<int>(g.first_seg);
            } else if (g.src == pivot) {
                seg_of_leaf[idx(g.dst)] = static_cast<int>(g.first_seg);
            }
        }
        Tree tr = tree_shape(topo_);
        std::size_t rules = 0;
        for (std::uint32_t v = static_cast<std::uint32_t>(P); v < topo_.nodes(); ++v) {
            const auto& lv = tr.leaves[v];
            if (std::binary_search(lv.begin(), lv.end(), idx(pivot))) continue;
            const auto& ch = tr.children[v];
            for (std::size_t i = 0; i + 1 < ch.size(); ++i) {
                check_deadline(opt_);
                for (Step t = 1; t <= H_; ++t) {
                    std::vector<int> left;
                    for (std::uint32_t d : tr.leaves[idx(ch[i])]) left.push_back(segs_[seg_of_leaf[d]].by(t));
                    int any_left = f_.or_of(left);
                    for (std::uint32_t d : tr.leaves[idx(ch[i + 1])]) f_.clause({-segs_[seg_of_leaf[d]].by(t), any_left});
                }
                ++rules;
            }
        }
        e_.notes.push_back(fmt::format("symmetry: {} child-order rules around processor {}", rules, idx(pivot)));
    }

    /// Deadlines: the last segment of every message ends by T.
    void deadlines() {
        e_.deadline.assign(H_ + 1, 0);
        for (Step T = longest_; T < H_; ++T) {
            check_deadline(opt_);
            int d = f_.new_var();
            e_.deadline[T] = d;
            for (const Goal& g : goals_) {
                const Segment& s = segs_[g.first_seg + g.segs - 1];
                f_.clause({-d, s.by(static_cast<std::int64_t>(T) - s.len + 1)});
            }
        }
    }

    /// Decoding: a segment starting at t puts its hops in steps t, t+1, ...
    void decoding() {
        std::size_t seen = 0;
        for (const Segment& s : segs_) {
            if (++seen % 1024 == 0) check_deadline(opt_);
            const Goal& g = goals_[s.goal];
            for (Step t = s.lo; t <= s.hi; ++t) {
                Candidate c{s.at(t), static_cast<std::uint32_t>(e_.pool.size()), s.len, t + s.len - 1};
                for (std::uint32_t j = 0; j < s.len; ++j) e_.pool.push_back({t + j, g.route[s.j0 + j], g.m});
                e_.candidates.push_back(c);
            }
        }
    }

    std::vector<Goal> goals_;
    std::vector<Segment> segs_;
    Step longest_ = 0;
};

}  // namespace

void encode_personal(const SynthInstance& in, Step H, const SynthOptions& opt, Encoding& e) { PersonalEncoder(in, H, opt, e).encode(); }

}  // namespace collsched::synth
