/** \file
 * The solver calls of pareto's walk (verifier/synth/search/pareto.cpp) and how they are run: one
 * (steps, chunks, rounds) instance decided by `decide` (the invariant search first, then the full
 * encoding), a batch of them on threads or shared with other processes (support/parallel.hpp's
 * JobSharing: MPI ranks), calls and answers as text for those. docs/synthesis.md, "Threads and
 * MPI ranks". Internal to the verifier.
 */
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "support/parallel.hpp"
#include "verifier/synth/problem/pareto.hpp"

namespace collsched::pareto_calls {

/// One solver call of the walk: (S, C, R) with the limits the walk gave it when it was handed out.
struct Call {
    Step steps = 0;
    std::uint32_t chunks = 1;
    Step rounds = 0;
    double timeout = 0;                                      ///< seconds for the call; 0: none
    Clock::time_point deadline = Clock::time_point::max();  ///< the run's
};

/// A call's answer and its time (encoding and solving).
struct Answered {
    SynthResult result;
    double seconds = 0;
};

/// What every call needs besides its (S, C, R), the same in every process of a shared run (each
/// builds it from the same command line; the automorphisms travel with the calls).
struct CallContext {
    const SynthInstance& in;
    const ParetoOptions& opt;
    std::vector<std::vector<std::uint32_t>> autos;
};

/// Runs the calls of a batch: on this process's `jobs` threads, or shared with other processes
/// (each on its threads). Answers come back in the order of the batch, whoever ran them. On
/// threads, once a call answers SAT the calls after it in the batch are not needed (the walk
/// stops at the first SAT): those not started are skipped, those running interrupted; their
/// answers are never read. Shared calls run to the end (a process knows only its own).
class CallRunner {
public:
    explicit CallRunner(const CallContext& cx) : cx_(cx) {}
    /// How many calls a batch holds: threads x processes.
    std::size_t width() const { return threads() * (cx_.opt.sharing ? cx_.opt.sharing->processes() : 1); }
    std::vector<Answered> run(const std::vector<Call>& batch) const;
    /// One call from its text, answered as text: what every process runs for a shared batch.
    JobRunner runner() const;

private:
    unsigned threads() const { return std::max(1u, cx_.opt.jobs); }
    const CallContext& cx_;
};

}  // namespace collsched::pareto_calls
