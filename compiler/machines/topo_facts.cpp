// assemble(): a box from what a topology file says, by NCCL's rules (docs/topologies.md, "NCCL's
// topology XML in", cites NVIDIA/nccl's lines); what the file leaves out is completed from the
// hints and said.
#include "compiler/machines/topo_facts.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>

#include "support/error.hpp"

namespace collsched::machines {

namespace {

std::string upper(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

/// The GPUs' SM version: the file's, else --gpu's.
int choose_sm(const TopoFacts& f, const TopoHints& hints, std::vector<std::string>& said) {
    int sm = 0;
    for (const FactGpu& g : f.gpus)
        if (g.sm && !sm) sm = g.sm;
    for (std::size_t i = 0; i < f.gpus.size(); ++i)
        if (f.gpus[i].sm && f.gpus[i].sm != sm)
            said.push_back(fmt::format("GPU {} is sm {}, GPU 0 sm {}: the box takes sm {} for all", i, f.gpus[i].sm, sm, sm));
    if (sm) {
        if (!hints.gpu.empty() && gpu_sm(hints.gpu) != sm)
            said.push_back(fmt::format("--gpu {} (sm {}) is not used: the file says sm {}", hints.gpu, gpu_sm(hints.gpu), sm));
        return sm;
    }
    int first = f.gpus.front().line;  // the first GPU in the file
    for (const FactGpu& g : f.gpus) first = std::min(first, g.line);
    if (hints.gpu.empty())
        throw InputError(fmt::format("{}:{}: the GPUs (PCI class 0x03) have no <gpu> element and so no SM version{}: say which GPU "
                                     "with --gpu (v100, a100, h100, h200, b200, gb200)",
                                     f.file, first, f.format == "NCCL topology XML" ? " (a skeleton, as Azure ships them)" : ""));
    sm = gpu_sm(hints.gpu);
    said.push_back(fmt::format("{} GPUs: {} (sm {}) from --gpu {}", f.gpus.size(), upper(hints.gpu), sm, hints.gpu));
    return sm;
}

/// The NVLink fabric: NVSwitch, a mesh of direct links, or none (PCIe).
void choose_fabric(const TopoFacts& f, int sm, Box& b, std::vector<std::string>& said) {
    const int n = static_cast<int>(f.gpus.size());
    // the peak, as the families have it: the same box read either way gets the same speeds; NCCL's own
    // rate is the executor model's efficiency (docs/time.md, "Executors")
    const double rate = nvlink_peak_gbs(sm);
    b.link_gbs = rate;
    b.link_name = "NVLink";
    b.link_note = fmt::format("one NVLink of sm {}: {:g} GB/s each way at peak (NCCL's search counts {:g}, src/graph/topo.h)", sm, rate,
                              nccl_nvlink_gbs(sm));
    int switch_links = 0, most = 0;
    for (const FactGpu& g : f.gpus) switch_links = std::max(switch_links, g.switch_links);
    std::vector<int> direct(n, 0);
    for (const auto& [pair, count] : f.direct) direct[pair.first] += count, direct[pair.second] += count;
    for (int d : direct) most = std::max(most, d);
    if (f.nvlinks_known && !switch_links && most > nccl_max_nvlinks(sm)) {
        // nvidia-smi prints NV<links> for every pair on an NVSwitch: more links than a GPU has
        switch_links = n;  // any value above 0; the count is the pairs' smallest
        int smallest = 1 << 30;
        for (const auto& [pair, count] : f.direct) smallest = std::min(smallest, count);
        b.fabric = Fabric::switched, b.links = smallest;
        said.push_back(fmt::format("every pair shows NV{} but an sm {} GPU has at most {} NVLinks (src/graph/xml.cc maxNvLinks): "
                                   "the GPUs are on NVSwitch, {} links each", smallest, sm, nccl_max_nvlinks(sm), smallest));
    } else if (switch_links) {
        int fewest = switch_links;
        for (int i = 0; i < n; ++i) {
            if (f.gpus[i].switch_links == 0)
                throw InputError(fmt::format("{}:{}: GPU {} has no NVLink to the NVSwitch while others have", f.file, f.gpus[i].line, i));
            fewest = std::min(fewest, f.gpus[i].switch_links);
        }
        if (fewest != switch_links) {  // a link missing from the file is missing from the machine (build.cpp: its port slower)
            for (int i = 0; i < n; ++i) b.gpu_links.push_back(f.gpus[i].switch_links);
            said.push_back(fmt::format("the GPUs have {} to {} NVLinks to the NVSwitch: each GPU keeps its own (a GPU with fewer has its "
                                       "port at its share of {}, named in the machine's faults)", fewest, switch_links, switch_links));
        }
        if (!f.direct.empty()) said.push_back("direct NVLinks between GPUs besides the NVSwitch are left out");
        b.fabric = Fabric::switched, b.links = switch_links;
    } else if (!f.direct.empty()) {
        for (int i = 0; i < n; ++i)
            if (!direct[i]) throw InputError(fmt::format("{}:{}: GPU {} has no NVLink while others have: the box is not one NVLink domain", f.file, f.gpus[i].line, i));
        b.fabric = Fabric::mesh;
        for (const auto& [pair, count] : f.direct) b.mesh.push_back({pair.first, pair.second, count});
    } else if (!f.nvlinks_known && sm >= 80) {
        b.fabric = Fabric::switched, b.links = nccl_max_nvlinks(sm);
        said.push_back(fmt::format("no NVLink in the file: each GPU with {} NVLinks into NVSwitch (NCCL's count for sm {}, src/graph/xml.cc "
                                   "maxNvLinks; HGX boards wire them all to the NVSwitches)", b.links, sm));
    } else if (!f.nvlinks_known && sm == 70 && n == 8) {
        b.fabric = Fabric::mesh, b.mesh = find_family("dgx1").mesh;
        said.push_back("no NVLink in the file: the 8 V100 in the DGX-1 hybrid cube-mesh (HGX-1, as Azure NDv2), in the order of the GPUs");
    } else if (!f.nvlinks_known) {
        throw InputError(fmt::format("{}: no NVLink in the file and none that NCCL's rules give for {} GPUs of sm {}: give a full dump "
                                     "(NCCL_TOPO_DUMP_FILE)", f.file, n, sm));
    } else {  // GPUs described, no NVLink: they talk over PCIe
        double pcie = 0;
        for (const FactGpu& g : f.gpus) pcie = pcie == 0 ? g.pcie_gbs : std::min(pcie, g.pcie_gbs);
        if (pcie <= 0) pcie = 12;  // NCCL's PCI_BW (Gen3 x16), src/graph/topo.h
        b.fabric = Fabric::switched, b.links = 1, b.link_gbs = pcie, b.link_alpha_us = 1, b.link_type = "pcie";
        b.link_name = "PCIe", b.switch_name = "PCIe switch";
        b.link_note = fmt::format("PCIe at NCCL's rate: {:g} GB/s (width x generation / 80, src/graph/topo.cc ncclTopoAddPci)", pcie);
        said.push_back(fmt::format("no NVLink: the GPUs reach each other over PCIe, {:g} GB/s each", pcie));
    }
    b.gpu_note = fmt::format("{} through {}: {} links x {:g} GB/s each way per GPU", b.gpu, b.switch_name, b.links, b.link_gbs);
}

/// The NICs: speeds (the file's, else --nic-gbps), the path's PCIe limit, the GPU each hangs off.
void choose_nics(const TopoFacts& f, const TopoHints& hints, Box& b, std::vector<std::string>& said) {
    if (f.nics.empty()) return;
    const int n = static_cast<int>(f.gpus.size()), m = static_cast<int>(f.nics.size());
    double gbit = 0;
    bool guessed = false;
    for (const FactNic& nic : f.nics) {
        double g = nic.mbps / 1000;
        if (hints.nic_gbps) {
            if (nic.mbps > 0 && g != *hints.nic_gbps)
                said.push_back(fmt::format("NIC {} says {:g} Mb/s: --nic-gbps {:g} is taken instead", nic.name, nic.mbps, *hints.nic_gbps));
            g = *hints.nic_gbps, guessed = guessed || nic.mbps <= 0;
        } else if (nic.mbps <= 0) {
            if (hints.need_nics)
                throw InputError(fmt::format("{}:{}: the NIC (PCI class 0x02) has no <nic><net speed=...> element{}: give its speed with "
                                             "--nic-gbps N", f.file, nic.line, f.format == "NCCL topology XML" ? " (a skeleton)" : ""));
            continue;
        }
        if (gbit != 0 && g != gbit) said.push_back(fmt::format("the NICs run at {:g} and {:g} Gb/s: the box takes the lower", gbit, g));
        gbit = gbit == 0 ? g : std::min(gbit, g);
    }
    if (guessed) said.push_back(fmt::format("{} NIC{} from PCI class 0x02 without a speed: {:g} Gb/s from --nic-gbps", m, m == 1 ? "" : "s", *hints.nic_gbps));
    // NCCL's path bandwidth is the minimum over its links (src/graph/paths.cc): GPU and NIC PCIe links
    double pcie = 0;
    for (const FactNic& nic : f.nics)
        if (nic.pcie_gbs > 0) pcie = pcie == 0 ? nic.pcie_gbs : std::min(pcie, nic.pcie_gbs);
    for (const FactGpu& g : f.gpus)
        if (g.pcie_gbs > 0 && pcie > 0) pcie = std::min(pcie, g.pcie_gbs);
    if (pcie > 0 && gbit > pcie * 8) {
        said.push_back(fmt::format("the NICs' {:g} Gb/s is more than the PCIe path between GPU and NIC carries ({:g} GB/s at peak): "
                                   "the network takes {:g} Gb/s", gbit, pcie, pcie * 8));
        gbit = pcie * 8;
    }
    b.nic_gbit = gbit;
    b.pcie_gbs = pcie > 0 ? pcie : 15.75;  // Gen3 x16, NCCL's fallback
    b.pcie_name = fmt::format("PCIe ({:g} GB/s at peak)", b.pcie_gbs);
    b.nic_name = fmt::format("NIC of {:g} Gb/s", gbit);
    b.nic_short = "network";
    if (m == 1 && n > 1) {
        b.nic_shared = true, b.nic_where = "one NIC per box";
        return;
    }
    // each NIC to the nearest GPU that has none yet (ties: the lower GPU)
    std::vector<bool> taken(n, false);
    for (int j = 0; j < m; ++j) {
        int best = -1;
        for (int g = 0; g < n; ++g)
            if (!taken[g] && (best < 0 || f.nics[j].distance[g] < f.nics[j].distance[best])) best = g;
        if (best < 0) {
            said.push_back(fmt::format("{} NICs for {} GPUs: the box keeps one NIC per GPU", m, n));
            break;
        }
        taken[best] = true;
        b.nic_gpus.push_back(best);
    }
    b.nic_where = static_cast<int>(b.nic_gpus.size()) == n ? "one NIC per GPU" : fmt::format("{} NICs", b.nic_gpus.size());
}

}  // namespace

TopoBox assemble(const TopoFacts& f, const TopoHints& hints) {
    if (f.gpus.empty()) throw InputError(fmt::format("{}: no GPU in the file (no <pci> of class 0x03...)", f.file));
    TopoBox r;
    r.completed = f.said;
    Box& b = r.box;
    const std::string base = std::filesystem::path(f.file).filename().string();
    const int sm = choose_sm(f, hints, r.completed);
    b.family = base;
    b.gpu = hints.gpu.empty() ? fmt::format("GPU (sm {})", sm) : upper(hints.gpu);
    b.title = fmt::format("{} box of {}", b.gpu, base);
    b.gpus = static_cast<int>(f.gpus.size());
    if (!f.order_by_dev) r.completed.push_back("the GPUs are numbered in PCI bus-id order (the file gives no CUDA device numbers)");
    choose_fabric(f, sm, b, r.completed);
    choose_nics(f, hints, b, r.completed);
    b.sources = {fmt::format("{} {}, read by NCCL's rules", f.format, f.file)};
    return r;
}

}  // namespace collsched::machines
