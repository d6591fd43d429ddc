// NCCL's view of a machine and NCCL's cost model (docs/time.md, "NCCL's algorithms and NCCL's
// model"). Every constant below is NCCL 2.30.7's, with its file and line; where collsched has to
// assume what NCCL reads from hardware (PCIe generation, CPU vendor, path types) the assumption
// is named here and in the docs.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "support/error.hpp"
#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/constructions/nccl/nccl_impl.hpp"

namespace collsched::nccl {

std::string_view to_string(Algorithm a) {
    switch (a) {
    case Algorithm::tree: return "tree";
    case Algorithm::ring: return "ring";
    case Algorithm::pat: return "pat";
    case Algorithm::p2p: return "p2p";
    }
    return "?";
}

std::string_view to_string(Protocol p) {
    switch (p) {
    case Protocol::ll: return "LL";
    case Protocol::ll128: return "LL128";
    case Protocol::simple: return "Simple";
    }
    return "?";
}

std::string_view to_string(Cpu c) { return c == Cpu::amd ? "AMD" : "Intel"; }

std::string_view to_string(Arch a) {
    switch (a) {
    case Arch::volta: return "Volta";
    case Arch::ampere: return "Ampere";
    case Arch::hopper: return "Hopper";
    }
    return "?";
}

namespace {

// src/graph/search.cc:1051-1058: the per-channel speeds the search tries, fastest first.
constexpr std::array<double, 13> speed_intra = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
constexpr std::array<double, 19> speed_inter = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                                7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr std::array<double, 11> sm90_speed_intra = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
constexpr std::array<double, 17> sm90_speed_inter = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                                     15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
// src/include/device.h:91 MAXCHANNELS 64; src/init.cc:1177 ringGraph->maxChannels = MAXCHANNELS / 2.
constexpr std::uint32_t max_ring_channels = 32;

}  // namespace

std::vector<double> search_speeds(Arch arch, bool inter) {
    if (arch == Arch::hopper) {
        if (inter) return {sm90_speed_inter.begin(), sm90_speed_inter.end()};
        return {sm90_speed_intra.begin(), sm90_speed_intra.end()};
    }
    if (inter) return {speed_inter.begin(), speed_inter.end()};
    return {speed_intra.begin(), speed_intra.end()};
}

namespace {

// The tuner's constants, src/graph/tuning.cc:148-212 (ncclTunerConstantsDefaults), indexed
// [algorithm][protocol] with algorithms tree, ring, pat (NCCL's 0, 1, 6) and protocols LL,
// LL128, Simple.
int algo_index(Algorithm a) { return a == Algorithm::tree ? 0 : a == Algorithm::ring ? 1 : 2; }
constexpr double base_latency[3][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {8.0, 8.0, 8.0}};  // tuning.cc:151,154
constexpr double hw_nvlink[3][3] = {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 4.0}};           // tuning.cc:159,162
constexpr double hw_net[3][3] = {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 14}};                 // tuning.cc:171,174
// tuning.cc:179-183 llMaxBws[index1][index2]: index1 the GPU generation for one node, the CPU
// for several (0: Intel, 1: AMD; System::cpu); index2 = nodes - 1 capped at 2.
constexpr double ll_max_bw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
constexpr double per_ch_max_ring_ll128_bw[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}};  // tuning.cc:185-189
constexpr double per_ch_max_tree_ll128_bw[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};  // tuning.cc:192-196
constexpr double per_ch_max_tree_bw[3][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};         // tuning.cc:199-203
// tuning.cc:623-627: the tree's correction per protocol and log2(bytes / 64).
constexpr double tree_correction[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

int log2i(double n) { return n < 1 ? -1 : static_cast<int>(std::floor(std::log2(n))); }

/// How many ring channels fit at per-channel speed s. Several boxes: each channel takes s of its
/// NIC and of the PCIe path to it (search.cc:739-751 subtracts bwInter from the NIC, :88-127 from
/// every link of the path), so a NIC carries floor(min(nic, pci) / s); NVLink's share is not
/// counted (an NVSwitch box has 450 GB/s a GPU against a NIC's 50). One box: each channel takes s
/// of every GPU's NVLinks.
std::uint32_t channels_at(const System& s, double speed) {
    const double eps = 1e-9;
    double per = 0;
    if (s.nodes > 1) per = s.nics_per_node * std::floor(std::min(s.nic_bw, s.pci_bw) / speed + eps);
    else per = std::floor(s.nvlink_bw / speed + eps);
    return static_cast<std::uint32_t>(std::min<double>(per, max_ring_channels));
}

}  // namespace

