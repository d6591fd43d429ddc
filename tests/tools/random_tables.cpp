// Seeded random tables for the agreement tests (random_tables.hpp): the generators as classes,
// one method per stage, every random draw in its first order so that a seed keeps its table.
#include "tests/tools/random_tables.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "tests/tools/random_grid.hpp"

namespace collsched::testing {

namespace {

std::vector<ChannelId> out_channels(const Topology& t, Node n) {
    auto s = t.out_channels(n);
    return {s.begin(), s.end()};
}

/// A random model of the topology: wormhole timing with probability p_wormhole, any ports,
/// queues unbounded, none or bounded (0..2), routers replicating with probability p_replicate.
Model random_model(Rng& rng, const Topology& T, double p_wormhole, double p_replicate) {
    Model model = T.default_model();
    if (rng.chance(p_wormhole)) {
        model.timing = Timing::wormhole;
        model.ts = 1;
        model.tc = 0.5;
    }
    model.ports = std::array{Ports::multi, Ports::single, Ports::half}[rng.in(0, 2)];
    switch (rng.in(0, 4)) {
        case 0: model.queues = QueueKind::unbounded; break;
        case 1: model.queues = QueueKind::none; break;
        default:
            model.queues = QueueKind::bounded;
            model.queue_bound = static_cast<std::uint32_t>(rng.in(0, 2));
    }
    model.replicate = rng.chance(p_replicate);
    return model;
}

/// What both generators draw first, in this order: a topology of the list, then its model.
struct Draws {
    Draws(std::uint64_t seed, std::uint64_t rng_seed, const std::vector<std::string>& topologies, double p_wormhole, double p_replicate)
        : seed_(seed), rng_(rng_seed), topo_(Topology::parse(rng_.pick(topologies))), T_(*topo_), P_(T_.processors()),
          model_(random_model(rng_, T_, p_wormhole, p_replicate)), hop_(model_.timing == Timing::hop) {}

    const std::uint64_t seed_;
    Rng rng_;
    std::shared_ptr<const Topology> topo_;
    const Topology& T_;
    const std::uint32_t P_;
    const Model model_;
    const bool hop_;
};

/// The generator of make_instance: one method per stage, called in order by make(); every
/// random draw in the order the tables were first made with, so a seed keeps its table.
class RandomInstance : Draws {
public:
    RandomInstance(std::uint64_t seed, const std::vector<std::string>& topologies)
        : Draws(seed, seed, topologies, 0.2, 0.5), ms_(P_), grid_(T_, model_.ports) {}

    Instance make() {
        collective();
        place();
        relay();
        faults();
        for (const Transfer& x : xs_) REQUIRE(x.step >= 1);
        Instance in;
        in.table.topology = topo_;
        in.table.model = model_;
        in.table.collective = coll_;
        in.table.requirements = reqs_;
        in.table.transfers = std::move(xs_);
        in.table.sort();
        in.fixed_routes = rng_.chance(0.3);
        in.description = fmt::format("seed {}: {} model {} collective {}{}{} faults [{}]{}, {} transfers", seed_, T_.spec(), to_string(model_),
                                     coll_.to_string(), trees_ ? " (flooding trees)" : "", shape_, faults_, in.fixed_routes ? " fixed routes" : "",
                                     in.table.transfers.size());
        return in;
    }

private:
    /// The collective and the deliveries (message, destination) that the schedule makes.
    void collective() {
        Node root{static_cast<std::uint32_t>(rng_.in(0, static_cast<int>(P_) - 1))};
        int kind = rng_.in(0, 6);
        if (kind == 0 && P_ > 8) kind = 2;  // keep total exchanges small
        switch (kind) {
            case 0: coll_.kind = CollectiveKind::alltoall; break;
            case 1: coll_.kind = CollectiveKind::allgather; break;
            case 2: coll_.kind = CollectiveKind::broadcast; break;
            case 3: coll_.kind = CollectiveKind::scatter; break;
            case 4: coll_.kind = CollectiveKind::gather; break;
            case 5: coll_.kind = CollectiveKind::multicast; break;
            default: coll_.kind = CollectiveKind::custom; break;
        }
        coll_.root = root;
        if (coll_.kind == CollectiveKind::multicast) {
            for (std::uint32_t p = 0; p < P_; ++p)
                if (p != idx(root) && rng_.chance(0.5)) coll_.members.push_back(Node{p});
            if (coll_.members.empty()) coll_.members.push_back(Node{(idx(root) + 1) % P_});
        }
        coll_.for_each_goal(P_, [&](MessageId m, Node p) { deliveries_.push_back({m, p}); });
        if (coll_.kind == CollectiveKind::custom) {
            for (int k = rng_.in(1, 4); k > 0; --k) {
                std::uint32_t s = static_cast<std::uint32_t>(rng_.in(0, static_cast<int>(P_) - 1));
                std::uint32_t d = (s + static_cast<std::uint32_t>(rng_.in(1, static_cast<int>(P_) - 1))) % P_;
                MessageId m = rng_.chance(0.5) ? ms_.personal(s, d) : ms_.broadcast(s);
                deliveries_.push_back({m, Node{d}});
                reqs_.push_back({m, Node{d}});
            }
        }
    }

