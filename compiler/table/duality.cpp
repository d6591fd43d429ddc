#include "compiler/table/duality.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "compiler/table/partials.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched {

std::string duality_problem(const Topology& topo, const Model& model) {
    if (topo.routers() > 0)
        return fmt::format("{} has routers; the duality is implemented for direct networks (routers would have to combine partials "
                           "where the broadcast or allgather copies)",
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

/// The reversed first arrivals of every b(s, k) the table moves (K chunks per datum), as
/// transfers of DSL-style references partial(v, c) (resolved by resolve_partials): c = s*K + k
/// when `per_source` (allgather: block s), else k (broadcast). Step t becomes T + 1 - t.
void reversed_tree(const SendTable& ag, Step T, SendTable& out, bool per_source, Deadline deadline = {}) {
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
        if (v == k.src) continue;
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
                const Transfer& x = ag.transfers[f];
                const Channel& c = topo.channel(x.channel);
                auto back = topo.find_channel(c.to, c.from);
                const Step step = T + 1 - x.step;
                const std::uint32_t chunk = per_source ? s * K + k : k;
                const MessageId ref = reg.intern({MessageKind::partial, chunk, static_cast<std::uint32_t>(step), {MessageId{v}}, {}});
                out.transfers.push_back({step, *back, ref});
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
    reversed_tree(bc, bc.steps(), out, false);
    out.sort();
    resolve_partials(out);
    out.canonicalize_composites();
    return out;
}

SendTable reduce_scatter_from_allgather(const SendTable& ag, Deadline deadline) {
    SendTable out = reduction_table(ag, CollectiveKind::reduce_scatter);
    reversed_tree(ag, ag.steps(), out, true, deadline);
    out.sort();
    resolve_partials(out, deadline);
    canonicalize_composites(out, deadline);
    return out;
}

SendTable allreduce_from_allgather(const SendTable& ag, Deadline deadline) {
    SendTable out = reduction_table(ag, CollectiveKind::allreduce);
    const Step T = ag.steps();
    reversed_tree(ag, T, out, true, deadline);
    Composites& reg = out.composite_registry();
    const Messages ams = ag.messages();
    if (!ag.step_rounds.empty())  // the allgather's rounds again
        for (Step t = 1; t <= T; ++t) out.step_rounds.push_back(ag.rounds(t));
    const std::uint32_t K = ag.collective.chunks;
    std::size_t i = 0;
    for (const Transfer& x : ag.transfers) {  // the allgather of the full partials
        if ((++i & 0xffff) == 0 && deadline.passed()) throw LimitReached("time limit (reversing the schedule)");
        const std::uint32_t s = ams.key(x.message).src * K + ams.chunk(x.message), u = idx(ag.topology->channel(x.channel).from);
        const MessageId ref = reg.intern({MessageKind::partial, s, static_cast<std::uint32_t>(T + x.step), {MessageId{u}}, {}});
        out.transfers.push_back({T + x.step, x.channel, ref});
    }
    out.sort();
    resolve_partials(out, deadline);
    canonicalize_composites(out, deadline);
    return out;
}

}  // namespace collsched
