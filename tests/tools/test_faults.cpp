// Machines with faults (docs/topologies.md, "Faults"): one-way edges in graph files, the fault
// options of `collsched machine`, the faults in every report, every command on every machine the
// tool writes with its defaults, and every search within --timeout whatever the processors' order.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_run.hpp"

using collsched::test::run;
using collsched::test::run_shell;
using collsched::test::Scratch;
using collsched::test::slurp;

namespace {

/// `machine ARGS -o FILE` in `dir`; the file's path (REQUIREs exit 0).
std::string faults_machine(const Scratch& dir, const std::string& name, const std::string& args) {
    const std::string file = dir.file(name + ".json");
    auto r = run("machine " + args + " -o " + file);
    INFO("machine ", args, "\n", r.err);
    REQUIRE(r.code == 0);
    return file;
}

/// The channels `topo` prints for a graph file, as "from>to" strings.
std::vector<std::string> faults_channels(const std::string& file) {
    auto r = run("topo graph:" + file);
    REQUIRE(r.code == 0);
    std::vector<std::string> out;
    const auto j = nlohmann::json::parse(r.out);
    for (const auto& c : j["channels"]) out.push_back(c["from"].get<std::string>() + ">" + c["to"].get<std::string>());
    return out;
}

bool faults_has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

/// Runs a command under a watchdog (killed at `timeout` + 30 s) and returns it with its wall time.
std::pair<collsched::test::Run, double> timed_run(const std::string& args, double timeout) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = run_shell(fmt::format("timeout -s KILL {} {} {}", timeout + 30, COLLSCHED_BINARY, args));
    return {r, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

/// Every command with its defaults on the machine `machine ARGS` writes: exit 0 or 3, never 2.
void every_command(const Scratch& dir, const std::string& args) {
    const std::string file = faults_machine(dir, "every", args), t = " --topology graph:" + file;
    const std::string sched = dir.file("winner.json");
    std::remove(sched.c_str());
    const std::vector<std::string> commands = {
        "optimize --collective allgather --timeout 2" + t,
        "pareto --collective allgather --timeout 2 --max-chunks 2" + t,
        "bandwidth --collective allgather --timeout 2" + t,
        "optimize --collective allreduce --size 16M --timeout 3 -o " + sched + t,
    };
    for (const std::string& c : commands) {
        auto r = run(c);
        INFO("machine ", args, "\ncollsched ", c, "\n", r.err);
        CHECK((r.code == 0 || r.code == 3));
    }
    if (std::filesystem::exists(sched)) {
        auto v = run("verify " + sched);
        INFO("machine ", args, ": verify the winner\n", v.err);
        CHECK(v.code == 0);
    }
}

/// `optimize --size`, `optimize` (steps) and `pareto` on the machine renumbered by `seed`: each ends
/// within --timeout + 1 s; `compare` (NCCL's rings and trees; it has no --timeout) within the same.
void renumbered_within_timeout(const Scratch& dir, const std::string& args, unsigned seed, double timeout) {
    const std::string file = faults_machine(dir, fmt::format("renumbered{}", seed), fmt::format("{} --renumber {}", args, seed));
    const std::string t = " --topology graph:" + file, limit = fmt::format(" --timeout {}", timeout);
    for (const std::string& c : {"optimize --collective allgather --size 16M,1G" + t + limit, "compare nccl:ring nccl:tree --collective allreduce --sizes 16M" + t,
                                 "optimize --collective allgather" + t + limit, "pareto --collective allgather" + t + limit}) {
        auto [r, wall] = timed_run(c, timeout);
        INFO("machine ", args, " --renumber ", seed, "\ncollsched ", c, "\n", r.err, "\nwall ", wall, " s");
        CHECK(r.code != 2);
        CHECK(r.code != -1);
        CHECK(wall <= timeout + 1);
    }
}

/// NICs 1 to 7 of a two-box machine down: the boxes joined by one rail (NIC 0's).
std::string bridge_faults() {
    std::string s;
    for (int nic = 1; nic <= 7; ++nic) s += fmt::format("--nic-down {} ", nic);
    return s;
}

}  // namespace

TEST_CASE("graph files: one-way edges are one channel, a speed per direction is two, contradictions refused at file:line:col") {
    Scratch dir("faults_one_way");
    const std::string ok = dir.file("ok.json", R"({"processors": 3, "link_types": {"nv": {"alpha": "1 us", "bandwidth": "10 GB/s"}},
 "edges": [[0, 1, 1, "nv"],
   {"from": 1, "to": 2, "type": "nv", "one_way": true},
   {"from": 2, "to": 0, "type": "nv", "bandwidth": "5 GB/s", "one_way": true},
   {"from": 0, "to": 2, "type": "nv", "bandwidth": "2 GB/s", "one_way": true}]}
)");
    auto r = run("topo graph:" + ok);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    std::vector<std::string> ch;
    for (const auto& c : j["channels"]) {
        ch.push_back(c["from"].get<std::string>() + ">" + c["to"].get<std::string>());
        if (c["from"] == "2" && c["to"] == "0") CHECK(c["bandwidth_Bps"] == 5e9);
        if (c["from"] == "0" && c["to"] == "2") CHECK(c["bandwidth_Bps"] == 2e9);
    }
    CHECK(ch.size() == 5);
    CHECK(faults_has(ch, "1>2"));
    CHECK(!faults_has(ch, "2>1"));
    const std::string not_bool = dir.file("not_bool.json", "{\"processors\": 2,\n \"edges\": [{\"from\": 0, \"to\": 1, \"one_way\": \"yes\"}]}\n");
    auto b = run("topo graph:" + not_bool);
    CHECK(b.code == 2);
    CHECK(b.err.find("not_bool.json:2:44: edges[0]: \"one_way\" is \"yes\": expected true or false") != std::string::npos);
    CHECK(b.out.empty());
    const std::string twice = dir.file("twice.json", "{\"processors\": 2,\n \"edges\": [[0, 1],\n   {\"from\": 1, \"to\": 0, \"one_way\": true}]}\n");
    auto t = run("topo graph:" + twice);
    CHECK(t.code == 2);
    CHECK(t.err.find("twice.json:3:4: edges[1]: the edge 1 -- 0 is listed twice (first as edges[0]") != std::string::npos);
}

