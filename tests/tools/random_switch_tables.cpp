// Seeded random tables through switches that reduce and multicast (random_tables.hpp,
// make_switch_instance): allreduce and reduce_scatter reduced up a tree toward each chunk's owner
// (combined at every switch that reduces, forwarded one by one at the others), allgather,
// broadcast and the allreduce's results multicast down a tree (one copy into a switch that
// multicasts, as many as it must pass on into one that does not), placed without contention,
// then zero, one or two faults.
#include "tests/tools/random_tables.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "compiler/table/partials.hpp"
#include "tests/tools/random_grid.hpp"

namespace collsched::testing {

namespace {

/// A transfer of a plan, its step counted from the plan's start (0).
struct Planned {
    Step at;
    ChannelId channel;
    MessageId message;
};

class SwitchInstance {
public:
    SwitchInstance(std::uint64_t seed, const std::vector<std::string>& machines)
        : seed_(seed), rng_(seed * 104729 + 3), topo_(Topology::parse("graph:" + rng_.pick(machines))), T_(*topo_), P_(T_.processors()) {}

    Instance make() {
        model();
        collective();
        t_.topology = topo_;
        t_.collective = coll_;
        reg_ = &t_.composite_registry();
        ms_.emplace(t_.messages());
        grid_.emplace(T_, model_.ports);
        schedule();
        const std::string faults = this->faults();
        t_.model = model_;
        t_.transfers = std::move(xs_);
        t_.sort();
        t_.canonicalize_composites();
        Instance in;
        in.table = std::move(t_);
        in.description = fmt::format("switch seed {}: {} model {} collective {}{} faults [{}], {} transfers", seed_, T_.spec(), to_string(model_),
                                     coll_.to_string(), nccl_ ? " (owner through the switch)" : "", faults, in.table.transfers.size());
        return in;
    }

private:
    bool router(Node n) const { return !T_.is_processor(n); }
    bool reduces(Node n) const { return router(n) && model_.combine_routers && T_.can_reduce(n); }
    bool multicasts(Node n) const { return router(n) && model_.multicast_routers && T_.can_multicast(n); }

    /// The machine's own model (its switches' functions on), queues none or unbounded, ports
    /// multi or single.
    void model() {
        model_ = T_.default_model();
        model_.queues = rng_.chance(0.5) ? QueueKind::none : QueueKind::unbounded;
        if (rng_.chance(0.2)) model_.ports = Ports::single;
    }

    void collective() {
        kind_ = rng_.in(0, 3);
        const std::uint32_t r = static_cast<std::uint32_t>(rng_.in(0, static_cast<int>(P_) - 1));
        const char* names[] = {"allreduce", "reduce_scatter", "allgather", "broadcast"};
        coll_ = Collective::parse(kind_ == 3 ? fmt::format("broadcast:{}", r) : std::string(names[kind_]), T_);
        chunks_ = static_cast<std::uint32_t>(rng_.in(1, 2)) * (kind_ <= 1 ? P_ : 1);
        coll_.set_chunks(chunks_, T_);
        through_ = rng_.chance(0.8);
    }

    /// Shortest paths toward (or from) `root`: parent[v] is the next node toward the root, -1 when
    /// unreached. Processors other than the root are leaves; through switches only, channels
    /// between two processors are not used.
    std::vector<int> tree(Node root, std::vector<int>& depth) const {
        std::vector<int> parent(T_.nodes(), -1);
        depth.assign(T_.nodes(), -1);
        std::vector<Node> order{root};
        parent[idx(root)] = static_cast<int>(idx(root));
        depth[idx(root)] = 0;
        for (std::size_t q = 0; q < order.size(); ++q) {
            const Node v = order[q];
            if (v != root && !router(v)) continue;
            for (ChannelId c : T_.out_channels(v)) {
                const Node w = T_.channel(c).to;
                if (parent[idx(w)] >= 0 || (through_ && !router(v) && !router(w))) continue;
                parent[idx(w)] = static_cast<int>(idx(v));
                depth[idx(w)] = depth[idx(v)] + 1;
                order.push_back(w);
            }
        }
        return parent;
    }

