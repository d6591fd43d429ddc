/** \file
 * Latency against bandwidth (issue 15): the Pareto frontier of (steps S, rounds per chunk R/C)
 * of a collective on a topology, every point proved. A schedule with C chunks per datum and S
 * steps lasting R rounds in all costs S*alpha + R*(M/C)*beta for data of M bytes per datum.
 * `bandwidth_bounds` proves lower bounds on R/C by cut counting (no solver); `solve_rounds`
 * decides one instance (S, C, R) with the synthesizer (SynthInstance::chunks and ::rounds);
 * `pareto` walks S upward from the least steps and, for each S, finds the least R/C over
 * C <= K, stopping when the bandwidth bound is met. docs/synthesis.md, "Chunks, rounds and the
 * Pareto frontier", has the encoding, the arguments and the measurements.
 */
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "verifier/synth/problem/instance.hpp"

namespace collsched {

class JobSharing;  // support/parallel.hpp

/// A non-negative rational num/den (den > 0), kept reduced; compared exactly.
struct Ratio {
    std::uint64_t num = 0;
    std::uint64_t den = 1;
    static Ratio of(std::uint64_t n, std::uint64_t d);
    /// "7/6", or "2" when den is 1.
    std::string text() const;
    double value() const { return static_cast<double>(num) / static_cast<double>(den); }
    /// The least integer x with x >= this * k.
    std::uint64_t ceil_times(std::uint64_t k) const { return (num * k + den - 1) / den; }
    friend bool operator<(const Ratio& a, const Ratio& b) { return a.num * b.den < b.num * a.den; }
    friend bool operator<=(const Ratio& a, const Ratio& b) { return a.num * b.den <= b.num * a.den; }
    friend bool operator==(const Ratio& a, const Ratio& b) { return a.num * b.den == b.num * a.den; }
};

/// The cut behind a bandwidth bound found by max flow (verifier/synth/bounds/bandwidth.hpp): the set S
/// of nodes, the data that start inside and must leave it, and what leaves it per round.
struct CutCertificate {
    std::vector<std::uint32_t> inside;       ///< processors in S
    std::vector<std::uint32_t> routers;      ///< routers in S (node numbers)
    std::vector<std::string> crossing;       ///< what leaves S per round: "group nic7.in (1)", "channel 3->4 (2)", ...
    std::uint64_t demand = 0;                ///< data (messages) that start inside S and must leave it
    std::uint64_t capacity = 0;              ///< chunks per round that can leave S
    bool reversed = false;                   ///< read on the reversed network (gather, reductions): "leave" is "enter"
    bool exact = true;                       ///< the network is exact for the model (no relaxation)
    std::vector<std::string> relaxations;    ///< otherwise what was relaxed
    std::uint32_t flows = 0;                 ///< max flows computed
    std::uint32_t sinks = 0;                 ///< processors checked (one per orbit)
    /// "": the search ended, the ratio is the largest. Else the limit that stopped it ("time
    /// limit"): the cut is still a cut and its ratio a proved bound, but a larger one may exist.
    std::string stopped;
};

/// A proved lower bound on rounds per chunk (R/C) for any number of chunks and steps.
struct BandwidthBound {
    Ratio rounds_per_chunk;
    std::string name;    ///< "cut", "hops", "cut (max flow)"
    std::string detail;  ///< the argument with its numbers (the cut, what must cross it, its capacity)
    std::optional<CutCertificate> certificate = {};  ///< the flow bound's cut
};
/// One decided instance: S steps, C chunks, at most R rounds.
struct RoundsAttempt {
    Step steps = 0;
    std::uint32_t chunks = 1;
    Step rounds = 0;
    Answer answer = Answer::unknown;
    double seconds = 0;   ///< encoding and solving
    std::string reason;   ///< unknown: why
};

/// A verified schedule with its cost.
struct ParetoPoint {
    Step steps = 0;
    std::uint32_t chunks = 1;
    Step rounds = 0;           ///< the table's rounds (sum over its steps)
    std::vector<Step> step_rounds;
    SendTable table;
    Ratio rounds_per_chunk() const { return Ratio::of(rounds, chunks); }
};

/// What was settled for one number of steps S.
struct ParetoRow {
    Step steps = 0;
    std::optional<ParetoPoint> best;  ///< the least R/C found with S steps (strictly below the rows before)
    bool proved = true;               ///< every (C, R) below `best` (and below the previous rows) was decided UNSAT or excluded by a bound
    bool frontier = false;            ///< best is a point of the frontier
    std::string excluded;             ///< what was shown impossible, one sentence
    std::vector<RoundsAttempt> attempts;
};

struct ParetoOptions {
    explicit ParetoOptions(ConstructionRows rows) : registry(rows) {}
    ConstructionRows registry;  ///< the constructions' rows, for the least steps (OptimizeOptions::registry)
    SynthOptions synth;
    std::uint32_t max_chunks = 8;  ///< K: the search covers C = 1..K
    Step max_steps = 0;            ///< 0: no limit besides the natural end (see pareto)
    double timeout = 0;            ///< total seconds; 0 means none
    double solve_timeout = 0;      ///< seconds for one (S, C, R); 0: what is left of `timeout`
    /// First look for each schedule among those invariant under the topology's automorphisms
    /// (faster on symmetric machines; never used for a proof).
    bool use_automorphisms = true;
    /// Called before (done = false) and after every solve, on the calling thread, in the walk's
    /// order (a batch's calls are announced together, their answers one by one as they are read).
    std::function<void(const RoundsAttempt&, bool done, double elapsed)> progress;
    /// Threads for the solver calls of a row: the walk's next `jobs` pairs are decided at once
    /// (docs/synthesis.md, "Threads and MPI ranks"); the rows are the same for every number.
    unsigned jobs = 1;
    /// Other processes sharing the calls (MPI ranks, cli/mpi_share.hpp); null: this one alone.
    /// The leader walks and reports; on a follower pareto answers the leader's calls until its
    /// run ends and returns an empty result.
    std::shared_ptr<JobSharing> sharing;
};

struct ParetoResult {
    OptimizeResult least_steps;           ///< the least steps with one chunk and one round per step
    std::vector<BandwidthBound> bounds;   ///< bandwidth bounds, largest first
    Ratio bandwidth_bound;                ///< the largest (0 when none)
    /// The first row's steps: the least steps of schedules with any rounds per step that the
    /// distance bound allows (at most least_steps' optimum, the least one-round steps).
    Step first_steps = 0;
    std::vector<ParetoRow> rows;          ///< S = first_steps, first_steps + 1, ...
    /// The bandwidth end (verifier/constructions/steps/tree_packing.hpp): a packed schedule, verified; when its R/C
    /// equals the bandwidth bound it is proved bandwidth-optimal by the bound's cut and ends the
    /// walk at its number of steps (a row of its own).
    std::optional<ParetoPoint> packed;
    std::uint32_t packed_depth = 0;       ///< its deepest tree
    bool packed_optimal = false;          ///< its R/C meets the bandwidth bound (of the dual, for reductions by duality)
    std::string packed_note;              ///< why there is none, or what it is
    bool complete = false;                ///< the frontier within C <= K is proved complete
    std::string end;                      ///< why the walk ended
    double seconds = 0;
};

/// Decides "a schedule with `steps` steps, `chunks` chunks and at most `rounds` rounds exists";
/// sat gives the table (verified) in SynthResult::witness with its rounds per step.
SynthResult solve_rounds(const SynthInstance&, Step steps, std::uint32_t chunks, Step rounds, const SynthOptions&);

/// The frontier: S from the distance bound (the least steps any rounds per step allow, at most
/// the least one-round steps) upward; for each S and each C = 1..K the rounds R from
/// max(S, ceil(bound * C)) while R/C is below the best of the rows before, first SAT wins.
/// Feasibility is monotone in R (one more round in any step keeps a schedule valid), so the
/// first SAT for (S, C) is the least R for it below that line. Ends when the bandwidth bound is
/// met, when no R/C below the last point is possible with C <= K and R >= S, at max_steps, or at
/// the time limit (then incomplete).
ParetoResult pareto(const SynthInstance&, const ParetoOptions&);

}  // namespace collsched
