// NCCL's ring search on one box of point-to-point NVLinks (docs/time.md, "NCCL's rings on a mesh"):
// src/graph/search.cc ncclTopoCompute (:1074-1316) for NCCL_TOPO_PATTERN_RING with one node,
// step by step, so that the rings, their number and their speed are the ones NCCL settles on,
// including where its time budgets cut a search short. NVIDIA/nccl 2.30.7, commit 5067397c.
// The steps: the speeds of `speedArrayIntra` from the first at most maxBw (the best pair) and
// totalBw (a GPU's NVLinks); each speed searched with the channels forced the same (a budget of 2^8
// calls of ncclTopoSearchRecGpu), then free (2^14); the first channel tried in PCI order, later ones
// as a replay of the last, then from every GPU, the next GPU chosen by ncclTopoSearchNextGpuSort
// (the path's bandwidth, then its index after the current GPU); each channel takes its speed from
// every link it crosses (followPath, SUB_ROUND); a graph replaces the best only with more channels x
// speed (ncclTopoCompareGraphs); slower speeds while above 0.49 of the best, until channels x speed
// reaches totalBw; ncclTopoDupChannels; pass 2 tries faster speeds while a search ends within its
// budget; the global budget of 2^19 calls. A pair's links are summed into one (topo.cc
// ncclTopoConnectNodes).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/constructions/nccl/nccl_impl.hpp"

namespace collsched::nccl {

namespace {

// search.cc:332-335: the budgets, in calls of ncclTopoSearchRecGpu.
constexpr std::int64_t search_global_timeout = std::int64_t{1} << 19;
constexpr int search_timeout = 1 << 14;
constexpr int search_timeout_same_channels = 1 << 8;
// src/include/device.h:91 MAXCHANNELS 64; src/init.cc:1176-1177 the ring graph's min and max channels.
constexpr std::uint32_t ring_max_channels = 32;
// search.cc:590-592 FORCED_ORDER_PCI, FORCED_ORDER_REPLAY.
enum class Forced { none, pci, replay };

/// The state of one ncclTopoGraph as the ring search uses it (src/include/graph.h).
struct SearchGraph {
    std::uint32_t channels = 0;
    float bw = 0;            // bwIntra = bwInter (one node)
    int hops = 0;            // nHops
    std::uint32_t min_channels = 1, max_channels = ring_max_channels;
    bool same_channels = true;
    std::vector<std::uint32_t> intra;  // intra[c * n + step]: channel c's GPU at `step`
};

class RingSearch {
public:
    explicit RingSearch(const System& s) : n_(s.gpus_per_node), link_(s.mesh_bw), static_bw_(s.mesh_bw), used_(n_, 0) {}

    /// ncclTopoCompute for the ring pattern on one node (search.cc:1074-1316); nullopt where it
    /// would leave NVLink paths (see nccl.hpp).
    std::optional<SearchGraph> compute(Arch arch, std::string& note);

private:
    /// ncclTopoFollowPath (:127-170) between two GPUs over their NVLink (the path type NVL: one
    /// link; typeIntra stays NVL here), mult 1 to take bw, -1 to give it back; followPath (:81-121)
    /// subtracts with SUB_ROUND (:79).
    bool follow(SearchGraph& g, std::uint32_t u, std::uint32_t v, float mult) {
        float& bw = link_[u * n_ + v];
        if (static_bw_[u * n_ + v] <= 0) return false;  // no NVLink: a path of type NVB or PCI, above typeIntra
        const float need = g.bw * mult;
        if (bw < need) return false;
        bw = std::round((bw - need) * 1000) / 1000;
        g.hops += static_cast<int>(mult) * 3;  // GPU -> its DEV -> the peer's DEV -> GPU (paths.cc)
        return true;
    }

    /// ncclTopoCompareGraphs (:445-469) for rings: enough channels, then more bandwidth, then fewer hops.
    static bool better(const SearchGraph& g, const SearchGraph& ref) {
        if (g.channels < g.min_channels) return false;
        const float a = static_cast<float>(g.channels) * g.bw, b = static_cast<float>(ref.channels) * ref.bw;
        if (a != b) return a > b;
        return g.hops < ref.hops;
    }