Graph nccl_ring_graph(const System& s) {
    if (s.ring_search) return *s.ring_search;  // one mesh box: NCCL's search itself (nccl_search.cpp)
    const bool inter = s.nodes > 1;
    const std::vector<double> sp = search_speeds(s.arch, inter);
    // search.cc:1164-1173: start at the first speed at most maxBw (the best path to a NIC, or to
    // another GPU for one box) whose one channel fits totalBw (a GPU's NVLinks, or PCIe).
    const double max_bw = inter ? std::min(s.nic_bw, s.pci_bw) : s.nvlink_bw;
    const double total_bw = std::max(s.pci_bw, s.nvlink_bw);
    std::size_t i = 0;
    while ((sp[i] > max_bw || sp[i] > total_bw) && i + 1 < sp.size()) ++i;
    Graph best;
    auto consider = [&](double speed) {
        const std::uint32_t c = channels_at(s, speed);
        if (c * speed > best.channels * best.bw_inter) best = {c, speed, speed, {}, true, {}};  // search.cc:456-461
    };
    // Pass 1 (search.cc:1198-1252): the first speed, then slower ones while they are above 0.49
    // of the best found, until the channels reach totalBw.
    consider(sp[i]);
    while (best.channels * best.bw_inter < total_bw && i + 1 < sp.size() && (best.channels == 0 || sp[i + 1] / best.bw_inter > .49))
        consider(sp[++i]);
    // Pass 2 (search.cc:1268-1275): faster speeds than the one found, for rings.
    std::size_t j = 0;
    while (j < sp.size() && sp[j] > best.bw_inter) ++j;
    while (j-- > 0) consider(sp[j]);
    if (best.channels == 0) return {1, 0.1, 0.1, {}, true, {}};
    // sameChannels: one box on a switch, or one NIC, replays its first channel (ncclTopoSearchRec
    // FORCED_ORDER_REPLAY); a channel per NIC cannot (the next NIC's first GPU is another)
    best.same_channels = s.nodes == 1 || s.nics_per_node <= 1;  // search.cc:1289-1296: the simple order at 0.1 GB/s
    // search.cc:1036-1048 ncclTopoDupChannels: twice the channels at half the speed, unless slow
    // (< 25), or Hopper+ below 50 with more than 4 channels.
    if (best.bw_intra >= 25.0 && !(s.arch == Arch::hopper && best.bw_intra < 50.0 && best.channels > 4)) {
        const std::uint32_t dup = std::min(best.channels * 2, max_ring_channels);
        const double div = std::ceil(static_cast<double>(dup) / best.channels);
        best = {dup, best.bw_intra / div, best.bw_inter / div, {}, true, {}};
    }
    return best;
}

double nccl_bytes(CollectiveKind, std::uint32_t, double size) {
    return size;  // collsched's sizes are NCCL's (docs/time.md, "Sizes"; src/include/enqueue.h:39-41)
}

