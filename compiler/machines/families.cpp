// The boxes `collsched machine FAMILY` knows: one row per product, with the vendors' figures and
// where they come from (docs/topologies.md, "collsched machine", cites the same sources).
#include "compiler/machines/machine.hpp"

#include <fmt/format.h>

#include "support/edit_distance.hpp"
#include "support/error.hpp"

namespace collsched::machines {

namespace {

// The DGX-1 hybrid cube-mesh (msccl-tools msccl/topologies/nvidia.py dgx1(); HGX-1, Azure NDv2).
const std::vector<std::vector<int>> cube_mesh = {{0, 1, 2}, {0, 2, 1}, {0, 3, 1}, {0, 4, 2}, {1, 2, 1}, {1, 3, 2},
                                                 {1, 5, 1}, {2, 3, 2}, {2, 6, 2}, {3, 7, 1}, {4, 5, 2}, {4, 6, 1},
                                                 {4, 7, 1}, {5, 6, 1}, {5, 7, 2}, {6, 7, 2}};
// SCCL's AMD machines (msccl/topologies/amd.py amd4(), amd8()): xGMI link counts.
const std::vector<std::vector<int>> amd4_mesh = {{0, 1, 1}, {0, 2, 1}, {1, 3, 1}, {2, 3, 1}};
const std::vector<std::vector<int>> amd8_mesh = {
    {0, 1, 5}, {0, 2, 6}, {0, 3, 6}, {0, 4, 5}, {0, 5, 6}, {0, 6, 5}, {0, 7, 5}, {1, 2, 5}, {1, 3, 5}, {1, 4, 6},
    {1, 5, 5}, {1, 6, 6}, {1, 7, 6}, {2, 3, 6}, {2, 4, 5}, {2, 5, 6}, {2, 6, 5}, {2, 7, 5}, {3, 4, 5}, {3, 5, 6},
    {3, 6, 5}, {3, 7, 5}, {4, 5, 5}, {4, 6, 6}, {4, 7, 6}, {5, 6, 5}, {5, 7, 5}, {6, 7, 6}};

std::vector<std::vector<int>> complete_mesh(int n, int links) {
    std::vector<std::vector<int>> m;
    for (int u = 0; u < n; ++u)
        for (int v = u + 1; v < n; ++v) m.push_back({u, v, links});
    return m;
}
std::vector<int> every(int n, int step = 1) {
    std::vector<int> v;
    for (int g = 0; g < n; g += step) v.push_back(g);
    return v;
}

const std::string amd_note =
    "per unit of capacity: one AMD Infinity Fabric (xGMI) link each way, 16 lanes at 25 GT/s (ROCm MI250 guide); latency "
    "assumed (NCCL's PCI hop, src/graph/tuning.cc)";

/// A box of `n` GPUs on NVSwitch with `links` NVLinks of `gbs` each way per GPU, one NIC per GPU.
Box nvswitch_box(std::string family, std::string title, std::string gpu, int n, int links, double gbs, std::string nvlink,
                 double nic_gbit, std::string nic_name, std::string nic_short, double pcie_gbs, std::string pcie_name) {
    Box b;
    b.family = std::move(family);
    b.title = std::move(title);
    b.gpu = std::move(gpu);
    b.gpus = n;
    b.links = links;
    b.link_gbs = gbs;
    b.link_name = nvlink;
    b.link_note = fmt::format("one {} link ({}: {} links, {:g} GB/s both ways)", nvlink, b.gpu, links, 2 * gbs * links);
    b.gpu_note = fmt::format("{} through NVSwitch: {} {} links x {:g} GB/s each way per GPU", b.gpu, links, nvlink, gbs);
    b.nic_gpus = every(n);
    b.nic_gbit = nic_gbit;
    b.nic_name = std::move(nic_name);
    b.nic_short = std::move(nic_short);
    b.nic_where = "one NIC per GPU";
    b.pcie_gbs = pcie_gbs;
    b.pcie_name = std::move(pcie_name);
    return b;
}

std::vector<Box> make_families() {
    std::vector<Box> rows;
    const std::string gen3 = "PCIe 3.0 x16", gen4 = "PCIe 4.0 x16", gen5 = "PCIe 5.0 x16";
    {
        Box b;  // DGX-1: the hybrid cube-mesh, 4 InfiniBand EDR NICs (SCCL's dgx1(), the shipped dgx1.json)
        b.family = "dgx1", b.title = "DGX-1", b.gpu = "V100", b.fabric = Fabric::mesh, b.mesh = cube_mesh, b.link_gbs = 25;
        b.link_name = "NVLink 2";
        b.link_note = "one NVLink 2 link (V100: 6 links, 300 GB/s both ways)";
        b.speed_note = "per NVLink 2 link each way (V100 SXM2: 6 links, 300 GB/s in all both ways); latency: NCCL's NVLink hop, "
                       "src/graph/tuning.cc";
        b.nic_gpus = {0, 3, 4, 7}, b.nic_gbit = 100, b.nic_name = "InfiniBand EDR", b.nic_short = "InfiniBand EDR";
        b.nic_where = "the 4 NICs of a DGX-1";
        b.pcie_gbs = 15.75, b.pcie_name = gen3;
        b.sources = {"NVIDIA Tesla V100 datasheet: 6 NVLink links, 300 GB/s", "NVIDIA DGX-1 datasheet: 4 InfiniBand EDR 100 Gb/s"};
        rows.push_back(b);
    }
    {
        Box b = nvswitch_box("dgx2", "DGX-2", "V100", 16, 6, 25, "NVLink 2", 100, "InfiniBand EDR", "InfiniBand EDR", 15.75, gen3);
        b.gpu_note = "V100 through NVSwitch (DGX-2): 6 NVLink 2 links x 25 GB/s each way per GPU";
        b.nic_gpus = every(16, 2), b.nic_where = "8 NICs, one per pair of GPUs";
        b.sources = {"NVIDIA DGX-2 datasheet: 16 V100 on NVSwitch (6 NVLink 2 links each), 8 x 100 Gb/s InfiniBand"};
        rows.push_back(b);
    }
    {
        Box b = nvswitch_box("dgx-a100", "DGX A100", "A100", 8, 12, 25, "NVLink 3", 200, "InfiniBand HDR (ConnectX-6)",
                             "InfiniBand HDR", 31.5, gen4);
        b.link_note = "one NVLink 3 link: 25 GB/s each way";
        b.sources = {"NVIDIA A100 datasheet: NVLink 3, 12 links, 600 GB/s",
                     "NVIDIA DGX A100 datasheet: 8 ConnectX-6 InfiniBand HDR 200 Gb/s for the compute fabric"};
        rows.push_back(b);
    }
    {
        Box b = nvswitch_box("dgx-h100", "DGX H100", "H100", 8, 18, 25, "NVLink 4", 400, "InfiniBand NDR (ConnectX-7)",
                             "InfiniBand NDR", 63, gen5);
        b.sources = {"NVIDIA H100 datasheet: NVLink 4, 18 links, 900 GB/s", "NVIDIA DGX H100 datasheet: 8 ConnectX-7 NDR 400 Gb/s"};
        b.nvls_efficiency = 0.85, b.nvls_arch = "Hopper";  // NCCL src/graph/tuning.cc nvlsEfficiency
        rows.push_back(b);
    }
    {
        Box b = nvswitch_box("dgx-h200", "DGX H200", "H200", 8, 18, 25, "NVLink 4", 400, "InfiniBand NDR (ConnectX-7)",
                             "InfiniBand NDR", 63, gen5);
        b.sources = {"NVIDIA H200 datasheet: NVLink 4, 900 GB/s", "NVIDIA DGX H200 datasheet: 8 ConnectX-7 400 Gb/s"};
        b.nvls_efficiency = 0.85, b.nvls_arch = "Hopper";  // NCCL src/graph/tuning.cc nvlsEfficiency
        rows.push_back(b);
    }
    {
        Box b = nvswitch_box("dgx-b200", "DGX B200", "B200", 8, 18, 50, "NVLink 5", 400, "InfiniBand NDR (ConnectX-7)",
                             "InfiniBand NDR", 63, gen5);
        b.sources = {"NVIDIA DGX B200 datasheet: 8 B200, NVLink 5 1.8 TB/s per GPU (18 links), 8 ConnectX-7 400 Gb/s"};
        b.nvls_efficiency = 0.74, b.nvls_arch = "Blackwell";  // NCCL src/graph/tuning.cc nvlsEfficiency
        rows.push_back(b);
    }
    {
        Box b = nvswitch_box("gb200-nvl72", "GB200 NVL72 rack", "B200", 72, 18, 50, "NVLink 5", 400,
                             "InfiniBand NDR (ConnectX-7)", "InfiniBand NDR", 63, gen5);
        b.sources = {"NVIDIA GB200 NVL72: 72 Blackwell GPUs in one NVLink domain, 1.8 TB/s per GPU (18 NVLink 5 links)",
                     "NVIDIA DGX SuperPOD with DGX GB200 reference architecture: one ConnectX-7 400 Gb/s per GPU"};
        b.nvls_efficiency = 0.74, b.nvls_arch = "Blackwell";  // NCCL src/graph/tuning.cc nvlsEfficiency
        rows.push_back(b);
    }
    {
        Box b;  // Azure NDv2: the DGX-1 mesh, one InfiniBand EDR NIC per VM behind PCIe (the shipped ndv2x*.json)
        b.family = "ndv2", b.title = "Azure NDv2", b.gpu = "V100", b.fabric = Fabric::mesh, b.mesh = cube_mesh, b.link_gbs = 25;
        b.link_name = "NVLink 2";
        b.link_note = "one NVLink 2 link (V100: 6 links, 300 GB/s both ways)";
        b.nic_shared = true, b.nic_gbit = 100, b.nic_name = "InfiniBand EDR", b.nic_short = "InfiniBand EDR";
        b.nic_where = "one NIC per box";
        b.pcie_gbs = 15.75, b.pcie_name = gen3;
        b.sources = {"Azure NDv2 series: 8 V100 SXM2 with NVLink, one 100 Gb/s InfiniBand EDR per VM"};
        rows.push_back(b);
    }
    {
        Box b = nvswitch_box("ndv4", "Azure NDv4", "A100", 8, 12, 25, "NVLink 3", 200, "InfiniBand HDR (ConnectX-6)",
                             "InfiniBand HDR", 31.5, gen4);
        b.link_note = "one NVLink 3 link: 25 GB/s each way";
        b.sources = {"Azure ND A100 v4 series: 8 A100 on NVLink 3 (NVSwitch), 8 x 200 Gb/s HDR InfiniBand, PCIe Gen4"};
        rows.push_back(b);
    }
    {
        Box b = nvswitch_box("ndv5", "Azure NDv5", "H100", 8, 18, 25, "NVLink 4", 400, "InfiniBand NDR (ConnectX-7)",
                             "InfiniBand NDR", 63, gen5);
        b.sources = {"Azure ND H100 v5 series: 8 H100 on NVLink 4, 8 x 400 Gb/s NDR InfiniBand, PCIe Gen5"};
        rows.push_back(b);
    }
    {
        Box b;  // MI300X: every pair of the 8 GPUs one xGMI link (7 per GPU, 896 GB/s in all both ways)
        b.family = "mi300x", b.title = "MI300X platform", b.gpu = "MI300X", b.fabric = Fabric::mesh, b.mesh = complete_mesh(8, 1);
        b.link_gbs = 64, b.link_alpha_us = 1, b.link_type = "xgmi", b.link_name = "Infinity Fabric (xGMI)";
        b.link_note = "one MI300X Infinity Fabric link each way (7 per GPU, 896 GB/s in all both ways); latency assumed (NCCL's PCI hop)";
        b.nic_gpus = every(8), b.nic_gbit = 400, b.nic_name = "400 Gb/s InfiniBand or RoCE", b.nic_short = "400 Gb/s network";
        b.nic_where = "one NIC per GPU";
        b.pcie_gbs = 63, b.pcie_name = gen5;
        b.sources = {"AMD Instinct MI300X datasheet: 7 Infinity Fabric links, 896 GB/s peer bandwidth (128 GB/s per link both ways)",
                     "AMD Instinct MI300X platform and Azure ND MI300X v5: 8 x 400 Gb/s NICs"};
        rows.push_back(b);
    }
    for (auto [name, mesh] : {std::pair{"amd4", &amd4_mesh}, std::pair{"amd8", &amd8_mesh}}) {
        Box b;  // SCCL's AMD machines (the shipped amd4.json, amd8.json): no NICs
        b.family = name, b.title = std::string("SCCL ") + name, b.gpu = "AMD GPU", b.fabric = Fabric::mesh, b.mesh = *mesh;
        b.gpus = name == std::string("amd4") ? 4 : 8;
        b.link_gbs = 50, b.link_alpha_us = 1, b.link_type = "xgmi", b.link_name = "Infinity Fabric (xGMI)";
        b.link_note = amd_note, b.speed_note = amd_note;
        b.sources = {std::string("msccl-tools msccl/topologies/amd.py ") + name + "()", "ROCm MI250 guide: 50 GB/s per 16-wide xGMI link"};
        rows.push_back(b);
    }
    {
        Box b;  // a box without NVLink: 8 GPUs on the host's PCIe switches, one shared NIC
        b.family = "pcie", b.title = "PCIe box", b.gpu = "GPU", b.gpus = 8, b.links = 1, b.link_gbs = 31.5, b.link_alpha_us = 1;
        b.link_type = "pcie", b.link_name = gen4, b.switch_name = "PCIe switch";
        b.link_note = "PCIe 4.0 x16 each way (latency: NCCL's PCI hop)";
        b.gpu_note = b.link_note;
        b.nic_shared = true, b.nic_gbit = 200, b.nic_name = "200 Gb/s InfiniBand HDR", b.nic_short = "InfiniBand HDR";
        b.nic_where = "one NIC per box";
        b.pcie_gbs = 31.5, b.pcie_name = gen4;
        b.sources = {"PCI-SIG: PCIe 4.0, 16 GT/s per lane, 128b/130b: 31.5 GB/s per x16 each way"};
        rows.push_back(b);
    }
    return rows;
}

}  // namespace

const std::vector<Box>& families() {
    static const std::vector<Box> rows = make_families();
    return rows;
}

const Box& find_family(std::string_view name) {
    std::string names, best;
    std::size_t best_d = 3;
    for (const Box& b : families()) {
        if (b.family == name) return b;
        names += (names.empty() ? "" : ", ") + b.family;
        std::size_t d = support::edit_distance(name, b.family);
        if (d < best_d) best_d = d, best = b.family;
    }
    throw InputError(fmt::format("unknown machine family '{}'{}: expected one of {}", name,
                                 best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best), names));
}

}  // namespace collsched::machines
