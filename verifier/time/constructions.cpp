// The registry of collsched's constructions (constructions.hpp): one row each, and the views the objectives read.
#include "verifier/time/constructions.hpp"

#include <algorithm>

#include "support/error.hpp"
#include "verifier/baselines/nccl.hpp"
#include "verifier/synth/constructions/known.hpp"
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

/// The time objective's rows, in the order its providers run and its notes list them.
std::vector<Construction> time_rows() {
    return {
        {"rings", "verifier/synth/constructions/rings.cpp", Use::time, "NCCL's ring algorithms on k rings, C = 1, 4, 16, ... chunks", ring_candidates},
        {"tree packing", "verifier/synth/constructions/tree_packing.cpp", Use::time, "tree packings at the chunk counts the cut suggests",
         packing_candidates},
        {"least steps", "verifier/synth/constructions/known.cpp", Use::time, "the known schedule of least steps and the greedy, one chunk",
         least_steps_candidates},
        {"hierarchical", "verifier/synth/search/hierarchical.cpp", Use::time, "exact phases on one box and one rail, composed",
         hierarchical_candidates},
        {"constructions for time", "verifier/compose/allreduce.cpp", Use::time,
         "hierarchical and flat allreduce, reduce-scatter and allgather in pieces (compose::every_shape)", composed_candidates},
        {"nvls", "verifier/compose/nvls.cpp", Use::time, "NVLS through switches that reduce and multicast: collsched's forms and NCCL's",
         nvls_candidates},
        {"sharp", "verifier/time/sharp_candidates.cpp", Use::time, "SHARP across the boxes: collsched's allreduce and NCCL's CollNet",
         sharp_candidates},
        {"pipelined rings", "verifier/time/rooted_rings.cpp", Use::time, "broadcast and reduce on NCCL's rings, pipelined in pieces",
         rooted_ring_candidates},
        {"library", "schedules/catalog.json", Use::library, "the library's schedules for this machine (library_provider, objective.hpp)"},
        {"nccl", "verifier/baselines/nccl.cpp", Use::baseline, "NCCL's algorithms generated for the machine: rings, trees, PAT, p2p", nccl_candidates,
         true},
    };
}

}  // namespace

std::string_view to_string(Use u) {
    switch (u) {
        case Use::steps: return "steps";
        case Use::time: return "time";
        case Use::library: return "library";
        case Use::baseline: return "baseline";
    }
    return "?";
}

const std::vector<Construction>& constructions() {
    static const std::vector<Construction> rows = [] {
        std::vector<Construction> r;
        for (const StepConstruction& s : step_constructions()) r.push_back({s.name, s.file, Use::steps, s.source});
        for (Construction& c : time_rows()) r.push_back(std::move(c));
        return r;
    }();
    return rows;
}

std::vector<NamedProvider> construction_providers() {
    std::vector<NamedProvider> r;
    for (const Construction& c : constructions())
        if (c.use == Use::time) r.push_back({c.name, c.provide, c.first});
    return r;
}

NamedProvider nccl_provider() {
    const auto& rows = constructions();
    const auto it = std::ranges::find_if(rows, [](const Construction& c) { return c.use == Use::baseline; });
    return {it->name, it->provide, it->first, true};
}

std::vector<NamedProvider> time_providers(const std::string& catalog, const MemoryBudget& memory) {
    std::vector<NamedProvider> r;
    for (const Construction& c : constructions())
        if (c.use == Use::library) r.push_back(library_provider(catalog, memory));
        else if (c.use != Use::steps) r.push_back({c.name, c.provide, c.first, c.use == Use::baseline});
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