/// src/graph/tuning.cc ncclTopoTuneModel (:243-438) for one collective, algorithm and protocol:
/// the bus bandwidth turned algorithm bandwidth, and the latency; then ncclTopoGetAlgoTime
/// (:630-655) with one operation. Assumed where NCCL reads hardware: the CPU of System::cpu (net
/// overhead 1 us Intel, 2 us AMD, :228-233; llMaxBw's CPU row 0 or 1, :267-270), NVLink inside a box (NCCL_HW_NVLINK), LL128
/// enabled (paths up to PXB or PXN, :514-541), a balanced tree (no x0.85, :336), latencyInter 0
/// (the IB plugin's default).
std::optional<double> nccl_model_time(const System& s, CollectiveKind kind, Algorithm a, Protocol p, double bytes) {
    const bool ar = kind == CollectiveKind::allreduce, ag_rs = kind == CollectiveKind::allgather || kind == CollectiveKind::reduce_scatter;
    const bool rooted = kind == CollectiveKind::broadcast || kind == CollectiveKind::reduce;
    if (!ar && !ag_rs && !rooted) return std::nullopt;  // tuning.cc models no alltoall (p2p)
    if (a == Algorithm::p2p) return std::nullopt;
    if (rooted && a != Algorithm::ring) return std::nullopt;  // :293
    if (ag_rs && a == Algorithm::tree) return std::nullopt;  // :295-297
    if (ar && a == Algorithm::pat) return std::nullopt;      // :298
    const std::uint32_t n_ranks = s.nodes * s.gpus_per_node, n_nodes = s.nodes;
    if (n_ranks <= 1) return 0.0;
    if (a == Algorithm::pat && (p != Protocol::simple || n_nodes != n_ranks)) return std::nullopt;  // :216-223, :302-304
    const int cc = static_cast<int>(s.arch);  // compCapIndex (:263-266)
    const int index2 = n_nodes <= 2 ? static_cast<int>(n_nodes) - 1 : 2;
    const int index1 = n_nodes == 1 ? cc : s.cpu == Cpu::amd ? 1 : 0;  // :267-270
    const double ll_max = ll_max_bw[index1][index2];
    const double ppn = static_cast<double>(n_ranks) / n_nodes;
    const double nsteps = ar ? 2.0 * (n_ranks - 1) : ag_rs ? n_ranks - 1.0 : n_ranks;  // :289-291
    const Graph g = nccl_ring_graph(s);  // the tree's and PAT's graph have the ring's channels (init.cc:1184-1185, :980-981)
    const int ai = algo_index(a), pi = static_cast<int>(p);
    double bw = n_nodes <= 2 ? g.bw_intra : g.bw_inter;  // :306
    double bus = g.channels * bw;                         // :324
    if (a == Algorithm::ring && p == Protocol::ll) bus = std::min(ll_max, bus * .5);  // :327
    if (a == Algorithm::ring && p == Protocol::ll128) bus = std::min(bus * .92, g.channels * per_ch_max_ring_ll128_bw[cc][index2]);
    if (a == Algorithm::tree && ar) bus = std::min(bus * .92, g.channels * per_ch_max_tree_bw[cc][index2]);  // :330-331
    if (a == Algorithm::tree && p == Protocol::ll) bus = std::min(bus / 3.8, ll_max);                      // :332
    if (a == Algorithm::tree && p == Protocol::ll128)
        bus = std::min(bus * (n_nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), g.channels * per_ch_max_tree_ll128_bw[cc][index2]);
    if (a == Algorithm::pat) bus *= .75;  // :337
    if (!(a != Algorithm::ring && ag_rs)) bus *= a == Algorithm::ring ? n_ranks / nsteps : .5;  // :377-382 busBw -> algBw
    double lat = base_latency[ai][pi];
    const double intra_lat = hw_nvlink[ai][pi];
    // :387-391: with one GPU per node the tree's network latency; latencyInter (0) twice for Simple.
    const double inter_lat = ppn == 1 ? hw_net[0][pi] : hw_net[ai][pi];
    if (a == Algorithm::ring && rooted) {
        // :395-401: one step's latency on channels that replay the first, else nsteps x (Simple: the tree's)
        const double* hw = s.nodes == 1 ? hw_nvlink[algo_index(a)] : hw_net[algo_index(a)];
        const double* tree_hw = s.nodes == 1 ? hw_nvlink[0] : hw_net[0];
        lat += g.same_channels ? hw[pi] : nsteps * (p == Protocol::simple ? tree_hw[pi] : hw[pi]);
    } else if (a == Algorithm::ring) {
        // :404-409, getNetOverhead (:228-233): an Intel x86 CPU 1 us, an AMD one 2 us; x3 for Simple
        const double net_overhead = s.cpu == Cpu::amd ? 2.0 : 1.0;
        double overhead = n_nodes > 1 ? (p == Protocol::simple ? 3.0 : 1.0) * net_overhead : 0.0;
        const double il = std::max(intra_lat, overhead);
        const double inter_steps = n_nodes == 1 ? 0 : ar ? 2.0 * (n_nodes - 1) : n_nodes - 1.0;
        lat += (nsteps - inter_steps) * il + inter_steps * inter_lat;  // :410-412
    } else if (a == Algorithm::tree) {
        lat += 2 * ((ppn - 1) * intra_lat + log2i(n_nodes) * inter_lat);  // :416
    } else {
        lat += log2i(n_nodes) * (inter_lat / 3.5) + n_ranks * 2.8;  // :431-433
    }
    // ncclTopoGetAlgoTime (:630-655), one operation.
    const int log_size = log2i(bytes / 64);
    if (a == Algorithm::tree && ar && log_size >= 0 && log_size < 23) bus *= tree_correction[pi][log_size];
    if (a == Algorithm::ring && p == Protocol::simple && n_nodes > 1 && ar && bytes / (g.channels * n_ranks) >= 64)
        lat *= s.arch == Arch::volta ? 1.9 : 1.4;  // :647-650, minCompCap < 80
    if (bus <= 0) return std::nullopt;
    return (lat + bytes / (1000 * bus)) * 1e-6;  // microseconds
}

