// nccl_baselines: which of NCCL's algorithms run a collective on a machine, each as a table with
// NCCL's model beside it (verifier/baselines/nccl.hpp).
#include <fmt/format.h>

#include "support/error.hpp"
#include "verifier/baselines/nccl_impl.hpp"

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
std::uint32_t ring_pieces(CollectiveKind kind, std::uint32_t P, std::uint32_t channels, std::uint32_t wanted) {
    const double per_piece = (kind == CollectiveKind::allreduce ? 2.0 : 1.0) * (P - 1) * P * channels * 2;
    return fit_pieces(wanted ? wanted : 1, per_piece);
}

std::vector<Algorithm> algorithms_for(CollectiveKind kind, const System& s) {
    switch (kind) {
    case CollectiveKind::allreduce: return {Algorithm::ring, Algorithm::tree};
    case CollectiveKind::allgather:
    case CollectiveKind::reduce_scatter:
        if (s.gpus_per_node == 1 && s.nodes > 1) return {Algorithm::ring, Algorithm::pat};  // tuning.cc:216-223
        return {Algorithm::ring};
    case CollectiveKind::alltoall: return {Algorithm::p2p};
    default: return {};
    }
}

Baseline build(const std::shared_ptr<const Topology>& topo, const Model& model, CollectiveKind kind, Algorithm a, const System& s,
               const Layout& l, const BaselineOptions& o) {
    const Topology& t = *topo;
    const std::uint32_t P = t.processors();
    Baseline bl;
    bl.algorithm = a;
    bl.name = std::string(to_string(a));
    const Graph g = nccl_ring_graph(s);
    bl.channels = g.channels;
    switch (a) {
    case Algorithm::ring: {
        const std::vector<Ring> rings = nccl_rings(t, l, s, g.channels);
        bl.pieces = ring_pieces(kind, P, g.channels, o.pieces);
        bl.table = ring_table(topo, model, kind, rings, bl.pieces, o.deadline);
        bl.source = fmt::format("NCCL's ring on {} channel{} (src/graph/search.cc: one ring per channel, every box entered and left "
                                "through the channel's NIC; src/device/ runRing), {} piece{} per chunk",
                                g.channels, g.channels == 1 ? "" : "s", bl.pieces, bl.pieces == 1 ? "" : "s");
        break;
    }
    case Algorithm::tree: {
        const std::vector<Ring> rings = nccl_rings(t, l, s, g.channels);
        bl.pieces = fit_pieces(o.pieces ? o.pieces : 4, 2.0 * 2 * P * g.channels * 3);
        bl.table = tree_table(topo, model, l, rings, bl.pieces, o.deadline);
        bl.source = fmt::format("NCCL's double binary tree on {} channel{} (src/graph/trees.cc ncclGetDtree across boxes, a chain in "
                                "each box, src/graph/connect.cc), {} piece{} per tree",
                                g.channels, g.channels == 1 ? "" : "s", bl.pieces, bl.pieces == 1 ? "" : "s");
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
    for (Algorithm a : algorithms_for(coll.kind, s)) {
        poll_deadline(o.deadline, "algorithms");
        Baseline b;
        try {
            b = build(topo, model, coll.kind, a, s, l, o);
        } catch (const InputError& e) {
            if (!unbuilt) throw;
            unbuilt->push_back(fmt::format("{}: {}", to_string(a), e.what()));
            continue;
        }
        if (size > 0) b.model = nccl_best_protocol(s, coll.kind, a, nccl_bytes(coll.kind, topo->processors(), size));
        out.push_back(std::move(b));
    }
    return out;
}

RingRoutes nccl_ring_routes(const Topology& t, CollectiveKind kind, std::uint32_t pieces) {
    const System s = nccl_system(t);
    const std::uint32_t channels = nccl_ring_graph(s).channels;
    return {nccl_rings(t, nccl_layout(t), s, channels), ring_pieces(kind, t.processors(), channels, pieces)};
}

std::vector<Algorithm> nccl_algorithms(const Topology& t, CollectiveKind kind) { return algorithms_for(kind, nccl_system(t)); }

Baseline nccl_baseline(std::shared_ptr<const Topology> topo, const Collective& coll, const Model& model, std::string_view name, double size,
                       const BaselineOptions& o) {
    if (model.timing != Timing::hop)
        throw InputError("NCCL's algorithms are built under hop timing (their steps take several rounds); this model has timing=wormhole");
    const System s = nccl_system(*topo);
    std::string known;
    for (Algorithm a : algorithms_for(coll.kind, s)) {
        if (to_string(a) == name) {
            Baseline b = build(topo, model, coll.kind, a, s, nccl_layout(*topo), o);
            if (size > 0) b.model = nccl_best_protocol(s, coll.kind, a, nccl_bytes(coll.kind, topo->processors(), size));
            return b;
        }
        known += (known.empty() ? "" : ", ") + std::string("nccl:") + std::string(to_string(a));
    }
    if (known.empty())
        throw InputError(fmt::format("nccl:{}: NCCL has no algorithm here for {} (it runs allreduce, allgather, reduce_scatter and alltoall)",
                                     name, coll.row().name));
    throw InputError(fmt::format("nccl:{}: not one of NCCL's algorithms for {} on {} (these are: {})", name, coll.row().name, topo->spec(), known));
}

}  // namespace collsched::nccl
