// The direct encoding of combining (docs/synthesis.md, "The direct encoding of combining"):
// allreduce, reduce_scatter, reduce(r) and scan with C chunks under the buffer rule of
// docs/semantics.md, "Reductions", on networks of processors under hop timing.
//
// Under the buffer rule a processor sends exactly what its buffer of the chunk holds at the end
// of the step before, so a schedule is fixed by *which* (chunk, channel, step) carry a send: the
// partial sent follows. The variables are
//   x[c][e][t]   chunk c crosses channel e in step t (at most one useful copy: a second copy
//                of the same partial on the same channel and step arrives as a copy of what the
//                first left in the buffer and changes nothing),
//   h[c][v][s][t] the buffer of chunk c at v contains a(s, c) at the end of step t,
// and, for the arrivals of one step at v in table order (by channel id), the buffer after each
// arrival b_j = b_{j-1} ∪ (x_j ? h[c][u_j][.][t-1] : ∅), with b_0 = h[.][t-1] and the last
// b_k = h[.][t]. An arrival is legal when it is disjoint from the buffer it meets (combine) or
// covers it (copy): x_j -> d_j or k_j with d_j -> no s in both, k_j -> every s of the buffer
// in the partial. In both cases the buffer becomes the union, which is what b_j says.
#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "support/error.hpp"
#include "support/assert.hpp"
#include "verifier/synth/bounds/boxes.hpp"
#include "verifier/synth/sat/encode.hpp"

namespace collsched::synth {

namespace {

constexpr std::uint32_t unreachable = std::numeric_limits<std::uint32_t>::max();

/// "0, 1, 2 and 5": the processors a search reached.
std::string reached_list(const std::vector<bool>& reached) {
    std::vector<std::uint32_t> at;
    for (std::uint32_t p = 0; p < reached.size(); ++p)
        if (reached[p]) at.push_back(p);
    std::string out;
    for (std::size_t j = 0; j < at.size(); ++j) out += fmt::format("{}{}", j == 0 ? "" : j + 1 == at.size() ? " and " : ", ", at[j]);
    return out;
}

}  // namespace

std::uint64_t combining_variables(const SynthInstance& in, Step H) {
    const Topology& t = *in.topology;
    const std::uint64_t C = in.collective.chunks, P = t.processors(), E = t.channels().size(), steps = std::uint64_t{H} + 1;
    // h, x, the intermediate buffers (one per arrival but the last) and the two case variables.
    return C * steps * (P * P + E + E * P + 2 * E);
}

Step combining_distance(const SynthInstance& in) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors();
    Step far = 0;
    in.collective.for_each_partial_goal(P, in.collective.chunks, [&](std::uint32_t, std::uint32_t hi, Node p) {
        const std::vector<std::uint32_t> to = bfs_distances_to(t, p);
        for (std::uint32_t s = 0; s <= hi; ++s) {
            if (to[s] == unreachable)
                throw InputError(fmt::format("a({}) cannot reach processor {} on {}: no schedule exists", s, idx(p), t.spec()));
            far = std::max<Step>(far, to[s]);
        }
    });
    return far;
}

std::vector<Bound> combining_distance_bounds(const SynthInstance& in) {
    const Step d = combining_distance(in);
    return {Bound{d, "distance",
                  fmt::format("every contribution must reach every processor whose goal needs it, one hop per step: the farthest is {} hop{}",
                              d, d == 1 ? "" : "s"),
                  RouteSpace::any,
                  {}}};
}

