// The simulator's slow reference (sim_reference.hpp): one method per rule, the step loop in run().
#include "tests/runtime/sim_reference.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

namespace collsched::testing {

namespace {

class Reference {
public:
    explicit Reference(const SendTable& t)
        : t_(t), topo_(*t.topology), model_(t.model), ms_(t.messages()), P_(topo_.processors()), T_(t.steps()),
          wormhole_(model_.timing == Timing::wormhole), high_(topo_.routers(), 0), recv_steps_(P_, 0), done_steps_(T_) {
        for (std::uint32_t m = 0; m < ms_.size(); ++m)
            if (t.collective.initial(ms_, MessageId{m})) held_[{idx(ms_.origin(MessageId{m})), m}] = 0;
    }

    RefResult run() {
        for (Step s = 1; s <= T_ && res_.status == SimStatus::completed; ++s)
            if (!step(s)) break;
        queues_after_last_step();
        counts();
        return res_;
    }

private:
    using Key = std::pair<std::uint32_t, std::uint32_t>;  // node, message

    std::uint32_t from(const Transfer& x) const { return idx(topo_.channel(x.channel).from); }
    std::uint32_t to(const Transfer& x) const { return idx(topo_.channel(x.channel).to); }
    void fault(int rank, SimRule r) {
        if (rank < found_rank_) found_rank_ = rank, found_ = r;
    }

    /// Waiting count of router r at boundary b, given the legal departures up to step b+1.
    std::int64_t waiting(std::uint32_t r, Step b) const {
        const std::uint32_t node = P_ + r;
        if (!model_.replicate) {
            std::int64_t w = 0;
            for (const Transfer& x : t_.transfers)
                if (to(x) == node && x.step <= b) ++w;
            for (auto [s, u, m] : departures_)
                if (u == node && s <= b + 1) --w;
            return w;
        }
        std::map<std::uint32_t, std::pair<Step, Step>> iv;  // message -> first arrival, last send
        for (const Transfer& x : t_.transfers)
            if (to(x) == node && !iv.count(idx(x.message))) iv[idx(x.message)] = {x.step, 0};
        for (const Transfer& x : t_.transfers)
            if (from(x) == node && iv.count(idx(x.message))) iv[idx(x.message)].second = std::max(iv[idx(x.message)].second, x.step);
        std::int64_t w = 0;
        for (auto& [m, p] : iv) w += p.first <= b && p.second >= b + 2;
        return w;
    }

    /// Step s; false when the run halts in it (or at the boundary before it).
    bool step(Step s) {
        now_.clear();
        for (const Transfer& x : t_.transfers)
            if (x.step == s) now_.push_back(x);
        std::sort(now_.begin(), now_.end());
        found_.reset();  // first fault among capacity, ports, causality/replication, queue send
        found_rank_ = 9;
        capacity_and_ports();
        if (!wormhole_) {
            hop_senders(s);
            if (s >= 2 && !boundary(s)) return false;
        } else if (!found_) {
            wormhole_round(s);
        }
        if (found_) {
            res_.status = SimStatus::halted;
            res_.rule = *found_;
            res_.step = s;
            done_steps_ = s - 1;
            return false;
        }
        arrivals(s);
        return true;
    }

    void capacity_and_ports() {
        std::map<std::uint32_t, std::uint32_t> per_channel, sends, recvs;
        for (const Transfer& x : now_) {
            if (++per_channel[idx(x.channel)] > topo_.channel(x.channel).cap) fault(1, SimRule::capacity);
            if (from(x) < P_) ++sends[from(x)];
            if (to(x) < P_) ++recvs[to(x)];
        }
        for (std::uint32_t p = 0; p < P_; ++p) {
            bool bad = model_.ports == Ports::single ? sends[p] > 1 || recvs[p] > 1
                       : model_.ports == Ports::half ? sends[p] + recvs[p] > 1
                                                     : false;
            if (bad) fault(2, SimRule::ports);
        }
    }

    /// hop: every sender holds the message (a router with replicate=no: a copy it has left).
    void hop_senders(Step s) {
        for (const Transfer& x : now_) {
            const Key k{from(x), idx(x.message)};
            const bool has = held_.count(k) && held_[k] <= s - 1;
            if (from(x) < P_ || model_.replicate) {
                if (!has) {
                    fault(3, SimRule::causality);
                } else if (from(x) >= P_ && model_.queues == QueueKind::none) {
                    bool arrived = false;
                    for (const Transfer& y : t_.transfers) arrived |= y.step == s - 1 && to(y) == from(x) && y.message == x.message;
                    if (!arrived) fault(5, SimRule::queues);
                }
            } else if (copies_[k] > 0) {
                --copies_[k];
                departures_.emplace_back(s, from(x), idx(x.message));
            } else {
                fault(3, has ? SimRule::replication : SimRule::causality);
                // a queue bound counts every departure, with a copy or not (docs/semantics.md)
                if (model_.queues == QueueKind::bounded) departures_.emplace_back(s, from(x), idx(x.message));
            }
        }
    }

