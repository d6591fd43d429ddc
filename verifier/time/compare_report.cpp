// The report of `collsched compare` (verifier/time/compare_report.hpp), moved from
// tools/cmd_compare.cpp (issue 42): the command loads and verifies the inputs, compares them
// (runtime/compare.hpp) and prints what these build.
#include "verifier/time/compare_report.hpp"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/cost_report.hpp"
#include "support/assert.hpp"
#include "support/text.hpp"
#include "support/units.hpp"
#include "verifier/time/bound_report.hpp"

namespace collsched {

/// The spec with a graph file's path normalized (`a/b/../m.json` is `a/m.json`), so one machine
/// reached from two schedule folders is one machine.
std::string machine_name(const Topology& t) {
    const std::string& s = t.spec();
    if (!s.starts_with("graph:")) return s;
    return "graph:" + std::filesystem::path(s.substr(6)).lexically_normal().string();
}

namespace {

std::string kind_of(const Comparison& cmp) { return cmp.kind == TimeKind::asynchronous ? "asynchronous" : "synchronous"; }

/// NCCL's own model (src/graph/tuning.cc) of each NCCL contender at each size, its protocol
/// the tuner's choice (docs/time.md, "NCCL's algorithms and NCCL's model").
std::string nccl_text(const ComparedSchedules& s, const Comparison& cmp) {
    if (s.nccl.empty()) return "";
    const SendTable& first = *s.contenders.front().table;
    std::string out = fmt::format("NCCL's model (src/graph/tuning.cc, NCCL 2.30.7) on {}:\n", s.system->note);
    out += fmt::format("  {:<10}", "size");
    for (auto [c, a] : s.nccl) out += fmt::format("  {:>18}", fmt::format("({}) {}", c + 1, s.contenders[c].name));
    out += "\n";
    for (double size : cmp.sizes) {
        out += fmt::format("  {:<10}", support::format_bytes(size));
        for (auto [c, a] : s.nccl) {
            const auto m = nccl::nccl_best_protocol(*s.system, first.collective.kind, a,
                                                    nccl::nccl_bytes(first.collective.kind, first.topology->processors(), size));
            out += fmt::format("  {:>18}", m ? fmt::format("{} {}", support::format_seconds(m->seconds), nccl::to_string(m->protocol)) : "not modelled");
        }
        out += "\n";
    }
    return out;
}

/// The bounds at every size as lines ("bound at 1 GiB: ideal 4.16 ms; executor nccl 4.98 ms (Simple, ...)").
std::string bounds_text(const ComparedSchedules& s, const Comparison& cmp) {
    if (!s.bounds) return "";
    std::string out = fmt::format("bounds: ideal, the network's share's; {} bound, the executor's (docs/time.md, \"The bound on an executor\"): it "
                                  "holds for {}\n",
                                  s.executor->name, s.bounds->executor.space);
    for (double size : cmp.sizes) {
        const ExecutorBound e = evaluate(s.bounds->executor, size);
        const ExecutorBoundRow& row = s.bounds->executor.rows[e.row];
        out += fmt::format("  bound at {}: ideal {}; {} {} (protocol {}: launch {} + {}{})\n", support::format_bytes(size),
                           support::format_seconds(evaluate(s.bounds->ideal, size).seconds), s.executor->name, support::format_seconds(e.seconds),
                           to_string(row.protocol), support::format_seconds(row.launch), support::format_seconds(e.at.seconds),
                           row.bounds.terms.empty() ? "" : ", " + row.bounds.terms[e.at.best].name);
    }
    return out;
}

}  // namespace

std::optional<CompareBounds> compare_bounds(const ComparedSchedules& s, const Comparison& cmp, const RunLimits& limits) {
    if (s.contenders.empty() || !s.executor || s.executor->kind == ExecutorKind::ideal) return std::nullopt;
    const SendTable& first = *s.contenders.front().table;
    for (const Contender& c : s.contenders)
        if (machine_name(*c.table->topology) != machine_name(*first.topology) || !(c.table->model == first.model)) return std::nullopt;
    std::optional<TimeBounds> ideal = time_bounds(*first.topology, first.collective, first.model, s.link, limits);
    // compared by the asynchronous time, the bounds of that time alone (a group's message counts)
    const bool asynchronous = cmp.kind == TimeKind::asynchronous;
    std::optional<ExecutorBounds> exec = executor_time_bounds(*first.topology, first.collective, first.model, {*s.executor}, s.link, limits, asynchronous);
    if (!ideal || !exec) return std::nullopt;
    for (std::size_t i = 0; i < cmp.sizes.size(); ++i) {
        const ExecutorBound b = evaluate(*exec, cmp.sizes[i]);
        for (std::size_t c = 0; c < s.contenders.size(); ++c)
            for (double t : {cmp.seconds[c][i], asynchronous ? cmp.seconds[c][i] : cmp.other[c][i]}) {
                const std::string bad = bound_violation(b, *exec, t, s.contenders[c].name);
                COLLSCHED_ASSERT_MSG(bad.empty(), bad);
            }
    }
    return CompareBounds{std::move(*ideal), std::move(*exec)};
}

std::string compare_json(const ComparedSchedules& s, const Comparison& cmp) {
    const TimeKind kind = cmp.kind;
    const std::string kind_name = kind_of(cmp);
    const std::size_t baseline = cmp.baseline;
    const SendTable& first = *s.contenders.front().table;
    nlohmann::ordered_json j;
    j["collective"] = first.collective.to_string();
    j["topology"] = first.topology->spec();
    j["time"] = kind_name;
    j["link_speeds"] = s.link ? "--link" : first.topology->has_speeds() ? "graph file" : "defaults";
    const TimeBasis basis = s.basis();
    j["executor"] = basis.executor_name();
    if (!basis.ideal()) {
        j["executor_error"] = basis.executor->error.value;
        if (!basis.executor->calibration.empty()) j["calibration"] = basis.executor->calibration;
    }
    j["baseline"] = s.contenders[baseline].name;
    auto& sj = j["schedules"] = nlohmann::ordered_json::array();
    for (std::size_t c = 0; c < s.contenders.size(); ++c) {
        const BandwidthCost bc = bandwidth_cost(*s.contenders[c].table, s.contenders[c].table->steps());
        nlohmann::ordered_json x{{"name", s.contenders[c].name}, {"file", s.contenders[c].file}, {"topology", s.contenders[c].table->topology->spec()},
                                 {"steps", bc.steps}, {"rounds", bc.rounds}, {"chunks", bc.chunks}};
        x[kind == TimeKind::asynchronous ? "asynchronous_s" : "synchronous_s"] = cmp.seconds[c];
        x[kind == TimeKind::asynchronous ? "synchronous_s" : "asynchronous_s"] = cmp.other[c];
        if (!cmp.protocol.empty()) {
            auto& pj = x["protocols"] = nlohmann::ordered_json::array();
            for (Protocol p : cmp.protocol[c]) pj.push_back(std::string(to_string(p)));
        }
        sj.push_back(std::move(x));
    }
    j["sizes"] = cmp.sizes;
    auto& wj = j["winners"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < cmp.sizes.size(); ++i)
        wj.push_back({{"size", cmp.sizes[i]},
                      {"winner", s.contenders[cmp.winner[i]].name},
                      {"seconds", cmp.seconds[cmp.winner[i]][i]},
                      {"speedup_over_baseline", cmp.seconds[baseline][i] / cmp.seconds[cmp.winner[i]][i]},
                      {"tie_with_baseline", basis.tie(cmp.seconds[baseline][i], cmp.seconds[cmp.winner[i]][i])}});
    auto& xj = j["crossovers"] = nlohmann::ordered_json::array();
    for (const Crossover& x : cmp.crossovers) xj.push_back({{"size", x.size}, {"below", s.contenders[x.from].name}, {"above", s.contenders[x.to].name}});
    if (!s.nccl.empty()) {
        auto& nj = j["nccl_model"] = nlohmann::ordered_json::array();
        for (auto [c, a] : s.nccl) {
            nlohmann::ordered_json x{{"name", s.contenders[c].name}, {"system", s.system->note}};
            auto& tj = x["per_size"] = nlohmann::ordered_json::array();
            for (double size : cmp.sizes) {
                const auto m = nccl::nccl_best_protocol(*s.system, first.collective.kind, a,
                                                        nccl::nccl_bytes(first.collective.kind, first.topology->processors(), size));
                if (m) tj.push_back({{"size", size}, {"protocol", nccl::to_string(m->protocol)}, {"seconds", m->seconds}});
                else tj.push_back({{"size", size}, {"protocol", nullptr}, {"seconds", nullptr}});
            }
            nj.push_back(std::move(x));
        }
    }
    if (s.bounds) {  // on an executor: the network's share's bound and the executor's, per size
        j["executor_bound_space"] = s.bounds->executor.space;
        auto& bj = j["bounds"] = nlohmann::ordered_json::array();
        for (double size : cmp.sizes) {
            const ExecutorBound e = evaluate(s.bounds->executor, size);
            bj.push_back({{"size", size}, {"ideal_s", evaluate(s.bounds->ideal, size).seconds}, {"executor_s", e.seconds},
                          {"executor_bound", bound_json(s.bounds->executor, e)}});
        }
    }
    if (!s.svg.empty()) j["svg"] = s.svg;
    return j.dump() + "\n";
}

std::string compare_text(const ComparedSchedules& s, const Comparison& cmp) {
    const std::string kind_name = kind_of(cmp);
    const std::size_t baseline = cmp.baseline;
    const SendTable& first = *s.contenders.front().table;
    std::string out = fmt::format("compare {} on {}, {} time (docs/time.md)\n", first.collective.to_string(), machine_name(*first.topology), kind_name);
    out += speeds_text(*first.topology, s.link) + "\n";
    const TimeBasis basis = s.basis();
    if (basis.ideal()) out += "times: the network's share (executor ideal: links at peak, no launch, synchronization or message cost)\n";
    else
        out += fmt::format("times: executor {} ({}{}), each table in the fastest of its protocols; a speed-up inside its {:.1f} % error is a tie\n",
                           basis.executor->name, basis.executor->note, basis.executor->calibration.empty() ? "" : "; " + basis.executor->calibration,
                           basis.executor->error.value * 100);
    for (std::size_t c = 0; c < s.contenders.size(); ++c) {
        const BandwidthCost bc = bandwidth_cost(*s.contenders[c].table, s.contenders[c].table->steps());
        out += fmt::format("  {:<2} {}: {} ({}, {}, {}{}){}\n", c + 1, s.contenders[c].name, s.contenders[c].file, support::count_of(bc.steps, "step"),
                           support::count_of(bc.rounds, "round"), support::count_of(bc.chunks, "chunk"),
                           machine_name(*s.contenders[c].table->topology) == machine_name(*first.topology) ? "" : ", on " + s.contenders[c].table->topology->spec(),
                           c == baseline ? " [baseline]" : "");
    }
    out += fmt::format("  {:<10}", "size");
    for (std::size_t c = 0; c < s.contenders.size(); ++c) out += fmt::format("  {:>10}", fmt::format("({})", c + 1));
    out += fmt::format("  {:<20}  {}\n", "winner", fmt::format("speed-up over ({})", baseline + 1));
    for (std::size_t i = 0; i < cmp.sizes.size(); ++i) {
        out += fmt::format("  {:<10}", support::format_bytes(cmp.sizes[i]));
        for (std::size_t c = 0; c < s.contenders.size(); ++c) out += fmt::format("  {:>10}", support::format_seconds(cmp.seconds[c][i]));
        const std::size_t w = cmp.winner[i];
        const std::string who = cmp.protocol.empty() ? fmt::format("({}) {}", w + 1, s.contenders[w].name)
                                                      : fmt::format("({}) {} {}", w + 1, s.contenders[w].name, to_string(cmp.protocol[w][i]));
        const double up = cmp.seconds[baseline][i] / cmp.seconds[w][i];
        out += fmt::format("  {:<20}  {}\n", who, w != baseline && basis.tie(cmp.seconds[baseline][i], cmp.seconds[w][i]) ? fmt::format("{:.2f}x (a tie)", up)
                                                                                                                    : fmt::format("{:.2f}x", up));
    }
    if (cmp.crossovers.empty()) out += "crossovers: none (one schedule wins at every size)\n";
    for (const Crossover& x : cmp.crossovers)
        out += fmt::format("crossover at {}: ({}) {} is faster below, ({}) {} above\n", support::format_bytes(x.size), x.from + 1,
                           s.contenders[x.from].name, x.to + 1, s.contenders[x.to].name);
    out += bounds_text(s, cmp);
    out += nccl_text(s, cmp);
    if (!s.svg.empty()) out += fmt::format("plot: {}\n", s.svg);
    return out;
}

}  // namespace collsched