namespace {

/// Transfers in all (docs/synthesis.md, "The direct encoding of combining", Lower bounds): a
/// chunk every processor must complete with all P contributions (allreduce) is a one-way gossip
/// among the P processors, which takes at least 2(P-1) transfers; any other chunk at least one
/// transfer per goal processor that needs more than its own and one per source some other goal
/// needs, whichever is more. At most the sum of the processors' per-step limits arrive at
/// processors in a step, and leave them (networks of processors, as the encoding).
template <class Limit>
Bound total_transfers_bound(const SynthInstance& in, const std::vector<std::vector<bool>>& sends, Limit&& limit) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors(), C = in.collective.chunks;
    std::vector<std::uint32_t> complete(C, 0), receivers(C, 0);  // per chunk: goals of all P contributions, goals beyond one's own
    in.collective.for_each_partial_goal(P, C, [&](std::uint32_t c, std::uint32_t hi, Node p) {
        if (hi == P - 1) ++complete[c];
        if (hi > 0 || idx(p) != 0) ++receivers[c];
    });
    std::uint64_t need = 0, gossips = 0;
    for (std::uint32_t c = 0; c < C; ++c) {
        if (complete[c] == P) {
            need += 2 * std::uint64_t{P - 1};
            ++gossips;
            continue;
        }
        std::uint64_t senders = 0;
        for (std::uint32_t s = 0; s < P; ++s) senders += sends[s][c];
        need += std::max<std::uint64_t>(senders, receivers[c]);
    }
    std::uint64_t arrive = 0, leave = 0;
    for (std::uint32_t p = 0; p < P; ++p) arrive += limit(Node{p}, true), leave += limit(Node{p}, false);
    // Networks of processors only (as the combining encoding): a router that combines would take
    // part in the gossip itself (a star's router sums P partials and returns the total in P
    // arrivals, fewer than 2(P-1)).
    if (t.routers() > 0) return {};
    const std::uint64_t k = std::min(arrive, leave);
    if (need == 0 || k == 0 || gossips == 0) return {};  // printed where a chunk is a gossip (allreduce), the case it is for
    return Bound{static_cast<Step>((need + k - 1) / k), "transfers",
                 fmt::format("{} of the {} chunks must end at all {} processors with every contribution, a one-way gossip of at "
                             "least 2(P-1) = {} transfers each; {} transfers in all, at most {} per step arrive at and leave processors",
                             gossips, C, P, 2 * (P - 1), need, k),
                 RouteSpace::any,
                 {"a contribution spreads only in partials, and a partial carries only contributions its sender holds", "no routers"}};
}

/// The same gossip between sets of processors (docs/synthesis.md, Lower bounds, *transfers between
/// boxes*): contract each set to one participant (it has seen what any member has seen); a
/// transfer inside a set changes nothing, so each of `gossips` chunks needs 2(B-1) transfers
/// between the B sets, and at most the sum of the processors' per-step limits on channels from
/// (to) other sets cross per step. Any partition gives a bound; tried: the sets joined by links of
/// at least each bandwidth the machine has (its boxes, on a machine of boxes).
Bound box_gossip_bound(const SynthInstance& in, std::uint64_t gossips) {
    const Topology& t = *in.topology;
    Bound best;
    for (const BoxPartition& part : box_partitions(t)) {
        const std::uint64_t B = part.sets, need = gossips * 2 * (B - 1);
        const std::uint64_t k = std::min(cross_capacity(t, in.model.ports, part, true), cross_capacity(t, in.model.ports, part, false));
        if (k == 0) continue;
        const Step steps = static_cast<Step>((need + k - 1) / k);
        if (steps <= best.steps) continue;
        best = Bound{steps, "transfers between boxes",
                     fmt::format("{} chunks must end at all {} processors with every contribution; between the {} sets of processors "
                                 "joined by channels of at least {:g} GB/s each is a one-way gossip of at least 2(B-1) = {} transfers "
                                 "between sets; {} in all, at most {} per step cross between sets",
                                 gossips, t.processors(), B, part.speed / 1e9, 2 * (B - 1), need, k),
                     RouteSpace::any,
                     {"a contribution spreads only in partials, and a partial carries only contributions its sender holds", "no routers"}};
    }
    return best;
}

}  // namespace

