/** \file
 * NCCL graph files (docs/exports.md, "NCCL graph files"): the `<graphs>` XML that stock NCCL reads
 * from NCCL_GRAPH_FILE instead of searching for channels (NVIDIA/nccl src/graph/search.cc,
 * ncclTopoGetGraphFromXml; the parser is src/graph/xml.cc ncclTopoGetXmlGraphFromFile).
 *
 * A send table exports when its messages travel on rings: every message's hops (processor to
 * processor, routers passed through) follow one cyclic order of all processors, as ring
 * allgather, reduce-scatter and allreduce do. Each distinct cycle is one NCCL channel. NCCL holds
 * one order of a box's GPUs per channel and joins the boxes in rank order, so a cycle exports
 * when it visits every box once, in increasing box order, with the same order of local GPUs in
 * every box; the NICs at the channel's ends are those of its first GPU (where the ring enters
 * the box) and of its last (where it leaves). Boxes are what the machine file declares
 * (`"boxes"`, Topology::declared_boxes); only a file that does not say is read as the machine view
 * draws it: processor_components at a quarter of the fastest channel (machine_view.hpp).
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/io/table_io.hpp"
#include "compiler/table/send_table.hpp"

namespace collsched {

/// One ring: a cyclic order of all processors, how many messages and chunks travel on it, the NCCL
/// channels it is (NCCL gives each channel the same share: a ring carrying k shares is k channels),
/// and whether it leaves every box by the NIC it entered by, its last GPU reaching that NIC's GPU
/// over NVLink (NCCL's PXN with NCCL_CROSS_NIC=0).
struct TableRing {
    std::vector<std::uint32_t> order;  ///< starts at its least processor
    std::uint64_t messages = 0;
    std::uint64_t chunks = 0;
    bool relay = false;
    std::uint32_t channels = 1;
};

/// The rings the table's chunks travel on (all messages of a chunk round one ring, as NCCL's ring
/// algorithms move them; a message whose chunk is not known alone), in the order of their first
/// chunk; each ring's channels its chunks over the greatest common divisor of all rings' chunks.
/// Throws InputError naming the first group of hops that is not on one cyclic order of all processors.
std::vector<TableRing> table_rings(const SendTable& t);

/// A channel of an NCCL graph: the net device it enters by, the local GPUs (CUDA devices) in
/// order, the net device it leaves by (-1: one box, no net).
struct NcclChannel {
    int net_in = -1, net_out = -1;
    std::vector<std::uint32_t> gpus;
};

/// What a graph file says (one `<graph>` per pattern, the same channels).
struct NcclGraph {
    std::uint32_t boxes = 1, gpus_per_box = 0;
    std::vector<NcclChannel> channels;
    double speed_intra = 0, speed_inter = 0;  ///< GB/s per channel (NCCL's bwIntra, bwInter)
    bool cross_nic = false;
    bool same_channels = false;  ///< NCCL's sameChannels: every channel replays the first's order
    /// Graph 1's (the trees') channels, one per ring channel (NCCL runs min(ring, tree) channels, init.cc:1459): the
    /// ring's own chain, or for a ring that leaves a box by another NIC than it entered by (crossnic) its box's GPUs
    /// from the GPU of box 0's rail of entry, by that NIC at both ends (a tree joins the boxes' first NICs: one rail).
    std::vector<NcclChannel> tree;
};

/// One `<graph>` of a file: NCCL's graph id (init.cc: 0 rings, 1 trees, 2 CollNet chains, 3 NVLS,
/// 4 CollNet direct), its pattern (NCCL_TOPO_PATTERN_*, nccl_graph_read.hpp) and its channels.
struct NcclGraphEntry {
    int id = 0, pattern = 4;
    NcclGraph graph;
};

/// The boxes NCCL would see (one NCCL node each) and their NICs, as the writer numbers them and
/// the reader (verifier/constructions/nccl/nccl_graph_check.hpp) reads them back: per processor its box and
/// its index in the box (its CUDA device), per box its processors and, per net device j, the node
/// where the NIC meets the machine: the j-th GPU of the box with channels out of it (a NIC beside
/// each GPU), or the one router all of the box's GPUs reach it by (a NIC the box shares, ndv2).
struct NcclBoxes {
    std::vector<std::uint32_t> box, local;
    std::vector<int> nic;  ///< per processor, its own net device in its box (-1: none)
    std::vector<std::vector<Node>> members, nics;
    std::uint32_t count = 1, per_box = 0;
    /// The machine file does not say its boxes ("boxes", docs/formats.md): they are the sets of
    /// processors joined by channels of at least a quarter of the fastest processor channel.
    bool inferred = false;
};
/// Throws InputError when the boxes differ in size (NCCL's files have one count of GPUs).
NcclBoxes nccl_graph_boxes(const Topology& topo);

/// Per box, the graph its node reads (docs/exports.md, "One file per node"): NCCL reads NCCL_GRAPH_FILE per
/// process and joins the nodes' channels c in rank order (connect.cc:96-113), each node's GPU order and nets
/// (numbered in its own PCI order) from its own file. A ring must visit boxes 0, 1, ..., K-1 in turn; InputError
/// saying why a ring has no NCCL form.
std::vector<NcclGraph> nccl_node_graphs_of_rings(const Topology& topo, const std::vector<TableRing>& rings);
/// How box k's graph differs from box 0's (the first difference), or "" when one file serves every node.
std::string nccl_graphs_differ(const std::vector<NcclGraph>& graphs);
/// The one graph every box reads; InputError where the boxes need different files.
NcclGraph nccl_graph_of_rings(const Topology& topo, const std::vector<TableRing>& rings);
/// The file node `node` loads when the boxes need one each: FILE.xml -> FILE.nodeN.xml.
std::string nccl_graph_node_path(const std::string& path, std::uint32_t node);
/// The table's graph files: one text when every node reads the same, else one per box (box order).
std::vector<std::string> nccl_graph_files_xml(const SendTable& t);

/// The `<graphs version="1">` text of the graphs in order. Pattern 3 (NCCL_TOPO_PATTERN_TREE)
/// writes each channel's net in at both ends: the tree goes up and down by the NIC of the chain's
/// first GPU.
std::string nccl_graphs_xml(const std::vector<NcclGraphEntry>& graphs);
/// nccl_graphs_xml of graph id 0 (pattern 4, ring) and id 1 (pattern 3, tree: the same chains,
/// NCCL's trees run a chain inside each box).
std::string nccl_graph_xml(const NcclGraph& g);

/// `convert --format nccl-graph` to one stream: table_rings, nccl_graph_of_rings, nccl_graph_xml (InputError where
/// the boxes need a file each: write_table_output writes those).
void write_table_nccl_graph(const SendTable& t, fmt::memory_buffer& out, const Flush& flush);

}  // namespace collsched
