// nccl_baselines: which of NCCL's algorithms run a collective on a machine, each as a table with
// NCCL's model beside it (verifier/constructions/nccl/nccl.hpp).
#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "support/error.hpp"
#include "verifier/constructions/nccl/nccl_graph_check.hpp"
#include "verifier/constructions/nccl/nccl_impl.hpp"

namespace collsched::nccl {

namespace {

/// Transfers a table may have before its pieces are reduced (about 50 MB of transfers).
constexpr double max_transfers = 4e6;

std::uint32_t fit_pieces(std::uint32_t wanted, double transfers_per_piece) {
    std::uint32_t p = wanted;
    while (p > 1 && p * transfers_per_piece > max_transfers) --p;
    return p;
}

/// The ring's pieces per chunk: `wanted` (0: NCCL's default, 1) while the table stays within max_transfers.
bool rooted(CollectiveKind kind) { return kind == CollectiveKind::broadcast || kind == CollectiveKind::reduce; }

std::uint32_t ring_pieces(CollectiveKind kind, std::uint32_t P, std::uint32_t channels, std::uint32_t wanted) {
    const double per_piece = (kind == CollectiveKind::allreduce ? 2.0 : 1.0) * (P - 1) * (rooted(kind) ? 1 : P) * channels * 2;
    return fit_pieces(wanted ? wanted : 1, per_piece);
}

/// Broadcast and reduce: NCCL cuts a channel's share into chunks of 512 KiB (Simple: stepSize =
/// buffSize 4 MiB / NCCL_STEPS 8, BROADCAST_CHUNKSTEPS = REDUCE_CHUNKSTEPS = 1,
/// src/include/collectives.h:27-34), so its chunks per channel grow with the size. A table is one
/// count: NCCL's ring is built at 1, 4, 16, 64 and 256 chunks a channel (what it runs from
/// channels x 512 KiB to 256 times that) and its best at a size is the fastest of them.
constexpr std::uint32_t rooted_ladder[] = {1, 4, 16, 64, 256};

std::string ring_name(CollectiveKind kind, std::uint32_t pieces) {
    return rooted(kind) && pieces > 1 ? fmt::format("ring x{}", pieces) : std::string("ring");
}

std::vector<Algorithm> algorithms_for(CollectiveKind kind, const System& s) {
    switch (kind) {
    case CollectiveKind::allreduce: return {Algorithm::ring, Algorithm::tree};
    case CollectiveKind::allgather:
    case CollectiveKind::reduce_scatter:
        if (s.gpus_per_node == 1 && s.nodes > 1) return {Algorithm::ring, Algorithm::pat};  // tuning.cc:216-223
        return {Algorithm::ring};
    case CollectiveKind::alltoall: return {Algorithm::p2p};
    case CollectiveKind::broadcast:
    case CollectiveKind::reduce: return {Algorithm::ring};  // tuning.cc:293: broadcast and reduce run the ring only
    default: return {};
    }
}

Baseline build(const std::shared_ptr<const Topology>& topo, const Model& model, const Collective& coll, Algorithm a, const System& s,
               const Layout& l, const BaselineOptions& o) {
    const Topology& t = *topo;
    const CollectiveKind kind = coll.kind;
    const std::uint32_t P = t.processors();
    Baseline bl;
    bl.algorithm = a;
    bl.name = std::string(to_string(a));
    const Graph g = nccl_ring_graph(s);
    bl.channels = g.channels;
    switch (a) {
    case Algorithm::ring: {
        const std::vector<Ring> rings = nccl_rings(t, l, s, g.channels, o.deadline);
        bl.pieces = ring_pieces(kind, P, g.channels, o.pieces);
        if (rooted(kind)) {
            bl.name = ring_name(kind, bl.pieces);
            bl.table = nccl_rooted_ring_table(topo, model, coll, rings, bl.pieces, o.deadline);
            bl.source = fmt::format("NCCL's ring {} on {} channel{} (src/graph/search.cc; src/device/{}.h runRing), {} chunk{} per "
                                    "channel pipelined along the ring (NCCL's at {} a channel)",
                                    coll.row().name, g.channels, g.channels == 1 ? "" : "s", coll.row().name, bl.pieces,
                                    bl.pieces == 1 ? "" : "s", bl.pieces == 1 ? std::string("512 KiB or less") : fmt::format("{} MiB", bl.pieces / 2.0));
            break;
        }
        bl.table = ring_table(topo, model, kind, rings, bl.pieces, o.deadline);
        bl.source = fmt::format("NCCL's ring on {} channel{} (src/graph/search.cc: one ring per channel, every box entered and left "
                                "through the channel's NIC; src/device/ runRing), {} piece{} per chunk",
                                g.channels, g.channels == 1 ? "" : "s", bl.pieces, bl.pieces == 1 ? "" : "s");
        break;
    }
    case Algorithm::tree: {
        const std::vector<Ring> rings = nccl_tree_rings(t, o.deadline);
        bl.pieces = fit_pieces(o.pieces ? o.pieces : 4, 2.0 * 2 * P * g.channels * 3);
        bl.table = tree_table(topo, model, l, rings, bl.pieces, o.deadline);
        const NcclBoxes nb = nccl_graph_boxes(t);
        bl.source = fmt::format("NCCL's double binary tree on {} channel{} (src/graph/trees.cc ncclGetDtree across boxes, a chain in "
                                "each box, src/graph/connect.cc), {} piece{} per tree{}",
                                g.channels, g.channels == 1 ? "" : "s", bl.pieces, bl.pieces == 1 ? "" : "s",
                                nb.count > 1 && nccl_nodes_differ(nb) ? "; the boxes number their nets differently: channel c on the c-th rail, "
                                                                        "one graph file per node (convert nccl:tree)"
                                                                      : "");
        break;
    }
    case Algorithm::pat:
        bl.table = pat_table(topo, model, kind, o.deadline);
        bl.channels = 1;
        bl.source = "NCCL's PAT (one GPU per box, NCCL 2.23+): log2 P rounds at doubling distances";
        break;
    case Algorithm::p2p:
        bl.table = p2p_table(topo, model, l, o.deadline);
        bl.channels = 1;
        bl.source = "NCCL's alltoall: grouped send/recv to peer r + i in round i, other rails through PXN";
        break;
    }
    return bl;
}

}  // namespace

std::vector<Baseline> nccl_baselines(std::shared_ptr<const Topology> topo, const Collective& coll, const Model& model, double size,
                                     const BaselineOptions& o, std::vector<std::string>* unbuilt) {
    if (model.timing != Timing::hop)
        throw InputError("NCCL's algorithms are built under hop timing (their steps take several rounds); this model has timing=wormhole");
    const System s = nccl_system(*topo);
    const Layout l = nccl_layout(*topo);
    std::vector<Baseline> out;
    std::vector<std::uint32_t> ladder{o.pieces};  // broadcast and reduce: NCCL's chunk counts (rooted_ladder)
    if (rooted(coll.kind) && o.pieces == 0) ladder.assign(std::begin(rooted_ladder), std::end(rooted_ladder));
    for (Algorithm a : algorithms_for(coll.kind, s))
        for (std::uint32_t pieces : a == Algorithm::ring ? ladder : std::vector<std::uint32_t>{o.pieces}) {
            poll_deadline(o.deadline, "algorithms");
            BaselineOptions each = o;
            each.pieces = pieces;
            Baseline b;
            try {
                b = build(topo, model, coll, a, s, l, each);
            } catch (const InputError& e) {
                if (!unbuilt) throw;
                unbuilt->push_back(fmt::format("{}: {}", ring_name(coll.kind, pieces), e.what()));
                break;  // the rest of the ladder has the same rings, and more chunks
            }
            if (std::any_of(out.begin(), out.end(), [&](const Baseline& x) { return x.name == b.name; })) continue;  // capped to the same
            if (size > 0) b.model = nccl_best_protocol(s, coll.kind, a, nccl_bytes(coll.kind, topo->processors(), size));
            out.push_back(std::move(b));
        }
    return out;
}

RingRoutes nccl_ring_routes(const Topology& t, CollectiveKind kind, std::uint32_t pieces, Deadline deadline) {
    const System s = nccl_system(t);
    const std::uint32_t channels = nccl_ring_graph(s).channels;
    return {nccl_rings(t, nccl_layout(t), s, channels, deadline), ring_pieces(kind, t.processors(), channels, pieces)};
}

std::vector<Algorithm> nccl_algorithms(const Topology& t, CollectiveKind kind) { return algorithms_for(kind, nccl_system(t)); }

Baseline nccl_baseline(std::shared_ptr<const Topology> topo, const Collective& coll, const Model& model, std::string_view name, double size,
                       const BaselineOptions& o) {
    if (model.timing != Timing::hop)
        throw InputError("NCCL's algorithms are built under hop timing (their steps take several rounds); this model has timing=wormhole");
    const System s = nccl_system(*topo);
    std::string known;
    for (Algorithm a : algorithms_for(coll.kind, s)) {
        BaselineOptions each = o;
        if (a == Algorithm::ring && rooted(coll.kind) && name.starts_with("ring x")) {  // one of the ladder: "ring x16"
            for (std::uint32_t k : rooted_ladder)
                if (name == ring_name(coll.kind, k)) each.pieces = k;
            if (each.pieces > 1) name = "ring";
        }
        if (to_string(a) == name) {
            Baseline b = build(topo, model, coll, a, s, nccl_layout(*topo), each);
            if (size > 0) b.model = nccl_best_protocol(s, coll.kind, a, nccl_bytes(coll.kind, topo->processors(), size));
            return b;
        }
        known += (known.empty() ? "" : ", ") + std::string("nccl:") + std::string(to_string(a));
    }
    if (known.empty())
        throw InputError(fmt::format("nccl:{}: NCCL has no algorithm here for {} (it runs allreduce, allgather, reduce_scatter, alltoall, broadcast and reduce)",
                                     name, coll.row().name));
    throw InputError(fmt::format("nccl:{}: not one of NCCL's algorithms for {} on {} (these are: {})", name, coll.row().name, topo->spec(), known));
}

}  // namespace collsched::nccl
