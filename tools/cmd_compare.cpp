// `collsched compare A.sched B.json ...`: every schedule's predicted time at every size, the
// winner per size, the crossover sizes and a plot (tools/compare.hpp, docs/time.md).
#include <cstdio>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/text.hpp"
#include "support/units.hpp"
#include "tools/bandwidth.hpp"
#include "tools/commands.hpp"
#include "tools/compare.hpp"
#include "tools/input.hpp"
#include "tools/options.hpp"
#include "tools/output.hpp"
#include "verifier/check/direct.hpp"

namespace collsched::tools {

namespace {

struct CompareArgs {
    std::vector<std::string> inputs;
    std::vector<std::string> defines;
    MscclImportOptions msccl;
    std::vector<double> sizes;
    std::optional<LinkSpeed> link;
    std::string time = "async";
    std::string baseline;
    std::string plot = "time";
    std::string svg;
    bool json = false;
};

std::string stem(const std::string& path) {
    std::string s = std::filesystem::path(path).filename().string();
    for (const char* ext : {".sched", ".json", ".csv", ".xml"})
        if (s.ends_with(ext)) return s.substr(0, s.size() - std::string_view(ext).size());
    return s;
}

/// The spec with a graph file's path normalized (`a/b/../m.json` is `a/m.json`), so one machine
/// reached from two schedule folders is one machine.
std::string machine(const Topology& t) {
    const std::string& s = t.spec();
    if (!s.starts_with("graph:")) return s;
    return "graph:" + std::filesystem::path(s.substr(6)).lexically_normal().string();
}

/// One run of `compare`, one method per stage, called in order by run(): the inputs (loaded and
/// verified), the baseline, the comparison, the plot, the report.
class CompareRun {
public:
    CompareRun(const CompareArgs& args, Context& ctx) : args_(args), ctx_(ctx) {}

    void run() {
        load();
        if (!all_hold()) return;
        const std::size_t base = baseline();
        const TimeKind kind = args_.time == "sync" ? TimeKind::synchronous : TimeKind::asynchronous;
        const Comparison cmp = compare(cs_, args_.sizes, args_.link, kind, base);
        const std::string kind_name = kind == TimeKind::asynchronous ? "asynchronous" : "synchronous";
        if (!args_.svg.empty()) plot(cmp, kind_name);
        ctx_.print(args_.json ? json_report(cmp, kind, kind_name, base) : text_report(cmp, kind_name, base));
        ctx_.exit_code = 0;
    }

private:
    void load() {
        std::map<std::string, int> seen;
        for (const std::string& in : args_.inputs) {
            tables_.push_back(load_input(in, args_.defines, false, false, args_.msccl));
            std::string name = stem(in);
            if (int k = seen[name]++; k > 0) name += fmt::format("#{}", k + 1);
            cs_.push_back({name, in, nullptr});
        }
        for (std::size_t i = 0; i < cs_.size(); ++i) cs_[i].table = &tables_[i];
    }

    /// A schedule that breaks its model has no meaningful time: exit 1 naming them.
    bool all_hold() {
        std::string broken;
        for (const Contender& c : cs_) {
            VerifyReport r = verify_direct(*c.table, VerifyOptions{});
            if (r.verdict() != "holds") broken += fmt::format("{}{}: {}", broken.empty() ? "" : "; ", c.file, r.verdict());
        }
        if (broken.empty()) return true;
        std::fprintf(stderr, "collsched: error: only tables that hold are compared: %s (collsched verify says why)\n", broken.c_str());
        ctx_.exit_code = 1;
        return false;
    }

    std::size_t baseline() const {
        if (args_.baseline.empty()) return 0;
        auto it = std::find_if(cs_.begin(), cs_.end(), [&](const Contender& c) { return c.name == args_.baseline; });
        if (it == cs_.end()) {
            std::string names;
            for (const Contender& c : cs_) names += (names.empty() ? "" : ", ") + c.name;
            throw InputError(fmt::format("--baseline {}: no input of that name (names: {})", args_.baseline, names));
        }
        return static_cast<std::size_t>(it - cs_.begin());
    }

