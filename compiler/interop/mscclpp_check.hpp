/** \file
 * Verifying an MSCCL++ execution plan (compiler/interop/mscclpp_plan.hpp): the plan becomes an
 * asynchronous program for the shared engine (compiler/interop/async_program.hpp) exactly as MSCCL++'s
 * device interpreter runs it (src/core/include/execution_kernel.hpp), and the engine decides
 * deadlock, data races and the result against the collective's postcondition. docs/exports.md
 * ("MSCCL++ execution plans") states the model; in short:
 *
 *  - The ops of a thread block are run by all its threads, each thread on its own: an op is
 *    ordered after an earlier op of its block only through a `nop` (__syncthreads) or a
 *    `barrier` between them. Signals, waits, flushes and semaphore ops run on thread t for their
 *    t-th channel or semaphore; thread t's own ops stay in order.
 *  - A wait is released by the signal of the same count on the channel it is paired with (the
 *    k-th memory or port channel from rank r to p pairs with the k-th from p to r, the executor's
 *    per-peer connection tags); relaxed signals and waits count but order no memory.
 *  - A port channel's puts and signals run on a proxy in FIFO order per channel; a put with
 *    signal signals after its put. An LL packet read waits for the packet's flag: it is ordered
 *    after the write of that packet in the same launch.
 *  - A put, get or reduce-send reads and writes peers' buffers: a put is a write on the peer.
 *
 * Chunks are split into atoms when thread-block groups (`tbg_info`) slice them.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/interop/expect_file.hpp"
#include "compiler/interop/mscclpp_plan.hpp"
#include "compiler/table/send_table.hpp"
#include "support/budget.hpp"

namespace collsched::mscclpp {

/// A copy of data between two GPUs the plan makes (a put, get or remote reduce, as the replay
/// computed it): `value` is the sorted list of input pieces, each (rank, input chunk).
struct Movement {
    int from = 0, to = 0;
    std::vector<std::pair<int, int>> value;
    auto operator<=>(const Movement&) const = default;
};

/// What a switch op of the plan moves (glres, gstore): the GPU that runs it, the GPUs of its
/// group, and the value (as Movement's): up from the members (glres: each its own pieces; gstore:
/// the GPU's) in one step, the value down to the members in the next.
struct SwitchMove {
    int gpu = 0;
    bool reduce = false;
    std::vector<int> group;
    std::vector<std::pair<int, int>> value;
};

struct PlanReport {
    std::vector<Finding> findings;  ///< structure, limits, blind spots, deadlocks, races, results
    std::size_t counts_deadlock = 0, counts_race = 0, counts_result = 0, counts_other = 0;
    bool modelled = false;          ///< the plan could be turned into a program
    bool finishes = false, race_free = false, race_checked = false, result_checked = false;
    std::string result_note;        ///< why the result was not checked, if it was not
    std::string race_note;          ///< why the races were not checked (a plan beyond the engine's limit)
    /// An in-place reducescatter: the verdict under NCCL's in-place convention (the report's own
    /// verdict is under mscclpp's), and its first deadlock, race or wrong result.
    std::string nccl_verdict;
    std::optional<Finding> nccl_first;
    std::size_t thread_blocks = 0, ops = 0;
    std::vector<Movement> movement;  ///< sorted; only when replayed
    /// The copies between GPUs of whole chunks, each with the step of the plan's as-soon-as-possible
    /// run (one step an entry of a data op: its chunks to one peer; docs/time.md, "Protocols"); only when replayed.
    std::vector<std::pair<std::uint32_t, Movement>> schedule;
    /// Per copy of `schedule`: the entry of a data op it is part of (numbered from 0): its chunks leave as one put,
    /// one message (SendTable::transfer_ops).
    std::vector<std::uint32_t> schedule_ops;
    /// The switch ops' whole chunks in the same run, each two steps (up, then down); the step is the first.
    std::vector<std::pair<std::uint32_t, SwitchMove>> switch_schedule;
    /// Nothing found, and every property the plan has was decided (the result may be unchecked
    /// for a collective without a postcondition: the report says so).
    bool holds() const { return findings.empty() && modelled && race_checked; }
    /// Nothing found, but the races were not decided: neither "holds" nor "violated" (exit 3).
    bool unknown() const { return findings.empty() && modelled && !race_checked; }
    std::string_view verdict() const { return holds() ? "holds" : unknown() ? "unknown" : "violated"; }
};

/// Checks a plan; `expect` (may be empty) replaces the collective's postcondition. Past `deadline`
/// the check throws LimitReached (async::CheckOptions::deadline).
PlanReport check_plan(const ReadResult& read, const std::vector<Expectation>& expect = {}, Deadline deadline = {});

/// The plan's copies between GPUs as a send table on `topo` (one processor a GPU): each copy of
/// `report.schedule` sent in its step by the topology's route, cut through; the collective's
/// messages named from the input pieces a copy carries. Throws InputError saying why a plan has no
/// such table (not replayed, a collective without a table form, a copy that mixes chunks, a GPU
/// count other than the topology's processors, switch channels).
SendTable plan_table(const Plan& plan, const PlanReport& report, std::shared_ptr<const Topology> topo);

/// The report as text: verdict line, properties, counterexamples (`file:line:col: path: what`).
std::string format_plan_report(const PlanReport& r, const Plan& plan, std::string_view file);

}  // namespace collsched::mscclpp
