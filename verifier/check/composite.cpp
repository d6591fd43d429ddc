#include "verifier/check/composite.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "compiler/table/partials.hpp"
#include "verifier/check/findings.hpp"
#include "verifier/check/limit_poll.hpp"

namespace collsched::detail {

bool needs_composite_check(const SendTable& t) { return t.has_composites() || t.collective.combines() || t.collective.reduces(); }

namespace {

/// What a processor holds at the end of a step: messages received (base ids and combined
/// values by id) and, for combining, the source ranges it holds, sorted (a(k) is (k, k)).
struct Holdings {
    std::unordered_set<std::uint32_t> received;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;
};

/// One router's copies of one message (hop timing).
struct RouterCopies {
    std::deque<Step> waiting;  ///< replicate=no: arrival steps of copies not yet sent on (FIFO)
    std::uint32_t received = 0;
    Step first = never, last = never, last_departure = 0;
    Step took = never;  ///< multicast=routers: the last step in which a send took a copy or combined
};

class CompositeChecker {
public:
    CompositeChecker(const SendTable& t, const VerifyOptions& opt, VerifyReport& r)
        : t_(t), topo_(*t.topology), ms_(t.messages()), opt_(opt), found_(r, opt.max_violations), P_(topo_.processors()), held_(P_),
          partials_(uses_partials(t)), chunks_(table_chunks(t)) {
        for (std::uint32_t p = 0; p < P_; ++p) {
            if (t_.collective.initial(ms_, ms_.value(p))) held_[p].ranges.push_back({p, p});
        }
        if (partials_) buffers_.emplace(P_, chunks_);
    }

    void run() {
        if (t_.model.timing == Timing::wormhole) wormhole();
        else hop();
        goals();
    }

private:
    std::string node(Node n) const { return topo_.node_name(n); }
    std::string msg(MessageId m) const { return ms_.name(m); }

    /// Whether processor p can form a(lo..hi) from the ranges it holds; `reach` (when given)
    /// gets the farthest hi' such that it can form a(lo..hi').
    bool forms(std::uint32_t p, std::uint32_t lo, std::uint32_t hi, std::int64_t* reach = nullptr) const {
        std::vector<char> r(hi - lo + 2, 0);
        r[0] = 1;
        for (const auto& [a, b] : held_[p].ranges) {  // sorted by start: r[a - lo] is final when a is met
            if (a < lo || a > hi || b > hi || !r[a - lo]) continue;
            r[b + 1 - lo] = 1;
        }
        if (reach) {
            *reach = -1;
            for (std::uint32_t x = hi + 1; x > lo; --x)
                if (r[x - lo]) {
                    *reach = x - 1;
                    break;
                }
        }
        return r[hi + 1 - lo] != 0;
    }

    /// Whether processor p holds m at the end of the step processed last.
    bool holds(std::uint32_t p, MessageId m) {
        if (partials_) {
            if (auto pv = buffers_->set_of(ms_, m)) return buffers_->held(p, pv->first) == pv->second;
        }
        if (!ms_.is_composite(m)) {
            MessageKey k = ms_.key(m);
            if (k.kind == MessageKind::value) return forms(p, k.src, k.src);
            return (k.src == p && t_.collective.initial(ms_, m)) || held_[p].received.count(idx(m));
        }
        const Composite& c = ms_.composite(m);
        if (c.kind == MessageKind::combined) return held_[p].received.count(idx(m)) || forms(p, c.lo, c.hi);
        return std::all_of(c.parts.begin(), c.parts.end(), [&](MessageId q) { return holds(p, q); });
    }

    /// Why processor p does not hold m (after "... sends m in step s but").
    std::string lacking(std::uint32_t p, MessageId m) {
        if (partials_)
            if (auto pv = buffers_->set_of(ms_, m)) return fmt::format("its buffer holds {}", buffers_->name(ms_, buffers_->held(p, pv->first), pv->first));
        if (ms_.is_composite(m) || ms_.key(m).kind == MessageKind::value) {
            MessageKey k = ms_.key(m);
            if (k.kind == MessageKind::bundle) {
                for (MessageId q : ms_.composite(m).parts)
                    if (!holds(p, q)) return fmt::format("does not hold its part {}", msg(q));
            }
            return lacking_range(p, k.src, k.kind == MessageKind::value ? k.src : k.dst);
        }
        return "does not hold it";
    }

