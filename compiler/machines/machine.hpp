/** \file
 * Machine files (docs/topologies.md, "Machines"; the graph JSON format of docs/formats.md) built
 * from a box and a network: `collsched machine`. A Box is one node of a cluster (a DGX H100, an
 * Azure NDv5 VM, a GB200 NVL72 rack): its GPUs, the fabric between them (a switch every GPU
 * reaches over `links` links, or a mesh of link counts), its NICs and their speeds. It comes from
 * a family row (families.cpp, one row per product) or from NCCL's topology XML or `nvidia-smi
 * topo -m` (nccl_topo.hpp). A Network replicates the box: one switch, rails, two- and three-tier
 * fat trees with an oversubscription ratio, a torus. build_machine() turns both into a graph
 * (switches as link groups, as SCCL models them, or as routers), applies faults (a NIC down, a
 * link at a fraction of its speed), and write_machine_json() writes it, byte for byte as the
 * shipped files in schedules/machines/ (schedules/machines/commands.txt lists the invocations).
 *
 * To add a capability that some boxes have (NVLink SHARP, `--nvls`): a field of Box set by the
 * family rows and the NCCL reader, an option of MachineOptions, and the lines that write it in
 * write.cpp; build_machine() keeps everything else.
 */
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collsched::machines {

/// A latency and a bandwidth per unit of capacity, each direction, as a graph file writes them.
struct Speed {
    double alpha_us = 0;
    double bandwidth = 0;      ///< in `unit`
    std::string unit = "GB/s"; ///< "GB/s" or "Gbit/s"
    std::string note;
};

enum class Fabric { switched, mesh };

/// One box: its GPUs, how they are joined, its NICs. Speeds each direction, in GB/s and Gbit/s.
struct Box {
    std::string family;       ///< the row's name (`dgx-h100`) or the input file's
    std::string title;        ///< "DGX H100"
    std::string gpu;          ///< "H100"
    int gpus = 8;
    Fabric fabric = Fabric::switched;
    int links = 0;            ///< switched: links per GPU into the switch
    /// switched, read from a topology file: each GPU's own links into the switch where some have
    /// fewer than `links` (a link missing from the file); empty: every GPU has `links`
    std::vector<int> gpu_links;
    std::vector<std::vector<int>> mesh;  ///< mesh: {u, v, links} with u < v
    double link_gbs = 0;      ///< one link, each way
    double link_alpha_us = 0.6;
    std::string link_type = "nvlink", link_name = "NVLink", switch_name = "NVSwitch";
    std::string link_note;    ///< the speed of one link (capacities count links)
    std::string gpu_note;     ///< the speed of one GPU through the switch (capacities per GPU)
    std::string speed_note;   ///< the compact layout's note (empty: link_note)
    /// NICs: nic_gpus[j] is the local GPU NIC j hangs off; a shared NIC (nic_shared, one per box)
    /// is reached by every GPU over PCIe.
    std::vector<int> nic_gpus;
    bool nic_shared = false;
    double nic_gbit = 0, nic_alpha_us = 2.7;
    std::string nic_type = "ib", nic_name, nic_short, nic_where;
    double pcie_gbs = 0;
    std::string pcie_name;
    std::vector<std::string> sources;  ///< where the figures come from (printed by --list)
    /// NVLink SHARP (`--nvls`): the NVSwitch reduces and multicasts at this fraction of the links'
    /// bandwidth (NCCL's nvlsEfficiency, src/graph/tuning.cc); 0: the box has no NVLS.
    double nvls_efficiency = 0;
    std::string nvls_arch;    ///< "Hopper", "Blackwell": the efficiency's row in NCCL

    int nics() const { return nic_shared ? 1 : static_cast<int>(nic_gpus.size()); }
};

/// The family rows, in the order `collsched machine --list` prints them.
const std::vector<Box>& families();
/// The row named `name`; InputError naming the families (and the closest) otherwise.
const Box& find_family(std::string_view name);

enum class NetKind { none, single_switch, rail, fat_tree, fat_tree3, torus };

struct Network {
    NetKind kind = NetKind::none;
    double oversubscription = 1;   ///< fat trees: leaf downlinks over uplinks
    std::vector<int> torus;        ///< torus: boxes per dimension
};
/// `none`, `switch`, `rail`, `fat-tree[:O]`, `fat-tree3[:O]`, `torus:AxB[xC]`; InputError otherwise.
Network parse_network(std::string_view text);

enum class Units { links, gpu, fixed };

/// A part of the machine that is not as the family has it (docs/topologies.md, "Faults").
struct Fault {
    enum class Kind {
        nic_down,   ///< NIC `nic` down: its network links go
        slow_nic,   ///< NIC `nic` at `fraction` of its speed
        slow_gpu,   ///< GPU `gpu`'s NVLink port (all its links in the box) at `fraction`
        slow_link,  ///< the link u-v at `fraction`
        link_down,  ///< the link u-v gone
        one_way,    ///< the link u-v keeps only its channel u -> v
    };
    Kind kind = Kind::nic_down;
    int nic = -1, gpu = -1;
    std::string u, v;              ///< a link's ends: processor numbers or routers r1.N
    double fraction = 1;
};

struct MachineOptions {
    int boxes = 1;
    Network network;
    Units units = Units::links;
    int units_per_gpu = 0;         ///< Units::fixed: capacity of a GPU into its box's switch
    std::optional<bool> routers;   ///< switches as routers (else link groups); unset: per network
    int boxes_per_leaf = 4, leaves_per_pod = 4;
    std::vector<Fault> faults;
    std::optional<std::string> note;  ///< "" writes no note
    bool nvls = false;             ///< per box a router r1.b for the NVSwitch that reduces and multicasts
    /// InfiniBand SHARP: the network's switches (rail switches, the one switch, a fat tree's
    /// leaves and spines) reduce and multicast; in the groups layout each becomes a router joined
    /// to its NICs by a channel of the NIC's speed inside the NIC's groups
    bool sharp = false;
    /// The processors renumbered by a permutation drawn from this seed (the file then declares
    /// no "boxes": its boxes are no longer consecutive processors)
    std::optional<unsigned> renumber;
};

/// The efficiency and the note of a SHARP switch (`--sharp`): NVIDIA SHARPv3 on Quantum-2 NDR
/// aggregates at the port's line rate; no measured efficiency is published, so 1.
inline constexpr double sharp_efficiency = 1.0;

/// One end of an edge: processor `proc`, or router r1.`router`.
struct End {
    int proc = -1, router = -1;
    auto operator<=>(const End&) const = default;
};

struct Edge {
    End u, v;
    int cap = 1;
    std::string type;
    std::optional<std::string> bandwidth;  ///< a slow link's own speed
    int nic_u = -1, nic_v = -1;            ///< the NICs the edge crosses (faults), -1: none
    bool one_way = false;                  ///< only the channel u -> v
};

struct Group {
    std::string name;
    int cap = 1;
    int out_of = -1, into = -1;           ///< all channels out of / into a processor
    std::vector<std::pair<End, End>> channels;
    std::string bandwidth;
    int nic = -1;                          ///< the NIC this group is (faults)
};

/// A router that reduces and multicasts (the graph file's "switches", docs/topologies.md).
struct SwitchFunctions {
    int router = 0;
    double efficiency = 1;
    std::string note;
};

struct LinkType {
    std::string name;
    Speed speed;
};

struct Machine {
    std::optional<std::string> note;
    int processors = 0, routers = 0;
    int boxes = 1;                         ///< the graph file's "boxes": `boxes` boxes of processors / boxes GPUs, box-major (0: none written)
    std::vector<std::string> faults;       ///< the graph file's "faults": what is not as the family has it
    std::vector<LinkType> types;
    std::vector<Edge> edges;
    std::vector<Group> groups;
    std::vector<SwitchFunctions> switches;
    std::string base_type;                 ///< the compact layout's top-level speed (a type name)
};

/// The machine of `box` replicated `options.boxes` times over `options.network`, with the
/// faults applied. InputError for options that do not fit the box or the network, and for a
/// machine that a fault disconnects.
Machine build_machine(const Box& box, const MachineOptions& options);

/// The graph file's text (docs/formats.md): the layout of scripts/machines.py's files, or the
/// compact one (speeds at the top, edges aligned) for a machine without groups and routers.
std::string write_machine_json(const Machine& machine);

/// "37.5 GB/s", "200 Gbit/s": a number of at most 6 significant digits and its unit.
std::string speed_text(double value, std::string_view unit);

}  // namespace collsched::machines
