// `collsched bandwidth`: the two things that scale to clusters (issue 27): the exact cut bound on
// rounds per chunk by max flow, with its cut, and the tree packing that meets it where it can,
// verified by the direct checker (docs/synthesis.md, "The bandwidth bound by flows"). The run and
// its report are verifier/time/bandwidth_report.hpp's; here the options, the witness file, the print.
#include "tools/commands.hpp"
#include "cli/options.hpp"
#include "cli/size_options.hpp"
#include "cli/synth_common.hpp"
#include "verifier/time/bandwidth_report.hpp"

namespace collsched::tools {

namespace {

struct BandwidthArgs {
    InstanceArgs instance;
    std::string output;
    std::uint32_t max_chunks = 256;
    bool no_packing = false;
    double timeout = 60;
    bool json = false;
    std::vector<double> sizes;  ///< --size: the proved lower bound on time (and the packing's time) at each
    std::optional<LinkSpeed> link;
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
    args->instance.add_to(*cmd, "graph:schedules/machines/rail16x8.json",
                          "allgather, broadcast:R (bound and schedule); reduce_scatter (bound, and the allgather's schedule "
                          "reversed); scatter:R, gather:R, multicast:R:a,b, reduce:R (bound only)");
    cmd->add_option("--max-chunks", args->max_chunks, "Largest C the packing tries (C = q, 2q, 3q, 4q for a bound p/q; default 256)")
        ->check(CLI::Range(1u, 65536u));
    cmd->add_flag("--no-packing", args->no_packing, "Only the bound");
    cmd->add_option("--timeout", args->timeout,
                    "Seconds for the whole run: the bound's search stops with the best cut so far (a proved bound, perhaps not the "
                    "largest), the packing with its best schedule so far (default 60, 0 = none)")
        ->check(seconds_option(true));
    cmd->add_option("-o,--output", args->output, "Write the packed schedule (.sched, else a JSON table)")->check(file_option());
    add_size_option(cmd, args->sizes, "--size,--sizes",
                    "Also the proved lower bound on time at each size M (NCCL's, docs/time.md \"Sizes\"; every collective with one, "
                    "allreduce and alltoall included) and the packed schedule's predicted time and gap there");
    add_link_option(cmd, args->link);
    cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
    cmd->callback([&ctx, args] {
        // The budget is read first (COLLSCHED_MAX_MEMORY_MB=abc or 0 is refused before any work), and
        // both limits hold while a graph file is read.
        const RunLimits limits{Deadline::after(args->timeout), MemoryBudget::standard()};
        const BandwidthRequest rq{limits.deadline, args->instance.instance(RouteSpace::any, true, limits), args->max_chunks,
                                  args->no_packing, args->json, args->sizes, args->link, !args->output.empty()};
        BandwidthReport r = bandwidth_report(rq);
        if (r.witness) write_witness(args->output, *r.witness, r.witness_comment);
        ctx.print((args->json ? std::string() : args->instance.said) + r.text);
        ctx.exit_code = r.exit_code;
    });
}

}  // namespace collsched::tools
