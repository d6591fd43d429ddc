// Hostile input, fifth generation (issue 57), the machines' categories: `collsched machine`'s fault
// options (a seeded generator over --slow-nic, --slow-gpu, --slow-link, --link-down, --nic-down,
// --one-way, --renumber and --switches routers: bad values, indices out of range, all NICs down,
// a machine cut in two, options repeated), graph files with one-way edges and "faults" under every
// command that reads a machine, `convert nccl:ring|tree|* --format nccl-graph` on every catalog
// machine kind (the file read back by verify), MSCCL++ plans with many thread blocks (the
// resident-blocks rule) and the writer's plans read back, `compare --timeout`, `compose`'s options,
// and the fourth campaign's generators (NCCL topology XML, machine options) with the new seed.
// The runner, the contract and the counts: tests/tools/test_hostile_fifth.cpp's header.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/tools/cli_run.hpp"
#include "tests/tools/hostile_case.hpp"
#include "tests/tools/hostile_probe.hpp"

using namespace collsched;
using collsched::test::slurp;
using collsched::test::source;
using namespace collsched::test::hostile;
using namespace collsched::test::hostile4;
using namespace collsched::test::hostile5;

namespace fifth_machines {

// ------------------------------------------------------------------------------------------------
// machine's fault options, a seeded generator: refused in one line, or written and read back.

struct Family {
    std::string name;
    int gpus;   ///< per box
    int nics;   ///< per box (0: none)
};

const std::vector<Family> fault_families = {{"dgx1", 8, 4}, {"dgx-h100", 8, 8}, {"dgx-b200", 8, 8}, {"ndv2", 8, 1}, {"ndv4", 8, 8},
                                            {"mi300x", 8, 8}, {"amd4", 4, 4},   {"pcie", 8, 1},     {"gb200-nvl72", 72, 72}};

std::vector<Probe> machine_fault_cases(std::size_t count, unsigned seed) {
    std::mt19937 rng(seed);
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    const std::vector<std::string> networks = {"", "--boxes 2 --network rail", "--boxes 2 --network switch", "--boxes 4 --network fat-tree:2 --boxes-per-leaf 2",
                                               "--boxes 4 --network torus:2x2"};
    const std::vector<std::string> fractions = {"0.5", "0.01", "0.999", "1", "0", "-0.5", "nan", "inf", "1e-320", "0.5x", "", ".5", "1/2"};
    std::vector<Probe> out;
    for (std::size_t i = 0; i < count; ++i) {
        const Family& f = fault_families[pick(fault_families.size())];
        const std::string net = networks[pick(f.name == "gb200-nvl72" ? 3 : networks.size())];
        const int boxes = net.empty() ? 1 : net.find("--boxes 4") != std::string::npos ? 4 : 2;
        const int gpus = f.gpus * boxes, nics = f.nics * boxes;
        auto index = [&](int n) {  // in range mostly, the edges and past them sometimes
            const std::vector<std::string> odd = {"-1", std::to_string(n), std::to_string(n + 1), "4294967296", "x", "", "1.5", "r1.0", "r1.999", " 0"};
            return pick(4) ? std::to_string(pick(static_cast<std::size_t>(std::max(n, 1)))) : odd[pick(odd.size())];
        };
        auto fraction = [&] { return pick(3) ? fractions[0] : fractions[pick(fractions.size())]; };
        std::string opts = f.name + " " + net;
        for (std::size_t k = 0, n = 1 + pick(4); k < n; ++k) {
            switch (pick(8)) {
                case 0: opts += " --slow-nic " + index(nics) + ":" + fraction(); break;
                case 1: opts += " --slow-gpu " + index(gpus) + ":" + fraction(); break;
                case 2: opts += " --slow-link " + index(gpus) + "-" + index(gpus) + ":" + fraction(); break;
                case 3: opts += " --link-down " + index(gpus) + "-" + index(gpus); break;
                case 4: opts += " --one-way " + index(gpus) + "-" + index(gpus); break;
                case 5: opts += " --nic-down " + index(nics); break;
                case 6: opts += " --renumber " + std::vector<std::string>{"0", "1", "7", "18446744073709551615", "-1", "x"}[pick(6)]; break;
                default: opts += " --switches routers"; break;
            }
        }
        if (pick(6) == 0) opts += " " + opts.substr(opts.rfind(" --"));  // the last option again
        if (pick(8) == 0) {  // every NIC down
            for (int n = 0; n < nics; ++n) opts += fmt::format(" --nic-down {}", n);
        }
        Case c;
        c.name = fmt::format("#{} machine {}", i, opts);
        c.args = "machine " + opts + " -o m.json";
        c.absent = {"m.json"};
        Probe p = either(c);
        p.c.code = 0;
        p.machine_file = "m.json";
        out.push_back(p);
    }
    return out;
}

/// Fault options whose answer is known: refused, each in one line naming the option.
std::vector<Probe> machine_fault_refusals() {
    struct Bad {
        std::string args, message;
    };
    std::string all_down = "dgx-h100 --boxes 2 --network rail";
    for (int n = 0; n < 16; ++n) all_down += fmt::format(" --nic-down {}", n);
    const std::vector<Bad> bad = {
        {all_down, "not connected"},
        {"dgx-h100 --boxes 2 --network rail --nic-down 0 --nic-down 1 --nic-down 2 --nic-down 3 --nic-down 4 --nic-down 5 --nic-down 6 --nic-down 7",
         "not connected"},
        {"dgx-h100 --slow-nic 0:0.5", "--slow-nic"},
        {"dgx-h100 --boxes 2 --network rail --slow-nic 16:0.5", "--slow-nic"},
        {"dgx-h100 --boxes 2 --network rail --slow-nic 0:0.5 --slow-nic 0:0.25", "--slow-nic"},
        {"dgx-h100 --boxes 2 --network rail --slow-gpu 16:0.5", "--slow-gpu"},
        {"dgx-h100 --boxes 2 --network rail --slow-gpu 0:1", "--slow-gpu"},
        {"dgx-h100 --boxes 2 --network rail --link-down 0-0", "--link-down"},
        {"dgx-h100 --boxes 2 --network rail --link-down 0-16", "--link-down"},
        {"dgx-h100 --boxes 2 --network rail --link-down 0-1 --link-down 0-1", "--link-down"},
        {"dgx-h100 --boxes 2 --network rail --one-way 0-1 --one-way 1-0", "--one-way"},
        {"dgx-h100 --boxes 2 --network rail --one-way 0-1 --link-down 0-1", ""},
        {"dgx-h100 --boxes 2 --network rail --link-down r1.99-0", "--link-down"},
        {"dgx-h100 --renumber -1", "--renumber"},
        {"dgx-h100 --renumber 18446744073709551616", "--renumber"},
        {"dgx1 --link-down 0-1 --link-down 0-2 --link-down 0-3 --link-down 0-4", "not connected"},
        {"amd4 --one-way 0-1 --one-way 0-2 --one-way 0-3", ""},
    };
    std::vector<Probe> out;
    for (const Bad& b : bad) out.push_back(probe(make("machine " + b.args, "machine " + b.args + " -o m.json", {}, "", 2, b.message, "", {"m.json"})));
    return out;
}

// ------------------------------------------------------------------------------------------------
// Graph files with one-way edges and "faults", under every command that reads a machine.

std::vector<Probe> one_way_cases(bool all) {
    struct Graph {
        std::string name, text;
    };
    const std::vector<Graph> graphs = {
        {"a directed ring of 4", R"({"processors": 4, "bandwidth": "25 GB/s", "alpha": "1 us", "faults": "every link one way",
 "edges": [{"from": 0, "to": 1, "one_way": true}, {"from": 1, "to": 2, "one_way": true}, {"from": 2, "to": 3, "one_way": true}, {"from": 3, "to": 0, "one_way": true}]})"},
        {"two directed rings of 3, opposite speeds", R"({"processors": 3, "faults": "",
 "edges": [{"from": 0, "to": 1, "one_way": true, "bandwidth": "1 GB/s"}, {"from": 1, "to": 2, "one_way": true}, {"from": 2, "to": 0, "one_way": true},
           {"from": 1, "to": 0, "one_way": true, "bandwidth": "100 GB/s"}, {"from": 2, "to": 1, "one_way": true}, {"from": 0, "to": 2, "one_way": true}]})"},
        {"a one-way edge beside a two-way one", R"({"processors": 2, "edges": [[0, 1, 1], {"from": 0, "to": 1, "one_way": true, "cap": 3}]})"},
        {"a router reached one way", R"({"processors": 3, "routers": 1, "edges": [{"from": 0, "to": "r1.0", "one_way": true}, ["r1.0", 1, 1], ["r1.0", 2, 1], {"from": 2, "to": 0, "one_way": true}]})"},
        {"one way only: cut", R"({"processors": 3, "edges": [{"from": 0, "to": 1, "one_way": true}, {"from": 1, "to": 2, "one_way": true}]})"},
        {"one_way false everywhere", R"({"processors": 3, "edges": [{"from": 0, "to": 1, "one_way": false}, {"from": 1, "to": 2, "one_way": false}]})"},
        {"one_way \"yes\"", R"({"processors": 2, "edges": [{"from": 0, "to": 1, "one_way": "yes"}]})"},
        {"one_way null", R"({"processors": 2, "edges": [{"from": 0, "to": 1, "one_way": null}]})"},
        {"one_way 1", R"({"processors": 2, "edges": [{"from": 0, "to": 1, "one_way": 1}]})"},
        {"one_way given twice", R"({"processors": 2, "edges": [{"from": 0, "to": 1, "one_way": true, "one_way": false}, [1, 0, 1]]})"},
        {"a self loop one way", R"({"processors": 2, "edges": [{"from": 0, "to": 0, "one_way": true}, [0, 1, 1]]})"},
        {"faults a number", R"({"processors": 2, "faults": 5, "edges": [[0, 1, 1]]})"},
        {"faults a list", R"({"processors": 2, "faults": ["link 0-1 down"], "edges": [[0, 1, 1]]})"},
        {"faults with a control byte", "{\"processors\": 2, \"faults\": \"a\\u0001b\", \"edges\": [[0, 1, 1]]}"},
        {"faults 100 KB", "{\"processors\": 2, \"faults\": \"" + std::string(100000, 'f') + "\", \"edges\": [[0, 1, 1]]}"},
    };
    const std::vector<std::pair<std::string, int>> commands = {
        {"topo graph:g.json", -1},
        {"optimize --topology graph:g.json --collective allgather --timeout 5", 3},
        {"optimize --topology graph:g.json --collective allreduce --size 1K,1M --timeout 5", 3},
        {"optimize --topology graph:g.json --collective allreduce --size 1M --executor nccl --timeout 5", 3},
        {"bandwidth --topology graph:g.json --collective allgather --timeout 5", 3},
        {"compose --topology graph:g.json --collective allreduce --size 1M --timeout 5", 3},
        {"compare nccl:ring nccl:tree --topology graph:g.json --collective allreduce --sizes 1K,1M --timeout 5", 3},
        {"tune --topology graph:g.json --sizes 1K..1M -o t.conf --timeout 5", 3},
        {"convert nccl:* --topology graph:g.json --format nccl-graph -o x.xml", -1},
    };
    std::vector<Probe> out;
    for (const Graph& g : graphs)
        for (const auto& [args, second] : commands) {
            // the default suite: what reads the file, one time objective, and NCCL's graph files; all nine under `slow`
            if (!all && !args.starts_with("topo") && !args.starts_with("convert") && args.find("--size 1K,1M") == std::string::npos) continue;
            // a file refused names its place; a machine read but without what the command needs (no ring for NCCL) says so in one line
            Case c = make(g.name + ": " + args, args, {{"g.json", g.text}}, "", 0, "", "", {"t.conf", "x.xml"});
            c.max_seconds = 5 + kSlack;
            out.push_back(either(c, args.starts_with("convert") ? "{C} verify x.xml --topology graph:g.json" : "", second));
        }
    return out;
}

