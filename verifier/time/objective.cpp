// Time as the objective (verifier/time/objective.hpp), moved from tools/time_objective.cpp (issue 43).
#include "verifier/time/objective.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "compiler/lower/catalog.hpp"
#include "compiler/lower/lower.hpp"
#include "dsl/diagnostics.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/trace.hpp"
#include "verifier/time/constructions.hpp"
#include "verifier/time/nccl_bounds.hpp"

namespace collsched {

namespace {

bool same_machine(const Topology& a, const Topology& b) {
    return a.processors() == b.processors() && a.routers() == b.routers() && std::ranges::equal(a.channels(), b.channels()) &&
           a.groups() == b.groups();
}

std::string stem_of(const std::string& path) {
    std::string s = std::filesystem::path(path).filename().string();
    return s.ends_with(".sched") ? s.substr(0, s.size() - 6) : s;
}

/// A proved bound above a verified schedule's time (either timing) is an internal error.
void check_bounds(const TimeObjective& r) {
    for (std::size_t i = 0; i < r.options.sizes.size(); ++i) {
        const TimeBound b = evaluate(r.bounds, r.options.sizes[i]);
        for (std::size_t c = 0; c < r.candidates.size(); ++c)
            for (double t : {r.comparison.seconds[c][i], r.comparison.other[c][i]}) {
                const std::string bad = bound_violation(b, r.bounds, t, r.candidates[c].name);
                COLLSCHED_ASSERT_MSG(bad.empty(), bad);
            }
    }
}

/// The executor's bound under every verified schedule's two times (on the executor, and NCCL's
/// algorithms on the nccl executor), or the asynchronous one where the bound is for it alone: the same internal
/// error as check_bounds.
void check_executor_bounds(const TimeObjective& r) {
    const bool both = !r.executor_bounds->asynchronous;
    COLLSCHED_ASSERT(both || r.options.time == TimeKind::asynchronous);
    for (std::size_t i = 0; i < r.options.sizes.size(); ++i) {
        const ExecutorBound b = evaluate(*r.executor_bounds, r.options.sizes[i]);
        for (std::size_t c = 0; c < r.candidates.size(); ++c)
            for (double t : {r.comparison.seconds[c][i], both ? r.comparison.other[c][i] : r.comparison.seconds[c][i]}) {
                const std::string bad = bound_violation(b, *r.executor_bounds, t, r.candidates[c].name);
                COLLSCHED_ASSERT_MSG(bad.empty(), bad);
            }
    }
}

/// NCCL's own tables of the run (the nccl provider's and the library's schedules/nccl), a finite set timed on the nccl
/// executor: per size their least time, either timing; nullopt when none was timed.
std::optional<ExecutorExact> nccl_exact(const TimeObjective& r) {
    const std::size_t S = r.options.sizes.size();
    ExecutorExact e{builtin_executor(ExecutorKind::nccl).name, "", r.options.sizes, std::vector<double>(S, std::numeric_limits<double>::infinity()),
                    std::vector<std::string>(S), std::vector<Protocol>(S, Protocol::none)};
    std::size_t n = 0;
    auto take = [&](const std::string& name, const std::vector<double>& a, const std::vector<double>& b, const std::vector<Protocol>& p) {
        ++n;
        for (std::size_t i = 0; i < S; ++i)
            if (const double t = std::min(a[i], b[i]); t < e.seconds[i]) e.seconds[i] = t, e.table[i] = name, e.protocol[i] = p.empty() ? Protocol::none : p[i];
    };
    for (std::size_t c = 0; c < r.candidates.size(); ++c)
        if (r.candidates[c].nccl)
            take(r.candidates[c].name, r.comparison.seconds[c], r.comparison.other[c], r.comparison.protocol.empty() ? std::vector<Protocol>{} : r.comparison.protocol[c]);
    for (const TimeCandidate& u : r.unchecked)
        if (u.nccl) take(u.name, u.seconds, u.other, u.protocols);
    if (n == 0) return std::nullopt;
    e.what = fmt::format("the {} table{} of NCCL's algorithms (its own and the library's schedules/nccl) timed on executor {} as stock NCCL "
                         "runs them, at their times (either timing; "
                         "one left out by a lower bound on its asynchronous time is slower than one of them)",
                         n, n == 1 ? "" : "s", e.executor);
    return e;
}

/// On MSCCL++ or MSCCL the nccl executor times only NCCL's own tables (candidates.hpp basis_of), a finite set timed
/// here: their least time, either timing, is at or below each of theirs, so it stands in the executor's bound beside
/// the executor's own rows, and replaces the nccl executor's rows when `whole` (every one of them was timed, or left
/// out by a lower bound above one of them: gather_candidates' nccl_whole, and no algorithm of NCCL's without a time).
void bound_nccl_exactly(TimeObjective& r, bool whole) {
    if (std::optional<ExecutorExact> e = nccl_exact(r)) bound_exactly(*r.executor_bounds, std::move(*e), whole);
}

/// On executor nccl (verifier/time/OBJECTIVE.md, "The rings of a graph file"): the run's tables are NCCL's own, timed
/// (nccl_exact), and tables NCCL's graph files hold (leave_out_unrun, runs_on_executor). When every table was timed or
/// left out by a bound (`whole`), NCCL's set is whole, and every other table kept is in the rings' crossing family
/// (ring_family_miss; one unchecked or left out by its bound is slower than a kept one), the bound is the least of
/// NCCL's tables' times and the family's rows; else the rows on any table stay alone, and a note says why.
void bound_nccl_rings(TimeObjective& r, bool whole, const RunLimits& limits) {
    const Topology& topo = *r.instance.topology;
    const std::optional<RingFamily> family = ring_family(topo, r.instance.collective.kind);
    if (!family) return;
    const char* any = "the bound on executor nccl holds for any table, not only the rings of a graph file";
    if (!whole) return r.notes.push_back(fmt::format("{}: a table of the run was not timed (a limit, a plan or check that failed), or NCCL's "
                                                     "own set is not whole", any));
    for (const TimeCandidate& c : r.candidates)
        if (std::string miss = c.nccl ? "" : ring_family_miss(*c.table, *family); !miss.empty())
            return r.notes.push_back(fmt::format("{}: {} ({}) is not in their family: {}", any, c.name, c.provider, miss));
    const ExecutorBounds before = *r.executor_bounds;
    std::vector<std::pair<std::string, const SendTable*>> tables;
    for (const TimeCandidate& c : r.candidates)
        if (!c.nccl) tables.emplace_back(c.name, c.table.get());
    try {
        bound_ring_family(*r.executor_bounds, topo, r.instance.model, *r.options.executor, r.options.link, *family, tables, r.notes, limits);
    } catch (const LimitReached& e) {
        return r.notes.push_back(fmt::format("{}: the rings' cuts not computed ({})", any, e.what()));
    }
    bound_nccl_exactly(r, false);
    // an unchecked table is slower than a kept one by the query's time; by the other timing too, or the bound stays
    for (const TimeCandidate& u : r.unchecked)
        for (std::size_t i = 0; !u.nccl && i < u.seconds.size() && i < u.other.size(); ++i)
            if (evaluate(*r.executor_bounds, r.options.sizes[i]).seconds >
                (r.executor_bounds->asynchronous ? u.seconds[i] : std::min(u.seconds[i], u.other[i])) * (1 + 1e-9)) {
                *r.executor_bounds = before;
                return r.notes.push_back(fmt::format("{}: {} ({}), unchecked, is not in their family", any, u.name, u.provider));
            }
}

/// The executors the run's times are taken on: --executor's, and the nccl executor's built-in model
/// where NCCL's own algorithms are timed on it beside MSCCL++ or MSCCL tables (candidates.hpp basis_of).
std::vector<ExecutorModel> timed_executors(const TimeObjectiveOptions& options) {
    std::vector<ExecutorModel> out;
    if (!options.executor || options.executor->kind == ExecutorKind::ideal) return out;
    out.push_back(*options.executor);
    if (options.executor->kind == ExecutorKind::mscclpp || options.executor->kind == ExecutorKind::msccl)
        out.push_back(builtin_executor(ExecutorKind::nccl));
    return out;
}

/// NCCL's ring's lower bounds at every size (nccl_bounds.hpp), computed before the providers run:
/// cheap (on 1,024 GPUs 0.1 to 0.5 s), and needed most where the ring's table is not built.
std::optional<NcclUnbuilt> ring_bounds(const SynthInstance& in, const TimeObjectiveOptions& options, Deadline deadline,
                                       std::vector<std::string>& notes) {
    const CollectiveKind k = in.collective.kind;
    // the ring's bound is the ideal model's: on another executor NCCL's ring is timed or left unknown
    if (options.time != TimeKind::asynchronous || (options.executor && options.executor->kind != ExecutorKind::ideal)) return std::nullopt;
    try {
        const auto algorithms = nccl::nccl_algorithms(*in.topology, k);
        if (std::ranges::find(algorithms, nccl::Algorithm::ring) == algorithms.end()) return std::nullopt;
        const nccl::RingRoutes routes = nccl::nccl_ring_routes(*in.topology, k, 0, deadline);
        NcclUnbuilt u{"nccl ring", ""};
        for (double m : options.sizes) {
            TimeOptions o;
            o.size = m;
            o.uniform_unit = options.link;
            RingTimeBound b = nccl_ring_time_bound(*in.topology, in.model, k, routes, o);
            u.lower_bound_s.push_back(b.seconds), u.argument.push_back(std::move(b.argument));
        }
        return u;
    } catch (const InputError&) {
        return std::nullopt;  // not a machine NCCL describes: no NCCL algorithm at all
    } catch (const LimitReached& e) {
        notes.push_back(fmt::format("nccl ring: no lower bound, {}", e.what()));
        return std::nullopt;
    }
}

/// NCCL's algorithms for the collective that have no candidate or unchecked table, with why (the
/// providers' notes) and, for the ring, `ring`'s bounds.
/// NCCL's tables the checker refuted in the run ("nccl tree" from gather_candidates' "nccl tree (nccl): does not hold
/// under ..., left out").
std::vector<std::string> nccl_refuted(const std::vector<std::string>& notes) {
    std::vector<std::string> out;
    for (const std::string& n : notes)
        if (const std::size_t at = n.find(" (nccl): does not hold under "); n.starts_with("nccl ") && at != std::string::npos) out.push_back(n.substr(0, at));
    return out;
}

std::vector<NcclUnbuilt> nccl_without_time(const TimeObjective& r, const std::optional<NcclUnbuilt>& ring) {
    std::vector<NcclUnbuilt> out;
    std::vector<nccl::Algorithm> algorithms;
    try {
        algorithms = nccl::nccl_algorithms(*r.instance.topology, r.instance.collective.kind);
    } catch (const InputError&) {
        return out;
    }
    auto timed = [&](const std::string& name) {
        auto is = [&](const TimeCandidate& c) { return c.provider == "nccl" && c.name == name; };
        return std::ranges::any_of(r.candidates, is) || std::ranges::any_of(r.unchecked, is);
    };
    // a table the checker found violated is no schedule of the collective here (NCCL's tree over a NIC that only sends):
    // in no space of schedules, so not one without a time (gather_candidates' nccl_whole keeps the set whole for it too)
    const std::vector<std::string> refuted = nccl_refuted(r.notes);
    for (nccl::Algorithm a : algorithms) {
        const std::string name = fmt::format("nccl {}", nccl::to_string(a));
        if (timed(name) || std::ranges::find(refuted, name) != refuted.end()) continue;
        NcclUnbuilt u = a == nccl::Algorithm::ring && ring ? *ring : NcclUnbuilt{name, ""};
        for (const std::string& n : r.notes)  // its own note ("nccl ring: not built: ...", "nccl ring (nccl): not timed ..."), else the provider's
            if (n.starts_with(name + ":") || n.starts_with(name + " (")) u.why = n.substr(name.size() + (n[name.size()] == ':' ? 2 : 1));
        for (const std::string& n : r.notes)
            if (u.why.empty() && n.starts_with("nccl: ")) u.why = n.substr(6);
        if (u.why.empty()) u.why = "not built";
        out.push_back(std::move(u));
    }
    return out;
}

}  // namespace

NamedProvider library_provider(const std::string& catalog, MemoryBudget memory) {
    return {"library", [catalog, memory](const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
                if (!std::filesystem::exists(catalog)) {
                    notes.push_back(fmt::format("library: {} not found (run from the source tree or give --library FILE)", catalog));
                    return;
                }
                const Catalog c = read_catalog(catalog, RunLimits{Deadline::at(q.deadline), memory});
                const std::uint32_t P = q.instance.topology->processors();
                for (const CatalogEntry& e : c.entries)
                    for (const auto& row : e.rows) {
                        if (row_size(e, row) != P || Clock::now() >= q.deadline) continue;
                        std::vector<std::string> defines;
                        std::string name = stem_of(e.file);
                        for (const auto& [k, v] : row) defines.push_back(fmt::format("{}={}", k, v)), name += fmt::format(" -D {}={}", k, v);
                        Diagnostics diags;
                        std::optional<SendTable> t;
                        CompileOptions only_this;  // a schedule of another machine or collective stops at its header
                        only_this.accept = [&](const Topology& topo, const Model&, const Collective& coll) {
                            return coll.kind == q.instance.collective.kind && same_machine(topo, *q.instance.topology);
                        };
                        try {
                            t = compile_file(e.file, defines, std::move(only_this), diags);
                        } catch (const InputError&) {
                            continue;
                        }
                        if (!t || t->collective.kind != q.instance.collective.kind || !same_machine(*t->topology, *q.instance.topology)) continue;
                        out.push_back({name, e.title + " (" + e.file + ")", "library", e.file.find("/nccl/") != std::string::npos,
                                       std::make_shared<const SendTable>(std::move(*t))});
                    }
            }};
}

TimeObjective time_objective(const SynthInstance& in, const TimeObjectiveOptions& options) {
    // the time limit counts from here: the bounds below are part of the run
    const Clock::time_point deadline = std::min(
        options.deadline,
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.timeout > 0 ? options.timeout : 1e6)));
    const Topology& topo = *in.topology;
    if (in.model.timing != Timing::hop) throw InputError("optimize --size: predicted times and their bounds are for hop timing");
    // The bounds get half of the time at most, the schedules the rest (as optimize's step bounds):
    // on 1,024 GPUs their max flows alone took the whole --timeout and 3.5 s more.
    const RunLimits bound_limits{Deadline::at(deadline).share(0.5), MemoryBudget::standard()};
    trace("time bounds: start");
    std::optional<TimeBounds> bounds = time_bounds(topo, in.collective, in.model, options.link, bound_limits);
    trace("time bounds: end");
    if (!bounds) throw InputError(fmt::format("optimize --size: no time bound for {} (allgather, reduce_scatter, allreduce, alltoall, "
                                              "broadcast, reduce, scatter and gather have one)", in.collective.to_string()));
    TimeObjective r{in, options, std::move(*bounds), {}, {}, {}, std::nullopt, {}};
    if (const std::vector<ExecutorModel> executors = timed_executors(options); !executors.empty()) {
        // decided by the asynchronous time, the bounds of that time alone (a group's message counts)
        r.executor_bounds = executor_time_bounds(topo, in.collective, in.model, executors, options.link, bound_limits,
                                                 options.time == TimeKind::asynchronous);
        trace("the executor's bounds: end");
    }
    // NCCL's ring search gets a quarter of what is left at most: the providers need the rest
    const std::optional<NcclUnbuilt> ring = ring_bounds(in, options, Deadline::at(deadline).share(0.25), r.notes);
    trace("NCCL's ring's bounds: end");
    CandidateQuery q{in, options.sizes, deadline, options.time, options.link};
    q.executor = options.executor, q.jobs = options.jobs;
    bool nccl_whole = false, all_whole = false;
    r.candidates = gather_candidates(q, time_providers(options.library, options.memory), r.notes, &r.unchecked, &nccl_whole, &all_whole);
    r.nccl_unbuilt = nccl_without_time(r, ring);
    // a table of NCCL's the checker refutes is left out of the bounds' space: said, with what is not modelled
    for (const std::string& name : nccl_refuted(r.notes))
        r.notes.push_back(fmt::format("{}: the table NCCL's search gives does not hold on this machine, so it is no schedule here and the "
                                      "bounds' space leaves it out (what NCCL would run in its place is not modelled)",
                                      name));
    try {
        r.system = nccl::nccl_system(topo);
    } catch (const InputError& e) {
        r.system_why = e.what();
    }
    if (r.candidates.empty()) return r;  // the bound still holds: the report prints it
    // the plans and times of gather_candidates, which chose the candidates by them
    std::vector<TimingPlan> plans;
    std::vector<std::vector<double>> seconds, other;
    std::vector<std::vector<Protocol>> protocol;
    std::vector<TimeBasis> bases;  // NCCL's own algorithms on the nccl executor (candidates.hpp, basis_of)
    for (const TimeCandidate& c : r.candidates) {
        plans.push_back(*c.plan), seconds.push_back(c.seconds), other.push_back(c.other);
        if (!c.protocols.empty()) protocol.push_back(c.protocols);
        bases.push_back(q.basis_of(c));
    }
    r.comparison = compare_predicted(plans, std::move(seconds), std::move(other), options.sizes, r.basis(), options.time, 0, options.jobs,
                                     Deadline::at(deadline), std::move(protocol), std::move(bases));
    // the ideal bounds hold for the network's share: a time on another executor is held to the executor's
    // bound (whose proof reads the executor model itself: list scheduling is not monotone in its costs)
    if (r.basis().ideal()) check_bounds(r);
    if (r.executor_bounds && timed_executors(options).size() > 1) bound_nccl_exactly(r, nccl_whole && r.nccl_unbuilt.empty());
    if (r.executor_bounds && options.executor->kind == ExecutorKind::nccl)
        bound_nccl_rings(r, nccl_whole && all_whole && r.nccl_unbuilt.empty(), RunLimits{Deadline::at(deadline), MemoryBudget::standard()});
    if (r.executor_bounds) check_executor_bounds(r);
    return r;
}

