/** \file
 * The synthesizer (DESIGN.md section 8): "is there a schedule that completes the collective by
 * step T?" as a Boolean formula with cardinality constraints, decided by CaDiCaL (cardinalities
 * encoded in CNF by verifier/synth/sat/cardinality.hpp) or by Z3 (native pseudo-Boolean atmost/atleast).
 * SAT gives a send table, which is re-verified by the direct checker before it is returned;
 * UNSAT proves that T+1 steps are needed. On top: proven lower bounds, known schedules (upper
 * bounds) and `optimize`, the search for the least T with its proof status.
 *
 * Four encodings, chosen from the model and the route space (docs/synthesis.md has their
 * variables, clauses and the arguments that they are exact):
 *  - free_route: scatter, gather, alltoall over any route (the default): "v holds m after step
 *    t" and "m crosses c in step t", processors relay and keep copies, routers forward as the
 *    model says. Exact because one copy per message along one walk is always enough.
 *  - personal: scatter, gather, alltoall on fixed routes (`--routes fixed`, and on trees with
 *    unbounded queues or without routers, where it is exact for any route). Every message
 *    follows the topology's route. Its hops
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

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "support/budget.hpp"

namespace collsched {

struct Construction;  // verifier/synth/problem/construction.hpp: a row of the constructions' registry

enum class SatBackend : std::uint8_t { cadical, z3 };
std::string_view to_string(SatBackend);

/// Cardinality encoding used on the CaDiCaL path (Z3 takes cardinalities natively).
enum class CardinalityKind : std::uint8_t { totalizer, sequential };

/// Which walks a personalized message may take: any (every walk the model permits; what
/// `verify` accepts by default) or fixed (the topology's route; `verify --routes fixed`).
/// Dissemination collectives are always searched over every walk.
enum class RouteSpace : std::uint8_t { any, fixed };
std::string_view to_string(RouteSpace);

struct SynthInstance {
    std::shared_ptr<const Topology> topology;
    Model model;
    Collective collective;
    RouteSpace routes = RouteSpace::any;
    /// SCCL's rounds (issue 15): the steps last R rounds in all (each at least one), and a step
    /// of r rounds multiplies every capacity and port limit by r. Only for a fixed number of
    /// steps (the horizon solved is the number of steps). nullopt: every step is one round.
    std::optional<Step> rounds{};
    /// Chunks or rounds: only the hold/cross encodings (free_route, dissemination) take them.
    /// (The chunks per datum are the collective's: Collective::chunks.)
    bool chunked() const { return collective.chunks > 1 || rounds.has_value(); }
};

enum class EncodingKind : std::uint8_t { personal, free_route, dissemination, end_to_end, combining };
std::string_view to_string(EncodingKind);

/// Why the direct encoding of combining (verifier/synth/sat/combining.cpp) does not take an instance
/// ("" when it does): allreduce, reduce_scatter, reduce:R, scan under hop timing on a network
/// of processors.
std::string combining_problem(const SynthInstance&);

/// The encoding an instance gets. Throws InputError saying what is not supported and what is.
EncodingKind encoding_for(const SynthInstance&);

/// True when, for a personalized collective, every schedule with any route can be turned into
/// one on the topology's routes that completes no later: routes are unique (trees) and a
/// message may wait wherever it passes (no routers, or queues=unbounded). docs/synthesis.md,
/// "Fixed routes are exact on trees".
bool fixed_routes_exact(const SynthInstance&);

/// The route space the search covers: RouteSpace::fixed only for a personalized collective
/// with `routes = fixed` where fixed routes are not exact; any otherwise.
RouteSpace searched_routes(const SynthInstance&);

/// The encoding's name with why it is exact, e.g. "personal (fixed routes; exact: routes are
/// unique on trees)" or "free_route (any route)".
std::string encoding_label(const SynthInstance&, EncodingKind);

/// "every schedule of model timing=hop,ports=multi,... with any route" (or "on the topology's
/// fixed routes"): the search space a proof of optimality covers.
std::string search_space(const SynthInstance&);

struct SynthOptions {
    SatBackend backend = SatBackend::cadical;
    CardinalityKind cardinality = CardinalityKind::totalizer;
    bool symmetry = true;  ///< sound symmetry breaking (docs/synthesis.md, "Symmetry")
    bool implied = true;   ///< implied cumulative counting constraints
    /// Tests and benchmarks: run the free-route encoding for a personalized collective even where
    /// the fixed-route one is exact (to compare the two).
    bool force_free_route = false;
    double timeout = 0;    ///< seconds for one solve; 0 means no limit
    /// Encoding stops once this point has passed (the solve then answers unknown, "time limit
    /// during encoding"); default: never.
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    /// An encoding estimated to need more Boolean variables than this is not built (the solve
    /// answers unknown and says so); 0 means no limit. The default keeps CaDiCaL within a few
    /// GB (roughly 100 bytes per variable with its clauses).
    std::uint64_t max_variables = 40'000'000;
    /// The process's resident memory may not exceed this (docs/synthesis.md, "Limits"): an
    /// encoding estimated not to fit is not built, and the encoders, the loading into the solver
    /// and the solve poll the resident size and stop (answer unknown, "memory limit ...") at
    /// MemoryBudget's share `memory_stop` of it. Default: none.
    MemoryBudget memory;
    /// Polled during a solve (CaDiCaL: often; Z3: not at all); returning true stops it.
    std::function<bool()> interrupt;
    /// Called about once a second during a CaDiCaL solve with the seconds spent so far.
    std::function<void(double)> tick;
    /// Hold/cross encodings, to find schedules faster: only schedules invariant under these
    /// permutations of the nodes (automorphisms of the topology and the collective, see
    /// automorphisms()). A restriction, so an UNSAT answer proves nothing: solve() reports it
    /// as unknown ("no invariant schedule").
    std::vector<std::vector<std::uint32_t>> invariant;
    /// CaDiCaL's configuration ("sat" favours finding schedules); empty: its default.
    std::string cadical_config;
    /// A schedule to start from (`optimize --start`): CaDiCaL's initial phases are set to it, true
    /// for every candidate whose transfers are all in it, false for the others. Only a hint: the
    /// answers are the same without it.
    std::shared_ptr<const SendTable> hint;
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
    /// sat with SynthInstance::rounds: the rounds of each step of the witness (index t-1), each
    /// the least the decoded transfers need (so their sum may be below the budget).
    std::vector<Step> step_rounds;
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

/// A proven lower bound on the completion time with the argument that proves it, and what the
/// argument assumes of the search space (docs/synthesis.md, "Lower bounds").
struct Bound {
    Step steps = 0;
    std::string name;    ///< short: "distance", "channel counting", "ports", ...
    std::string detail;  ///< one sentence with the numbers
    /// The route space the argument holds for: any (every walk) or fixed (only messages on the
    /// topology's routes).
    RouteSpace routes = RouteSpace::any;
    /// The facts of the instance the argument uses, e.g. "ports=single", "unique routes (tree)",
    /// "no routers", "shortest-path distances". The model facts are those of the instance the
    /// bound was computed for; `routes` is the one that depends on the search.
    std::vector<std::string> assumes;
};
/// A proven lower bound lies at or below every verified schedule: L > U means a bound is wrong,
/// never that the schedule is optimal (issue 41). The message of the internal error that says so,
/// naming both, for COLLSCHED_ASSERT_MSG(U >= L, bound_above_schedule(...)).
std::string bound_above_schedule(std::string_view bound, std::string_view schedule);
/// Every lower bound collsched can prove without a solver (docs/synthesis.md, "Lower bounds"),
/// also those that hold only on fixed routes; see bound_applies. The rules poll `limits`: a rule
/// a limit stops is left out (cut counting keeps the cuts it counted), and `stopped` (when given)
/// receives one line per rule left out ("receptions: time limit (the lower bounds)"); every
/// bound returned is proved all the same.
std::vector<Bound> lower_bounds(const SynthInstance&, const RunLimits& limits = {}, std::vector<std::string>* stopped = nullptr);
/// Why no schedule exists under inject=once (docs/semantics.md): a datum's source sends it once
/// and every transfer moves it farther from the source, so all its goals must lie on shortest
/// paths through one neighbour; empty when every datum has such a neighbour (or P > 4096).
std::string inject_once_infeasible(const SynthInstance&);
/// Why no reduction exists under the buffer rule (docs/semantics.md, "Reductions"): a buffer only
/// grows and ends as its goal, so a partial holding a(i) passes from k only to processors whose
/// goal holds a(i) and a(k) (scan on a torus: a(1) can never reach processor 3 of torus:3x3);
/// empty when every goal can be reached so (or the check would cost too much: P > 4096).
std::string buffer_rule_infeasible(const SynthInstance&);
/// Whether the bound holds for the instance's search space (searched_routes).
bool bound_applies(const Bound&, const SynthInstance&);

/// A schedule from a known algorithm or a greedy, re-stamped with the instance's model and
/// verified by the direct checker; the shortest one that holds.
struct KnownSchedule {
    SendTable table;
    std::string source;  ///< e.g. "bft_phase_alltoall (Dimakopoulos & Dimopoulos, eq. 3)"
};

/// The constructions' registry as the steps objective reads it (construction.hpp): the rows of the one table,
/// `constructions()` (verifier/time/constructions.hpp), handed down by the caller. It has no default, so no caller
/// runs optimize without the rows, and its rows are never empty (construction.cpp checks).
class ConstructionRows {
public:
    ConstructionRows(const std::vector<Construction>& rows);  // NOLINT(google-explicit-constructor): the table converts
    const std::vector<Construction>& rows() const { return *rows_; }

private:
    const std::vector<Construction>* rows_;
};

/// The known schedule of least steps: the rows of stage `known` (constructed_schedule, construction.hpp) or, for
/// combining instances, the duality's (search/duality.cpp).
/// With `constructions` false only the papers' algorithms and the greedy are tried (not
/// collsched's own constructions, e.g. the XOR-invariant total exchange).
/// The greedy schedules give up (and are left out) once `deadline` has passed.
/// `memory`: no construction starts once the resident set has reached 90% of it.
std::optional<KnownSchedule> known_schedule(const SynthInstance&, const ConstructionRows&, bool constructions = true,
                                            std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
                                            const MemoryBudget& memory = {});

/// The registry's rows of stage `translates` (stage_schedule): collsched's constructions by translates
/// (verifier/constructions/steps/translate_packing.hpp) alone, on a machine
/// with a checked translation group: the allgather's spanning tree, the total exchange's
/// messages of one processor; verified like known_schedule's. Cheap (one quotient of P
/// elements), so optimize tries it before the greedy and the known schedules; `lower_bound` (a
/// proven one, 0 if none) lets the seeded runs stop once one meets it.
/// The table's size is estimated before it is built and refused (nullopt) when it does not fit
/// what is left of `memory`.
std::optional<KnownSchedule> translation_schedule(const SynthInstance&, const ConstructionRows&, Step lower_bound,
                                                  std::chrono::steady_clock::time_point deadline, const MemoryBudget& memory = {});

/// NCCL's ring algorithms on k Hamiltonian cycles that the machine runs at once, one chunk per
/// ring channel and step within capacities, link groups and ports
/// (verifier/constructions/steps/rings.cpp): allgather of any C, reduce_scatter (C a multiple of P) and
/// allreduce, under hop timing without routers, rounds, half-duplex ports or inject=once; k as
/// large as the search finds within `deadline` (at most every processor's per-step limit).
/// Verified like known_schedule's. The steps builder of the registry's row `rings` (stage `chunks`).
std::optional<KnownSchedule> ring_schedule(const SynthInstance&, std::chrono::steady_clock::time_point deadline);

struct HierarchicalResult;  // verifier/synth/search/hierarchical.hpp

enum class OptStatus : std::uint8_t { proved, found, timeout, infeasible };
std::string_view to_string(OptStatus);

struct OptimizeProgress {
    Step horizon = 0;
    SatBackend backend = SatBackend::cadical;
    double elapsed = 0;  ///< seconds since optimize started
    bool done = false;   ///< the solve for this horizon has ended with `answer`
    Answer answer = Answer::unknown;
};

/// Goal pairs optimize takes at most by default (OptimizeOptions::max_goals).
inline constexpr std::uint64_t default_max_goals = std::uint64_t{1} << 22;

struct OptimizeOptions {
    explicit OptimizeOptions(ConstructionRows rows) : registry(rows) {}
    ConstructionRows registry;  ///< the constructions' rows: the upper bounds (constructions(), verifier/time/constructions.hpp)
    SynthOptions synth;
    double timeout = 0;        ///< total seconds; 0 means no limit
    bool incremental = false;  ///< one solver across horizons, horizons as assumptions
    bool constructions = true; ///< collsched's own constructions as upper bounds (known_schedule)
    /// When a counting bound already proves the optimum T, still ask the solver to show T-1
    /// UNSAT (a second, independent proof; its time is what `probe` reports as the solver's).
    bool solver_proof = false;
    /// More goal pairs than this (0: no limit) is bad input (InputError) before any work.
    std::uint64_t max_goals = default_max_goals;
    std::function<void(const OptimizeProgress&)> progress;
    /// Only the greedy synthesizer (verifier/constructions/steps/greedy.hpp) and the counting bounds, no solver.
    bool greedy_only = false;
    /// Machines with more processors than this start from the greedy synthesizer's schedule.
    std::uint32_t greedy_from = 64;
    std::uint64_t seed = 1;  ///< the greedy's seed
    /// A verified schedule of the instance (`optimize --start FILE`): an upper bound (the search
    /// asks only for fewer steps) and the solver's hint (SynthOptions::hint).
    std::shared_ptr<const SendTable> start;
    std::string start_source;  ///< "the start schedule t.json"
    /// Machines of boxes: the hierarchical composition (verifier/synth/search/hierarchical.hpp) as an upper
    /// bound, with the counting bounds and the greedy, no solver on the whole machine.
    bool hierarchical = false;
    /// Threads for independent work that does not share a solver: the hierarchical compositions
    /// (each laid out, compacted and verified on its own). The answers do not depend on it.
    std::uint32_t jobs = 1;
};

struct Attempt {
    Step horizon = 0;
    Answer answer = Answer::unknown;
    double seconds = 0;
    std::string reason;  ///< unknown: why (SynthResult::reason)
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
    std::vector<Bound> bounds;        ///< every static lower bound (those that apply first)
    std::vector<std::string> bounds_stopped;  ///< the bound rules a limit left out, with the limit
    std::vector<Attempt> attempts;
    EncodingKind encoding = EncodingKind::personal;
    RouteSpace routes = RouteSpace::any;  ///< the route space searched (searched_routes)
    double seconds = 0;
    std::string note;                 ///< infeasible: why
    struct {
        bool ran = false;
        bool only = false;            ///< greedy_only: no solver ran
        std::optional<Step> steps;    ///< its verified schedule's steps
        double seconds = 0;           ///< synthesis and verification
        double verify_seconds = 0;
        std::string reason;           ///< no schedule: why
    } greedy;                         ///< the greedy synthesizer, when it ran
    /// The hierarchical composition, when OptimizeOptions::hierarchical asked for it.
    std::shared_ptr<const HierarchicalResult> hierarchical;
};

/// The set-up of optimize (bounds, schedules) walks every goal pair: more than `max_goals`
/// (0: no limit) is refused (InputError) before any work, here and by the callers that run
/// other work first (pareto).
void refuse_goal_pairs(const SynthInstance&, std::uint64_t max_goals);
/// The same from the collective, the processor count and the topology's spec alone (before a
/// graph file is read: Topology::declared_processors).
void refuse_goal_pairs(const Collective&, std::uint32_t processors, std::string_view topology, std::uint64_t max_goals);

/// The least T between the proven lower bound and the best known schedule: solves horizons
/// downward from the upper bound; a SAT answer jumps below the witness found, the first UNSAT
/// (or reaching the lower bound) settles it. Ends at the time limit with the best bounds so far.
OptimizeResult optimize(const SynthInstance&, const OptimizeOptions&);

/// Whether `optimize` takes an instance beyond the collective's limit of goal pairs
/// (max_goal_pairs) in the quotient of a translation group: allgather of one chunk, one round
/// per step, hop timing, multi or single ports, a checked group (docs/synthesis.md, "A check in
/// the quotient"). Empty when it does, else why not.
std::string quotient_problem(const SynthInstance&);
/// Throws InputError naming the size and quotient_problem's reason when it is not empty.
void require_quotient(const SynthInstance&);

/// optimize() for such an instance: counting bounds of processor 0 (receptions, distance; every
/// processor is processor 0 moved), the translates of one spanning tree, checked in the quotient
/// by check_translates; no table is built, no solver runs. Throws InputError when
/// quotient_problem is not empty.
OptimizeResult optimize_in_quotient(const SynthInstance&, const OptimizeOptions&);

}  // namespace collsched
