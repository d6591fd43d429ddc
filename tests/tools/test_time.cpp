// Predicted times on the command line (docs/time.md): verify and simulate with --size, the
// timeline file, pareto --size, and compare on the 2 x 8 multibox machine (the crossover between
// the one-step and the pipelined allgather, the speed-up over NCCL's ring); bad units and
// sizes are refused with exit 2.
#include <doctest/doctest.h>

#include "tests/approx.hpp"

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_run.hpp"

using collsched::test::run;
using collsched::test::Scratch;
using collsched::test::source;

namespace {

const std::string ring_ag = source("tests/data/astrasim/ring_allgather.sched");
const std::string nccl_ring = source("schedules/nccl/ring_allgather.sched");
const std::string nccl_rings = source("schedules/nccl/ring_allgather_channels.sched");
const std::string direct = source("schedules/multibox/allgather_direct.sched");
const std::string hier = source("schedules/multibox/allgather_hierarchical.sched");
const std::string piped = source("schedules/multibox/allgather_pipelined.sched");

}  // namespace

TEST_CASE("time: verify and simulate print both predicted times, from 1 KB to 1 GB") {
    // ring:8 with the built-in speeds, 8 MiB (NCCL's size: the output, 1 MiB per datum): 7 (1 us + 1 MiB / 10 GB/s) = 741 us
    // both ways; algbw 8 MiB / 741 us, busbw 7/8 of it
    auto v = run("verify " + ring_ag + " --size 8M");
    CHECK(v.code == 0);
    CHECK(v.out.find("link speeds: the defaults, alpha 1 us, 10 GB/s per channel") != std::string::npos);
    CHECK(v.out.find("  8 MiB             741 us        741 us       11.3 GB/s       9.91 GB/s\n") != std::string::npos);
    auto j = run("verify " + ring_ag + " --size 8K..8G --json");
    auto js = nlohmann::json::parse(j.out);
    REQUIRE(js["time"]["sizes"].size() == 21);
    CHECK(js["time"]["sizes"][10]["size"] == 8388608.0);
    CHECK(js["time"]["sizes"][10]["datum_bytes"] == 1048576.0);
    CHECK(js["time"]["sizes"][10]["asynchronous_s"].get<double>() == collsched::test::rel(7 * (1e-6 + 1048576 / 10e9)));
    // the multibox machine's speeds: NVLink 300 GB/s and InfiniBand HDR 25 GB/s
    auto m = run("simulate " + nccl_ring + " --size 16G");  // 1 GiB per GPU
    CHECK(m.code == 0);
    CHECK(m.out.find("link speeds: from the graph file, alpha 600 ns .. 2.7 us, 25 GB/s .. 300 GB/s per channel, 64 link groups")
          != std::string::npos);
    // 15 GiB over one NIC; busbw = the NIC's 25 GB/s
    CHECK(m.out.find("  16 GiB            644 ms        644 ms       26.7 GB/s         25 GB/s\n") != std::string::npos);
    // --link replaces every speed
    auto l = run("verify " + ring_ag + " --size 1M --link '1 us, 10 GB/s' --json");
    CHECK(nlohmann::json::parse(l.out)["time"]["link_speeds"] == "--link");
}

TEST_CASE("time: simulate --timeline writes every channel's busy intervals") {
    Scratch dir("time_timeline");
    auto r = run("simulate " + ring_ag + " -D n=4 --size 4M --link '1 us, 1 GB/s' --timeline " + dir.file("t.json"));
    CHECK(r.code == 0);
    std::ifstream in(dir.file("t.json"));
    auto j = nlohmann::json::parse(in);
    CHECK(j["format"] == "collsched.timeline/1");
    CHECK(j["channels"].size() == 4);
    CHECK(j["channels"][0]["busy"].size() == 3);
    CHECK(j["asynchronous_s"].get<double>() == collsched::test::rel(3 * (1e-6 + 1048576 / 1e9)));
    auto bad = run("simulate " + ring_ag + " --timeline " + dir.file("u.json"));
    CHECK(bad.code == 2);
    CHECK(bad.err == "collsched: error: --timeline FILE needs one --size M\n");
}

