// Lowering a plan of logical sends to a send table (plan.hpp).
//
// Lowering (moved from docs/synthesis.md; the user's summary stays there):
//
// **Lowering** (`compose/plan.cpp`). A shape is a list of logical sends (step, from, to, item); an item
// is a reduction chunk (the sender's buffer: `resolve_partials`, as `partial(p, c)`) or allgather's
// b(p, c). A logical step takes as many physical steps as its longest route, each physical step the
// rounds its busiest channel, group or port needs (the asynchronous time depends on neither). A route
// through another processor is refused (it would combine there). Under replicate=yes transfers of one
// message on one channel in one step are kept once.
#include "verifier/constructions/compose/plan.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "compiler/table/partials.hpp"

namespace collsched::compose {

namespace {

/// Routes between processors, computed once per pair met.
class Routes {
public:
    explicit Routes(const Topology& t) : t_(t) {}
    const std::vector<ChannelId>& operator()(Node a, Node b) {
        auto [it, fresh] = cache_.try_emplace((std::uint64_t{idx(a)} << 32) | idx(b));
        if (fresh) t_.route(a, b, it->second);
        return it->second;
    }

private:
    const Topology& t_;
    std::unordered_map<std::uint64_t, std::vector<ChannelId>> cache_;
};

}  // namespace

std::optional<SendTable> Plan::lower(std::string* why, Deadline deadline) const {
    const Topology& t = *topo_;
    // Polled every 65,536 sends and between the passes: on 4,096 GPUs one shape has tens of
    // millions of sends, and lowering it ran minutes past --timeout. The memory budget as well, at
    // three quarters of it (the table's plan and check come after): on 1,024 GPUs the partials of
    // a flat ring reduce-scatter (a million sets of up to 1,023 sources) took the resident size
    // from 1.5 to 5 GB, past the budget of 4 GiB.
    const MemoryBudget memory = MemoryBudget::standard();
    std::uint64_t polls = 0;
    auto poll = [&](bool now = false) {
        if (!now && (++polls & 0xffff) != 0) return;
        if (deadline.passed()) throw LimitReached("time limit (lowering a composition's plan)");
        if (memory.exceeded(0.75))
            throw LimitReached(fmt::format("memory limit (lowering a composition's plan): the resident size passed three quarters of {}",
                                           format_bytes(memory.limit())));
    };
    poll(true);
    std::vector<PlannedSend> sends = sends_;
    std::stable_sort(sends.begin(), sends.end(), [](const PlannedSend& a, const PlannedSend& b) { return a.step < b.step; });
    Routes routes(t);
    // the physical steps of each logical step: its longest route
    std::vector<std::uint32_t> stretch(sends.empty() ? 1 : sends.back().step + 1, 0);
    poll(true);
    for (const PlannedSend& s : sends) {
        poll();
        const std::vector<ChannelId>& r = routes(s.from, s.to);
        if (r.empty()) {
            if (why) *why = fmt::format("no route from {} to {}", t.node_name(s.from), t.node_name(s.to));
            return std::nullopt;
        }
        for (std::size_t h = 0; h + 1 < r.size(); ++h)
            if (t.is_processor(t.channel(r[h]).to)) {
                if (why)
                    *why = fmt::format("the route from {} to {} passes through processor {} (a relaying processor would combine what it passes on)",
                                       t.node_name(s.from), t.node_name(s.to), t.node_name(t.channel(r[h]).to));
                return std::nullopt;
            }
        std::uint32_t& w = stretch[s.step];
        w = std::max<std::uint32_t>(w, static_cast<std::uint32_t>(r.size()));
    }
    std::vector<Step> start(stretch.size(), 0);
    Step next = 1;
    for (std::size_t l = 0; l < stretch.size(); ++l) {
        start[l] = next;
        next += stretch[l];
    }
    TableBuilder b(topo_, model_, coll_);
    const bool partials = coll_.reduces();
    b.reserve(sends.size());
    // A reduction's sends carry what the sender's buffer holds when its logical step starts (the
    // buffer rule, compiler/table/partials.hpp): the logical steps take disjoint physical steps, so
    // every arrival of one is in before the next one's sends leave, and the rule is replayed here
    // per logical step (as resolve_partials would replay it per physical step on references).
    std::optional<PartialBuffers> buffers;
    std::optional<Messages> ms;
    if (partials) buffers.emplace(t.processors(), coll_.chunks), ms.emplace(t.processors(), &b.composites(), coll_.chunks);
    std::vector<std::pair<const PlannedSend*, PartialBuffers::SetId>> arrivals;
    for (std::size_t i = 0; i < sends.size();) {
        std::size_t end = i;
        while (end < sends.size() && sends[end].step == sends[i].step) ++end;
        arrivals.clear();
        for (std::size_t k = i; k < end; ++k) {
            poll();
            const PlannedSend& s = sends[k];
            MessageId m{s.item};
            if (partials) {
                const PartialBuffers::SetId held = buffers->held(idx(s.from), s.item);
                m = buffers->message(held, s.item, b.composites(), *ms);
                arrivals.emplace_back(&s, held);
            }
            Step h = start[s.step];
            for (ChannelId c : routes(s.from, s.to)) b.hop(h++, c, m);
        }
        for (const auto& [s, set] : arrivals) buffers->arrive(idx(s->to), s->item, set);
        i = end;
    }
    SendTable table = std::move(b).finish(deadline);
    if (model_.replicate) {  // a router that holds m copies it: one transfer per (step, channel, message)
        table.transfers.erase(std::unique(table.transfers.begin(), table.transfers.end()), table.transfers.end());
    }
    if (partials) {
        poll(true);
        canonicalize_composites(table, deadline);
    }
    poll(true);
    fit_rounds(table);
    return table;
}

void fit_rounds(SendTable& table) {
    const Topology& t = *table.topology;
    const Ports ports = table.model.ports;
    table.step_rounds.assign(table.steps(), 1);
    std::vector<std::uint64_t> chan(t.channels().size()), group(t.groups().size()), out(t.processors()), in(t.processors());
    auto ceil_div = [](std::uint64_t a, std::uint64_t b) { return b == 0 ? a : (a + b - 1) / b; };
    for (std::size_t i = 0; i < table.transfers.size();) {
        const Step s = table.transfers[i].step;
        std::size_t end = i;
        std::vector<ChannelId> used;
        for (; end < table.transfers.size() && table.transfers[end].step == s; ++end) {
            const ChannelId c = table.transfers[end].channel;
            if (chan[idx(c)]++ == 0) used.push_back(c);
        }
        std::uint64_t r = 1;
        for (ChannelId c : used) {
            const std::uint64_t load = chan[idx(c)];
            r = std::max(r, ceil_div(load, t.channel(c).cap));
            for (std::uint32_t g : t.groups_of(c)) group[g] += load;
            const Channel& ch = t.channel(c);
            if (t.is_processor(ch.from)) out[idx(ch.from)] += load;
            if (t.is_processor(ch.to)) in[idx(ch.to)] += load;
        }
        for (ChannelId c : used) {
            for (std::uint32_t g : t.groups_of(c)) {
                r = std::max(r, ceil_div(group[g], t.groups()[g].cap));
            }
            const Channel& ch = t.channel(c);
            for (Node p : {ch.from, ch.to}) {
                if (!t.is_processor(p)) continue;
                if (ports == Ports::single) r = std::max({r, out[idx(p)], in[idx(p)]});
                if (ports == Ports::half) r = std::max(r, out[idx(p)] + in[idx(p)]);
            }
        }
        for (ChannelId c : used) {
            chan[idx(c)] = 0;
            for (std::uint32_t g : t.groups_of(c)) group[g] = 0;
            const Channel& ch = t.channel(c);
            if (t.is_processor(ch.from)) out[idx(ch.from)] = 0;
            if (t.is_processor(ch.to)) in[idx(ch.to)] = 0;
        }
        table.step_rounds[s - 1] = static_cast<std::uint32_t>(std::min<std::uint64_t>(r, max_step_rounds));
        i = end;
    }
    table.normalize_rounds();
}

}  // namespace collsched::compose