    /// ncclTopoSearchNextGpuSort (:253-326) without NVSwitches and networks: the GPUs not yet on
    /// this channel, by the bandwidth of the path to them (truncated to int, as the score holds it),
    /// then fewer hops (a GPU without an NVLink is reached through another GPU or PCIe, a path of
    /// more hops, refused by ncclTopoFollowPath at typeIntra NVL, so left out here), then the
    /// order after `gpu`.
    std::vector<std::uint32_t> next_gpus(const SearchGraph& g, std::uint32_t gpu) const {
        const std::uint64_t flag = std::uint64_t{1} << g.channels;
        std::vector<std::pair<int, std::uint32_t>> score;  // (-bw, startIndex)
        for (std::uint32_t i = 1; i < n_; ++i) {
            const std::uint32_t v = (gpu + i) % n_;
            if ((used_[v] & flag) || static_bw_[gpu * n_ + v] <= 0) continue;
            score.emplace_back(-static_cast<int>(static_bw_[gpu * n_ + v]), i);
        }
        std::sort(score.begin(), score.end());
        std::vector<std::uint32_t> next;
        for (const auto& [bw, i] : score) next.push_back((gpu + i) % n_);
        return next;
    }

    /// ncclTopoSearchTryGpu (:358-371): from GPU `from` (none at step 0) to `to`.
    void try_gpu(SearchGraph& g, SearchGraph& save, std::uint32_t step, Forced forced, int& time, int from, std::uint32_t to) {
        const std::uint64_t flag = std::uint64_t{1} << g.channels;
        if (from >= 0 && !follow(g, static_cast<std::uint32_t>(from), to, 1)) return;
        used_[to] ^= flag;
        rec_gpu(g, save, to, step, forced, time);
        used_[to] ^= flag;
        if (from >= 0) follow(g, static_cast<std::uint32_t>(from), to, -1);
    }

    /// ncclTopoSearchRecGpu (:621-722) for an intra-node ring: backToNet -1, backToFirstRank n - 1.
    void rec_gpu(SearchGraph& g, SearchGraph& save, std::uint32_t gpu, std::uint32_t step, Forced forced, int& time) {
        if (time <= 0) return;
        --time;
        ++calls_;
        if (step == n_) {
            ++g.channels;
            if (better(g, save)) {
                save = g;
                if (g.channels == g.max_channels) time = -1;
            }
            if (g.channels < g.max_channels) rec(g, save, time);
            --g.channels;
            return;
        }
        g.intra[g.channels * n_ + step] = gpu;
        if (step < n_ - 1) {
            std::vector<std::uint32_t> next;
            if (forced == Forced::pci) next = {step + 1};
            else if (forced == Forced::replay) next = {g.intra[(g.channels - 1) * n_ + step + 1]};  // ncclTopoReplayGetGpu (:340-352)
            else next = next_gpus(g, gpu);
            for (std::uint32_t v : next) try_gpu(g, save, step + 1, forced, time, static_cast<int>(gpu), v);
        } else {
            const std::uint32_t first = g.intra[g.channels * n_];  // back to the first rank (:703-712)
            if (follow(g, gpu, first, 1)) {
                rec_gpu(g, save, first, step + 1, forced, time);
                follow(g, gpu, first, -1);
            }
        }
    }

    /// ncclTopoSearchRec (:849-887), one node: the PCI order for the first channel, else a replay
    /// of the last one; then every starting GPU unless the channels must be the same.
    void rec(SearchGraph& g, SearchGraph& save, int& time) {
        if (g.channels == 0) try_gpu(g, save, 0, Forced::pci, time, -1, 0);
        else try_gpu(g, save, 0, Forced::replay, time, -1, g.intra[(g.channels - 1) * n_]);
        if (!g.same_channels || g.channels == 0)
            for (std::uint32_t v = 0; v < n_; ++v) try_gpu(g, save, 0, Forced::none, time, -1, v);
    }

