// `collsched bandwidth`: the two things that scale to clusters (issue 27): the exact cut bound on
// rounds per chunk by max flow, with its cut, and the tree packing that meets it where it can,
// verified by the direct checker (docs/synthesis.md, "The bandwidth bound by flows").
#include <chrono>
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/table/duality.hpp"
#include "support/error.hpp"
#include "support/assert.hpp"
#include "verifier/check/direct.hpp"
#include "tools/commands.hpp"
#include "tools/options.hpp"
#include "tools/synth_common.hpp"
#include "verifier/synth/bandwidth_bound.hpp"
#include "verifier/synth/tree_packing.hpp"

namespace collsched::tools {

namespace {

/// "1+2+2+1" (the rounds of each step), or "one per step".
std::string rounds_text(const SendTable& t) {
    if (t.step_rounds.empty()) return "one per step";
    std::string out;
    for (Step s = 1; s <= t.steps(); ++s) out += (s > 1 ? "+" : "") + std::to_string(t.rounds(s));
    return out;
}

struct BandwidthArgs {
    std::string topology, collective, model, output;
    std::uint32_t max_chunks = 256;
    bool no_packing = false;
    double timeout = 60;
    bool json = false;
};

}  // namespace

void add_bandwidth_command(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<BandwidthArgs>();
    auto* cmd = app.add_subcommand(
        "bandwidth",
        "The least rounds per chunk (R/C) any schedule can reach, proved by a cut found with max flows (over every set of "
        "nodes, routers and link groups included), and a schedule of spanning out-trees packed into steps that meets it "
        "where it can (verified by the direct checker). Scales to thousands of GPUs.\nExit code: 0 the schedule meets "
        "the bound (proved bandwidth-optimal), 3 a schedule above the bound or none, 2 bad input.");
    cmd->add_option("--topology", args->topology, "Topology spec, e.g. graph:schedules/machines/rail16x8.json")->required();
    cmd->add_option("--collective", args->collective, "allgather, broadcast:R (bound and schedule); reduce_scatter (bound, and the allgather's schedule "
                                                      "reversed); scatter:R, gather:R, multicast:R:a,b, reduce:R (bound only)")
        ->required();
    cmd->add_option("--model", args->model, "key=value pairs on top of the family's default, e.g. ports=single");
    cmd->add_option("--max-chunks", args->max_chunks, "Largest C the packing tries (C = q, 2q, 3q, 4q for a bound p/q; default 256)")
        ->check(CLI::Range(1u, 65536u));
    cmd->add_flag("--no-packing", args->no_packing, "Only the bound");
    cmd->add_option("--timeout", args->timeout, "Seconds for the packing (the best schedule so far is kept; default 60, 0 = none)")
        ->check(seconds_option(true));
    cmd->add_option("-o,--output", args->output, "Write the packed schedule (.sched, else a JSON table)");
    cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
    cmd->callback([&ctx, args] {
        using Clock = std::chrono::steady_clock;
        auto topo = Topology::parse(args->topology);
        SynthInstance in{topo, apply_model_options(topo->default_model(), args->model), Collective::parse(args->collective, *topo),
                         RouteSpace::any};
        if (in.model.timing != Timing::hop) throw InputError("bandwidth: the cut bound is for hop timing (rounds multiply capacities)");
        const auto t0 = Clock::now();
        std::optional<BandwidthBound> bound = flow_bandwidth_bound(in);
        const double bound_s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (!bound)
            throw InputError(fmt::format("bandwidth: no flow bound for {}: the cut bound by max flow covers allgather, broadcast, "
                                         "multicast, scatter and their reversals (reduce_scatter, reduce, gather); for {} use "
                                         "pareto's enumerated cuts",
                                         in.collective.to_string(), in.collective.to_string()));
        // The drain rule (tree_packing.hpp, least_rounds): a cut with two or more processors outside
        // is attained at no C.
        const std::uint32_t outside = in.collective.kind == CollectiveKind::allgather ? cut_outside(*bound, topo->processors()) : 1;
        const std::string unreachable =
            outside >= 2 ? fmt::format("not attained at any C: the cut leaves {} processors outside, so a chunk first crossing it in the last "
                                       "step cannot reach them all; R >= {} C + {}/{} (the drain rule, docs/synthesis.md)",
                                       outside, bound->rounds_per_chunk.text(), outside - 1, outside)
                         : std::string();
        std::optional<PackedSchedule> packed;
        // Reduce-scatter: the allgather's packing reversed in time and direction
        // (compiler/table/duality.hpp), on networks where every channel has a reverse of its capacity.
        const bool by_reversal = in.collective.kind == CollectiveKind::reduce_scatter && duality_problem(*topo, in.model).empty();
        SynthInstance build = in;
        if (by_reversal) build.collective = Collective::parse("allgather", *topo);
        std::string why = args->no_packing ? std::string("not asked (--no-packing)") : packing_problem(build);
        const auto t1 = Clock::now();
        if (why.empty()) {
            PackingOptions po;
            po.target = bound->rounds_per_chunk;
            po.outside = outside;
            if (by_reversal)  // the allgather's own cut decides its drain
                if (auto ab = flow_bandwidth_bound(build)) po.outside = cut_outside(*ab, topo->processors());
            po.chunks = chunks_for(bound->rounds_per_chunk, args->max_chunks, po.outside, topo->processors());
            po.seconds = args->timeout;
            packed = pack_trees(build, po);
            if (!packed) why = "the packing stalled or ran out of time";
            if (packed && by_reversal) {
                packed->table = reduce_scatter_from_allgather(packed->table);
                packed->steps = packed->table.steps();
                packed->rounds = static_cast<Step>(packed->table.total_rounds());
                const VerifyReport r = verify_direct(packed->table);
                COLLSCHED_ASSERT_MSG(r.holds(), "the reversed packing does not verify as a reduce-scatter");
                packed->method = "the reversal (time and direction) of the allgather's " + packed->method;
                packed->least_rounds = least_rounds(bound->rounds_per_chunk, packed->chunks, 1);  // the reversed cut: no drain argued
            }
        }
        const double pack_s = std::chrono::duration<double>(Clock::now() - t1).count();
        const bool optimal = packed && packed->rounds_per_chunk() == bound->rounds_per_chunk;
        if (packed && !args->output.empty()) {
            write_witness(args->output, packed->table,
                          fmt::format("{} on {}: a tree packing, {} steps, {} rounds, {} chunks, R/C = {}, verified by the direct checker.\n"
                                      "Bandwidth bound: R/C >= {} ({}).{}\nWritten by collsched bandwidth (docs/synthesis.md).",
                                      in.collective.to_string(), topo->spec(), packed->steps, packed->rounds, packed->chunks, packed->rounds_per_chunk().text(),
                                      bound->rounds_per_chunk.text(), bound->detail, optimal ? "\nProved bandwidth-optimal: R/C meets the bound." : ""));
        }
        const CutCertificate& cert = *bound->certificate;
        if (args->json) {
            nlohmann::ordered_json j;
            j["topology"] = topo->spec();
            j["collective"] = in.collective.to_string();
            j["model"] = to_string(in.model);
            j["processors"] = topo->processors();
            j["bound"] = {{"rounds_per_chunk", bound->rounds_per_chunk.text()},
                          {"value", bound->rounds_per_chunk.value()},
                          {"detail", bound->detail},
                          {"certificate",
                           {{"inside", cert.inside},
                            {"routers_inside", cert.routers},
                            {"crossing", cert.crossing},
                            {"demand", cert.demand},
                            {"capacity", cert.capacity},
                            {"reversed", cert.reversed},
                            {"exact", cert.exact},
                            {"relaxations", cert.relaxations},
                            {"max_flows", cert.flows},
                            {"sinks", cert.sinks}}},
                          {"attained", unreachable.empty() ? nlohmann::json(nullptr) : nlohmann::json(false)},
                          {"unattained_why", unreachable},
                          {"seconds", bound_s}};
            if (packed)
                j["schedule"] = {{"steps", packed->steps},          {"rounds", packed->rounds},
                                 {"chunks", packed->chunks},        {"rounds_per_chunk", packed->rounds_per_chunk().text()},
                                 {"depth", packed->depth},          {"transfers", packed->table.transfers.size()},
                                 {"bandwidth_optimal", optimal},    {"verified", true},
                                 {"least_rounds_for_chunks", packed->least_rounds},
                                 {"optimal_for_chunks", packed->rounds == packed->least_rounds},
                                 {"method", packed->method},
                                 {"seconds", pack_s}};
            else
                j["schedule"] = {{"none", why}};
            std::string out = j.dump() + "\n";
            ctx.print(out);
        } else {
            std::string s = fmt::format("bandwidth {} on {} ({}), {} processors\n", in.collective.to_string(), topo->spec(), to_string(in.model),
                                        topo->processors());
            s += fmt::format("bound: R/C >= {} ({:.3f} s)\n  {}\n", bound->rounds_per_chunk.text(), bound_s, bound->detail);
            s += fmt::format("  holds for any route and for routers under replicate=no and yes; {}\n",
                             cert.exact ? "exact: the largest cut ratio of the model's capacity network"
                                        : "a lower bound on a relaxed network (see above)");
            if (!unreachable.empty()) s += fmt::format("  {}\n", unreachable);
            if (packed) {
                s += fmt::format("schedule: {} steps, {} rounds ({}), {} chunks, R/C = {}, trees at most {} deep, {} transfers, verified ({:.3f} s)\n"
                                 "  {}\n",
                                 packed->steps, packed->rounds, rounds_text(packed->table), packed->chunks, packed->rounds_per_chunk().text(), packed->depth,
                                 packed->table.transfers.size(),
                                 pack_s,
                                 optimal ? "proved bandwidth-optimal: R/C meets the bound (the cut above)"
                                 : packed->rounds == packed->least_rounds
                                     ? fmt::format("above the bound by {:.2f}%, proved optimal for {} chunks: R >= {} by the cut above",
                                                   100.0 * (packed->rounds_per_chunk().value() / bound->rounds_per_chunk.value() - 1.0),
                                                   packed->chunks, packed->least_rounds)
                                     : fmt::format("above the bound by {:.2f}% (for {} chunks the cut says R >= {})",
                                                   100.0 * (packed->rounds_per_chunk().value() / bound->rounds_per_chunk.value() - 1.0),
                                                   packed->chunks, packed->least_rounds));
                s += fmt::format("  built by {}\n", packed->method);
            } else {
                s += fmt::format("schedule: none ({})\n", why);
            }
            ctx.print(s);
        }
        ctx.exit_code = optimal ? 0 : 3;
    });
}

}  // namespace collsched::tools
