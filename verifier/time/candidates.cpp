// The schedules the time objective chooses from: collsched's constructions, verified.
#include "verifier/time/candidates.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/table/duality.hpp"
#include "support/error.hpp"
#include "support/parallel.hpp"
#include "support/trace.hpp"
#include "verifier/baselines/nccl.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/compose/allreduce.hpp"
#include "verifier/compose/nvls.hpp"
#include "verifier/synth/bounds/bandwidth.hpp"
#include "verifier/synth/constructions/greedy.hpp"
#include "verifier/synth/search/hierarchical.hpp"
#include "verifier/time/rooted_rings.hpp"
#include "verifier/time/sharp_candidates.hpp"
#include "verifier/synth/constructions/tree_packing.hpp"

namespace collsched {

namespace {

/// The instance with C chunks, or nullopt when C is not taken (too many messages).
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

/// Transfers a chunk count costs roughly (to keep tables small): a chunk of every datum to every
/// processor, or 2(P-1) per chunk for a reduction on rings.
std::uint64_t rough_transfers(CollectiveKind k, std::uint64_t P, std::uint64_t C) {
    switch (k) {
        case CollectiveKind::allreduce: return 2 * (P - 1) * C;
        case CollectiveKind::reduce_scatter: return (P - 1) * C;
        default: return P * (P - 1) * C;
    }
}

constexpr std::uint64_t max_transfers = std::uint64_t{1} << 19;

/// When a provider's step stops: at most `cap` seconds and `share` of the time left before the
/// query's deadline. Under a short --timeout or on a large machine the providers first in line
/// took all of it and those after them (the constructions for time, NCCL's algorithms) did not
/// run: on 1,024 GPUs the hierarchical synthesis took its 20 s of a 60 s limit.
Clock::time_point until(const CandidateQuery& q, double cap, double share) {
    return std::min(Deadline::at(q.deadline).share(share).when(), Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cap)));
}

/// NCCL's ring algorithms on k rings (verifier/synth/constructions/rings.cpp) at C = base, 2 base, ...:
/// few chunks pay fewer latencies, many pipeline better; the time decides between them.
void rings(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    const CollectiveKind k = q.instance.collective.kind;
    if (k != CollectiveKind::allgather && k != CollectiveKind::allreduce && k != CollectiveKind::reduce_scatter) return;
    const std::uint32_t P = q.instance.topology->processors();
    const std::uint32_t base = k == CollectiveKind::reduce_scatter ? P : 1;
    std::size_t found = 0;
    // at most 6 s and 40 % of the time left: under a short --timeout the rings took all of it, and the providers after
    // them (NCCL's algorithms among them) were not run
    const Clock::time_point stop = until(q, 6, 0.2);
    for (std::uint64_t C = base; C <= 4096 && rough_transfers(k, P, C) <= max_transfers && Clock::now() < stop; C *= 4) {
        auto x = with_chunks(q.instance, static_cast<std::uint32_t>(C));
        if (!x) break;
        auto r = ring_schedule(*x, stop);
        if (!r) break;
        out.push_back({fmt::format("rings C={}", C), r->source, "rings", false, std::make_shared<const SendTable>(std::move(r->table))});
        ++found;
    }
    if (!found) notes.push_back("rings: none (no Hamiltonian cycles found, routers, or a model the rings do not take)");
}

/// Tree packings (verifier/synth/constructions/tree_packing.cpp) at the chunk counts the cut suggests, each its
/// own candidate; reduce_scatter as the allgather's packing reversed.
void packings(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
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
    const Clock::time_point stop = until(q, 10, 0.25);
    for (std::uint32_t C : counts) {
        if (Clock::now() >= stop || rough_transfers(CollectiveKind::allgather, P, C) > max_transfers) continue;
        PackingOptions po;
        po.target = b->rounds_per_chunk;
        po.outside = outside;
        po.chunks = {C};
        po.seconds = std::max(0.5, std::chrono::duration<double>(stop - Clock::now()).count());
        auto p = pack_trees(build, po);
        if (!p) continue;
        SendTable table = reverse ? reduce_scatter_from_allgather(p->table) : std::move(p->table);
        out.push_back({fmt::format("tree packing C={}", table.collective.chunks),
                       fmt::format("{}{} (R/C = {}, bound {}; verifier/synth/constructions/tree_packing.cpp)", reverse ? "the reversal of the allgather's " : "",
                                   p->method, p->rounds_per_chunk().text(), b->rounds_per_chunk.text()),
                       "packing", false, std::make_shared<const SendTable>(std::move(table))});
    }
}

