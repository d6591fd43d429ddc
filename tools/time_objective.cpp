// `optimize --size M`: the fastest verified schedule at each size, its proved bound and gap.
#include "tools/time_objective.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "compiler/lower/lower.hpp"
#include "dsl/diagnostics.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/units.hpp"
#include "runtime/cost_report.hpp"
#include "runtime/compare.hpp"
#include "tools/reproduce.hpp"
#include "tools/synth_common.hpp"
#include "verifier/baselines/nccl.hpp"
#include "verifier/time/bound_report.hpp"

namespace collsched::tools {

namespace {

using Clock = std::chrono::steady_clock;

bool same_machine(const Topology& a, const Topology& b) {
    return a.processors() == b.processors() && a.routers() == b.routers() && std::ranges::equal(a.channels(), b.channels()) &&
           a.groups() == b.groups();
}

std::string stem_of(const std::string& path) {
    std::string s = std::filesystem::path(path).filename().string();
    return s.ends_with(".sched") ? s.substr(0, s.size() - 6) : s;
}

/// The file `path` for the winner at one of several sizes: "out.json" -> "out.1MiB.json".
std::string sized_path(const std::string& path, double size) {
    std::filesystem::path p(path);
    std::string label = support::format_bytes(size);
    label.erase(std::remove(label.begin(), label.end(), ' '), label.end());
    return (p.parent_path() / (p.stem().string() + "." + label + p.extension().string())).string();
}

}  // namespace

NamedProvider library_provider(const std::string& catalog) {
    return {"library", [catalog](const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
                if (!std::filesystem::exists(catalog)) {
                    notes.push_back(fmt::format("library: {} not found (run from the source tree or give --library FILE)", catalog));
                    return;
                }
                const Catalog c = read_catalog(catalog);
                const std::uint32_t P = q.instance.topology->processors();
                for (const CatalogEntry& e : c.entries)
                    for (const auto& row : e.rows) {
                        if (row_size(e, row) != P || Clock::now() >= q.deadline) continue;
                        std::vector<std::string> defines;
                        std::string name = stem_of(e.file);
                        for (const auto& [k, v] : row) defines.push_back(fmt::format("{}={}", k, v)), name += fmt::format(" -D {}={}", k, v);
                        Diagnostics diags;
                        std::optional<SendTable> t;
                        try {
                            t = compile_file(e.file, defines, {}, diags);
                        } catch (const InputError&) {
                            continue;
                        }
                        if (!t || t->collective.kind != q.instance.collective.kind || !same_machine(*t->topology, *q.instance.topology)) continue;
                        out.push_back({name, e.title + " (" + e.file + ")", "library", e.file.find("/nccl/") != std::string::npos,
                                       std::make_shared<const SendTable>(std::move(*t))});
                    }
            }};
}

namespace {

/// One run of the time objective: the bounds, the candidates, the comparison, the report.
class TimeRun {
public:
    TimeRun(const SynthInstance& in, const TimeObjectiveArgs& args, Context& ctx) : in_(in), args_(args), ctx_(ctx) {}