    void plot(const Comparison& cmp, const std::string& kind_name) const {
        const SendTable& first = tables_.front();
        const std::string title =
            fmt::format("{} on {}: {}", first.collective.to_string(), std::filesystem::path(machine(*first.topology)).filename().string(),
                        args_.plot == "algbw" ? "algorithm bandwidth, " + kind_name : kind_name + " time");
        const std::string svg = comparison_svg(cs_, cmp, args_.plot == "algbw" ? PlotKind::algbw : PlotKind::time, title);
        write_output(args_.svg, [&](const Flush& flush, fmt::memory_buffer& buf) {
            buf.append(svg.data(), svg.data() + svg.size());
            flush(buf);
        });
    }

    std::string json_report(const Comparison& cmp, TimeKind kind, const std::string& kind_name, std::size_t baseline) const {
        const SendTable& first = tables_.front();
        nlohmann::ordered_json j;
        j["collective"] = first.collective.to_string();
        j["topology"] = first.topology->spec();
        j["time"] = kind_name;
        j["link_speeds"] = args_.link ? "--link" : first.topology->has_speeds() ? "graph file" : "defaults";
        j["baseline"] = cs_[baseline].name;
        auto& sj = j["schedules"] = nlohmann::ordered_json::array();
        for (std::size_t c = 0; c < cs_.size(); ++c) {
            const BandwidthCost bc = bandwidth_cost(*cs_[c].table, cs_[c].table->steps());
            nlohmann::ordered_json x{{"name", cs_[c].name}, {"file", cs_[c].file}, {"topology", cs_[c].table->topology->spec()},
                                     {"steps", bc.steps}, {"rounds", bc.rounds}, {"chunks", bc.chunks}};
            x[kind == TimeKind::asynchronous ? "asynchronous_s" : "synchronous_s"] = cmp.seconds[c];
            x[kind == TimeKind::asynchronous ? "synchronous_s" : "asynchronous_s"] = cmp.other[c];
            sj.push_back(std::move(x));
        }
        j["sizes"] = cmp.sizes;
        auto& wj = j["winners"] = nlohmann::ordered_json::array();
        for (std::size_t i = 0; i < cmp.sizes.size(); ++i)
            wj.push_back({{"size", cmp.sizes[i]},
                          {"winner", cs_[cmp.winner[i]].name},
                          {"seconds", cmp.seconds[cmp.winner[i]][i]},
                          {"speedup_over_baseline", cmp.seconds[baseline][i] / cmp.seconds[cmp.winner[i]][i]}});
        auto& xj = j["crossovers"] = nlohmann::ordered_json::array();
        for (const Crossover& x : cmp.crossovers) xj.push_back({{"size", x.size}, {"below", cs_[x.from].name}, {"above", cs_[x.to].name}});
        if (!args_.svg.empty()) j["svg"] = args_.svg;
        return j.dump() + "\n";
    }

