/** \file
 * The runs of one step in transfers sorted by step: what every replay of a table walks (the
 * simulator's hop and round loops, the Z3 engine's round fixpoint, the per-rank tracer).
 */
#pragma once

#include <cstddef>
#include <iterator>

namespace collsched {

/// Calls `f(step, b, e)` for each maximal run [b, e) of records with equal `.step`, in order, in
/// `xs` sorted by step (any random-access range of records with a `step`, such as a SendTable's
/// transfers); stops at the first call that returns false. Returns whether every call returned
/// true (also when `xs` is empty).
template <class Range, class F>
bool for_each_step_run(const Range& xs, F&& f) {
    const std::size_t n = std::size(xs);
    for (std::size_t b = 0; b < n;) {
        std::size_t e = b + 1;
        while (e < n && xs[e].step == xs[b].step) ++e;
        if (!f(xs[b].step, b, e)) return false;
        b = e;
    }
    return true;
}

}  // namespace collsched