TEST_CASE("time: bad sizes and link speeds are refused") {
    auto a = run("verify " + ring_ag + " --size 1Q");
    CHECK(a.code == 2);
    CHECK(a.err.find("bad size '1Q': unknown unit 'Q' for a size") != std::string::npos);
    auto b = run("verify " + ring_ag + " --size 1M --link '1 us'");
    CHECK(b.code == 2);
    CHECK(b.err.find("bad --link '1 us': no comma") != std::string::npos);
    auto c = run("verify " + ring_ag + " --size 1M --link '1, 10 GB/s'");
    CHECK(c.code == 2);
    CHECK(c.err.find("a time needs a unit") != std::string::npos);
    auto d = run("compare " + ring_ag + " " + direct);
    CHECK(d.code == 2);
    CHECK(d.err.find("compare schedules of one collective on one machine") != std::string::npos);
}

TEST_CASE("time: compare on multibox 2x8 names the winners, the crossovers and the speed-up over NCCL's ring") {
    Scratch dir("time_compare");
    auto r = run("compare " + nccl_ring + " " + direct + " " + hier + " " + piped + " --sizes 16K..16G --json --svg " + dir.file("p.svg"));
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["baseline"] == "ring_allgather");
    CHECK(j["winners"][0]["winner"] == "allgather_direct");      // 16 KiB (1 KiB per GPU): one step, one latency
    CHECK(j["winners"][20]["winner"] == "allgather_pipelined");  // 16 GiB: NVLink-bound, NICs overlapped
    REQUIRE(j["crossovers"].size() == 1);
    CHECK(j["crossovers"][0]["below"] == "allgather_direct");
    CHECK(j["crossovers"][0]["above"] == "allgather_pipelined");
    CHECK(j["crossovers"][0]["size"].get<double>() > 16 * 1024);
    CHECK(j["crossovers"][0]["size"].get<double>() < 16 * 4096);
    // 1 GiB: NCCL's ring puts 15 data through one NIC (15 M / 25 GB/s); the pipelined one is
    // bound by 14 M over NVLink (14 M / 300 GB/s): 15 * 12 / 14 = 12.86 x
    CHECK(j["winners"][20]["speedup_over_baseline"].get<double>() == collsched::test::rel(15.0 * 12 / 14).epsilon(0.005));
    CHECK(j["winners"][10]["speedup_over_baseline"].get<double>() > 10);  // 16 MiB
    std::ifstream in(dir.file("p.svg"));
    std::stringstream svg;
    svg << in.rdbuf();
    CHECK(svg.str().starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    CHECK(svg.str().find("allgather_pipelined") != std::string::npos);
    // synchronous: the hierarchical allgather (2 steps) wins in between
    auto s = run("compare " + nccl_ring + " " + direct + " " + hier + " " + piped + " --sizes 16K..16G --time sync");
    CHECK(s.code == 0);
    CHECK(s.out.find("crossover at") != std::string::npos);
    CHECK(s.out.find("(2) allgather_direct is faster below, (3) allgather_hierarchical above") != std::string::npos);
    CHECK(s.out.find("(3) allgather_hierarchical is faster below, (4) allgather_pipelined above") != std::string::npos);
    auto b = run("compare " + nccl_ring + " " + direct + " --baseline nope");
    CHECK(b.code == 2);
    CHECK(b.err.find("--baseline nope: no input of that name (names: ring_allgather, allgather_direct)") != std::string::npos);
}

