/** \file
 * Hierarchical synthesis for machines of boxes (issue 28; docs/synthesis.md, "Hierarchical
 * synthesis"): the least-steps schedule of a small phase, solved exactly on a small sub-machine
 * (one box: the GPUs of a box and the channels between them; one rail: the GPUs of equal local
 * index in every box and the channels between them), copied to every box or rail, and composed
 * into a schedule of the whole machine: allgather inter-box then intra-box, the reverse, or a
 * split of the chunks between the two orders; alltoall intra-box then inter-box, the reverse, or
 * a split of the messages; reduce_scatter as the composed allgather reversed
 * (compiler/table/duality.hpp). Each composition is laid out phase after phase, then compacted (every
 * transfer moved to the earliest step at which its sender holds its message and the channel, its
 * link groups and the ports have room, in the order of the layout), and verified WHOLE by the
 * direct checker. The best one is reported beside the best lower bound for the whole machine,
 * with the gap and the search space of each: the phases' proofs cover their sub-machines only,
 * the composition is an upper bound; where it meets the lower bound the least steps are proved
 * for the whole machine without a solver.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "support/budget.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched {

/// The boxes of a machine: processor p is GPU p % per_box of box p / per_box. Found as the
/// connected components of the fastest channels (the largest bandwidth of a graph file's link
/// speeds), which must be `boxes` >= 2 runs of `per_box` >= 2 consecutive processors.
struct BoxLayout {
    std::uint32_t boxes = 0;
    std::uint32_t per_box = 0;
    std::string how;  ///< "4 boxes of 8 processors (the components of the channels of 300 GB/s)"
};

/// The layout, or why the machine is not one of boxes (the message of the InputError).
std::optional<BoxLayout> find_boxes(const Topology&, std::string* why = nullptr);

/// Why hierarchical synthesis does not take an instance ("" when it does): hop timing, one
/// round per step, processors only, boxes as find_boxes says, every box alike and every rail
/// alike (the same channels, capacities and link groups after renumbering), allgather, alltoall
/// or reduce_scatter (C = P, the dual allgather's) of one chunk per datum.
/// `limits`: polled while every copy is compared (seconds on 4,096 GPUs; LimitReached).
std::string hierarchical_problem(const SynthInstance&, const RunLimits& limits = {});

/// One phase: the collective on one sub-machine, optimized by optimize() (the exact search).
struct HierarchicalPhase {
    std::string name;      ///< "intra-box" or "inter-box (rails)"
    std::string machine;   ///< "box 0: processors 0..7, 56 channels, 16 link groups"
    std::uint32_t copies = 0;  ///< boxes or rails it runs on
    OptimizeResult result;
    std::string space;     ///< the phase's search space (search_space of its instance)
};

/// One composition tried: its name, the steps of the layout (phases one after the other) and
/// after compaction (verified whole).
struct Composition {
    std::string name;
    Step laid_out = 0;
    Step steps = 0;
};

struct HierarchicalOptions {
    HierarchicalOptions(OptimizeOptions p, Deadline d = {}, MemoryBudget m = {}) : phase(std::move(p)), deadline(d), memory(m) {}
    OptimizeOptions phase;  ///< for the phases' optimize() (its timeout is the whole run's)
    Deadline deadline;      ///< the whole run: phases, compositions and verification
    MemoryBudget memory;
};

struct HierarchicalResult {
    BoxLayout layout;
    std::vector<HierarchicalPhase> phases;
    std::vector<Composition> compositions;  ///< every one tried, in the order tried
    std::size_t space = 0;                  ///< how many compositions the search covers
    std::optional<SendTable> table;         ///< the best, verified by verify_direct
    std::string best;                       ///< its composition's name
    std::string source;                     ///< "hierarchical composition (...)": the upper bound's source
    std::string reason;                     ///< no table (a limit): why
    double seconds = 0;
    double verify_seconds = 0;
};

/// Throws InputError when hierarchical_problem is not empty. Stops at the deadline or the memory
/// limit with the best composition so far (or none, with `reason`).
HierarchicalResult hierarchical_synthesize(const SynthInstance&, const HierarchicalOptions&);

/// Moves every transfer of `transfers` (a valid schedule's, or phases laid out one after the
/// other) to the earliest step at which its sender holds the message and the channel, its link
/// groups and the ports of both ends have room, in the order of their steps (stably); repeated
/// while the completion time falls (at most `passes` times). A transfer whose receiver already
/// holds its message by then is dropped. Hop timing, processors only. The result is valid
/// whenever every transfer's sender gets its message from an earlier transfer or holds it
/// initially; the caller verifies it. Every 65,536 transfers it checks `deadline` and `memory`
/// (90% of the limit) and throws std::runtime_error ("time limit (compaction)", "memory limit
/// (compaction): ...") once one is reached.
SendTable compact_schedule(const SynthInstance&, std::vector<Transfer> transfers, int passes = 4, Deadline deadline = {},
                           MemoryBudget memory = {});

}  // namespace collsched