TEST_CASE("machine: slow and failed NICs, GPU ports, links and one-way links, named in the file and in the reports") {
    Scratch dir("faults_machine");
    const std::string f = faults_machine(dir, "f", "dgx-h100 --boxes 2 --network rail --slow-nic 3:0.5 --slow-gpu 1:0.5 --one-way 0-8 --link-down 2-10");
    const auto j = nlohmann::json::parse(slurp(f));
    CHECK(j["faults"] == "NIC 3 at 0.5 of its speed; GPU 1's links in its box at 0.5 of their speed; link 2-10 down; link 0-8 one way (0 -> 8 only)");
    CHECK(j["note"].get<std::string>().find("; NIC 3 at 0.5 of its speed;") != std::string::npos);
    bool nic = false, gpu = false;
    for (const auto& e : j["edges"]) {
        if (!e.is_object()) continue;
        if (e["from"] == 3 && e["to"] == 11) nic = e["bandwidth"] == "200 Gbit/s";
        if (e["from"] == 1 && e["to"] == 2) gpu = e["bandwidth"] == "12.5 GB/s";
    }
    CHECK(nic);
    CHECK(gpu);
    for (const auto& g : j["groups"]) {
        if (g["name"] == "nic3.out") CHECK(g["bandwidth"] == "200 Gbit/s");
        if (g["name"] == "gpu1.in") CHECK(g["bandwidth"] == "12.5 GB/s");
    }
    const auto ch = faults_channels(f);
    CHECK(faults_has(ch, "0>8"));
    CHECK(!faults_has(ch, "8>0"));
    CHECK(!faults_has(ch, "2>10"));
    CHECK(!faults_has(ch, "10>2"));
    // every report on it names the faults
    const std::string line = "faults: NIC 3 at 0.5 of its speed;";
    CHECK(run("optimize --collective allgather --size 16M --timeout 5 --topology graph:" + f).out.find(line) != std::string::npos);
    CHECK(run("optimize --collective allgather --timeout 5 --topology graph:" + f).out.find(line) != std::string::npos);
    CHECK(run("bandwidth --collective allgather --timeout 5 --topology graph:" + f).out.find(line) != std::string::npos);
    CHECK(run("pareto --collective allgather --timeout 3 --max-chunks 2 --topology graph:" + f).out.find(line) != std::string::npos);
    CHECK(run("compare nccl:ring --collective allgather --sizes 16M --topology graph:" + f).out.find(line) != std::string::npos);
    // k of n links failed at a GPU on a mesh box: its links at (n-k)/n
    const auto mesh = nlohmann::json::parse(slurp(faults_machine(dir, "mesh", "dgx1 --slow-gpu 0:0.5")));
    CHECK(mesh["faults"] == "GPU 0's links in its box at 0.5 of their speed");
    // bad input: one line, exit 2, no file
    for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
             {"dgx-h100 --boxes 2 --network rail --slow-nic 16:0.5", "--slow-nic 16: this machine has NICs 0..15"},
             {"dgx-h100 --boxes 2 --network rail --slow-nic 3", "--slow-nic '3': expected NIC:FRACTION"},
             {"dgx-h100 --boxes 2 --network rail --slow-gpu 1:1.5", "--slow-gpu '1:1.5': the fraction must be above 0 and below 1"},
             {"dgx-h100 --boxes 2 --network rail --one-way 0-9", "--one-way 0-9: there is no link 0-9 in this machine"},
             {"dgx-h100 --boxes 2 --network rail --one-way 0-8 --one-way 8-0", "--one-way 8-0: the link is one way already"},
             {"dgx-h100 --boxes 2 --network rail --slow-nic 3:0.5 --slow-link 3-11:0.5", "--slow-link: the link 3-11 is slowed twice"},
             {"dgx-h100 --boxes 2 --network rail --nic-down 1 --nic-down 2 --nic-down 3 --nic-down 4 --nic-down 5 --nic-down 6 --nic-down 7 "
              "--one-way 0-8", "the faults cut processor 8 off from processor 0 (it cannot send to it)"},
             {"dgx-h100 --boxes 2 --network rail --slow-nik 3:0.5", "did you mean --slow-nic?"}}) {
        const std::string out = dir.file("bad.json");
        auto r = run("machine " + args + " -o " + out);
        INFO(args, "\n", r.err);
        CHECK(r.code == 2);
        CHECK(r.err.find(says) != std::string::npos);
        CHECK(!std::filesystem::exists(out));
    }
}