std::vector<Bound> combining_count_bounds(const SynthInstance& in) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors(), C = in.collective.chunks;
    std::vector<Bound> out;
    // Transfers per chunk: a goal processor needs an arrival of every chunk it must complete
    // (its buffer starts with its own contribution only), and a source must send every chunk
    // whose contribution some other processor needs. At most K transfers enter (leave) p per
    // step, K = step_capacity of its in- (out-) channels (capacities, ports, link groups).
    auto limit = [&](Node p, bool incoming) {
        return step_capacity(t, in.model.ports, incoming ? t.in_channels(p) : t.out_channels(p)).hops;
    };
    std::vector<std::uint64_t> need_in(P, 0), need_out(P, 0);
    std::vector<std::vector<bool>> sends(P, std::vector<bool>(C, false));
    in.collective.for_each_partial_goal(P, C, [&](std::uint32_t c, std::uint32_t hi, Node p) {
        if (hi > 0 || idx(p) != 0) ++need_in[idx(p)];  // a goal of more than p's own contribution
        for (std::uint32_t s = 0; s <= hi; ++s)
            if (s != idx(p)) sends[s][c] = true;
    });
    for (std::uint32_t s = 0; s < P; ++s) need_out[s] = static_cast<std::uint64_t>(std::count(sends[s].begin(), sends[s].end(), true));
    if (Bound b = total_transfers_bound(in, sends, limit); b.steps > 0) {
        std::uint64_t gossips = 0;  // the chunks every processor completes with every contribution
        std::vector<std::uint32_t> complete(C, 0);
        in.collective.for_each_partial_goal(P, C, [&](std::uint32_t c, std::uint32_t hi, Node) { complete[c] += hi == P - 1; });
        for (std::uint32_t c = 0; c < C; ++c) gossips += complete[c] == P;
        out.push_back(std::move(b));
        if (Bound boxes = box_gossip_bound(in, gossips); boxes.steps > out.back().steps) out.push_back(std::move(boxes));
    }
    for (bool incoming : {true, false}) {
        Step best = 0;
        std::uint32_t at = 0;
        std::uint64_t need = 0, k = 0;
        for (std::uint32_t p = 0; p < P; ++p) {
            const std::uint64_t n = incoming ? need_in[p] : need_out[p], kp = limit(Node{p}, incoming);
            if (n == 0 || kp == 0) continue;
            const Step b = static_cast<Step>((n + kp - 1) / kp);
            if (b > best) best = b, at = p, need = n, k = kp;
        }
        if (best == 0) continue;
        out.push_back({best, incoming ? "receptions" : "departures",
                       incoming ? fmt::format("processor {} must receive each of {} chunks at least once, at most {} per step", at, need, k)
                                : fmt::format("processor {} must send each of {} chunks at least once, at most {} per step", at, need, k),
                       RouteSpace::any,
                       {incoming ? "a buffer starts with its own contribution only" : "a contribution leaves its source only in a partial"}});
    }
    return out;
}

namespace {

/// The direct encoding of combining (docs/synthesis.md, "The direct encoding of combining"):
/// h[c][v][s][t] (the buffer of chunk c at processor v holds source s's contribution at the end
/// of step t) and x[c][ch][t] (a partial of chunk c crosses channel ch in step t). One method per
/// constraint family, called in order by encode().
class CombiningEncoder : EncoderBase {
public:
    CombiningEncoder(const SynthInstance& in, Step H, const SynthOptions& opt, Encoding& e)
        : EncoderBase(in, H, opt, e), P_(topo_.processors()), C_(in.collective.chunks), E_(topo_.channels().size()) {}

    void encode() {
        if (std::string why = combining_problem(in_); !why.empty()) throw InputError(why);
        far_ = combining_distance(in_);
        e_.min_horizon = far_;
        if (H_ < far_) {
            f_.clause({});
            return;
        }
        variables();
        buffer_rule();
        rounds_.emplace(f_, H_, in_.rounds);
        e_.round_lits.assign(H_ + 1, {});
        for (Step t = 1; t <= H_; ++t) e_.round_lits[t] = rounds_->extra(t);
        limits();
        deadlines();
        decoding();
        e_.notes.push_back(fmt::format("combining: {} chunks, {} channels, buffers of {} sources", C_, E_, P_));
    }

private:
    std::size_t hidx(std::uint32_t c, std::uint32_t v, std::uint32_t s, Step t) const {
        return ((std::size_t{c} * P_ + v) * P_ + s) * (H_ + 1) + t;
    }
    std::size_t xidx(std::uint32_t c, std::size_t ch, Step t) const { return (std::size_t{c} * E_ + ch) * (H_ + 1) + t; }

