// `collsched pareto`'s report (pareto_report.hpp): the frontier, its proofs and bounds, and with
// sizes the frontier points' predicted times beside the proved lower bound on time.
#include "verifier/time/pareto_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/cost_report.hpp"
#include "support/assert.hpp"
#include "support/units.hpp"
#include "verifier/time/bound_report.hpp"
#include "verifier/time/time_bound.hpp"

namespace collsched {

namespace {

/// The predicted times of a frontier point at every --size (docs/time.md).
nlohmann::ordered_json point_times(const ParetoPoint& p, const ParetoReportOptions& args) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (double m : args.sizes) {
        TimePrediction t = predict_time(p.table, TimeOptions{m, args.link});
        a.push_back({{"size", m}, {"synchronous_s", t.synchronous}, {"asynchronous_s", t.asynchronous}});
    }
    return a;
}

/// A proved bound on time above a verified frontier point's predicted time is a bug: stop loudly
/// with both numbers rather than print the bound (docs/time.md, "Lower bounds on time").
void check_time_bounds(const TimeBounds& tb, const ParetoResult& res, const ParetoReportOptions& args) {
    for (const ParetoRow& row : res.rows) {
        if (!row.frontier) continue;
        for (double m : args.sizes) {
            const TimePrediction t = predict_time(row.best->table, TimeOptions{m, args.link});
            const TimeBound b = evaluate(tb, m);
            for (double x : {t.asynchronous, t.synchronous}) {
                const std::string bad = bound_violation(b, tb, x, fmt::format("the frontier point of {} steps", row.steps));
                COLLSCHED_ASSERT_MSG(bad.empty(), bad);
            }
        }
    }
}

std::string step_rounds_text(const std::vector<Step>& r) { return fmt::format("{}", fmt::join(r, "+")); }

nlohmann::ordered_json point_json(const ParetoPoint& p, const std::vector<std::string>& files) {
    nlohmann::ordered_json j{{"steps", p.steps},
                             {"rounds", p.rounds},
                             {"chunks", p.chunks},
                             {"rounds_per_chunk", p.rounds_per_chunk().text()},
                             {"rounds_per_chunk_value", p.rounds_per_chunk().value()},
                             {"step_rounds", p.step_rounds}};
    j["files"] = files;
    return j;
}

nlohmann::ordered_json certificate_json(const CutCertificate& c) {
    return {{"inside", c.inside},       {"routers_inside", c.routers}, {"crossing", c.crossing}, {"demand", c.demand},
            {"capacity", c.capacity},   {"reversed", c.reversed},      {"exact", c.exact},       {"relaxations", c.relaxations},
            {"max_flows", c.flows},     {"sinks", c.sinks}};
}

std::string report_json(const ParetoRun& run, const ParetoResult& res, const std::vector<std::vector<std::string>>& files, const ParetoReportOptions& args) {
    const SynthInstance& in = run.in;
    const SynthInstance& least = run.least;
    const std::string& space = run.space;
    const bool reduction = run.reduction, by_duality = run.by_duality;
    nlohmann::ordered_json j;
    j["topology"] = in.topology->spec();
    j["collective"] = in.collective.to_string();
    j["model"] = to_string(in.model);
    j["search"] = space;
    j["max_chunks"] = args.max_chunks;
    j["complete"] = res.complete;
    j["end"] = res.end;
    j["seconds"] = res.seconds;
    j["method"] = !reduction ? "" : by_duality ? "duality" : "direct";
    if (by_duality) j["dual"] = least.collective.to_string();
    j["least_steps"] = result_json(least, res.least_steps, args.limits);  // one round per step
    j["first_steps"] = res.first_steps;
    j["bandwidth_bound"] = res.bounds.empty()
                               ? nlohmann::ordered_json()
                               : nlohmann::ordered_json{{"rounds_per_chunk", res.bandwidth_bound.text()},
                                                        {"value", res.bandwidth_bound.value()},
                                                        {"name", res.bounds.front().name},
                                                        {"detail", res.bounds.front().detail}};
    if (!res.bounds.empty() && res.bounds.front().certificate) j["bandwidth_bound"]["certificate"] = certificate_json(*res.bounds.front().certificate);
    if (res.packed) {
        nlohmann::ordered_json pj = point_json(*res.packed, {});
        pj["depth"] = res.packed_depth;
        pj["bandwidth_optimal"] = res.packed_optimal;
        pj["note"] = res.packed_note;
        j["bandwidth_end"] = std::move(pj);
    } else {
        j["bandwidth_end"] = {{"note", res.packed_note}};
    }
    auto& bj = j["bounds"] = nlohmann::ordered_json::array();
    for (const BandwidthBound& b : res.bounds)
        bj.push_back({{"rounds_per_chunk", b.rounds_per_chunk.text()}, {"name", b.name}, {"detail", b.detail}});
    // Built apart and moved in at the end: a reference into an ordered_json object dangles
    // when a later key grows its vector (the crash of pareto --json on DGX-1 reduce_scatter).
    nlohmann::ordered_json fj = nlohmann::ordered_json::array(), rj = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < res.rows.size(); ++i) {
        const ParetoRow& row = res.rows[i];
        nlohmann::ordered_json x{{"steps", row.steps}, {"frontier", row.frontier}, {"proved", row.proved}, {"excluded", row.excluded}};
        x["best"] = row.best ? point_json(*row.best, files[i]) : nlohmann::ordered_json();
        auto& aj = x["attempts"] = nlohmann::ordered_json::array();
        for (const RoundsAttempt& a : row.attempts) {
            nlohmann::ordered_json y{{"chunks", a.chunks}, {"rounds", a.rounds}, {"answer", to_string(a.answer)}, {"seconds", a.seconds}};
            if (!a.reason.empty()) y["reason"] = a.reason;
            aj.push_back(std::move(y));
        }
        rj.push_back(std::move(x));
        if (row.frontier) {
            nlohmann::ordered_json pj = point_json(*row.best, files[i]);
            if (!args.sizes.empty()) pj["time"] = point_times(*row.best, args);
            fj.push_back(std::move(pj));
        }
    }
    j["frontier"] = std::move(fj);
    j["rows"] = std::move(rj);
    if (!args.sizes.empty())
        if (auto tb = time_bounds(*in.topology, in.collective, in.model, args.link)) {
            check_time_bounds(*tb, res, args);
            nlohmann::ordered_json bj2 = nlohmann::ordered_json::array();
            for (double m : args.sizes) bj2.push_back({{"size_bytes", m}, {"time_bound", bound_json(*tb, evaluate(*tb, m))}});
            j["time_lower_bounds"] = std::move(bj2);
        }
    return j.dump() + "\n";
}

