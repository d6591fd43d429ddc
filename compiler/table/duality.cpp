#include "compiler/table/duality.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "compiler/table/partials.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched {

std::string duality_problem(const Topology& topo, const Model& model) {
    // A router that only forwards (replicate=no) reverses into one that forwards partials; one that
    // copies (replicate=yes) would reverse into one that combines them.
    if (topo.routers() > 0 && model.replicate)
        return fmt::format("{} has routers and the model replicate=yes: the reverse of a router copying the broadcast's or "
                           "allgather's data is a router combining partials; the duality takes routers that forward (replicate=no)",
                           topo.spec());
    if (model.timing != Timing::hop) return "the duality is stated for hop timing";
    // Reversal maps the broadcast's datum, injected once and spreading away from its source, onto
    // partials gathering toward the root; inject=once restricts the first and not the second
    // (ring:4: no broadcast from 0 exists under inject=once, a 2-step reduce to 0 does).
    if (model.inject_once)
        return "the duality does not carry inject=once: it restricts the broadcast's or allgather's initial data, not the partials "
               "of the reversed schedule, so the dual's optimum (or its infeasibility) says nothing about the reduction";
    for (const Channel& c : topo.channels()) {
        auto back = topo.find_channel(c.to, c.from);
        if (!back || topo.channel(*back).cap != c.cap)
            return fmt::format("channel {}->{} has no reverse of the same capacity, so the reversed allgather is not a schedule of "
                               "{}",
                               topo.node_name(c.from), topo.node_name(c.to), topo.spec());
    }
    // Every group's (capacity, sorted channels), once: the lookup of each reversed group is then a
    // search, not a walk over every group (rail 128 x 8 reduce_scatter: 2,048 groups of 1,000
    // channels took 30 s).
    std::set<std::pair<std::uint32_t, std::vector<std::uint32_t>>> sets;
    for (const LinkGroup& h : topo.groups()) {
        std::vector<std::uint32_t> hs;
        for (ChannelId c : h.channels) hs.push_back(idx(c));
        std::sort(hs.begin(), hs.end());
        sets.emplace(h.cap, std::move(hs));
    }
    for (const LinkGroup& g : topo.groups()) {
        // Reversal maps the group onto the group of the reversed channels: it must be one.
        std::vector<std::uint32_t> rev;
        for (ChannelId c : g.channels) rev.push_back(idx(*topo.find_channel(topo.channel(c).to, topo.channel(c).from)));
        std::sort(rev.begin(), rev.end());
        const bool found = sets.contains({g.cap, rev});
        if (!found)
            return fmt::format("link group {} has no reversed group of the same capacity, so the reversed allgather is not a "
                               "schedule of {}",
                               g.name, topo.spec());
    }
    return "";
}

