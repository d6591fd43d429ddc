// The encodings over holdings and crossings (docs/synthesis.md): dissemination and free_route
// (hold[i][v][t], cross[i][c][t]), and end_to_end (fixed routes, one start per message and goal).
//
// Exactness and clauses (moved from docs/synthesis.md, "What is encoded"; the user's summary stays there).
//
// One copy along one walk is enough (personalized messages):
//
// Take a table completing a personalized collective by T. For each m(s,d) follow the copy that
// reaches d first backwards (at a holder: its first arrival there; at a queue-free router: the
// arrival of the step before; under `replicate=no`: the FIFO-matched arrival) to s: a *chain*, one
// copy on one walk with increasing steps. Delete every other transfer of m. Capacities and ports
// only lose load, causality holds along the chain, a router sees one arrival then one departure per
// visit (`replicate=no` and `queues=none` hold), completion is unchanged. So the optimum over all
// tables equals the optimum over chain tables, and an encoding that admits every chain table and
// decodes every solution to a valid table is exact for route space `any`. Replicate is irrelevant.
//
// Free route: holding and crossing per message:
//
// The dissemination encoding below with one goal per message. Holders are processors and routers with
// `queues=unbounded` (either `replicate`: a chain visits a holding router once); through a queue-free
// router a send in step t needs an arrival in t-1. `cross[m][u->v][t]` exists only for dist(s,u)+1 <= t
// <= H - dist(v,d), never out of d nor into s, and `hold[m][v][t]` only where dist(s,v) + dist(v,d) <= H
// (a chain cannot be faster). Dominance: no transfer of m into a holder that holds it. Capacity per
// channel and step, ports per processor and step, goals `deadline[T] -> hold[m][d][T]`. Decoding keeps
// per message the chain back from the goal's first arrival. Every chain table satisfies the constraints
// and every solution decodes to one: exact for `any`.
//
// Dissemination: holding and crossing:
//
// `hold[m][v][t]` for holders v (processors; routers when replicate=yes and queues unbounded) from
// dist(origin, v) (the origin holds from 0), `cross[m][u->v][t]` from dist(origin, u)+1, never into the
// origin. A crossing needs the sender to hold m the step before (out of a queue-free replicating router:
// an arrival the step before); holding is exact (kept once held; held only if held before or arrived).
// Dominance: no crossing into a holder that already holds m (such a transfer can be deleted from any
// schedule, so one copy per channel and step suffices: Booleans). Capacity, ports, goals as above;
// decoding keeps what leads to a goal.
//
// End-to-end (ideal fat tree):
//
// `send[m][p][q][s]`: p sends a copy of m to processor q in step s, crossing the route's channels in s,
// s+1, ..., arriving at a = s + 2h - 1 (h: height of the lowest common ancestor); p must hold m at s-1,
// q holds it from a, no send to a q already holding m; capacity per channel and step over the sends
// crossing it then; single ports one send and one arrival per processor and step, half one of the two.
//
// Implied constraints (--no-implied leaves them out; each follows from the constraints, no answer changes):
// - Free route: processor p holds at most (receive capacity) x t of the messages destined to it after
//   step t; half duplex without routers, all goal holdings after t at most floor(P/2) x t.
// - Dissemination and end-to-end: a processor holds at most `init + k*t` messages after step t.
// - Dissemination, half duplex without routers: at most floor(P/2) new holdings per step (makes the
//   ring:5 T = 9 pigeonhole immediate).
//
// Symmetry breaking for free_route is rule 1 (time shift) of personal.cpp's comment.
//
// Chunks and rounds (free_route and dissemination only; horizon H, R rounds in all):
// - Step t's rounds r_t = 1 + the number of true `extra[t][i]` (i < E = R - H, order encoded, at most
//   E true in all); a load limit k per round in step t becomes `sum(load) <= k * r_t`.
// - Implied: per processor, goal messages held after t at most `k * rounds(1..t)` and at least `goals
//   - k * rounds(t+1..H)` (personalized: its own messages sent, likewise); at most `(sum of capacities)
//   * R - sum of distances` hops move a message no closer to its goal.
// - Symmetry: chunks of one datum are interchangeable, so they arrive at the farthest goal in order:
//   `hold[c+1][g][t] -> hold[c][g][t]`. The time shift stays sound (drop an empty first step, append
//   an empty one-round step: R unchanged).
// - Decoding gives each step the least rounds its transfers need (largest ceil(load / capacity), at
//   least 1); the table is verified with those rounds.
#include "verifier/synth/problem/internal.hpp"
#include "verifier/synth/sat/encode.hpp"
#include "verifier/synth/sat/router_copies.hpp"

#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched::synth {