    int wait_at(Node n) {
        if (!T_.is_processor(n) && model_.queues == QueueKind::none) return 0;
        if (!T_.is_processor(n) && model_.queues == QueueKind::bounded && rng_.chance(0.7)) return 0;
        return rng_.chance(0.15) ? 1 : 0;
    }

    /// Endpoint sends along the topology's routes, or flooding trees of broadcast messages.
    void place() {
        trees_ = model_.replicate && rng_.chance(0.6);
        std::map<std::uint32_t, std::vector<Node>> broadcasts;  // broadcast message -> targets
        for (auto [m, d] : deliveries_) {
            if (trees_ && ms_.key(m).kind == MessageKind::broadcast) {
                broadcasts[idx(m)].push_back(d);
                continue;
            }
            place_path(m, T_.route(ms_.origin(m), d), static_cast<Step>(rng_.in(1, 3)));
        }
        for (auto& [m, targets] : broadcasts) place_tree(MessageId{m}, targets, static_cast<Step>(rng_.in(1, 3)));
    }

    /// An endpoint send along `path`, not before `base`: a whole path in one round (wormhole),
    /// else hop by hop with random waits where the model allows them.
    void place_path(MessageId m, const std::vector<ChannelId>& path, Step base) {
        if (path.empty()) return;
        if (!hop_) {
            Step r = base;
            for (int tries = 0; tries < 40 && !grid_.fits_round(r, path); ++tries) ++r;
            for (ChannelId c : path) {
                grid_.take(r, c);
                xs_.push_back({r, c, m});
            }
            return;
        }
        std::vector<int> waits(path.size(), 0);
        for (std::size_t k = 1; k < path.size(); ++k) waits[k] = wait_at(T_.channel(path[k]).from);
        Step start = base;
        auto steps_from = [&](Step s0) {
            std::vector<Step> st;
            Step s = s0;
            for (std::size_t k = 0; k < path.size(); ++k) {
                s += k ? 1 + waits[k] : 0;
                st.push_back(s);
            }
            return st;
        };
        for (int tries = 0; tries < 40; ++tries, ++start) {
            auto st = steps_from(start);
            bool ok = true;
            for (std::size_t k = 0; k < path.size() && ok; ++k) ok = grid_.fits(st[k], path[k]);
            if (ok) break;
        }
        auto st = steps_from(start);
        for (std::size_t k = 0; k < path.size(); ++k) {
            grid_.take(st[k], path[k]);
            xs_.push_back({st[k], path[k], m});
        }
    }

