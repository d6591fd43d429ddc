// The registry of collsched's constructions (constructions.hpp): one table, every construction one row with its
// builders, and the views the objectives read.
#include "verifier/time/constructions.hpp"

#include <algorithm>
#include <iterator>

#include "support/assert.hpp"
#include "support/budget.hpp"
#include "support/error.hpp"
#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/constructions/nccl/nccl_graph_check.hpp"
#include "verifier/constructions/steps/known.hpp"
#include "verifier/time/compose_candidates.hpp"
#include "verifier/time/objective.hpp"
#include "verifier/time/rooted_rings.hpp"
#include "verifier/time/sharp_candidates.hpp"
#include "verifier/time/synth_candidates.hpp"

namespace collsched {

namespace {

/// NCCL's algorithms for the machine, each marked as NCCL's.
void nccl_candidates(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    nccl::BaselineOptions o;
    o.deadline = Deadline::at(q.deadline);  // they were built after the time limit (12 s past --timeout 5 on 128 GPUs)
    std::vector<std::string> unbuilt;  // "ring: why" (its ring allreduce on 1,024 GPUs: more chunks than message ids hold)
    for (nccl::Baseline& b : nccl::nccl_baselines(q.instance.topology, q.instance.collective, q.instance.model, 0, o, &unbuilt))
        out.push_back({"nccl " + b.name, b.source, "nccl", true, std::make_shared<const SendTable>(std::move(b.table))});
    for (const std::string& u : unbuilt) notes.push_back("nccl " + u);
}

/// NCCL's rings weighted by the speed of their NICs, an NCCL graph file's table (verifier/constructions/nccl/nccl_graph_files.cpp).
void weighted_ring_candidates(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    const CollectiveKind k = q.instance.collective.kind;
    if (k != CollectiveKind::allgather && k != CollectiveKind::allreduce && k != CollectiveKind::reduce_scatter) return;
    if (q.instance.model.timing != Timing::hop) return;
    std::string why;
    try {
        // the weights on their fewest channels, and on twice as many (a share half as large a hop: sooner through the
        // ring's P-1 hops at small sizes) where a graph file holds them; NCCL's rings (out of a box by the NIC they came
        // in by, PXN) and rings out of each box by the last GPU's own NIC (crossnic: a relay hop less a box)
        for (const bool cross : {false, true}) {
            std::uint32_t last = 0;  // channels of the last one built
            for (std::uint32_t times : {1u, 2u, 0u}) {  // 0: as many times as 32 channels hold (NIC 0 down: 6 crossnic rings 30)
                // the multiples only up to 2^18 transfers: their smaller share a hop pays at 16 MiB on a few boxes; on 16 x 8
                // H100 the crossnic rings on 32 channels (a million transfers, allreduce) took 0.8 GB and won nothing
                auto w = nccl::nccl_weighted_rings(q.instance.topology, q.instance.model, k, Deadline::at(q.deadline), why, times, cross,
                                                   times == 1 ? nccl::max_weighted_transfers : std::uint64_t{1} << 18);
                const char* name = cross ? "crossnic rings" : "weighted rings";
                if (!w) {
                    if (times == 1) notes.push_back(fmt::format("{}: none ({})", name, why));
                    if (times != 2) break;
                    continue;  // twice is above 32: as many as fit may still be more than once
                }
                if (w->channels == last) continue;  // as many as fit is once or twice
                last = w->channels;
                out.push_back({fmt::format("{} ({} channels)", name, w->channels), w->source, "weighted rings", false,
                               std::make_shared<const SendTable>(std::move(w->table))});
            }
        }
    } catch (const InputError& e) {
        notes.push_back(fmt::format("weighted rings: none ({})", e.what()));
    } catch (const LimitReached& e) {
        notes.push_back(fmt::format("weighted rings: not built within the time limit ({})", e.what()));
    }
}

using K = StepStage;

/// The constructions of least steps the steps objective tries (stage `known`, in order: every one that applies, the
/// fewest steps kept; `translates`: before the greedy, settling the search where they meet the bound). The sources of
/// stage `known` are what optimize prints.
std::vector<Construction> step_rows() {
    const std::string ours = " (collsched construction, docs/synthesis.md)";
    const std::string here = "verifier/constructions/steps/known.cpp", greedy = "verifier/constructions/steps/greedy.cpp";
    return {
        {.name = "bft phase alltoall", .file = "compiler/table/builder.cpp", .what = "bft_phase_alltoall (Dimakopoulos & Dimopoulos, section 5, eq. 2)",
         .stage = K::known, .why_not = alltoall_on_bft, .build = bft_phase_schedule, .fixed_routes = true},
        {.name = "xor-invariant alltoall", .file = here, .what = "XOR-invariant total exchange" + ours, .stage = K::known, .why_not = personal_only,
         .build = xor_invariant_schedule, .own = true, .fixed_routes = true},
        {.name = "translation-invariant alltoall", .file = here, .what = "translation-invariant total exchange" + ours, .stage = K::known,
         .why_not = any_route_only, .build = translation_invariant_schedule, .own = true},
        {.name = "mirrored ring alltoall", .file = here, .what = "mirrored ring total exchange" + ours, .stage = K::known, .why_not = any_route_only,
         .build = mirrored_ring_schedule, .own = true},
        {.name = "direct alltoall", .file = here, .what = "direct total exchange by edge colouring" + ours, .stage = K::known,
         .why_not = any_route_only, .build = direct_alltoall_schedule, .own = true},
        {.name = "greedy personal", .file = greedy, .what = "greedy first fit, farthest first", .stage = K::known, .why_not = personal_only,
         .build = greedy_personal_schedule, .fixed_routes = true},
        {.name = "greedy free route", .file = greedy, .what = "greedy first fit over any route (earliest arrival), farthest first", .stage = K::known,
         .why_not = any_route_only, .build = greedy_free_route_schedule},
        {.name = "ring allgather", .file = here, .what = "ring algorithm on a Hamiltonian cycle (Dimakopoulos, single-port paper, section 3)",
         .stage = K::known, .why_not = dissemination_only, .build = ring_allgather_schedule},
        {.name = "greedy flood", .file = greedy, .what = "greedy flooding, oldest first", .stage = K::known, .why_not = dissemination_only,
         .build = greedy_flood_schedule},
        {.name = "greedy end-to-end", .file = greedy, .what = "greedy end-to-end sends, nearest first", .stage = K::known, .why_not = end_to_end_only,
         .build = greedy_end_to_end_schedule, .stops_when_late = false},
        {.name = "translates", .file = "verifier/constructions/steps/translate_packing.cpp",
         .what = "translates of one spanning tree (allgather) or of one processor's messages (alltoall) under a checked translation group",
         .stage = K::translates, .build = translates_schedule, .own = true},
    };
}

/// The constructions the time objective runs, in the order its providers run and its notes list them (the rings are
/// the steps objective's too, stage `chunks`), then the library's schedules.
std::vector<Construction> time_rows() {
    return {
        {.name = "rings", .file = "verifier/constructions/steps/rings.cpp", .what = "NCCL's ring algorithms on k rings, C = 1, 4, 16, ... chunks",
         .stage = K::chunks, .build = rings_schedule, .own = true, .provide = ring_candidates},
        {.name = "weighted rings", .file = "verifier/constructions/nccl/nccl_graph_files.cpp",
         .what = "NCCL's rings, each NIC's repeated in proportion to its speed (NCCL gives every channel the same share), as an NCCL graph file",
         .provide = weighted_ring_candidates},
        {.name = "tree packing", .file = "verifier/constructions/steps/tree_packing.cpp", .what = "tree packings at the chunk counts the cut suggests",
         .provide = packing_candidates},
        {.name = "least steps", .file = "verifier/constructions/steps/known.cpp",
         .what = "the steps objective's known schedule of least steps (the rows of stage known, or the duality's) and the greedy, one chunk",
         .provide = least_steps_candidates},
        {.name = "hierarchical", .file = "verifier/synth/search/hierarchical.cpp", .what = "exact phases on one box and one rail, composed",
         .provide = hierarchical_candidates},
        {.name = "constructions for time", .file = "verifier/constructions/compose/allreduce.cpp",
         .what = "hierarchical and flat allreduce, reduce-scatter and allgather in pieces (compose::every_shape)", .provide = composed_candidates},
        {.name = "nvls", .file = "verifier/constructions/compose/nvls.cpp", .what = "NVLS through switches that reduce and multicast: collsched's forms and NCCL's",
         .provide = nvls_candidates},
        {.name = "sharp", .file = "verifier/time/sharp_candidates.cpp", .what = "SHARP across the boxes: collsched's allreduce and NCCL's CollNet",
         .provide = sharp_candidates},
        {.name = "pipelined rings", .file = "verifier/time/rooted_rings.cpp", .what = "broadcast and reduce on NCCL's rings, pipelined in pieces",
         .provide = rooted_ring_candidates},
        {.name = "library", .file = "schedules/catalog.json", .what = "the library's schedules for this machine (library_provider, objective.hpp)",
         .library = true},
        {.name = "link trees", .file = "verifier/constructions/compose/box_links.cpp",
         .what = "allgather on boxes joined by links between their GPUs: a tree per chunk over the least loaded link, C = 1, 4, 16, 64, 256 chunks",
         .provide = box_link_candidates},
    };
}

/// NCCL's algorithms (verifier/constructions/nccl), each `compare nccl:NAME`; the row `nccl` (`compare nccl:*`) builds those that
/// run the collective on the machine, as NCCL chooses them: the time objective's baseline.
std::vector<Construction> nccl_rows() {
    const std::string trees = "verifier/constructions/nccl/nccl_trees.cpp";
    return {
        {.name = "nccl", .file = "verifier/constructions/nccl/nccl.cpp", .what = "NCCL's algorithms generated for the machine: rings, trees, PAT, p2p",
         .provide = nccl_candidates, .first = true, .nccl = "*"},
        {.name = "nccl ring", .file = "verifier/constructions/nccl/nccl_rings.cpp", .what = "NCCL's rings, one per channel (broadcast and reduce: at each chunk count)",
         .nccl = "ring"},
        {.name = "nccl tree", .file = trees, .what = "NCCL's double binary tree across boxes, a chain in each", .nccl = "tree"},
        {.name = "nccl pat", .file = trees, .what = "NCCL's PAT: log2 P rounds of doubling distances, one GPU per box", .nccl = "pat"},
        {.name = "nccl p2p", .file = trees, .what = "NCCL's alltoall: grouped send/recv, other rails through PXN", .nccl = "p2p"},
    };
}

}  // namespace

const std::vector<Construction>& constructions() {
    static const std::vector<Construction> rows = [] {
        std::vector<Construction> r = step_rows();
        for (std::vector<Construction> part : {time_rows(), nccl_rows()}) std::ranges::move(part, std::back_inserter(r));
        return r;
    }();
    return rows;
}

std::vector<NamedProvider> construction_providers() {
    std::vector<NamedProvider> r;
    for (const Construction& c : constructions())
        if (c.provide && c.nccl.empty()) r.push_back({c.name, c.provide, c.first});
    return r;
}

NamedProvider nccl_provider() {
    const auto& rows = constructions();
    const auto it = std::ranges::find_if(rows, [](const Construction& c) { return c.nccl == "*"; });
    COLLSCHED_ASSERT(it != rows.end());
    return {it->name, it->provide, it->first, true};
}

std::vector<nccl::Baseline> compare_nccl(const std::string& name, std::shared_ptr<const Topology> topo, const Collective& coll, const Model& model,
                                         const nccl::BaselineOptions& o) {
    const std::string algorithm = name.substr(0, name.find(' '));
    const auto& rows = constructions();
    const bool row = std::ranges::any_of(rows, [&](const Construction& c) { return !c.nccl.empty() && c.nccl == algorithm; });
    if (row && algorithm == "*") return nccl::nccl_baselines(std::move(topo), coll, model, 0, o);
    std::vector<nccl::Baseline> r;
    r.push_back(nccl::nccl_baseline(std::move(topo), coll, model, name, 0, o));  // InputError: not one NCCL runs here
    COLLSCHED_ASSERT_MSG(row, "nccl:" + name + " has no row in the constructions' registry");
    return r;
}

std::vector<NamedProvider> time_providers(const std::string& catalog, const MemoryBudget& memory) {
    std::vector<NamedProvider> r;
    for (const Construction& c : constructions())
        if (c.library) r.push_back(library_provider(catalog, memory));
        else if (c.provide) r.push_back({c.name, c.provide, c.first, !c.nccl.empty()});
    return r;
}

std::optional<SynthInstance> with_chunks(const SynthInstance& in, std::uint32_t chunks) {
    SynthInstance x = in;
    x.rounds.reset();
    try {
        x.collective.set_chunks(chunks, *x.topology, false);
    } catch (const InputError&) {
        return std::nullopt;
    }
    return x;
}

std::uint64_t rough_transfers(CollectiveKind k, std::uint64_t P, std::uint64_t C) {
    switch (k) {
        case CollectiveKind::allreduce: return 2 * (P - 1) * C;
        case CollectiveKind::reduce_scatter: return (P - 1) * C;
        default: return P * (P - 1) * C;
    }
}

Clock::time_point share_until(const CandidateQuery& q, double cap, double share) {
    return std::min(Deadline::at(q.deadline).share(share).when(), Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cap)));
}

}  // namespace collsched