namespace {

using synth_internal::unreachable;

struct Dissem {
    std::vector<MessageId> msgs;
    std::vector<Node> origin;
    std::vector<std::vector<Node>> goals;  // per message
    std::vector<std::uint32_t> chunk;      // per message: its chunk index (0 when unsplit)
};

/// The messages with their origins and goals. With C > 1 chunks the collective's goals are
/// already per chunk (Collective::for_each_goal), the chunks of a datum adjacent.
Dissem dissemination_goals(const SynthInstance& in) {
    Dissem d;
    const std::uint32_t P = in.topology->processors();
    Messages ms = in.collective.messages(P);
    std::map<std::uint32_t, std::size_t> at;
    in.collective.for_each_goal(P, [&](MessageId m, Node p) {
        auto [it, fresh] = at.try_emplace(idx(m), d.msgs.size());
        if (fresh) {
            d.msgs.push_back(m);
            d.origin.push_back(ms.origin(m));
            d.goals.emplace_back();
            d.chunk.push_back(ms.chunk(m));
        }
        d.goals[it->second].push_back(p);
    });
    return d;
}

/// One send of the end-to-end encoding: message `msg` from processor p to q along their route,
/// leaving in step s, when `lit` is true.
struct EndToEndSend {
    std::uint32_t msg, p, q;
    Step s;
    int lit;
};

/// The goals as horizons: every goal holds at H, and for each earlier horizon T >= far a
/// deadline variable (e.deadline[T]) that, assumed true, makes every goal hold at T.
template <class Index>
void add_deadlines(Encoding& e, const Dissem& dm, const std::vector<int>& hold, Index hidx, Step far, Step H, const SynthOptions& opt) {
    Formula& f = e.f;
    e.deadline.assign(H + 1, 0);
    for (Step T = far; T <= H; ++T) {
        check_deadline(opt);
        if (T == H) {
            for (std::size_t i = 0; i < dm.msgs.size(); ++i)
                for (Node g : dm.goals[i]) f.clause({hold[hidx(i, idx(g), H)]});
            continue;
        }
        int d = f.new_var();
        e.deadline[T] = d;
        for (std::size_t i = 0; i < dm.msgs.size(); ++i)
            for (Node g : dm.goals[i]) f.clause({-d, hold[hidx(i, idx(g), T)]});
    }
}

/// The dissemination encoding and free_route (docs/synthesis.md): hold[i][v][t] (node v has
/// message i at the end of step t) and cross[i][c][t] (message i crosses channel c in step t),
/// each only where it can be true. free_route (personalized messages, one goal each): a copy is
/// useful at node v in step t only if it can still reach its goal by H, and never leaves its
/// goal (the windows of variables()). One method per constraint family, called in order by
/// encode().
class DisseminationEncoder : EncoderBase {
public:
    DisseminationEncoder(const SynthInstance& in, Step H, const SynthOptions& opt, Encoding& e)
        : EncoderBase(in, H, opt, e), dm_(dissemination_goals(in)),
          N_(topo_.nodes()), P_(topo_.processors()), C_(topo_.channels().size()), hold_in_routers_(routers_hold(in, e.kind)),
          personal_(e.kind == EncodingKind::free_route),
          counted_(e.kind == EncodingKind::dissemination && !in.model.replicate && topo_.routers() > 0) {
        // Channel c's copies of a message per step: bits off_[c] .. off_[c] + width_[c] - 1 of the
        // message's row (one bit each without counted copies: the row is the channels).
        if (counted_) reach_ = router_reach(topo_);
        const std::uint64_t rounds_per_step = in.rounds ? 1 + (*in.rounds > H ? *in.rounds - H : 0) : 1;
        for (std::size_t c = 0; c < C_; ++c) {
            off_.push_back(W_);
            width_.push_back(counted_ ? copy_width(topo_, reach_, ChannelId{static_cast<std::uint32_t>(c)}, rounds_per_step) : 1);
            W_ += width_.back();
        }
    }

