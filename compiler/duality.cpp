#include "compiler/duality.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "compiler/partials.hpp"
#include "dsl/diagnostics.hpp"

namespace collsched {

std::string duality_problem(const Topology& topo, const Model& model) {
    if (topo.routers() > 0)
        return fmt::format("{} has routers; the duality is implemented for direct networks (routers would have to combine partials "
                           "where the broadcast or allgather copies)",
                           topo.spec());
    if (model.timing != Timing::hop) return "the duality is stated for hop timing";
    for (const Channel& c : topo.channels()) {
        auto back = topo.find_channel(c.to, c.from);
        if (!back || topo.channel(*back).cap != c.cap)
            return fmt::format("channel {}->{} has no reverse of the same capacity, so the reversed allgather is not a schedule of "
                               "{}",
                               topo.node_name(c.from), topo.node_name(c.to), topo.spec());
    }
    return "";
}

namespace {

/// C chunks for a reduction table.
void set_reduction_chunks(Collective& c, std::uint32_t C, const Topology& topo) { c.set_chunks(C, topo); }

/// The reversed first arrivals of every b(s) the table moves, as transfers of DSL-style
/// references partial(v, c) (resolved by resolve_partials), c = s when `per_source` (allgather:
/// chunk s), else 0 (broadcast).
void reversed_tree(const SendTable& ag, Step T, SendTable& out, bool per_source) {
    const Topology& topo = *ag.topology;
    const std::uint32_t P = topo.processors();
    const Messages ams = ag.messages();
    // first arrival of b(s) at every processor: (step, transfer index)
    std::vector<std::size_t> first(std::size_t{P} * P, std::numeric_limits<std::size_t>::max());
    for (std::size_t i = 0; i < ag.transfers.size(); ++i) {
        const Transfer& x = ag.transfers[i];
        const MessageKey k = ams.key(x.message);
        if (k.kind != MessageKind::broadcast) throw InputError(fmt::format("the allgather moves {}, not a b(s)", ams.name(x.message)));
        const std::uint32_t v = idx(topo.channel(x.channel).to);
        if (v == k.src) continue;
        std::size_t& f = first[std::size_t{k.src} * P + v];
        if (f == std::numeric_limits<std::size_t>::max() || ag.transfers[f].step > x.step) f = i;
    }
    Composites& reg = out.composite_registry();
    for (std::uint32_t s = 0; s < P; ++s)
        for (std::uint32_t v = 0; v < P; ++v) {
            if (v == s) continue;
            if (!per_source && s != idx(ag.collective.root)) continue;
            const std::size_t f = first[std::size_t{s} * P + v];
            if (f == std::numeric_limits<std::size_t>::max())
                throw InputError(fmt::format("the {} never delivers b({}) to {}", ag.collective.to_string(), s, v));
            const Transfer& x = ag.transfers[f];
            const Channel& c = topo.channel(x.channel);
            auto back = topo.find_channel(c.to, c.from);
            const Step step = T + 1 - x.step;
            const std::uint32_t chunk = per_source ? s : 0;
            const MessageId ref = reg.intern({MessageKind::partial, chunk, static_cast<std::uint32_t>(step), {MessageId{v}}, {}});
            out.transfers.push_back({step, *back, ref});
        }
}

SendTable reduction_table(const SendTable& from, CollectiveKind kind) {
    if (std::string why = duality_problem(*from.topology, from.model); !why.empty()) throw InputError(why);
    SendTable out;
    out.topology = from.topology;
    out.model = from.model;
    out.collective.kind = kind;
    out.collective.root = from.collective.root;
    if (kind != CollectiveKind::reduce) set_reduction_chunks(out.collective, from.topology->processors(), *from.topology);
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

SendTable reduce_scatter_from_allgather(const SendTable& ag) {
    SendTable out = reduction_table(ag, CollectiveKind::reduce_scatter);
    reversed_tree(ag, ag.steps(), out, true);
    out.sort();
    resolve_partials(out);
    out.canonicalize_composites();
    return out;
}

SendTable allreduce_from_allgather(const SendTable& ag) {
    SendTable out = reduction_table(ag, CollectiveKind::allreduce);
    const Step T = ag.steps();
    reversed_tree(ag, T, out, true);
    Composites& reg = out.composite_registry();
    const Messages ams = ag.messages();
    for (const Transfer& x : ag.transfers) {  // the allgather of the full partials
        const std::uint32_t s = ams.key(x.message).src, u = idx(ag.topology->channel(x.channel).from);
        const MessageId ref = reg.intern({MessageKind::partial, s, static_cast<std::uint32_t>(T + x.step), {MessageId{u}}, {}});
        out.transfers.push_back({T + x.step, x.channel, ref});
    }
    out.sort();
    resolve_partials(out);
    out.canonicalize_composites();
    return out;
}

}  // namespace collsched