    /// The boundary after step s-1: high-water marks and the queue rule; false when a queue
    /// bound halts the run there.
    bool boundary(Step s) {
        bool over = false;
        for (std::uint32_t r = 0; r < topo_.routers(); ++r) {
            const std::int64_t w = waiting(r, s - 1);
            high_[r] = std::max(high_[r], static_cast<std::uint32_t>(w));
            over |= model_.queues == QueueKind::bounded ? w > model_.queue_bound : model_.queues == QueueKind::none && !model_.replicate && w > 0;
        }
        if (over && model_.queues == QueueKind::bounded) {
            res_.status = SimStatus::halted;
            res_.rule = SimRule::queues;
            res_.step = s - 1;
            done_steps_ = s - 1;
            return false;
        }
        if (over) fault(4, SimRule::queues);
        return true;
    }

    /// Legality within a round is a fixpoint: passes over the round until nothing changes. A
    /// sender is legal when it held the message at the end of the previous round or received it
    /// in this round through a legal transfer (routers included); then, with replicate=no, a
    /// router that passes on more copies than it receives in the round is a replication
    /// violation (docs/semantics.md: counted, whatever the order).
    void wormhole_round(Step s) {
        std::vector<bool> legal(now_.size(), false);
        std::map<Key, Step> h2 = held_;
        std::map<Key, std::int64_t> c2 = copies_;
        for (bool changed = true; changed;) {
            changed = false;
            for (std::size_t k = 0; k < now_.size(); ++k) {
                const Transfer& x = now_[k];
                const Key src{from(x), idx(x.message)}, dst{to(x), idx(x.message)};
                if (legal[k] || !h2.count(src)) continue;
                legal[k] = changed = true;
                if (!h2.count(dst)) h2[dst] = s;
            }
        }
        if (!model_.replicate) {
            std::map<Key, std::int64_t> balance;
            for (std::size_t k = 0; k < now_.size(); ++k) {
                if (!legal[k]) continue;
                if (to(now_[k]) >= P_) ++balance[{to(now_[k]), idx(now_[k].message)}];
                if (from(now_[k]) >= P_) --balance[{from(now_[k]), idx(now_[k].message)}];
            }
            for (const auto& [key, b] : balance)
                if (b < 0) fault(3, SimRule::replication);
        }
        for (std::size_t k = 0; k < now_.size() && !found_; ++k)
            if (!legal[k]) fault(3, SimRule::causality);
        if (!found_) {
            // routers keep nothing between rounds
            std::erase_if(h2, [&](const auto& kv) { return kv.first.first >= P_; });
            std::erase_if(c2, [&](const auto& kv) { return kv.first.first >= P_; });
            held_ = std::move(h2);
            copies_ = std::move(c2);
        }
    }

    /// The step's arrivals (hop; the fixpoint applied wormhole's) and the receiving processors.
    void arrivals(Step s) {
        for (const Transfer& x : now_) {
            const Key k{to(x), idx(x.message)};
            if (wormhole_) break;
            if (!held_.count(k)) held_[k] = s;
            if (to(x) >= P_ && !model_.replicate) ++copies_[k];
        }
        std::set<std::uint32_t> receivers;
        for (const Transfer& x : now_)
            if (to(x) < P_) receivers.insert(to(x));
        for (std::uint32_t p : receivers) ++recv_steps_[p];
    }

    /// queues=none: a copy that entered a router in the last step cannot leave.
    void queues_after_last_step() {
        if (res_.status == SimStatus::completed && !wormhole_ && model_.queues == QueueKind::none && !model_.replicate)
            for (std::uint32_t r = 0; r < topo_.routers(); ++r)
                if (waiting(r, T_) > 0) {
                    res_.status = SimStatus::halted;
                    res_.rule = SimRule::queues;
                    res_.step = T_ + 1;
                }
    }

    /// Holes, high-water marks, deliveries and completeness.
    void counts() {
        for (std::uint32_t p = 0; p < P_; ++p) res_.holes.push_back(done_steps_ - recv_steps_[p]);
        if (!wormhole_) res_.high_water = high_;
        std::set<Key> goals;
        t_.collective.for_each_goal(P_, [&](MessageId m, Node d) { goals.insert({idx(d), idx(m)}); });
        for (const Requirement& r : t_.requirements) goals.insert({idx(r.at), idx(r.message)});
        res_.required = goals.size();
        for (const Key& g : goals) res_.done += held_.count(g) > 0;
        if (res_.status == SimStatus::completed && res_.done < res_.required) {
            res_.status = SimStatus::incomplete;
            res_.step = T_;
        }
    }

    const SendTable& t_;
    const Topology& topo_;
    const Model& model_;
    const Messages ms_;
    const std::uint32_t P_;
    const Step T_;
    const bool wormhole_;
    std::map<Key, Step> held_;
    std::map<Key, std::int64_t> copies_;
    std::vector<std::tuple<Step, std::uint32_t, std::uint32_t>> departures_;  // router departures that count
    std::vector<std::uint32_t> high_, recv_steps_;
    Step done_steps_;
    std::vector<Transfer> now_;
    std::optional<SimRule> found_;
    int found_rank_ = 9;
    RefResult res_;
};

}  // namespace

RefResult reference(const SendTable& t) { return Reference(t).run(); }

}  // namespace collsched::testing
