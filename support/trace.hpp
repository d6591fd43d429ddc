/** \file
 * Phase marks for finding where a run's time and memory go (docs/performance.md, "Where the time
 * goes"): with `COLLSCHED_TRACE=1` in the environment, `trace("...")` prints one line on stderr,
 * the seconds since the process started, the resident size, and what starts or ends. Without it a
 * mark costs one load of a cached flag. Marks sit between phases (a provider, a shape's table, a
 * check), never in a per-transfer loop; output is for people, not a format.
 *
 *     [  12.345 s   1,234 MB] constructions: hierarchical rsag+ring, 1 piece: built (551,104 transfers)
 */
#pragma once

#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace collsched {

/// Whether COLLSCHED_TRACE is set to something other than "" or "0" (read once).
bool tracing();
/// Prints one mark (when tracing).
void trace_line(std::string_view what);

template <class... Args>
void trace(fmt::format_string<Args...> f, Args&&... args) {
    if (tracing()) trace_line(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace collsched