    void run() {
        // the time limit counts from here: the bounds below are part of the run
        const Clock::time_point deadline =
            Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(args_.timeout > 0 ? args_.timeout : 1e6));
        const Topology& topo = *in_.topology;
        if (in_.model.timing != Timing::hop) throw InputError("optimize --size: predicted times and their bounds are for hop timing");
        bounds_ = time_bounds(topo, in_.collective, in_.model, args_.link);
        if (!bounds_) throw InputError(fmt::format("optimize --size: no time bound for {} (allgather, reduce_scatter, allreduce, alltoall, "
                                                   "broadcast, reduce, scatter and gather have one)", in_.collective.to_string()));
        CandidateQuery q{in_, args_.sizes, deadline};
        std::vector<NamedProvider> providers = construction_providers();
        providers.push_back(library_provider(args_.library));
        providers.push_back(nccl_provider());
        cands_ = gather_candidates(q, providers, notes_);
        try {
            system_ = nccl::nccl_system(topo);
        } catch (const InputError& e) {
            system_why_ = e.what();
        }
        if (cands_.empty()) {  // the bound still holds: print it
            if (args_.json) {
                nlohmann::ordered_json j{{"topology", topo.spec()}, {"collective", in_.collective.to_string()}, {"model", to_string(in_.model)},
                                         {"candidates", nlohmann::ordered_json::array()}, {"notes", notes_}};
                auto rows = nlohmann::ordered_json::array();
                for (double m : args_.sizes) {
                    const TimeBound b = evaluate(*bounds_, m);
                    rows.push_back({{"size_bytes", m}, {"winner", nullptr}, {"time_lower_bound_s", b.seconds}, {"time_bound", bound_json(*bounds_, b)}});
                }
                j["sizes"] = rows;
                ctx_.print(j.dump() + "\n");
            } else {
                std::string s = fmt::format("optimize --size: no verified schedule for {} on {}\n", in_.collective.to_string(), topo.spec());
                for (const std::string& n : notes_) s += "  note: " + n + "\n";
                ctx_.print(s + bound_lines(*bounds_, args_.sizes));
            }
            ctx_.exit_code = 3;
            return;
        }
        std::vector<Contender> cs;
        for (const TimeCandidate& c : cands_) cs.push_back({c.name, c.source, c.table.get()});
        cmp_ = compare(cs, args_.sizes, args_.link, args_.time == "sync" ? TimeKind::synchronous : TimeKind::asynchronous, 0);
        check();
        write();
        ctx_.print(args_.json ? json() : text());
        ctx_.exit_code = met_everywhere() ? 0 : 3;
    }

private:
    /// A proved bound above a verified schedule's time (either timing) is an internal error.
    void check() const {
        for (std::size_t i = 0; i < args_.sizes.size(); ++i) {
            const TimeBound b = evaluate(*bounds_, args_.sizes[i]);
            for (std::size_t c = 0; c < cands_.size(); ++c)
                for (double t : {cmp_.seconds[c][i], cmp_.other[c][i]}) {
                    const std::string bad = bound_violation(b, *bounds_, t, cands_[c].name);
                    COLLSCHED_ASSERT_MSG(bad.empty(), bad);
                }
        }
    }

    bool met_everywhere() const {
        for (std::size_t i = 0; i < args_.sizes.size(); ++i)
            if (cmp_.seconds[cmp_.winner[i]][i] > evaluate(*bounds_, args_.sizes[i]).seconds * (1 + 1e-9)) return false;
        return true;
    }

    /// The best NCCL algorithm at size i (index), if any candidate is one.
    std::optional<std::size_t> nccl_best(std::size_t i) const {
        std::optional<std::size_t> best;
        for (std::size_t c = 0; c < cands_.size(); ++c)
            if (cands_[c].nccl && (!best || cmp_.seconds[c][i] < cmp_.seconds[*best][i])) best = c;
        return best;
    }

    /// NCCL's own model (src/graph/tuning.cc, verifier/baselines) at size i: the algorithm and
    /// protocol its tuner picks (the least model time), or nullopt (alltoall, or a machine NCCL's
    /// model does not describe).
    struct ModelPick {
        nccl::Algorithm algorithm;
        nccl::ModelChoice choice;
    };
    std::optional<ModelPick> nccl_model(std::size_t i) const {
        if (!system_) return std::nullopt;
        const CollectiveKind k = in_.collective.kind;
        const double bytes = nccl::nccl_bytes(k, in_.topology->processors(), args_.sizes[i]);
        std::optional<ModelPick> best;
        for (nccl::Algorithm a : {nccl::Algorithm::ring, nccl::Algorithm::tree, nccl::Algorithm::pat})
            if (auto m = nccl::nccl_best_protocol(*system_, k, a, bytes); m && (!best || m->seconds < best->choice.seconds)) best = ModelPick{a, *m};
        return best;
    }