    void encode() {
        distances();
        e_.min_horizon = far_;
        if (H_ < far_) {
            f_.clause({});
            return;
        }
        variables();
        if (!opt_.invariant.empty()) invariance();
        rounds_.emplace(f_, H_, in_.rounds);
        e_.round_lits.assign(H_ + 1, {});
        for (Step t = 1; t <= H_; ++t) e_.round_lits[t] = rounds_->extra(t);
        if (opt_.symmetry && in_.collective.chunks > 1 && opt_.invariant.empty()) chunk_order();
        if (personal_ && opt_.symmetry) time_shift();
        flow();
        capacity();
        if (model_.inject_once) inject_once();
        link_groups();
        // Items are (message, copy): a copy past a channel's width is no literal.
        const std::uint32_t widest = width_.empty() ? 1 : *std::max_element(width_.begin(), width_.end());
        port_limits(*rounds_, topo_, model_.ports, H_, dm_.msgs.size() * widest,
                    [&](std::size_t i, ChannelId c, Step t) {
                        const std::uint32_t k = static_cast<std::uint32_t>(i % widest);
                        return k < width_[idx(c)] ? cross_[xidx(i / widest, idx(c), t, k)] : -Formula::top;
                    },
                    [&](std::uint32_t) { check_deadline(opt_); });
        if (opt_.implied) {
            receptions();
            check_deadline(opt_);
            if (personal_ && in_.rounds) {
                departures();
                wasted_hops();
            }
            if (model_.ports == Ports::half && topo_.routers() == 0) half_duplex_pairing();
        }
        add_deadlines(e_, dm_, hold_, [&](std::size_t i, std::uint32_t v, Step t) { return hidx(i, v, t); }, far_, H_, opt_);
        decoding();
    }

private:
    bool holder(Node v) const { return topo_.is_processor(v) || hold_in_routers_; }
    /// Steps still needed from node v to message i's goal (0 for dissemination: no window).
    std::uint32_t to_goal(std::size_t i, std::uint32_t v) const { return personal_ ? to_[i][v] : 0; }
    std::size_t hidx(std::size_t i, std::uint32_t v, Step t) const { return (i * N_ + v) * (H_ + 1) + t; }
    std::size_t xidx(std::size_t i, std::size_t c, Step t, std::uint32_t k = 0) const { return (i * W_ + off_[c] + k) * (H_ + 1) + t; }
    /// Message i's copies over channel c in step t, in unary (one literal but on counted channels).
    Unary copies(std::size_t i, std::size_t c, Step t) const {
        Unary u;
        for (std::uint32_t k = 0; k < width_[c]; ++k)
            if (cross_[xidx(i, c, t, k)] != -Formula::top) u.push_back(cross_[xidx(i, c, t, k)]);
        return u;
    }
    /// Appends message i's copies over channel c in step t to a load.
    void load(std::vector<int>& ls, std::size_t i, std::size_t c, Step t) const {
        for (std::uint32_t k = 0; k < width_[c]; ++k) ls.push_back(cross_[xidx(i, c, t, k)]);
    }

    /// The distances from every origin (and, for free_route, to every goal), cached per node;
    /// `far_`, the farthest goal. A goal no path reaches is bad input.
    void distances() {
        auto cached = [&](auto& cache, Node v, bool forward) {
            auto [it, fresh] = cache.try_emplace(idx(v));
            if (fresh)
                it->second = std::make_shared<const std::vector<std::uint32_t>>(forward ? bfs_distances(topo_, v) : bfs_distances_to(topo_, v));
            return it->second;
        };
        for (std::size_t i = 0; i < dm_.msgs.size(); ++i) {
            dist_.push_back(*cached(from_cache_, dm_.origin[i], true));
            if (personal_) to_.push_back(*cached(to_cache_, dm_.goals[i].front(), false));
        }
        check_deadline(opt_);
        for (std::size_t i = 0; i < dm_.msgs.size(); ++i) {
            for (Node g : dm_.goals[i]) {
                if (dist_[i][idx(g)] == unreachable)
                    throw InputError(fmt::format("{} cannot reach processor {} from {}: no schedule exists",
                                                 in_.collective.messages(P_).name(dm_.msgs[i]), idx(g), idx(dm_.origin[i])));
                far_ = std::max<Step>(far_, dist_[i][idx(g)]);
            }
        }
    }

    /// hold[i][v][t], cross[i][c][t] (-top where the variable does not exist: false).
    void variables() {
        assign_polled(hold_, dm_.msgs.size() * N_ * (H_ + 1), -Formula::top, opt_);
        assign_polled(cross_, dm_.msgs.size() * W_ * (H_ + 1), -Formula::top, opt_);
        for (std::size_t i = 0; i < dm_.msgs.size(); ++i) {
            check_deadline(opt_);
            for (std::uint32_t v = 0; v < N_; ++v) {
                if (!holder(Node{v}) || dist_[i][v] == unreachable) continue;
                if (personal_ && (to_goal(i, v) == unreachable || dist_[i][v] + to_goal(i, v) > H_)) continue;
                for (Step t = dist_[i][v]; t <= H_; ++t) hold_[hidx(i, v, t)] = Node{v} == dm_.origin[i] ? Formula::top : f_.new_var();
            }
            for (std::size_t c = 0; c < C_; ++c) {
                const Channel& ch = topo_.channels()[c];
                if (ch.to == dm_.origin[i] || dist_[i][idx(ch.from)] == unreachable) continue;
                Step last = H_;
                if (personal_) {
                    // Never leave the goal; arrive at v no later than H - dist(v, goal).
                    if (ch.from == dm_.goals[i].front() || to_goal(i, idx(ch.to)) == unreachable || to_goal(i, idx(ch.to)) > H_) continue;
                    last = H_ - to_goal(i, idx(ch.to));
                }
                for (Step t = dist_[i][idx(ch.from)] + 1; t <= last; ++t)
                    for (std::uint32_t k = 0; k < width_[c]; ++k) {
                        cross_[xidx(i, c, t, k)] = f_.new_var();
                        if (k > 0) f_.clause({-cross_[xidx(i, c, t, k)], cross_[xidx(i, c, t, k - 1)]});  // copies are alike: ordered
                    }
            }
        }
    }