/// The known schedule of least steps with one chunk (optimize's upper bound): the latency end.
void least_steps(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    auto x = with_chunks(q.instance, q.instance.collective.kind == CollectiveKind::reduce_scatter ? q.instance.topology->processors() : 1);
    if (!x) return;
    if (x->collective.row().has_partials()) return;  // reductions: the rings and the library cover them
    try {
        auto r = known_schedule(*x, true, until(q, 5, 0.1));
        if (r) out.push_back({"least steps C=1", r->source, "least steps", false, std::make_shared<const SendTable>(std::move(r->table))});
    } catch (const InputError& e) {
        notes.push_back(fmt::format("least steps: {}", e.what()));
    }
    if (!greedy_problem(*x).empty()) return;
    GreedyOptions go;
    go.deadline = Deadline::at(until(q, 10, 0.1));
    GreedyResult g = greedy_synthesize(*x, go);
    if (g.table) out.push_back({"greedy C=1", g.source, "greedy", false, std::make_shared<const SendTable>(std::move(*g.table))});
    else notes.push_back("greedy: " + g.reason);
}

/// The hierarchical composition of exact phases on one box and one rail (verifier/synth/search/hierarchical.hpp):
/// each datum crosses between the boxes once, over the fastest path it has; one chunk.
void hierarchical(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    auto x = with_chunks(q.instance, q.instance.collective.kind == CollectiveKind::reduce_scatter ? q.instance.topology->processors() : 1);
    if (!x) return;
    if (std::string why = hierarchical_problem(*x); !why.empty()) {
        notes.push_back("hierarchical: " + why);
        return;
    }
    HierarchicalOptions ho;
    const Clock::time_point stop = until(q, 20, 0.2);
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

/// The constructions for time (verifier/compose/allreduce.hpp): hierarchical and flat
/// allreduce, reduce-scatter and allgather pipelined in pieces, the pieces chosen per size; each
/// size asked for may choose other pieces, so every size's fastest shapes are kept.
void composed(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    std::vector<double> sizes = q.sizes;
    if (sizes.empty()) sizes.push_back(1 << 20);
    // unchecked here: gather_candidates checks the tables that can win
    for (compose::Candidate& c : compose::time_candidates(q.instance, sizes, q.deadline, false, q.cores ? q.borrow : q.jobs, q.cores))
        out.push_back({c.name, c.how, "constructions for time", false, std::make_shared<const SendTable>(std::move(c.table)), std::move(c.plan),
                       std::move(c.seconds)});
    if (Clock::now() >= q.deadline) notes.push_back("constructions for time: the time limit came before every shape and piece count was tried");
}

/// NVLS on machines whose switches reduce and multicast (verifier/compose/nvls.hpp): collsched's
/// form (the owner's own share stays home) and NCCL's (its NVLS algorithm as it runs: the owner's
/// share through the switch too), the latter one of NCCL's algorithms.
void nvls(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    const auto& t = q.instance.topology;
    const CollectiveKind k = q.instance.collective.kind;
    if (k != CollectiveKind::allreduce && k != CollectiveKind::allgather && k != CollectiveKind::reduce_scatter) return;
    std::vector<compose::NvlsBox> boxes;
    try {
        boxes = compose::nvls_boxes(*t);
    } catch (const InputError&) {
        return;  // no switch that reduces and multicasts: nothing to say
    }
    if (boxes.empty()) return;
    const std::uint32_t per_box = static_cast<std::uint32_t>(boxes.front().gpus.size());
    std::map<std::uint32_t, bool> tried;
    // per size the pieces that keep a chunk at 64, 16 and 4 KiB or more: the time model picks
    std::vector<std::uint32_t> counts;
    for (double size : q.sizes.empty() ? std::vector<double>{1 << 20} : q.sizes)
        for (double floor : {65536.0, 16384.0, 4096.0}) counts.push_back(compose::nvls_pieces_for_size(per_box, size, floor));
    for (std::uint32_t pieces : counts) {
        compose::NvlsPlan plan;
        plan.pieces = pieces;
        if (tried[plan.pieces]) continue;
        tried[plan.pieces] = true;
        auto add = [&](std::string name, bool nccl, SendTable table) {
            out.push_back({fmt::format("{}, {} piece{}", name, plan.pieces, plan.pieces == 1 ? "" : "s"), "verifier/compose/nvls.hpp", nccl ? "nccl" : "nvls", nccl,
                           std::make_shared<const SendTable>(std::move(table))});
        };
        try {
            if (boxes.size() > 1) {
                if (k == CollectiveKind::allreduce) {
                    add("nvls + rail rings", false, compose::nvls_rail_allreduce(t, plan));
                    add("nccl nvls_tree", true, compose::nvls_tree_allreduce(t, plan));
                }
                continue;
            }
            if (k == CollectiveKind::allreduce) {
                add("nvls", false, compose::nvls_allreduce(t, plan));
                compose::NvlsPlan direct = plan;
                direct.direct_period = compose::nvls_direct_period(*t);
                if (direct.direct_period) add("nvls + direct pieces", false, compose::nvls_allreduce(t, direct));
                compose::NvlsPlan theirs = plan;
                theirs.owner_through_switch = true;
                add("nccl nvls", true, compose::nvls_allreduce(t, theirs));
            } else if (k == CollectiveKind::allgather) {
                add("nvls", false, compose::nvls_allgather(t, plan));
            } else {
                add("nvls", false, compose::nvls_reduce_scatter(t, plan));
            }
        } catch (const InputError& e) {
            notes.push_back(fmt::format("nvls: {}", e.what()));
            return;
        }
    }
}

/// The candidate's times at the query's size s by its plan (both kinds), into c.seconds[s] and c.other[s]. A provider
/// that predicted its own table asynchronously at every size (no --link, the table's topology and model the query's)
/// handed those times over (`given`; NaN at a size it did not predict): the same run, not made again; the synchronous
/// time is one pass.
void time_at_size(TimeCandidate& c, const std::vector<double>& given, const CandidateQuery& q, std::size_t s) {
    const TimeOptions at{q.sizes[s], q.link};
    TimePrediction p;
    if (!given.empty() && !std::isnan(given[s])) p.asynchronous = given[s], p.synchronous = c.plan->synchronous(at);
    else p = c.plan->predict(at);
    c.seconds[s] = q.time == TimeKind::asynchronous ? p.asynchronous : p.synchronous;
    c.other[s] = q.time == TimeKind::asynchronous ? p.synchronous : p.asynchronous;
}

/// Every table raw[which[x]] at every size (time_at_size with given[x]), each prediction on its own, on q.jobs
/// threads (the times do not depend on them); per table the seconds its predictions took, or a negative number
/// when some prediction of it was not started before `until` (the table is then not timed). The smaller tables go
/// first, so that a limit leaves out the largest (NCCL's ring allgather on 1,024 GPUs, 9.4 million transfers, took
/// 34 s at five sizes, 18 s past a 60 s --timeout).
std::vector<double> time_all(std::vector<TimeCandidate>& raw, const std::vector<std::size_t>& which, const std::vector<std::vector<double>>& given,
                             const CandidateQuery& q, std::size_t largest, Deadline until) {
    const std::size_t S = q.sizes.size();
    std::vector<std::size_t> order(which.size());
    for (std::size_t x = 0; x < order.size(); ++x) order[x] = x;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return raw[which[a]].plan->transfers() < raw[which[b]].plan->transfers(); });
    std::vector<double> took(which.size() * S, 0.0), per(which.size(), 0.0);
    run_indexed(which.size() * S, prediction_threads(q.jobs, largest), [&](std::size_t k) {
        const std::size_t x = order[k / S];
        if (until.passed()) {
            took[x * S + k % S] = -1;
            return true;
        }
        const auto t0 = Clock::now();
        time_at_size(raw[which[x]], given[x], q, k % S);
        took[x * S + k % S] = std::chrono::duration<double>(Clock::now() - t0).count();
        return true;
    });
    for (std::size_t k = 0; k < took.size(); ++k) per[k / S] = per[k / S] < 0 || took[k] < 0 ? -1 : per[k / S] + took[k];
    return per;
}

}  // namespace