    /// h exists where source s can have reached v by t (its own contribution always); x everywhere.
    void variables() {
        std::vector<std::vector<std::uint32_t>> dist;  // dist[s][v]
        for (std::uint32_t s = 0; s < P_; ++s) dist.push_back(bfs_distances(topo_, Node{s}));
        h_.assign(std::size_t{C_} * P_ * P_ * (H_ + 1), -Formula::top);
        x_.assign(std::size_t{C_} * E_ * (H_ + 1), -Formula::top);
        for (std::uint32_t c = 0; c < C_; ++c) {
            check_deadline(opt_);
            for (std::uint32_t v = 0; v < P_; ++v)
                for (std::uint32_t s = 0; s < P_; ++s)
                    for (Step t = 0; t <= H_; ++t) {
                        int& l = h_[hidx(c, v, s, t)];
                        if (s == v) l = Formula::top;
                        else if (dist[s][v] != unreachable && dist[s][v] <= t) l = f_.new_var();
                    }
            for (std::size_t ch = 0; ch < E_; ++ch)
                for (Step t = 1; t <= H_; ++t) x_[xidx(c, ch, t)] = f_.new_var();
        }
    }

    /// The buffer rule, arrival by arrival in table order (channel id within a step).
    void buffer_rule() {
        std::vector<std::vector<std::size_t>> in_by_id(P_);
        for (std::uint32_t v = 0; v < P_; ++v) {
            for (ChannelId ch : topo_.in_channels(Node{v})) in_by_id[v].push_back(idx(ch));
            std::sort(in_by_id[v].begin(), in_by_id[v].end());
        }
        std::vector<int> cur(P_), next(P_);
        for (std::uint32_t c = 0; c < C_; ++c) {
            check_deadline(opt_);
            for (std::uint32_t v = 0; v < P_; ++v)
                for (Step t = 1; t <= H_; ++t) {
                    for (std::uint32_t s = 0; s < P_; ++s) cur[s] = h_[hidx(c, v, s, t - 1)];
                    const std::vector<std::size_t>& ins = in_by_id[v];
                    for (std::size_t j = 0; j < ins.size(); ++j) {
                        arrival(c, v, t, ins[j], j + 1 == ins.size(), cur, next);
                        std::swap(cur, next);
                    }
                    if (ins.empty())
                        for (std::uint32_t s = 0; s < P_; ++s) {
                            const int a = h_[hidx(c, v, s, t - 1)], b = h_[hidx(c, v, s, t)];
                            f_.clause({-a, b});
                            f_.clause({a, -b});
                        }
                }
        }
    }

    /// One arrival at v over channel `ch` in step t: the buffer after it (`next`, the step's
    /// final h when it is the last) is cur or, when the partial crosses, cur with the sender's
    /// buffer; the arrival is legal when disjoint (d) or covering (k).
    void arrival(std::uint32_t c, std::uint32_t v, Step t, std::size_t ch, bool last, const std::vector<int>& cur, std::vector<int>& next) {
        const std::uint32_t u = idx(topo_.channels()[ch].from);
        const int xj = x_[xidx(c, ch, t)];
        for (std::uint32_t s = 0; s < P_; ++s) {
            const int sent = h_[hidx(c, u, s, t - 1)];
            if (last) next[s] = h_[hidx(c, v, s, t)];
            else if (cur[s] == Formula::top) next[s] = Formula::top;
            else if (cur[s] == -Formula::top && sent == -Formula::top) next[s] = -Formula::top;
            else next[s] = f_.new_var();
            // next <-> cur or (x and sent)
            f_.clause({-cur[s], next[s]});
            f_.clause({-xj, -sent, next[s]});
            f_.clause({-next[s], cur[s], xj});
            f_.clause({-next[s], cur[s], sent});
        }
        const int d = f_.new_var(), k = f_.new_var();
        f_.clause({-xj, d, k});
        for (std::uint32_t s = 0; s < P_; ++s) {
            const int sent = h_[hidx(c, u, s, t - 1)];
            f_.clause({-d, -sent, -cur[s]});
            f_.clause({-k, -cur[s], sent});
        }
    }