    /// Invariance under node permutations (SynthOptions::invariant): message i's variables
    /// equal those of its image at the image node or channel. The equalities of all the
    /// permutations are joined into classes first (union-find over the variables, the constants
    /// true and false among them) and each class is written as one chain to its representative:
    /// at most two clauses per variable, where one pair per permutation, message, node and step
    /// (64 automorphisms of torus:8x8 alltoall: 1.35 billion clauses) ran through the memory
    /// budget. Each permutation's channel images are looked up once, not per message. The loops
    /// poll the run's limits per message.
    void invariance() {
        std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::size_t> entry;  // (origin, first goal, chunk)
        for (std::size_t i = 0; i < dm_.msgs.size(); ++i)
            entry[{idx(dm_.origin[i]), personal_ ? idx(dm_.goals[i].front()) : 0u, dm_.chunk[i]}] = i;
        // Class of every variable; 0 stands for false (-top), Formula::top for true.
        std::vector<int> parent;
        parent.reserve(static_cast<std::size_t>(f_.vars()) + 1);
        for (int v = 0; v <= f_.vars(); ++v) {
            if (v % 65536 == 0) check_deadline(opt_);
            parent.push_back(v);
        }
        auto node = [](int lit) { return lit == -Formula::top ? 0 : lit; };  // every literal here is a variable or a constant
        auto find = [&](int v) {
            while (parent[v] != v) v = parent[v] = parent[parent[v]];
            return v;
        };
        std::size_t n = 0;
        auto tie = [&](int a, int b) {
            const int ra = find(node(a)), rb = find(node(b));
            if (ra == rb) return;
            // The constants stay roots, so a class's root is the constant it is equal to.
            if (ra <= Formula::top) parent[rb] = ra;
            else parent[ra] = rb;
            ++n;
        };
        std::vector<std::uint32_t> image(C_);
        for (const auto& g : opt_.invariant) {
            for (std::size_t c = 0; c < C_; ++c) {
                if (c % 4096 == 0) check_deadline(opt_);
                const Channel& ch = topo_.channels()[c];
                auto gc = topo_.find_channel(Node{g[idx(ch.from)]}, Node{g[idx(ch.to)]});
                COLLSCHED_ASSERT(gc.has_value());
                image[c] = idx(*gc);
            }
            for (std::size_t i = 0; i < dm_.msgs.size(); ++i) {
                check_deadline(opt_);
                auto it = entry.find({g[idx(dm_.origin[i])], personal_ ? g[idx(dm_.goals[i].front())] : 0u, dm_.chunk[i]});
                COLLSCHED_ASSERT(it != entry.end());
                const std::size_t j = it->second;
                for (std::uint32_t v = 0; v < N_; ++v)
                    for (Step t = 0; t <= H_; ++t) tie(hold_[hidx(i, v, t)], hold_[hidx(j, g[v], t)]);
                for (std::size_t c = 0; c < C_; ++c) {
                    COLLSCHED_ASSERT(width_[c] == width_[image[c]]);
                    for (Step t = 1; t <= H_; ++t)
                        for (std::uint32_t k = 0; k < width_[c]; ++k) tie(cross_[xidx(i, c, t, k)], cross_[xidx(j, image[c], t, k)]);
                }
            }
        }
        if (find(0) == find(Formula::top)) {
            f_.clause({});  // some variable must be both true and false: no invariant schedule
        } else {
            for (int v = Formula::top + 1; v < static_cast<int>(parent.size()); ++v) {
                if (v % 65536 == 0) check_deadline(opt_);
                const int r = find(v);
                if (r == v) continue;
                const int rep = r == 0 ? -Formula::top : r;
                f_.clause({-v, rep});
                f_.clause({v, -rep});
            }
        }
        e_.notes.push_back(fmt::format("restriction: invariant under {} automorphisms ({} tied variables)", opt_.invariant.size(), n));
    }

    /// Chunk order (docs/synthesis.md, "Chunks, rounds and the Pareto frontier"): the chunks of one datum are
    /// interchangeable, so relabel them by their arrival at one goal (the farthest).
    void chunk_order() {
        std::size_t n = 0;
        for (std::size_t i = 0; i + 1 < dm_.msgs.size(); ++i) {
            if (i % 256 == 0) check_deadline(opt_);
            if (dm_.chunk[i + 1] != dm_.chunk[i] + 1) continue;
            Node g = dm_.goals[i].front();
            for (Node q : dm_.goals[i])
                if (dist_[i][idx(q)] > dist_[i][idx(g)]) g = q;
            for (Step t = 1; t <= H_; ++t) {
                f_.clause({-hold_[hidx(i + 1, idx(g), t)], hold_[hidx(i, idx(g), t)]});
                ++n;
            }
        }
        e_.notes.push_back(fmt::format("symmetry: chunks of a datum arrive in order at its farthest goal ({} clauses)", n));
    }

