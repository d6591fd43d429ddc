// Copies through forwarding routers (router_copies.hpp). Why the counts may be cut: take a table
// under replicate=no and follow every copy that enters a router through the FIFO matching to where
// it leaves; a copy's walk ends at a processor (or stays in a router). Delete every walk that ends
// in a router or at a processor that already held the message (or that receives another copy in
// the same step): capacities, ports and queues only lose load, and every processor still gains
// the message when it did. Under queues=unbounded also cut every loop of a walk through routers
// (the copy waits in the router instead; the FIFO matching still finds an earlier arrival for every
// departure). What is left: every copy entering router r ends at a distinct processor reachable
// from r through routers, never the origin, so per message at most that many copies enter r in
// one step, and under queues=unbounded in all. The optimum over such tables is the optimum.
#include "verifier/synth/sat/router_copies.hpp"

#include <algorithm>
#include <deque>

#include "support/assert.hpp"

namespace collsched::synth {

namespace {

/// a + b in unary, exact up to `cap`: up, a >= i and b >= j give c >= i+j; down, a <= i and
/// b <= j give c <= i+j (Bailleux and Boufkhad's totalizer merge).
Unary merge(Formula& f, const Unary& a, const Unary& b, std::size_t cap) {
    const std::size_t p = a.size(), r = b.size(), q = std::min(p + r, cap);
    Unary c(q);
    for (int& l : c) l = f.new_var();
    auto at = [](const Unary& u, std::size_t i) { return i == 0 ? Formula::top : i > u.size() ? -Formula::top : u[i - 1]; };
    for (std::size_t i = 0; i <= p; ++i)
        for (std::size_t j = 0; j <= r; ++j) {
            if (i + j >= 1) f.clause({-at(a, i), -at(b, j), c[std::min(i + j, q) - 1]});
            if (i + j + 1 <= q) f.clause({at(a, i + 1), at(b, j + 1), -c[i + j]});
        }
    return c;
}

/// u >= k implies v >= k for every k (and u above v's size is false).
void at_most_as(Formula& f, const Unary& u, const Unary& v) {
    for (std::size_t k = 0; k < u.size(); ++k) f.clause({-u[k], k < v.size() ? v[k] : -Formula::top});
}

/// The count is at most `bound`.
void at_most_count(Formula& f, const Unary& u, std::uint32_t bound) {
    if (u.size() > bound) f.clause({-u[bound]});
}

}  // namespace

Unary unary_sum(Formula& f, std::vector<Unary> parts, std::size_t cap) {
    std::erase_if(parts, [](const Unary& u) { return u.empty(); });
    if (parts.empty() || cap == 0) return {};
    std::deque<Unary> work(parts.begin(), parts.end());
    while (work.size() > 1) {
        Unary a = std::move(work.front());
        work.pop_front();
        Unary b = std::move(work.front());
        work.pop_front();
        work.push_back(merge(f, a, b, cap));
    }
    Unary s = std::move(work.front());
    if (s.size() > cap) s.resize(cap);
    return s;
}

std::vector<std::uint32_t> router_reach(const Topology& t) {
    std::vector<std::uint32_t> reach(t.nodes(), 1);
    std::vector<std::uint32_t> seen(t.nodes(), ~0u);
    for (std::uint32_t r = t.processors(); r < t.nodes(); ++r) {
        std::uint32_t n = 0;
        std::vector<Node> work{Node{r}};
        seen[r] = r;
        while (!work.empty()) {
            const Node v = work.back();
            work.pop_back();
            for (ChannelId c : t.out_channels(v)) {
                const Node w = t.channel(c).to;
                if (seen[idx(w)] == r) continue;
                seen[idx(w)] = r;
                if (t.is_processor(w)) ++n;
                else work.push_back(w);
            }
        }
        reach[r] = n;
    }
    return reach;
}

std::uint32_t copy_width(const Topology& t, const std::vector<std::uint32_t>& reach, ChannelId c, std::uint64_t rounds_per_step) {
    const Channel& ch = t.channel(c);
    if (t.is_processor(ch.to)) return 1;
    std::uint64_t useful = reach[idx(ch.to)];
    // A sending processor holds the message; when the router sends back to it directly it is one of those reached.
    if (t.is_processor(ch.from) && useful > 0 && t.find_channel(ch.to, ch.from)) --useful;
    return static_cast<std::uint32_t>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(std::uint64_t{ch.cap} * rounds_per_step, useful)));
}

void conserve_copies(Formula& f, QueueKind queues, std::span<const std::vector<Unary>> in, std::span<const std::vector<Unary>> out,
                     std::uint32_t bound) {
    COLLSCHED_ASSERT(in.size() == out.size() && !in.empty());
    const std::size_t H = in.size() - 1, cap = std::size_t{bound} + 1;
    Unary arrived, departed;  // unbounded: cumulative; none: the step before's arrivals
    for (std::size_t t = 1; t <= H; ++t) {
        Unary a = unary_sum(f, in[t], cap), d = unary_sum(f, out[t], cap);
        if (queues == QueueKind::none) {
            // What leaves in t is exactly what arrived in t-1; nothing may arrive in the last step.
            at_most_as(f, d, arrived);
            at_most_as(f, arrived, d);
            at_most_count(f, a, t == H ? 0 : bound);
            arrived = std::move(a);
            continue;
        }
        departed = unary_sum(f, {std::move(departed), std::move(d)}, cap);
        at_most_as(f, departed, arrived);  // departures to t need arrivals to t-1
        arrived = unary_sum(f, {std::move(arrived), std::move(a)}, cap);
    }
    if (queues != QueueKind::none) at_most_count(f, arrived, bound);
}

}  // namespace collsched::synth