    /// Capacity per channel, link groups, ports.
    void limits() {
        for (std::size_t ch = 0; ch < E_; ++ch)
            for (Step t = 1; t <= H_; ++t) {
                std::vector<int> ls;
                for (std::uint32_t c = 0; c < C_; ++c) ls.push_back(x_[xidx(c, ch, t)]);
                rounds_->at_most(std::move(ls), topo_.channels()[ch].cap, t, t);
            }
        for (const LinkGroup& g : topo_.groups())
            for (Step t = 1; t <= H_; ++t) {
                std::vector<int> ls;
                for (ChannelId ch : g.channels)
                    for (std::uint32_t c = 0; c < C_; ++c) ls.push_back(x_[xidx(c, idx(ch), t)]);
                rounds_->at_most(std::move(ls), g.cap, t, t);
            }
        port_limits(*rounds_, topo_, model_.ports, H_, C_,
                    [&](std::size_t c, ChannelId ch, Step t) { return x_[xidx(static_cast<std::uint32_t>(c), idx(ch), t)]; },
                    [](std::uint32_t) {});
    }

    /// Goals: the buffer of chunk c at p holds exactly a({0..hi}, c) at T (at H always, before
    /// H under the assumption deadline[T]).
    void deadlines() {
        e_.deadline.assign(H_ + 1, 0);
        auto goals = [&](Step T, int d) {
            in_.collective.for_each_partial_goal(P_, C_, [&](std::uint32_t c, std::uint32_t hi, Node p) {
                for (std::uint32_t s = 0; s < P_; ++s) {
                    const int l = h_[hidx(c, idx(p), s, T)];
                    if (d == 0) f_.clause({s <= hi ? l : -l});
                    else f_.clause({-d, s <= hi ? l : -l});
                }
            });
        };
        for (Step T = far_; T <= H_; ++T) {
            if (T == H_) {
                goals(H_, 0);
                continue;
            }
            e_.deadline[T] = f_.new_var();
            goals(T, e_.deadline[T]);
        }
    }

    /// Candidates: the pool's message carries the chunk; decode names the partial (the sender's
    /// buffer at the end of the step before) by replaying the buffer rule.
    void decoding() {
        for (std::uint32_t c = 0; c < C_; ++c)
            for (std::size_t ch = 0; ch < E_; ++ch)
                for (Step t = 1; t <= H_; ++t) {
                    e_.candidates.push_back({x_[xidx(c, ch, t)], static_cast<std::uint32_t>(e_.pool.size()), 1, t});
                    e_.pool.push_back({t, ChannelId{static_cast<std::uint32_t>(ch)}, MessageId{c}});
                }
    }

    const std::uint32_t P_, C_;
    const std::size_t E_;
    Step far_ = 0;
    std::vector<int> h_, x_;
    std::optional<Rounds> rounds_;
};

}  // namespace

void encode_combining(const SynthInstance& in, Step H, const SynthOptions& opt, Encoding& e) { CombiningEncoder(in, H, opt, e).encode(); }

}  // namespace collsched::synth

