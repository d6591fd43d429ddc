// Lower bounds on sets of processors: the partitions, the capacity between sets, and the drain
// of a box's entries (verifier/synth/bounds/boxes.hpp).
#include "verifier/synth/bounds/boxes.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "compiler/topology/machine_view.hpp"
#include "verifier/synth/problem/network.hpp"

namespace collsched::synth {

std::vector<BoxPartition> box_partitions(const Topology& t) {
    const std::uint32_t P = t.processors();
    std::set<double, std::greater<>> speeds;
    for (std::uint32_t c = 0; c < t.channels().size(); ++c) speeds.insert(t.speed(ChannelId{c}).bandwidth);
    std::vector<BoxPartition> out;
    for (double speed : speeds) {
        BoxPartition p{processor_components(t, speed), 0, speed};
        p.sets = P == 0 ? 0 : *std::max_element(p.set.begin(), p.set.end()) + 1;
        if (p.sets <= 1 || p.sets >= P) continue;
        if (!out.empty() && out.back().set == p.set) continue;
        out.push_back(std::move(p));
    }
    return out;
}

std::uint64_t cross_capacity(const Topology& t, Ports ports, const BoxPartition& part, bool incoming) {
    std::uint64_t total = 0;
    std::vector<ChannelId> cross;
    for (std::uint32_t p = 0; p < t.processors(); ++p) {
        cross.clear();
        for (ChannelId c : incoming ? t.in_channels(Node{p}) : t.out_channels(Node{p})) {
            const Channel& ch = t.channel(c);
            const Node other = incoming ? ch.from : ch.to;
            if (!t.is_processor(other) || part.set[idx(other)] != part.set[p]) cross.push_back(c);
        }
        total += step_capacity(t, ports, cross).hops;
    }
    return total;
}

Bound box_entries(const SynthInstance& in, const std::vector<synth_internal::GoalPair>& goals) {
    const Topology& t = *in.topology;
    Bound best;
    if (goals.size() > (std::size_t{1} << 26)) return best;
    for (const BoxPartition& part : box_partitions(t)) {
        // per (message, set): the members of the set it must reach from outside
        std::unordered_map<std::uint64_t, std::uint32_t> reach;
        for (const synth_internal::GoalPair& g : goals)
            if (part.set[idx(g.src)] != part.set[idx(g.dst)]) ++reach[std::uint64_t{idx(g.m)} * part.sets + part.set[idx(g.dst)]];
        std::vector<std::uint32_t> size(part.sets, 0);
        for (std::uint32_t s : part.set) ++size[s];
        std::vector<std::uint64_t> data(part.sets, 0), into(part.sets, 0);
        for (const auto& [key, n] : reach)
            if (n == size[key % part.sets]) ++data[key % part.sets];
        std::vector<ChannelId> cross;
        for (std::uint32_t p = 0; p < t.processors(); ++p) {
            cross.clear();
            for (ChannelId c : t.in_channels(Node{p}))
                if (!t.is_processor(t.channel(c).from) || part.set[idx(t.channel(c).from)] != part.set[p]) cross.push_back(c);
            into[part.set[p]] += step_capacity(t, in.model.ports, cross).hops;
        }
        for (std::uint32_t s = 0; s < part.sets; ++s) {
            const std::uint64_t D = data[s], K = into[s], last = K / size[s];
            if (D == 0 || K == 0 || D <= last) continue;
            const Step steps = static_cast<Step>(1 + (D - last + K - 1) / K);
            if (steps <= best.steps) continue;
            best = Bound{steps, "box entries",
                         fmt::format("the {} processors of set {} (joined by channels of at least {:g} GB/s) need {} data from outside, "
                                     "at most {} entering a step; a datum first entering in the last step enters all {} in that "
                                     "step, so at most {} enter last and the others by the step before",
                                     size[s], s, part.speed / 1e9, D, K, size[s], last),
                         RouteSpace::any,
                         {"hop timing: a datum received in step t is passed on in step t+1 at the earliest"}};
        }
    }
    return best;
}

}  // namespace collsched::synth
