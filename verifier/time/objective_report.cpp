// The report of the time objective (verifier/time/objective_report.hpp), moved from
// tools/time_objective.cpp (issue 43).
#include "verifier/time/objective_report.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/cost_report.hpp"
#include "support/assert.hpp"
#include "support/units.hpp"
#include "verifier/time/bound_report.hpp"

namespace collsched {

namespace {

using ojson = nlohmann::ordered_json;

std::string kind_word(const TimeObjective& r) { return r.options.time == TimeKind::synchronous ? "synchronous" : "asynchronous"; }

/// "out.json" -> "out.1MiB.json".
std::string sized_path(const std::string& path, double size) {
    std::filesystem::path p(path);
    std::string label = support::format_bytes(size);
    label.erase(std::remove(label.begin(), label.end(), ' '), label.end());
    return (p.parent_path() / (p.stem().string() + "." + label + p.extension().string())).string();
}

/// No candidate: the bound still holds, so the report prints it.
std::string empty_report(const TimeObjective& r, bool json) {
    const Topology& topo = *r.instance.topology;
    if (json) {
        ojson j{{"topology", topo.spec()}, {"collective", r.instance.collective.to_string()}, {"model", to_string(r.instance.model)},
                {"candidates", ojson::array()}, {"notes", r.notes}};
        auto rows = ojson::array();
        for (double m : r.options.sizes) {
            const TimeBound b = evaluate(r.bounds, m);
            rows.push_back({{"size_bytes", m}, {"winner", nullptr}, {"time_lower_bound_s", b.seconds}, {"time_bound", bound_json(r.bounds, b)}});
            if (r.executor_bounds) {
                const ExecutorBound e = evaluate(*r.executor_bounds, m);
                rows.back()["executor_lower_bound_s"] = e.seconds;
                rows.back()["executor_bound"] = bound_json(*r.executor_bounds, e);
            }
        }
        j["sizes"] = rows;
        return j.dump() + "\n";
    }
    std::string s = fmt::format("optimize --size: no verified schedule for {} on {}\n", r.instance.collective.to_string(), topo.spec());
    for (const std::string& n : r.notes) s += "  note: " + n + "\n";
    s += bound_lines(r.bounds, r.options.sizes);
    if (r.executor_bounds)
        for (double m : r.options.sizes)
            s += fmt::format("executor bound at {}: {}", support::format_bytes(m), bound_text(*r.executor_bounds, evaluate(*r.executor_bounds, m)));
    return s;
}

std::string model_text(const TimeObjective& r, std::size_t i) {
    const auto m = r.nccl_model(i);
    return m ? fmt::format("{} {} {}", nccl::to_string(m->algorithm), nccl::to_string(m->choice.protocol), support::format_seconds(m->choice.seconds))
             : std::string("not modelled");
}

ojson size_json(const TimeObjective& r, const std::vector<std::string>& witnesses, std::size_t i, bool per_range) {
    const double m = r.options.sizes[i], t = r.winner_seconds(i);
    const TimeBound b = evaluate(r.bounds, m);
    const SendTable& w = *r.winner(i).table;
    ojson j;
    j["size_bytes"] = m;
    j["winner"] = r.winner(i).name;
    j["predicted_time_s"] = t;
    j["executor"] = r.basis().executor_name();
    j["protocol"] = r.winner_protocol(i) == Protocol::none ? ojson(nullptr) : ojson(std::string(to_string(r.winner_protocol(i))));
    j["time_lower_bound_s"] = b.seconds;
    j["gap_percent"] = gap_percent(t, b.seconds);
    j["time_bound"] = bound_json(r.bounds, b);
    if (r.executor_bounds) {  // the bound on the executor's times, beside the network's share's
        const ExecutorBound e = evaluate(*r.executor_bounds, m);
        j["executor_lower_bound_s"] = e.seconds;
        j["executor_gap_percent"] = gap_percent(t, e.seconds);
        j["executor_bound"] = bound_json(*r.executor_bounds, e);
    }
    j["algbw_Bps"] = algbw(m, t);
    j["busbw_Bps"] = busbw(w, m, t);
    auto files = ojson::array();
    for (const std::string& path : witnesses) {
        const std::string f = time_witness_path(r, path, i, per_range);
        files.push_back(f.empty() ? ojson(nullptr) : ojson(f));  // null: stock NCCL's algorithm wins, no plan
    }
    j["witness"] = files;
    // NCCL's best: exact when its fastest timed algorithm is faster than every bound of those
    // without a time, else "at least" (the least of those bounds)
    // (an algorithm with neither a time nor a bound leaves NCCL's best unknown: both speed-ups null)
    const NcclVersus v = r.nccl_versus(i);
    j["nccl_best"] = !v.known() ? ojson(nullptr) : v.timed_least() ? ojson(r.candidates[*v.timed].name) : ojson(r.nccl_unbuilt[*v.bounded].name);
    j["nccl_best_s"] = v.timed_least() ? ojson(v.timed_s) : ojson(nullptr);
    j["speedup_over_nccl"] = v.exact() ? ojson(v.timed_s / t) : ojson(nullptr);
    // NCCL's own algorithm winning is no tie: it is the answer (`nccl_wins`)
    const bool nccl_wins = v.exact() && *v.timed == r.comparison.winner[i];
    j["nccl_wins"] = nccl_wins;
    j["tie_with_nccl"] = v.exact() && !nccl_wins && r.basis().tie(v.timed_s, t);
    j["nccl_best_at_least_s"] = v.known() && v.complete ? ojson(v.least()) : ojson(nullptr);
    j["speedup_over_nccl_at_least"] = v.known() && v.complete ? ojson(v.least() / t) : ojson(nullptr);
    if (!r.nccl_unbuilt.empty()) {
        auto uj = ojson::array();
        for (const NcclUnbuilt& u : r.nccl_unbuilt)
            uj.push_back({{"name", u.name}, {"why", u.why}, {"lower_bound_s", u.lower_bound_s.empty() ? ojson(nullptr) : ojson(u.lower_bound_s[i])},
                          {"argument", u.argument.empty() ? ojson(nullptr) : ojson(u.argument[i])}});
        j["nccl_without_time"] = uj;
    }
    if (auto mdl = r.nccl_model(i))
        j["nccl_model"] = {{"algorithm", nccl::to_string(mdl->algorithm)}, {"protocol", nccl::to_string(mdl->choice.protocol)},
                           {"seconds", mdl->choice.seconds}};
    else
        j["nccl_model"] = nullptr;
    if (auto nv = r.nvls_model(i)) j["nccl_nvls_model"] = {{"algorithm", nv->algorithm}, {"protocol", "Simple"}, {"seconds", nv->seconds}};
    for (const nccl::CollnetModel& cm : r.collnet_models(i))
        j["nccl_collnet_model"].push_back({{"algorithm", cm.algorithm}, {"protocol", "Simple"}, {"seconds", cm.seconds}, {"channels", cm.channels}});
    return j;
}

std::string json_report(const TimeObjective& r, const std::vector<std::string>& witnesses, bool per_range) {
    const SynthInstance& in = r.instance;
    ojson j;
    j["topology"] = in.topology->spec();
    j["collective"] = in.collective.to_string();
    j["processors"] = in.topology->processors();
    j["model"] = to_string(in.model);
    j["time"] = kind_word(r);
    j["link_speeds"] = speeds_text(*in.topology, r.options.link);
    const TimeBasis basis = r.basis();
    j["executor"] = basis.executor_name();
    if (!basis.ideal()) {
        j["executor_error"] = basis.executor->error.value;
        if (!basis.executor->calibration.empty()) j["calibration"] = basis.executor->calibration;
        j["bound_executor"] = "ideal";  // time_lower_bound_s: the network's share's
        if (r.executor_bounds) j["executor_bound_space"] = r.executor_bounds->space;
    }
    auto rows = ojson::array();
    for (std::size_t i = 0; i < r.options.sizes.size(); ++i) rows.push_back(size_json(r, witnesses, i, per_range));
    for (const char* k : {"size_bytes", "predicted_time_s", "time_lower_bound_s", "time_bound"}) j[k] = rows[0][k];  // the first size
    j["sizes"] = rows;
    auto xs = ojson::array();
    for (const Crossover& x : r.comparison.crossovers) {
        ojson o{{"size_bytes", x.searched() ? ojson(x.size) : ojson(nullptr)}, {"below", r.candidates[x.from].name}, {"above", r.candidates[x.to].name}};
        if (!x.searched()) o["between_bytes"] = {x.lo, x.hi};  // the time limit came before its search ended
        xs.push_back(std::move(o));
    }
    j["crossovers"] = xs;
    auto cj = ojson::array();
    for (std::size_t c = 0; c < r.candidates.size(); ++c) {
        const TimeCandidate& x = r.candidates[c];
        cj.push_back({{"name", x.name}, {"provider", x.provider}, {"nccl", x.nccl}, {"source", x.source}, {"steps", x.table->steps()},
                      {"chunks", x.table->collective.chunks}, {"transfers", x.table->transfers.size()},
                      {"seconds", r.comparison.seconds[c]}});  // its time at every size, in the order of "sizes"
    }
    j["candidates"] = cj;
    auto uj = ojson::array();  // timed, not checked: slower at every size than a checked table that holds
    for (const TimeCandidate& x : r.unchecked)
        uj.push_back({{"name", x.name}, {"provider", x.provider}, {"nccl", x.nccl}, {"source", x.source}, {"seconds", x.seconds}});
    j["unchecked"] = uj;
    j["notes"] = r.notes;
    j["witness"] = witnesses;
    return j.dump() + "\n";
}

/// Why no NCCL algorithm is compared: the time limit came before they were built or checked,
/// or the machine has none (it said "no NCCL algorithm for this machine" in both cases).
std::string no_nccl_text(const TimeObjective& r) {
    for (const std::string& n : r.notes)
        if (n.starts_with("nccl: not run") || n.starts_with("nccl: stopped") ||
            (n.starts_with("nccl ") && n.find("before the time limit") != std::string::npos))
            return "NCCL's algorithms not built, timed or checked within the time limit";
    for (const std::string& n : r.notes)
        if (n.starts_with("nccl: ") && n.find(" tables built in ") == std::string::npos && n.find(" table built in ") == std::string::npos)
            return "NCCL's algorithms not built for this machine (see the notes)";  // e.g. more chunks than message ids hold
    return "no NCCL algorithm for this machine";
}

/// The speed-up over NCCL's best at size i: exact over the fastest timed algorithm when no
/// algorithm without a time can be faster (its bound is above), "at least" over a bound, "not
/// shown" where a bound is below collsched's time (NCCL's algorithm might be faster; it was not
/// timed).
std::string versus_text(const TimeObjective& r, std::size_t i) {
    const double t = r.winner_seconds(i);
    const NcclVersus v = r.nccl_versus(i);
    std::string untimed;
    for (const NcclUnbuilt& u : r.nccl_unbuilt)
        if (u.lower_bound_s.empty()) untimed += fmt::format("; {} not timed", u.name);
    if (!v.known()) return no_nccl_text(r);
    const TimeBasis basis = r.basis();
    std::string timed;
    if (v.timed && *v.timed != r.comparison.winner[i] && basis.tie(v.timed_s, t))
        timed = fmt::format("tie with {} ({}: {:.2f}x, inside the executor model's {:.1f} % error)", r.candidates[*v.timed].name,
                            support::format_seconds(v.timed_s), v.timed_s / t, basis.executor->error.value * 100);
    else if (v.timed)
        timed = fmt::format("{:.2f}x over {} ({})", v.timed_s / t, r.candidates[*v.timed].name, support::format_seconds(v.timed_s));
    if (!v.complete) untimed += " (NCCL's best not known)";
    if (v.timed_least()) return timed + untimed;
    const std::string& name = r.nccl_unbuilt[*v.bounded].name;
    if (t <= v.bound_s)
        return fmt::format(">= {:.2f}x over {} (>= {}, its lower bound: not timed){}", v.bound_s / t, name, support::format_seconds(v.bound_s), untimed);
    return fmt::format("not shown: {} not timed, its lower bound {} is below{}{}", name, support::format_seconds(v.bound_s),
                       timed.empty() ? "" : "; " + timed, untimed);
}

/// Which executor the times are for (docs/time.md, "Executors"), and what the bound is then.
std::string executor_line(const TimeObjective& r) {
    const TimeBasis basis = r.basis();
    if (basis.ideal()) return "times: the network's share (executor ideal: links at peak, no launch, synchronization or message cost)\n";
    const ExecutorModel& e = *basis.executor;
    std::string s = fmt::format("times: executor {} ({}{}), each table in the fastest of its protocols; speed-ups inside its {:.1f} % error "
                                "are ties\n",
                                e.name, e.note, e.calibration.empty() ? "" : "; " + e.calibration, e.error.value * 100);
    if (!r.executor_bounds) return s + "bounds: the network's share's (executor ideal) only: no bound on this executor here\n";
    return s + fmt::format("bounds: ideal, the network's share's (executor ideal); {} bound, the executor's (docs/time.md, \"The bound on an "
                           "executor\"): it holds for {}; the gap is over it\n",
                           e.name, r.executor_bounds->space);
}

/// One row of the text table: the size, the fastest, its time, the bound, the gap, algbw, busbw
/// and the speed-up over NCCL's best.
std::string size_line(const TimeObjective& r, std::size_t i) {
    const double m = r.options.sizes[i], t = r.winner_seconds(i);
    const TimeBound b = evaluate(r.bounds, m);
    const Protocol p = r.winner_protocol(i);
    const std::string name = p == Protocol::none ? r.winner(i).name : fmt::format("{} ({})", r.winner(i).name, to_string(p));
    const std::size_t width = std::max<std::size_t>(10, r.basis().executor_name().size() + 6);  // "mscclpp bound"
    const std::string executor = r.executor_bounds ? fmt::format("  {:>{}}", support::format_seconds(r.bound_seconds(i)), width) : "";
    return fmt::format("  {:<10}  {:<36}  {:>10}  {:>10}{}  {:>6.1f}%  {:>11}  {:>11}  {}\n", support::format_bytes(m), name,
                       support::format_seconds(t), support::format_seconds(b.seconds), executor, gap_percent(t, r.bound_seconds(i)),
                       support::format_bandwidth(algbw(m, t)), support::format_bandwidth(busbw(*r.winner(i).table, m, t)), versus_text(r, i));
}

std::string text_report(const TimeObjective& r, const std::vector<std::string>& witnesses, bool per_range) {
    const SynthInstance& in = r.instance;
    const std::vector<double>& sizes = r.options.sizes;
    std::string s = fmt::format("optimize --size: {} on {} ({}), {} processors; {} time (docs/time.md); {}\n", in.collective.to_string(),
                                in.topology->spec(), to_string(in.model), in.topology->processors(), kind_word(r),
                                speeds_text(*in.topology, r.options.link));
    s += executor_line(r);
    s += fmt::format("candidates: {} verified by the direct checker:", r.candidates.size());
    for (const TimeCandidate& c : r.candidates) s += fmt::format(" {};", c.name);
    s.back() = '\n';
    for (const std::string& n : r.notes) s += "  note: " + n + "\n";
    s += fmt::format("  {:<10}  {:<36}  {:>10}  {:>10}{}  {:>7}  {:>11}  {:>11}  {}\n", "size", "fastest", "time", r.basis().ideal() ? "bound" : "ideal bound",
                     r.executor_bounds ? fmt::format("  {:>{}}", r.basis().executor_name() + " bound", std::max<std::size_t>(10, r.basis().executor_name().size() + 6)) : "",
                     "gap", "algbw", "busbw", "vs NCCL's best");
    for (std::size_t i = 0; i < sizes.size(); ++i) s += size_line(r, i);
    for (const Crossover& x : r.comparison.crossovers)
        s += fmt::format("crossover {}: {} is faster below, {} above\n",
                         x.searched() ? "at " + support::format_bytes(x.size)
                                      : fmt::format("between {} and {} (not searched within the time limit)", support::format_bytes(x.lo), support::format_bytes(x.hi)),
                         r.candidates[x.from].name, r.candidates[x.to].name);
    for (const NcclUnbuilt& u : r.nccl_unbuilt) {
        s += fmt::format("{} not timed ({})", u.name, u.why);
        if (!u.lower_bound_s.empty())
            s += fmt::format("; its time at {} is at least {}: {} (docs/time.md, \"NCCL's ring without its table\")",
                             support::format_bytes(sizes.back()), support::format_seconds(u.lower_bound_s.back()), u.argument.back());
        s += "\n";
    }
    if (r.system) {
        s += "NCCL's own model (src/graph/tuning.cc, its tuner's algorithm and protocol; docs/time.md):";
        for (std::size_t i = 0; i < sizes.size(); ++i) s += fmt::format(" {} {};", support::format_bytes(sizes[i]), model_text(r, i));
        s.back() = '\n';
        if (r.nvls_model(0)) {
            s += "NCCL's own model of its NVLS algorithm (the switch reduces; docs/time.md, \"NVLS against NCCL\"):";
            for (std::size_t i = 0; i < sizes.size(); ++i)
                s += fmt::format(" {} {} {};", support::format_bytes(sizes[i]), r.nvls_model(i)->algorithm, support::format_seconds(r.nvls_model(i)->seconds));
            s.back() = '\n';
        }
        if (!r.collnet_models(0).empty()) {
            s += "NCCL's own model through SHARP (CollNet; the network's switches reduce; docs/time.md, \"SHARP across boxes\"):";
            for (std::size_t i = 0; i < sizes.size(); ++i)
                for (const nccl::CollnetModel& m : r.collnet_models(i))
                    s += fmt::format(" {} {} {};", support::format_bytes(sizes[i]), m.algorithm, support::format_seconds(m.seconds));
            s.back() = '\n';
        }
    } else {
        s += fmt::format("NCCL's own model: none for this machine ({})\n", r.system_why);
    }
    const TimeBound last = evaluate(r.bounds, sizes.back());
    s += fmt::format("lower bound at {}: {}", support::format_bytes(sizes.back()), bound_text(r.bounds, last));
    if (r.executor_bounds)
        s += fmt::format("executor bound at {}: {}", support::format_bytes(sizes.back()),
                         bound_text(*r.executor_bounds, evaluate(*r.executor_bounds, sizes.back())));
    for (const std::string& path : witnesses)  // one line per file written, with the sizes it serves
        for (const WitnessFile& f : time_witness_files(r, path, per_range)) {
            std::vector<std::string> at;
            for (std::size_t i : f.sizes) at.push_back(support::format_bytes(sizes[i]));
            s += fmt::format("witness: {}: {} at {}\n", f.path, r.winner(f.sizes.front()).name, fmt::join(at, ", "));
        }
    if (!witnesses.empty())
        for (std::size_t i : stock_nccl_sizes(r, per_range))
            s += fmt::format("no plan at {}: {} as stock NCCL runs it wins there ({}); run NCCL as it is\n", support::format_bytes(sizes[i]),
                             r.winner(i).name, support::format_seconds(r.winner_seconds(i)));
    return s;
}

}  // namespace

std::string time_objective_report(const TimeObjective& r, const std::vector<std::string>& witnesses, bool json, bool per_range) {
    if (r.candidates.empty()) return empty_report(r, json);
    return json ? json_report(r, witnesses, per_range) : text_report(r, witnesses, per_range);
}

int time_objective_exit_code(const TimeObjective& r) { return !r.candidates.empty() && r.met_everywhere() ? 0 : 3; }

std::vector<std::size_t> stock_nccl_sizes(const TimeObjective& r, bool per_range) {
    std::vector<std::size_t> out;
    const auto& e = r.options.executor;
    if (!per_range || !e || (e->kind != ExecutorKind::mscclpp && e->kind != ExecutorKind::msccl)) return out;
    for (std::size_t i = 0; i < r.comparison.winner.size(); ++i)
        if (r.winner(i).nccl) out.push_back(i);
    return out;
}

std::vector<WitnessFile> time_witness_files(const TimeObjective& r, const std::string& path, bool per_range) {
    const std::vector<std::size_t>& w = r.comparison.winner;
    const std::vector<std::size_t> stock = stock_nccl_sizes(r, per_range);
    std::vector<WitnessFile> files;
    std::vector<std::size_t> file_of(w.size(), SIZE_MAX);
    for (std::size_t i = 0; i < w.size(); ++i) {
        if (std::ranges::find(stock, i) != stock.end()) continue;  // stock NCCL runs it: no plan
        std::size_t f = files.size();
        if (per_range) {  // the run goes on: the same candidate and protocol as at the size before
            if (i > 0 && file_of[i - 1] != SIZE_MAX && w[i - 1] == w[i] && r.winner_protocol(i - 1) == r.winner_protocol(i))
                f = file_of[i - 1];
        } else {
            for (std::size_t k = 0; k < files.size() && f == files.size(); ++k)
                if (w[files[k].sizes.front()] == w[i]) f = k;
        }
        if (f == files.size()) files.push_back({sized_path(path, r.options.sizes[i]), {}});
        files[f].sizes.push_back(i);
        file_of[i] = f;
    }
    if (files.size() == 1) files.front().path = path;
    return files;
}

std::string time_witness_path(const TimeObjective& r, const std::string& path, std::size_t i, bool per_range) {
    const std::vector<WitnessFile> files = time_witness_files(r, path, per_range);
    const auto f = std::find_if(files.begin(), files.end(), [&](const WitnessFile& x) {
        return std::find(x.sizes.begin(), x.sizes.end(), i) != x.sizes.end();
    });
    if (f == files.end()) {
        const std::vector<std::size_t> stock = stock_nccl_sizes(r, per_range);
        COLLSCHED_ASSERT(std::ranges::find(stock, i) != stock.end());
    }
    return f == files.end() ? std::string() : f->path;
}

std::string time_witness_comment(const TimeObjective& r, const WitnessFile& f) {
    if (f.sizes.size() == 1) return time_witness_comment(r, f.sizes.front());
    const SynthInstance& in = r.instance;
    const TimeCandidate& w = r.winner(f.sizes.front());
    std::vector<std::string> at;
    for (std::size_t i : f.sizes)
        at.push_back(fmt::format("{} ({})", support::format_bytes(r.options.sizes[i]), support::format_seconds(r.winner_seconds(i))));
    return fmt::format("{} on {}: the fastest verified schedule at {} ({} time): {}; {}", in.collective.to_string(), in.topology->spec(),
                       fmt::join(at, ", "), kind_word(r), w.name, w.source);
}

std::string time_witness_comment(const TimeObjective& r, std::size_t i) {
    const SynthInstance& in = r.instance;
    const TimeCandidate& w = r.winner(i);
    return fmt::format("{} on {}: the fastest verified schedule at {} ({} {}): {}; {}", in.collective.to_string(), in.topology->spec(),
                       support::format_bytes(r.options.sizes[i]), kind_word(r), support::format_seconds(r.winner_seconds(i)), w.name,
                       w.source);
}

}  // namespace collsched
