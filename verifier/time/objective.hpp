/** \file
 * Time as the objective (issue 43, `optimize --size M`): among every schedule collsched can
 * build and verify for an instance (candidates.hpp: its constructions, the library's schedules
 * that fit the machine, NCCL's algorithms generated for it) the one with the least predicted
 * time at each size, with the proved lower bound on time there (time_bound.hpp), checked against
 * every candidate (a bound above a verified schedule's time is a bug, stopped loudly), the gap,
 * the best of NCCL's algorithms and NCCL's own tuner model (verifier/constructions/nccl). The run is
 * time_objective(); its report (text and `--json`), the witnesses' names and comments and the
 * exit code are objective_report.hpp's. The command (tools/cmd_optimize.cpp) keeps its options,
 * writes the files and prints; the Python module runs the command in memory and gets the same.
 */
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "runtime/compare.hpp"
#include "runtime/timing.hpp"
#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/synth/problem/instance.hpp"
#include "verifier/time/candidates.hpp"
#include "verifier/time/time_bound.hpp"
#include "verifier/time/time_bound_executor.hpp"

namespace collsched {

/// What the time objective is asked.
struct TimeObjectiveOptions {
    std::vector<double> sizes;  ///< NCCL's convention (docs/time.md, "Sizes"); at least one
    std::optional<LinkSpeed> link;  ///< --link: one speed for every channel and group instead of the topology's
    /// --executor / --calibration: the executor the times are for (none: the ideal one, the network's
    /// share). The ideal model's bounds stay (the network's share); the executor's bound is beside them.
    std::optional<ExecutorModel> executor;
    TimeKind time = TimeKind::asynchronous;  ///< which predicted time decides
    std::string library = "schedules/catalog.json";  ///< the catalog the library provider reads
    double timeout = 60;  ///< seconds for gathering the candidates; 0 or less: none
    /// An earlier end than `timeout` from the call (the command's --timeout, which counts from its
    /// start: reading a machine of 1,024 GPUs takes a second or more).
    Clock::time_point deadline = Clock::time_point::max();
    unsigned jobs = 1;  ///< threads for the predictions (--jobs; the answer does not depend on it)
    MemoryBudget memory = {};  ///< --memory: the library provider reads its catalog within it (none: no limit)
};

/// NCCL's own model at one size (src/graph/tuning.cc, verifier/constructions/nccl): the algorithm and
/// protocol its tuner picks, the least model time.
struct NcclModelPick {
    nccl::Algorithm algorithm;
    nccl::ModelChoice choice;
};

/// One of NCCL's algorithms that runs the collective on the machine but has no verified time in
/// the run: its table could not be built (NCCL's ring allreduce on 1,024 GPUs needs more chunks
/// than 32-bit message ids hold) or was not built, timed or checked within the time limit. For
/// the ring, a proved lower bound on its asynchronous time per size, from its routes alone
/// (nccl_bounds.hpp), so that a speed-up over it is still stated, as "at least".
struct NcclUnbuilt {
    std::string name;  ///< as its candidate would be named: "nccl ring"
    std::string why;
    std::vector<double> lower_bound_s = {};  ///< per size; empty: no bound (not a ring, or another time kind)
    std::vector<std::string> argument = {};  ///< per size: which resource or chain
};

/// What is known of NCCL's best at one size: the fastest of its algorithms that were timed, and
/// the least lower bound of those that were not. NCCL's best is known (exactly or from below)
/// only when every one of its algorithms has a time or a bound (`complete`).
struct NcclVersus {
    std::optional<std::size_t> timed;    ///< a candidate index
    double timed_s = 0;
    std::optional<std::size_t> bounded;  ///< an index of nccl_unbuilt with a bound
    double bound_s = 0;
    bool complete = true;  ///< no algorithm without both a time and a bound
    /// The fastest timed algorithm is at or below every bound of those without a time.
    bool timed_least() const { return timed && (!bounded || timed_s <= bound_s); }
    /// The timed one is NCCL's best: no algorithm without a time can be faster.
    bool exact() const { return complete && timed_least(); }
    /// Some algorithm has a time or a bound.
    bool known() const { return timed || bounded; }
    /// The fastest time or least bound among those known: what NCCL's best takes at least when complete.
    double least() const { return timed_least() ? timed_s : bound_s; }
};

/// One run of the time objective.
struct TimeObjective {
    SynthInstance instance;
    TimeObjectiveOptions options;
    TimeBounds bounds;                     ///< proved lower bounds on time (evaluate() at a size)
    std::vector<TimeCandidate> candidates;  ///< verified by the direct checker; empty: none built
    std::vector<std::string> notes;         ///< what the providers said
    Comparison comparison;                  ///< the candidates at every size (none when no candidate)
    std::optional<nccl::System> system;     ///< what NCCL's search sees of the machine, if it describes it
    std::string system_why;                 ///< why not, when it does not
    /// Tables timed but not checked (slower at every size than a table that holds; no table or
    /// plan kept): their names and times, for scripts (JSON `unchecked`).
    std::vector<TimeCandidate> unchecked = {};
    /// NCCL's algorithms without a time here (none when every one was timed).
    std::vector<NcclUnbuilt> nccl_unbuilt = {};
    /// On an executor other than ideal: the proved bound on its times (time_bound_executor.hpp), for
    /// every table the run times on it and NCCL's algorithms as the nccl executor times them.
    std::optional<ExecutorBounds> executor_bounds = std::nullopt;