    /// Applies an arrival at processor p; under the buffer rule of partials a partial or value
    /// combines into the buffer of its chunk or replaces it (docs/semantics.md, "Reductions").
    void receive(std::uint32_t p, MessageId m, const Transfer& x) {
        if (partials_) {
            if (auto pv = buffers_->set_of(ms_, m)) {
                const PartialBuffers::SetId before = buffers_->held(p, pv->first);
                std::string twice;
                switch (buffers_->arrive(p, pv->first, pv->second, &twice)) {
                    case Arrival::combined:
                    case Arrival::replaced: break;
                    case Arrival::counted_twice:
                        found_.add(Property::causality,
                                   {Property::causality, x.step, x.channel, Node{p}, {m},
                                    fmt::format("processor {} receives {} in {} {} while its buffer holds {}: combining them counts {} twice",
                                                node(Node{p}), msg(m), t_.model.timing == Timing::hop ? "step" : "round", x.step, buffers_->name(ms_, before, pv->first), twice)});
                        break;
                }
                return;
            }
        }
        ms_.for_each_part(m, [&](MessageId q) {
            if (!held_[p].received.insert(idx(q)).second) return;
            MessageKey k = ms_.key(q);
            if (k.kind != MessageKind::value && k.kind != MessageKind::combined) return;
            std::pair<std::uint32_t, std::uint32_t> range{k.src, k.kind == MessageKind::value ? k.src : k.dst};
            auto& rs = held_[p].ranges;
            auto at = std::lower_bound(rs.begin(), rs.end(), range);
            if (at == rs.end() || *at != range) rs.insert(at, range);
        });
    }

    void causality(const Transfer& x, Node at, std::string detail) {
        found_.add(Property::causality, {Property::causality, x.step, x.channel, at, {x.message}, std::move(detail)});
    }

    void route(const Transfer& x) {
        if (!opt_.fixed_routes || ms_.is_composite(x.message)) return;
        MessageKey k = ms_.key(x.message);
        if (k.kind != MessageKind::personal) return;
        route_.clear();
        topo_.route(Node{k.src}, Node{k.dst}, route_);
        if (std::find(route_.begin(), route_.end(), x.channel) == route_.end()) {
            const Channel& c = topo_.channel(x.channel);
            found_.add(Property::routes, {Property::routes, x.step, x.channel, std::nullopt, {x.message},
                                          fmt::format("{} crosses {}->{}, which is not on its route {} -> {}", msg(x.message), node(c.from),
                                                      node(c.to), k.src, k.dst)});
        }
    }

    // -- hop timing: per step, the sends against the holdings of the step before, then arrivals.