double TimeObjective::bound_seconds(std::size_t i) const {
    return executor_bounds ? evaluate(*executor_bounds, options.sizes[i]).seconds : evaluate(bounds, options.sizes[i]).seconds;
}

bool TimeObjective::met_everywhere() const {
    for (std::size_t i = 0; i < options.sizes.size(); ++i)
        if (winner_seconds(i) > bound_seconds(i) * (1 + 1e-9)) return false;
    return true;
}

std::optional<std::size_t> TimeObjective::nccl_best(std::size_t i) const {
    std::optional<std::size_t> best;
    for (std::size_t c = 0; c < candidates.size(); ++c)
        if (candidates[c].nccl && (!best || comparison.seconds[c][i] < comparison.seconds[*best][i])) best = c;
    return best;
}

NcclVersus TimeObjective::nccl_versus(std::size_t i) const {
    NcclVersus v;
    if ((v.timed = nccl_best(i))) v.timed_s = comparison.seconds[*v.timed][i];
    for (std::size_t u = 0; u < nccl_unbuilt.size(); ++u) {
        if (nccl_unbuilt[u].lower_bound_s.empty()) v.complete = false;
        else if (!v.bounded || nccl_unbuilt[u].lower_bound_s[i] < v.bound_s) v.bounded = u, v.bound_s = nccl_unbuilt[u].lower_bound_s[i];
    }
    return v;
}