std::vector<NamedProvider> construction_providers() {
    return {{"rings", rings}, {"tree packing", packings}, {"least steps", least_steps}, {"hierarchical", hierarchical},
            {"constructions for time", composed}, {"nvls", nvls}, {"sharp", sharp_candidates}, {"pipelined rings", rooted_ring_candidates}};
}

NamedProvider nccl_provider() {
    return {"nccl", [](const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
                nccl::BaselineOptions o;
                o.deadline = Deadline::at(q.deadline);  // they were built after the time limit (12 s past --timeout 5 on 128 GPUs)
                std::vector<std::string> unbuilt;  // "ring: why" (its ring allreduce on 1,024 GPUs: more chunks than message ids hold)
                for (nccl::Baseline& b : nccl::nccl_baselines(q.instance.topology, q.instance.collective, q.instance.model, 0, o, &unbuilt))
                    out.push_back({"nccl " + b.name, b.source, "nccl", true, std::make_shared<const SendTable>(std::move(b.table))});
                for (const std::string& u : unbuilt) notes.push_back("nccl " + u);
            },
            true};
}

namespace {

/// Runs every provider into `raw`; per provider its first candidate (`from`) and its seconds (`took`). Every provider
/// holds the query's deadline: one is not started once it has passed, one a limit stops keeps the tables it had (the
/// NCCL baselines and the checks ran after optimize --size's --timeout). The providers have 80 % of the time left,
/// the timing and checks of their tables the rest. They run at once on q.jobs threads (each into its own list, joined
/// in the providers' order: the same tables and notes as one after the other).
void run_providers(const CandidateQuery& q, const std::vector<NamedProvider>& providers, std::vector<TimeCandidate>& raw,
                   std::vector<std::size_t>& from, std::vector<double>& took, std::vector<std::string>& notes) {
    CandidateQuery build = q;
    build.deadline = Deadline::at(q.deadline).share(0.8).when();
    const std::size_t n = providers.size();
    // each provider's own threads (the constructions' shapes and predictions) share what the providers at once leave:
    // no more threads than --jobs (more would slow every provider, and the rings' and packings' steps stop at a fixed
    // number of seconds: under load the rings' last table was cut)
    const unsigned outer = static_cast<unsigned>(std::clamp<std::size_t>(n, 1, std::max(q.jobs, 1u)));
    build.jobs = std::max(1u, q.jobs / outer);
    Cores cores(std::max(q.jobs, 1u));
    build.cores = &cores;
    build.borrow = std::max(1u, q.jobs);
    std::vector<std::vector<TimeCandidate>> outs(n);
    std::vector<std::vector<std::string>> said(n);
    std::vector<double> seconds(n, 0.0);
    // started in this order: the providers marked `first` (NCCL's algorithms) before the others
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::ranges::stable_partition(order, [&](std::size_t p) { return providers[p].first; });
    run_indexed(n, outer, [&](std::size_t x) {
        const std::size_t i = order[x];
        const NamedProvider& p = providers[i];
        const Cores::Held core(&cores);
        const auto t0 = Clock::now();
        trace("provider {}: start", p.name);
        try {
            if (Clock::now() >= build.deadline) said[i].push_back(fmt::format("{}: not run (the time limit came first)", p.name));
            else p.provide(build, outs[i], said[i]);
        } catch (const InputError& e) {
            said[i].push_back(fmt::format("{}: {}", p.name, e.what()));
        } catch (const LimitReached& e) {
            said[i].push_back(fmt::format("{}: stopped by the time limit ({})", p.name, e.what()));
        }
        seconds[i] = std::chrono::duration<double>(Clock::now() - t0).count();
        trace("provider {}: {} tables in {:.2f} s", p.name, outs[i].size(), seconds[i]);
        return true;
    });
    for (std::size_t i = 0; i < n; ++i) {
        from.push_back(raw.size());
        for (TimeCandidate& c : outs[i]) raw.push_back(std::move(c));
        for (std::string& x : said[i]) notes.push_back(std::move(x));
        took.push_back(seconds[i]);
    }
}

/// Per provider: its tables and the seconds it took to build, verify and time them; then the tables left unchecked.
void provider_notes(const std::vector<NamedProvider>& providers, const std::vector<std::size_t>& from, std::size_t tables,
                    const std::array<std::vector<double>, 3>& seconds, const std::vector<std::string>& unchecked, std::vector<std::string>& notes) {
    for (std::size_t p = 0; p < providers.size(); ++p) {
        const std::size_t n = (p + 1 < from.size() ? from[p + 1] : tables) - from[p];
        notes.push_back(fmt::format("{}: {} table{} built in {:.2f} s, verified in {:.2f} s (timed in {:.2f} s)", providers[p].name, n,
                                    n == 1 ? "" : "s", seconds[0][p], seconds[1][p], seconds[2][p]));
    }
    if (!unchecked.empty())
        notes.push_back(fmt::format("not checked, slower at every size than a table that holds (by more than a near tie): {}", fmt::join(unchecked, "; ")));
}

}  // namespace