    std::string model_text(std::size_t i) const {
        const auto m = nccl_model(i);
        return m ? fmt::format("{} {} {}", nccl::to_string(m->algorithm), nccl::to_string(m->choice.protocol), support::format_seconds(m->choice.seconds))
                 : std::string("not modelled");
    }

    void write() const {
        for (const std::string& path : args_.outputs)
            for (std::size_t i = 0; i < args_.sizes.size(); ++i) {
                const TimeCandidate& w = cands_[cmp_.winner[i]];
                write_witness(args_.sizes.size() == 1 ? path : sized_path(path, args_.sizes[i]), *w.table,
                              fmt::format("{} on {}: the fastest verified schedule at {} ({} {}): {}; {}", in_.collective.to_string(),
                                          in_.topology->spec(), support::format_bytes(args_.sizes[i]), kind_word(),
                                          support::format_seconds(cmp_.seconds[cmp_.winner[i]][i]), w.name, w.source));
            }
    }

    std::string kind_word() const { return args_.time == "sync" ? "synchronous" : "asynchronous"; }

    nlohmann::ordered_json size_json(std::size_t i) const {
        const double m = args_.sizes[i], t = cmp_.seconds[cmp_.winner[i]][i];
        const TimeBound b = evaluate(*bounds_, m);
        const SendTable& w = *cands_[cmp_.winner[i]].table;
        nlohmann::ordered_json j;
        j["size_bytes"] = m;
        j["winner"] = cands_[cmp_.winner[i]].name;
        j["predicted_time_s"] = t;
        j["time_lower_bound_s"] = b.seconds;
        j["gap_percent"] = gap_percent(t, b.seconds);
        j["time_bound"] = bound_json(*bounds_, b);
        j["algbw_Bps"] = algbw(m, t);
        j["busbw_Bps"] = busbw(w, m, t);
        auto files = nlohmann::ordered_json::array();
        for (const std::string& path : args_.outputs) files.push_back(args_.sizes.size() == 1 ? path : sized_path(path, m));
        j["witness"] = files;
        if (auto n = nccl_best(i)) {
            j["nccl_best"] = cands_[*n].name;
            j["nccl_best_s"] = cmp_.seconds[*n][i];
            j["speedup_over_nccl"] = cmp_.seconds[*n][i] / t;
        } else {
            j["nccl_best"] = nullptr;
        }
        if (auto mdl = nccl_model(i))
            j["nccl_model"] = {{"algorithm", nccl::to_string(mdl->algorithm)}, {"protocol", nccl::to_string(mdl->choice.protocol)},
                               {"seconds", mdl->choice.seconds}};
        else
            j["nccl_model"] = nullptr;
        return j;
    }

    std::string json() const {
        nlohmann::ordered_json j;
        j["topology"] = in_.topology->spec();
        j["collective"] = in_.collective.to_string();
        j["processors"] = in_.topology->processors();
        j["model"] = to_string(in_.model);
        j["time"] = kind_word();
        j["link_speeds"] = speeds_text(*in_.topology, args_.link);
        auto rows = nlohmann::ordered_json::array();
        for (std::size_t i = 0; i < args_.sizes.size(); ++i) rows.push_back(size_json(i));
        for (const char* k : {"size_bytes", "predicted_time_s", "time_lower_bound_s", "time_bound"}) j[k] = rows[0][k];  // the first size
        j["sizes"] = rows;
        auto xs = nlohmann::ordered_json::array();
        for (const Crossover& x : cmp_.crossovers) xs.push_back({{"size_bytes", x.size}, {"below", cands_[x.from].name}, {"above", cands_[x.to].name}});
        j["crossovers"] = xs;
        auto cj = nlohmann::ordered_json::array();
        for (const TimeCandidate& c : cands_)
            cj.push_back({{"name", c.name}, {"provider", c.provider}, {"nccl", c.nccl}, {"source", c.source}, {"steps", c.table->steps()},
                          {"chunks", c.table->collective.chunks}, {"transfers", c.table->transfers.size()}});
        j["candidates"] = cj;
        j["notes"] = notes_;
        j["witness"] = args_.outputs;
        return j.dump() + "\n";
    }

