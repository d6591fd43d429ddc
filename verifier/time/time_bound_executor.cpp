// The bound on an executor (verifier/time/time_bound_executor.hpp; the proof: docs/time.md, "The
// bound on an executor", and the file comment of the header).
#include "verifier/time/time_bound_executor.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "runtime/timing.hpp"
#include "support/units.hpp"

namespace collsched {

namespace {

std::string protocols_text(const ExecutorModel& e) {
    std::vector<std::string> ps;
    for (const ProtocolRow& r : e.protocols) ps.emplace_back(to_string(r.protocol));
    return fmt::format("{}", fmt::join(ps, ", "));
}

}  // namespace

std::optional<ExecutorBounds> executor_time_bounds(const Topology& t, const Collective& c, const Model& m, const std::vector<ExecutorModel>& executors,
                                                   const std::optional<LinkSpeed>& link, const RunLimits& limits) {
    ExecutorBounds out;
    std::vector<std::string> spaces;
    for (const ExecutorModel& e : executors) {
        if (e.kind == ExecutorKind::ideal) continue;
        spaces.push_back(fmt::format("{} timed by executor {} ({}) in any of its protocols ({})", spaces.empty() ? "any table" : "and any table",
                                     e.name, e.calibration.empty() ? "built-in constants" : e.calibration, protocols_text(e)));
        for (const ProtocolRow& row : e.protocols) {
            TimeOptions speeds{0, link};
            speeds.executor = executor_costs(e, row.protocol);
            std::optional<TimeBounds> b = time_bounds(t, c, m, speeds, limits);
            if (!b) return std::nullopt;
            b->model += fmt::format("; on executor {} protocol {}: each channel and group at its class's efficiency over the wire factor "
                                    "(and NCCL's cap per network channel), the hop added to the alpha of a channel out of a processor, the "
                                    "message cost to a channel's latency (not a group's)",
                                    e.name, to_string(row.protocol));
            out.rows.push_back({e.name, row.protocol, speeds.executor->launch, std::move(*b)});
        }
    }
    if (out.rows.empty()) return std::nullopt;
    out.space = fmt::format("{}; asynchronous and synchronous time", fmt::join(spaces, "; "));
    out.assumptions = {
        "the executor model as runtime/timing.cpp times a table: a transfer holds its channel and each of its groups exclusively for its "
        "bytes (at least the data's) at the executor's rate for the class, and arrives at least the channel's alpha (with the hop) and "
        "the message cost after its holding of the channel ends, and the alpha after a group's; the launch comes before the first transfer",
        "the grain, NCCL's LL cap per GPU, the connections and the ports only lengthen a holding: not counted",
        "the executor runs a table in the fastest of its protocols: the bound is the least over them",
    };
    return out;
}

ExecutorBound evaluate(const ExecutorBounds& b, double size) {
    ExecutorBound r;
    r.size = size;
    r.seconds = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < b.rows.size(); ++i) {
        const TimeBound at = evaluate(b.rows[i].bounds, size);
        if (const double s = b.rows[i].launch + at.seconds; s < r.seconds) r.seconds = s, r.row = i, r.at = at;
    }
    return r;
}

std::string bound_violation(const ExecutorBound& bound, const ExecutorBounds& b, double predicted, std::string_view what) {
    if (bound.seconds <= predicted * (1 + 1e-9)) return "";
    const ExecutorBoundRow& row = b.rows[bound.row];
    return fmt::format("the proved lower bound on executor {}'s time {} ({} s, protocol {}, {}) is above the predicted time {} ({} s) of {} at "
                       "{} bytes: a bound or the prediction is wrong",
                       row.executor, support::format_seconds(bound.seconds), bound.seconds, to_string(row.protocol),
                       row.bounds.terms.empty() ? "launch" : row.bounds.terms[bound.at.best].name, support::format_seconds(predicted), predicted,
                       what, bound.size);
}

std::string bound_text(const ExecutorBounds& b, const ExecutorBound& at) {
    const ExecutorBoundRow& row = b.rows[at.row];
    std::string s = fmt::format("{} = the launch {} (executor {}, protocol {}) + on the protocol's speeds {}", support::format_seconds(at.seconds),
                                support::format_seconds(row.launch), row.executor, to_string(row.protocol), bound_text(row.bounds, at.at));
    std::vector<std::string> others;
    for (std::size_t i = 0; i < b.rows.size(); ++i)
        others.push_back(fmt::format("{} {} {}", b.rows[i].executor, to_string(b.rows[i].protocol),
                                     support::format_seconds(b.rows[i].launch + evaluate(b.rows[i].bounds, at.size).seconds)));
    s += fmt::format("  the least over the protocols: {}\n", fmt::join(others, "; "));
    s += fmt::format("  holds for {}; assumes {}\n", b.space, fmt::join(b.assumptions, "; "));
    return s;
}

}  // namespace collsched
