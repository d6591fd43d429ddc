// The longest chain of a table in the time model (runtime/timing.hpp chain_latency; the proof that both times are at
// least the launch plus it: verifier/time/OBJECTIVE.md, "The chain of a ring"). It reads what each transfer waits for
// as runtime/timing.cpp's plan does (PlanBuilder::add_conditions, takes_copy), from below.
#include <algorithm>
#include <limits>
#include <unordered_map>

#include "runtime/timing.hpp"
#include "runtime/timing_index.hpp"
#include "runtime/timing_values.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched {

namespace {

std::uint64_t chain_key(Node n, std::uint32_t x) { return (std::uint64_t{idx(n)} << 32) | x; }

/// An arrival so far: its step, the least time it arrives at, and its transfer.
struct Reached {
    Step step = 0;
    double at = 0;
    std::uint32_t transfer = 0;
};

}  // namespace

std::vector<double> chain_weights(const Topology& topo, const TimeOptions& given) {
    const TimeOptions opt = with_network_class(topo, given);
    const double grain = opt.executor ? opt.executor->grain : 0.0;
    std::vector<double> w(topo.channels().size());
    for (std::uint32_t c = 0; c < w.size(); ++c) {
        const LinkSpeed sp = channel_speed(topo, ChannelId{c}, opt);
        // AsyncRun::start: hold >= message + max(bytes, grain) / bandwidth, arrival = end + alpha; cutting through a router
        // a departure ends no earlier than its copy arrived plus its message (its bytes may overlap the copy's)
        w[c] = sp.alpha + message_cost(topo, ChannelId{c}, opt) + (topo.is_processor(topo.channel(ChannelId{c}).from) ? grain / sp.bandwidth : 0.0);
    }
    return w;
}

double chain_latency(const SendTable& t, const TimeOptions& opt, Deadline deadline) {
    COLLSCHED_ASSERT(t.is_sorted());
    const Topology& topo = *t.topology;
    const std::vector<double> w = chain_weights(topo, opt);
    const Messages ms = t.messages();
    constexpr double none = std::numeric_limits<double>::infinity();
    // (node, base part or sum) -> its arrivals there; (node, chunk) -> the arrivals of values of that chunk there
    std::unordered_map<std::uint64_t, std::vector<Reached>> copies, values;
    std::unordered_map<std::uint64_t, std::size_t> relayed;  // (processor, base part) -> its next copy to relay
    // (router, base part) -> the copies its departures took so far and the step of the last (AsyncRun's takes_copy: under
    // replicate=no a departure forwards the next copy not yet taken that arrived in an earlier step; multicast=routers at
    // a switch that multicasts, a step's departures share one)
    std::unordered_map<std::uint64_t, std::pair<std::size_t, Step>> taken, sums_taken;
    std::vector<double> arrive(t.transfers.size(), 0.0);
    double longest = 0;
    for (std::uint32_t j = 0; j < t.transfers.size(); ++j) {
        if ((j & 0xffff) == 0xffff && deadline.passed()) throw LimitReached("time limit (a table's chain)");
        const Transfer& x = t.transfers[j];
        const Node u = topo.channel(x.channel).from;
        const bool processor = topo.is_processor(u);
        // the least of the earlier-step arrivals of `k` at u (none when there are none)
        auto first = [&](std::uint64_t k) {
            double least = none;
            if (auto it = copies.find(k); it != copies.end())
                for (const Reached& a : it->second)
                    if (a.step < x.step) least = std::min(least, a.at);
            return least;
        };
        double ready = 0;
        // AsyncRun::takes_copy at a router: the next copy of key k not yet taken that arrived in an earlier step (under
        // multicast=routers at a switch that multicasts, a step's departures share one); false when none is left
        auto matched = [&](std::unordered_map<std::uint64_t, std::pair<std::size_t, Step>>& taken, std::uint64_t k) {
            const auto it = copies.find(k);
            if (it == copies.end()) return false;
            const std::vector<Reached>& all = it->second;
            auto& [n, last] = taken.try_emplace(k, 0, Step{0}).first->second;
            const std::size_t i = timing_internal::matched_copy(all.size(), n, last, x.step, t.model.multicast_routers && topo.can_multicast(u),
                                                                [&](std::size_t r) { return all[r].step; });
            if (i == all.size()) return false;
            ready = std::max(ready, all[i].at);
            return true;
        };
        ms.for_each_part(x.message, [&](MessageId p) {
            if (!ms.is_composite(p)) {
                // its origin's initial data waits for nothing; else the first copy in an earlier step (a router's matched
                // copy is one of them)
                if (processor && ms.origin(p) == u && t.collective.initial(ms, p)) return;
                // a processor relays a copy that came after its first (AsyncRun's relays_copy): the next such, in step order
                if (auto it = copies.find(chain_key(u, idx(p))); processor && it != copies.end() && it->second.size() > 1) {
                    const std::vector<Reached>& all = it->second;
                    std::size_t& next = relayed.try_emplace(it->first, 0).first->second;
                    if (const std::size_t i = timing_internal::relayed_copy(all.size(), next, x.step, [&](std::size_t r) { return all[r].step; });
                        i < all.size()) {
                        ready = std::max(ready, all[i].at);
                        return;
                    }
                }
                // a router's departure forwards the copy it is matched with (a share through a box's NVSwitch once a hop
                // waits for the copy from the hop before, not the first that reached the switch)
                if (!processor && !t.model.replicate && matched(taken, chain_key(u, idx(p)))) return;
                if (const double at = first(chain_key(u, idx(p))); at < none) ready = std::max(ready, at);
                return;
            }
            const auto v = timing_internal::value_set(ms, p);
            if (!v) return;
            // a router that forwards sums (no reduction there) sends the copy of this sum it is matched with, when one is left
            if (!processor && !t.model.replicate && !(t.model.combine_routers && topo.can_reduce(u)) && matched(sums_taken, chain_key(u, idx(p))))
                return;
            // the value's group: every earlier arrival of its chunk whose values of it are each part of it, all of them
            double group = 0;
            if (auto it = values.find(chain_key(u, v->chunk)); it != values.end())
                for (const Reached& a : it->second) {
                    if (a.step >= x.step) continue;
                    bool fits = true;
                    ms.for_each_part(t.transfers[a.transfer].message, [&](MessageId q) {
                        const auto s = timing_internal::value_set(ms, q);
                        if (s && s->chunk == v->chunk && !timing_internal::subset(*s, *v)) fits = false;
                    });
                    if (fits) group = std::max(group, a.at);
                }
            // a router that forwards sums sends the copy of this sum it is matched with instead, when one is left
            if (!processor) group = std::min(group, first(chain_key(u, idx(p))));
            ready = std::max(ready, group);
        });
        arrive[j] = ready + w[idx(x.channel)];
        longest = std::max(longest, arrive[j]);
        const Node to = topo.channel(x.channel).to;
        ms.for_each_part(x.message, [&](MessageId p) {
            copies[chain_key(to, idx(p))].push_back({x.step, arrive[j], j});
            if (const auto v = timing_internal::value_set(ms, p)) values[chain_key(to, v->chunk)].push_back({x.step, arrive[j], j});
        });
    }
    return longest;
}

}  // namespace collsched
