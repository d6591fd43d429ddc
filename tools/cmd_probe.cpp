// `collsched probe NAME`: the open questions of the seed papers, instance by instance: the
// papers' formulas next to collsched's proven bounds and the solver's optimum with its status.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/assert.hpp"
#include "support/error.hpp"
#include "tools/commands.hpp"
#include "cli/synth_common.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched::tools {

namespace {

struct ProbeArgs {
    std::string name;
    std::string sizes;
    std::string widths = "1,n";
    SolverArgs solver;
    bool json = false;
    std::string witness_dir;
};

/// One instance of a probe, with the formulas the papers give for it.
struct Case {
    std::string label;       ///< row label, e.g. "n=8"
    std::string variant;     ///< e.g. "queues=none"
    SynthInstance instance;
    std::vector<std::pair<std::string, std::string>> formulas;  ///< (column, value) from the papers
    std::string file;        ///< witness file stem
};

struct Run {
    SatBackend backend;
    OptimizeResult result;
};

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::size_t b = 0;
    while (b <= s.size()) {
        std::size_t e = s.find(sep, b);
        if (e == std::string::npos) e = s.size();
        if (e > b) out.push_back(s.substr(b, e - b));
        b = e + 1;
    }
    return out;
}

std::uint32_t parse_size(const std::string& s, const char* what) {
    try {
        std::size_t used = 0;
        unsigned long v = std::stoul(s, &used);
        if (used == s.size() && v >= 2 && v <= 4096) return static_cast<std::uint32_t>(v);
    } catch (const std::exception&) {
    }
    throw InputError(fmt::format("probe: '{}' is not a valid {} (expected an integer from 2 to 4096)", s, what));
}

std::uint32_t log2u(std::uint32_t n) {
    std::uint32_t l = 0;
    while ((1u << (l + 1)) <= n) ++l;
    return l;
}

SynthInstance instance(const std::string& spec, const std::string& coll, const std::string& model) {
    auto topo = Topology::parse(spec);
    return {topo, apply_model_options(topo->default_model(), model), Collective::parse(coll, *topo)};
}

std::vector<Case> ebft_alltoall(const std::vector<std::string>& ns) {
    std::vector<Case> cases;
    for (const std::string& s : ns) {
        std::uint32_t n = parse_size(s, "n");
        if ((n & (n - 1)) != 0 || n < 4) throw InputError(fmt::format("probe ebft-alltoall: n = {} must be a power of 2, at least 4", n));
        double L = log2u(n);
        double lemma = n + 2 * L - 2 * std::log2(L) - 2;
        std::vector<std::pair<std::string, std::string>> f{
            {"paper n+2logn-2", std::to_string(n + 2 * log2u(n) - 2)},
            {"Lemma 3", fmt::format("{:.2f} (>= {})", lemma, static_cast<long>(std::ceil(lemma - 1e-9)))},
            {"root n^2/4c", std::to_string((n * n / 4 + n / 2 - 1) / (n / 2))}};
        for (const char* q : {"none", "unbounded"})
            cases.push_back({fmt::format("n={}", n), fmt::format("queues={}", q),
                             instance(fmt::format("ebft:{}", n), "alltoall", fmt::format("queues={}", q)), f,
                             fmt::format("ebft{}-alltoall-queues-{}", n, q)});
    }
    return cases;
}

std::vector<Case> cbft_allgather(const std::vector<std::string>& ns) {
    std::vector<Case> cases;
    for (const std::string& s : ns) {
        std::uint32_t n = parse_size(s, "n");
        if ((n & (n - 1)) != 0 || n < 4) throw InputError(fmt::format("probe cbft-allgather: n = {} must be a power of 2, at least 4", n));
        std::vector<std::pair<std::string, std::string>> f{
            {"lower n+1", std::to_string(n + 1)},
            {"flooding w/ queues", std::to_string(n + 1)},
            {"queue-free [3]", std::to_string(n + 2 * log2u(n) - 2)}};
        cases.push_back({fmt::format("n={}", n), "queues=none,replicate=yes",
                         instance(fmt::format("cbft:{}", n), "allgather", "queues=none,replicate=yes"), f,
                         fmt::format("cbft{}-allgather-queues-none", n)});
    }
    return cases;
}

