/** \file
 * Checking an NCCL graph file (NCCL_GRAPH_FILE's `<graphs>`, read by
 * compiler/formats/nccl_graph_read.hpp) against a machine, by NCCL's own semantics (docs/exports.md,
 * "Reading an NCCL graph file"; NVIDIA/nccl 5067397c):
 *
 *  - every node reads the same file; a `<gpu dev=d>` is the node's CUDA device d, looked up among
 *    its own GPUs (search.cc:906-918), so channel c lists one order of a box's GPUs and every box
 *    runs that order; the rings join box k's last GPU to box k+1's first (connect.cc connectRings,
 *    boxes in rank order), and box K-1's last to box 0's first;
 *  - the first `<net>` of a channel is the NIC the channel's first GPU receives by, the second the
 *    NIC its last GPU sends by (search.cc:1400-1414 ncclTopoGetNetDev: index 0 for the channel's
 *    first GPU, else 1); a NIC that is not the sending GPU's own is reached over NVLink (PXN);
 *  - nchannels channels run, as many as the tree graph has when it has fewer (init.cc:1280);
 *    NCCL then duplicates them, which splits the data the same way.
 *
 * Findings (exit 1), each at the file's line and column: a channel that is not a cycle through
 * every rank (a GPU twice, one missing, a count other than the box's), a `<gpu>` NCCL cannot
 * find, a `<net>` the box lacks or a channel without its two, a hop the machine has no link for
 * (inside a box: a channel or a path through switches alone; between boxes: from the NIC out of
 * one box to the NIC into the next through switches alone), channels NCCL would run but the file
 * does not give. The tree graph's chains and its links between boxes (NCCL's double binary tree)
 * are checked the same way. What NCCL tolerates is a note.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/formats/export_nccl_graph.hpp"
#include "compiler/formats/nccl_graph_read.hpp"
#include "verifier/constructions/nccl/nccl_impl.hpp"

namespace collsched::nccl {

struct GraphFinding {
    int graph = 0;  ///< 0 the ring graph, 1 the tree graph
    XmlPlace at;
    std::string what;  ///< "graph 0 channel 2: ..." with the kind in brackets at the end
    std::string file;  ///< the file `at` is in
};

/// How many rings use the busiest channel and group, and the least bandwidth a ring gets (each
/// channel's and group's bandwidth divided by the rings on it) on a hop inside a box and between.
struct GraphLoad {
    std::optional<ChannelId> busiest_channel;
    std::uint32_t channel_rings = 0;
    std::optional<std::uint32_t> busiest_group;
    std::uint32_t group_rings = 0;
    double intra_Bps = 0, inter_Bps = 0;  ///< 0: no such hop
};

struct GraphCheck {
    std::uint32_t boxes = 1, gpus_per_box = 0;
    std::vector<std::string> files;  ///< one every node reads, or node k's at k
    /// the ones NCCL keeps (the last of ids 0 and 1; over several nodes' files, node 0's with NCCL's reductions of
    /// the nodes' values: the least nchannels, samechannels and speeds, the widest crossnic, init.cc:1436-1446)
    std::optional<NcclGraphXml> ring_graph, tree_graph;
    std::uint32_t channels_run = 0;                       ///< ring channels NCCL runs
    std::vector<GraphFinding> findings;
    std::vector<std::string> notes;  ///< file:line:col: what NCCL tolerates
    std::vector<Ring> rings;          ///< per channel run, when the ring graph has no finding
    /// per channel NCCL runs its trees on (min(tree, ring) channels), trees 0 and 1 as connectTrees joins them
    /// (connect.cc:55-60, :138-175: the chains, and the boxes at each box's pattern's positions by their nets),
    /// when the tree graph has no finding
    std::vector<TreeLinks> trees;
    GraphLoad load;
    bool holds() const { return findings.empty(); }
};

/// Checks `file` (read from `name`) on the machine. Throws InputError when the machine is not
/// one NCCL graph files describe (boxes of different sizes).
GraphCheck check_nccl_graph(const NcclGraphFile& file, std::string_view name, const Topology& topo);

/// One file of a set and its name.
struct NcclGraphSource {
    const NcclGraphFile* file = nullptr;
    std::string name;
};
/// Checks one file every node reads, or one file per box (node k loads files[k], docs/exports.md, "One file per
/// node"): NCCL reads NCCL_GRAPH_FILE per process (search.cc:1110-1121), looks a node's GPUs and nets up among its
/// own (search.cc:906-918, :1400-1414: net ids in the node's PCI order), all-gathers the graphs' fields and runs the
/// least nchannels over the nodes (init.cc:1436-1459), and joins channel c of node 0, 1, ... in rank order from each
/// node's own first and last GPU (connect.cc:20-50 ncclTopoPreset, :96-113 connectRings). InputError (exit 2) for a
/// count of files other than 1 or the boxes, or files that differ in which of graphs 0 and 1 they give (a node
/// without one searches its own).
GraphCheck check_nccl_graphs(const std::vector<NcclGraphSource>& files, const Topology& topo);

/// NCCL's own graphs for the machine as a graph file holds them (docs/exports.md, "NCCL's own
/// algorithms as graph files"): `algorithm` "ring" gives graph 0 (pattern 4, NCCL_TOPO_PATTERN_RING),
/// "tree" graph 1 (pattern 3, NCCL_TOPO_PATTERN_TREE: the chain's first GPU carries all the net
/// traffic, as tree_table connects the boxes), "*" both, in one `<graphs>`. The channels are those
/// nccl_ring_graph and nccl_rings build (compare nccl:ring, nccl:tree): channel c's order of a box's
/// GPUs, entering and leaving every box by the NIC of its first GPU; the speeds the search's.
/// InputError for another name (naming those that have a graph) or a machine NCCL's model or
/// graph files do not describe.
std::vector<NcclGraphEntry> nccl_algorithm_graphs(const Topology&, std::string_view algorithm);
/// The same per node: one list every node reads (nccl_algorithm_graphs), or where the boxes number their nets
/// differently one per box: "tree" gives the tree graph of nccl_tree_rings' chains (each node's net ids), one file
/// where the nodes' agree; "ring" and "*" are InputError there (NCCL's own rings cross rails, which no file holds).
std::vector<std::vector<NcclGraphEntry>> nccl_algorithm_node_graphs(const Topology&, std::string_view algorithm);

/// Whether the boxes number their NICs differently (a NIC down: box 0's net d is another rail than box 1's), so
/// that NCCL's nodes, each searching or reading its own graph, differ (docs/exports.md, "One file per node").
bool nccl_nodes_differ(const NcclBoxes&);
/// The chains NCCL's tree runs per channel, box by box (nccl_ring_graph's channels): nccl_rings' orders where every
/// box numbers its nets alike and every ring enters each box at a GPU with a NIC; else (a NIC down) NCCL's order of
/// each box kept on a rail (a GPU with a NIC beside it in every box, entered first in every box), channel c on the
/// c-th rail (mod the rails), as NCCL's search puts channel c on net c (search.cc:736) and one graph file per node
/// gives it where the nodes number the rail's NIC differently; connectTrees joins the boxes at the chains' first
/// GPUs by those nets (connect.cc:55-60, :138-175), on the rails. The rings' `hops` are the topology's routes.
std::vector<Ring> nccl_tree_rings(const Topology&, Deadline deadline = {});

/// NCCL's rings weighted by speed (docs/exports.md, "Rings weighted by speed"): NCCL gives every
/// channel the same share of the data, so a NIC at half speed is put in half as many channels.
/// NCCL's rings for the machine (nccl_rings), one per net device (the first entering by it), each
/// repeated n_d times with n_d in proportion to the least bandwidth its hops between boxes have,
/// at most 32 channels in all (channels_by_capacity); written as NCCL's graph file (one file for
/// every node, or one per node where the boxes number their NICs differently: a channel stays on one
/// rail; crossnic 0: a ring leaves each box by the NIC it entered by, PXN), read back and
/// checked as `verify GRAPH.xml` reads it, and the table the file yields: NCCL's ring `kind` on its
/// channels (nccl_graph_table). nullopt with `why` where the machine has one box, a NIC-less
/// entry, NICs equally fast (NCCL's own rings), or a file that does not hold. `times` repeats every ring that
/// many times more (the same weights on more channels: a smaller share a hop), nullopt above 32 channels; 0: as many
/// times as 32 channels hold. A table above `max_transfers` is not built (nullopt).
/// `cross_nic`: instead rings that leave each box by their last GPU's own NIC, entering the next box at the GPU of
/// that rail (crossnic 1: no PXN relay, a hop less per box; docs/exports.md, "Rings weighted by speed"), offered
/// with equally fast NICs too.
struct WeightedRings {
    std::string xml, source;        ///< xml: box 0's file
    std::vector<std::string> xmls;  ///< the files: one every node reads, or one per box where they differ
    std::uint32_t channels = 0;
    std::uint64_t transfers = 0;
    SendTable table;
};
inline constexpr std::uint32_t max_graph_channels = 32;
inline constexpr std::uint64_t max_weighted_transfers = std::uint64_t{1} << 22;
std::optional<WeightedRings> nccl_weighted_rings(std::shared_ptr<const Topology>, const Model&, CollectiveKind, Deadline, std::string& why,
                                                 std::uint32_t times = 1, bool cross_nic = false,
                                                 std::uint64_t max_transfers = max_weighted_transfers);

/// Why NCCL, loading `xml` (the graph file written for table t), runs something that moves more data on a
/// channel than t does, or "" (docs/exports.md, "NCCL graph files"): the file read back and checked as `verify
/// FILE.xml` does, NCCL's ring of t's collective on its channels (nccl_graph_table) against t, channel by
/// channel, in datums (a transfer moves its chunks / C). A table that relies on NCCL's PXN relay to deliver a
/// datum (the relay GPU holds it on the way out of its box) has one transfer fewer than NCCL runs: timed, it is
/// faster than NCCL runs the file. "" also for collectives NCCL's graph files do not give a ring table for.
std::string nccl_runs_more(const SendTable& t, const std::string& xml, Deadline deadline = {});
/// The same for the files the table's nodes load (one every node reads, or one per box).
std::string nccl_runs_more(const SendTable& t, const std::vector<std::string>& xmls, Deadline deadline = {});

/// NCCL's tree allreduce on the checked trees (tree_table_of), `pieces` chunks a tree (NCCL's own tree: 4);
/// InputError where the file gives none that hold.
SendTable nccl_graph_tree_table(std::shared_ptr<const Topology>, const Model&, const GraphCheck&, std::uint32_t pieces,
                                Deadline deadline = {});
/// The transfers NCCL's ring `kind` on the checked rings has (a bound, before rounds).
std::uint64_t nccl_graph_transfers(const GraphCheck&, CollectiveKind kind, std::uint32_t processors);
/// NCCL's ring allreduce, allgather or reduce_scatter on the checked rings, one piece per
/// channel and position (verifier/constructions/nccl' ring_table).
SendTable nccl_graph_table(std::shared_ptr<const Topology>, const Model&, CollectiveKind, const GraphCheck&, Deadline deadline = {});

}  // namespace collsched::nccl