    /// Time shift (docs/synthesis.md, "Symmetry"): some transfer happens in step 1.
    void time_shift() {
        std::vector<int> first;
        for (std::size_t i = 0; i < dm_.msgs.size(); ++i) {
            if (i % 256 == 0) check_deadline(opt_);
            for (std::size_t c = 0; c < C_; ++c)
                if (cross_[xidx(i, c, 1)] != -Formula::top) first.push_back(cross_[xidx(i, c, 1)]);
        }
        if (!first.empty()) {
            f_.clause(first);
            e_.notes.push_back("symmetry: some transfer in step 1 (time shift)");
        }
    }

    /// Per message: causality and dominance of every crossing, and a holding kept or gained
    /// through an incoming crossing.
    void flow() {
        for (std::size_t i = 0; i < dm_.msgs.size(); ++i) {
            check_deadline(opt_);
            for (std::size_t c = 0; c < C_; ++c) {
                const Channel& ch = topo_.channels()[c];
                for (Step t = 1; t <= H_; ++t) {
                    int x = cross_[xidx(i, c, t)];
                    if (x == -Formula::top) continue;
                    // Causality: the sender holds m, or (a queue-free replicating router) received it
                    // in the step before.
                    if (holder(ch.from)) {
                        f_.clause({-x, hold_[hidx(i, idx(ch.from), t - 1)]});
                    } else if (!counted_) {
                        std::vector<int> cl{-x};
                        for (ChannelId in_c : topo_.in_channels(ch.from)) cl.push_back(cross_[xidx(i, idx(in_c), t - 1)]);
                        f_.clause(cl);
                    }
                    if (holder(ch.to)) {
                        f_.clause({-x, hold_[hidx(i, idx(ch.to), t)]});
                        // Dominance: never send m to a holder that already has it (drop such a transfer).
                        f_.clause({-x, -hold_[hidx(i, idx(ch.to), t - 1)]});
                    }
                }
            }
            for (std::uint32_t v = 0; v < N_; ++v) {
                if (!holder(Node{v}) || Node{v} == dm_.origin[i]) continue;
                for (Step t = 1; t <= H_; ++t) {
                    int h = hold_[hidx(i, v, t)];
                    if (h == -Formula::top) continue;
                    f_.clause({-hold_[hidx(i, v, t - 1)], h});
                    std::vector<int> cl{-h, hold_[hidx(i, v, t - 1)]};
                    for (ChannelId in_c : topo_.in_channels(Node{v})) cl.push_back(cross_[xidx(i, idx(in_c), t)]);
                    f_.clause(cl);
                }
            }
            if (counted_) forwarding(i);
        }
    }

    /// replicate=no: a router forwards each copy of message i it receives once (router_copies.hpp).
    void forwarding(std::size_t i) {
        for (std::uint32_t r = P_; r < N_; ++r) {
            std::vector<std::vector<Unary>> in(H_ + 1), out(H_ + 1);
            for (Step t = 1; t <= H_; ++t) {
                for (ChannelId c : topo_.in_channels(Node{r})) in[t].push_back(copies(i, idx(c), t));
                for (ChannelId c : topo_.out_channels(Node{r})) out[t].push_back(copies(i, idx(c), t));
            }
            std::uint32_t bound = reach_[r];
            if (bound > 0 && topo_.find_channel(Node{r}, dm_.origin[i])) --bound;  // the origin holds it
            conserve_copies(f_, model_.queues, in, out, bound);
        }
    }

    /// Capacity per channel and step.
    void capacity() {
        for (std::size_t c = 0; c < C_; ++c) {
            if (c % 16 == 0) check_deadline(opt_);
            for (Step t = 1; t <= H_; ++t) {
                std::vector<int> ls;
                for (std::size_t i = 0; i < dm_.msgs.size(); ++i) load(ls, i, c, t);
                rounds_->at_most(std::move(ls), topo_.channels()[c].cap, t, t);
            }
        }
    }

    /// inject=once: one transfer out of the origin; every other one moves away from it.
    void inject_once() {
        for (std::size_t i = 0; i < dm_.msgs.size(); ++i) {
            check_deadline(opt_);
            std::vector<int> ls;
            for (std::size_t c = 0; c < C_; ++c) {
                const Channel& ch = topo_.channels()[c];
                const bool out = ch.from == dm_.origin[i];
                const bool away = dist_[i][idx(ch.to)] == dist_[i][idx(ch.from)] + 1;
                for (Step t = 1; t <= H_; ++t)
                    for (std::uint32_t k = 0; k < width_[c]; ++k) {
                        int x = cross_[xidx(i, c, t, k)];
                        if (x == -Formula::top) continue;
                        if (out) ls.push_back(x);
                        else if (!away) f_.clause({-x});
                    }
            }
            f_.at_most(std::move(ls), 1);
        }
    }

    /// Link groups (SCCL's switches): the channels of a group carry at most its capacity per
    /// round together.
    void link_groups() {
        for (const LinkGroup& g : topo_.groups())
            for (Step t = 1; t <= H_; ++t) {
                check_deadline(opt_);
                std::vector<int> ls;
                for (ChannelId c : g.channels)
                    for (std::size_t i = 0; i < dm_.msgs.size(); ++i) load(ls, i, idx(c), t);
                rounds_->at_most(std::move(ls), g.cap, t, t);
            }
    }