// ------------------------------------------------------------------------------------------------
// convert nccl:ring|tree|* --format nccl-graph on every catalog machine kind, read back by verify.

std::vector<Probe> nccl_graph_catalog_cases(bool all) {
    std::vector<std::string> machines;
    for (const std::string f : {"dgx1", "dgx2", "dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "gb200-nvl72", "ndv2", "ndv4", "ndv5", "mi300x", "amd4",
                                 "amd8", "pcie"})
        machines.push_back("family " + f);
    for (const std::string m : {"dgx1x2", "h100rail2x8", "h100nvls2x8", "h100sharp2x8", "multibox2x8", "rail2x8", "ndv2x2", "boxfattree8x8", "nvswitch8"})
        machines.push_back("file " + m);
    if (all)
        for (const std::string m : {"h100rail4x8", "h100nvls4x8", "h100sharp4x8", "multibox4x8", "rail4x8", "ndv2x4", "h100rail8x8", "h100rail16x8"})
            machines.push_back("file " + m);
    std::vector<Probe> out;
    for (const std::string& m : machines)
        for (const std::string alg : {"ring", "tree", "*"}) {
            const bool family = m.starts_with("family ");
            if (!all && (family ? alg == "*" : alg != "*")) continue;  // the default suite: a family's rings and trees, a file's both
            const std::string name = m.substr(m.find(' ') + 1);
            const std::string spec = family ? "graph:m.json" : collsched::test::machine(name);
            Case c = make(fmt::format("nccl:{} on {}", alg, m), fmt::format("convert 'nccl:{}' --topology {} --format nccl-graph -o g.xml", alg, spec), {},
                          family ? "{C} machine " + name + " -o m.json" : "", 0, "", "", {"g.xml"});
            // NCCL's own rings and trees are written for every machine NCCL runs on; what has none (no ring in a box) is refused, nothing written
            out.push_back(either(c, "{C} verify g.xml --topology " + spec));
        }
    return out;
}

