/** \file
 * The proved lower bounds on time (verifier/time/time_bound.hpp) as `optimize --size`, `pareto
 * --size` and `bandwidth --size` report them: the JSON object of one bound, the gap of a time over
 * its bound, the text lines per size (moved from tools/time_objective.hpp, issue 42).
 */
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "verifier/time/time_bound.hpp"
#include "verifier/time/time_bound_executor.hpp"

namespace collsched {

/// `time_bound` of --json: {"seconds", "term", "detail", "latency_s", "bandwidth_s", "model",
/// "assumptions", "certificate": {"inside", "crossing", "demand_per_byte", "bandwidth_Bps"}}.
nlohmann::ordered_json bound_json(const TimeBounds&, const TimeBound&);

/// `executor_bound` of --json: {"seconds", "given_by" ("bound" or "exact"), "executor", "protocol", "launch_s",
/// "network_s" (null when exact), "space", "family" (the rows narrowed to one, or null), "any_table_s" (the bound on
/// any table of the rows' executors), "assumptions", "per_protocol": [{"executor", "protocol", "seconds"}],
/// "exact": {"executor", "tables", "table", "protocol", "seconds"} or null, "bound": the row's bound_json or null}.
nlohmann::ordered_json bound_json(const ExecutorBounds&, const ExecutorBound&);

/// The gap of a time over its bound in percent: 0 within their rounding (1e-9), never "-0.0".
double gap_percent(double time, double bound);

/// The bound at each size as text lines ("time bound at 1 GiB: 8.05 ms (...)") for `bandwidth`
/// and `pareto`; "" when no size.
std::string bound_lines(const TimeBounds&, const std::vector<double>& sizes);

}  // namespace collsched