    std::string text_report(const Comparison& cmp, const std::string& kind_name, std::size_t baseline) const {
        const SendTable& first = tables_.front();
        std::string out = fmt::format("compare {} on {}, {} time (docs/time.md)\n", first.collective.to_string(), machine(*first.topology), kind_name);
        out += speeds_text(*first.topology, args_.link) + "\n";
        for (std::size_t c = 0; c < cs_.size(); ++c) {
            const BandwidthCost bc = bandwidth_cost(*cs_[c].table, cs_[c].table->steps());
            out += fmt::format("  {:<2} {}: {} ({}, {}, {}{}){}\n", c + 1, cs_[c].name, cs_[c].file, support::count_of(bc.steps, "step"),
                               support::count_of(bc.rounds, "round"), support::count_of(bc.chunks, "chunk"),
                               machine(*cs_[c].table->topology) == machine(*first.topology) ? "" : ", on " + cs_[c].table->topology->spec(),
                               c == baseline ? " [baseline]" : "");
        }
        out += fmt::format("  {:<10}", "size");
        for (std::size_t c = 0; c < cs_.size(); ++c) out += fmt::format("  {:>10}", fmt::format("({})", c + 1));
        out += fmt::format("  {:<20}  {}\n", "winner", fmt::format("speed-up over ({})", baseline + 1));
        for (std::size_t i = 0; i < cmp.sizes.size(); ++i) {
            out += fmt::format("  {:<10}", support::format_bytes(cmp.sizes[i]));
            for (std::size_t c = 0; c < cs_.size(); ++c) out += fmt::format("  {:>10}", support::format_seconds(cmp.seconds[c][i]));
            const std::size_t w = cmp.winner[i];
            out += fmt::format("  {:<20}  {:.2f}x\n", fmt::format("({}) {}", w + 1, cs_[w].name), cmp.seconds[baseline][i] / cmp.seconds[w][i]);
        }
        if (cmp.crossovers.empty()) out += "crossovers: none (one schedule wins at every size)\n";
        for (const Crossover& x : cmp.crossovers)
            out += fmt::format("crossover at {}: ({}) {} is faster below, ({}) {} above\n", support::format_bytes(x.size), x.from + 1,
                               cs_[x.from].name, x.to + 1, cs_[x.to].name);
        if (!args_.svg.empty()) out += fmt::format("plot: {}\n", args_.svg);
        return out;
    }

    const CompareArgs& args_;
    Context& ctx_;
    std::vector<SendTable> tables_;  ///< the inputs, in order (the contenders point into it)
    std::vector<Contender> cs_;
};

}  // namespace

void add_compare_command(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<CompareArgs>();
    auto* cmd = app.add_subcommand(
        "compare",
        "Which schedule wins at which size: predicts every schedule's time on its topology's link speeds at every size of a grid "
        "(asynchronous by default: executors without barriers; docs/time.md), names the winner per size, finds the crossover "
        "sizes between neighbouring grid points by bisection, gives the speed-up of the winner over a baseline, and draws the "
        "times (or algorithm bandwidths) against size on log axes as SVG. Every input is verified first by the direct checker.\n"
        "Exit code: 0 done, 1 an input does not hold (named), 2 bad input (schedules of different collectives or sizes of "
        "machine, bad units).");
    cmd->add_option("FILES", args->inputs, "Schedules (.sched), tables (.json, .csv) or MSCCL-IR programs to compare")->required();
    cmd->add_option("-D", args->defines, "Override a schedule parameter in every .sched input: -D n=16 (repeatable)");
    cmd->add_option("--topology", args->msccl.topology, "MSCCL-IR inputs: the topology the program runs on (default complete:P)");
    args->sizes = parse_sizes("1K..1G");
    add_size_option(cmd, args->sizes, "--sizes",
                    "Buffer sizes M per datum: 1K..1G (doubling, the default), 1K..1G:4, or a list 1K,1M,1G (K, M, G are powers "
                    "of 1024; kB, MB, GB of 1000)");
    add_link_option(cmd, args->link);
    cmd->add_option("--time", args->time, "Which predicted time decides: async (default; executors without barriers) or sync (a "
                                          "barrier after every step)")
        ->check(CLI::IsMember({"async", "sync"}));
    cmd->add_option("--baseline", args->baseline, "The schedule speed-ups are measured against, by name (the file's stem; default "
                                                  "the first input)");
    cmd->add_option("-o,--svg", args->svg, "Write the plot as SVG to this file")->check(file_option());
    cmd->add_option("--plot", args->plot, "What the plot shows against size: time (default) or algbw (nccl-tests' algorithm "
                                          "bandwidth: P*M / time for allgather and alltoall, M / time otherwise)")
        ->check(CLI::IsMember({"time", "algbw"}));
    cmd->add_flag("--json", args->json,
                  "Print one JSON object: schedules, sizes, times (both kinds) per schedule, winners, crossovers, speed-ups");
    cmd->callback([&ctx, args] { CompareRun(*args, ctx).run(); });
}

}  // namespace collsched::tools