    std::uint32_t n_;
    std::vector<float> link_, static_bw_;  // remaining and initial bandwidth of u -> v
    std::vector<std::uint64_t> used_;      // per GPU, a bit per channel being built
    std::uint64_t calls_ = 0;
};

std::optional<SearchGraph> RingSearch::compute(Arch arch, std::string& note) {
    // ncclTopoSearchInit (:39-54): maxBw the best path between two GPUs, totalBw a GPU's NVLinks.
    float max_bw = 0, total_bw = 0;
    bool complete = true;
    for (std::uint32_t u = 0; u < n_; ++u) {
        float sum = 0;
        for (std::uint32_t v = 0; v < n_; ++v) {
            max_bw = std::max(max_bw, static_bw_[u * n_ + v]);
            sum += static_bw_[u * n_ + v];
            if (u != v && static_bw_[u * n_ + v] <= 0) complete = false;
        }
        total_bw = std::max(total_bw, sum);
    }
    const std::vector<double> speeds = search_speeds(arch, false);
    const std::size_t nspeeds = speeds.size();
    SearchGraph graph, tmp;
    graph.intra.assign(std::size_t{ring_max_channels} * n_, 0);
    graph.bw = 0;
    tmp = graph;
    std::size_t si = 0;
    while ((speeds[si] > max_bw || speeds[si] * tmp.min_channels > total_bw) && si + 1 < nspeeds) ++si;  // :1170-1173
    tmp.bw = static_cast<float>(speeds[si]);
    std::int64_t global = search_global_timeout;
    int pass = 1, time = 0, searches = 0;
    std::string tried;
    for (;;) {
        // search: (:1177-1183)
        time = tmp.same_channels ? search_timeout_same_channels : search_timeout;
        tmp.channels = 0;
        global -= time;
        rec(tmp, graph, time);
        ++searches;
        tried += fmt::format("{}{:g}{}", tried.empty() ? "" : ", ", tmp.bw, tmp.same_channels ? " (same)" : "");
        const bool done = time == -1 || static_cast<float>(graph.channels) * graph.bw >= total_bw;  // :1197-1198
        if (!done && pass == 1) {
            if (tmp.same_channels) {  // :1203-1208 (an Intel CPU: no AMD exception; NVLink paths are not SYS)
                tmp.same_channels = false;
                continue;
            }
            tmp.same_channels = true;
            if (time != -1) global += time;  // :1211-1213
            else global = search_global_timeout;
            if (!(global < 0 && graph.channels)) {
                // :1223-1228: with no ring yet NCCL tries paths of the next type (NVB, PCIe): not described here
                if (graph.channels == 0 && !complete) return std::nullopt;
                // :1244-1248: a slower speed while none is found, or while above 0.49 of the best
                if (si + 1 < nspeeds && (graph.channels == 0 || speeds[si + 1] / graph.bw > .49)) {
                    tmp.bw = static_cast<float>(speeds[++si]);
                    continue;
                }
                si = 0;  // :1249-1251
                while (speeds[si] > max_bw && si + 1 < nspeeds) ++si;
                tmp.bw = static_cast<float>(speeds[si]);
            }
        }
        if (pass == 1) {  // done: (:1255-1265) duplicate, then pass 2 from the speed found
            time = -1;
            if (graph.channels == 0) break;
            // ncclTopoDupChannels (:1036-1048)
            if (graph.bw >= 25.0f && !(arch == Arch::hopper && graph.bw < 50.0f && graph.channels > 4)) {
                const std::uint32_t dup = std::min(graph.channels * 2, graph.max_channels);
                std::copy_n(graph.intra.begin(), std::size_t{dup - graph.channels} * n_, graph.intra.begin() + std::size_t{graph.channels} * n_);
                const float div = static_cast<float>((dup + graph.channels - 1) / graph.channels);
                graph.bw /= div;
                graph.channels = dup;
            }
            tmp = graph;
            si = 0;
            while (speeds[si] > graph.bw && si + 1 < nspeeds) ++si;
            tmp.bw = static_cast<float>(speeds[si]);
            tmp.min_channels = graph.channels;
            pass = 2;
        }
        // pass 2 (:1267-1286): a faster speed for rings while a search ends before its budget
        if (time != 0 && si > 0) {
            tmp.bw = static_cast<float>(speeds[--si]);
            continue;
        }
        break;
    }
    if (graph.channels == 0) return std::nullopt;
    note = fmt::format("NCCL's ring search (search.cc ncclTopoCompute) on the box's NVLinks: {} searches at {} GB/s a channel, {} "
                       "calls of ncclTopoSearchRecGpu; {} channel{} at {:g} GB/s",
                       searches, tried, calls_, graph.channels, graph.channels == 1 ? "" : "s", graph.bw);
    return graph;
}

}  // namespace

std::optional<Graph> nccl_ring_search(const System& s) {
    if (s.nodes != 1 || s.gpus_per_node < 2 || s.mesh_bw.size() != std::size_t{s.gpus_per_node} * s.gpus_per_node) return std::nullopt;
    RingSearch search(s);
    std::string note;
    const std::optional<SearchGraph> g = search.compute(s.arch, note);
    if (!g) return std::nullopt;
    Graph out;
    out.channels = g->channels;
    out.bw_intra = out.bw_inter = g->bw;
    out.same_channels = g->same_channels;
    for (std::uint32_t c = 0; c < g->channels; ++c)
        out.rings.emplace_back(g->intra.begin() + std::size_t{c} * s.gpus_per_node, g->intra.begin() + std::size_t{c + 1} * s.gpus_per_node);
    out.note = std::move(note);
    return out;
}

}  // namespace collsched::nccl
