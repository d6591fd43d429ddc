// The searches' reports (report.hpp): optimize's result, a reduction by duality, the composition.
#include "verifier/synth/search/report.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/table/collective_kinds.hpp"

namespace collsched {

namespace {

/// Which limit ended the search: the last attempt's reason says.
std::string limit_that_ended(const OptimizeResult& r) {
    if (r.attempts.empty()) return "the time limit";
    const std::string& why = r.attempts.back().reason;
    if (why.starts_with("memory limit")) return "the memory limit";
    if (why.find("time limit") != std::string::npos || why.empty()) return "the time limit";
    return "a size limit of the encoder";
}

}  // namespace

nlohmann::ordered_json result_json(const SynthInstance& in, const OptimizeResult& r, const SearchLimits& sa) {
    nlohmann::ordered_json j;
    j["optimum"] = r.optimum ? nlohmann::ordered_json(*r.optimum) : nlohmann::ordered_json();
    j["status"] = to_string(r.status);
    j["lower_bound"] = r.lower_bound;
    j["upper_bound"] = r.upper_bound ? nlohmann::ordered_json(*r.upper_bound) : nlohmann::ordered_json();
    j["seconds"] = r.seconds;
    j["limits"] = limits_json(sa);
    j["topology"] = in.topology->spec();
    j["collective"] = in.collective.to_string();
    j["model"] = to_string(in.model);
    j["encoding"] = to_string(r.encoding);
    {
        auto& sj = j["search"];
        sj["routes"] = to_string(r.routes);
        sj["routes_requested"] = to_string(in.routes);
        sj["model"] = to_string(in.model);
        sj["encoding"] = to_string(r.encoding);
        sj["encoding_label"] = encoding_label(in, r.encoding);
        sj["space"] = search_space(in);
        auto& used = sj["bounds"] = nlohmann::ordered_json::array();
        for (const Bound& b : r.bounds)
            if (bound_applies(b, in)) used.push_back({{"steps", b.steps}, {"name", b.name}, {"routes", to_string(b.routes)}, {"assumes", b.assumes}});
    }
    j["solver"] = sa.solver;
    j["lower_bound_reason"] = r.lower_bound_reason;
    j["solver_unsat"] = r.solver_unsat;
    j["upper_bound_source"] = r.upper_bound_source;
    j["known_schedule"] = r.known_steps ? nlohmann::ordered_json(*r.known_steps) : nlohmann::ordered_json();
    j["known_schedule_source"] = r.known_source;
    auto& bounds = j["bounds"] = nlohmann::ordered_json::array();
    for (const Bound& b : r.bounds)
        bounds.push_back({{"steps", b.steps}, {"name", b.name}, {"detail", b.detail}, {"routes", to_string(b.routes)},
                          {"assumes", b.assumes}, {"used", bound_applies(b, in)}});
    j["bounds_stopped"] = r.bounds_stopped;  // the rules a limit left out
    auto& at = j["attempts"] = nlohmann::ordered_json::array();
    for (const Attempt& a : r.attempts) {
        nlohmann::ordered_json x{{"horizon", a.horizon}, {"answer", to_string(a.answer)}, {"seconds", a.seconds}};
        if (!a.reason.empty()) x["reason"] = a.reason;
        at.push_back(std::move(x));
    }
    if (r.greedy.ran) {
        auto& g = j["greedy"];
        g["steps"] = r.greedy.steps ? nlohmann::ordered_json(*r.greedy.steps) : nlohmann::ordered_json();
        g["only"] = r.greedy.only;
        g["seconds"] = r.greedy.seconds;
        g["verify_seconds"] = r.greedy.verify_seconds;
        if (!r.greedy.reason.empty()) g["reason"] = r.greedy.reason;
    }
    if (!r.note.empty()) j["note"] = r.note;
    return j;
}

nlohmann::ordered_json limits_json(const SearchLimits& sa) {
    const MemoryBudget& mem = sa.memory;
    nlohmann::ordered_json j;
    j["timeout"] = sa.timeout > 0 ? nlohmann::ordered_json(sa.timeout) : nlohmann::ordered_json();
    j["solve_timeout"] = sa.solve_timeout > 0 ? nlohmann::ordered_json(sa.solve_timeout) : nlohmann::ordered_json();
    j["memory"] = mem.none() ? nlohmann::ordered_json() : nlohmann::ordered_json(mem.limit());
    j["peak_memory"] = peak_resident_memory();
    return j;
}

std::string limits_line(const SearchLimits& sa, double seconds) {
    const MemoryBudget& mem = sa.memory;
    std::string time = sa.timeout > 0 ? fmt::format("{:g} s", sa.timeout) : "none";
    if (sa.solve_timeout > 0) time += fmt::format(" ({:g} s per solver call)", sa.solve_timeout);
    return fmt::format("limits: time {}, memory {}; used {:.1f} s, peak {} resident\n", time,
                       mem.none() ? std::string("none") : format_bytes(mem.limit()), seconds, format_bytes(peak_resident_memory()));
}

std::string search_line(const SynthInstance& in, const OptimizeResult& r) {
    return fmt::format("{}; encoding {}", search_space(in), encoding_label(in, r.encoding));
}

std::string bound_line(const SynthInstance& in, const Bound& b) {
    std::string where = b.routes == RouteSpace::any ? "any route" : "fixed routes only";
    std::string s = fmt::format("  {:>5}  {}: {} [{}", b.steps, b.name, b.detail, where);
    if (!b.assumes.empty()) s += fmt::format("; assumes {}", fmt::join(b.assumes, ", "));
    s += "]";
    if (!bound_applies(b, in)) s += " (not used: the search is over any route)";
    return s + "\n";
}

std::string status_sentence(const SynthInstance& in, const OptimizeResult& r) {
    switch (r.status) {
        case OptStatus::proved:
            return fmt::format("optimum: {} steps (proved over {}; a verified {}-step schedule from {}; lower bound by {})", *r.optimum,
                               search_space(in), *r.optimum, r.upper_bound_source, r.lower_bound_reason);
        case OptStatus::found: {
            const Step gap = *r.optimum - r.lower_bound;
            const std::string gaps = fmt::format("gap {} steps, {:.1f}% of the bound", gap, 100.0 * gap / std::max<Step>(1, r.lower_bound));
            if (r.greedy.only || r.hierarchical)
                return fmt::format("best found: {} steps by {} ({}, no solver); proven lower bound {} ({}); {}", *r.optimum,
                                   r.upper_bound_source, r.greedy.only ? "greedy only" : "hierarchical composition and greedy", r.lower_bound,
                                   r.lower_bound_reason, gaps);
            return fmt::format("best found: {} steps, not proved optimal ({} ended the search); proven lower bound {} ({}); {}", *r.optimum,
                               limit_that_ended(r), r.lower_bound, r.lower_bound_reason, gaps);
        }
        case OptStatus::timeout:
            return fmt::format("no schedule found within {}; proven lower bound {} ({})", limit_that_ended(r), r.lower_bound, r.lower_bound_reason);
        case OptStatus::infeasible: return fmt::format("no schedule exists: {}", r.note);
    }
    return {};
}

int exit_code(const OptimizeResult& r) {
    switch (r.status) {
        case OptStatus::proved: return 0;
        case OptStatus::infeasible: return 1;
        default: return 3;
    }
}

std::string witness_comment(const SynthInstance& in, const OptimizeResult& r) {
    std::string c = fmt::format("{} on {}, model {}: {} steps, {}.\n", in.collective.to_string(), in.topology->spec(), to_string(in.model),
                                r.witness ? r.witness->steps() : 0, to_string(r.status));
    c += fmt::format("Search: {}; encoding {}.\n", search_space(in), encoding_label(in, r.encoding));
    if (r.status == OptStatus::proved) c += fmt::format("Lower bound: {}.\n", r.lower_bound_reason);
    else c += fmt::format("Proven lower bound {}: {}.\n", r.lower_bound, r.lower_bound_reason);
    c += fmt::format("Found by: {}. Verified by collsched's direct checker before it was written.\n", r.upper_bound_source);
    c += "Written by collsched optimize/probe (docs/synthesis.md).";
    return c;
}

std::string synthesizable_collectives() {
    return collective_list(&CollectiveRow::spec_form, [](const CollectiveRow& r) { return r.data != coll::Data::any && r.combine != coll::Combine::ordered; },
                           ", ", " and ");
}

std::string result_text(const SynthInstance& in, const OptimizeResult& r, const SearchLimits& sa) {
    std::string s = fmt::format("optimize {} on {} ({}), encoding {}, solver {}\n", in.collective.to_string(), in.topology->spec(),
                                to_string(in.model), to_string(r.encoding), sa.solver);
    s += "search: " + search_line(in, r) + "\n";
    s += "lower bounds (proved by counting):\n";
    for (const Bound& b : r.bounds) s += bound_line(in, b);
    for (const std::string& x : r.bounds_stopped) s += fmt::format("    (not counted: {})\n", x);
    s += r.known_steps ? fmt::format("known schedule: {} steps ({})\n", *r.known_steps, r.known_source)
                       : r.encoding == EncodingKind::combining
                           ? std::string("known schedule: none (combining: the search climbs from the lower bound)\n")
                       : in.chunked() ? std::string("known schedule: none (the known schedules have one chunk and one round per step)\n")
                                      : std::string("known schedule: none (the greedy did not finish)\n");
    if (r.greedy.ran)
        s += r.greedy.steps ? fmt::format("greedy: {} steps in {:.2f} s (verified by the direct checker in {:.2f} s)\n", *r.greedy.steps,
                                          r.greedy.seconds, r.greedy.verify_seconds)
                            : fmt::format("greedy: no schedule ({})\n", r.greedy.reason);
    if (r.hierarchical) s += hierarchical_text(*r.hierarchical);
    if (!r.attempts.empty())
        for (const Attempt& a : r.attempts)
            s += fmt::format("  T = {}: {} ({:.3f} s){}\n", a.horizon, to_string(a.answer), a.seconds,
                             a.reason.empty() ? std::string() : fmt::format(": {}", a.reason));
    s += status_sentence(in, r) + "\n";
    s += limits_line(sa, r.seconds);
    return s;
}

std::string reduction_witness_comment(const SynthInstance& in, const ReductionOptimum& r) {
    return fmt::format("{} on {}: {} steps by duality with {} ({})", in.collective.to_string(), in.topology->spec(),
                       r.optimum ? *r.optimum : 0, r.allgather_instance.collective.to_string(), to_string(r.status));
}

std::string reduction_report(const SynthInstance& in, const ReductionOptimum& r, const SearchLimits& sa, const std::vector<std::string>& witnesses,
                             bool json) {
    const std::string status(to_string(r.status));
    if (json) {
        nlohmann::ordered_json j;
        j["optimum"] = r.optimum ? nlohmann::ordered_json(*r.optimum) : nlohmann::ordered_json();
        j["status"] = status;
        j["lower_bound"] = r.lower_bound;
        j["seconds"] = r.allgather.seconds;
        j["topology"] = in.topology->spec();
        j["collective"] = in.collective.to_string();
        j["model"] = to_string(in.model);
        j["method"] = "duality";
        j["space"] = r.space;
        j["dual"] = result_json(r.allgather_instance, r.allgather, sa);
        j["witness"] = witnesses.empty() || !r.witness ? nlohmann::ordered_json() : nlohmann::ordered_json(witnesses);
        if (!r.stopped.empty()) j["stopped"] = r.stopped;
        return j.dump() + "\n";
    }
    std::string out = fmt::format("optimize {} on {} ({}) by duality with {}\n", in.collective.to_string(), in.topology->spec(),
                                  to_string(in.model), r.allgather_instance.collective.to_string());
    out += "dual: " + result_text(r.allgather_instance, r.allgather, sa);
    out += r.optimum ? fmt::format("{}: {} steps ({}; lower bound {})\n", in.collective.to_string(), *r.optimum, status, r.lower_bound)
                     : fmt::format("{}: no schedule found ({}; lower bound {}){}\n", in.collective.to_string(), status, r.lower_bound,
                                   r.stopped.empty() ? std::string()
                                                     : fmt::format(": {} before the dual's schedule was reversed and checked", r.stopped));
    out += "space: " + r.space + "\n";
    if (!witnesses.empty())
        out += r.witness ? fmt::format("witness: {}\n", fmt::join(witnesses, ", ")) : "witness: none found, nothing written\n";
    return out;
}

std::string hierarchical_text(const HierarchicalResult& h) {
    std::string s = fmt::format("hierarchical: {}\n", h.layout.how);
    for (const HierarchicalPhase& p : h.phases) {
        const OptimizeResult& r = p.result;
        s += fmt::format("  {} phase on {}, copied {} times: ", p.name, p.machine, p.copies);
        s += r.optimum ? fmt::format("{} steps, {} (lower bound {}; {}; by {})\n", *r.optimum, to_string(r.status), r.lower_bound,
                                     r.status == OptStatus::proved ? "over " + p.space : "not proved", r.upper_bound_source)
                       : fmt::format("no schedule ({})\n", to_string(r.status));
    }
    if (!h.compositions.empty()) {
        s += fmt::format("  compositions: {} of {} tried, each compacted and verified whole by the direct checker:\n", h.compositions.size(), h.space);
        for (const Composition& c : h.compositions)
            s += fmt::format("    {:>5} steps (laid out: {}){}  {}\n", c.steps, c.laid_out, c.name == h.best ? " best" : "     ", c.name);
    }
    if (h.table) s += fmt::format("  best: {} steps ({:.2f} s, verification {:.2f} s)\n", h.table->steps(), h.seconds, h.verify_seconds);
    if (!h.reason.empty()) s += fmt::format("  stopped: {}\n", h.reason);
    return s;
}

nlohmann::ordered_json hierarchical_json(const HierarchicalResult& h) {
    nlohmann::ordered_json j;
    j["boxes"] = h.layout.boxes;
    j["per_box"] = h.layout.per_box;
    j["layout"] = h.layout.how;
    auto& ph = j["phases"] = nlohmann::ordered_json::array();
    for (const HierarchicalPhase& p : h.phases)
        ph.push_back({{"name", p.name},
                      {"machine", p.machine},
                      {"copies", p.copies},
                      {"steps", p.result.optimum ? nlohmann::ordered_json(*p.result.optimum) : nlohmann::ordered_json()},
                      {"status", to_string(p.result.status)},
                      {"lower_bound", p.result.lower_bound},
                      {"space", p.space},
                      {"source", p.result.upper_bound_source}});
    auto& cs = j["compositions"] = nlohmann::ordered_json::array();
    for (const Composition& c : h.compositions) cs.push_back({{"name", c.name}, {"laid_out", c.laid_out}, {"steps", c.steps}});
    j["space"] = h.space;
    j["steps"] = h.table ? nlohmann::ordered_json(h.table->steps()) : nlohmann::ordered_json();
    j["best"] = h.best;
    j["seconds"] = h.seconds;
    j["verify_seconds"] = h.verify_seconds;
    if (!h.reason.empty()) j["reason"] = h.reason;
    return j;
}

}  // namespace collsched
