// The bound on an executor (verifier/time/time_bound_executor.hpp; the proof: docs/time.md, "The
// bound on an executor", and the file comment of the header).
#include "verifier/time/time_bound_executor.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "runtime/timing.hpp"
#include "support/assert.hpp"
#include "support/units.hpp"

namespace collsched {

namespace {

std::string protocols_text(const ExecutorModel& e) {
    std::vector<std::string> ps;
    for (const ProtocolRow& r : e.protocols) ps.emplace_back(to_string(r.protocol));
    return fmt::format("{}", fmt::join(ps, ", "));
}

/// The space of the rows' parts and the exact set: "any table timed by executor mscclpp ...; and ...".
std::string space_of(const ExecutorBounds& b) {
    std::vector<std::string> spaces;
    for (const auto& [executor, text] : b.parts) spaces.push_back((spaces.empty() ? "any table " : "and any table ") + text);
    if (b.exact) spaces.push_back((spaces.empty() ? "" : "and ") + b.exact->what);
    return fmt::format("{}; {}", fmt::join(spaces, "; "), b.asynchronous ? "the asynchronous time" : "asynchronous and synchronous time");
}

}  // namespace

std::optional<ExecutorBounds> executor_time_bounds(const Topology& t, const Collective& c, const Model& m, const std::vector<ExecutorModel>& executors,
                                                   const std::optional<LinkSpeed>& link, const RunLimits& limits, bool asynchronous) {
    ExecutorBounds out;
    out.asynchronous = asynchronous;
    for (const ExecutorModel& e : executors) {
        if (e.kind == ExecutorKind::ideal) continue;
        out.parts.emplace_back(e.name, fmt::format("timed by executor {} ({}) in any of its protocols ({})", e.name,
                                                   e.calibration.empty() ? "built-in constants" : e.calibration, protocols_text(e)));
        for (const ProtocolRow& row : e.protocols) {
            TimeOptions speeds{0, link};
            speeds.executor = executor_costs(e, row.protocol);
            std::optional<TimeBounds> b = time_bounds(t, c, m, speeds, limits, asynchronous);
            if (!b) return std::nullopt;
            b->model += fmt::format("; on executor {} protocol {}: each channel and group at its class's efficiency over the wire factor "
                                    "(and NCCL's cap per network channel), the hop added to the alpha of a channel out of a processor, the "
                                    "message cost to a channel's latency (to a group's only asynchronous, on its channels no faster than the group)",
                                    e.name, to_string(row.protocol));
            out.rows.push_back({e.name, row.protocol, speeds.executor->launch, std::move(*b)});
        }
    }
    if (out.rows.empty()) return std::nullopt;
    out.space = space_of(out);
    out.assumptions = {
        out.asynchronous ? "the executor model as runtime/timing.cpp times a table asynchronously: a transfer holds its channel and each of its groups "
                           "exclusively for its bytes (at least the data's) at the executor's rate for the class from its start, its connection "
                           "the message beyond the channel's bytes, and arrives at least the channel's alpha (with the hop) after that: the message "
                           "and the alpha after its holding of the channel ends, and of a group no slower than the channel; the launch comes before "
                           "the first transfer"
                         : "the executor model as runtime/timing.cpp times a table: a transfer holds its channel and each of its groups exclusively for its "
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
    if (b.exact)
        for (std::size_t k = 0; k < b.exact->sizes.size(); ++k)
            if (b.exact->sizes[k] == size && b.exact->seconds[k] < r.seconds) r.seconds = b.exact->seconds[k], r.exact = k;
    return r;
}

void bound_exactly(ExecutorBounds& b, ExecutorExact exact, bool whole) {
    if (whole) {
        std::erase_if(b.rows, [&](const ExecutorBoundRow& r) { return r.executor == exact.executor; });
        std::erase_if(b.parts, [&](const auto& p) { return p.first == exact.executor; });
    }
    COLLSCHED_ASSERT_MSG(!b.rows.empty(), "bound_exactly: the executor of the exact set is the only one of the rows");
    b.exact = std::move(exact);
    b.space = space_of(b);
}

void bound_ring_family(ExecutorBounds& b, const Topology& t, const Model& m, const ExecutorModel& e, const std::optional<LinkSpeed>& link,
                       const RingFamily& family, const std::vector<std::pair<std::string, const SendTable*>>& tables, std::vector<std::string>& notes,
                       const RunLimits& limits) {
    std::vector<ExecutorBoundRow> rows = b.rows;
    std::vector<std::string> said;
    bool chained = false, capped = false;
    // the chain's proof matches each departure at a router with a copy of its own (replicate=no, no multicast): under
    // replicate=yes or multicast=routers a departure needs only the first copy, and a share may skip hops
    const bool copies_shared = t.routers() > 0 && (m.replicate || m.multicast_routers);
    if (copies_shared)
        said.push_back(fmt::format("the bound on executor nccl leaves out the rings' chain: under {} a router forwards its first copy to "
                                   "every departure, so a share need not pass every hop (verifier/time/OBJECTIVE.md, \"The chain of a ring\")",
                                   m.replicate ? "replicate=yes" : "multicast=routers"));
    for (ExecutorBoundRow& row : rows) {
        if (row.executor != e.name) continue;
        TimeOptions speeds{0, link};
        speeds.executor = executor_costs(e, row.protocol);
        add_ring_terms(row.bounds, t, m, speeds, family, limits);
        capped = capped || std::ranges::any_of(row.bounds.terms, [](const TimeTerm& x) { return x.name.ends_with("NCCL's cap per GPU"); });
        // the chain of a ring (OBJECTIVE.md, "The chain of a ring"), where every table of the run has one as long
        std::optional<TimeTerm> chain = copies_shared ? std::nullopt : ring_chain_term(t, speeds, family);
        if (!chain) continue;
        std::string miss;
        for (const auto& [name, table] : tables) {
            limits.check("the chains of the rings' tables");
            if (const double c = chain_latency(*table, speeds, limits.deadline); c < chain->latency * (1 - 1e-12)) {
                miss = fmt::format("{}'s longest chain in protocol {} is {}, below the rings' {}", name, to_string(row.protocol),
                                   support::format_seconds(c), support::format_seconds(chain->latency));
                break;
            }
        }
        if (!miss.empty()) {
            said.push_back(fmt::format("the bound on executor nccl in protocol {} leaves out the rings' chain: {}", to_string(row.protocol), miss));
            continue;
        }
        row.bounds.terms.push_back(std::move(*chain));
        chained = true;
    }
    b.any_rows = std::exchange(b.rows, std::move(rows));
    notes.insert(notes.end(), said.begin(), said.end());
    if (chained)
        b.assumptions.push_back("the rings' chain counts on each hop out of a processor its alpha, hop, message and grain (what runtime/timing.cpp "
                                "holds a transfer's connection for at least), and matches each departure at a router with a copy of its own "
                                "(replicate=no, no multicast)");
    if (capped)
        b.assumptions.push_back("in the rings' rows NCCL's LL cap per GPU is counted: every GPU of a ring sends its d x M bytes through it, "
                                "each transfer holding it for its bytes (runtime/timing.cpp); the rows on any table leave it out");
    b.family = fmt::format("in which every GPU and every box of the NCCL graph file sends and receives messages of {} x M bytes at least{} "
                           "(every ring an NCCL graph file holds, as NCCL runs it; each table of the run on executor {} is checked to be one)",
                           family.demand_text, chained ? fmt::format(" and a share passes {} hops one after another (each table of the run checked to have that chain)", family.passes == 1 ? "P-1" : "2(P-1)") : "",
                           e.name);
    for (auto& [executor, text] : b.parts)
        if (executor == e.name) text += " " + b.family;
    b.space = space_of(b);
}

double any_table_seconds(const ExecutorBounds& b, double size) {
    double least = std::numeric_limits<double>::infinity();
    for (const ExecutorBoundRow& r : b.any_rows.empty() ? b.rows : b.any_rows) least = std::min(least, r.launch + evaluate(r.bounds, size).seconds);
    return least;
}

namespace {

/// What gives the bound: the row's executor, protocol and term, or the exact set's table.
std::string given_by(const ExecutorBounds& b, const ExecutorBound& at) {
    if (at.exact)
        return fmt::format("the time of {} (executor {}, protocol {}; exact, not a bound), the least of {}", b.exact->table[*at.exact], b.exact->executor,
                           to_string(b.exact->protocol[*at.exact]), b.exact->what);
    const ExecutorBoundRow& row = b.rows[at.row];
    return fmt::format("protocol {}, {}", to_string(row.protocol), row.bounds.terms.empty() ? "launch" : row.bounds.terms[at.at.best].name);
}

}  // namespace

std::string bound_violation(const ExecutorBound& bound, const ExecutorBounds& b, double predicted, std::string_view what) {
    if (bound.seconds <= predicted * (1 + 1e-9)) return "";
    return fmt::format("the proved lower bound on executor {}'s time {} ({} s, {}) is above the predicted time {} ({} s) of {} at "
                       "{} bytes: a bound or the prediction is wrong",
                       bound.exact ? b.exact->executor : b.rows[bound.row].executor, support::format_seconds(bound.seconds), bound.seconds,
                       given_by(b, bound), support::format_seconds(predicted), predicted, what, bound.size);
}

std::string bound_text(const ExecutorBounds& b, const ExecutorBound& at) {
    const ExecutorBoundRow& row = b.rows[at.row];
    std::string s = at.exact ? fmt::format("{} = {}\n", support::format_seconds(at.seconds), given_by(b, at))
                             : fmt::format("{} = the launch {} (executor {}, protocol {}) + on the protocol's speeds {}", support::format_seconds(at.seconds),
                                           support::format_seconds(row.launch), row.executor, to_string(row.protocol), bound_text(row.bounds, at.at));
    std::vector<std::string> others;
    for (std::size_t i = 0; i < b.rows.size(); ++i)
        others.push_back(fmt::format("{} {} {}", b.rows[i].executor, to_string(b.rows[i].protocol),
                                     support::format_seconds(b.rows[i].launch + evaluate(b.rows[i].bounds, at.size).seconds)));
    if (b.exact)
        for (std::size_t k = 0; k < b.exact->sizes.size(); ++k)
            if (b.exact->sizes[k] == at.size)
                others.push_back(fmt::format("{} on {} {}", b.exact->table[k], b.exact->executor, support::format_seconds(b.exact->seconds[k])));
    s += fmt::format("  the least over the protocols{}: {}\n", b.exact ? " and the exact set" : "", fmt::join(others, "; "));
    s += fmt::format("  holds for {}; assumes {}\n", b.space, fmt::join(b.assumptions, "; "));
    if (!b.any_rows.empty())
        s += fmt::format("  any table on executor {} (what another executor on its transport could reach): {}\n", b.any_rows.front().executor,
                         support::format_seconds(any_table_seconds(b, at.size)));
    return s;
}

}  // namespace collsched