namespace {

enum class Planned : char { skip, ok, late, broken, deferred, memory };

/// A timing plan and one prediction hold about this many bytes per transfer (a plan of NCCL's ring allgather on 1,024
/// GPUs, 9.4 million transfers, took 720 MB; a prediction 160 bytes per transfer, prediction_threads).
constexpr std::uint64_t plan_bytes_per_transfer = 80 + 160;

/// The plan of one table (re-stamped with the query's topology and model first unless `same`), within `timing`; a
/// table of the second phase only when its plan and a prediction fit in what is left of the memory budget (on 1,024
/// GPUs through routers NCCL's ring allgather's plan took the run past it).
Planned plan_one(TimeCandidate& c, const CandidateQuery& q, bool same, Deadline timing) {
    if (!same) {
        c.plan.reset();
        SendTable t = *c.table;
        t.topology = q.instance.topology;
        t.model = q.instance.model;
        c.table = std::make_shared<const SendTable>(std::move(t));
    }
    if (!c.plan && c.table->transfers.size() > q.large_table && !MemoryBudget::standard().fits(c.table->transfers.size() * plan_bytes_per_transfer))
        return Planned::memory;
    try {
        if (!c.plan) c.plan.emplace(*c.table, timing);
    } catch (const LimitReached&) {
        return Planned::late;
    } catch (const InputError&) {  // not causal: it does not hold
        return Planned::broken;
    }
    return Planned::ok;
}

/// plan_one for a table of the second phase, its seconds added to `took`; false (the table freed, a note why) when it
/// is not planned.
bool plan_late(TimeCandidate& c, const CandidateQuery& q, bool same, Deadline timing, std::vector<std::string>& notes, double& took) {
    const auto t0 = Clock::now();
    const Planned p = plan_one(c, q, same, timing);
    took += std::chrono::duration<double>(Clock::now() - t0).count();
    if (p == Planned::ok) return true;
    notes.push_back(p == Planned::memory ? fmt::format("{} ({}): not timed, its timing plan and a prediction need about {}, more than the memory "
                                                       "budget leaves (COLLSCHED_MAX_MEMORY_MB), left out",
                                                       c.name, c.provider, format_bytes(c.table->transfers.size() * plan_bytes_per_transfer))
                    : p == Planned::late ? fmt::format("{} ({}): not timed before the time limit, left out", c.name, c.provider)
                                         : fmt::format("{} ({}): does not hold under {}, left out", c.name, c.provider, to_string(q.instance.model)));
    c.table.reset(), c.plan.reset();
    return false;
}

/// The timing plans of the tables the providers did not plan, but those of more than q.large_table transfers (deferred
/// to the second phase), each on its own thread (of q.jobs; what is built does not depend on them): per table whether
/// it is planned (skip: another collective), whether it already had the query's topology and model (`same`: its
/// provider's times hold), and the seconds its plan took.
std::vector<Planned> plan_all(std::vector<TimeCandidate>& raw, const CandidateQuery& q, Deadline timing, std::vector<char>& same,
                              std::vector<double>& planning) {
    std::vector<Planned> planned(raw.size(), Planned::skip);
    same.assign(raw.size(), 0);
    planning.assign(raw.size(), 0.0);
    std::size_t most = 0;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        TimeCandidate& c = raw[i];
        if (c.table->collective.kind != q.instance.collective.kind || c.table->collective.root != q.instance.collective.root) continue;
        // a plan the provider built is the table's own when the table already has the instance's topology and model
        same[i] = c.table->topology == q.instance.topology && c.table->model == q.instance.model;
        planned[i] = c.table->transfers.size() > q.large_table && !(same[i] && c.plan) ? Planned::deferred : Planned::ok;
        if (planned[i] == Planned::ok) most = std::max(most, c.table->transfers.size());
    }
    run_indexed(raw.size(), prediction_threads(q.jobs, most), [&](std::size_t i) {
        TimeCandidate& c = raw[i];
        if (planned[i] != Planned::ok) return true;
        const auto t0 = Clock::now();
        planned[i] = plan_one(c, q, same[i], timing);
        planning[i] = std::chrono::duration<double>(Clock::now() - t0).count();
        return true;
    });
    return planned;
}

