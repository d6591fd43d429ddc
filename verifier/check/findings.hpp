/** \file
 * Shared by the direct checker's passes (verifier/check/direct.cpp, verifier/check/composite.cpp): the
 * counterexample store and the sweep of router waiting intervals.
 */
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "verifier/check/report.hpp"

namespace collsched::detail {

/// "No step": a step not reached yet (the checkers' first arrivals, departures and holdings).
inline constexpr Step never = std::numeric_limits<Step>::max();

/// Keeps the first few counterexamples of each property and counts all of them.
class Findings {
public:
    Findings(VerifyReport& r, std::size_t cap) : report_(r), cap_(cap) {}

    /// Whether a violation of p would still be shown (lets callers skip building details).
    bool wants(Property p) const { return report_.violation_count[static_cast<std::size_t>(p)] < cap_; }

    void add(Property p, Violation v) {
        auto i = static_cast<std::size_t>(p);
        if (report_.violation_count[i]++ < cap_) {
            v.property = p;
            report_.violations.push_back(std::move(v));
        }
    }
    void count(Property p, std::uint64_t n = 1) { report_.violation_count[static_cast<std::size_t>(p)] += n; }

private:
    VerifyReport& report_;
    std::size_t cap_;
};

/// A message waiting in a router at the step boundaries from..to inclusive (replicate=yes).
struct WaitInterval {
    std::uint32_t router;
    Step from, to;
};

/// Queue bound with replicate=yes: sweeps the waiting intervals collected per (router, message)
/// and reports every boundary where a router holds more than `bound` waiting messages.
inline void sweep_waiting(const std::vector<WaitInterval>& waiting, std::uint32_t nodes, std::uint32_t bound, Findings& found) {
    if (waiting.empty()) return;
    struct Event {
        Step boundary;
        std::uint32_t router;
        int delta;
    };
    std::vector<Event> ev;
    ev.reserve(2 * waiting.size());
    for (const WaitInterval& w : waiting) {
        ev.push_back({w.from, w.router, +1});
        ev.push_back({w.to + 1, w.router, -1});
    }
    std::sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) { return std::tie(a.boundary, a.delta) < std::tie(b.boundary, b.delta); });
    std::vector<std::int64_t> q(nodes, 0);
    for (std::size_t i = 0; i < ev.size();) {
        Step b = ev[i].boundary;
        std::vector<std::uint32_t> up;
        for (; i < ev.size() && ev[i].boundary == b; ++i) {
            q[ev[i].router] += ev[i].delta;
            if (ev[i].delta > 0) up.push_back(ev[i].router);
        }
        std::sort(up.begin(), up.end());
        up.erase(std::unique(up.begin(), up.end()), up.end());
        for (std::uint32_t r : up)
            if (q[r] > static_cast<std::int64_t>(bound))
                found.add(Property::queues, {Property::queues, b, std::nullopt, Node{r}, {},
                                             fmt::format("{} messages wait in the router after step {} but the queue bound is {}", q[r], b,
                                                         bound)});
    }
}

}  // namespace collsched::detail
