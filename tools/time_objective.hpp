/** \file
 * `optimize --size M` (issue 43): time as the objective. Among every schedule collsched can
 * build and verify for the instance (verifier/time/candidates.hpp: its constructions, the
 * library's schedules that fit the machine, NCCL's algorithms where generated) the one with the
 * least predicted time at each size, with the proved lower bound on time there
 * (verifier/time/time_bound.hpp), the gap, nccl-tests' algbw and busbw and the speed-up over
 * the best NCCL algorithm; `--sizes A..B` gives one row per size and the crossovers. Also the
 * bound lines of `bandwidth --size` and `pareto --size`.
 */
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/commands.hpp"
#include "verifier/synth/problem/instance.hpp"
#include "verifier/time/candidates.hpp"
#include "verifier/time/bound_report.hpp"
#include "verifier/time/time_bound.hpp"

namespace collsched::tools {

struct TimeObjectiveArgs {
    std::vector<double> sizes;
    std::optional<LinkSpeed> link;
    std::string time = "async";
    std::string library = "schedules/catalog.json";
    std::vector<std::string> outputs;
    double timeout = 60;
    bool json = false;
};

/// Runs the time objective on `in` and prints its report; sets ctx.exit_code (0: the winner
/// meets the bound at every size, 3: a gap remains, 1: no schedule).
void run_time_objective(const SynthInstance& in, const TimeObjectiveArgs&, Context& ctx);

/// The library's schedules whose machine is `in`'s (same processors, routers, channels and
/// groups), compiled from the catalog rows of as many processors (a provider for
/// gather_candidates; a missing catalog is a note).
NamedProvider library_provider(const std::string& catalog);

}  // namespace collsched::tools
