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

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "verifier/synth.hpp"

namespace collsched {

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

/// A proved lower bound on rounds per chunk (R/C) for any number of chunks and steps.
struct BandwidthBound {
    Ratio rounds_per_chunk;
    std::string name;    ///< "cut", "hops"
    std::string detail;  ///< the argument with its numbers (the cut, what must cross it, its capacity)
};
/// Every bandwidth bound collsched proves by counting, the largest first (docs/synthesis.md,
/// "The bandwidth bound"). Cut: for a set X of processors, every chunk of a datum that starts
/// outside X and must reach a goal inside X crosses a channel into X, and a step of r rounds
/// carries at most r times the capacity into X (ports and groups included). Hops (personalized
/// collectives): every chunk makes at least dist(s, d) hops, and a round carries at most the
/// sum of all capacities.
std::vector<BandwidthBound> bandwidth_bounds(const SynthInstance&);

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
    SynthOptions synth;
    std::uint32_t max_chunks = 8;  ///< K: the search covers C = 1..K
    Step max_steps = 0;            ///< 0: no limit besides the natural end (see pareto)
    double timeout = 0;            ///< total seconds; 0 means none
    double solve_timeout = 0;      ///< seconds for one (S, C, R); 0: what is left of `timeout`
    /// First look for each schedule among those invariant under the topology's automorphisms
    /// (faster on symmetric machines; never used for a proof).
    bool use_automorphisms = true;
    /// Called before (done = false) and after every solve.
    std::function<void(const RoundsAttempt&, bool done, double elapsed)> progress;
};

struct ParetoResult {
    OptimizeResult least_steps;           ///< the least steps with one chunk and one round per step
    std::vector<BandwidthBound> bounds;   ///< bandwidth bounds, largest first
    Ratio bandwidth_bound;                ///< the largest (0 when none)
    std::vector<ParetoRow> rows;          ///< S = least steps, least + 1, ...
    bool complete = false;                ///< the frontier within C <= K is proved complete
    std::string end;                      ///< why the walk ended
    double seconds = 0;
};

/// Decides "a schedule with `steps` steps, `chunks` chunks and at most `rounds` rounds exists";
/// sat gives the table (verified) in SynthResult::witness with its rounds per step.
SynthResult solve_rounds(const SynthInstance&, Step steps, std::uint32_t chunks, Step rounds, const SynthOptions&);

/// The frontier: S from the least steps upward; for each S and each C = 1..K the rounds R from
/// max(S, ceil(bound * C)) while R/C is below the best of the rows before, first SAT wins.
/// Feasibility is monotone in R (one more round in any step keeps a schedule valid), so the
/// first SAT for (S, C) is the least R for it below that line. Ends when the bandwidth bound is
/// met, when no R/C below the last point is possible with C <= K and R >= S, at max_steps, or at
/// the time limit (then incomplete).
ParetoResult pareto(const SynthInstance&, const ParetoOptions&);

}  // namespace collsched