std::vector<Case> torus_allgather_half(const std::vector<std::string>& dims) {
    std::vector<Case> cases;
    for (const std::string& d : dims) {
        auto parts = split(d, 'x');
        if (parts.size() != 2) throw InputError(fmt::format("probe torus-allgather-half: '{}' is not AxB (e.g. 3x5)", d));
        std::uint32_t a = parse_size(parts[0], "torus side"), b = parse_size(parts[1], "torus side");
        if (a < 3 || b < 3) throw InputError(fmt::format("probe torus-allgather-half: '{}': sides must be at least 3", d));
        std::uint32_t P = a * b;
        // Half duplex on a ring of k: 2k steps (k odd), 2(k-1) (k even); the product algorithm of
        // Theorem 2 takes T_B + n_B T_A, best over the two orders.
        auto ring = [](std::uint32_t k) { return k % 2 ? 2 * k : 2 * (k - 1); };
        std::uint32_t product = std::min(ring(b) + b * ring(a), ring(a) + a * ring(b));
        std::vector<std::pair<std::string, std::string>> f{
            {"lower bound", std::to_string(P % 2 ? 2 * P : 2 * (P - 1))},
            {"hamiltonian ring", std::to_string(P % 2 ? 2 * P : 2 * (P - 1))},
            {"product (Thm 2)", std::to_string(product)}};
        cases.push_back({fmt::format("{}x{}", a, b), "ports=half", instance(fmt::format("torus:{}x{}", a, b), "allgather", "ports=half"),
                         f, fmt::format("torus{}x{}-allgather-half", a, b)});
    }
    return cases;
}

std::vector<Case> ideal_broadcast(const std::vector<std::string>& ns, const std::vector<std::string>& ws) {
    std::vector<Case> cases;
    for (const std::string& s : ns) {
        std::uint32_t n = parse_size(s, "N");
        if ((n & (n - 1)) != 0) throw InputError(fmt::format("probe ideal-broadcast: N = {} must be a power of 2", n));
        for (const std::string& w : ws) {
            std::vector<std::pair<std::string, std::string>> f{{"2 log N", std::to_string(2 * log2u(n))}};
            std::string stem = w;
            for (char& c : stem)
                if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
            cases.push_back({fmt::format("N={}", n), fmt::format("w={}", w), instance(fmt::format("ideal:{}:w={}", n, w), "broadcast:0", ""), f,
                             fmt::format("ideal{}-w{}-broadcast", n, stem)});
        }
    }
    return cases;
}

/// What the solver alone did (a run with constructions off and --solver-proof on), measured
/// against the settled optimum: the time of its SAT answers if it reached the optimum, and its
/// answer one step below the optimum.
struct SolverSummary {
    bool reached = false;
    double find = 0;           ///< seconds of the SAT attempts (from the known schedule down)
    std::string below = "-";   ///< answer at optimum - 1
    double below_seconds = 0;
    std::string text;
};

SolverSummary summarize(const OptimizeResult& r, std::optional<Step> settled) {
    SolverSummary s;
    s.reached = settled && r.upper_bound && *r.upper_bound <= *settled;
    for (const Attempt& a : r.attempts) {
        if (a.answer == Answer::sat) s.find += a.seconds;
        if (settled && a.horizon + 1 == *settled) {
            s.below = std::string(to_string(a.answer));
            s.below_seconds = a.seconds;
        }
    }
    std::string find = s.reached ? fmt::format("{:.2f}s", s.find)
                                 : fmt::format("best {} ({:.0f}s)", r.upper_bound ? std::to_string(*r.upper_bound) : "-", r.seconds);
    std::string below = s.below == "-" ? "-" : fmt::format("{} {:.2f}s", s.below, s.below_seconds);
    s.text = fmt::format("{} | {}", find, below);
    return s;
}

std::string how(const OptimizeResult& r) {
    if (r.status != OptStatus::proved) return fmt::format("bounds {}..{}", r.lower_bound, r.upper_bound ? std::to_string(*r.upper_bound) : "?");
    std::string lower = r.lower_bound_reason.substr(0, r.lower_bound_reason.find(':'));
    std::string upper = r.upper_bound_source.substr(0, r.upper_bound_source.find(" ("));
    return fmt::format("{} / {}", lower, upper);
}

std::string table_text(const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> w;
    for (const auto& r : rows)
        for (std::size_t i = 0; i < r.size(); ++i) {
            if (w.size() <= i) w.push_back(0);
            w[i] = std::max(w[i], r[i].size());
        }
    std::string out;
    for (const auto& r : rows) {
        std::string line = " ";
        for (std::size_t i = 0; i < r.size(); ++i) line += fmt::format(" {:<{}}", r[i], i + 1 < r.size() ? w[i] : 0);
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
    }
    return out;
}

