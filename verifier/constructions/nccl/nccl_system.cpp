// What NCCL's topology search would see of a collsched machine (docs/time.md, "NCCL's algorithms
// and NCCL's model", "The machine NCCL sees"): boxes, NICs, speeds and the GPU generation.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "compiler/topology/machine_view.hpp"
#include "support/error.hpp"
#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/constructions/nccl/nccl_impl.hpp"

namespace collsched::nccl {

namespace {

/// Boxes. Where a processor's channels come in two speed classes (some below a quarter of the
/// fastest: NVLink against a NIC), a box is a connected set of nodes joined by channels of the fast
/// class with a processor at one end (the machine view's rule, compiler/topology/machine_view.hpp,
/// with routers: an NVSwitch drawn as a router joins its GPUs). Where they come in one class, the
/// processors joined by channels between processors, and a router all of whose processors lie in
/// one box joins it (a box's NIC behind PCIe, ndv2); a switch between boxes joins none, so GPUs on
/// one switch are boxes of one GPU each. A graph file's "boxes" overrules the speeds.
std::vector<std::uint32_t> node_boxes(const Topology& t) {
    const auto [fastest, slowest] = processor_channel_speeds(t);
    const bool two_classes = slowest < fastest / 4;
    std::vector<std::uint32_t> parent(t.nodes());
    std::iota(parent.begin(), parent.end(), 0u);
    auto find = [&](std::uint32_t x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
    };
    auto join = [&](std::uint32_t u, std::uint32_t v) {
        const std::uint32_t a = find(u), b = find(v);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
    };
    for (std::uint32_t c = 0; c < t.channels().size(); ++c) {
        const Channel& ch = t.channel(ChannelId{c});
        const bool from_p = t.is_processor(ch.from), to_p = t.is_processor(ch.to);
        if (two_classes ? (from_p || to_p) && t.speed(ChannelId{c}).bandwidth >= fastest / 4 : from_p && to_p) join(idx(ch.from), idx(ch.to));
    }
    if (!two_classes)
        for (std::uint32_t r = t.processors(); r < t.nodes(); ++r) {
            std::uint32_t box = UINT32_MAX;
            bool one = true;
            for (ChannelId c : t.out_channels(Node{r}))
                if (t.is_processor(t.channel(c).to)) {
                    const std::uint32_t b = find(idx(t.channel(c).to));
                    if (box != UINT32_MAX && b != box) one = false;
                    box = b;
                }
            if (one && box != UINT32_MAX) join(r, box);
        }
    std::vector<std::uint32_t> box(t.nodes());
    for (std::uint32_t n = 0; n < t.nodes(); ++n) box[n] = find(n);
    if (const std::uint32_t K = t.declared_boxes(); K > 0) {
        // the file says which processors share a box ("boxes": K boxes of P/K consecutive processors,
        // docs/formats.md): link speeds do not overrule it (TE-CCL's NDv2 x 4 joins its boxes with
        // links half as fast as an NVLink, and read as one box). A router is in a box when every
        // processor it has a channel to or from is in that box (an NVSwitch), else in none.
        const std::uint32_t P = t.processors(), per = P / K;
        for (std::uint32_t p = 0; p < P; ++p) box[p] = p / per;
        for (std::uint32_t r = P; r < t.nodes(); ++r) {
            std::uint32_t only = UINT32_MAX;
            auto see = [&](Node n) {
                if (!t.is_processor(n)) return;
                only = only == UINT32_MAX || only == idx(n) / per ? idx(n) / per : K;
            };
            for (ChannelId c : t.out_channels(Node{r})) see(t.channel(c).to);
            for (ChannelId c : t.in_channels(Node{r})) see(t.channel(c).from);
            box[r] = only < K ? only : r;  // r >= P >= K: no box's number
        }
    }
    return box;
}

/// The bandwidth of channel c as a sender sees it: the channel's, capped by each of its groups'.
double effective_bandwidth(const Topology& t, ChannelId c) {
    double bw = t.speed(c).bandwidth;
    for (std::uint32_t g : t.groups_of(c)) bw = std::min(bw, t.group_bandwidth(g));
    return bw;
}

/// Box `box`'s NVLinks as NCCL's search holds them when the box is a mesh (System::mesh_bw): every
/// channel between two of its GPUs direct (no switch drawn as a router of the box) and in no link
/// group with a channel of the same GPU to another peer (an NVSwitch port); else empty.
std::vector<float> mesh_bandwidths(const Topology& t, const Layout& l, std::uint32_t box, double per_link) {
    const std::vector<Node>& gpus = l.boxes[box];
    const auto n = static_cast<std::uint32_t>(gpus.size());
    std::vector<std::uint32_t> local(t.nodes(), UINT32_MAX);
    for (std::uint32_t i = 0; i < n; ++i) local[idx(gpus[i])] = i;
    std::vector<float> bw(std::size_t{n} * n, 0.0f);
    for (std::uint32_t i = 0; i < n; ++i)
        for (ChannelId c : t.out_channels(gpus[i])) {
            const Node v = t.channel(c).to;
            if (l.box_of[idx(v)] != box) continue;
            if (!t.is_processor(v)) {  // a router of the box: its NIC (ndv2), or a switch between its GPUs
                const auto outs = t.out_channels(v);
                if (std::none_of(outs.begin(), outs.end(), [&](ChannelId d) { return l.box_of[idx(t.channel(d).to)] != box; })) return {};
                continue;
            }
            for (std::uint32_t g : t.groups_of(c))
                for (ChannelId x : t.groups()[g].channels)
                    if (t.channel(x).from == gpus[i] && t.channel(x).to != v) return {};
            // topo.cc ncclTopoConnectNodes adds a pair's links into one link of their summed bandwidth
            bw[std::size_t{i} * n + local[idx(v)]] += static_cast<float>(std::round(effective_bandwidth(t, c) / 25e9) * per_link);
        }
    return bw;
}

}  // namespace

Layout nccl_layout(const Topology& t) {
    if (t.processors() < 2) throw InputError(fmt::format("{}: NCCL's algorithms need at least 2 processors", t.spec()));
    const std::vector<std::uint32_t> box = node_boxes(t);
    Layout l;
    l.box_of.assign(t.nodes(), 0);
    std::vector<std::uint32_t> number(t.nodes(), UINT32_MAX);
    for (std::uint32_t p = 0; p < t.processors(); ++p) {
        std::uint32_t& k = number[box[p]];
        if (k == UINT32_MAX) {
            k = static_cast<std::uint32_t>(l.boxes.size());
            l.boxes.emplace_back();
        }
        l.boxes[k].push_back(Node{p});
    }
    for (std::uint32_t n = 0; n < t.nodes(); ++n) l.box_of[n] = number[box[n]];
    for (const auto& b : l.boxes)
        if (b.size() != l.boxes.front().size())
            throw InputError(fmt::format("{}: NCCL's model needs boxes of equal size; the boxes (processors joined by the fastest links) "
                                         "have {} and {} processors",
                                         t.spec(), l.boxes.front().size(), b.size()));
    l.nic_gpu.assign(t.processors(), 0);
    for (std::uint32_t p = 0; p < t.processors(); ++p)
        for (ChannelId c : t.out_channels(Node{p}))
            if (l.box_of[idx(t.channel(c).to)] != l.box_of[p]) l.nic_gpu[p] = 1;
    return l;
}

System nccl_system(const Topology& t) {
    const Layout l = nccl_layout(t);
    System s;
    s.boxes = l.boxes;
    s.nodes = static_cast<std::uint32_t>(l.boxes.size());
    s.gpus_per_node = static_cast<std::uint32_t>(l.boxes.front().size());
    // NICs: a GPU with its own channels out of the box (a NIC per GPU), or a router of the box with
    // channels out of it (a NIC the box's GPUs reach over PCIe: ndv2). Counted in box 0.
    std::uint32_t gpu_nics = 0, router_nics = 0;
    double nic = 0, nvlink = 0, nvlink_router = 0;
    const std::uint32_t box0 = l.box_of[idx(s.boxes.front().front())];
    for (std::uint32_t n = 0; n < t.nodes(); ++n) {
        if (l.box_of[n] != box0) continue;
        bool out = false;
        double nic_here = 0;
        for (ChannelId c : t.out_channels(Node{n}))
            if (l.box_of[idx(t.channel(c).to)] != box0) {
                out = true;
                nic_here = std::max(nic_here, effective_bandwidth(t, c));
            }
        if (!t.is_processor(Node{n})) {
            if (out) {
                ++router_nics;
                nic = std::max(nic, nic_here);
            }
            continue;
        }
        if (out) {
            ++gpu_nics;
            nic = std::max(nic, nic_here);
        }
        // the GPU's NVLinks: its channels to GPUs of its box (or, a switch drawn as a router, to it)
        double to_gpus = 0, to_routers = 0;
        std::vector<std::uint32_t> groups;  // the groups of the GPU's own sends (its NVSwitch port)
        for (ChannelId c : t.out_channels(Node{n})) {
            const Node v = t.channel(c).to;
            if (l.box_of[idx(v)] != l.box_of[n]) continue;
            (t.is_processor(v) ? to_gpus : to_routers) += t.speed(c).bandwidth;
            for (std::uint32_t g : t.groups_of(c)) {
                const auto& chs = t.groups()[g].channels;
                if (std::all_of(chs.begin(), chs.end(), [&](ChannelId x) { return t.channel(x).from == Node{n}; })) groups.push_back(g);
            }
        }
        std::sort(groups.begin(), groups.end());
        groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
        if (!groups.empty()) {
            double cap = 0;
            for (std::uint32_t g : groups) cap += t.group_bandwidth(g);
            to_gpus = std::min(to_gpus, cap);
        }
        nvlink = std::max(nvlink, to_gpus);
        nvlink_router = std::max(nvlink_router, to_routers);
    }
    if (nvlink == 0) nvlink = nvlink_router;  // the NVSwitch is a router (boxfattree)
    s.nic_per_gpu = gpu_nics > 0 && router_nics == 0;
    s.nics_per_node = gpu_nics + router_nics;
    s.nic_bw = nic / 1e9;
    // The generation from a GPU's NVLink bandwidth each way: H100 450 GB/s, A100 300, V100 150.
    s.arch = nvlink >= 400e9 ? Arch::hopper : nvlink >= 240e9 ? Arch::ampere : Arch::volta;
    // src/graph/topo.h:19-24: NCCL's bandwidth of one NVLink (SM70 and SM80 20.0, SM90 20.6);
    // collsched's machines count 25 GB/s links.
    const double per_link = s.arch == Arch::hopper ? 20.6 : 20.0;
    s.nvlink_bw = std::round(nvlink / 25e9) * per_link;
    // src/graph/topo.cc:545-555, :657: PCIe x16 at Gen3 (V100), Gen4 (A100), Gen5 (H100):
    // width * speed / 80 = 12, 24, 48 GB/s. Assumed per generation (the graph files have no PCIe).
    s.pci_bw = s.arch == Arch::hopper ? 48.0 : s.arch == Arch::ampere ? 24.0 : 12.0;
    // The host CPU, assumed per generation as PCIe (docs/time.md, "The machine NCCL sees"): every
    // A100 box of the catalog and the families is a DGX A100 (2 x AMD EPYC 7742) or an Azure NDv4
    // (AMD EPYC 7V12); the V100 and H100 boxes have Intel Xeons.
    s.cpu = s.arch == Arch::ampere ? Cpu::amd : Cpu::intel;
    // every pair of box 0 linked, directly or through one router (an NVSwitch drawn as a router)
    s.nvswitch = true;
    for (Node u : s.boxes.front()) {
        std::vector<char> reach(t.nodes(), 0);
        for (ChannelId c : t.out_channels(u)) {
            const Node r = t.channel(c).to;
            reach[idx(r)] = 1;
            const auto outs = t.out_channels(r);
            const bool switch_of_box = !t.is_processor(r) && l.box_of[idx(r)] == box0 &&
                                       std::none_of(outs.begin(), outs.end(), [&](ChannelId d) { return l.box_of[idx(t.channel(d).to)] != box0; });
            if (switch_of_box)  // an NVSwitch drawn as a router (not the box's NIC)
                for (ChannelId d : outs) reach[idx(t.channel(d).to)] = 1;
        }
        for (Node v : s.boxes.front())
            if (u != v && !reach[idx(v)]) s.nvswitch = false;
    }
    s.mesh_bw = mesh_bandwidths(t, l, box0, per_link);
    if (s.nodes == 1) s.ring_search = nccl_ring_search(s);
    for (std::uint32_t r = t.processors(); r < t.nodes(); ++r) {
        const SwitchFunctions f = t.switch_functions(Node{r});
        if (f.reduce && f.multicast && l.box_of[r] == box0) s.nvls_efficiency = f.efficiency;
        if (f.reduce && l.box_of[r] == UINT32_MAX) s.sharp = true;  // a switch between the boxes (SHARP)
    }
    if (s.nodes > 1 && s.nics_per_node == 0)
        throw InputError(fmt::format("{}: {} boxes but no channel leaves a box (NCCL's model needs a NIC)", t.spec(), s.nodes));
    s.note = fmt::format("{} box{} of {} GPU{} ({}, {} CPU, {:g} GB/s of NVLink a GPU in NCCL's units{}), {} NIC{} a box of {:g} GB/s{}", s.nodes,
                         s.nodes == 1 ? "" : "es", s.gpus_per_node, s.gpus_per_node == 1 ? "" : "s", to_string(s.arch), to_string(s.cpu), s.nvlink_bw,
                         s.nvswitch ? ", every pair linked" : "", s.nics_per_node, s.nics_per_node == 1 ? "" : "s", s.nic_bw,
                         s.nic_per_gpu ? " (one per GPU)" : "");
    return s;
}

}  // namespace collsched::nccl