    MessageId partial(std::vector<std::uint32_t> sources, std::uint32_t chunk) {
        std::sort(sources.begin(), sources.end());
        return partial_message(*reg_, *ms_, SourceSet(sources), chunk);
    }

    /// Every processor's contribution to `chunk` reduced toward `owner`: a leaf sends its value,
    /// a switch that reduces combines what its children send into one partial, any other router
    /// forwards each; every router sends in the step after its children (queues=none holds).
    /// With `nccl_` on a star the owner's own value goes through the switch too, and the switch's
    /// sum, covering the owner's buffer, replaces it.
    std::vector<Planned> reduce_plan(Node owner, std::uint32_t chunk) {
        std::vector<int> depth;
        const std::vector<int> parent = tree(owner, depth);
        int H = 0;
        for (std::uint32_t v = 0; v < T_.nodes(); ++v) H = std::max(H, depth[v]);
        std::vector<std::vector<std::vector<std::uint32_t>>> out(T_.nodes());  // per node: the partials it sends up
        std::vector<Planned> plan;
        // deepest first, so every node's children are done before it
        std::vector<std::uint32_t> order;
        for (std::uint32_t v = 0; v < T_.nodes(); ++v)
            if (depth[v] > 0) order.push_back(v);
        std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return depth[a] > depth[b]; });
        std::vector<std::vector<std::vector<std::uint32_t>>> in(T_.nodes());
        for (std::uint32_t v : order) {
            const Node n{v};
            if (!router(n)) {
                out[v] = {{v}};
            } else if (in[v].empty()) {
                continue;
            } else if (reduces(n)) {
                std::vector<std::uint32_t> all;
                for (const auto& s : in[v]) all.insert(all.end(), s.begin(), s.end());
                out[v] = {all};
            } else {
                out[v] = in[v];
            }
            const Node up{static_cast<std::uint32_t>(parent[v])};
            if (nccl_ && up == owner && router(n)) {  // the owner's value joins this switch's sum
                plan.push_back({static_cast<Step>(H - depth[v] - 1), *T_.find_channel(owner, n), ms_->value(idx(owner), chunk)});
                if (!out[v].empty()) out[v].front().push_back(idx(owner));
            }
            for (const auto& s : out[v]) {
                plan.push_back({static_cast<Step>(H - depth[v]), *T_.find_channel(n, up), partial(s, chunk)});
                in[idx(up)].push_back(s);
            }
        }
        return plan;
    }