std::string report_text(const ParetoRun& run, const ParetoResult& res, const std::vector<std::vector<std::string>>& files, const ParetoReportOptions& args) {
    const SynthInstance& in = run.in;
    const SynthInstance& least = run.least;
    const std::string& space = run.space;
    const bool by_duality = run.by_duality;
    const CollectiveKind kind = in.collective.kind;
    std::string s = fmt::format("pareto {} on {} ({}), chunks 1..{}, solver {}\n", in.collective.to_string(), in.topology->spec(),
                                to_string(in.model), args.max_chunks, args.limits.solver);
    s += fmt::format("search: {}\n", space);
    if (by_duality)
        s += fmt::format("by duality with {}: its least steps, bounds and frontier below, each point reversed{}\n",
                         least.collective.to_string(), kind == CollectiveKind::allreduce ? " and followed by itself" : "");
    s += "least steps of one round each: " + status_sentence(least, res.least_steps) + "\n";
    if (res.least_steps.optimum && res.first_steps > 0 && res.first_steps < *res.least_steps.optimum)
        s += fmt::format("with several rounds per step fewer steps can do: the rows start at {} (the distance bound: a chunk "
                         "crosses one channel per step, whatever its rounds)\n",
                         res.first_steps);
    if (res.bounds.empty()) s += "bandwidth bound: none\n";
    for (const BandwidthBound& b : res.bounds)
        s += fmt::format("bandwidth bound: R/C >= {} ({}: {})\n", b.rounds_per_chunk.text(), b.name, b.detail);
    for (const ParetoRow& row : res.rows)
        for (const RoundsAttempt& a : row.attempts)
            s += fmt::format("  S = {}, C = {}, R = {}: {} ({:.3f} s){}\n", a.steps, a.chunks, a.rounds, to_string(a.answer), a.seconds,
                             a.reason.empty() ? std::string() : ": " + a.reason);
    if (res.packed)
        s += fmt::format("bandwidth end (tree packing): {} steps, {} rounds, {} chunks, R/C = {}, trees at most {} deep: {}\n",
                         res.packed->steps, res.packed->rounds, res.packed->chunks, res.packed->rounds_per_chunk().text(),
                         res.packed_depth, res.packed_note);
    else
        s += fmt::format("bandwidth end (tree packing): none ({})\n", res.packed_note);
    s += "frontier (each point a schedule verified by the direct checker):\n";
    s += "  steps  rounds  chunks  R/C    rounds per step\n";
    for (std::size_t i = 0; i < res.rows.size(); ++i) {
        const ParetoRow& row = res.rows[i];
        if (!row.frontier) continue;
        const ParetoPoint& p = *row.best;
        s += fmt::format("  {:<5}  {:<6}  {:<6}  {:<5}  {}{}\n", p.steps, p.rounds, p.chunks, p.rounds_per_chunk().text(),
                         step_rounds_text(p.step_rounds), files[i].empty() ? "" : fmt::format("  ({})", fmt::join(files[i], ", ")));
    }
    if (!args.sizes.empty()) {
        s += fmt::format("predicted time of the frontier points (docs/time.md); {}:\n",
                         speeds_text(*in.topology, args.link));
        s += fmt::format("  {:<5}  {:<6}  {:<6}  {:<10}  {:>12}  {:>12}\n", "steps", "rounds", "chunks", "size", "synchronous", "asynchronous");
        for (const ParetoRow& row : res.rows) {
            if (!row.frontier) continue;
            const ParetoPoint& p = *row.best;
            for (const auto& x : point_times(p, args))
                s += fmt::format("  {:<5}  {:<6}  {:<6}  {:<10}  {:>12}  {:>12}\n", p.steps, p.rounds, p.chunks,
                                 support::format_bytes(x["size"].get<double>()), support::format_seconds(x["synchronous_s"].get<double>()),
                                 support::format_seconds(x["asynchronous_s"].get<double>()));
        }
    }
    if (!args.sizes.empty())
        if (auto tb = time_bounds(*in.topology, in.collective, in.model, args.link)) {
            check_time_bounds(*tb, res, args);
            s += bound_lines(*tb, args.sizes);
        }
    s += "proofs:\n";
    for (const ParetoRow& row : res.rows) s += fmt::format("  {} steps: {}{}\n", row.steps, row.excluded, "");
    s += fmt::format("end: {}; {} ({:.2f} s)\n", res.end, res.complete ? "every point proved" : "NOT complete", res.seconds);
    return s;
}

}  // namespace

