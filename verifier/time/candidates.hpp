/** \file
 * The schedules the time objective chooses from (issue 43, `optimize --size`): every schedule
 * collsched can build and verify for an instance, from a list of providers. Each provider gives
 * candidates; each candidate's table is verified by the direct checker under the instance's
 * model before it is kept (a table that does not hold is dropped with a note, never chosen).
 * The providers are the rows of the constructions' registry (constructions.hpp): collsched's
 * constructions (rings over several chunk counts, tree packings, the least-steps known schedule,
 * the constructions for time, ...), the library's schedules that fit the machine
 * (library_provider) and NCCL's algorithms generated for it (verifier/constructions/nccl): a provider is
 * one function, so another source plugs in as one more row.
 */
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "runtime/compare.hpp"
#include "runtime/timing.hpp"
#include "support/parallel.hpp"
#include "verifier/synth/problem/construction.hpp"
#include "verifier/synth/problem/instance.hpp"
#include "verifier/time/time_bound.hpp"

namespace collsched {

struct TimeCandidate {
    std::string name;      ///< short and unique: "rings C=64", "ring_allreduce_channels -D k=4"
    std::string source;    ///< where it comes from, with its proof status if any
    std::string provider;  ///< "rings", "packing", "least steps", "library", "nccl", ...
    bool nccl = false;     ///< one of NCCL's algorithms (the speed-up is printed over the best of these)
    std::shared_ptr<const SendTable> table;
    std::optional<TimingPlan> plan = std::nullopt;  ///< its timing plan (gather_candidates builds it once; compare reuses it)
    /// per size: by the query's time and by the other kind (gather_candidates). A provider may fill `seconds` with
    /// its table's asynchronous times at the query's sizes without a link speed (TimingPlan::predict; NaN at a size
    /// it did not predict), with or without the plan; gather_candidates then takes them instead of running the plan
    /// again (the table has the query's topology and model, or they are not taken). On an executor the same with
    /// `protocols` given too, each size's time the fastest of the query's basis() (time_on's, the first of the fastest),
    /// taken for a table that is timed on basis() (not one of NCCL's, not Simple only: basis_of) by the asynchronous time.
    std::vector<double> seconds = {}, other = {};
    std::vector<Protocol> protocols = {};  ///< per size: the executor's protocol it runs in (empty on the ideal executor)
    bool unrun = false;  ///< the query's executor cannot run it (leave_out_unrun, executor_check.hpp): not timed
    /// On mscclpp: the chains its plan's thread blocks take at a time (MscclppOptions::chains_a_block; with_rows).
    int mscclpp_chains_a_block = 1;
};

struct CandidateQuery {
    SynthInstance instance;  ///< topology, collective (its chunks are the providers' to choose), model
    std::vector<double> sizes;
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    TimeKind time = TimeKind::asynchronous;  ///< the time that decides (gather_candidates checks those that can win by it)
    std::optional<LinkSpeed> link = std::nullopt;  ///< --link
    std::optional<ExecutorModel> executor = std::nullopt;  ///< --executor (none: the ideal one)
    unsigned jobs = 1;  ///< threads for the predictions (the answers do not depend on it)
    /// While the providers run at once: the cores they share, and how many threads a provider with more work than one
    /// thread (the constructions for time) may run on by borrowing the cores the others are not using.
    Cores* cores = nullptr;
    unsigned borrow = 1;
    /// Tables of more than this many transfers are planned and timed in gather_candidates' second phase, each only
    /// when its plan and a prediction fit in what the memory budget leaves (a test lowers it).
    std::size_t large_table = std::size_t{1} << 22;
    /// What the candidates' times are taken on: the link speeds and the executor.
    TimeBasis basis() const { return {link, executor}; }
    /// Tables of more than this many transfers that have no plan of their own are planned and timed after the smaller
    /// ones are timed and their fastest checked, and only where their lower bound (table_time_bound) does not put them
    /// beyond the tables that hold at every size (asynchronous time; a test lowers it, 0 plans none before its bound).
    std::size_t bounded_table = std::size_t{1} << 17;
    /// Whether a table may be left out by its lower bound (a test compares with every table timed).
    bool prune = true;
    /// What candidate c is timed on: basis(), except NCCL's own algorithms on the MSCCL and MSCCL++
    /// executors, which stock NCCL runs (the nccl executor: the speed-up over NCCL is over what it runs),
    /// and on MSCCL++ a table whose switches sum or multiply copies, timed in the protocols its plan is
    /// written in (Simple: a switch channel's sum has no LL form).
    TimeBasis basis_of(const TimeCandidate& c) const;
};

// A provider, CandidateProvider (verifier/synth/problem/construction.hpp): a row's time builder.

struct NamedProvider {
    std::string name;
    CandidateProvider provide;
    /// Run before the others (their candidates still listed in the providers' order): NCCL's
    /// algorithms, the baseline every answer is compared with, which on 1,024 GPUs found no time
    /// left after collsched's constructions.
    bool first = false;
    /// NCCL's algorithms: the baseline, never left out by a bound (the registry's row `nccl`, compare's `nccl:*`).
    bool baseline = false;
};

/// Runs every provider, re-stamps each table with the instance's topology and model (a table for
/// another machine of the same shape is dropped by the caller's provider), builds its timing plan
/// and predicts it at every size (on `jobs` threads), and verifies with the direct checker the tables that can decide
/// something: at each size, by the query's time, the fastest that holds and every one within a
/// factor 1 + 1e-9 of the ones kept before it (the near ties compare()'s choice of the winner
/// depends on), and the same among NCCL's algorithms (the speed-up's baseline). The others are
/// slower at every size than a table that holds, by more than any near tie: they cannot change the
/// winner, its time or NCCL's best, and are left out unchecked (a note names them). Keeps those
/// that hold, in the providers' order, with their plans. Names are made unique over every table
/// timed.
/// The plans and predictions have 80 % of the time left after the providers, the checks the rest (on 1,024 GPUs the
/// predictions took it all and no table was checked). Tables of more than 2^22 transfers are timed after the others'
/// fastest are checked, so that a limit leaves out the largest (NCCL's ring allgather on 1,024 GPUs, 9.4 million
/// transfers, 34 s at five sizes) and keeps a verified table; a table not timed at every size is left out with a note.
/// `unchecked` (when given) receives the tables left out unchecked, with their times but without
/// their tables and plans (freed). `nccl_whole` (when given) is set to whether every table of NCCL's
/// (TimeCandidate::nccl) the providers could build is returned or unchecked with its times, or was left
/// out by a lower bound on its asynchronous time above one of those: false when a provider was stopped
/// or not run by the time limit, or the limit passed before they ended, or one of NCCL's was left out
/// otherwise (a limit, a plan or check that failed). `all_whole` (when given): the same for every table (no table
/// left out by a limit or a plan that failed; those that do not hold or the executor does not run are not the run's).
std::vector<TimeCandidate> gather_candidates(const CandidateQuery&, const std::vector<NamedProvider>&, std::vector<std::string>& notes,
                                             std::vector<TimeCandidate>* unchecked = nullptr, bool* nccl_whole = nullptr,
                                             bool* all_whole = nullptr);

/// A lower bound on the asynchronous time of a table at each size (TimeOptions{size, link}), without its timing plan
/// (verifier/time/table_bound.cpp; a pass over the table per size), the larger of two:
///  - loads: the transfers on one channel or link group hold it one after the other, each for its bytes over the
///    bandwidth, and the last of them arrives a latency of its channel later: for every channel and group, the sum of
///    those holds plus the least latency of its channels;
///  - chains: a transfer starts no earlier than the first arrival, in an earlier step, of a part of the chunk it sends
///    at its sender where it needs one (a router, or a processor sending more than its own value), nor before the one
///    before it on an in-order channel (into a switch that reduces or multicasts) has left it, and arrives its hold and
///    latency later (tables of at most 2^23 nodes times chunks).
/// Valid for every table the asynchronous run times (docs/time.md); runtime/timing.cpp runs the same rules in full.
std::vector<double> table_time_bound(const SendTable&, const std::vector<double>& sizes, const std::optional<LinkSpeed>& link);
/// The same on a basis: on an executor, per protocol the launch plus the bound on the speeds the executor model times
/// the protocol at, each channel's latency with its message cost (a transfer arrives at least that long after its
/// bytes left: docs/time.md, "The bound on an executor"), the least over the protocols (the run takes the fastest).
/// Valid for every table the asynchronous run times on that basis.
std::vector<double> table_time_bound(const SendTable&, const std::vector<double>& sizes, const TimeBasis& basis);

/// The time of a table at a size: asynchronous or synchronous (docs/time.md).
double candidate_seconds(const SendTable&, double size, const std::optional<LinkSpeed>& link, bool synchronous);

}  // namespace collsched
