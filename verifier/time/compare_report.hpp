/** \file
 * The report of `collsched compare` ("which schedule wins at which size", docs/time.md): per
 * schedule its steps, rounds and chunks, the predicted time at every size with the winner and
 * its speed-up over the baseline, the crossovers, and NCCL's own model of the NCCL contenders.
 * Built here from a runtime/compare.hpp Comparison (the runtime's time model) and NCCL's tuner
 * model (verifier/constructions/nccl); tools/cmd_compare.cpp prints it, the Python module gets it through
 * the command (issue 42).
 */
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/compare.hpp"
#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/time/time_bound_executor.hpp"

namespace collsched {

/// On an executor: the ideal bound (the network's share) and the executor's (time_bound_executor.hpp)
/// of the compared instance, printed beside the times.
struct CompareBounds {
    TimeBounds ideal;
    ExecutorBounds executor;
};

/// What was compared: the contenders (in input order), which of them are NCCL's algorithms (index,
/// algorithm) with the machine as NCCL's model sees it, `--link`, and the plot's file ("" none).
struct ComparedSchedules {
    std::vector<Contender> contenders;
    std::vector<std::pair<std::size_t, nccl::Algorithm>> nccl;
    std::optional<nccl::System> system;
    std::optional<LinkSpeed> link;
    std::string svg;
    std::optional<ExecutorModel> executor = std::nullopt;  ///< --executor (none: the ideal one)
    std::optional<CompareBounds> bounds = std::nullopt;    ///< compare_bounds
    TimeBasis basis() const { return {link, executor}; }
};

/// The bounds of `s`'s instance on its executor (not the ideal one), when every contender is on the
/// first one's machine and the collective has bounds; each contender's two times at every size of
/// `cmp` are checked against the executor's (an internal error names both, as optimize's check).
std::optional<CompareBounds> compare_bounds(const ComparedSchedules& s, const Comparison& cmp, const RunLimits& limits);

/// The spec with a graph file's path normalized (`a/b/../m.json` is `a/m.json`), so one machine
/// reached from two schedule folders is one machine.
std::string machine_name(const Topology&);

/// The text report and `--json`'s object (as text, with its newline).
std::string compare_text(const ComparedSchedules&, const Comparison&);
std::string compare_json(const ComparedSchedules&, const Comparison&);

}  // namespace collsched