std::string pareto_point_name(const SynthInstance& in, const ParetoPoint& p) {
    std::string c = in.collective.to_string();
    for (char& ch : c)
        if (ch == ':' || ch == ',') ch = '-';
    return fmt::format("{}-S{}-R{}-C{}", c, p.steps, p.rounds, p.chunks);
}

std::string pareto_point_comment(const SynthInstance& in, const ParetoResult& res, const ParetoRow& row, const std::string& space) {
    const ParetoPoint& p = *row.best;
    std::string c = fmt::format("{} on {}, model {}: {} steps, {} rounds ({}), {} chunks: R/C = {}.\n", in.collective.to_string(),
                                in.topology->spec(), to_string(in.model), p.steps, p.rounds, step_rounds_text(p.step_rounds), p.chunks,
                                p.rounds_per_chunk().text());
    c += fmt::format("A point of the Pareto frontier of (steps, rounds per chunk) over {}.\n", space);
    c += fmt::format("Proof: {}.\n", row.excluded);
    if (!res.bounds.empty()) c += fmt::format("Bandwidth bound: R/C >= {} ({}).\n", res.bandwidth_bound.text(), res.bounds.front().detail);
    c += "Verified by collsched's direct checker before it was written. Written by collsched pareto (docs/synthesis.md).";
    return c;
}

std::string pareto_report(const ParetoRun& run, const ParetoResult& res, const std::vector<std::vector<std::string>>& files,
                          const ParetoReportOptions& options) {
    return options.json ? report_json(run, res, files, options) : report_text(run, res, files, options);
}

}  // namespace collsched