/// A direct check that stops at `limit` and at the memory budget.
VerifyOptions within(Deadline limit) {
    VerifyOptions vo;
    vo.deadline = limit;
    vo.memory_limit = true;
    return vo;
}

/// Which limit stopped a direct check ("time limit", "memory limit"): the note it ends with.
std::string limit_of(const VerifyReport& r) {
    return r.notes.empty() ? std::string("limits") : r.notes.back().substr(0, r.notes.back().find(':'));
}

}  // namespace

std::vector<TimeCandidate> gather_candidates(const CandidateQuery& q, const std::vector<NamedProvider>& providers, std::vector<std::string>& notes,
                                             std::vector<TimeCandidate>* unchecked_out) {
    std::vector<TimeCandidate> raw;
    std::vector<std::size_t> from;  // per provider, its first candidate
    std::vector<double> took;
    run_providers(q, providers, raw, from, took, notes);
    // Every table timed (its plan built once: the comparison reuses it) in 80 % of the time left, then checked where it can decide.
    const Deadline limit = Deadline::at(q.deadline), timing = Deadline::at(limit.share(0.8).when());
    std::vector<double> timed(providers.size(), 0.0), verify(providers.size(), 0.0);
    auto provider_of = [&](std::size_t i) { return static_cast<std::size_t>(std::upper_bound(from.begin(), from.end(), i) - from.begin()) - 1; };
    struct Timed {
        std::size_t raw;
        std::vector<double> seconds;  // by the query's time, per size
        int verdict = 0;              // 0 not checked, 1 holds, -1 left out
    };
    std::vector<Timed> ts;
    std::vector<std::vector<double>> given;  // per timed table: the times its provider predicted (empty: none)
    std::map<std::string, int> names;
    const std::size_t S = q.sizes.size();
    std::size_t largest = 0;
    std::vector<char> same;
    std::vector<double> planning;
    const std::vector<Planned> planned = plan_all(raw, q, timing, same, planning);
    for (std::size_t i = 0; i < raw.size(); ++i) {
        TimeCandidate& c = raw[i];
        const auto t0 = Clock::now();
        if (planned[i] == Planned::skip) continue;
        timed[provider_of(i)] += planning[i];
        if (planned[i] == Planned::late) {
            notes.push_back(fmt::format("{} ({}): not timed before the time limit, left out", c.name, c.provider));
            continue;
        }
        if (planned[i] == Planned::broken) {
            notes.push_back(fmt::format("{} ({}): does not hold under {}, left out", c.name, c.provider, to_string(q.instance.model)));
            continue;
        }
        given.push_back(same[i] && !q.link && c.seconds.size() == S ? std::move(c.seconds) : std::vector<double>{});
        c.seconds.assign(S, 0.0), c.other.assign(S, 0.0);
        largest = std::max(largest, c.table->transfers.size());
        trace("timing plan of {} ({}): {} transfers{}", c.name, c.provider, c.table->transfers.size(),
              planned[i] == Planned::deferred ? " (deferred to the second phase)" : "");
        if (int n = names[c.name]++; n > 0) c.name += fmt::format(" ({})", n + 1);
        ts.push_back(Timed{i, {}, 0});
        timed[provider_of(i)] += std::chrono::duration<double>(Clock::now() - t0).count();
    }
    // Two phases (candidates.hpp): the tables of at most 2^22 transfers timed and the fastest checked, then the larger,
    // planned only then (one at a time: each plan and its predictions may take a gigabyte).
    std::vector<char> done(ts.size(), 0);  // 1 timed, -1 left out
    auto time_phase = [&](bool big) {
        std::vector<std::size_t> xs, which;
        std::vector<std::vector<double>> gs;
        for (std::size_t x = 0; x < ts.size(); ++x) {
            TimeCandidate& c = raw[ts[x].raw];
            if (done[x] != 0 || (c.table->transfers.size() > q.large_table) != big) continue;  // not the first phase's (their plans may be freed)
            if (c.plan || plan_late(c, q, same[ts[x].raw], timing, notes, timed[provider_of(ts[x].raw)]))
                xs.push_back(x), which.push_back(ts[x].raw), gs.push_back(std::move(given[x]));
            else
                done[x] = -1;
        }
        if (xs.empty()) return false;
        const std::vector<double> predicting = time_all(raw, which, gs, q, largest, timing);
        for (std::size_t k = 0; k < xs.size(); ++k) {
            Timed& t = ts[xs[k]];
            TimeCandidate& c = raw[t.raw];
            if (predicting[k] < 0) {
                notes.push_back(fmt::format("{} ({}): not timed at every size before the time limit, left out", c.name, c.provider));
                c.table.reset(), c.plan.reset();
                done[xs[k]] = -1;
                continue;
            }
            t.seconds = c.seconds, timed[provider_of(t.raw)] += predicting[k];
            done[xs[k]] = 1;
        }
        return true;
    };
    auto holds = [&](Timed& x) {
        if (x.verdict != 0) return x.verdict > 0;
        const TimeCandidate& c = raw[x.raw];
        const auto t0 = Clock::now();
        const VerifyReport r = verify_direct(*c.table, within(limit));
        trace("checked {} ({}): {}", c.name, c.provider, r.verdict());
        verify[provider_of(x.raw)] += std::chrono::duration<double>(Clock::now() - t0).count();
        x.verdict = r.holds() ? 1 : -1;
        if (r.verdict() == "unknown") notes.push_back(fmt::format("{} ({}): not verified within the {}, left out", c.name, c.provider, limit_of(r)));
        else if (!r.holds()) notes.push_back(fmt::format("{} ({}): does not hold under {}, left out", c.name, c.provider, to_string(q.instance.model)));
        return x.verdict > 0;
    };
    // At each size, by time: the fastest that holds and every one within 1 + 1e-9 of the slowest kept so far (compare()'s
    // winner is the first of the near ties, within 1e-12; a table past such a gap never changes it); the same among NCCL's.
    auto check_fastest = [&] {
        for (std::size_t s = 0; s < q.sizes.size(); ++s)
            for (bool nccl_only : {false, true}) {
                std::vector<std::size_t> order;
                for (std::size_t k = 0; k < ts.size(); ++k)
                    if (done[k] > 0 && (!nccl_only || raw[ts[k].raw].nccl)) order.push_back(k);
                std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ts[a].seconds[s] < ts[b].seconds[s]; });
                double top = -1;
                for (std::size_t k : order) {
                    if (top >= 0 && ts[k].seconds[s] > top * (1 + 1e-9)) break;
                    if (holds(ts[k])) top = std::max(top, ts[k].seconds[s]);
                }
            }
    };
    if (time_phase(false)) check_fastest();
    if (time_phase(true)) check_fastest();
    std::vector<TimeCandidate> kept;
    std::vector<std::string> unchecked;
    for (std::size_t x = 0; x < ts.size(); ++x) {
        TimeCandidate& c = raw[ts[x].raw];
        if (done[x] > 0 && ts[x].verdict == 0) {
            unchecked.push_back(c.name);
            c.table.reset(), c.plan.reset();
            if (unchecked_out) unchecked_out->push_back(std::move(c));
        }
        if (done[x] > 0 && ts[x].verdict > 0) kept.push_back(std::move(c));
    }
    provider_notes(providers, from, raw.size(), {took, verify, timed}, unchecked, notes);
    return kept;
}

double candidate_seconds(const SendTable& t, double size, const std::optional<LinkSpeed>& link, bool synchronous) {
    const TimeOptions opt{size, link};
    return synchronous ? synchronous_time(t, opt) : predict_time(t, opt).asynchronous;
}

}  // namespace collsched
