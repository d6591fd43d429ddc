/** \file
 * "Which schedule wins at which size" (`collsched compare`, docs/time.md): every schedule's
 * predicted time at every size of a grid, the winner per size, the sizes where the winner
 * changes (found between the grid points to 0.1 %), the speed-up of the winner over a
 * baseline, and an SVG plot of time or algorithm bandwidth against size on log axes.
 */
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "runtime/timing.hpp"

namespace collsched {

enum class TimeKind { asynchronous, synchronous };

struct Contender {
    std::string name;  ///< the file's stem, made unique
    std::string file;
    const SendTable* table = nullptr;
};

struct Crossover {
    double size = 0;            ///< where the two times are equal (to 0.1 %)
    std::size_t from = 0, to = 0;  ///< contenders: the winner below and above it
};

struct Comparison {
    std::vector<double> sizes;
    TimeKind kind = TimeKind::asynchronous;
    /// seconds[c][i]: contender c at sizes[i], the chosen kind; other[c][i]: the other kind.
    std::vector<std::vector<double>> seconds, other;
    std::vector<std::size_t> winner;  ///< per size
    std::vector<Crossover> crossovers;
    std::size_t baseline = 0;
};

/// Predicts every contender at every size. Contenders must run the same collective on the same
/// number of processors (InputError otherwise).
Comparison compare(const std::vector<Contender>& cs, const std::vector<double>& sizes, const std::optional<LinkSpeed>& link,
                   TimeKind kind, std::size_t baseline);
/// The same with each contender's timing plan already built (plans[c] of cs[c]'s table), as
/// `optimize --size` has them from choosing what to check.
Comparison compare(const std::vector<Contender>& cs, const std::vector<TimingPlan>& plans, const std::vector<double>& sizes,
                   const std::optional<LinkSpeed>& link, TimeKind kind, std::size_t baseline);
/// The same with every time already predicted (seconds[c][i] of the kind that decides, other[c][i]
/// the other kind, each plans[c].predict at sizes[i]): the winners and the crossovers.
Comparison compare_predicted(const std::vector<TimingPlan>& plans, std::vector<std::vector<double>> seconds, std::vector<std::vector<double>> other,
                             const std::vector<double>& sizes, const std::optional<LinkSpeed>& link, TimeKind kind, std::size_t baseline);

/// What the plot shows against size: the time, or nccl-tests' algorithm bandwidth.
enum class PlotKind { time, algbw };

/// A standalone SVG document: one line per contender, log axes, the crossovers marked, a legend.
std::string comparison_svg(const std::vector<Contender>& cs, const Comparison& cmp, PlotKind plot, const std::string& title);

}  // namespace collsched
