/** \file
 * What NCCL runs on a machine, as send tables, and what NCCL's own cost model predicts for it
 * (docs/time.md, "NCCL's algorithms and NCCL's model"). From a topology (boxes of GPUs joined by
 * NVLink or NVSwitch, a NIC per GPU or per box, switches as routers or as link groups) this room
 * derives what NCCL's topology search would see (src/graph/search.cc: the number of nodes, GPUs
 * per node, NICs, their speeds, the GPU generation) and builds:
 *
 *  - `ring`: one ring per channel, one channel per NIC (search.cc's speed arrays decide how many
 *    channels a NIC takes); channel c enters every box at the GPU of NIC c, visits the box in
 *    NCCL's NVSwitch order (next GPU first) and leaves through the same NIC, so every crossing
 *    between boxes stays on its rail (NCCL_CROSS_NIC=0; the last GPU reaches the NIC over NVLink,
 *    NCCL's PXN). Allgather and reduce-scatter run the ring, allreduce reduce-scatter then
 *    allgather on it (src/device/all_reduce.h runRing), each channel's share cut into P chunks
 *    times `pieces` (NCCL's slices, pipelined);
 *  - `tree`: allreduce on NCCL's double binary tree across boxes (src/graph/trees.cc
 *    ncclGetDtree, src/graph/connect.cc connectTrees) with a chain inside each box, two trees per
 *    channel, reduce to the root then broadcast, pipelined over `pieces`;
 *  - `pat`: allgather and reduce-scatter when every box has one GPU (NCCL 2.23+'s PAT; tuning.cc
 *    enables it only then), as log2 P rounds of doubling distances;
 *  - `ring` for broadcast and reduce: the same rings, each channel's share in chunks pipelined from
 *    the root along its ring (broadcast) or to the root (reduce), at NCCL's chunk counts 1 to 256 a
 *    channel (`ring`, `ring x4`, ... `ring x256`; src/device/broadcast.h, reduce.h runRing);
 *  - `p2p`: alltoall as NCCL runs it, grouped send/recv to peer (p + i) mod P in round i, a send
 *    to another rail relayed over NVLink to the GPU on the destination's rail (PXN).
 *
 * Every table is built for the topology's model and made to hold in the direct checker: a step
 * that needs more than one round for its transfers gets them. NVLS, NVLS_TREE and CollNet (Direct,
 * Chain; SHARP) need a switch that reduces (issue 44): their tables are built with collsched's
 * switch constructions (verifier/constructions/compose/nvls.hpp) and offered by optimize's providers; this room
 * gives NCCL's model of them (nccl_nvls_model, nccl_collnet_models).
 *
 * `nccl_model_time` is src/graph/tuning.cc (NCCL 2.30.7) with the graph search's result
 * (channels, per-channel bandwidth) read from the machine as described in docs/time.md.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "support/budget.hpp"

namespace collsched::nccl {

/// NCCL's algorithms that exist here (tuning.cc's NCCL_ALGO_*), and its protocols.
enum class Algorithm : std::uint8_t { tree, ring, pat, p2p };
enum class Protocol : std::uint8_t { ll, ll128, simple };
/// The GPU generation NCCL's constants are indexed by (tuning.cc compCapIndex).
enum class Arch : std::uint8_t { volta, ampere, hopper };

/// The host CPU's vendor as NCCL reads it (src/graph/topo.cc:707-760, ncclTopoCpuType): its model
/// charges an AMD x86 host 2 us of network overhead a step and a lower LL cap across nodes.
enum class Cpu : std::uint8_t { intel, amd };

std::string_view to_string(Cpu);
std::string_view to_string(Algorithm);
std::string_view to_string(Protocol);
std::string_view to_string(Arch);

/// The channels and per-channel bandwidths NCCL's search gives a pattern (search.cc ncclTopoCompute).
struct Graph {
    std::uint32_t channels = 0;
    double bw_intra = 0, bw_inter = 0;  ///< GB/s per channel
    /// Per channel the ring's order of a box's GPUs (box-local indices) as the search found it (one
    /// mesh box: nccl_ring_search); empty where the order is NCCL's NVSwitch order (nccl_rings).
    std::vector<std::vector<std::uint32_t>> rings;
    /// Whether the channels were found as replays of the first (sameChannels): NCCL's model then
    /// charges broadcast and reduce one step's latency, else one per rank (tuning.cc:393-401).
    bool same_channels = true;
    /// The search's own record: how many ncclTopoSearchRecGpu calls and which speeds it tried.
    std::string note;
};

/// What NCCL's search and tuning read of a machine, derived from a topology (nccl_system).
struct System {
    Arch arch = Arch::ampere;
    std::uint32_t nodes = 1;           ///< boxes (NCCL's nNodes)
    std::uint32_t gpus_per_node = 1;   ///< NCCL's localRanks (every box the same)
    std::vector<std::vector<Node>> boxes;  ///< per box its processors, increasing
    /// Per box, per NIC, the GPU NCCL calls local to it (the GPU whose own channels leave the
    /// box), or none for a NIC behind a router shared by the box (ndv2). Same count per box.
    std::uint32_t nics_per_node = 0;
    bool nic_per_gpu = false;          ///< NIC n is GPU n's own (rail, multibox, h100rail)
    double nic_bw = 0;                 ///< GB/s (1e9 B/s) per NIC, each way (NCCL's net.bw)
    double pci_bw = 0;                 ///< GB/s of a GPU's PCIe path to its NIC (assumed per arch)
    double nvlink_bw = 0;              ///< GB/s of one GPU's NVLinks in NCCL's units (links x per-link bw)
    bool nvswitch = false;             ///< every GPU of a box reaches every other in one hop
    /// The host CPU, by generation (the graph files do not say): Ampere boxes are DGX A100 and
    /// Azure NDv4 (AMD EPYC 7742, 7V12), Volta and Hopper ones DGX-1, DGX-2, NDv2, DGX H100, NDv5
    /// (Intel Xeon).
    Cpu cpu = Cpu::intel;
    /// The efficiency of the boxes' switches that reduce and multicast (NVLS: a router declared with
    /// "reduce" and "multicast", docs/topologies.md), the one NCCL's nvlsEfficiency gives their
    /// generation; 0: no NVLS (no such switch in box 0).
    double nvls_efficiency = 0;
    /// A switch outside every box reduces (a router declared with "reduce" that no box holds:
    /// InfiniBand SHARP, `collsched machine ... --sharp`): NCCL's CollNet runs (collnetEnable).
    bool sharp = false;
    /// A box of point-to-point links (a mesh: DGX-1's hybrid cube-mesh, xGMI meshes; no NVSwitch,
    /// no link shared by several peers): per ordered pair (u, v) of box 0's GPUs (box-local
    /// indices, u x gpus_per_node + v) NCCL's bandwidth of their NVLinks (links x its per-link
    /// speed, topo.cc ncclTopoConnectNodes adds a pair's links into one), 0 where none. Empty for a
    /// box on a switch.
    std::vector<float> mesh_bw;
    /// One mesh box: what nccl_ring_search found (nccl_system runs it once; nccl_ring_graph returns it).
    std::optional<Graph> ring_search;
    std::string note;                  ///< how it was derived, for docs and reports
};

/// NCCL's ring search on one mesh box (search.cc ncclTopoCompute with ncclTopoSearchRec,
/// ncclTopoSearchRecGpu, ncclTopoSearchNextGpuSort, ncclTopoFollowPath and ncclTopoCompareGraphs,
/// their time budgets included): the rings, their number and the speed it settles on over the
/// NVLinks of `System::mesh_bw`. nullopt where the search would leave NVLink paths (no NVLink ring
/// at its first speed: NCCL then tries paths through a GPU (NVB) and PCIe, which the machine files
/// do not describe) or the system is not one mesh box.
std::optional<Graph> nccl_ring_search(const System&);

/// Reads the machine: boxes, NICs, speeds, the generation. Throws InputError (with the reason) for
/// machines NCCL's model does not describe (boxes of different sizes, no processors, ...).
System nccl_system(const Topology&);
/// The ring graph search.cc finds on the system (also the tree's channels: init.cc gives the tree
/// graph the ring's channel count).
Graph nccl_ring_graph(const System&);

/// NCCL's predicted time in seconds (tuning.cc ncclTopoTuneModel + ncclTopoGetAlgoTime, one
/// operation) of `algorithm` with `protocol` for a collective of `nccl_bytes` (NCCL's nBytes: the
/// buffer of allreduce, the output of allgather, the input of reduce-scatter; see nccl_bytes), or
/// nullopt where NCCL would not run it (tuning.cc sets its bandwidth to 0: PAT with more than one
/// GPU per box, a protocol the algorithm lacks, alltoall, which tuning.cc does not model).
std::optional<double> nccl_model_time(const System&, CollectiveKind, Algorithm, Protocol, double nccl_bytes);

/// NCCL's nBytes for collsched's size M: the same number, since collsched counts sizes as NCCL does
/// (docs/time.md, "Sizes": allreduce's buffer, allgather's output, reduce-scatter's input).
double nccl_bytes(CollectiveKind, std::uint32_t processors, double size);

/// The protocol NCCL's tuner picks for an algorithm at a size (the least model time), with it.
struct ModelChoice {
    Protocol protocol = Protocol::simple;
    double seconds = 0;
};
std::optional<ModelChoice> nccl_best_protocol(const System&, CollectiveKind, Algorithm, double nccl_bytes);

/// NCCL's NVLS graph (search.cc:1124-1138, :1274-1278, ncclTopoSearchTryNvls): one channel per GPU
/// of a box; bw_intra the fastest speed at which every GPU's NVLink carries its share of all of
/// them (once for each channel, twice for the one it heads: (GPUs + 1) x speed); bw_inter raised
/// by pass 2 while below twice bw_intra (several boxes: up to the NIC).
Graph nccl_nvls_graph(const System&);
/// NCCL's own model of its NVLS allreduce (one box) or NVLS_TREE allreduce (several), Simple, the
/// only protocol they have (tuning.cc:305-323, :371-377, :424-428): busBw = channels x min(bw_intra
/// x nvls_efficiency x (channels - 1) / channels x 2, bw_inter (x 2 for NVLS_TREE on 2 boxes),
/// perChMaxNVLSTreeBw for NVLS_TREE); latency 25 us (NVLink), NVLS_TREE + 2 log2(boxes) x 20.9 us.
/// nullopt without NVLS or for another collective.
struct NvlsModel {
    std::string_view algorithm;  ///< "NVLS" or "NVLS_TREE"
    double seconds = 0;
};
std::optional<NvlsModel> nccl_nvls_model(const System&, CollectiveKind, double nccl_bytes);

/// NCCL's own model of its allreduce through SHARP (CollNet), Simple, the only protocol they have
/// (tuning.cc:305-306, :338-349, :371-377, :418-423): CollNet Direct on its graph (one channel
/// per NIC, at most 8 heads; bwIntra the search's speed raised up to twice bwInter) busBw = channels x
/// bwIntra / (GPUs per NIC, halved toward 1) x 0.85 on Hopper, algBw half of it, latency 2 x (3.7 +
/// (GPUs - 1) x 0.4) + 31 us; CollNet Chain on the ring's channels, algBw half of channels x bwIntra,
/// latency 2 x (GPUs - 1) x 2.8 + 30 us; and with NVLS in the boxes NCCL's NVLS across boxes
/// (NVLS + CollNet): channels x min(bwIntra x nvlsEfficiency x 2 (ch - 1) / ch, bwInter), latency
/// 25 + 18 us. Empty without SHARP or for another collective.
struct CollnetModel {
    std::string_view algorithm;  ///< "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS"
    double seconds = 0;
    std::uint32_t channels = 0;  ///< the graph's channels (CollNet Chain's table runs as many chains)
};
std::vector<CollnetModel> nccl_collnet_models(const System&, CollectiveKind, double nccl_bytes);

/// One of NCCL's rings (a channel's): the processors in ring order and, per position i, the
/// channels from position i to i+1 (a route through routers or a PXN relay has several).
struct Ring {
    std::vector<Node> order;
    std::vector<std::vector<ChannelId>> hops;
};

/// NCCL's rings for `kind` on the machine, as `ring` builds its table on them, without the table:
/// one ring per channel and the pieces per chunk (`pieces` wanted, 0 for the default, as
/// BaselineOptions). Throws InputError as nccl_baselines does, and LimitReached once `deadline`
/// passes (NCCL's ring search can run for minutes on some numberings of a machine).
struct RingRoutes {
    std::vector<Ring> rings;
    std::uint32_t pieces = 1;
};
RingRoutes nccl_ring_routes(const Topology&, CollectiveKind, std::uint32_t pieces = 0, Deadline deadline = {});

/// NCCL's ring broadcast or reduce (src/device/broadcast.h, reduce.h runRing) of the collective's
/// root on `rings`, each channel's share cut into `pieces` chunks pipelined along its ring (NCCL's
/// chunks of a channel: its share over 512 KiB with Simple): broadcast from the root's position
/// to the one before it, reduce from the root's successor to the root, chunk j on hop i in logical
/// step i + j. Holds in the direct checker under the topology's model (hop timing).
SendTable nccl_rooted_ring_table(std::shared_ptr<const Topology>, const Model&, const Collective&, const std::vector<Ring>& rings,
                                 std::uint32_t pieces, Deadline deadline = {});

/// NCCL's algorithms for `kind` on the machine (what nccl_baselines builds), by name order.
std::vector<Algorithm> nccl_algorithms(const Topology&, CollectiveKind);

struct BaselineOptions {
    /// Chunks per ring position and channel (rings) or per tree channel (trees): NCCL's slices
    /// in flight. 0: the default (rings 1, trees 4); tables are capped at about 4 million transfers.
    std::uint32_t pieces = 0;
    /// The tables poll it as they are written (LimitReached once it passes).
    Deadline deadline;
};

/// One of NCCL's algorithms as a table for the machine.
struct Baseline {
    std::string name;         ///< "ring", "tree", "pat", "p2p"
    Algorithm algorithm = Algorithm::ring;
    SendTable table;          ///< holds in the direct checker under the table's model
    std::uint32_t channels = 0;   ///< NCCL channels the table runs (tree: 2 trees per channel)
    std::uint32_t pieces = 1;
    std::string source;       ///< one line: what it is and where it comes from
    /// NCCL's model at `size` (when asked and modelled): its best protocol and time.
    std::optional<ModelChoice> model;
};

/// Every NCCL algorithm that runs `collective` on the machine: allreduce ring and tree,
/// allgather and reduce-scatter ring (and pat with one GPU per box), alltoall p2p, broadcast and
/// reduce ring at each of NCCL's chunk counts (unless `pieces` names one). `size` > 0
/// fills each one's `model` at that size M (collsched's size of one datum). Throws InputError
/// when the machine is not one NCCL's model describes or the model forbids the tables
/// (wormhole timing). An empty result: no NCCL algorithm for that collective.
/// With `unbuilt`, an algorithm whose table cannot be built here (InputError: e.g. more chunks than
/// 32-bit message ids hold, NCCL's ring allreduce on 1,024 GPUs) is left out and named there
/// ("ring: why") instead of stopping the others.
std::vector<Baseline> nccl_baselines(std::shared_ptr<const Topology>, const Collective&, const Model&, double size = 0,
                                     const BaselineOptions& = {}, std::vector<std::string>* unbuilt = nullptr);

/// One of them by name ("ring", "tree", "pat", "p2p"); InputError naming those that exist when
/// it does not run that collective.
Baseline nccl_baseline(std::shared_ptr<const Topology>, const Collective&, const Model&, std::string_view name, double size = 0,
                       const BaselineOptions& = {});

}  // namespace collsched::nccl
