// The time objective's candidates from the synthesizer's constructions (synth_candidates.hpp).
#include "verifier/time/synth_candidates.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/table/duality.hpp"
#include "support/error.hpp"
#include "verifier/synth/bounds/bandwidth.hpp"
#include "verifier/constructions/steps/greedy.hpp"
#include "verifier/constructions/steps/tree_packing.hpp"
#include "verifier/synth/search/hierarchical.hpp"
#include "verifier/time/constructions.hpp"

namespace collsched {

/// NCCL's ring algorithms on k rings (verifier/constructions/steps/rings.cpp) at C = base, 2 base, ...:
/// few chunks pay fewer latencies, many pipeline better; the time decides between them.
void ring_candidates(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    const CollectiveKind k = q.instance.collective.kind;
    if (k != CollectiveKind::allgather && k != CollectiveKind::allreduce && k != CollectiveKind::reduce_scatter) return;
    const std::uint32_t P = q.instance.topology->processors();
    const std::uint32_t base = k == CollectiveKind::reduce_scatter ? P : 1;
    std::size_t found = 0;
    // at most 6 s and 40 % of the time left: under a short --timeout the rings took all of it, and the providers after
    // them (NCCL's algorithms among them) were not run
    const Clock::time_point stop = share_until(q, 6, 0.2);
    std::uint64_t C = base;
    for (; C <= 4096 && rough_transfers(k, P, C) <= max_transfers && Clock::now() < stop; C *= 4) {
        auto x = with_chunks(q.instance, static_cast<std::uint32_t>(C));
        if (!x) break;
        auto r = ring_schedule(*x, stop);
        if (!r) break;
        out.push_back({fmt::format("rings C={}", C), r->source, "rings", false, std::make_shared<const SendTable>(std::move(r->table))});
        ++found;
    }
    // what a slow or busy machine leaves out is said: the candidates, and so the answer, may then differ from a
    // faster machine's (a CI runner six times slower than a workstation left out rings C=4096 on 2 x 8 H100)
    if (found && C <= 4096 && rough_transfers(k, P, C) <= max_transfers && Clock::now() >= stop)
        notes.push_back(fmt::format("rings: C={} and more not tried, past this provider's time share (at most 6 s and 20 % of the time left)", C));
    if (!found) notes.push_back("rings: none (no Hamiltonian cycles found, routers, or a model the rings do not take)");
}

/// Tree packings (verifier/constructions/steps/tree_packing.cpp) at the chunk counts the cut suggests, each its
/// own candidate; reduce_scatter as the allgather's packing reversed.
void packing_candidates(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    const CollectiveKind k = q.instance.collective.kind;
    const bool reverse = k == CollectiveKind::reduce_scatter;
    if (k != CollectiveKind::allgather && k != CollectiveKind::broadcast && !reverse) return;
    const Topology& t = *q.instance.topology;
    SynthInstance build = q.instance;
    build.rounds.reset();
    if (reverse) {
        if (!duality_problem(t, q.instance.model).empty()) return;
        build.collective = Collective::parse("allgather", t, false);
    }
    build.collective.set_chunks(1, t, false);
    if (std::string why = packing_problem(build); !why.empty()) {
        notes.push_back("tree packing: " + why);
        return;
    }
    auto b = flow_bandwidth_bound(build);
    if (!b) return;
    const std::uint32_t P = t.processors();
    const std::uint32_t outside = build.collective.kind == CollectiveKind::allgather ? cut_outside(*b, P) : 1;
    // at most five chunk counts, the first and the last four the cut suggests (few chunks pay fewer latencies, many
    // drain less), within 10 s
    std::vector<std::uint32_t> counts = chunks_for(b->rounds_per_chunk, 256, outside, P);
    if (counts.size() > 5) counts.erase(counts.begin() + 1, counts.end() - 4);
    const Clock::time_point stop = share_until(q, 10, 0.25);
    std::vector<std::uint32_t> late;
    for (std::uint32_t C : counts) {
        if (rough_transfers(CollectiveKind::allgather, P, C) > max_transfers) continue;
        if (Clock::now() >= stop) {
            late.push_back(C);
            continue;
        }
        PackingOptions po;
        po.target = b->rounds_per_chunk;
        po.outside = outside;
        po.chunks = {C};
        po.seconds = std::max(0.5, std::chrono::duration<double>(stop - Clock::now()).count());
        auto p = pack_trees(build, po);
        if (!p) continue;
        SendTable table = reverse ? reduce_scatter_from_allgather(p->table) : std::move(p->table);
        out.push_back({fmt::format("tree packing C={}", table.collective.chunks),
                       fmt::format("{}{} (R/C = {}, bound {}; verifier/constructions/steps/tree_packing.cpp)", reverse ? "the reversal of the allgather's " : "",
                                   p->method, p->rounds_per_chunk().text(), b->rounds_per_chunk.text()),
                       "packing", false, std::make_shared<const SendTable>(std::move(table))});
    }
    if (!late.empty())
        notes.push_back(fmt::format("tree packing: C={} not tried, past this provider's time share (at most 10 s and 25 % of the time left)",
                                    fmt::join(late, ", ")));
}

/// The known schedule of least steps with one chunk (optimize's upper bound): the latency end.
void least_steps_candidates(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    auto x = with_chunks(q.instance, q.instance.collective.kind == CollectiveKind::reduce_scatter ? q.instance.topology->processors() : 1);
    if (!x) return;
    if (x->collective.row().has_partials()) return;  // reductions: the rings and the library cover them
    try {
        auto r = known_schedule(*x, constructions(), true, share_until(q, 5, 0.1));
        if (r) out.push_back({"least steps C=1", r->source, "least steps", false, std::make_shared<const SendTable>(std::move(r->table))});
    } catch (const InputError& e) {
        notes.push_back(fmt::format("least steps: {}", e.what()));
    }
    if (!greedy_problem(*x).empty()) return;
    GreedyOptions go;
    go.deadline = Deadline::at(share_until(q, 10, 0.1));
    GreedyResult g = greedy_synthesize(*x, go);
    if (g.table) out.push_back({"greedy C=1", g.source, "greedy", false, std::make_shared<const SendTable>(std::move(*g.table))});
    else notes.push_back("greedy: " + g.reason);
}

/// The hierarchical composition of exact phases on one box and one rail (verifier/synth/search/hierarchical.hpp):
/// each datum crosses between the boxes once, over the fastest path it has; one chunk.
void hierarchical_candidates(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    auto x = with_chunks(q.instance, q.instance.collective.kind == CollectiveKind::reduce_scatter ? q.instance.topology->processors() : 1);
    if (!x) return;
    if (std::string why = hierarchical_problem(*x); !why.empty()) {
        notes.push_back("hierarchical: " + why);
        return;
    }
    HierarchicalOptions ho{OptimizeOptions{constructions()}};
    const Clock::time_point stop = share_until(q, 20, 0.2);
    ho.phase.timeout = std::max(1.0, std::chrono::duration<double>(stop - Clock::now()).count());
    ho.deadline = Deadline::at(stop);
    try {
        HierarchicalResult r = hierarchical_synthesize(*x, ho);
        if (r.table)
            out.push_back({"hierarchical C=" + std::to_string(r.table->collective.chunks), r.source, "hierarchical", false,
                           std::make_shared<const SendTable>(std::move(*r.table))});
        else
            notes.push_back("hierarchical: " + r.reason);
    } catch (const std::runtime_error& e) {  // a limit inside the compaction
        notes.push_back(fmt::format("hierarchical: {}", e.what()));
    }
}

}  // namespace collsched