std::optional<ModelChoice> nccl_best_protocol(const System& s, CollectiveKind kind, Algorithm a, double bytes) {
    std::optional<ModelChoice> best;
    for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple})
        if (std::optional<double> t = nccl_model_time(s, kind, a, p, bytes); t && (!best || *t < best->seconds)) best = ModelChoice{p, *t};
    return best;
}

Graph nccl_nvls_graph(const System& s) {
    const bool inter = s.nodes > 1;
    const std::vector<double> sp = search_speeds(s.arch, inter);
    Graph g;
    g.channels = s.gpus_per_node;  // maxChannels = min(NCCL_MAX_NVLS_ARITY, GPUs), one head each
    std::size_t i = 0;
    while (i + 1 < sp.size() && sp[i] * (s.gpus_per_node + 1) > s.nvlink_bw + 1e-9) ++i;
    g.bw_intra = sp[i];
    // pass 2 (search.cc:1274-1278): a faster bwInter while it is below twice bwIntra; across boxes
    // the NIC must carry it
    while (i > 0 && sp[i] < 2 * g.bw_intra && (!inter || sp[i - 1] <= std::min(s.nic_bw, s.pci_bw) + 1e-9)) --i;
    g.bw_inter = sp[i];
    return g;
}

std::optional<NvlsModel> nccl_nvls_model(const System& s, CollectiveKind kind, double bytes) {
    if (s.nvls_efficiency <= 0 || kind != CollectiveKind::allreduce || s.gpus_per_node < 2) return std::nullopt;
    // Hopper's constants only: a Blackwell NVSwitch (NVLink 5, perChMaxNVLSTreeBw 96 and 80) is not described here
    if (s.arch != Arch::hopper || s.nvlink_bw > 18 * 20.6 + 1e-9) return std::nullopt;
    const Graph g = nccl_nvls_graph(s);
    if (g.channels < 2) return std::nullopt;  // tuning.cc:310
    const bool tree = s.nodes > 1;  // NVLS across boxes needs CollNet (SHARP), not modelled: NVLS_TREE
    const double n_ranks = static_cast<double>(s.nodes) * s.gpus_per_node, ch = g.channels;
    const double intra = g.bw_intra * s.nvls_efficiency * (ch - 1) / ch * 2;  // :311-315, allreduce pipelines two operations
    const double inter = g.bw_inter * (tree && s.nodes <= 2 ? 2 : 1);        // :320
    // :322 perChMaxNVLSTreeBws (tuning.cc:205-211), Hopper {N1, N2, N4}: 0, 57.7, 45.5
    const double cap = tree ? (s.nodes <= 2 ? 57.7 : 45.5) : std::numeric_limits<double>::max();
    const double bus = ch * std::min({intra, inter, cap});
    const double alg = bus * n_ranks / (2 * (n_ranks - 1));  // :371-377
    // hwLatencies NVLink NVLS and NVLSTree Simple 25 us, network NVLSTree 20.9 us; base 0 (:150-176, :424-428)
    const double lat = 25.0 + (tree ? 2 * log2i(s.nodes) * 20.9 : 0.0);
    return NvlsModel{tree ? "NVLS_TREE" : "NVLS", (lat + bytes / (1000 * alg)) * 1e-6};
}