    /// The messages processor p may gain: not its own, and for free_route only those it is
    /// the goal of (a subset of a valid count).
    bool gains(std::size_t i, std::uint32_t p) const {
        return dm_.origin[i] != Node{p} && (!personal_ || dm_.goals[i].front() == Node{p});
    }

    /// Implied: a processor gains at most (its receive capacity per step) messages per step;
    /// with rounds, what it still lacks after step t arrives in steps t+1..H.
    void receptions() {
        std::size_t n = 0;
        for (std::uint32_t p = 0; p < P_; ++p) {
            std::int64_t per_step = 0;
            if (model_.ports != Ports::multi) per_step = 1;
            else
                for (ChannelId c : topo_.in_channels(Node{p})) per_step += topo_.channel(c).cap;
            std::vector<std::size_t> mine;
            for (std::size_t i = 0; i < dm_.msgs.size(); ++i)
                if (gains(i, p)) mine.push_back(i);
            check_deadline(opt_);
            for (Step t = 1; t <= H_; ++t) {
                std::vector<int> ls;
                for (std::size_t i : mine) ls.push_back(hold_[hidx(i, p, t)]);
                std::size_t before = f_.cards().size();
                rounds_->at_most(std::move(ls), per_step, 1, t);
                n += f_.cards().size() - before;
            }
            if (in_.rounds) {
                // With rounds the horizon is exact: what p still lacks after step t must arrive
                // in steps t+1..H, at most per_step per round.
                std::vector<std::size_t> goal_of_p;
                for (std::size_t i : mine)
                    if (std::find(dm_.goals[i].begin(), dm_.goals[i].end(), Node{p}) != dm_.goals[i].end()) goal_of_p.push_back(i);
                for (Step t = 1; t < H_; ++t) {
                    std::vector<int> ls;
                    for (std::size_t i : goal_of_p) ls.push_back(hold_[hidx(i, p, t)]);
                    std::size_t before = f_.cards().size();
                    rounds_->at_least_minus(std::move(ls), static_cast<std::int64_t>(goal_of_p.size()), per_step, t + 1, H_);
                    n += f_.cards().size() - before;
                }
            }
        }
        e_.notes.push_back(fmt::format("implied: {} per-processor reception counts", n));
    }

    /// Departures (docs/synthesis.md, "Chunks, rounds and the Pareto frontier"): every message
    /// leaves its origin at least once, and the origin sends at most its out-capacity per round.
    /// left[i][t]: message i has crossed a channel out of its origin by step t. By t at most
    /// out * rounds(1..t) have left, and at least |own| - out * rounds(t+1..H).
    void departures() {
        std::size_t d = 0;
        for (std::uint32_t p = 0; p < P_; ++p) {
            std::int64_t out_cap = 0;
            if (model_.ports != Ports::multi) out_cap = 1;
            else
                for (ChannelId c : topo_.out_channels(Node{p})) out_cap += topo_.channel(c).cap;
            std::vector<std::size_t> own;
            for (std::size_t i = 0; i < dm_.msgs.size(); ++i)
                if (dm_.origin[i] == Node{p}) own.push_back(i);
            if (own.empty() || out_cap == 0) continue;
            check_deadline(opt_);
            std::vector<std::vector<int>> left(own.size(), std::vector<int>(H_ + 1, -Formula::top));
            for (std::size_t k = 0; k < own.size(); ++k)
                for (Step t = 1; t <= H_; ++t) {
                    std::vector<int> now{left[k][t - 1]};
                    for (ChannelId c : topo_.out_channels(Node{p})) now.push_back(cross_[xidx(own[k], idx(c), t)]);
                    left[k][t] = f_.or_of(now);
                }
            for (Step t = 1; t <= H_; ++t) {
                std::vector<int> ls;
                for (std::size_t k = 0; k < own.size(); ++k) ls.push_back(left[k][t]);
                std::size_t before = f_.cards().size();
                if (t < H_) rounds_->at_least_minus(ls, static_cast<std::int64_t>(own.size()), out_cap, t + 1, H_);
                rounds_->at_most(std::move(ls), out_cap, 1, t);
                d += f_.cards().size() - before;
            }
        }
        e_.notes.push_back(fmt::format("implied: {} per-processor departure counts", d));
    }