    void hop() {
        const auto& xs = t_.transfers;
        const bool none = t_.model.queues == QueueKind::none;
        for (std::size_t i = 0; i < xs.size();) {
            limits_(true);
            std::size_t end = i;
            while (end < xs.size() && xs[end].step == xs[i].step) ++end;
            for (std::size_t k = i; k < end; ++k) {
                limits_(false);
                const Transfer& x = xs[k];
                const Channel& c = topo_.channel(x.channel);
                route(x);
                if (topo_.is_processor(c.from)) {
                    if (!holds(idx(c.from), x.message))
                        causality(x, c.from, fmt::format("processor {} sends {} in step {} but {}", node(c.from), msg(x.message), x.step,
                                                         lacking(idx(c.from), x.message)));
                    continue;
                }
                RouterCopies& rc = routers_[key(c.from, x.message)];
                // multicast=routers: later sends of one step share the copy (or the combination)
                // the first send of that step took
                const bool multicast = t_.model.multicast_routers && !t_.model.replicate && topo_.can_multicast(c.from);
                if (multicast && rc.took == x.step) continue;
                if (rc.waiting.empty() && t_.model.combine_routers && topo_.can_reduce(c.from) && combine_at_router(x, c.from)) {
                    rc.took = x.step;
                    continue;
                }
                if (!rc.waiting.empty()) rc.took = x.step;
                if (rc.first == never) {
                    causality(x, c.from, fmt::format("{} forwards {} in step {} but has not received it", node(c.from), msg(x.message), x.step));
                } else if (t_.model.replicate) {
                    rc.last_departure = x.step;
                    if (none && rc.last + 1 != x.step)
                        found_.add(Property::queues,
                                   {Property::queues, x.step, x.channel, c.from, {x.message},
                                    fmt::format("{} sends {} in step {} but received it last in step {}; with queues=none a router "
                                                "sends only in the step after an arrival",
                                                node(c.from), msg(x.message), x.step, rc.last)});
                } else if (rc.waiting.empty()) {
                    found_.add(Property::replication,
                               {Property::replication, x.step, x.channel, c.from, {x.message},
                                fmt::format("{} forwards {} in step {} but received only {} cop{} and has sent them on; routers do not "
                                            "replicate (replicate=no)",
                                            node(c.from), msg(x.message), x.step, rc.received, rc.received == 1 ? "y" : "ies")});
                } else {
                    Step a = rc.waiting.front();
                    rc.waiting.pop_front();
                    if (none && x.step != a + 1)
                        found_.add(Property::queues, {Property::queues, a + 1, x.channel, c.from, {x.message},
                                                      fmt::format("{} entered {} in step {} and leaves in step {}; with queues=none it "
                                                                  "must leave in step {}",
                                                                  msg(x.message), node(c.from), a, x.step, a + 1)});
                }
            }
            for (std::size_t k = i; k < end; ++k) {
                limits_(false);  // the arrivals of a step: a million on rail 128 x 8 in 3 pieces, about a second
                const Transfer& x = xs[k];
                Node to = topo_.channel(x.channel).to;
                if (topo_.is_processor(to)) {
                    receive(idx(to), x.message, x);
                    continue;
                }
                RouterCopies& rc = routers_[key(to, x.message)];
                if (t_.model.combine_routers && topo_.can_reduce(to) && rc.received == 0)
                    if (auto pv = partial_of(ms_, x.message)) router_partials_[key(to, MessageId{pv->chunk})].push_back(x.message);
                rc.first = std::min(rc.first, x.step);
                rc.last = x.step;
                ++rc.received;
                if (!t_.model.replicate) rc.waiting.push_back(x.step);
            }
            i = end;
        }
        std::vector<WaitInterval> waiting;
        std::vector<std::pair<std::uint64_t, const RouterCopies*>> order(routers_.size());
        std::size_t n = 0;
        for (const auto& [k, rc] : routers_) order[n++] = {k, &rc};
        std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        for (const auto& [k, rc] : order) {
            Node r{static_cast<std::uint32_t>(k >> 32)};
            MessageId m{static_cast<std::uint32_t>(k)};
            if (none && !t_.model.replicate)
                for (Step a : rc->waiting)
                    found_.add(Property::queues, {Property::queues, a + 1, std::nullopt, r, {m},
                                                  fmt::format("{} entered {} in step {} and never leaves; with queues=none it must leave in "
                                                              "step {}",
                                                              msg(m), node(r), a, a + 1)});
            if (t_.model.replicate && t_.model.queues == QueueKind::bounded && rc->first != never && rc->last_departure >= rc->first + 2)
                waiting.push_back({idx(r), rc->first, rc->last_departure - 2});
        }
        sweep_waiting(waiting, topo_.nodes(), t_.model.queue_bound, found_);
    }

    static std::uint64_t key(Node n, MessageId m) { return (std::uint64_t{idx(n)} << 32) | idx(m); }

    /// combine=routers (docs/semantics.md, "Reductions"): router r sends a partial X it holds no
    /// copy of. The partials of X's chunk that r holds (arrived in an earlier step, not yet sent
    /// on) and that lie inside X are its inputs: when they are pairwise disjoint and together are
    /// exactly X, r combines them into X, one copy of each is consumed (under queues=none each
    /// must have arrived in the step before), and the send is legal. Otherwise nothing is
    /// consumed and the send is reported as any send of a message the router does not hold.
    bool combine_at_router(const Transfer& x, Node r) {
        auto pv = partial_of(ms_, x.message);
        if (!pv) return false;
        auto list = router_partials_.find(key(r, MessageId{pv->chunk}));
        if (list == router_partials_.end()) return false;
        std::vector<MessageId> inputs;
        std::vector<std::uint32_t> all;
        std::size_t total = 0;
        for (MessageId y : list->second) {
            if (routers_[key(r, y)].waiting.empty()) continue;
            auto py = partial_of(ms_, y);
            if (!std::includes(pv->sources.begin(), pv->sources.end(), py->sources.begin(), py->sources.end())) continue;
            inputs.push_back(y);
            total += py->sources.size();
            std::vector<std::uint32_t> u;
            std::set_union(all.begin(), all.end(), py->sources.begin(), py->sources.end(), std::back_inserter(u));
            all = std::move(u);
        }
        if (inputs.empty() || total != pv->sources.size() || all != pv->sources) return false;
        const bool none = t_.model.queues == QueueKind::none;
        for (MessageId y : inputs) {
            RouterCopies& rc = routers_[key(r, y)];
            const Step a = rc.waiting.front();
            rc.waiting.pop_front();
            if (none && x.step != a + 1)
                found_.add(Property::queues, {Property::queues, a + 1, x.channel, r, {y},
                                              fmt::format("{} entered {} in step {} and is combined into {} in step {}; with "
                                                          "queues=none it must leave in step {}",
                                                          msg(y), node(r), a, msg(x.message), x.step, a + 1)});
        }
        return true;
    }

