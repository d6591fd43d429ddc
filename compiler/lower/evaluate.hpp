/** \file
 * The second pass of the lowering: runs the resolved program (compiler/lower/ir.hpp) with checked
 * int64 arithmetic. It builds the topology, model and collective when it meets them
 * (compiler/lower/declarations.hpp), lowers every `send` under the cut-through policy (hop k of a send
 * issued in step s crosses its channel in step s+k-1; under wormhole timing the whole route is
 * one round) and every `hop` as written into a TransferSink, keeps the endpoint sends of the
 * fifo, flood and adaptive policies for compiler/lower/arbitrate.hpp, and records the sends whose data
 * must be held for compiler/lower/check_holds.hpp. Claims, bounds and citations become the table's
 * extra fields.
 *
 * Errors are reported through the Reporter; after them `diags` has errors and the result is not
 * to be used. Reporter::report and the limits (E050, E051) throw Stop.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <map>
#include <vector>

#include "compiler/lower/env.hpp"
#include "compiler/lower/transfer_sink.hpp"

namespace collsched::compiler {

/// An endpoint send left to the arbitration of the fifo, flood or adaptive policy.
struct FifoSend {
    Step issue;
    Node src, dst;
    MessageId message;
};

/// A send of data that is not the sender's initial data: the sender must hold it by `step`.
struct Pending {
    MessageId message;
    std::uint32_t at;
    Step step;
    SourceLoc loc;
};

/// The hops written per (step << 32 | channel): the room the arbitration leaves to them.
using ExplicitHops = std::unordered_map<std::uint64_t, std::uint32_t>;

/// What running the program produced.
struct Evaluated {
    std::shared_ptr<const Topology> topology;
    Model model;
    Collective collective;
    LoweringPolicy policy = LoweringPolicy::cut_through;
    std::shared_ptr<Composites> composites;
    Messages messages{0};
    std::vector<Requirement> requirements;
    std::vector<Claim> claims;  ///< claims, bounds, citations, in the order written

    TransferSink sink;                        ///< cut-through sends and hops (and, after arbitrate, the rest)
    std::vector<FifoSend> sends;              ///< fifo, flood, adaptive: the sends to arbitrate
    std::vector<std::uint32_t> send_origins;  ///< recording: the location index of each of `sends`
    ExplicitHops explicit_hops;               ///< fifo, flood, adaptive: hops written per step and channel
    std::vector<Pending> pending;             ///< sends whose data must arrive first
    std::vector<std::string> origin_names;    ///< recording: "file:line:col" of each send or hop that moved data
    /// `step s rounds r`: the rounds stated for step s and where they were first given. Kept
    /// sparse: a step number is any integer below 2^31, and `step 2000000000 rounds 1` must not
    /// allocate a vector of 2^31 entries; header() makes the dense list up to the last step of more
    /// than one round, whose size set_rounds checked against the memory budget.
    struct StatedRounds {
        std::uint32_t rounds = 1;
        SourceLoc at;
    };
    std::map<Step, StatedRounds> stated_rounds;

    /// The table without transfers; `take` moves the requirements and extra fields out.
    SendTable header(bool take = false);
};

/// Runs `ir`. With a consumer, the steps are streamed to it (compiler/lower/stream.hpp) as soon as no
/// later send can reach them, and all of them are handed over before this returns; throws
/// NotStreamable for what cannot stream.
Evaluated evaluate(const IR& ir, const CompileOptions& options, Reporter& reporter, StepConsumer* consumer = nullptr);

/// The loop values (" (when s = 2, k = 0)", Env::context) at the pending sends `wanted`
/// (increasing indices into Evaluated::pending), found by running the program again: E046 is
/// found only after the run, and keeping every pending send's loop values would cost memory on
/// every run for the rare one that fails. The program is deterministic, so the rerun makes the
/// same pending sends in the same order; its warnings were reported already (the Reporter keeps
/// them once).
struct PendingContexts {
    std::span<const std::size_t> wanted;
    std::vector<std::string> contexts;
};
std::vector<std::string> pending_contexts(const IR& ir, const CompileOptions& options, Reporter& reporter,
                                          std::span<const std::size_t> wanted);

/// The loop values (Env::context) of the statement runs that made the transfers `wanted` (sorted),
/// by a rerun as for pending_contexts: for counterexamples (a capacity violation names a transfer;
/// keeping every transfer's loop values would cost far more than the table). Transfers of sends
/// left to arbitration (fifo, flood, adaptive) get their step only after the run, so they, and
/// transfers no run makes, get "".
struct TransferContexts {
    std::span<const Transfer> wanted;
    std::vector<std::string> contexts;  ///< parallel to wanted
};
std::vector<std::string> transfer_contexts(const IR& ir, const CompileOptions& options, Reporter& reporter,
                                           std::span<const Transfer> wanted);

}  // namespace collsched::compiler