    /// Wasted hops (docs/synthesis.md): a chain table's walks make at least sum dist hops, and
    /// the channels carry at most (sum of capacities) * R in all, so at most slack = that minus
    /// sum dist hops fail to bring a message closer to its goal.
    void wasted_hops() {
        std::int64_t cap_total = 0, need = 0;
        for (const Channel& ch : topo_.channels()) cap_total += ch.cap;
        for (std::size_t i = 0; i < dm_.msgs.size(); ++i) need += dist_[i][idx(dm_.goals[i].front())];
        const std::int64_t slack = cap_total * static_cast<std::int64_t>(*in_.rounds) - need;
        std::vector<int> waste;
        for (std::size_t i = 0; i < dm_.msgs.size(); ++i) {
            if (i % 64 == 0) check_deadline(opt_);
            for (std::size_t c = 0; c < C_; ++c) {
                const Channel& ch = topo_.channels()[c];
                if (to_[i][idx(ch.to)] < to_[i][idx(ch.from)]) continue;
                for (Step t = 1; t <= H_; ++t)
                    if (cross_[xidx(i, c, t)] != -Formula::top) waste.push_back(cross_[xidx(i, c, t)]);
            }
        }
        if (slack < 0) f_.clause({});
        else if (slack <= 512) f_.at_most(std::move(waste), slack);
        e_.notes.push_back(fmt::format("implied: at most {} hops away from the goal", slack));
    }

    /// Every transfer joins a sending and a receiving processor, and under half duplex each
    /// processor does one of the two per step: at most floor(P/2) new holdings per step.
    void half_duplex_pairing() {
        std::size_t g = 0;
        for (Step t = 1; t <= H_; ++t) {
            check_deadline(opt_);
            std::vector<int> ls;
            for (std::size_t i = 0; i < dm_.msgs.size(); ++i)
                for (std::uint32_t p = 0; p < P_; ++p)
                    if (gains(i, p)) ls.push_back(hold_[hidx(i, p, t)]);
            std::size_t before = f_.cards().size();
            rounds_->at_most(std::move(ls), static_cast<std::int64_t>(P_ / 2), 1, t);
            g += f_.cards().size() - before;
        }
        e_.notes.push_back(fmt::format("implied: {} half-duplex pairing counts", g));
    }

    /// Decoding: every crossing is a candidate transfer of one step.
    void decoding() {
        for (std::size_t i = 0; i < dm_.msgs.size(); ++i) {
            if (i % 64 == 0) check_deadline(opt_);
            for (std::size_t c = 0; c < C_; ++c)
                for (Step t = 1; t <= H_; ++t)
                    for (std::uint32_t k = 0; k < width_[c]; ++k) {  // a counted crossing: one transfer per copy
                        int x = cross_[xidx(i, c, t, k)];
                        if (x == -Formula::top) continue;
                        e_.candidates.push_back({x, static_cast<std::uint32_t>(e_.pool.size()), 1, t});
                        e_.pool.push_back({t, ChannelId{static_cast<std::uint32_t>(c)}, dm_.msgs[i]});
                    }
        }
    }

    const Dissem dm_;
    const std::uint32_t N_, P_;
    const std::size_t C_;
    const bool hold_in_routers_, personal_;
    /// replicate=no through routers: a crossing into a router counts copies (router_copies.hpp).
    const bool counted_;
    std::vector<std::uint32_t> reach_;        ///< per node: processors reachable through routers (counted_ only)
    std::vector<std::uint32_t> off_, width_;  ///< per channel: its first bit in a message's row, and its bits
    std::size_t W_ = 0;                       ///< bits in a message's row
    std::map<std::uint32_t, std::shared_ptr<const std::vector<std::uint32_t>>> from_cache_, to_cache_;
    std::vector<std::span<const std::uint32_t>> dist_, to_;  ///< per message: from its origin; free_route: to its goal
    Step far_ = 0;
    std::vector<int> hold_, cross_;
    std::optional<Rounds> rounds_;
};

}  // namespace

void encode_dissemination(const SynthInstance& in, Step H, const SynthOptions& opt, Encoding& e) {
    DisseminationEncoder(in, H, opt, e).encode();
}