    // -- wormhole timing: a round's worms, found by a fixpoint; processors send what they held
    // at the end of the round before, any node passes on what reached it in the round.

    void wormhole() {
        const auto& xs = t_.transfers;
        std::vector<char> ok;
        std::unordered_set<std::uint64_t> reached;  // (node, message) that arrived in the round
        for (std::size_t i = 0; i < xs.size();) {
            std::size_t end = i;
            const Step r = xs[i].step;
            while (end < xs.size() && xs[end].step == r) ++end;
            ok.assign(end - i, 0);
            reached.clear();
            limits_(true);
            for (bool changed = true; changed;) {
                changed = false;
                for (std::size_t k = i; k < end; ++k) {
                    limits_(false);
                    if (ok[k - i]) continue;
                    const Transfer& x = xs[k];
                    const Channel& c = topo_.channel(x.channel);
                    // a processor's partial moves whether or not its buffer holds it (that is reported below, once)
                    bool held = reached.count(key(c.from, x.message)) ||
                                (topo_.is_processor(c.from) && ((partials_ && buffers_->set_of(ms_, x.message)) || holds(idx(c.from), x.message)));
                    if (!held) continue;
                    ok[k - i] = 1;
                    changed = true;
                    reached.insert(key(c.to, x.message));  // a bundle passes on whole: one packet
                }
            }
            if (!t_.model.replicate) balance(i, end, ok);
            for (std::size_t k = i; k < end; ++k) {
                const Transfer& x = xs[k];
                const Channel& c = topo_.channel(x.channel);
                route(x);
                if (ok[k - i] && partials_ && topo_.is_processor(c.from) && buffers_->set_of(ms_, x.message) && !holds(idx(c.from), x.message))
                    causality(x, c.from, fmt::format("processor {} sends {} in round {} but {}", node(c.from), msg(x.message), r,
                                                     lacking(idx(c.from), x.message)));
                if (!ok[k - i])
                    causality(x, c.from,
                              fmt::format("{} sends {} in round {} but {}", node(c.from), msg(x.message), r,
                                          topo_.is_processor(c.from) ? lacking(idx(c.from), x.message) : "has not received it in this round"));
            }
            for (std::size_t k = i; k < end; ++k) {
                Node to = topo_.channel(xs[k].channel).to;
                // an illegal transfer delivers a partial (the rule of both timings for partials, docs/semantics.md)
                const bool delivers = ok[k - i] || (partials_ && buffers_->set_of(ms_, xs[k].message));
                if (delivers && topo_.is_processor(to)) receive(idx(to), xs[k].message, xs[k]);
            }
            i = end;
        }
    }

    /// replicate=no under wormhole: a router passes on each message (a bundle is one packet) at
    /// most as often as it receives it in the round.
    void balance(std::size_t i, std::size_t end, const std::vector<char>& ok) {
        std::vector<std::pair<std::uint64_t, int>> b;
        for (std::size_t k = i; k < end; ++k) {
            if (!ok[k - i]) continue;
            const Channel& c = topo_.channel(t_.transfers[k].channel);
            const MessageId m = t_.transfers[k].message;
            if (!topo_.is_processor(c.to)) b.push_back({key(c.to, m), 1});
            if (!topo_.is_processor(c.from)) b.push_back({key(c.from, m), -1});
        }
        std::sort(b.begin(), b.end());
        for (std::size_t a = 0; a < b.size();) {
            int sum = 0;
            std::size_t z = a;
            for (; z < b.size() && b[z].first == b[a].first; ++z) sum += b[z].second;
            if (sum < 0) {
                Node n{static_cast<std::uint32_t>(b[a].first >> 32)};
                MessageId m{static_cast<std::uint32_t>(b[a].first)};
                found_.add(Property::replication, {Property::replication, t_.transfers[i].step, std::nullopt, n, {m},
                                                   fmt::format("{} sends {} more often than it receives it in round {}", node(n), msg(m),
                                                               t_.transfers[i].step)});
            }
            a = z;
        }
    }

