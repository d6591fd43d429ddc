#include "verifier/check/measure.hpp"

#include <algorithm>
#include <limits>
#include <tuple>
#include <vector>

namespace collsched::verifier {

std::vector<std::uint32_t> link_queue_high_water(const SendTable& t) {
    const Topology& topo = *t.topology;
    const std::uint32_t P = topo.processors();
    // Arrivals at and departures from routers, grouped by (router, message) after sorting.
    struct Event {
        std::uint64_t key;  // router << 32 | message
        Step step;
        std::uint32_t channel;
        bool operator<(const Event& o) const { return std::tie(key, step, channel) < std::tie(o.key, o.step, o.channel); }
    };
    std::vector<Event> arrivals, departures;
    for (const Transfer& x : t.transfers) {
        const Channel& c = topo.channel(x.channel);
        if (idx(c.to) >= P) arrivals.push_back({std::uint64_t{idx(c.to)} << 32 | idx(x.message), x.step, 0});
        if (idx(c.from) >= P) departures.push_back({std::uint64_t{idx(c.from)} << 32 | idx(x.message), x.step, idx(x.channel)});
    }
    std::sort(arrivals.begin(), arrivals.end());
    std::sort(departures.begin(), departures.end());
    // Waiting intervals per channel, as +1/-1 events on boundaries.
    std::vector<std::vector<std::pair<Step, int>>> events(topo.channels().size());
    std::size_t ai = 0;
    for (std::size_t di = 0; di < departures.size();) {
        std::uint64_t key = departures[di].key;
        std::size_t dj = di;
        while (dj < departures.size() && departures[dj].key == key) ++dj;
        while (ai < arrivals.size() && arrivals[ai].key < key) ++ai;
        std::size_t aj = ai;
        while (aj < arrivals.size() && arrivals[aj].key == key) ++aj;
        for (std::size_t k = di; k < dj; ++k) {
            Step t_out = departures[k].step;
            Step a;
            if (t.model.replicate) {
                // The latest arrival before the departure (causality is the verifier's business).
                auto ub = std::lower_bound(arrivals.begin() + static_cast<std::ptrdiff_t>(ai), arrivals.begin() + static_cast<std::ptrdiff_t>(aj),
                                           t_out, [](const Event& e, Step s) { return e.step < s; });
                if (ub == arrivals.begin() + static_cast<std::ptrdiff_t>(ai)) continue;
                a = (ub - 1)->step;
            } else {
                if (ai + (k - di) >= aj) continue;
                a = arrivals[ai + (k - di)].step;  // the k-th departure takes the k-th arrival
            }
            if (t_out >= a + 2) {
                events[departures[k].channel].emplace_back(a, 1);
                events[departures[k].channel].emplace_back(t_out - 1, -1);  // waits at boundaries a .. t_out-2
            }
        }
        di = dj;
        ai = aj;
    }
    std::size_t levels = topo.is_tree() ? topo.tree_levels() : 1;
    std::vector<std::uint32_t> high(levels, 0);
    for (std::size_t c = 0; c < events.size(); ++c) {
        auto& ev = events[c];
        if (ev.empty()) continue;
        std::sort(ev.begin(), ev.end());
        int cur = 0, best = 0;
        for (const auto& [s, d] : ev) {
            cur += d;
            best = std::max(best, cur);
        }
        Node from = topo.channel(ChannelId{static_cast<std::uint32_t>(c)}).from;
        std::size_t level = topo.is_tree() ? topo.level(from) - 1 : 0;
        high[level] = std::max(high[level], static_cast<std::uint32_t>(best));
    }
    return high;
}

BufferUse processor_buffers(const SendTable& t) {
    const Topology& topo = *t.topology;
    const std::uint32_t P = topo.processors();
    const Messages ms = t.messages();
    // Receptions and sends of processors, grouped by (processor, message) after sorting.
    struct Event {
        std::uint64_t key;  // processor << 32 | message
        Step step;
        bool send;
        bool operator<(const Event& o) const { return std::tie(key, step, send) < std::tie(o.key, o.step, o.send); }
    };
    std::vector<Event> ev;
    for (const Transfer& x : t.transfers) {
        const Channel& c = topo.channel(x.channel);
        if (idx(c.to) < P) ev.push_back({std::uint64_t{idx(c.to)} << 32 | idx(x.message), x.step, false});
        if (idx(c.from) < P) ev.push_back({std::uint64_t{idx(c.from)} << 32 | idx(x.message), x.step, true});
    }
    std::sort(ev.begin(), ev.end());
    BufferUse out;
    std::vector<std::vector<std::pair<Step, int>>> held(P);     // +1/-1 on boundaries, per processor
    std::vector<std::vector<std::pair<Step, Step>>> order(P);  // (first send, got) of the messages each forwards
    for (std::size_t i = 0; i < ev.size();) {
        std::size_t j = i;
        constexpr Step never = std::numeric_limits<Step>::max();
        Step got = never, first = never, last = 0;
        auto p = static_cast<std::uint32_t>(ev[i].key >> 32);
        MessageId m{static_cast<std::uint32_t>(ev[i].key)};
        if (ms.key(m).src == p && t.collective.initial(ms, m)) got = 0;
        for (; j < ev.size() && ev[j].key == ev[i].key; ++j) {
            if (ev[j].send) {
                first = std::min(first, ev[j].step);
                last = std::max(last, ev[j].step);
            } else {
                got = std::min(got, ev[j].step);
            }
        }
        i = j;
        if (last == 0 || got >= first) continue;  // never sent, or sent before it was held (not ours to judge)
        held[p].emplace_back(got, 1);     // held from boundary `got` ...
        held[p].emplace_back(last, -1);   // ... to boundary last-1
        order[p].emplace_back(first, got);
    }
    for (std::uint32_t p = 0; p < P; ++p) {
        auto& h = held[p];
        std::sort(h.begin(), h.end());
        int cur = 0;
        for (const auto& [s, d] : h) {
            cur += d;
            out.high_water = std::max(out.high_water, static_cast<std::uint32_t>(std::max(cur, 0)));
        }
        auto& o = order[p];
        std::sort(o.begin(), o.end());
        for (std::size_t k = 1; k < o.size(); ++k)
            if (o[k].second < o[k - 1].second) out.fifo = false;
    }
    return out;
}

std::uint64_t wormhole_payload(const SendTable& t) {
    const Messages ms = t.messages();
    std::uint64_t total = 0;
    Step round = 0;
    std::uint32_t largest = 0;
    for (const Transfer& x : t.transfers) {  // sorted by step
        if (x.step != round) {
            total += largest + (x.step - round - 1);  // the finished round, then the empty ones (payload 1 each)
            round = x.step;
            largest = 0;
        }
        largest = std::max(largest, payload(ms, x.message));
    }
    return total + largest;
}

}  // namespace collsched::verifier