// ------------------------------------------------------------------------------------------------
// MSCCL++ plans with many thread blocks: past the blocks a GPU keeps resident, a plan whose blocks
// wait on each other is a finding (exit 1), never a crash or a hang; the writer's plans read back.

std::vector<Probe> mscclpp_block_cases(bool all) {
    const nlohmann::ordered_json base = nlohmann::ordered_json::parse(slurp(source("tests/data/mscclpp/ring_allgather_8.json")));
    std::vector<Probe> out;
    for (int extra : {0, 106, 107, 108, 215, 1000, 20000})
        for (int threads : {1024, 512, 96, 1, 0, 1025, 2048, -1}) {
            if (!all && ((extra != 0 && extra != 107 && extra != 108 && extra != 1000) || threads == 512 || threads == 1 || threads == 2048)) continue;
            nlohmann::ordered_json j = base;
            j["num_threads_per_block"] = threads;
            for (int t = 0; t < extra; ++t) {
                nlohmann::ordered_json tb = j["gpus"][0]["threadblocks"][0];
                tb["id"] = t + 1;
                tb["ops"] = nlohmann::ordered_json::array({{{"name", "nop"}}});
                j["gpus"][0]["threadblocks"].push_back(tb);
            }
            Case c = make(fmt::format("GPU 0 with {} more thread blocks of {} threads", extra, threads), "verify p.json", {{"p.json", j.dump(1)}}, "", 0, "",
                          "p.json");
            c.max_seconds = 20;
            out.push_back(either(c, "", 1));
        }
    // the writer's plans: written (then read back by verify), or refused in one line with nothing written
    for (const std::string table : {"tests/data/ring8_allgather.json", "tests/data/ebft16_alltoall.json", "tests/data/cbft8_flood_allgather.json"})
        for (const std::string opt : {"", "--instances 2", "--instances 64", "--instances 0", "--instances 100000", "--proto LL", "--proto ll128"}) {
            if (!all && table != "tests/data/ring8_allgather.json") continue;
            Case c = make("convert " + table + " --format mscclpp " + opt, "convert " + source(table) + " --format mscclpp " + opt + " -o p.json", {}, "", 0, "",
                          "", {"p.json"});
            c.max_seconds = 60;
            out.push_back(either(c, "{C} verify p.json"));
        }
    return out;
}