/// One run of `probe`, one method per stage, called in order by run(): the witness directory,
/// the cases, each case by the default pipeline and by every solver alone, the report.
class ProbeRun {
public:
    ProbeRun(const ProbeArgs& args, Context& ctx) : args_(args), ctx_(ctx) {
        if (args.solver.solver != "z3") backends_.push_back(SatBackend::cadical);
        if (args.solver.solver != "cadical") backends_.push_back(SatBackend::z3);
    }

    void run() {
        make_witness_dir();
        const std::vector<Case> cases = make_cases();
        head(cases);
        for (const Case& c : cases) probe(c);
        report();
        ctx_.exit_code = disagree_ ? 1 : all_proved_ ? 0 : 3;
    }

private:
    /// Before the search, so a bad DIR fails at once.
    void make_witness_dir() const {
        if (args_.witness_dir.empty()) return;
        std::error_code ec;
        std::filesystem::create_directories(args_.witness_dir, ec);
        if (ec || !std::filesystem::is_directory(args_.witness_dir))
            throw InputError(fmt::format("--witness-dir {}: cannot create the directory ({})", args_.witness_dir,
                                         ec ? ec.message() : "a file of that name exists"));
    }

    std::vector<Case> make_cases() const {
        std::string sizes = args_.sizes;
        if (sizes.empty()) sizes = args_.name == "torus-allgather-half" ? "3x3,3x5" : args_.name == "ideal-broadcast" ? "4,8,16" : "4,8";
        std::vector<Case> cases;
        if (args_.name == "ebft-alltoall") cases = ebft_alltoall(split(sizes, ','));
        else if (args_.name == "cbft-allgather") cases = cbft_allgather(split(sizes, ','));
        else if (args_.name == "torus-allgather-half") cases = torus_allgather_half(split(sizes, ','));
        else cases = ideal_broadcast(split(sizes, ','), split(args_.widths, ','));
        for (Case& c : cases) c.instance.routes = args_.solver.route_space();
        return cases;
    }

    void head(const std::vector<Case>& cases) {
        std::vector<std::string> head{"instance", "variant"};
        if (!cases.empty())
            for (const auto& f : cases.front().formulas) head.push_back(f.first);
        for (const char* h : {"counting", "optimum", "proved by (lower / upper)"}) head.push_back(h);
        for (SatBackend b : backends_) head.push_back(fmt::format("{}: find | T-1", to_string(b)));
        table_.push_back(head);
    }

    /// The default pipeline (counting bounds, known schedules and constructions, the solver),
    /// then the solver on its own: from the papers' algorithm or the greedy down to the optimum,
    /// and optimum - 1, even where counting settles it.
    OptimizeResult solve(const Case& c, std::vector<Run>& runs) const {
        OptimizeOptions base = args_.solver.options(backends_.front());
        Progress progress(fmt::format("probe {} {}", c.label, c.variant));
        base.progress = progress.callback();
        OptimizeResult best;
        try {
            best = optimize(c.instance, base);
            progress.finish();
            for (SatBackend b : backends_) {
                OptimizeOptions opt = args_.solver.options(b);
                opt.constructions = false;
                opt.solver_proof = true;
                Progress p2(fmt::format("probe {} {} {} solver only", c.label, c.variant, to_string(b)));
                opt.progress = p2.callback();
                runs.push_back({b, optimize(c.instance, opt)});
                p2.finish();
            }
        } catch (const std::logic_error& e) {
            progress.finish();
            throw Progress::internal_error(e);
        }
        return best;
    }

