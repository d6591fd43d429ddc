// Allreduce bounds with and without reduction in the network (innetwork_bounds.hpp).
//
// The argument for reduce-scatter (moved from docs/time.md; the statement stays there):
//
// **Reduce-scatter.** With reduction in the network the arguments are cuts around a set S of k processors
// (a processor; each partition's first set, a box): (P-k)/P M leaves S's region and k/P M enters, M the
// input per rank. Each byte of a block owned by q outside S sums every processor's value, S's included; a
// transfer carries bytes of one block, each a partial of its position; so some transfer carrying it leaves
// any region containing S and not q, whoever adds (adding merges contributions to one byte, never two
// bytes). Likewise entering for the k blocks owned in S. Without reduction in the network the densest
// entering cut is used instead. The box cut adds on h100nvls and h100sharp 8 x 8 at 1 GiB per rank: 7/8 M /
#include "verifier/time/innetwork_bounds.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "compiler/topology/machine_view.hpp"

namespace collsched::time {

namespace {

/// The bandwidth of a set of channels leaving (or entering) a node: disjoint link groups inside
/// the set replace their channels by the group's bandwidth when that is smaller, greedily, the
/// group with the largest saving first. Any set of disjoint groups gives a valid upper bound.
double set_bandwidth(const Topology& t, std::span<const ChannelId> cs) {
    std::vector<char> in(t.channels().size(), 0), used(t.channels().size(), 0);
    for (ChannelId c : cs) in[idx(c)] = 1;
    struct Cand {
        double saving;
        std::uint32_t g;
    };
    std::vector<Cand> cands;
    for (std::uint32_t g = 0; g < t.groups().size(); ++g) {
        double sum = 0;
        bool inside = false;
        for (ChannelId c : t.groups()[g].channels)
            if (in[idx(c)]) {
                sum += t.speed(c).bandwidth;
                inside = true;
            }
        // a group with channels outside the set still bounds the set's channels inside it
        if (inside && t.group_bandwidth(g) < sum) cands.push_back({sum - t.group_bandwidth(g), g});
    }
    std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) { return a.saving > b.saving; });
    double total = 0;
    for (const Cand& cand : cands) {
        bool disjoint = true;
        for (ChannelId c : t.groups()[cand.g].channels) disjoint = disjoint && !(in[idx(c)] && used[idx(c)]);
        if (!disjoint) continue;
        for (ChannelId c : t.groups()[cand.g].channels)
            if (in[idx(c)]) used[idx(c)] = 1;
        total += t.group_bandwidth(cand.g);
    }
    for (ChannelId c : cs)
        if (!used[idx(c)]) total += t.speed(c).bandwidth;
    return total;
}

std::string gbps(double b) { return fmt::format("{:.4g} GB/s", b / 1e9); }

}  // namespace

double processor_out_bandwidth(const Topology& t, Node p) { return set_bandwidth(t, t.out_channels(p)); }
double processor_in_bandwidth(const Topology& t, Node p) { return set_bandwidth(t, t.in_channels(p)); }

std::vector<InNetworkBound> allreduce_innetwork_bounds(const Topology& t, double M, bool reduces) {
    std::vector<InNetworkBound> out;
    const std::uint32_t P = t.processors();
    if (P < 2) return out;
    // per GPU: the slowest side of any processor
    // (the gossip forms count transfers over all processors, so they divide by the sum of what
    // the processors can receive, not by P times the slowest: the same on a uniform machine)
    double slowest = std::numeric_limits<double>::infinity(), all_in = 0;
    std::uint32_t at = 0;
    for (std::uint32_t p = 0; p < P; ++p) {
        const double in = processor_in_bandwidth(t, Node{p}), outb = processor_out_bandwidth(t, Node{p});
        all_in += in;
        if (std::min(in, outb) < slowest) slowest = std::min(in, outb), at = p;
    }
    out.push_back({"per-GPU, in-network reduction allowed (M / B_gpu)", M / slowest, true, true,
                   fmt::format("M / B_gpu = {} B / {} (processor {}: each GPU sends and receives its buffer once)", M, gbps(slowest), at)});
    const double py_all = all_in;  // the entering side: copies at routers may serve several receivers with one departure
    out.push_back({"per-GPU, no in-network reduction (2(P-1)/P M / B_gpu, Patarasuk-Yuan)", 2.0 * (P - 1) * M / py_all, false, !reduces,
                   fmt::format("2 x {} x {} B / {} (what all {} processors receive together; 2 x {} / {} x M / B_gpu on a uniform "
                               "machine)",
                               P - 1, M, gbps(py_all), P, P - 1, P)});
    // boxes contracted: the channels leaving a box
    const auto comp = processor_components(t, fastest_processor_channel(t) / 4);
    const std::uint32_t N = comp.empty() ? 0 : *std::max_element(comp.begin(), comp.end()) + 1;
    if (N >= 2) {
        // a box's members: its processors and the routers only its processors reach (its switch)
        std::vector<std::int64_t> box(t.nodes(), -1);
        for (std::uint32_t p = 0; p < P; ++p) box[p] = comp[p];
        for (std::uint32_t r = P; r < t.nodes(); ++r) {
            std::int64_t b = -2;
            for (ChannelId c : t.out_channels(Node{r})) {
                const std::uint32_t v = idx(t.channel(c).to);
                if (v >= P || (b != -2 && b != box[v])) {
                    b = -1;
                    break;
                }
                b = box[v];
            }
            box[r] = b < 0 ? -1 : b;
        }
        double slowest_box = std::numeric_limits<double>::infinity(), boxes_in = 0;
        for (std::uint32_t b = 0; b < N; ++b) {
            std::vector<ChannelId> cut_out, cut_in;
            for (const Channel& ch : t.channels()) {
                const ChannelId c = *t.find_channel(ch.from, ch.to);
                if (box[idx(ch.from)] == b && box[idx(ch.to)] != b) cut_out.push_back(c);
                if (box[idx(ch.to)] == b && box[idx(ch.from)] != b) cut_in.push_back(c);
            }
            const double bo = set_bandwidth(t, cut_out), bi = set_bandwidth(t, cut_in);
            slowest_box = std::min({slowest_box, bo, bi});
            boxes_in += bi;
        }
        // reduction between the boxes: a router outside every box that combines
        bool between = false;
        for (std::uint32_t r = P; r < t.nodes(); ++r) between = between || (box[r] < 0 && reduces && t.can_reduce(Node{r}));
        out.push_back({"boxes contracted, reduction between boxes allowed (M / B_box)", M / slowest_box, true, true,
                       fmt::format("M / B_box = {} B / {} ({} boxes)", M, gbps(slowest_box), N)});
        const double boxes_all = boxes_in;  // the entering side, as above
        out.push_back({"boxes contracted, no reduction between boxes (2(N-1)/N M / B_box)", 2.0 * (N - 1) * M / boxes_all, false, !between,
                       fmt::format("2 x {} x {} B / {} (what all {} boxes receive together)", N - 1, M, gbps(boxes_all), N)});
    }
    std::stable_sort(out.begin(), out.end(), [](const InNetworkBound& a, const InNetworkBound& b) { return a.valid > b.valid; });
    return out;
}

double allreduce_innetwork_bound(const Topology& t, double M, bool reduces) {
    double best = 0;
    for (const InNetworkBound& b : allreduce_innetwork_bounds(t, M, reduces))
        if (b.valid) best = std::max(best, b.seconds);
    return best;
}

}  // namespace collsched::time