// ------------------------------------------------------------------------------------------------
// compare --timeout: NCCL's tables, the checks and the predictions stop at it (exit 3), or the
// answer comes first (exit 0); within the limit plus the slack. tune and calibrate the same.

std::vector<Probe> compare_timeout_cases(bool slow) {
    std::vector<Probe> out;
    const std::vector<std::string> machines = slow ? std::vector<std::string>{"h100rail16x8", "h100nvls16x8", "h100sharp8x8", "multibox16x8"}
                                                   : std::vector<std::string>{"h100rail8x8", "h100nvls4x8"};
    for (const std::string& m : machines)
        for (const std::string t : {"0.05", "0.5", "1.5"})
            for (const std::string what : {"nccl:ring nccl:tree --collective allreduce --sizes 1K..16G", "nccl:ring --collective allgather --sizes 1K..1G:4",
                                            "nccl:* --collective reduce_scatter --sizes 1M --executor nccl"}) {
                Case c = make(fmt::format("compare {} on {} --timeout {}", what, m, t),
                              fmt::format("compare {} --topology {} --timeout {}", what, collsched::test::machine(m), t), {}, "", 3, "");
                c.or_code = 0;
                c.max_seconds = std::stod(t) + kSlack;
                out.push_back(probe(c));
            }
    // tune and calibrate hold theirs too: NCCL's algorithms timed on 128 GPUs (NVLS among them), a fit on a whole table
    const std::vector<std::string> others = slow ? std::vector<std::string>{"h100nvls16x8", "h100rail16x8"} : std::vector<std::string>{"h100nvls8x8"};
    for (const std::string& m : others)
        for (const std::string t : {"0.5", "1.5"}) {
            Case c = make(fmt::format("tune on {} --timeout {}", m, t), fmt::format("tune --topology {} --timeout {} -o t.conf", collsched::test::machine(m), t),
                          {}, "", 3, "", "", {"t.conf"});
            c.or_code = 0;
            c.max_seconds = std::stod(t) + kSlack;
            out.push_back(probe(c));
        }
    for (const std::string t : {"0.5", "1.5"}) {
        Case c = make("calibrate --measurements, ND H100 v5, --timeout " + t,
                      "calibrate --measurements " + source("runtime/executor/calibration/measurements.csv") + " --machine 'ND H100 v5' --timeout " + t, {}, "",
                      3, "");
        c.or_code = 0;
        c.max_seconds = std::stod(t) + kSlack;
        out.push_back(probe(c));
    }
    for (const std::string t : {"-1", "nan", "inf", "1e400", "0x10", "''", "10000001"})
        out.push_back(probe(make("compare --timeout " + t, "compare nccl:ring --topology ring:4 --collective allreduce --timeout " + t, {}, "", 2, "--timeout")));
    return out;
}