    /// A flooding tree of one broadcast message (replicate=yes): BFS from its origin, pruned to
    /// the branches that lead to targets, each edge in the first free step after its parent's.
    void place_tree(MessageId m, const std::vector<Node>& targets, Step base) {
        Node src = ms_.origin(m);
        std::vector<int> parent(T_.nodes(), -1);
        std::vector<ChannelId> via(T_.nodes(), ChannelId{0});
        std::vector<Node> order{src};
        parent[idx(src)] = static_cast<int>(idx(src));
        for (std::size_t q = 0; q < order.size(); ++q)
            for (ChannelId c : out_channels(T_, order[q])) {
                Node v = T_.channel(c).to;
                if (parent[idx(v)] >= 0) continue;
                parent[idx(v)] = static_cast<int>(idx(order[q]));
                via[idx(v)] = c;
                order.push_back(v);
            }
        std::vector<char> needed(T_.nodes(), 0);
        for (Node d : targets)
            for (Node v = d; v != src && !needed[idx(v)]; v = Node{static_cast<std::uint32_t>(parent[idx(v)])}) needed[idx(v)] = 1;
        std::vector<Step> at(T_.nodes(), 0);
        at[idx(src)] = base - 1;
        for (Node v : order) {
            if (v == src || !needed[idx(v)]) continue;
            ChannelId c = via[idx(v)];
            Node u = T_.channel(c).from;
            Step s = at[idx(u)] + 1;
            if (hop_) {
                bool may_wait = T_.is_processor(u) || model_.queues != QueueKind::none;
                for (int tries = 0; may_wait && tries < 6 && !grid_.fits(s, c); ++tries) ++s;
            } else {
                s = base;
            }
            grid_.take(s, c);
            xs_.push_back({s, c, m});
            at[idx(v)] = s;
        }
    }

    /// Relay shapes (issue 13): a processor p that receives m from router r sends it back into r
    /// and on to another processor q, either in the same step/round (legal under wormhole, where
    /// the router then passes on two copies it received in the round; a causality fault under
    /// hop) or in the next steps (relay back). Which copy the router passes on where must not matter.
    void relay() {
        if (!rng_.chance(0.2)) return;
        std::vector<std::size_t> last_hops;
        for (std::size_t k = 0; k < xs_.size(); ++k) {
            const Channel& c = T_.channel(xs_[k].channel);
            if (!T_.is_processor(c.from) && T_.is_processor(c.to)) last_hops.push_back(k);
        }
        if (last_hops.empty()) return;
        const Transfer x = xs_[rng_.pick(last_hops)];
        const Channel& c = T_.channel(x.channel);
        std::vector<ChannelId> onward;
        for (ChannelId o : out_channels(T_, c.from))
            if (T_.is_processor(T_.channel(o).to) && T_.channel(o).to != c.to) onward.push_back(o);
        auto back = T_.find_channel(c.to, c.from);
        if (back && !onward.empty()) {
            bool same = rng_.chance(0.5);
            shape_ = same ? " relay in the same step" : " relay back";
            xs_.push_back({x.step + (same ? 0 : 1), *back, x.message});
            xs_.push_back({x.step + (same ? 0 : hop_ ? 2 : 1), rng_.pick(onward), x.message});
        }
    }

    /// A random transfer that satisfies `pred`, or null.
    template <class Pred>
    Transfer* random_transfer(Pred pred) {
        std::vector<std::size_t> ok;
        for (std::size_t k = 0; k < xs_.size(); ++k)
            if (pred(xs_[k])) ok.push_back(k);
        if (ok.empty()) return nullptr;
        return &xs_[rng_.pick(ok)];
    }
    bool processor(Node n) const { return T_.is_processor(n); }

