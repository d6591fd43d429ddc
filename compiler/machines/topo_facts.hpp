/** \file
 * What NCCL's topology XML or `nvidia-smi topo -m` says about one box, before NCCL's rules turn
 * it into a Box (internal to compiler/machines: nccl_topo.cpp and smi_topo.cpp fill it,
 * topo_facts.cpp assembles it).
 */
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/machines/nccl_topo.hpp"

namespace collsched::machines {

struct FactGpu {
    int line = 0;
    int sm = 0;              ///< 0: the input does not say
    double pcie_gbs = 0;     ///< 0: the input does not say
    int switch_links = 0;    ///< NVLinks into NVSwitch
    bool described = false;  ///< an XML <gpu> element (else a skeleton's bare PCI device)
};

struct FactNic {
    int line = 0;
    std::string name;
    double mbps = 0;              ///< 0: the input does not say
    double pcie_gbs = 0;          ///< 0: the input does not say
    std::vector<int> distance;    ///< to each GPU (smaller: closer)
};

struct TopoFacts {
    std::string file;
    std::string format = "NCCL topology XML";
    std::vector<FactGpu> gpus;
    std::map<std::pair<int, int>, int> direct;  ///< NVLinks between two GPUs (u < v)
    std::vector<FactNic> nics;
    bool nvlinks_known = false;  ///< the input lists the NVLinks (XML <gpu> elements, nvidia-smi's NV#)
    bool order_by_dev = false;
    std::vector<std::string> said;  ///< what the reader decided about the input, for standard error
};

/// The box the facts describe, by NCCL's rules, with what was completed from `hints`.
TopoBox assemble(const TopoFacts& facts, const TopoHints& hints);

}  // namespace collsched::machines