// ------------------------------------------------------------------------------------------------
// compose's options.

std::vector<Probe> compose_cases() {
    const std::string m = collsched::test::machine("h100rail2x8");
    struct Bad {
        std::string args, message;
    };
    const std::vector<Bad> bad = {
        {"--pieces 0", "--pieces"},         {"--pieces 1025", "--pieces"},   {"--pieces -1", "--pieces"},
        {"--pieces 1.5", "--pieces"},       {"--shape 'hierarchical rsag'", "--shape"}, {"--pieces 4 --shape ''", "--shape"},
        {"--pieces 4 --shape nonsense", "--shape"}, {"--collective broadcast", "broadcast"}, {"--collective gossip", ""},
        {"--timeout -1", "--timeout"},      {"--timeout nan", "--timeout"}, {"--timeout 1e400", "--timeout"},
        {"-o ''", ""},                      {"--dir nodir", "nodir"}, {"--dir /dev/null", "/dev/null"},       {"--model ports=none", ""},
        {"--model replicate", ""},          {"--size 1.5", "size"},       {"--size 0", "size"},
        {"--size 16E", ""},                 {"--size 1K,1M", ""},           {"--size ''", "size"},
    };
    std::vector<Probe> out;
    for (const Bad& b : bad) {
        const bool sized = b.args.find("--size") != std::string::npos;
        out.push_back(probe(make("compose " + b.args, "compose --topology " + m + (sized ? "" : " --size 1M") + " " + b.args + " -o c.json", {}, "", 2,
                                 b.message, "", {"c.json"})));
    }
    // accepted: the table written is verified by the checker; a shape that does not apply is exit 3 with nothing written
    for (const std::string coll : {"allreduce", "reduce_scatter", "allgather", "alltoall"})
        for (const std::string& opt : {std::string(""), std::string("--pieces 1"), std::string("--pieces 7"), std::string("--pieces 4 --shape 'hierarchical rsag+direct'"),
                                       std::string("--model replicate=yes"), std::string("--size 1 --timeout 5"), std::string("--size 3G --timeout 5")}) {
            const std::string size = opt.find("--size") != std::string::npos ? "" : " --size 1M";
            Case c = make("compose " + coll + " " + opt, "compose --topology " + m + " --collective " + coll + size + " " + opt + " --timeout 20 -o c.json", {},
                          "", 0, "", "", {"c.json"});
            c.max_seconds = 20 + kSlack;
            out.push_back(either(c, "{C} verify c.json", 3));
        }
    return out;
}

}  // namespace fifth_machines