TEST_CASE("machine --renumber: the same links between other numbers, no boxes declared") {
    Scratch dir("faults_renumber");
    const auto a = nlohmann::json::parse(slurp(faults_machine(dir, "a", "dgx-h100 --boxes 2 --network rail")));
    const auto b = nlohmann::json::parse(slurp(faults_machine(dir, "b", "dgx-h100 --boxes 2 --network rail --renumber 7")));
    CHECK(a["boxes"] == 2);
    CHECK(!b.contains("boxes"));
    CHECK(a["edges"].size() == b["edges"].size());
    CHECK(a["edges"] != b["edges"]);
    CHECK(b["note"].get<std::string>().find("processors renumbered (seed 7)") != std::string::npos);
    const std::string c = faults_machine(dir, "c", "dgx-h100 --boxes 2 --network rail --renumber 7");
    CHECK(slurp(c) == slurp(dir.file("b.json")));  // the seed decides
}

TEST_CASE("routers: every command runs with its defaults on the machines collsched machine writes (small machines)") {
    Scratch dir("faults_every");
    for (const char* args : {"amd4", "dgx1 --boxes 2 --network rail --switches routers", "dgx1 --boxes 2 --network switch",
                                    "ndv2 --boxes 2 --network fat-tree", "dgx1 --boxes 2 --network rail --one-way 0-8 --slow-nic 1:0.5"})
        every_command(dir, args);
    // a PCIe box read from NCCL's XML (Azure's NC A100 v4): its PCIe switch a router
    every_command(dir, "--nccl-topo " + collsched::test::source("tests/data/nccl_topo/ncv4-topo.xml") + " --gpu a100");
}

TEST_CASE("routers: every command on every family x network x switches" * doctest::test_suite("slow") * doctest::skip()) {
    Scratch dir("faults_every_slow");
    for (const std::string family : {"dgx1", "dgx2", "dgx-a100", "dgx-h100", "dgx-b200", "ndv2", "ndv4", "ndv5", "mi300x", "amd8", "pcie"})
        for (const std::string network : {"none", "switch", "rail", "fat-tree", "torus:2x1"})
            for (const std::string switches : {"groups", "routers"}) {
                if (network == "fat-tree" && switches == "groups") continue;  // refused: a fat tree's switches are routers
                if (family == "amd8" && network != "none") continue;         // amd8 has no NICs
                every_command(dir, fmt::format("{} --boxes {} --network {} --switches {}", family, network == "none" ? 1 : 2, network, switches));
            }
    const std::string xml = collsched::test::source("tests/data/nccl_topo/");
    for (const std::string box : {"ncv4-topo.xml --gpu a100 --nic-gbps 200", "ndv2-topo.xml --gpu v100 --nic-gbps 100",
                                  "ndv4-topo.xml --gpu a100 --nic-gbps 200", "ndv5-topo.xml --gpu h100 --nic-gbps 400", "dgx-h100-dump.xml"})
        for (const std::string network : {"switch", "rail"}) every_command(dir, "--nccl-topo " + xml + box + " --boxes 2 --network " + network);
}