    /// Zero, one or two faults of random kinds.
    void faults() {
        static const std::vector<std::string> kinds = {"capacity", "ports",   "queue", "replication", "causality",
                                                       "route",    "missing", "junk",  "duplicate"};
        int nfaults = rng_.chance(0.35) ? 0 : rng_.chance(0.8) ? 1 : 2;
        for (int f = 0; f < nfaults && !xs_.empty(); ++f) {
            const std::string& k = rng_.pick(kinds);
            faults_ += (faults_.empty() ? "" : "+") + k;
            if (k == "capacity") capacity_fault();
            else if (k == "ports" || k == "replication") second_channel_fault(k == "ports");
            else if (k == "queue") queue_fault();
            else if (k == "causality") causality_fault();
            else if (k == "route") route_fault();
            else if (k == "missing") missing_fault();
            else if (k == "junk") junk_fault();
            else xs_.push_back(*random_transfer([](const Transfer&) { return true; }));  // duplicate: one transfer listed twice
        }
    }

    void capacity_fault() {
        Transfer x = *random_transfer([](const Transfer&) { return true; });
        for (std::uint32_t c = 0; c < T_.channel(x.channel).cap; ++c) xs_.push_back(x);
    }

    /// ports (a processor) or replication (a router): the same message on a second channel out.
    void second_channel_fault(bool proc) {
        Transfer* x = random_transfer([&](const Transfer& y) {
            Node u = T_.channel(y.channel).from;
            return processor(u) == proc && T_.out_channels(u).size() > 1;
        });
        if (!x) return;
        Transfer y = *x;
        for (ChannelId c : out_channels(T_, T_.channel(x->channel).from))
            if (c != x->channel) {
                y.channel = c;
                break;
            }
        xs_.push_back(y);
    }

    void queue_fault() {
        Transfer* x = random_transfer([&](const Transfer& y) { return !processor(T_.channel(y.channel).to); });
        if (!x) return;
        Transfer a = *x;
        for (Transfer& y : xs_)
            if (y.message == a.message && y.step > a.step) ++y.step;
    }

    void causality_fault() {
        Transfer* x = random_transfer([&](const Transfer& y) { return y.step > 1; });
        if (!x) return;
        Transfer a = *x;
        for (Transfer& y : xs_)
            if (y.message == a.message && y.step >= a.step) --y.step;
    }

    /// A detour u -> w -> u before the hop u -> v; the rest of the message's path moves 2 later.
    void route_fault() {
        Transfer* x = random_transfer([&](const Transfer& y) { return T_.out_channels(T_.channel(y.channel).from).size() > 1; });
        if (!x) return;
        Transfer a = *x;
        Node u = T_.channel(a.channel).from;
        ChannelId away = a.channel;
        for (ChannelId c : out_channels(T_, u))
            if (c != a.channel) away = c;
        Node w = T_.channel(away).to;
        auto back = T_.find_channel(w, u);
        for (Transfer& y : xs_)
            if (y.message == a.message && y.step >= a.step) y.step += 2;
        xs_.push_back({a.step, away, a.message});
        xs_.push_back({a.step + 1, *back, a.message});
    }

    void missing_fault() {
        Transfer* x = random_transfer([&](const Transfer& y) { return processor(T_.channel(y.channel).to); });
        if (!x) return;
        Transfer a = *x;
        std::erase_if(xs_, [&](const Transfer& y) { return y.message == a.message && T_.channel(y.channel).to == T_.channel(a.channel).to; });
    }

    void junk_fault() {
        ChannelId c{static_cast<std::uint32_t>(rng_.in(0, static_cast<int>(T_.channels().size()) - 1))};
        MessageId m{static_cast<std::uint32_t>(rng_.in(0, static_cast<int>(ms_.size()) - 1))};
        xs_.push_back({static_cast<Step>(rng_.in(1, 8)), c, m});
    }

    Messages ms_;
    Grid grid_;
    Collective coll_;
    std::vector<std::pair<MessageId, Node>> deliveries_;
    std::vector<Requirement> reqs_;
    std::vector<Transfer> xs_;
    bool trees_ = false;
    std::string shape_, faults_;
};

}  // namespace

Instance make_instance(std::uint64_t seed, const std::vector<std::string>& topologies) { return RandomInstance(seed, topologies).make(); }

namespace {

/// The generator of make_composite_instance: reduce(r) and prefix by combining up a tree of
/// processors (and prefixes down), under hop or wormhole timing; under wormhole also allgather
/// through an aggregator that sends bundles. Then zero or one fault: causality (a message moved a
/// step earlier), a wrong value (a range one longer), a bundle with a part the sender lacks, a
/// missing delivery, a capacity overflow. Random draws in the order the tables were first made with.
class CompositeInstance : Draws {
public:
    CompositeInstance(std::uint64_t seed, const std::vector<std::string>& topologies)
        : Draws(seed, seed * 7919 + 17, topologies, 0.5, 0.3), grid_(T_, model_.ports) {}