    /// `m` from `root` to every processor: one copy into a switch that multicasts (it sends one
    /// to each child in one step), as many as its subtree needs into any other router.
    std::vector<Planned> multicast_plan(Node root, MessageId m) {
        std::vector<int> depth;
        const std::vector<int> parent = tree(root, depth);
        std::vector<std::uint32_t> order;
        for (std::uint32_t v = 0; v < T_.nodes(); ++v)
            if (depth[v] > 0) order.push_back(v);
        std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return depth[a] > depth[b]; });
        std::vector<std::uint32_t> need(T_.nodes(), 0);
        for (std::uint32_t v : order) {
            if (!router(Node{v})) need[v] = 1;
            else if (multicasts(Node{v}) && need[v] > 0) need[v] = 1;
            if (need[v] > 0 && parent[v] != static_cast<int>(idx(root))) need[static_cast<std::uint32_t>(parent[v])] += need[v];
        }
        std::vector<Planned> plan;
        for (std::uint32_t v : order)
            for (std::uint32_t k = 0; k < need[v]; ++k)
                plan.push_back({static_cast<Step>(depth[v] - 1), *T_.find_channel(Node{static_cast<std::uint32_t>(parent[v])}, Node{v}), m});
        return plan;
    }

    /// The step at or after `s` where channel c has room in the plan being built (`load`).
    static Step room(std::map<std::pair<Step, std::uint32_t>, std::uint32_t>& load, const Topology& T, Step s, ChannelId c) {
        while (load[{s, idx(c)}] >= T.channel(c).cap) ++s;
        ++load[{s, idx(c)}];
        return s;
    }

    /// reduce_plan for unbounded queues: leaves send at once, a switch that reduces waits for its
    /// last input, any other router forwards each input in the step after it arrives, and a
    /// channel's overflow waits for the next step with room (the routers keep copies meanwhile).
    std::vector<Planned> reduce_plan_waiting(Node owner, std::uint32_t chunk) {
        std::vector<int> depth;
        const std::vector<int> parent = tree(owner, depth);
        std::vector<std::uint32_t> order;
        for (std::uint32_t v = 0; v < T_.nodes(); ++v)
            if (depth[v] > 0) order.push_back(v);
        std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return depth[a] > depth[b]; });
        std::vector<std::vector<std::pair<Step, std::vector<std::uint32_t>>>> in(T_.nodes());  // (arrival, sources)
        std::map<std::pair<Step, std::uint32_t>, std::uint32_t> load;
        std::vector<Planned> plan;
        for (std::uint32_t v : order) {
            const Node n{v}, up{static_cast<std::uint32_t>(parent[v])};
            const ChannelId c = *T_.find_channel(n, up);
            std::vector<std::pair<Step, std::vector<std::uint32_t>>> out;  // (earliest send, sources)
            if (!router(n)) {
                out.push_back({0, {v}});
            } else if (reduces(n) && !in[v].empty()) {
                std::pair<Step, std::vector<std::uint32_t>> all{0, {}};
                for (const auto& [a, src] : in[v]) {
                    all.first = std::max(all.first, a + 1);
                    all.second.insert(all.second.end(), src.begin(), src.end());
                }
                out.push_back(all);
            } else {
                for (const auto& [a, src] : in[v]) out.push_back({a + 1, src});
            }
            for (const auto& [at, src] : out) {
                const Step s = room(load, T_, at, c);
                plan.push_back({s, c, partial(src, chunk)});
                in[idx(up)].push_back({s, src});
            }
        }
        return plan;
    }

    /// multicast_plan for unbounded queues: the copies a router that does not multicast must pass
    /// on go one by one as they arrive, a channel's overflow waits for the next step with room; a
    /// switch that multicasts sends all its copies in the step after its one copy arrives.
    std::vector<Planned> multicast_plan_waiting(Node root, MessageId m) {
        std::vector<int> depth;
        const std::vector<int> parent = tree(root, depth);
        std::vector<std::uint32_t> order;  // shallowest first
        for (std::uint32_t v = 0; v < T_.nodes(); ++v)
            if (depth[v] > 0) order.push_back(v);
        std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return depth[a] < depth[b]; });
        std::vector<std::uint32_t> need(T_.nodes(), 0);
        for (auto it = order.rbegin(); it != order.rend(); ++it) {
            const std::uint32_t v = *it;
            if (!router(Node{v})) need[v] = 1;
            else if (multicasts(Node{v}) && need[v] > 0) need[v] = 1;
            if (need[v] > 0 && parent[v] != static_cast<int>(idx(root))) need[static_cast<std::uint32_t>(parent[v])] += need[v];
        }
        std::vector<std::vector<Step>> arrived(T_.nodes());  // per node: its copies' arrival steps
        std::map<std::pair<Step, std::uint32_t>, std::uint32_t> load;
        std::vector<Planned> plan;
        std::vector<std::size_t> next(T_.nodes(), 0);  // a plain router's next copy to pass on
        for (std::uint32_t w : order) {
            const Node from{static_cast<std::uint32_t>(parent[w])};
            const ChannelId c = *T_.find_channel(from, Node{w});
            for (std::uint32_t k = 0; k < need[w]; ++k) {
                Step s = 0;
                if (from == root) s = room(load, T_, 0, c);
                else if (multicasts(from)) s = arrived[idx(from)].front() + 1;  // one step for every leg: they share the copy
                else s = room(load, T_, arrived[idx(from)][next[idx(from)]++] + 1, c);
                plan.push_back({s, c, m});
                arrived[w].push_back(s);
            }
        }
        return plan;
    }

    /// The plan at the first start from `base` on where it fits beside what is placed (capacity
    /// and ports), else at `base`; returns the last step it uses.
    Step place(const std::vector<Planned>& plan, Step base) {
        Step start = base;
        for (int tries = 0; tries < 40; ++tries, ++start) {
            Grid g = *grid_;
            bool ok = true;
            for (const Planned& p : plan) {
                if (!(ok = g.fits(start + p.at, p.channel))) break;
                g.take(start + p.at, p.channel);
            }
            if (ok) break;
        }
        if (start == base + 40) start = base;
        Step last = start;
        for (const Planned& p : plan) {
            grid_->take(start + p.at, p.channel);
            xs_.push_back({start + p.at, p.channel, p.message});
            last = std::max(last, start + p.at);
        }
        return last;
    }

    void schedule() {
        const std::uint32_t rotate = static_cast<std::uint32_t>(rng_.in(0, static_cast<int>(P_) - 1));
        nccl_ = kind_ <= 1 && T_.routers() == 1 && through_ && rng_.chance(0.3);
        std::vector<std::uint32_t> all(P_);
        for (std::uint32_t p = 0; p < P_; ++p) all[p] = p;
        const bool none = model_.queues == QueueKind::none;  // every router sends in the step after an arrival: rigid plans
        auto multicast = [&](Node root, MessageId m) { return none ? multicast_plan(root, m) : multicast_plan_waiting(root, m); };
        for (std::uint32_t c = 0; c < chunks_; ++c) {
            const Step base = static_cast<Step>(1 + rng_.in(0, 2));
            if (kind_ <= 1) {
                const Node owner{kind_ == 0 ? (c + rotate) % P_ : c / (chunks_ / P_)};
                const Step done = place(none ? reduce_plan(owner, c) : reduce_plan_waiting(owner, c), base);
                if (kind_ == 0) place(multicast(owner, partial(all, c)), done + 1 + static_cast<Step>(rng_.in(0, 1)));
            } else if (kind_ == 2) {
                for (std::uint32_t s = 0; s < P_; ++s) place(multicast(Node{s}, ms_->broadcast(s, c)), base);
            } else {
                place(multicast(coll_.root, ms_->broadcast(idx(coll_.root), c)), base);
            }
        }
    }

    /// A random transfer out of a router that satisfies `pred`, or null.
    template <class Pred>
    Transfer* router_send(Pred pred) {
        std::vector<std::size_t> ok;
        for (std::size_t k = 0; k < xs_.size(); ++k)
            if (router(T_.channel(xs_[k].channel).from) && pred(xs_[k])) ok.push_back(k);
        return ok.empty() ? nullptr : &xs_[rng_.pick(ok)];
    }
    bool summed(MessageId m) const {
        auto pv = partial_of(*ms_, m);
        return pv && pv->sources.size() > 1;
    }

    /// Zero, one or two faults; returns their names.
    std::string faults() {
        static const std::vector<std::string> kinds = {"drop", "double", "capacity", "no-multicast", "no-combine",
                                                       "split", "early",  "late",     "wrong",        "junk"};
        std::string names;
        const int n = rng_.chance(0.35) ? 0 : rng_.chance(0.8) ? 1 : 2;
        for (int f = 0; f < n && !xs_.empty(); ++f) {
            const std::string& k = rng_.pick(kinds);
            names += (names.empty() ? "" : "+") + k;
            if (k == "drop") xs_.erase(xs_.begin() + rng_.in(0, static_cast<int>(xs_.size()) - 1));
            else if (k == "no-multicast") model_.multicast_routers = false;
            else if (k == "no-combine") model_.combine_routers = false;
            else if (k == "capacity") capacity_fault();
            else if (k == "junk") xs_.push_back({static_cast<Step>(rng_.in(1, 6)), ChannelId{static_cast<std::uint32_t>(rng_.in(0, static_cast<int>(T_.channels().size()) - 1))},
                                                rng_.pick(xs_).message});
            else send_fault(k);
        }
        return names;
    }

    /// A switch port over its capacity: a transfer into or out of a router listed cap more times.
    void capacity_fault() {
        std::vector<std::size_t> ok;
        for (std::size_t k = 0; k < xs_.size(); ++k)
            if (router(T_.channel(xs_[k].channel).from) || router(T_.channel(xs_[k].channel).to)) ok.push_back(k);
        if (ok.empty()) return;
        const Transfer x = xs_[rng_.pick(ok)];
        for (std::uint32_t c = 0; c < T_.channel(x.channel).cap; ++c) xs_.push_back(x);
    }

    /// Faults of a router's send: a sum sent again (double), one leg of a multicast a step later
    /// (split), a send a step earlier or later, a sum with one contribution more or less (wrong).
    void send_fault(const std::string& k) {
        if (k == "double") {
            if (Transfer* x = router_send([&](const Transfer& y) { return summed(y.message); }); x)
                xs_.push_back({x->step + static_cast<Step>(rng_.in(0, 1)), x->channel, x->message});
        } else if (k == "split") {
            Transfer* x = router_send([&](const Transfer& y) {
                return std::count_if(xs_.begin(), xs_.end(), [&](const Transfer& z) {
                           return z.step == y.step && z.message == y.message && T_.channel(z.channel).from == T_.channel(y.channel).from;
                       }) > 1;
            });
            if (x) ++x->step;
        } else if (k == "early") {
            if (Transfer* x = router_send([](const Transfer& y) { return y.step > 1; }); x) --x->step;
        } else if (k == "late") {
            if (Transfer* x = router_send([](const Transfer&) { return true; }); x) ++x->step;
        } else if (Transfer* x = router_send([&](const Transfer& y) { return summed(y.message); }); x) {  // wrong
            auto pv = *partial_of(*ms_, x->message);
            std::vector<std::uint32_t> s = pv.sources;
            if (s.size() < P_ && rng_.chance(0.5)) {
                for (std::uint32_t p = 0; p < P_; ++p)
                    if (!std::binary_search(pv.sources.begin(), pv.sources.end(), p)) {
                        s.push_back(p);
                        break;
                    }
            } else {
                s.erase(s.begin() + rng_.in(0, static_cast<int>(s.size()) - 1));
            }
            x->message = partial(s, pv.chunk);
        }
    }

    const std::uint64_t seed_;
    Rng rng_;
    std::shared_ptr<const Topology> topo_;
    const Topology& T_;
    const std::uint32_t P_;
    Model model_;
    Collective coll_;
    int kind_ = 0;  ///< 0 allreduce, 1 reduce_scatter, 2 allgather, 3 broadcast
    std::uint32_t chunks_ = 1;
    bool through_ = true;  ///< through switches only (no channel between two processors)
    bool nccl_ = false;    ///< the owner's own value through the switch too
    SendTable t_;
    Composites* reg_ = nullptr;
    std::optional<Messages> ms_;
    std::optional<Grid> grid_;
    std::vector<Transfer> xs_;
};

}  // namespace

Instance make_switch_instance(std::uint64_t seed, const std::vector<std::string>& machines) { return SwitchInstance(seed, machines).make(); }

}  // namespace collsched::testing