TEST_CASE("limits: every search stops within --timeout on renumbered machines (a few seeds)") {
    Scratch dir("faults_limits");
    renumbered_within_timeout(dir, "ndv2 --boxes 4 --network switch", 1, 2);
    // two DGX-2 joined by one rail: no Hamiltonian cycle, and the known schedules' search for one took
    // its whole step budget (over 100 s past --timeout 1) before it polled the deadline
    renumbered_within_timeout(dir, "dgx2 --boxes 2 --network rail " + bridge_faults(), 3, 2);
}

TEST_CASE("limits: optimize --executor nccl on 4 x 8 H100 with NIC 0 down ends within --timeout 4 (a prediction polls the deadline)") {
    // the leaf shape in 31 pieces (484,900 transfers) started its timing at 2.5 s and its 1 GiB prediction in three
    // protocols ran to 6.7 s: the asynchronous run did not look at the deadline (6.5 to 7.1 s in all)
    Scratch dir("faults_predict_limit");
    const std::string file = faults_machine(dir, "nicdown", "dgx-h100 --boxes 4 --network rail --nic-down 0");
    auto [r, wall] = timed_run("optimize --topology graph:" + file + " --collective allreduce --sizes 1K,1M,1G --executor nccl --timeout 4", 4);
    INFO(r.err, "\nwall ", wall, " s");
    CHECK(r.code == 3);
    CHECK(wall <= 5);
}

TEST_CASE("limits: every search stops within --timeout on renumbered machines (many seeds)" * doctest::test_suite("slow") * doctest::skip()) {
    Scratch dir("faults_limits_slow");
    for (unsigned seed = 1; seed <= 8; ++seed)
        for (const std::string& args : std::vector<std::string>{"ndv2 --boxes 4 --network switch", "dgx2 --boxes 2 --network rail " + bridge_faults(),
                                       "dgx2 --boxes 2 --network rail --one-way 0-16", "dgx1 --boxes 2 --network rail"})
            renumbered_within_timeout(dir, args, seed, 5);
}

TEST_CASE("machine --nccl-topo: a GPU with NVLinks missing from the file has them missing in the machine") {
    Scratch dir("faults_nccl_missing");
    std::string xml = slurp(collsched::test::source("tests/data/nccl_topo/dgx-h100-dump.xml"));
    const std::string link = "<nvlink target=\"0000:05:00.0\" count=\"5\"";
    const std::size_t gpu1 = xml.find(link, xml.find(link) + 1);  // GPU 1's first NVSwitch entry: 1 link of 5
    REQUIRE(gpu1 != std::string::npos);
    xml.replace(gpu1, link.size(), "<nvlink target=\"0000:05:00.0\" count=\"1\"");
    const std::string in = dir.file("missing.xml", xml), out = dir.file("m.json");
    auto r = run("machine --nccl-topo " + in + " --boxes 2 --network rail -o " + out);
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.err.find("the GPUs have 14 to 18 NVLinks to the NVSwitch: each GPU keeps its own") != std::string::npos);
    const auto j = nlohmann::json::parse(slurp(out));
    CHECK(j["faults"] == "GPU 1 has 14 of 18 NVLinks to the NVSwitch (the topology file's); GPU 9 has 14 of 18 NVLinks to the NVSwitch (the topology file's)");
    int slow = 0;
    for (const auto& e : j["edges"])
        if (e.is_object() && e.contains("bandwidth") && (e["from"] == 1 || e["to"] == 1)) slow += e["bandwidth"] == "19.4444 GB/s";
    CHECK(slow == 7);  // GPU 1's links to the other seven GPUs of its box
    for (const auto& g : j["groups"])
        if (g["name"] == "gpu0.out") CHECK(g["bandwidth"] == "25 GB/s");
}