    /// Why no NCCL algorithm is compared: the time limit came before they were built or checked,
    /// or the machine has none (it said "no NCCL algorithm for this machine" in both cases).
    std::string no_nccl_text() const {
        for (const std::string& n : notes_)
            if (n.starts_with("nccl: not run") || n.starts_with("nccl: stopped") ||
                (n.starts_with("nccl ") && n.find("not verified before the time limit") != std::string::npos))
                return "NCCL's algorithms not built or checked within the time limit";
        return "no NCCL algorithm for this machine";
    }

    std::string text() const {
        std::string s = fmt::format("optimize --size: {} on {} ({}), {} processors; {} time (docs/time.md); {}\n", in_.collective.to_string(),
                                    in_.topology->spec(), to_string(in_.model), in_.topology->processors(), kind_word(),
                                    speeds_text(*in_.topology, args_.link));
        s += fmt::format("candidates: {} verified by the direct checker:", cands_.size());
        for (const TimeCandidate& c : cands_) s += fmt::format(" {};", c.name);
        s.back() = '\n';
        for (const std::string& n : notes_) s += "  note: " + n + "\n";
        s += fmt::format("  {:<10}  {:<36}  {:>10}  {:>10}  {:>7}  {:>11}  {:>11}  {}\n", "size", "fastest", "time", "bound", "gap", "algbw", "busbw",
                         "vs NCCL's best");
        for (std::size_t i = 0; i < args_.sizes.size(); ++i) {
            const double m = args_.sizes[i], t = cmp_.seconds[cmp_.winner[i]][i];
            const TimeBound b = evaluate(*bounds_, m);
            auto n = nccl_best(i);
            s += fmt::format("  {:<10}  {:<36}  {:>10}  {:>10}  {:>6.1f}%  {:>11}  {:>11}  {}\n", support::format_bytes(m), cands_[cmp_.winner[i]].name,
                             support::format_seconds(t), support::format_seconds(b.seconds), gap_percent(t, b.seconds),
                             support::format_bandwidth(algbw(m, t)), support::format_bandwidth(busbw(*cands_[cmp_.winner[i]].table, m, t)),
                             n ? fmt::format("{:.2f}x over {} ({})", cmp_.seconds[*n][i] / t, cands_[*n].name, support::format_seconds(cmp_.seconds[*n][i]))
                               : no_nccl_text());
        }
        for (const Crossover& x : cmp_.crossovers)
            s += fmt::format("crossover at {}: {} is faster below, {} above\n", support::format_bytes(x.size), cands_[x.from].name, cands_[x.to].name);
        if (system_) {
            s += "NCCL's own model (src/graph/tuning.cc, its tuner's algorithm and protocol; docs/time.md):";
            for (std::size_t i = 0; i < args_.sizes.size(); ++i) s += fmt::format(" {} {};", support::format_bytes(args_.sizes[i]), model_text(i));
            s.back() = '\n';
        } else {
            s += fmt::format("NCCL's own model: none for this machine ({})\n", system_why_);
        }
        const TimeBound last = evaluate(*bounds_, args_.sizes.back());
        s += fmt::format("lower bound at {}: {}", support::format_bytes(args_.sizes.back()), bound_text(*bounds_, last));
        if (!args_.outputs.empty()) s += fmt::format("witness: {}\n", fmt::join(args_.outputs, ", "));
        return s;
    }

    const SynthInstance& in_;
    const TimeObjectiveArgs& args_;
    Context& ctx_;
    std::optional<TimeBounds> bounds_;
    std::vector<TimeCandidate> cands_;
    std::vector<std::string> notes_;
    Comparison cmp_;
    std::optional<nccl::System> system_;  ///< what NCCL's search sees of the machine, if it describes it
    std::string system_why_;
};

}  // namespace

void run_time_objective(const SynthInstance& in, const TimeObjectiveArgs& args, Context& ctx) { TimeRun(in, args, ctx).run(); }

}  // namespace collsched::tools