void encode_end_to_end(const SynthInstance& in, Step H, const SynthOptions& opt, Encoding& e) {
    const Topology& topo = *in.topology;
    const Model& model = in.model;
    Formula& f = e.f;
    Dissem dm = dissemination_goals(in);
    const std::uint32_t P = topo.processors();
    std::vector<std::uint32_t> len(P * P);
    std::vector<std::vector<ChannelId>> routes(P * P);
    for (std::uint32_t p = 0; p < P; ++p) {
        check_deadline(opt);
        for (std::uint32_t q = 0; q < P; ++q) {
            routes[p * P + q] = topo.route(Node{p}, Node{q});
            len[p * P + q] = static_cast<std::uint32_t>(routes[p * P + q].size());
        }
    }
    Step far = 0;
    for (std::size_t i = 0; i < dm.msgs.size(); ++i)
        for (Node g : dm.goals[i]) far = std::max<Step>(far, len[idx(dm.origin[i]) * P + idx(g)]);
    e.min_horizon = far;
    if (H < far) {
        f.clause({});
        return;
    }
    auto hidx = [&](std::size_t i, std::uint32_t p, Step t) { return (i * P + p) * (H + 1) + t; };
    std::vector<int> hold;
    assign_polled(hold, dm.msgs.size() * P * (H + 1), -Formula::top, opt);
    for (std::size_t i = 0; i < dm.msgs.size(); ++i) {
        if (i % 64 == 0) check_deadline(opt);
        for (std::uint32_t p = 0; p < P; ++p)
            for (Step t = len[idx(dm.origin[i]) * P + p]; t <= H; ++t)
                hold[hidx(i, p, t)] = Node{p} == dm.origin[i] ? Formula::top : f.new_var();
    }

    std::vector<EndToEndSend> sends;
    // arrivals[i][q][t]: sends of message i arriving at q in step t.
    std::vector<std::vector<int>> arrivals(dm.msgs.size() * P * (H + 1));
    const std::size_t C = topo.channels().size();
    std::vector<std::vector<int>> load(C * (H + 1));
    std::vector<std::vector<int>> out_port(P * (H + 1)), in_port(P * (H + 1));
    for (std::uint32_t i = 0; i < dm.msgs.size(); ++i)
        for (std::uint32_t p = 0; p < P; ++p) {
            check_deadline(opt);
            Step first = len[idx(dm.origin[i]) * P + p] + 1;
            for (std::uint32_t q = 0; q < P; ++q) {
                if (q == p || Node{q} == dm.origin[i]) continue;
                const std::uint32_t L = len[p * P + q];
                for (Step s = first; s + L - 1 <= H; ++s) {
                    int x = f.new_var();
                    Step a = s + L - 1;
                    sends.push_back({i, p, q, s, x});
                    f.clause({-x, hold[hidx(i, p, s - 1)]});
                    f.clause({-x, hold[hidx(i, q, a)]});
                    // Dominance: a copy that reaches a processor already holding m is dropped.
                    f.clause({-x, -hold[hidx(i, q, a - 1)]});
                    arrivals[hidx(i, q, a)].push_back(x);
                    for (std::uint32_t k = 0; k < L; ++k) load[idx(routes[p * P + q][k]) * (H + 1) + s + k].push_back(x);
                    out_port[p * (H + 1) + s].push_back(x);
                    in_port[q * (H + 1) + a].push_back(x);
                }
            }
        }
    for (std::size_t i = 0; i < dm.msgs.size(); ++i)
        for (std::uint32_t q = 0; q < P; ++q) {
            if (q % 64 == 0) check_deadline(opt);
            if (Node{q} == dm.origin[i]) continue;
            for (Step t = 1; t <= H; ++t) {
                int h = hold[hidx(i, q, t)];
                if (h == -Formula::top) continue;
                f.clause({-hold[hidx(i, q, t - 1)], h});
                std::vector<int> cl{-h, hold[hidx(i, q, t - 1)]};
                const auto& arr = arrivals[hidx(i, q, t)];
                cl.insert(cl.end(), arr.begin(), arr.end());
                f.clause(cl);
            }
        }
    for (std::size_t c = 0; c < C; ++c) {
        if (c % 64 == 0) check_deadline(opt);
        for (Step t = 1; t <= H; ++t) f.at_most(std::move(load[c * (H + 1) + t]), topo.channels()[c].cap);
    }
    if (model.ports != Ports::multi)
        for (std::uint32_t p = 0; p < P; ++p) {
            check_deadline(opt);
            for (Step t = 1; t <= H; ++t) {
                auto& o = out_port[p * (H + 1) + t];
                auto& r = in_port[p * (H + 1) + t];
                if (model.ports == Ports::half) {
                    o.insert(o.end(), r.begin(), r.end());
                    f.at_most(std::move(o), 1);
                } else {
                    f.at_most(std::move(o), 1);
                    f.at_most(std::move(r), 1);
                }
            }
        }
    if (opt.implied && model.ports != Ports::multi) {
        std::size_t n = 0;
        for (std::uint32_t p = 0; p < P; ++p)
            for (Step t = 1; t <= H; ++t) {
                check_deadline(opt);
                std::vector<int> ls;
                for (std::size_t i = 0; i < dm.msgs.size(); ++i)
                    if (dm.origin[i] != Node{p}) ls.push_back(hold[hidx(i, p, t)]);
                std::size_t before = f.cards().size();
                f.at_most(std::move(ls), t);
                n += f.cards().size() - before;
            }
        e.notes.push_back(fmt::format("implied: {} per-processor reception counts", n));
    }
    add_deadlines(e, dm, hold, hidx, far, H, opt);
    for (std::size_t k = 0; k < sends.size(); ++k) {
        if (k % 4096 == 0) check_deadline(opt);
        const EndToEndSend& s = sends[k];
        const auto& r = routes[s.p * P + s.q];
        e.candidates.push_back({s.lit, static_cast<std::uint32_t>(e.pool.size()), static_cast<std::uint32_t>(r.size()),
                                s.s + static_cast<Step>(r.size()) - 1});
        for (std::uint32_t h = 0; h < r.size(); ++h) e.pool.push_back({s.s + h, r[h], dm.msgs[s.msg]});
    }
}

}  // namespace collsched::synth
