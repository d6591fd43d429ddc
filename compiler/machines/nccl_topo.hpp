/** \file
 * A box from what the user's machine already says about itself: NCCL's topology XML (the file
 * NCCL_TOPO_DUMP_FILE writes and NCCL_TOPO_FILE reads: <system><cpu><pci><gpu><nvlink/></gpu>
 * </pci><nic><net/></nic></cpu></system>) or the text of `nvidia-smi topo -m`. Link counts and
 * speeds become bandwidths by NCCL's own rules (NVIDIA/nccl src/graph/topo.h, topo.cc, xml.cc,
 * paths.cc; docs/topologies.md cites the lines): an NVLink is ncclTopoNVLinkBw(sm) GB/s, a PCIe
 * link width x generation / 80 GB/s, a NIC speed (Mb/s) / 8000 GB/s, and a path the minimum of
 * its links. What the file does not say (skeleton files without <gpu> and <nic>, as Azure ships
 * them) is completed from the PCI class codes, `--gpu` and `--nic-gbps`, and every completion is
 * returned as a sentence for standard error. Bad input is an InputError with file:line(:col).
 */
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/machines/machine.hpp"

namespace collsched::machines {

struct TopoHints {
    std::string gpu;                 ///< --gpu: v100, a100, h100, h200, b200, gb200 ("" none)
    std::optional<double> nic_gbps;  ///< --nic-gbps
    bool need_nics = false;          ///< the network needs the NICs' speed
};

struct TopoBox {
    Box box;
    std::vector<std::string> completed;  ///< what the file did not say and was taken from elsewhere
};

/// The GPUs `--gpu` knows and their SM versions (NCCL's "sm" attribute).
int gpu_sm(std::string_view gpu);
/// NCCL's NVLink bandwidth per link for an SM version, GB/s (src/graph/topo.h ncclTopoNVLinkBw).
double nccl_nvlink_gbs(int sm);
/// NCCL's NVLink count per GPU for an SM version (src/graph/xml.cc, maxNvLinks).
int nccl_max_nvlinks(int sm);
/// NCCL's PCIe bandwidth of a link, GB/s: width x the generation's rate per lane / 80
/// (src/graph/topo.cc ncclTopoAddPci, kvDictPciGen); nullopt for a speed NCCL does not know.
std::optional<double> nccl_pci_gbs(std::string_view link_speed, int width);
/// The peak NVLink bandwidth per link each way for an SM version, GB/s, as the machine families
/// state it (datasheets: NVLink 1 20, NVLink 2 to 4 25, NVLink 5 50; sm 86's bridge 14.0625): a
/// machine holds peak rates, the executor model the achievable share (docs/time.md, "Executors").
double nvlink_peak_gbs(int sm);
/// The peak of a PCIe link, GB/s: width x the generation's lane rate after its line code (Gen3:
/// 0.984375 GB/s a lane, as the families' 15.75 for x16); nullopt for a speed NCCL does not know.
std::optional<double> pci_peak_gbs(std::string_view link_speed, int width);

TopoBox read_nccl_topo(std::string_view text, std::string_view file, const TopoHints& hints);
TopoBox read_smi_topo(std::string_view text, std::string_view file, const TopoHints& hints);

}  // namespace collsched::machines