namespace {

/// C chunks for a reduction table.
void set_reduction_chunks(Collective& c, std::uint32_t C, const Topology& topo) { c.set_chunks(C, topo); }

constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

/// Per transfer out of a router: the transfer whose copy it forwards (replicate=no: the k-th
/// departure of m from r takes the earliest copy of m from an earlier step not yet taken, within
/// a step lower channels first, as the checker matches them); `none` for the others. A departure
/// without a copy is bad input (the table does not verify).
std::vector<std::size_t> forwarded_copies(const SendTable& t) {
    const Topology& topo = *t.topology;
    std::vector<std::size_t> fed(t.transfers.size(), none);
    if (topo.routers() == 0) return fed;
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<std::vector<std::size_t>, std::vector<std::size_t>>> at;  // (router, message)
    for (std::size_t i = 0; i < t.transfers.size(); ++i) {
        const Transfer& x = t.transfers[i];
        const Channel& c = topo.channel(x.channel);
        if (!topo.is_processor(c.to)) at[{idx(c.to), idx(x.message)}].first.push_back(i);
        if (!topo.is_processor(c.from)) at[{idx(c.from), idx(x.message)}].second.push_back(i);
    }
    auto order = [&](std::size_t a, std::size_t b) {
        const Transfer &x = t.transfers[a], &y = t.transfers[b];
        return std::pair(x.step, idx(x.channel)) < std::pair(y.step, idx(y.channel));
    };
    for (auto& [key, io] : at) {
        auto& [in, out] = io;
        std::sort(in.begin(), in.end(), order);
        std::sort(out.begin(), out.end(), order);
        std::size_t next = 0;
        for (std::size_t d : out) {
            if (next == in.size() || t.transfers[in[next]].step >= t.transfers[d].step)
                throw InputError(fmt::format("the {} sends {} out of {} in step {} without a copy to forward", t.collective.to_string(),
                                             t.messages().name(t.transfers[d].message), topo.node_name(Node{key.first}), t.transfers[d].step));
            fed[d] = in[next++];
        }
    }
    return fed;
}

/// The reversed first arrivals of every b(s, k) the table moves (K chunks per datum), as
/// transfers of DSL-style references partial(v, c) (resolved by resolve_partials): c = s*K + k
/// when `per_source` (allgather: block s), else k (broadcast). Step t becomes T + 1 - t. Through
/// routers the arrival's copy is followed back hop by hop (`fed`) to the processor that sent it,
/// and every hop reversed carries v's partial.
void reversed_tree(const SendTable& ag, Step T, SendTable& out, bool per_source, const std::vector<std::size_t>& fed,
                   Deadline deadline = {}) {
    const Topology& topo = *ag.topology;
    const std::uint32_t P = topo.processors(), K = ag.collective.chunks;
    const Messages ams = ag.messages();
    // first arrival of b(s, k) at every processor: (step, transfer index)
    std::vector<std::size_t> first(std::size_t{P} * K * P, std::numeric_limits<std::size_t>::max());
    for (std::size_t i = 0; i < ag.transfers.size(); ++i) {
        const Transfer& x = ag.transfers[i];
        const MessageKey k = ams.key(x.message);
        if (k.kind != MessageKind::broadcast) throw InputError(fmt::format("the allgather moves {}, not a b(s)", ams.name(x.message)));
        const std::uint32_t v = idx(topo.channel(x.channel).to);
        if (v == k.src || !topo.is_processor(Node{v})) continue;
        std::size_t& f = first[(std::size_t{k.src} * K + ams.chunk(x.message)) * P + v];
        if (f == std::numeric_limits<std::size_t>::max() || ag.transfers[f].step > x.step) f = i;
    }
    Composites& reg = out.composite_registry();
    for (std::uint32_t s = 0; s < P; ++s) {
        if (deadline.passed()) throw LimitReached("time limit (reversing the schedule)");
        for (std::uint32_t k = 0; k < K; ++k)
            for (std::uint32_t v = 0; v < P; ++v) {
                if (v == s) continue;
                if (!per_source && s != idx(ag.collective.root)) continue;
                const std::size_t f = first[(std::size_t{s} * K + k) * P + v];
                if (f == std::numeric_limits<std::size_t>::max())
                    throw InputError(fmt::format("the {} never delivers b({}) to {}", ag.collective.to_string(), s, v));
                const std::uint32_t chunk = per_source ? s * K + k : k;
                const Step sent = T + 1 - ag.transfers[f].step;  // v's send
                const MessageId ref = reg.intern({MessageKind::partial, chunk, static_cast<std::uint32_t>(sent), {MessageId{v}}, {}});
                for (std::size_t hop = f; hop != none; hop = fed[hop]) {
                    const Transfer& x = ag.transfers[hop];
                    const Channel& c = topo.channel(x.channel);
                    out.transfers.push_back({T + 1 - x.step, *topo.find_channel(c.to, c.from), ref});
                }
            }
    }
}

SendTable reduction_table(const SendTable& from, CollectiveKind kind) {
    if (std::string why = duality_problem(*from.topology, from.model); !why.empty()) throw InputError(why);
    SendTable out;
    out.topology = from.topology;
    out.model = from.model;
    out.collective.kind = kind;
    out.collective.root = from.collective.root;
    const std::uint32_t K = from.collective.chunks;
    set_reduction_chunks(out.collective, kind == CollectiveKind::reduce ? K : from.topology->processors() * K, *from.topology);
    // Rounds: step t of the reduction is step T + 1 - t of the dissemination.
    const Step T = from.steps();
    if (!from.step_rounds.empty())
        for (Step t = 1; t <= T; ++t) out.step_rounds.push_back(from.rounds(T + 1 - t));
    return out;
}

}  // namespace

SendTable reduce_from_broadcast(const SendTable& bc) {
    SendTable out = reduction_table(bc, CollectiveKind::reduce);
    reversed_tree(bc, bc.steps(), out, false, forwarded_copies(bc));
    out.sort();
    resolve_partials(out);
    out.canonicalize_composites();
    return out;
}

SendTable reduce_scatter_from_allgather(const SendTable& ag, Deadline deadline) {
    SendTable out = reduction_table(ag, CollectiveKind::reduce_scatter);
    reversed_tree(ag, ag.steps(), out, true, forwarded_copies(ag), deadline);
    out.sort();
    resolve_partials(out, deadline);
    canonicalize_composites(out, deadline);
    return out;
}

SendTable allreduce_from_allgather(const SendTable& ag, Deadline deadline) {
    SendTable out = reduction_table(ag, CollectiveKind::allreduce);
    const Step T = ag.steps();
    const std::vector<std::size_t> fed = forwarded_copies(ag);
    reversed_tree(ag, T, out, true, fed, deadline);
    Composites& reg = out.composite_registry();
    const Messages ams = ag.messages();
    if (!ag.step_rounds.empty())  // the allgather's rounds again
        for (Step t = 1; t <= T; ++t) out.step_rounds.push_back(ag.rounds(t));
    const std::uint32_t K = ag.collective.chunks;
    for (std::size_t i = 0; i < ag.transfers.size(); ++i) {  // the allgather of the full partials
        if ((i & 0xffff) == 0xffff && deadline.passed()) throw LimitReached("time limit (reversing the schedule)");
        const Transfer& x = ag.transfers[i];
        // out of a router: the partial of the processor whose copy it forwards
        std::size_t head = i;
        while (fed[head] != none) head = fed[head];
        const Transfer& h = ag.transfers[head];
        const std::uint32_t s = ams.key(x.message).src * K + ams.chunk(x.message), u = idx(ag.topology->channel(h.channel).from);
        const MessageId ref = reg.intern({MessageKind::partial, s, static_cast<std::uint32_t>(T + h.step), {MessageId{u}}, {}});
        out.transfers.push_back({T + x.step, x.channel, ref});
    }
    out.sort();
    resolve_partials(out, deadline);
    canonicalize_composites(out, deadline);
    return out;
}

}  // namespace collsched
