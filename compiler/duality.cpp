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
                           "where the allgather replicates)",
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

/// The reversed first arrivals of every b(s), as transfers of DSL-style references partial(v, s)
/// (resolved by resolve_partials), shifted by `offset` steps. Empty bits of `reg` are interned.
void reversed_tree(const SendTable& ag, Step T, SendTable& out) {
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
            const std::size_t f = first[std::size_t{s} * P + v];
            if (f == std::numeric_limits<std::size_t>::max())
                throw InputError(fmt::format("the allgather never delivers b({}) to {}", s, v));
            const Transfer& x = ag.transfers[f];
            const Channel& c = topo.channel(x.channel);
            auto back = topo.find_channel(c.to, c.from);
            const Step step = T + 1 - x.step;
            const MessageId ref = reg.intern({MessageKind::partial, s, static_cast<std::uint32_t>(step), {MessageId{v}}, {}});
            out.transfers.push_back({step, *back, ref});
        }
}

SendTable reduction_table(const SendTable& ag, CollectiveKind kind) {
    if (std::string why = duality_problem(*ag.topology, ag.model); !why.empty()) throw InputError(why);
    SendTable out;
    out.topology = ag.topology;
    out.model = ag.model;
    out.collective.kind = kind;
    out.collective.set_chunks(ag.topology->processors(), *ag.topology);
    return out;
}

}  // namespace

SendTable reduce_scatter_from_allgather(const SendTable& ag) {
    SendTable out = reduction_table(ag, CollectiveKind::reduce_scatter);
    reversed_tree(ag, ag.steps(), out);
    out.sort();
    resolve_partials(out);
    out.canonicalize_composites();
    return out;
}

SendTable allreduce_from_allgather(const SendTable& ag) {
    SendTable out = reduction_table(ag, CollectiveKind::allreduce);
    const Step T = ag.steps();
    reversed_tree(ag, T, out);
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