namespace collsched {

std::string buffer_rule_infeasible(const SynthInstance& in) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors(), C = in.collective.chunks;
    if (!in.collective.row().has_partials() || in.model.combine_routers || P > 4096 || std::uint64_t{C} * P > (std::uint64_t{1} << 24)) return {};
    // goal[c][p]: the prefix a(0..hi) processor p must end with in chunk c; -1: no goal. Only a goal
    // short of every contribution constrains the relays (otherwise the condition is connectivity).
    std::vector<std::vector<std::int64_t>> goal(C, std::vector<std::int64_t>(P, -1));
    bool short_goal = false;
    in.collective.for_each_partial_goal(P, C, [&](std::uint32_t c, std::uint32_t hi, Node p) {
        goal[c][idx(p)] = hi;
        short_goal = short_goal || hi + 1 < P;
    });
    if (!short_goal) return {};
    // A partial leaves a processor and arrives at the next processor through routers only.
    std::vector<std::vector<std::uint32_t>> next(P);
    std::uint64_t relay_edges = 0;
    for (std::uint32_t k = 0; k < P; ++k) {
        std::vector<bool> seen(t.nodes(), false);
        std::vector<Node> stack{Node{k}};
        seen[k] = true;
        while (!stack.empty()) {
            const Node v = stack.back();
            stack.pop_back();
            for (ChannelId e : t.out_channels(v)) {
                const Node w = t.channel(e).to;
                if (seen[idx(w)]) continue;
                seen[idx(w)] = true;
                if (t.is_processor(w)) next[k].push_back(idx(w));
                else stack.push_back(w);
            }
        }
        relay_edges += next[k].size();
    }
    if (relay_edges * P > (std::uint64_t{1} << 30)) return {};  // the proof is an extra: not at any cost
    auto holds = [](std::int64_t hi, std::uint32_t s) { return hi < 0 || std::int64_t{s} <= hi; };
    std::set<std::vector<std::int64_t>> done;
    for (std::uint32_t c = 0; c < C; ++c) {
        if (!done.insert(goal[c]).second) continue;
        const std::vector<std::int64_t>& g = goal[c];
        for (std::uint32_t i = 0; i < P; ++i) {
            // Processors that may ever hold a(i): those whose goal has it (or that have no goal).
            std::vector<bool> reached(P, false);
            std::vector<std::uint32_t> queue{i};
            reached[i] = true;
            for (std::size_t h = 0; h < queue.size(); ++h) {
                const std::uint32_t k = queue[h];
                for (std::uint32_t w : next[k])
                    if (!reached[w] && holds(g[w], i) && holds(g[w], k)) {
                        reached[w] = true;
                        queue.push_back(w);
                    }
            }
            for (std::uint32_t p = 0; p < P; ++p)
                if (g[p] >= 0 && !reached[p] && holds(g[p], i))
                    return fmt::format(
                        "the buffer rule (docs/semantics.md, \"Reductions\") forbids it: processor {} must end with a({}){} but no "
                        "chain of processors can carry it there. A buffer only grows (a combination or a copy that covers it) "
                        "and ends as its goal, and a processor sends its whole buffer, its own contribution included; so a partial "
                        "holding a({}) passes from processor k only to a processor whose goal holds both a({}) and a(k), and from {} "
                        "such steps reach processors {} only",
                        p, i, C > 1 ? fmt::format(" in chunk {}", c) : "", i, i, i, synth::reached_list(reached));
        }
    }
    return {};
}

std::string combining_problem(const SynthInstance& in) {
    const Topology& t = *in.topology;
    if (!in.collective.row().has_partials())
        return "the direct encoding of combining covers allreduce, reduce_scatter, reduce:R and scan";
    if (in.model.timing != Timing::hop) return "the direct encoding of combining is stated for hop timing (timing=hop)";
    if (t.routers() > 0)
        return fmt::format("{} has routers; the direct encoding of combining takes networks of processors only (a partial "
                           "through a router would need queue and replication variables per contributor set)",
                           t.spec());
    if (in.model.inject_once) return "inject=once is not encoded for combining";
    if (in.routes == RouteSpace::fixed) return "combining is searched over any route; --routes fixed is not supported";
    if (in.collective.chunks == 0) return "--chunks must be at least 1";
    if (std::string why = in.collective.reduction_problem(t.processors(), in.collective.chunks); !why.empty())
        return fmt::format("{} takes a multiple of P = {} chunks, not {}", in.collective.row().name, t.processors(), in.collective.chunks);
    return "";
}

}  // namespace collsched
