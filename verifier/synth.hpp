/** \file
 * The synthesizer (DESIGN.md section 8): "is there a schedule that completes the collective by
 * step T?" as a Boolean formula with cardinality constraints, decided by CaDiCaL (cardinalities
 * encoded in CNF by verifier/cardinality.hpp) or by Z3 (native pseudo-Boolean atmost/atleast).
 * SAT gives a send table, which is re-verified by the direct checker before it is returned;
 * UNSAT proves that T+1 steps are needed. On top: proven lower bounds, known schedules (upper
 * bounds) and `optimize`, the search for the least T with its proof status.
 *
 * Three encodings, chosen from the model (docs/synthesis.md has their variables and clauses):
 *  - personal: scatter, gather, alltoall. Every message follows the topology's route. Its hops
 *    are cut into segments at every node where it may wait (processors, routers with queues);
 *    through a queue-free router the next hop is the next step, so a segment's whole trajectory
 *    is fixed by its start step: the only variables are segment start steps (order encoded).
 *  - dissemination: broadcast, allgather, multicast under hop timing, with replication at
 *    routers (replicate=yes) or on topologies without routers; "v holds m after step t" and
 *    "m crosses c in step t" variables.
 *  - end_to_end: dissemination on the ideal fat tree: processors send copies along routes,
 *    cut-through (arrival 2h steps after sending); variables "p sends m to q in step t".
 */
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/send_table.hpp"

namespace collsched {

enum class SatBackend : std::uint8_t { cadical, z3 };
std::string_view to_string(SatBackend);

/// Cardinality encoding used on the CaDiCaL path (Z3 takes cardinalities natively).
enum class CardinalityKind : std::uint8_t { totalizer, sequential };

struct SynthInstance {
    std::shared_ptr<const Topology> topology;
    Model model;
    Collective collective;
};

enum class EncodingKind : std::uint8_t { personal, dissemination, end_to_end };
std::string_view to_string(EncodingKind);

/// The encoding an instance gets. Throws InputError saying what is not supported and what is.
EncodingKind encoding_for(const SynthInstance&);

struct SynthOptions {
    SatBackend backend = SatBackend::cadical;
    CardinalityKind cardinality = CardinalityKind::totalizer;
    bool symmetry = true;  ///< sound symmetry breaking (docs/synthesis.md, "Symmetry")
    bool implied = true;   ///< implied cumulative counting constraints
    double timeout = 0;    ///< seconds for one solve; 0 means no limit
    /// Polled during a solve (CaDiCaL: often; Z3: not at all); returning true stops it.
    std::function<bool()> interrupt;
    /// Called about once a second during a CaDiCaL solve with the seconds spent so far.
    std::function<void(double)> tick;
};

enum class Answer : std::uint8_t { sat, unsat, unknown };
std::string_view to_string(Answer);

struct SynthResult {
    Answer answer = Answer::unknown;
    std::optional<SendTable> witness;  ///< sat: the decoded table, verified by verify_direct
    std::string reason;                ///< unknown: why (time limit, interrupted, solver reason)
    double seconds = 0;                ///< solve time (encoding excluded)
    double encode_seconds = 0;
    std::uint64_t variables = 0;
    std::uint64_t clauses = 0;
    std::uint64_t cardinalities = 0;
};

/// An encoded instance for every horizon up to `max_horizon`; `solve(T)` decides horizon T
/// (T <= max_horizon) under assumptions, so one solver instance keeps what it learned across T.
class Synthesizer {
public:
    Synthesizer(const SynthInstance&, Step max_horizon, const SynthOptions&);
    ~Synthesizer();
    Synthesizer(const Synthesizer&) = delete;
    Synthesizer& operator=(const Synthesizer&) = delete;

    /// `timeout` >= 0 replaces SynthOptions::timeout for this call (0: no limit).
    SynthResult solve(Step horizon, double timeout = -1);
    EncodingKind kind() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// One horizon, one fresh encoding (the tightest: every time window is cut at T).
SynthResult synthesize(const SynthInstance&, Step horizon, const SynthOptions&);

/// A proven lower bound on the completion time with the argument that proves it.
struct Bound {
    Step steps = 0;
    std::string name;    ///< short: "distance", "channel counting", "ports", ...
    std::string detail;  ///< one sentence with the numbers
};
/// Every lower bound collsched can prove without a solver (docs/synthesis.md, "Bounds").
std::vector<Bound> lower_bounds(const SynthInstance&);

/// A schedule from a known algorithm or a greedy, re-stamped with the instance's model and
/// verified by the direct checker; the shortest one that holds.
struct KnownSchedule {
    SendTable table;
    std::string source;  ///< e.g. "bft_phase_alltoall (Dimakopoulos & Dimopoulos, eq. 3)"
};
/// With `constructions` false only the papers' algorithms and the greedy are tried (not
/// collsched's own constructions, e.g. the XOR-invariant total exchange).
std::optional<KnownSchedule> known_schedule(const SynthInstance&, bool constructions = true);

enum class OptStatus : std::uint8_t { proved, found, timeout, infeasible };
std::string_view to_string(OptStatus);

struct OptimizeProgress {
    Step horizon = 0;
    SatBackend backend = SatBackend::cadical;
    double elapsed = 0;  ///< seconds since optimize started
    bool done = false;   ///< the solve for this horizon has ended with `answer`
    Answer answer = Answer::unknown;
};

struct OptimizeOptions {
    SynthOptions synth;
    double timeout = 0;        ///< total seconds; 0 means no limit
    bool incremental = false;  ///< one solver across horizons, horizons as assumptions
    bool constructions = true; ///< collsched's own constructions as upper bounds (known_schedule)
    /// When a counting bound already proves the optimum T, still ask the solver to show T-1
    /// UNSAT (a second, independent proof; its time is what `probe` reports as the solver's).
    bool solver_proof = false;
    std::function<void(const OptimizeProgress&)> progress;
};

struct Attempt {
    Step horizon = 0;
    Answer answer = Answer::unknown;
    double seconds = 0;
};

struct OptimizeResult {
    OptStatus status = OptStatus::timeout;
    std::optional<Step> optimum;      ///< proved: the optimum; found: the best T found
    Step lower_bound = 0;             ///< proven
    std::string lower_bound_reason;
    bool solver_unsat = false;        ///< the solver showed optimum-1 UNSAT
    std::optional<Step> upper_bound;  ///< steps of the best schedule known
    std::string upper_bound_source;
    std::optional<Step> known_steps;  ///< the known schedule's steps (before any solving)
    std::string known_source;         ///< where it came from
    std::optional<SendTable> witness; ///< a schedule with upper_bound steps, verified
    std::vector<Bound> bounds;        ///< every static lower bound
    std::vector<Attempt> attempts;
    EncodingKind encoding = EncodingKind::personal;
    double seconds = 0;
    std::string note;                 ///< infeasible: why
};

/// The least T between the proven lower bound and the best known schedule: solves horizons
/// downward from the upper bound; a SAT answer jumps below the witness found, the first UNSAT
/// (or reaching the lower bound) settles it. Ends at the time limit with the best bounds so far.
OptimizeResult optimize(const SynthInstance&, const OptimizeOptions&);

}  // namespace collsched