    void probe(const Case& c) {
        std::vector<Run> runs;
        const OptimizeResult best = solve(c, runs);
        all_proved_ = all_proved_ && best.status == OptStatus::proved;
        // Every run must respect the others' proofs: no schedule below a proven lower bound.
        std::vector<const OptimizeResult*> all{&best};
        for (const Run& r : runs) all.push_back(&r.result);
        for (const OptimizeResult* a : all)
            for (const OptimizeResult* b : all)
                if (a->upper_bound && *a->upper_bound < b->lower_bound) disagree_ = true;
        if (!args_.witness_dir.empty() && best.witness) {
            write_witness(args_.witness_dir + "/" + c.file + ".json", *best.witness);
            write_witness(args_.witness_dir + "/" + c.file + ".sched", *best.witness, witness_comment(c.instance, best));
        }
        std::vector<std::string> line{c.label, c.variant};
        for (const auto& f : c.formulas) line.push_back(f.second);
        const bool counted = !best.bounds.empty() && bound_applies(best.bounds.front(), c.instance);
        const Step counting = counted ? best.bounds.front().steps : 0u;
        searches_ += fmt::format("  {} {}: {}\n", c.label, c.variant, search_line(c.instance, best));
        line.push_back(std::to_string(counting));
        line.push_back(fmt::format("{} {}", best.optimum ? std::to_string(*best.optimum) : "?", to_string(best.status)));
        line.push_back(how(best));
        nlohmann::ordered_json row;
        row["instance"] = c.label;
        row["variant"] = c.variant;
        row["topology"] = c.instance.topology->spec();
        row["model"] = to_string(c.instance.model);
        row["collective"] = c.instance.collective.to_string();
        for (const auto& [k, v] : c.formulas) row["formulas"][k] = v;
        row["counting_bound"] = counting;
        row["counting_bound_name"] = counted ? best.bounds.front().name : "";
        row["search"] = search_space(c.instance);
        row["result"] = result_json(c.instance, best, args_.solver.limits());
        row["solver_runs"] = nlohmann::ordered_json::array();
        for (const Run& r : runs) {
            SolverSummary sm = summarize(r.result, best.status == OptStatus::proved ? best.optimum : std::nullopt);
            line.push_back(sm.text);
            nlohmann::ordered_json j = result_json(c.instance, r.result, args_.solver.limits());
            j["solver"] = to_string(r.backend);
            j["reached_optimum"] = sm.reached;
            j["find_seconds"] = sm.find;
            j["below_optimum"] = sm.below;
            j["below_optimum_seconds"] = sm.below_seconds;
            row["solver_runs"].push_back(std::move(j));
        }
        table_.push_back(line);
        rows_.push_back(std::move(row));
    }

    void report() {
        if (args_.json) {
            nlohmann::ordered_json j;
            j["probe"] = args_.name;
            j["timeout"] = args_.solver.timeout;
            j["agree"] = !disagree_;
            j["rows"] = std::move(rows_);
            ctx_.print(j.dump() + "\n");
            return;
        }
        std::string text = fmt::format(
            "probe {} (time limit {} s per run)\n  counting: the best lower bound proved without a solver; optimum: settled by "
            "collsched (proved by: lower bound / schedule)\n  <solver>: find | T-1: the solver alone, from the papers' algorithm or "
            "the greedy: time of its SAT answers down to the optimum (or the best it reached), and its answer one step below\n",
            args_.name, args_.solver.timeout);
        text += table_text(table_);
        text += "search (what each optimum is proved over):\n" + searches_;
        if (disagree_) text += "the solvers DISAGREE on some instance (a bug): see the rows above\n";
        ctx_.print(text);
    }

    const ProbeArgs& args_;
    Context& ctx_;
    std::vector<SatBackend> backends_;
    nlohmann::ordered_json rows_ = nlohmann::ordered_json::array();
    std::vector<std::vector<std::string>> table_;
    std::string searches_;
    bool all_proved_ = true, disagree_ = false;
};

}  // namespace

void add_probe_command(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<ProbeArgs>();
    auto* cmd = app.add_subcommand(
        "probe",
        "Instances of the seed papers' open questions, each against the papers' formulas: ebft-alltoall (total exchange on "
        "the exponential fat tree, the conjecture n+2logn-2), cbft-allgather (multinode broadcast on the constant tree "
        "without queueing), torus-allgather-half (half-duplex multinode broadcast on tori of odd rings), ideal-broadcast "
        "(exact optimum on the ideal fat tree).\nExit code: 0 every optimum proved, 3 some not proved in time, 1 the two "
        "solvers disagree, 2 bad input.");
    cmd->add_option("NAME", args->name, "ebft-alltoall, cbft-allgather, torus-allgather-half, ideal-broadcast")
        ->required()
        ->check(CLI::IsMember({"ebft-alltoall", "cbft-allgather", "torus-allgather-half", "ideal-broadcast"}));
    cmd->add_option("--n,--dims", args->sizes, "Sizes, comma separated: --n 4,8,16 (tori: --dims 3x3,3x5)");
    cmd->add_option("--w", args->widths, "ideal-broadcast: capacity functions, comma separated (default 1,n)");
    args->solver.timeout = 60;
    args->solver.add_to(*cmd, true);
    cmd->add_flag("--json", args->json, "Print one JSON object instead of the table");
    cmd->add_option("--witness-dir", args->witness_dir, "Write every best schedule as DIR/<instance>.json and .sched (DIR is created)");
    cmd->callback([&ctx, args] { ProbeRun(*args, ctx).run(); });
}

}  // namespace collsched::tools