    // -- completeness --------------------------------------------------------------------------

    void goals() {
        // Only the counterexamples the report shows are written out; the others are counted
        // (a one-transfer allreduce on linear:65534 built 65,534 texts to print 4).
        auto shown = [&] {
            if (found_.wants(Property::completeness)) return true;
            found_.count(Property::completeness);
            return false;
        };
        auto missing = [&](MessageId m, Node p) {
            if (!shown()) return;
            found_.add(Property::completeness, {Property::completeness, 0, std::nullopt, p, {m},
                                                fmt::format("{} never reaches processor {}", msg(m), node(p))});
        };
        t_.collective.for_each_goal(P_, [&](MessageId m, Node p) {
            limits_(false);
            if (!holds(idx(p), m)) missing(m, p);
        });
        for (const Requirement& q : t_.requirements)
            if (!holds(idx(q.at), q.message)) missing(q.message, q.at);
        if (partials_) {
            std::optional<std::pair<std::uint32_t, PartialBuffers::SetId>> goal;  // (hi, its set): alike for every processor of an allreduce
            t_.collective.for_each_partial_goal(P_, chunks_, [&](std::uint32_t c, std::uint32_t hi, Node p) {
                limits_(false);
                if (!goal || goal->first != hi) goal = {hi, buffers_->intern(SourceSet::range(0, hi).items())};
                const PartialBuffers::SetId have = buffers_->held(idx(p), c);
                if (have == goal->second || !shown()) return;
                const std::span<const std::uint32_t> held = buffers_->sources(have);
                const SourceSet b(std::vector<std::uint32_t>(held.begin(), held.end())), want = SourceSet::range(0, hi);
                std::vector<MessageId> ids;
                if (auto id = find_partial(ms_, want, c)) ids.push_back(*id);
                found_.add(Property::completeness, {Property::completeness, 0, std::nullopt, p, std::move(ids),
                                                    fmt::format("processor {} ends with {} but needs {}: {}", node(p), partial_name(ms_, b, c),
                                                                partial_name(ms_, want, c), goal_gap(b, want))});
            });
            return;
        }
        t_.collective.for_each_value_goal(P_, [&](std::uint32_t lo, std::uint32_t hi, Node p) {
            if (forms(idx(p), lo, hi) || !shown()) return;
            std::vector<MessageId> ids;
            if (const Composites* reg = ms_.composites())
                if (auto id = reg->find({MessageKind::combined, lo, hi, {}, {}})) ids.push_back(*id);
            found_.add(Property::completeness, {Property::completeness, 0, std::nullopt, p, std::move(ids),
                                                fmt::format("processor {} never holds a({}..{}): at the end it {}", node(p), lo, hi,
                                                            lacking_range(idx(p), lo, hi))});
        });
    }

    std::string lacking_range(std::uint32_t p, std::uint32_t lo, std::uint32_t hi) const {
        std::int64_t reach = -1;
        forms(p, lo, hi, &reach);
        if (reach < 0) return fmt::format("holds no value that starts at a({})", lo);
        return fmt::format("holds only {}", reach == lo ? fmt::format("a({})", lo) : fmt::format("a({}..{})", lo, reach));
    }

    const SendTable& t_;
    const Topology& topo_;
    Messages ms_;
    const VerifyOptions& opt_;
    Findings found_;
    const std::uint32_t P_;
    std::vector<Holdings> held_;
    std::unordered_map<std::uint64_t, RouterCopies> routers_;
    /// combine=routers: per (router, chunk) the partials that have reached the router, in order of first arrival.
    std::unordered_map<std::uint64_t, std::vector<MessageId>> router_partials_;
    std::vector<ChannelId> route_;
    const bool partials_;
    const std::uint32_t chunks_;
    std::optional<PartialBuffers> buffers_;  ///< the buffer rule of partials: every processor's contributor set per chunk
    LimitPoll limits_{opt_};  ///< VerifyOptions' deadline and memory budget, every step and every 4096 transfers
};

}  // namespace

void check_composites(const SendTable& t, const VerifyOptions& opt, VerifyReport& r) { CompositeChecker(t, opt, r).run(); }

}  // namespace collsched::detail
