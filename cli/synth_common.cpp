#include "cli/synth_common.hpp"


#include <unistd.h>

#include <cstdio>

#include <filesystem>

#include <fmt/format.h>

#include "compiler/io/export_ranks.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/io/table_io.hpp"
#include "dsl/diagnostics.hpp"
#include "support/teardown.hpp"
#include "support/trace.hpp"
#include "compiler/io/table_printer.hpp"
#include "cli/machine_note.hpp"  // faults_line
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "verifier/time/constructions.hpp"

namespace collsched::tools {

void InstanceArgs::add_to(CLI::App& cmd, std::string_view topology_example, const std::string& collectives, std::string_view model_example) {
    cmd.add_option("--topology", topology, fmt::format("Topology spec, e.g. {}", topology_example))->required();
    cmd.add_option("--collective", collective, collectives)->required();
    cmd.add_option("--model", model, fmt::format("key=value pairs on top of the family's default, e.g. {}", model_example));
}

SynthInstance InstanceArgs::instance(RouteSpace routes, bool check_size, const RunLimits& limits) const {
    trace("machine: read {}", topology);
    auto topo = Topology::parse(topology, limits);
    trace("machine: {} processors, {} routers, {} channels", topo->processors(), topo->routers(), topo->channels().size());
    bury(topo);  // the command's machine lives to its end: not freed at exit (support/teardown.hpp)
    Model m = apply_model_options(topo->default_model(), model);
    said = faults_line(topology);
    return SynthInstance{topo, m, Collective::parse(collective, *topo, check_size), routes};
}

void InstanceArgs::refuse_before_reading(const std::function<void(Collective&, const Topology&)>& refuse) const {
    const std::optional<std::uint64_t> P = Topology::declared_processors(topology);
    if (!P || *P < 2 || *P > 4096) return;  // graph files have at most 4096 nodes
    std::shared_ptr<const Topology> stand_in;
    std::optional<Collective> c;
    try {
        stand_in = Topology::parse(fmt::format("linear:{}", *P));
        c = Collective::parse(collective, *stand_in, false);
    } catch (const InputError&) {
        return;  // said after reading, about the machine itself
    }
    refuse(*c, *stand_in);
}

void SolverArgs::add_to(CLI::App& cmd, bool allow_both, bool with_routes) {
    if (with_routes)
        cmd.add_option("--routes", routes,
                       "Personalized collectives: any (default: every walk the model permits, as verify accepts) or fixed "
                       "(every message on the topology's route, as verify --routes fixed)")
            ->check(CLI::IsMember({"any", "fixed"}));
    std::vector<std::string> solvers{"cadical", "z3"};
    if (allow_both) solvers.push_back("both");
    cmd.add_option("--solver", solver,
                   allow_both ? "SAT backend: cadical (CNF with totalizer cardinalities), z3 (pseudo-Boolean), or both "
                                "(run each instance with each, compare answers and times)"
                              : "SAT backend: cadical (CNF with totalizer cardinalities) or z3 (pseudo-Boolean)")
        ->check(CLI::IsMember(solvers));
    cmd.add_option("--timeout", timeout,
                   "Seconds for the whole run, a hard limit: every solver call gets at most what is left, the encoders and "
                   "greedy schedules stop at it, and the run ends with the best bounds and schedule so far (exit 3); 0 means no limit")
        ->check(seconds_option(true));
    // A command may define these itself with its own words (pareto's --solve-timeout per instance).
    if (!cmd.get_option_no_throw("--solve-timeout"))
        cmd.add_option("--solve-timeout", solve_timeout, "Seconds for one solver call (one horizon), within --timeout; 0 means no limit")
            ->check(seconds_option(true));
    if (!cmd.get_option_no_throw("--memory"))
        cmd.add_option("--memory", memory,
                   fmt::format("Most resident memory the run may use, e.g. 4G, 512MiB, 25%; an encoding estimated not to fit is not "
                               "built and one that grows too large is stopped (answer unknown, exit 3 unless proved otherwise); "
                               "default: {} MiB when {} is set, else {} (at most half of physical memory); 0 means no limit",
                               MemoryBudget::environment_variable, MemoryBudget::environment_variable,
                               format_bytes(MemoryBudget::default_limit)))
            ->check(CLI::Validator([](std::string& s) { return s.empty() ? std::string("expected a size such as 4G, 512MiB or 25%, not an empty one") : std::string(); },
                                   "", "memory"));
    cmd.add_flag("--incremental", incremental, "One solver for all horizons (horizons as assumptions) instead of one per horizon");
    cmd.add_flag("--no-symmetry", no_symmetry, "Leave out the symmetry-breaking constraints");
    cmd.add_flag("--no-implied", no_implied, "Leave out the implied cumulative counting constraints");
    cmd.add_option("--cardinality", cardinality, "CNF encoding of cardinality constraints (cadical)")
        ->check(CLI::IsMember({"totalizer", "sequential"}));
    cmd.add_flag("--no-constructions", no_constructions,
                 "First upper bound from the papers' algorithms and the greedy only, not from collsched's own constructions");
    cmd.add_flag("--solver-proof", solver_proof,
                 "When a counting bound already proves the optimum T, also show T-1 UNSAT with the solver");
}

OptimizeOptions SolverArgs::options(SatBackend fallback) const {
    OptimizeOptions o{constructions()};
    o.synth.backend = solver == "z3" ? SatBackend::z3 : solver == "cadical" ? SatBackend::cadical : fallback;
    o.synth.symmetry = !no_symmetry;
    o.synth.implied = !no_implied;
    o.synth.cardinality = cardinality == "sequential" ? CardinalityKind::sequential : CardinalityKind::totalizer;
    o.timeout = timeout;
    o.synth.timeout = solve_timeout;
    o.synth.memory = memory_budget();
    o.incremental = incremental;
    o.constructions = !no_constructions;
    o.solver_proof = solver_proof;
    return o;
}

MemoryBudget SolverArgs::memory_budget() const {
    if (memory.empty()) return MemoryBudget::standard();
    return MemoryBudget(parse_bytes(memory));
}

Progress::Progress(std::string prefix) : prefix_(std::move(prefix)), tty_(::isatty(2) == 1) {}

std::function<void(const OptimizeProgress&)> Progress::callback() {
    if (!tty_) return {};
    return [this](const OptimizeProgress& p) {
        std::string line = p.done ? fmt::format("{}: T = {} {} ({}), {:.1f} s", prefix_, p.horizon, to_string(p.answer), to_string(p.backend), p.elapsed)
                                  : fmt::format("{}: T = {} solving ({}), {:.1f} s", prefix_, p.horizon, to_string(p.backend), p.elapsed);
        std::fprintf(stderr, "\r\033[K%s", line.c_str());
        if (p.done) std::fputc('\n', stderr);
        open_ = !p.done;
        std::fflush(stderr);
    };
}

InputError Progress::internal_error(const std::logic_error& e) {
    return InputError(fmt::format("internal error (a bug, please report it): {}", e.what()));
}

void Progress::finish() {
    if (tty_ && open_) {
        std::fputc('\n', stderr);
        open_ = false;
    }
}

std::string witness_dsl(const SendTable& t, const std::string& comment, const std::string& file) {
    std::string hops = table_to_dsl(t, file);
    std::size_t body = hops.find("\nstep ");
    std::size_t head = hops.find('\n');  // the printer's own comment line
    std::string header = hops.substr(head + 1, body == std::string::npos ? std::string::npos : body - head);
    std::string lead;
    for (std::size_t b = 0; b < comment.size();) {
        std::size_t e = comment.find('\n', b);
        if (e == std::string::npos) e = comment.size();
        lead += "# " + comment.substr(b, e - b) + "\n";
        b = e + 1;
    }
    // Endpoint form when every copy goes from processor to processor cut-through along its route
    // (no replication in routers): one `send` per copy instead of one `hop` per channel.
    if (t.model.timing == Timing::hop && body != std::string::npos) {
        try {
            EndpointView ev = endpoint_view(t);
            if (ev.cut_through && ev.fanout == 0 && ev.stranded == 0) {
                Messages ms = t.messages();
                std::string text = lead + "# Endpoint sends, cut-through: hop k of a send in step s crosses its channel in step s+k-1.\n" + header;
                std::size_t i = 0;
                while (i < ev.transfers.size()) {
                    Step s = ev.transfers[i].sent;
                    text += t.rounds(s) > 1 ? fmt::format("step {} rounds {} {{\n", s, t.rounds(s)) : fmt::format("step {} {{\n", s);
                    for (; i < ev.transfers.size() && ev.transfers[i].sent == s; ++i) {
                        const EndpointTransfer& e = ev.transfers[i];
                        text += fmt::format("  send {} -> {}", idx(e.src), idx(e.dst));
                        if (e.message != ms.personal(idx(e.src), idx(e.dst))) text += " msg " + ms.name(e.message);
                        text += "\n";
                    }
                    text += "}\n";
                }
                Diagnostics diags;
                CompileOptions where;  // the text's graph files are relative to the file it goes to
                where.base_dir = std::filesystem::path(file).parent_path().string();
                std::optional<SendTable> back = compile_text(text, "witness", where, diags);
                if (back && back->transfers == t.transfers && back->step_rounds == t.step_rounds) return text;
            }
        } catch (const InputError&) {
            // not an endpoint-regular table: the hop form below
        }
    }
    return lead + "# Hop by hop: every transfer of the table.\n" + header + (body == std::string::npos ? "" : hops.substr(body + 1));
}

void write_witness(const std::string& path, const SendTable& t, const std::string& comment) {
    bool dsl = path.size() > 6 && path.ends_with(".sched");
    std::string text = dsl ? witness_dsl(t, comment, path) : std::string();
    write_output(path, [&](const Flush& flush, fmt::memory_buffer& buf) {
        if (dsl) buf.append(text.data(), text.data() + text.size());
        else write_table_json(t, buf, flush, path);
        flush(buf);
    });
}

}  // namespace collsched::tools
