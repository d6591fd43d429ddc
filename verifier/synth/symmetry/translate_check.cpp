// The check of an allgather's translates in the quotient (verifier/synth/symmetry/translate_check.hpp).
//
// The check (moved from docs/synthesis.md; the user's summary stays there):
//
// - **Check.** `symmetry/translate_check.cpp` checks the tree edges instead of the P x E transfers:
//   both generators pass `AutomorphismCheck` again; every edge is a channel; its sender holds the
//   chunk before its step; every processor receives it exactly once; per step the edges of each
//   difference within its channels' capacity, every link group within its capacity (summing its
//   channels of each edge's difference), at most one edge under single ports. It shares no code with
//   the construction; `test_translates.cpp` holds it to the direct checker on five machines'
//   expanded tables and on mutated trees (an edge left out, an edge before its sender holds the
//   chunk, two edges out of one GPU in one step).
#include "verifier/synth/symmetry/translate_check.hpp"

#include <map>
#include <vector>

#include <fmt/format.h>

namespace collsched {

namespace {

QuotientVerdict broken(std::string why) { return {false, std::move(why), 0}; }

}  // namespace

QuotientVerdict check_translates(const SynthInstance& in, const QuotientTrees& trees) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors(), C = trees.chunks;
    if (in.collective.kind != CollectiveKind::allgather || in.model.timing != Timing::hop || in.model.ports == Ports::half || t.routers() != 0)
        return broken("not taken: the check in the quotient is for allgather with hop timing, multi or single ports, and no routers");
    if (C == 0 || in.collective.chunks != C) return broken(fmt::format("not taken: the trees carry {} chunks, the collective {}", C, in.collective.chunks));
    // (1) The group.
    const std::optional<Translations> g = translation_group(t);
    if (!g || g->B != trees.group.B || g->K != trees.group.K)
        return broken(fmt::format("group: Z_{} x Z_{} is not a checked translation group of {}", trees.group.B, trees.group.K, t.spec()));
    const Translations& tr = *g;
    // (2) Channels, causality, spanning.
    constexpr Step unreached = ~Step{0};
    std::vector<Step> reach(std::size_t{C} * P, unreached);
    for (std::uint32_t c = 0; c < C; ++c) reach[std::size_t{c} * P] = 0;
    Step last = 0;
    for (const QuotientEdge& e : trees.edges) {
        if (e.step < 1 || e.step < last) return broken(fmt::format("order: edge {}->{} of step {} after step {}", e.from, e.to, e.step, last));
        last = e.step;
        if (e.tree >= C || e.from >= P || e.to >= P || !t.find_channel(Node{e.from}, Node{e.to}))
            return broken(fmt::format("channel: step {}: {}->{} (chunk {}) is not a channel", e.step, e.from, e.to, e.tree));
        const std::size_t from = std::size_t{e.tree} * P + e.from, to = std::size_t{e.tree} * P + e.to;
        if (reach[from] >= e.step)
            return broken(fmt::format("causality: step {}, channel {}->{}: chunk {} of datum 0 is not at {} before step {}", e.step, e.from, e.to,
                                      e.tree, e.from, e.step));
        if (reach[to] != unreached)
            return broken(fmt::format("redundant: step {}, channel {}->{}: {} already receives chunk {} of datum 0 in step {}", e.step, e.from, e.to,
                                      e.to, e.tree, reach[to]));
        reach[to] = e.step;
    }
    for (std::size_t i = 0; i < reach.size(); ++i)
        if (reach[i] == unreached)
            return broken(fmt::format("completeness: processor {} never receives chunk {} of datum 0 (nor any translate its own)",
                                      i % P, i / P));
    // (3) Capacities per step: channels by difference, link groups, ports.
    std::map<std::uint32_t, std::vector<std::pair<std::uint32_t, std::uint32_t>>> groups_of_diff;  // d -> (group, channels of d in it)
    for (std::uint32_t gi = 0; gi < t.groups().size(); ++gi) {
        std::map<std::uint32_t, std::uint32_t> mult;
        for (ChannelId c : t.groups()[gi].channels) ++mult[tr.sub(idx(t.channel(c).to), idx(t.channel(c).from))];
        for (auto [d, m] : mult) groups_of_diff[d].push_back({gi, m});
    }
    std::vector<std::uint64_t> load(t.groups().size(), 0);
    std::vector<std::uint32_t> touched;
    for (std::size_t i = 0; i < trees.edges.size();) {
        const Step s = trees.edges[i].step;
        std::map<std::uint32_t, std::uint32_t> per_diff;
        std::size_t n = 0;
        for (; i < trees.edges.size() && trees.edges[i].step == s; ++i, ++n) ++per_diff[tr.sub(trees.edges[i].to, trees.edges[i].from)];
        if (in.model.ports == Ports::single && n > 1)
            return broken(fmt::format("ports: step {}: every processor sends {} chunks (ports=single)", s, n));
        for (auto [d, count] : per_diff) {
            const Channel& ch = t.channel(*t.find_channel(Node{0}, Node{d}));
            if (count > ch.cap)
                return broken(fmt::format("capacity: step {}, channel 0->{} (and every translate): {} chunks but capacity {}", s, d, count, ch.cap));
            if (auto it = groups_of_diff.find(d); it != groups_of_diff.end())
                for (auto [gi, m] : it->second) {
                    if (load[gi] == 0) touched.push_back(gi);
                    load[gi] += std::uint64_t{count} * m;
                }
        }
        for (std::uint32_t gi : touched) {
            if (load[gi] > t.groups()[gi].cap)
                return broken(fmt::format("group: step {}, link group {}: {} chunks but capacity {}", s, t.groups()[gi].name, load[gi],
                                          t.groups()[gi].cap));
            load[gi] = 0;
        }
        touched.clear();
    }
    return {true, {}, std::uint64_t{P} * trees.edges.size()};
}

}  // namespace collsched