TEST_CASE("hostile fifth: machine fault options, a seeded generator (written and read back, or refused in one line)") {
    run_probes("machine faults", fifth_machines::machine_fault_cases(40, kSeed5 + 3));
}

TEST_CASE("hostile fifth: machine fault options that are refused") { run_probes("machine fault refusals", fifth_machines::machine_fault_refusals()); }

TEST_CASE("hostile fifth: graph files with one-way edges and faults under every command") { run_probes("one-way graphs", fifth_machines::one_way_cases(false)); }

TEST_CASE("hostile fifth: convert nccl:ring, nccl:tree and nccl:* on every catalog machine kind, read back") {
    run_probes("nccl graph catalog", fifth_machines::nccl_graph_catalog_cases(false));
}

TEST_CASE("hostile fifth: MSCCL++ plans with many thread blocks, and the writer's plans read back") { run_probes("mscclpp blocks", fifth_machines::mscclpp_block_cases(false)); }

TEST_CASE("hostile fifth: compare --timeout, tune --timeout, calibrate --timeout") { run_probes("timeouts", fifth_machines::compare_timeout_cases(false)); }

TEST_CASE("hostile fifth: compose's options") { run_probes("compose options", fifth_machines::compose_cases()); }

TEST_CASE("hostile fifth: the fourth campaign's generators with the new seed") {
    run_probes("nccl xml mutants (seed 5)", nccl_mutant_cases(30, kSeed5 + 4));
    run_probes("machine options (seed 5)", machine_option_cases(20, kSeed5 + 5));
}

TEST_CASE("hostile fifth: slow: the machines' generators at scale, every catalog machine, compare's limit on 128 GPUs" *
          doctest::test_suite("hostile_fifth_slow") * doctest::skip()) {
    run_probes("machine faults (400, seed + 20)", fifth_machines::machine_fault_cases(400, kSeed5 + 20));
    run_probes("nccl graph catalog (all)", fifth_machines::nccl_graph_catalog_cases(true));
    run_probes("one-way graphs (every command)", fifth_machines::one_way_cases(true));
    run_probes("mscclpp blocks (all)", fifth_machines::mscclpp_block_cases(true));
    run_probes("compare timeout (128 GPUs)", fifth_machines::compare_timeout_cases(true));
    run_probes("nccl xml mutants (400, seed + 21)", nccl_mutant_cases(400, kSeed5 + 21));
    run_probes("machine options (200, seed + 22)", machine_option_cases(200, kSeed5 + 22));
}