    Instance make() {
        int kind = hop_ ? rng_.in(0, 1) : rng_.in(0, 2);
        coll_.kind = kind == 0 ? CollectiveKind::reduce : kind == 1 ? CollectiveKind::prefix : CollectiveKind::allgather;
        coll_.root = Node{static_cast<std::uint32_t>(rng_.in(0, static_cast<int>(P_) - 1))};
        if (coll_.kind == CollectiveKind::allgather) aggregate();
        else combine_tree();
        const std::string fault = this->fault();
        Instance in;
        t_.collective = coll_;
        t_.transfers = std::move(xs_);
        t_.sort();
        t_.canonicalize_composites();
        in.table = std::move(t_);
        in.description = fmt::format("composite seed {}: {} model {} collective {} fault [{}], {} transfers", seed_, T_.spec(), to_string(model_),
                                     coll_.to_string(), fault, in.table.transfers.size());
        return in;
    }

private:
    static SendTable header(std::shared_ptr<const Topology> topo, const Model& model) {
        SendTable t;
        t.topology = std::move(topo);
        t.model = model;
        return t;
    }

    MessageId value(std::uint32_t lo, std::uint32_t hi) { return lo == hi ? ms_.value(lo) : reg_.intern({MessageKind::combined, lo, hi, {}, {}}); }

    /// One endpoint send, contention-free, not before `base`; returns its last step.
    Step send(std::uint32_t a, std::uint32_t b, MessageId m, Step base) {
        std::vector<ChannelId> path = T_.route(Node{a}, Node{b});
        Step start = base;
        for (int tries = 0; tries < 60; ++tries, ++start) {
            bool ok = true;
            if (hop_) {
                for (std::size_t k = 0; k < path.size() && ok; ++k) ok = grid_.fits(start + static_cast<Step>(k), path[k]);
            } else {
                ok = grid_.fits_round(start, path);
            }
            if (ok) break;
        }
        Step last = start;
        for (std::size_t k = 0; k < path.size(); ++k) {
            Step s = hop_ ? start + static_cast<Step>(k) : start;
            grid_.take(s, path[k]);
            xs_.push_back({s, path[k], m});
            last = s;
        }
        next_ = std::max(next_, last + 1);
        return last;
    }

    /// Everyone sends b(s) to an aggregator g, which sends the bundle of all to everyone.
    void aggregate() {
        auto g = static_cast<std::uint32_t>(rng_.in(0, static_cast<int>(P_) - 1));
        for (std::uint32_t s = 0; s < P_; ++s)
            if (s != g) send(s, g, ms_.broadcast(s), static_cast<Step>(rng_.in(1, 2)));
        Composite all{MessageKind::bundle, 0, 0, {}, {}};
        for (std::uint32_t s = 0; s < P_; ++s) all.parts.push_back(ms_.broadcast(s));
        MessageId b = reg_.intern(all);
        Step base = next_;
        for (std::uint32_t d = 0; d < P_; ++d)
            if (d != g) send(g, d, b, base);
    }