    /// The fastest candidate at size i (at least one candidate).
    const TimeCandidate& winner(std::size_t i) const { return candidates[comparison.winner[i]]; }
    /// Its predicted time there, the kind that decides.
    double winner_seconds(std::size_t i) const { return comparison.seconds[comparison.winner[i]][i]; }
    /// What the times are taken on (options.link, options.executor).
    TimeBasis basis() const { return {options.link, options.executor}; }
    /// The protocol the winner runs at size i on the executor (none on the ideal one).
    Protocol winner_protocol(std::size_t i) const {
        return comparison.protocol.empty() ? Protocol::none : comparison.protocol[comparison.winner[i]][i];
    }
    /// The bound the gap is taken over at size i: the executor's where there is one, else the ideal one.
    double bound_seconds(std::size_t i) const;
    /// True when the fastest meets that bound at every size (within 1e-9).
    bool met_everywhere() const;
    /// The fastest of NCCL's algorithms at size i (a candidate index), if any candidate is one.
    std::optional<std::size_t> nccl_best(std::size_t i) const;
    /// NCCL's best at size i from the timed algorithms and the bounds of those without a time.
    NcclVersus nccl_versus(std::size_t i) const;
    /// NCCL's tuner at size i: nullopt for alltoall or a machine NCCL's model does not describe.
    std::optional<NcclModelPick> nccl_model(std::size_t i) const;
    /// NCCL's own model of NVLS (one box) or NVLS_TREE (several) at size i, where the machine's
    /// switches reduce and multicast (nccl::nccl_nvls_model); its tuner would weigh it against the above.
    std::optional<nccl::NvlsModel> nvls_model(std::size_t i) const;
    /// NCCL's own model of its allreduce through SHARP at size i (CollNet Direct, CollNet Chain,
    /// NVLS across boxes; nccl::nccl_collnet_models): empty where no switch between the boxes reduces.
    std::vector<nccl::CollnetModel> collnet_models(std::size_t i) const;
};

/// Runs the time objective: the bounds (InputError when the timing is not hop or the collective
/// has none), the candidates of construction_providers(), the library's (options.library) and
/// NCCL's, their times at every size, the check of every verified time against the bound.
TimeObjective time_objective(const SynthInstance&, const TimeObjectiveOptions&);

/// The library's schedules whose machine is `in`'s (same processors, routers, channels and
/// groups), compiled from the catalog rows of as many processors (compiler/lower/catalog.hpp; a
/// provider for gather_candidates; a missing catalog is a note).
NamedProvider library_provider(const std::string& catalog, MemoryBudget memory = {});

}  // namespace collsched