std::vector<CollnetModel> nccl_collnet_models(const System& s, CollectiveKind kind, double bytes) {
    std::vector<CollnetModel> out;
    if (!s.sharp || kind != CollectiveKind::allreduce || s.nodes < 2 || s.nics_per_node == 0) return out;
    const double ppn = s.gpus_per_node, n_ranks = s.nodes * ppn;
    const std::vector<double> sp = search_speeds(s.arch, true);
    // the first speed a NIC carries (search.cc:1164-1173, maxBw the path to a NIC), raised in pass 2 for trees and
    // CollNet while below twice bwInter (search.cc:1280-1284)
    std::size_t i = 0;
    while (i + 1 < sp.size() && sp[i] > std::min(s.nic_bw, s.pci_bw) + 1e-9) ++i;
    const double bw_inter = sp[i];
    while (i > 0 && sp[i] < 2 * bw_inter) --i;
    const double bw_intra = sp[i];
    auto seconds = [&](double alg_gbs, double lat_us) { return (lat_us + bytes / (1000 * alg_gbs)) * 1e-6; };
    {  // CollNet Direct: one channel per NIC head, at most NCCL_MAX_DIRECT_ARITY + 1 = 8 (search.cc:1129-1131)
        const double ch = std::min({static_cast<double>(s.nics_per_node), 8.0, ppn});
        double factor = ppn / ch;
        factor -= (factor - 1) / 2;
        double bus = ch * bw_intra / factor;
        if (s.arch == Arch::hopper) bus *= .85;
        const double lat = 2 * (std::min(1.0, ppn - 1) * 3.7 + (ppn - 1) * 0.4) + 31;
        out.push_back({"COLLNET_DIRECT", seconds(bus * .5, lat), static_cast<std::uint32_t>(ch)});
    }
    {  // CollNet Chain: the ring's channels (init.cc:1189-1194)
        // each chain takes its NIC's share: at most bwIntra and the NICs' speed over the channels (an approximation of the
        // tree search on the ring's channel count)
        const Graph ring = nccl_ring_graph(s);
        const double per = std::min(bw_intra, s.nic_bw * s.nics_per_node / ring.channels);
        out.push_back({"COLLNET_CHAIN", seconds(ring.channels * per * .5, 2 * (ppn - 1) * 2.8 + 30), ring.channels});
    }
    if (s.nvls_efficiency > 0 && s.arch == Arch::hopper && ppn >= 2) {  // NVLS across boxes through CollNet (:305-323, :424-426)
        const Graph g = nccl_nvls_graph(s);
        const double ch = g.channels;
        if (ch >= 2) {
            const double bus = ch * std::min(g.bw_intra * s.nvls_efficiency * (ch - 1) / ch * 2, g.bw_inter);
            out.push_back({"NVLS", seconds(bus * n_ranks / (2 * (n_ranks - 1)), 25 + 18), g.channels});
        }
    }
    return out;
}

}  // namespace collsched::nccl