std::optional<NcclModelPick> TimeObjective::nccl_model(std::size_t i) const {
    if (!system) return std::nullopt;
    const CollectiveKind k = instance.collective.kind;
    const double bytes = nccl::nccl_bytes(k, instance.topology->processors(), options.sizes[i]);
    std::optional<NcclModelPick> best;
    for (nccl::Algorithm a : {nccl::Algorithm::ring, nccl::Algorithm::tree, nccl::Algorithm::pat})
        if (auto m = nccl::nccl_best_protocol(*system, k, a, bytes); m && (!best || m->seconds < best->choice.seconds)) best = NcclModelPick{a, *m};
    return best;
}

std::optional<nccl::NvlsModel> TimeObjective::nvls_model(std::size_t i) const {
    if (!system) return std::nullopt;
    const CollectiveKind k = instance.collective.kind;
    return nccl::nccl_nvls_model(*system, k, nccl::nccl_bytes(k, instance.topology->processors(), options.sizes[i]));
}

std::vector<nccl::CollnetModel> TimeObjective::collnet_models(std::size_t i) const {
    if (!system) return {};
    const CollectiveKind k = instance.collective.kind;
    return nccl::nccl_collnet_models(*system, k, nccl::nccl_bytes(k, instance.topology->processors(), options.sizes[i]));
}

}  // namespace collsched