    /// Up: after level h the leader p (p % 2^h == 0) holds a(p .. min(p + 2^h, P) - 1); then the
    /// reduce's value to its root, or the prefixes down.
    void combine_tree() {
        int levels = 0;
        while ((1u << levels) < P_) ++levels;
        int up = coll_.kind == CollectiveKind::prefix ? levels - 1 : levels;
        for (int h = 1; h <= up; ++h) {
            std::uint32_t half = 1u << (h - 1);
            Step base = next_;
            for (std::uint32_t p = 0; p + half < P_; p += 2 * half)
                send(p + half, p, value(p + half, std::min(p + 2 * half, P_) - 1), base + static_cast<Step>(rng_.in(0, 1)));
        }
        if (coll_.kind == CollectiveKind::reduce && idx(coll_.root) != 0 && P_ > 1) send(0, idx(coll_.root), value(0, P_ - 1), next_);
        if (coll_.kind == CollectiveKind::prefix)
            for (int h = levels; h >= 1; --h) {
                std::uint32_t half = 1u << (h - 1);
                Step base = next_;
                for (std::uint32_t p = 0; p + half < P_; p += 2 * half) send(p, p + half, value(0, p + half - 1), base);
            }
    }

    /// Zero or one fault; returns its name ("" for none).
    std::string fault() {
        static const std::vector<std::string> kinds = {"causality", "value", "bundle", "missing", "capacity"};
        std::string fault = rng_.chance(0.4) || xs_.empty() ? "" : rng_.pick(kinds);
        auto pick = [&](auto pred) -> Transfer* {
            std::vector<std::size_t> ok;
            for (std::size_t k = 0; k < xs_.size(); ++k)
                if (pred(xs_[k])) ok.push_back(k);
            return ok.empty() ? nullptr : &xs_[rng_.pick(ok)];
        };
        auto rename = [&](MessageId old, MessageId wrong) {
            for (Transfer& y : xs_)
                if (y.message == old) y.message = wrong;
        };
        if (fault == "causality") {
            if (Transfer* x = pick([](const Transfer& y) { return y.step > 1; })) {
                Transfer a = *x;
                for (Transfer& y : xs_)
                    if (y.message == a.message && y.step >= a.step) --y.step;
            }
        } else if (fault == "value") {  // a range one longer than the sender can form
            if (Transfer* x = pick([&](const Transfer& y) { return ms_.key(y.message).kind == MessageKind::combined; })) {
                MessageKey k = ms_.key(x->message);
                MessageId wrong = k.dst + 1 < P_ ? value(k.src, k.dst + 1) : value(k.src + 1, k.dst);
                rename(x->message, wrong);
            }
        } else if (fault == "bundle") {  // a bundle with one part more
            if (Transfer* x = pick([&](const Transfer& y) { return ms_.key(y.message).kind == MessageKind::bundle; })) {
                Composite c = ms_.composite(x->message);
                c.parts.push_back(ms_.personal(0, P_ - 1));
                std::sort(c.parts.begin(), c.parts.end(), [](MessageId a, MessageId b) { return idx(a) < idx(b); });
                MessageId old = x->message, wrong = reg_.intern(c);
                rename(old, wrong);
            }
        } else if (fault == "missing") {
            if (Transfer* x = pick([&](const Transfer& y) { return T_.is_processor(T_.channel(y.channel).to); })) {
                Transfer a = *x;
                std::erase_if(xs_, [&](const Transfer& y) { return y.message == a.message && T_.channel(y.channel).to == T_.channel(a.channel).to; });
            }
        } else if (fault == "capacity") {
            Transfer x = xs_[static_cast<std::size_t>(rng_.in(0, static_cast<int>(xs_.size()) - 1))];
            for (std::uint32_t c = 0; c < T_.channel(x.channel).cap; ++c) xs_.push_back(x);
        }
        return fault;
    }

    SendTable t_ = header(topo_, model_);  ///< the table, topology and model set before its registry is made
    Composites& reg_ = t_.composite_registry();
    Messages ms_{P_, &reg_};
    Grid grid_;
    Collective coll_;
    std::vector<Transfer> xs_;
    Step next_ = 1;  ///< the first step after everything placed so far has arrived
};

}  // namespace

Instance make_composite_instance(std::uint64_t seed, const std::vector<std::string>& topologies) {
    return CompositeInstance(seed, topologies).make();
}

}  // namespace collsched::testing
