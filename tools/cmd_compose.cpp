// `collsched compose`: the constructions for time (verifier/constructions/compose/allreduce.hpp) on their own.
// For a machine, a collective (allreduce, reduce_scatter, allgather) and one size it prints every
// shape that applies with its pieces and predicted asynchronous time, fastest first, each verified
// by the direct checker, and writes the fastest table (-o FILE) or every table (--dir DIR), which
// `collsched verify FILE --size M` and `collsched compare` read (docs/time.md, "Constructions
// for time"). The options and exit codes are every command's: usage errors exit 2 before any work,
// files are written (atomically) before the report is printed.
#include <algorithm>
#include <cstdio>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/timing.hpp"
#include "support/budget.hpp"
#include "support/error.hpp"
#include "tools/commands.hpp"
#include "cli/options.hpp"
#include "cli/size_options.hpp"
#include "cli/synth_common.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/constructions/compose/allreduce.hpp"

namespace collsched::tools {

namespace {

struct ComposeArgs {
    InstanceArgs instance;
    std::vector<double> sizes;
    std::string output, dir, shape;
    std::uint32_t pieces = 0;
    double timeout = 0;
};

/// A file name from a candidate's name: "hierarchical rsag+ring, 64 pieces" -> "hierarchical_rsag+ring_64_pieces".
std::string slug(const std::string& name) {
    std::string s;
    for (char c : name)
        if (c == ' ') s += '_';
        else if (c != ',') s += c;
    return s;
}

/// --pieces K: every shape (or the one --shape names) with K pieces on the machine's boxes, unverified.
void run_pieces(const ComposeArgs& a, const SynthInstance& in, Deadline deadline, Context& ctx) {
    const CollectiveKind kind = in.collective.kind;
    const compose::Boxes boxes = compose::find_boxes(*in.topology);
    std::vector<compose::Shape> shapes = compose::every_shape();
    if (boxes.why.empty())  // the machine's shapes for its slow or failed parts
        for (const compose::Shape& sh : compose::fault_shapes(*in.topology, boxes.boxes)) shapes.push_back(sh);
    std::vector<std::string> names;
    for (const compose::Shape& sh : shapes)
        if (const std::string n = compose::shape_name(sh, kind); !n.ends_with(' ') && std::find(names.begin(), names.end(), n) == names.end())
            names.push_back(n);  // not "hierarchical " (neither a box's part nor a rail's: nothing to name)
    if (!a.shape.empty() && std::find(names.begin(), names.end(), a.shape) == names.end())
        throw InputError(fmt::format("--shape: no shape '{}' for {}; one of: {}", a.shape, a.instance.collective, fmt::join(names, ", ")));
    std::string text = fmt::format("{} boxes{}\n", boxes.boxes.size(), boxes.why.empty() ? "" : ": " + boxes.why);
    std::vector<std::pair<std::string, SendTable>> tables;
    std::optional<std::pair<double, SendTable>> fastest;  // -o: the fastest shape, verified before it is written
    std::string fastest_name;
    for (const compose::Shape& sh : shapes) {
        const std::string name = compose::shape_name(sh, kind);
        if (!a.shape.empty() && name != a.shape) continue;
        std::string why;
        std::optional<SendTable> t = compose::build_shape(in, boxes.boxes, sh, a.pieces, &why, deadline);
        if (deadline.passed()) throw LimitReached(fmt::format("time limit (--timeout {}) while building {} with {} pieces", a.timeout, name, a.pieces));
        if (!t) {
            if (why.find("disagree") == std::string::npos) text += fmt::format("  {:<48} does not apply: {}\n", name, why);
            continue;
        }
        const TimePrediction p = predict_time(*t, TimeOptions{a.sizes[0], std::nullopt});
        text += fmt::format("  {:>12.6g} us  {:<48} C = {:>5}, {:>8} transfers\n", p.asynchronous * 1e6, name, t->collective.chunks, t->transfers.size());
        if (!a.output.empty() && (!fastest || p.asynchronous < fastest->first)) fastest.emplace(p.asynchronous, *t), fastest_name = name;
        if (!a.dir.empty()) tables.emplace_back(a.dir + "/" + slug(name) + ".json", std::move(*t));
    }
    if (!a.output.empty()) {
        if (!fastest) {
            ctx.print(text);
            std::fprintf(stderr, "collsched: no shape was built with %u pieces: nothing written to %s\n", a.pieces, a.output.c_str());
            ctx.exit_code = 3;
            return;
        }
        if (!verify_direct(fastest->second).holds())
            throw InputError(fmt::format("-o: the fastest shape, {} with {} pieces, does not hold in the direct checker (`collsched verify` "
                                         "on its --dir file shows where): nothing written",
                                         fastest_name, a.pieces));
    }
    for (const auto& [path, t] : tables) write_witness(path, t);
    if (fastest) {
        write_witness(a.output, fastest->second);
        text += fmt::format("written: {} ({}, {} pieces, the fastest, verified by the direct checker)\n", a.output, fastest_name, a.pieces);
    }
    ctx.print(text);
}

}  // namespace

void add_compose_command(CLI::App& app, Context& ctx) {
    auto a = std::make_shared<ComposeArgs>();
    auto* cmd = app.add_subcommand(
        "compose",
        "The constructions for time (hierarchical and flat allreduce, reduce_scatter, allgather; multipath alltoall) at one size: every shape "
        "that applies with its pieces and predicted asynchronous time, fastest first, each verified by the direct checker "
        "(docs/time.md, \"Constructions for time\").\nExit code: 0 done, 2 bad input, 3 no construction applies or "
        "none was built and verified within --timeout.");
    a->instance.add_to(*cmd, "graph:schedules/machines/h100rail4x8.json", "allreduce (default), reduce_scatter, allgather or alltoall",
                       "replicate=yes");
    a->instance.collective = "allreduce";
    cmd->get_option("--collective")->required(false);
    cmd->add_option_function<std::string>(
           "--size", [a](const std::string& s) { a->sizes = parse_sizes(s); }, "The size M (bytes per datum, docs/time.md: 64K, 16M, 1G)")
        ->type_name("SIZE")
        ->required();
    cmd->add_option("-o,--output", a->output,
                    "Write the fastest table here (FILE.sched: the schedule as DSL; else the JSON table); with --pieces the fastest "
                    "shape built, verified by the direct checker before it is written")
        ->check(file_option());
    // a folder that is not there is refused before the run: -o's file is never written beside a --dir that fails
    cmd->add_option("--dir", a->dir, "Write every candidate's table into this folder (which must exist)")
        ->check(file_option())
        ->check(CLI::ExistingDirectory);
    auto* pieces = cmd->add_option("--pieces", a->pieces,
                                   "Every hierarchical shape with this many pieces (1 to 1024) on the machine's boxes, unverified, "
                                   "instead of the choice")
                       ->check(count_option(1, 1024));
    cmd->add_option_function<std::string>(
           "--shape",
           [a](const std::string& s) {
               if (s.empty()) throw InputError("--shape: expected a shape's name, not an empty one");
               a->shape = s;
           },
           "With --pieces: only the shape of this name, e.g. \"hierarchical rsag+direct\"")
        ->needs(pieces);
    cmd->add_option("--timeout", a->timeout,
                    "Seconds for the whole run: no more pieces, shapes or rings are tried past it, and what is built is "
                    "verified within it (default 0: none)")
        ->check(seconds_option(true));
    cmd->callback([&ctx, a] {
        if (a->sizes.size() != 1) throw InputError("--size: give one size");
        const Deadline deadline = Deadline::after(a->timeout);
        const SynthInstance in = a->instance.instance(RouteSpace::any, true, RunLimits{deadline, MemoryBudget::standard()});
        const CollectiveKind kind = in.collective.kind;
        if (kind != CollectiveKind::allreduce && kind != CollectiveKind::reduce_scatter && kind != CollectiveKind::allgather &&
            (kind != CollectiveKind::alltoall || a->pieces > 0))
            throw InputError(fmt::format("--collective: compose builds allreduce, reduce_scatter, allgather{}, not {}",
                                         a->pieces > 0 ? " (with --pieces)" : " and alltoall", a->instance.collective));
        if (a->pieces > 0) return run_pieces(*a, in, deadline, ctx);
        const std::vector<compose::Candidate> cs = compose::time_candidates(in, a->sizes[0], deadline.when());
        if (cs.empty()) {
            if (deadline.passed())
                throw LimitReached(fmt::format("time limit (--timeout {}): no construction was built and verified within it", a->timeout));
            std::fprintf(stderr, "collsched: no construction applies to %s on %s (model %s)\n", a->instance.collective.c_str(),
                         a->instance.topology.c_str(), to_string(in.model).c_str());
            ctx.exit_code = 3;
            return;
        }
        if (!a->dir.empty())
            for (const compose::Candidate& c : cs) write_witness(a->dir + "/" + slug(c.name) + ".json", c.table);
        if (!a->output.empty()) write_witness(a->output, cs.front().table);
        std::string text = fmt::format("{} on {} at {} bytes, asynchronous time (docs/time.md); every table verified by the direct checker:\n",
                                       a->instance.collective, a->instance.topology, a->sizes[0]);
        for (const compose::Candidate& c : cs)
            text += fmt::format("  {:>12.6g} us  {:<48} C = {:>5}, {:>4} steps, {:>8} transfers\n", c.predicted_s * 1e6, c.name,
                                c.table.collective.chunks, c.table.steps(), c.table.transfers.size());
        ctx.print(text);
    });
}

}  // namespace collsched::tools
