/** \file
 * "Which schedule wins at which size" (`collsched compare`, docs/time.md): every schedule's
 * predicted time at every size of a grid, the winner per size, the sizes where the winner
 * changes (found between the grid points to 0.1 %: find_crossover), the speed-up of the winner over a
 * baseline, and an SVG plot of time or algorithm bandwidth against size on log axes.
 */
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "runtime/timing.hpp"

namespace collsched {

enum class TimeKind { asynchronous, synchronous };

/// What predicted times are taken on (docs/time.md, "Executors"): the topology's link speeds or one
/// speed for every channel (`--link`), and the executor that runs the tables (none: the ideal one,
/// the network's share). An executor with several protocols runs a table at a size in the fastest
/// of them, as NCCL's tuner picks a protocol per size and an export writes one per size range.
struct TimeBasis {
    std::optional<LinkSpeed> link;
    std::optional<ExecutorModel> executor;
    TimeBasis() = default;
    TimeBasis(std::optional<LinkSpeed> l) : link(std::move(l)) {}  // NOLINT: implicit, a --link alone
    TimeBasis(std::optional<LinkSpeed> l, std::optional<ExecutorModel> e) : link(std::move(l)), executor(std::move(e)) {}
    /// No executor, or the ideal one: times are the network's share.
    bool ideal() const { return !executor || executor->kind == ExecutorKind::ideal; }
    /// The executor's name ("ideal" without one).
    std::string executor_name() const;
    /// The protocols tried at every size: the executor's, {none} for the ideal one.
    std::vector<Protocol> protocols() const;
    /// The options of one prediction at `size` under protocol p.
    TimeOptions at(double size, Protocol p = Protocol::none) const;
    /// Two times the basis cannot tell apart (within the executor's validated error; exact for ideal).
    bool tie(double a, double b) const;
};

/// A table's time at one size on a basis: the kind that decides, the other kind, and the protocol
/// that gave them (the fastest by the kind that decides).
struct BasisTime {
    double seconds = 0, other = 0;
    Protocol protocol = Protocol::none;
};
/// With `deadline`: the asynchronous runs stop at it (LimitReached, TimeOptions::deadline).
BasisTime time_on(const TimingPlan&, double size, const TimeBasis&, TimeKind decides, Deadline deadline = {});

struct Contender {
    std::string name;  ///< the file's stem, made unique
    std::string file;
    const SendTable* table = nullptr;
};

struct Crossover {
    double size = 0;            ///< where the two times are equal (to 0.1 %: find_crossover); 0 when not searched
    std::size_t from = 0, to = 0;  ///< contenders: the winner below and above it
    double lo = 0, hi = 0;      ///< the neighbouring grid points it lies between
    bool searched() const { return size > 0; }  ///< false: the time limit came before the search ended
};

struct Comparison {
    std::vector<double> sizes;
    TimeKind kind = TimeKind::asynchronous;
    /// seconds[c][i]: contender c at sizes[i], the chosen kind; other[c][i]: the other kind.
    std::vector<std::vector<double>> seconds, other;
    /// protocol[c][i]: the protocol contender c runs at sizes[i] (empty on the ideal executor).
    std::vector<std::vector<Protocol>> protocol;
    std::vector<std::size_t> winner;  ///< per size
    std::vector<Crossover> crossovers;
    std::size_t baseline = 0;
};

/// Predicts every contender at every size. Contenders must run the same collective on the same
/// number of processors (InputError otherwise). `jobs`: threads for the predictions (each on its
/// own; the answer does not depend on it), fewer when the memory budget holds fewer runs at once.
/// Past `deadline` no plan or prediction starts and LimitReached says how many were made; a
/// crossover search it stops is left unsearched (compare_predicted).
Comparison compare(const std::vector<Contender>& cs, const std::vector<double>& sizes, const TimeBasis& basis,
                   TimeKind kind, std::size_t baseline, unsigned jobs = 1, Deadline deadline = {});
/// The same with each contender's timing plan already built (plans[c] of cs[c]'s table).
Comparison compare(const std::vector<Contender>& cs, const std::vector<TimingPlan>& plans, const std::vector<double>& sizes,
                   const TimeBasis& basis, TimeKind kind, std::size_t baseline, unsigned jobs = 1, Deadline deadline = {});
/// The same with every time already predicted (seconds[c][i] of the kind that decides, other[c][i]
/// the other kind, each plans[c].predict at sizes[i]): the winners and the crossovers, as
/// `optimize --size` has them from choosing what to check (protocol[c][i] the protocol of each, empty
/// on the ideal executor; bases[c] what plan c was timed on, empty: `basis` for every plan).
/// A crossover whose search `deadline` stops (a probe of two tables of two million transfers each
/// takes seconds on 1,024 GPUs) is left unsearched: its grid points only (Crossover::searched()).
Comparison compare_predicted(const std::vector<TimingPlan>& plans, std::vector<std::vector<double>> seconds, std::vector<std::vector<double>> other,
                             const std::vector<double>& sizes, const TimeBasis& basis, TimeKind kind, std::size_t baseline,
                             unsigned jobs = 1, Deadline deadline = {}, std::vector<std::vector<Protocol>> protocol = {},
                             std::vector<TimeBasis> bases = {});

/// The width of the bracket a crossover is found to: its ends a factor 1.001 apart (0.1 %).
inline constexpr double crossover_ratio = 1.001;
/// The search of compare()'s crossovers (docs/time.md, "Which schedule wins at which size") on a
/// difference `d` of two times that changes sign between the sizes lo < hi (dlo = d(lo) and
/// dhi = d(hi) of opposite signs): it narrows a bracket [l, h] of a sign change until h / l <=
/// crossover_ratio and returns sqrt(l h), within a factor 1.0005 of the sign change. Chords first
/// (regula falsi on d against the size, Illinois: the value at an end kept twice in a row halved;
/// each probe at least a factor sqrt(crossover_ratio) inside the bracket, so that a probe next to
/// a sign change closes it), bisection on log size once a chord's probe is far from zero (more
/// than a quarter of the smaller end's |d|) or the probes outnumber the halvings of the bracket by
/// more than one. Between changes of the event order d is affine in the size: two probes there,
/// where bisection takes 11 or 12 (a factor 4 or 16); never more than two beyond bisection's
/// count. `probes` (when given) is increased by the calls of `d`; `bracket` (when given) receives [l, h].
double find_crossover(const std::function<double(double)>& d, double lo, double hi, double dlo, double dhi, int* probes = nullptr,
                      std::pair<double, double>* bracket = nullptr);
/// compare()'s crossover of two tables whose times `time(0, M)` and `time(1, M)` are at_lo at lo
/// and at_hi at hi: find_crossover on their difference, with one shortcut. When its first probe (a
/// chord's) is far from zero and one table's time there is close to the line through its times at
/// lo and hi (off by at most a quarter of the smaller |d| at lo, hi and the probe: the other
/// table's time jumps, a change of its event order), the bisection that follows predicts only the
/// other table and takes this one's time from the broken line through its predicted times, until
/// a probe's difference is within four times that table's distance from the line at the first
/// probe (too close to zero for the line to tell its sign): exact from there. The
/// ends of the bracket found are then predicted exactly: when the exact difference changes sign
/// between them that is the answer, else the search runs again, exactly, on the narrowest bracket
/// of a sign change among the sizes predicted exactly. Either way the answer is the middle of a
/// bracket of a sign change of the exact difference, as without the shortcut. `two_threads`: the
/// two tables of a probe on two threads; `predictions` (when given) is increased by the calls of
/// `time` per table.
double find_table_crossover(const std::function<double(std::size_t, double)>& time, double lo, double hi, std::array<double, 2> at_lo,
                            std::array<double, 2> at_hi, bool two_threads = false, std::array<int, 2>* predictions = nullptr);

/// What the plot shows against size: the time, or nccl-tests' algorithm bandwidth.
enum class PlotKind { time, algbw };

/// A standalone SVG document: one line per contender, log axes, the crossovers marked, a legend.
std::string comparison_svg(const std::vector<Contender>& cs, const Comparison& cmp, PlotKind plot, const std::string& title);

}  // namespace collsched