TEST_CASE("time: compare against NCCL's rings, one per NIC, the baseline GPU users run") {
    // 8 channels, channel c on its own ring leaving every box through NIC c: each NIC carries
    // 15 chunks of M / 8 (15 M / 8 / 25 GB/s = 80.5 ms at 1 GiB), against the pipelined
    // allgather's 14 M over NVLink (14 M / 300 GB/s): 15 * 12 / (8 * 14) = 1.61 x
    auto v = run("verify " + nccl_rings + " --size 16G");  // 1 GiB per GPU
    CHECK(v.code == 0);
    CHECK(v.out.find("claim steps = 15: holds (15 steps)") != std::string::npos);
    CHECK(v.out.find("bandwidth: S = 15 steps, R = 105 rounds, C = 8 chunks, R/C = 105/8 rounds per chunk") != std::string::npos);
    CHECK(v.out.find("  16 GiB           80.6 ms       80.5 ms        213 GB/s        200 GB/s\n") != std::string::npos);
    auto r = run("compare " + nccl_rings + " " + nccl_ring + " " + direct + " " + piped + " --sizes 16K..16G --json");
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["baseline"] == "ring_allgather_channels");
    CHECK(j["winners"][20]["winner"] == "allgather_pipelined");
    CHECK(j["winners"][20]["speedup_over_baseline"].get<double>() == collsched::test::rel(15.0 * 12 / (8 * 14)).epsilon(0.005));
    CHECK(j["winners"][10]["speedup_over_baseline"].get<double>() == collsched::test::rel(1.64).epsilon(0.01));  // 16 MiB: 81.3 / 49.5 us
    CHECK(j["winners"][0]["winner"] == "allgather_direct");  // 16 KiB: 13.2 us against 3.03 us
    auto t = run("compare " + nccl_rings + " " + direct + " --sizes 1K");
    CHECK(t.out.find("(15 steps, 105 rounds, 8 chunks) [baseline]") != std::string::npos);
    CHECK(t.out.find("(1 step, 8 rounds, 1 chunk)") != std::string::npos);
}

TEST_CASE("time: the pipelined hierarchical allreduce against NCCL's rings on multibox 2x8") {
    // NCCL's rings: 2 x 15 / 128 of the buffer per NIC; the pipelined hierarchical allreduce:
    // 7/4 of it per GPU over NVLink (7/4 GiB / 300 GB/s = 6.26 ms), 1/8 per NIC, overlapped
    const std::string rings = source("schedules/nccl/ring_allreduce_channels.sched");
    const std::string three = source("schedules/multibox/allreduce_allpairs_hierarchical.sched");
    const std::string piped_ar = source("schedules/multibox/allreduce_hierarchical_pipelined.sched");
    auto r = run("compare " + rings + " " + three + " " + piped_ar + " --sizes 1K..1G --json");
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    for (const auto& w : j["winners"]) CHECK(w["winner"] == "allreduce_hierarchical_pipelined");
    CHECK(j["winners"][20]["speedup_over_baseline"].get<double>() == collsched::test::rel(2.0 * 15 / 128 / 25e9 / (7.0 / 4 / 300e9)).epsilon(0.01));
    // the unpipelined three phases lose to NCCL's rings above 2.54 MiB
    auto u = run("compare " + rings + " " + three + " --sizes 1K..1G");
    CHECK(u.out.find("crossover at 2.54 MiB: (2) allreduce_allpairs_hierarchical is faster below, (1) ring_allreduce_channels above") != std::string::npos);
}

TEST_CASE("time: pareto --size predicts every frontier point") {
    auto r = run("pareto --topology ring:4 --collective allgather --max-chunks 1 --size 1M --json");
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["frontier"].size() >= 1);
    CHECK(j["frontier"][0]["time"][0]["size"] == 1048576.0);
    CHECK(j["frontier"][0]["time"][0]["asynchronous_s"].get<double>() > 0);
}

TEST_CASE("time: compare --timeout stops NCCL's tables, the checks and the predictions, exit 3") {
    // NCCL's ring and tree on 128 GPUs at 25 sizes take about 5 s; compare had no limit at all
    const std::string args = "compare nccl:ring nccl:tree --topology graph:" + source("schedules/machines/h100rail16x8.json") +
                             " --collective allreduce --sizes 1K..16G";
    for (const char* t : {"0.3", "1.5"}) {
        CAPTURE(t);
        const auto start = std::chrono::steady_clock::now();
        const auto r = run(args + " --timeout " + t);
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        CHECK(r.code == 3);
        CHECK(r.out.starts_with("collsched: stopped before any result: time limit"));  // as every command's limit (cli/output.cpp)
        CHECK(wall < std::stod(t) + 1.0);
    }
    // with time enough, the same answer as without a limit
    const auto small = "compare nccl:ring nccl:tree --topology graph:" + source("schedules/machines/h100rail2x8.json") +
                       " --collective allreduce --sizes 1K..1G:4";
    const auto limited = run(small + " --timeout 60"), free = run(small);
    CHECK(limited.code == 0);
    CHECK(limited.out == free.out);
}
