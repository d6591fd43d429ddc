// `collsched machine` (issue 45): the shipped machines reproduced byte for byte, NCCL's topology
// XML (Azure's skeletons and a full DGX H100 dump) and `nvidia-smi topo -m` read by NCCL's rules,
// faults, bad input; and the command line's did-you-mean and --size/--sizes.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_run.hpp"

using collsched::test::run;
using collsched::test::run_shell;
using collsched::test::slurp;
using collsched::test::source;

namespace {

/// Runs `machine ARGS`, checks that the file it writes is a topology collsched reads, and returns
/// it parsed, with the run (stderr holds what was completed).
nlohmann::json machine_json(const std::string& args, collsched::test::Run* out = nullptr) {
    collsched::test::Scratch dir("machine_json");
    const std::string file = dir.file("m.json");
    auto r = run("machine " + args + " -o " + file);
    if (out) *out = r;
    INFO(args, "\n", r.err);
    REQUIRE(r.code == 0);
    CHECK(run("topo graph:" + file).code == 0);
    return nlohmann::json::parse(slurp(file));
}

std::string nccl(const std::string& name) { return source("tests/data/nccl_topo/" + name); }

}  // namespace

TEST_CASE("machine: every shipped machine is written byte for byte by its line in commands.txt") {
    std::istringstream lines(slurp(source("schedules/machines/commands.txt")));
    std::string line;
    int checked = 0;
    while (std::getline(lines, line)) {
        if (line.empty() || line[0] == '#') continue;
        const std::string file = line.substr(0, line.find(' ')), args = line.substr(line.find(' '));
        auto r = run_shell(fmt::format("cd {} && {} machine {}", source("schedules/machines"), COLLSCHED_BINARY, args));
        INFO(file, ": ", r.err);
        CHECK(r.code == 0);
        CHECK(r.out == slurp(source("schedules/machines/" + file)));
        ++checked;
    }
    CHECK(checked == 31);  // every .json in schedules/machines
}

TEST_CASE("machine: Azure NDv4 skeleton completed from --gpu a100 --nic-gbps 200, bandwidths by NCCL's rules") {
    collsched::test::Run r;
    auto j = machine_json("--nccl-topo " + nccl("ndv4-topo.xml") + " --gpu a100 --nic-gbps 200 --boxes 2 --network rail", &r);
    // NVLink: 12 links (xml.cc maxNvLinks for sm 80) of 25 GB/s at peak (NCCL's SM80_NVLINK_BW 20 is the executor's efficiency)
    CHECK(j["link_types"]["nvlink"]["bandwidth"] == "25 GB/s");
    CHECK(j["edges"][0] == nlohmann::json::array({0, 1, 12, "nvlink"}));
    CHECK(j["groups"][0]["cap"] == 12);
    // NIC 200,000 Mb/s = 25 GB/s under the PCIe path's 16 GT/s x16 = 31.5 GB/s at peak (NCCL's rule: 24)
    CHECK(j["link_types"]["ib"]["bandwidth"] == "200 Gbit/s");
    // every GPU has the NIC of its PCIe bridge: NIC j of every box on rail j joins GPU g to g + 8
    int rails = 0;
    for (const auto& e : j["edges"])
        if (e[3] == "ib") {
            CHECK(e[1].get<int>() == e[0].get<int>() + 8);
            ++rails;
        }
    CHECK(rails == 8);
    CHECK(r.err.find("A100 (sm 80) from --gpu a100") != std::string::npos);
    CHECK(r.err.find("8 NICs from PCI class 0x02 without a speed: 200 Gb/s from --nic-gbps") != std::string::npos);
    CHECK(r.err.find("12 NVLinks into NVSwitch") != std::string::npos);
}

TEST_CASE("machine: Azure NDv5 and NDv2 skeletons, and a full DGX H100 dump, by NCCL's rules") {
    auto v5 = machine_json("--nccl-topo " + nccl("ndv5-topo.xml") + " --gpu h100 --nic-gbps 400 --boxes 2 --network fat-tree:2");
    // routers: an NVSwitch per box (18 links of 25 GB/s at peak; NCCL's SM90_NVLINK_BW 20.6), a leaf and a spine
    CHECK(v5["link_types"]["nvswitch"]["bandwidth"] == "25 GB/s");
    CHECK(v5["edges"][0] == nlohmann::json::array({0, "r1.0", 18, "nvswitch"}));
    CHECK(v5["link_types"]["ib"]["bandwidth"] == "400 Gbit/s");  // PCIe 32 GT/s x16 = 63 GB/s at peak, above 400 Gb/s
    CHECK(v5["routers"] == 4);
    CHECK(v5["edges"].back() == nlohmann::json::array({"r1.2", "r1.3", 8, "ib"}));  // 16 NICs under the leaf, 2:1

    auto v2 = machine_json("--nccl-topo " + nccl("ndv2-topo.xml") + " --gpu v100 --nic-gbps 100 --boxes 2 --network switch");
    CHECK(v2["link_types"]["nvlink"]["bandwidth"] == "25 GB/s");  // NVLink 2 at peak (NCCL's SM70_NVLINK_BW 20)
    CHECK(v2["edges"][0] == nlohmann::json::array({0, 1, 2, "nvlink"}));  // the cube-mesh's double link
    CHECK(v2["link_types"]["pcie"]["bandwidth"] == "31.5 GB/s");  // 16 GT/s x16 at peak
    CHECK(v2["link_types"]["ib"]["bandwidth"] == "100 Gbit/s");
    CHECK(v2["routers"] == 3);  // the NIC of each box, one switch

    collsched::test::Run r;
    auto h = machine_json("--nccl-topo " + nccl("dgx-h100-dump.xml") + " --boxes 4 --network rail", &r);
    CHECK(h["processors"] == 32);
    CHECK(h["link_types"]["nvlink"]["bandwidth"] == "25 GB/s");
    CHECK(h["edges"][0] == nlohmann::json::array({0, 1, 18, "nvlink"}));  // 5 + 4 + 4 + 5 links to the NVSwitches
    CHECK(h["link_types"]["ib"]["bandwidth"] == "400 Gbit/s");           // speed="400000" Mb/s under PCIe Gen5 x16's 63 GB/s
    CHECK(r.err.find("--gpu") == std::string::npos);                     // nothing completed from the hints
    CHECK(r.err.find("bus-id") == std::string::npos);                    // the GPUs say their dev
}

TEST_CASE("machine: nvidia-smi topo -m, an NVSwitch box and a DGX-1 mesh") {
    collsched::test::Scratch dir("machine_smi");
    std::string sw = "\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tCPU Affinity\tNUMA Affinity\n";
    for (int i = 0; i < 4; ++i) {
        sw += fmt::format("GPU{}", i);
        for (int j = 0; j < 4; ++j) sw += i == j ? "\t X " : "\tNV12";
        sw += i == 0 ? "\tPXB\t0-63\t0\n" : "\tSYS\t0-63\t0\n";
    }
    sw += "NIC0\tPXB\tSYS\tSYS\tSYS\t X\n\nLegend:\n\n  X    = Self\n";
    collsched::test::Run r;
    auto j = machine_json("--nvidia-smi " + dir.file("sw.txt", sw) + " --gpu a100", &r);
    CHECK(j["edges"][0] == nlohmann::json::array({0, 1, 12, "nvlink"}));
    CHECK(j["link_types"]["nvlink"]["bandwidth"] == "25 GB/s");
    CHECK(r.err.find("the GPUs are on NVSwitch, 12 links each") != std::string::npos);
    std::string mesh = "\tGPU0\tGPU1\tGPU2\n GPU0\t X \tNV2\tNV1\nGPU1\tNV2\t X \tSYS\nGPU2\tNV1\tSYS\t X \n";
    auto m = machine_json("--nvidia-smi " + dir.file("mesh.txt", mesh) + " --gpu v100");
    CHECK(m["edges"] == nlohmann::json::parse(R"([[0, 1, 2], [0, 2, 1]])"));
    auto bad = run("machine --nvidia-smi " + dir.file("bad.txt", "\tGPU0\tGPU1\nGPU0\t X\tNVX\nGPU1\tNV2\t X\n") + " --gpu v100");
    CHECK(bad.code == 2);
    CHECK(bad.err.find("bad.txt:2:9: 'NVX' is no connection") != std::string::npos);
}

TEST_CASE("machine: nvidia-smi topo -m is a square matrix with X on its diagonal only (an X elsewhere, a row missing: exit 2 at the place)") {
    collsched::test::Scratch dir("machine_smi_square");
    const std::string out = dir.file("m.json");
    auto refused = [&](const std::string& name, const std::string& text, const std::string& message) {
        auto r = run(fmt::format("machine --nvidia-smi {} --gpu a100 -o {}", dir.file(name, text), out));
        INFO(name, "\n", r.err);
        CHECK(r.code == 2);
        CHECK(r.err.find(message) != std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(!std::filesystem::exists(out));
    };
    // X between GPU1 and GPU2 (it was read as no link)
    refused("x.txt", "\tGPU0\tGPU1\tGPU2\nGPU0\tX\tNV4\tNV4\nGPU1\tNV4\tX\tX\nGPU2\tNV4\tNV4\tX\n",
            "x.txt:3:12: 'X' (self) between GPU1 and GPU2: nvidia-smi prints X only where a device meets itself");
    refused("d.txt", "\tGPU0\tGPU1\nGPU0\tNV4\tNV4\nGPU1\tNV4\tX\n", "d.txt:2:6: 'NV4' where GPU0 meets itself");
    // three columns, two rows (it was read as a box of two GPUs)
    refused("cut.txt", "\tGPU0\tGPU1\tGPU2\nGPU0\tX\tNV1\tNV1\nGPU1\tNV1\tX\tNV1\n",
            "cut.txt:1:12: column GPU2 has no row: the matrix is cut short (2 rows for 3 columns");
    refused("order.txt", "\tGPU0\tGPU1\nGPU1\tNV1\tX\nGPU0\tX\tNV1\n", "order.txt:2:1: row GPU1 where the header's order has GPU0");
    refused("extra.txt", "\tGPU0\tGPU1\nGPU0\tX\tNV1\nGPU1\tNV1\tX\nGPU2\tNV1\tNV1\n", "extra.txt:4:1: row GPU2 where every column has its row");
    refused("nic.txt", "\tGPU0\tNIC0\tGPU1\nGPU0\tX\tPIX\tNV1\n", "nic.txt:1:12: column GPU1 after a NIC's");
    refused("nv0.txt", "\tGPU0\tGPU1\nGPU0\tX\tNV0\nGPU1\tNV0\tX\n", "nv0.txt:2:8: NV0 between GPU0 and GPU1: expected 1 to 64 NVLinks");
    // as nvidia-smi prints it, with a NIC row and a legend: read
    CHECK(machine_json("--nvidia-smi " + dir.file("ok.txt", "\tGPU0\tGPU1\tNIC0\tCPU Affinity\nGPU0\t X \tNV2\tPIX\t0-7\nGPU1\tNV2\t X \tSYS\t0-7\n"
                                                               "NIC0\tPIX\tSYS\t X \n\nLegend:\n  X = Self\n") +
                       " --gpu a100")["edges"]
              .size() == 1);
}

TEST_CASE("machine: bad NCCL topology XML is exit 2 with file:line, and nothing is written") {
    collsched::test::Scratch dir("machine_bad");
    const std::string out = dir.file("out.json");
    auto check = [&](const std::string& name, const std::string& text, const std::string& args, const std::string& message) {
        auto r = run(fmt::format("machine --nccl-topo {} {} -o {}", dir.file(name, text), args, out));
        INFO(r.err);
        CHECK(r.code == 2);
        CHECK(r.err.find(message) != std::string::npos);
        CHECK(!std::filesystem::exists(out));
    };
    check("open.xml", "<system version=\"1\">\n  <cpu numaid=\"0\">\n    <pci busid=\"0\" class=\"0x030200\">\n", "",
          "open.xml:4:1: malformed NCCL topology XML");
    check("count.xml",
          "<system version=\"1\">\n<cpu>\n<pci busid=\"0000:01:00.0\" class=\"0x030200\">\n<gpu dev=\"0\" sm=\"90\">\n"
          "  <nvlink target=\"0000:05:00.0\" tclass=\"0x068000\"/>\n</gpu></pci></cpu></system>\n",
          "", "count.xml:5:3: <nvlink> has no count attribute");
    check("root.xml", "<graphs version=\"1\"/>\n", "", "root.xml:1:1: the root element is <graphs>");
    check("version.xml", "<system version=\"2\"/>\n", "", "version.xml:1:1: NCCL reads topology XML version 1 only");
    check("sm.xml", "<system version=\"1\"><cpu>\n<pci busid=\"0000:01:00.0\" class=\"0x030200\">\n<gpu dev=\"0\" sm=\"nine\"/></pci></cpu></system>\n",
          "", "sm.xml:3:1: <gpu> sm=\"nine\": expected a whole number");
    check("skeleton.xml", slurp(nccl("ndv4-topo.xml")), "", "skeleton.xml:4: the GPUs (PCI class 0x03) have no <gpu> element");
    check("nic.xml", slurp(nccl("ndv4-topo.xml")), "--gpu a100 --boxes 2 --network rail",
          "nic.xml:5: the NIC (PCI class 0x02) has no <nic><net speed=...> element");
    check("gpu.xml", slurp(nccl("ndv4-topo.xml")), "--gpu a1000", "--gpu a1000: expected one of v100, a100");
}

namespace {

/// NCCL topology XML of `gpus` V100 under one CPU, each GPU's <nvlink> lines from `links(g)`.
std::string nvlink_xml(int gpus, const std::function<std::string(int)>& links) {
    std::string s = "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"x86_64\">\n";
    for (int g = 0; g < gpus; ++g)
        s += fmt::format("    <pci busid=\"0000:{:02x}:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\" link_width=\"16\">\n"
                         "      <gpu dev=\"{}\" sm=\"70\" rank=\"{}\">\n{}      </gpu>\n    </pci>\n", 0x10 + g, g, g, links(g));
    return s + "  </cpu>\n</system>\n";
}
std::string nvlink_to(int target, int count) {
    return fmt::format("        <nvlink target=\"0000:{:02x}:00.0\" count=\"{}\" tclass=\"0x030200\"/>\n", 0x10 + target, count);
}

}  // namespace

TEST_CASE("machine: GPU-to-GPU NVLinks in NCCL XML (a DGX-1 style mesh) read as NCCL connects them, no crash") {
    collsched::test::Scratch dir("machine_nvlink");
    // a 4-GPU ring of 2 NVLinks, both ways, as NCCL dumps it: a mesh of capacity-2 edges
    const std::string ring = dir.file("ring.xml", nvlink_xml(4, [](int g) { return nvlink_to((g + 1) % 4, 2) + nvlink_to((g + 3) % 4, 2); }));
    auto j = machine_json("--nccl-topo " + ring);
    CHECK(j["edges"] == nlohmann::json::parse("[[0, 1, 2], [0, 3, 2], [1, 2, 2], [2, 3, 2]]"));
    CHECK(j["bandwidth"] == "25 GB/s");
    // a link to itself: NCCL joins the GPU to itself, which no path uses; left out and said
    collsched::test::Run r;
    const std::string self = dir.file("self.xml", nvlink_xml(2, [](int g) { return nvlink_to(1 - g, 1) + nvlink_to(g, 1); }));
    j = machine_json("--nccl-topo " + self, &r);
    CHECK(j["edges"] == nlohmann::json::parse("[[0, 1, 1]]"));
    CHECK(r.err.find("GPU 0 lists 1 NVLink to itself") != std::string::npos);
    // counts that differ by direction: the smaller both ways, said
    const std::string uneven = dir.file("uneven.xml", nvlink_xml(2, [](int g) { return nvlink_to(1 - g, g == 0 ? 2 : 1); }));
    j = machine_json("--nccl-topo " + uneven, &r);
    CHECK(j["edges"] == nlohmann::json::parse("[[0, 1, 1]]"));
    CHECK(r.err.find("GPU 0 lists 2 NVLinks to GPU 1, GPU 1 lists 1 back: the box takes 1 both ways") != std::string::npos);
    // one way only: NCCL would use it one way, a machine's links carry both: refused with the place
    const std::string oneway = dir.file("oneway.xml", nvlink_xml(2, [](int g) { return g == 0 ? nvlink_to(1, 2) : std::string(); }));
    auto bad = run("machine --nccl-topo " + oneway);
    CHECK(bad.code == 2);
    CHECK(bad.out.empty());
    CHECK(bad.err.find("oneway.xml:5:9: <nvlink> from GPU 0 to GPU 1 is listed one way only") != std::string::npos);
}

TEST_CASE("machine: one-box mesh and PCIe families written with routers (their NICs lead nowhere), no crash") {
    for (const char* family : {"ndv2", "pcie", "dgx1", "amd4"}) {
        INFO(family);
        auto j = machine_json(std::string(family) + " --switches routers");
        CHECK(j["processors"] == (std::string(family) == "amd4" ? 4 : 8));
    }
}

TEST_CASE("machine: --nvls, NVLink SHARP per box: Blackwell's efficiency, routers, refused without NVLS") {
    auto b = machine_json("dgx-b200 --nvls");
    REQUIRE(b["switches"].size() == 1);
    CHECK(b["switches"][0]["efficiency"] == 0.74);
    CHECK(b["switches"][0]["router"] == "r1.0");
    CHECK(b["link_types"]["nvls"]["bandwidth"] == "50 GB/s");
    CHECK(b["groups"][0]["channels"].back() == nlohmann::json::array({0, "r1.0"}));
    auto r = machine_json("dgx-h100 --nvls --boxes 2 --network rail --switches routers");
    REQUIRE(r["switches"].size() == 2);  // the boxes' NVSwitch routers, not the rail switches
    CHECK(r["switches"][1]["router"] == "r1.1");
    CHECK(r["switches"][1]["efficiency"] == 0.85);
    auto bad = run("machine dgx-a100 --nvls");
    CHECK(bad.code == 2);
    CHECK(bad.out.empty());
    CHECK(bad.err.find("DGX A100 has no NVLink SHARP") != std::string::npos);
    auto none = run("machine dgx-h100");
    CHECK(none.out.find("\"switches\"") == std::string::npos);
}

TEST_CASE("machine: families, networks and faults") {
    auto ft = machine_json("dgx-h100 --boxes 32 --network fat-tree3:2 --boxes-per-leaf 4 --leaves-per-pod 2");
    CHECK(ft["routers"] == 32 + 8 + 4 + 1);  // NVSwitches, leaves, pod spines, core
    auto t = machine_json("mi300x --boxes 4 --network torus:2x2");
    CHECK(t["bandwidth"] == "64 GB/s");  // the compact layout: no groups, no routers, the box's speed at the top
    CHECK(t["link_types"]["ib"]["bandwidth"] == "400 Gbit/s");
    CHECK(!t.contains("groups"));
    // a NIC down: GPU 3's rail links and its NIC groups go
    auto down = machine_json("dgx-h100 --boxes 2 --network rail --nic-down 3");
    for (const auto& e : down["edges"]) CHECK(!(e[3] == "ib" && (e[0] == 3 || e[1] == 3)));
    for (const auto& g : down["groups"]) CHECK(g["name"] != "nic3.out");
    // a NIC given down twice is refused, as a NIC slowed twice is (it was accepted and written once)
    auto twice = run("machine dgx-h100 --boxes 2 --network rail --nic-down 3 --nic-down 3");
    CHECK(twice.code == 2);
    CHECK(twice.err == "collsched: error: --nic-down 3: the NIC is down already (given twice?)\n");
    CHECK(twice.out.empty());
    // a rail link joins two NICs: the second NIC of a link the first took down is not down already
    CHECK(run("machine dgx-h100 --boxes 2 --network rail --nic-down 0 --nic-down 8").code == 0);
    // a slow link: its own bandwidth, half its type's
    auto slow = machine_json("dgx-h100 --boxes 2 --network rail --slow-link 0-8:0.25");
    bool found = false;
    for (const auto& e : slow["edges"])
        if (e.is_object() && e["from"] == 0 && e["to"] == 8) {
            found = true;
            CHECK(e["bandwidth"] == "100 Gbit/s");
        }
    CHECK(found);
    auto cut = run("machine ndv2 --boxes 2 --network switch --nic-down 1");
    CHECK(cut.code == 2);
    CHECK(cut.err.find("the faults cut processor 8 off") != std::string::npos);
    CHECK(run("machine dgx-h100 --boxes 2").err.find("2 boxes need a --network") != std::string::npos);
    CHECK(run("machine dgx-h10 --boxes 2").err.find("did you mean 'dgx-h100'") != std::string::npos);
    CHECK(run("machine --list").out.find("gb200-nvl72") != std::string::npos);
}

TEST_CASE("command line: did-you-mean on options and collectives, --size and --sizes everywhere") {
    auto v = run("verify --sise 4 x.json");
    CHECK(v.code == 2);
    CHECK(v.err == "collsched: error: unknown option --sise; did you mean --size?\n");
    auto m = run("machine dgx-h100 --boxs 2");
    CHECK(m.err == "collsched: error: unknown option --boxs; did you mean --boxes?\n");
    // an option that a known one begins, or that begins one, four letters at least
    CHECK(run("convert x.json --format mscclpp --protocol LL").err == "collsched: error: unknown option --protocol; did you mean --proto?\n");
    CHECK(run("compile x.sched --outputfile y.json").err.find("did you mean --output?") != std::string::npos);
    auto z = run("verify --zzzzzz x.json");
    CHECK(z.err == "collsched: error: unknown option --zzzzzz (collsched verify --help lists the options)\n");
    auto j = run("verify --json --sise 4 x.json");
    CHECK(nlohmann::json::parse(j.out)["error"] == "unknown option --sise; did you mean --size?");
    auto c = run("optimize --topology ring:4 --collective all_reduce");
    CHECK(c.code == 2);
    CHECK(c.err.find("unknown collective (did you mean 'allreduce'?)") != std::string::npos);
    // compare took only --sizes, verify and simulate only --size: all take both (else "unknown option --size")
    collsched::test::Scratch dir("machine_sizes");
    const std::string table = dir.file("t.json");
    REQUIRE(run("compile " + source("schedules/bft/ebft_alltoall.sched") + " -D n=4 -o " + table).code == 0);
    auto cs = run(fmt::format("compare {} {} --size 1M", table, table));
    CHECK(cs.err.find("unknown option") == std::string::npos);
    CHECK(cs.code == 0);
    auto vs = run(fmt::format("verify {} --sizes 1M,2M", table));
    CHECK(vs.code == 0);
    CHECK(vs.out.find("2 MiB") != std::string::npos);
}

TEST_CASE("--topology replaces a shipped schedule's machine: compile, verify, simulate and compare take the user's file") {
    // schedules/nccl/ring_allgather_channels.sched states graph("../machines/multibox{k}x8.json");
    // a machine written by `collsched machine` takes its place without editing the file.
    collsched::test::Scratch dir("topology_override");
    const std::string sched = source("schedules/nccl/ring_allgather_channels.sched");
    const std::string mine = dir.file("mine.json");
    REQUIRE(run("machine dgx-a100 --boxes 4 --network switch --units gpu -o " + mine).code == 0);
    auto own = run(fmt::format("compile {} -D k=4", sched));
    auto given = run(fmt::format("compile {} -D k=4 --topology graph:{}", sched, source("schedules/machines/multibox4x8.json")));
    REQUIRE(own.code == 0);
    REQUIRE(given.code == 0);
    // the same machine: the same transfers (the topology's path is written as given)
    auto own_j = nlohmann::json::parse(own.out), given_j = nlohmann::json::parse(given.out);
    CHECK(given_j["topology"].get<std::string>().ends_with("schedules/machines/multibox4x8.json"));
    CHECK(own_j["transfers"] == given_j["transfers"]);
    // the user's own machine: it holds there too (the same shape: 4 boxes of 8 on one switch)
    auto v = run(fmt::format("verify {} -D k=4 --topology graph:{}", sched, mine));
    INFO(v.err);
    CHECK(v.code == 0);
    CHECK(v.out.starts_with("verdict: holds"));
    auto s = run(fmt::format("simulate {} -D k=4 --topology graph:{} --json", sched, mine));
    CHECK(s.code == 0);
    auto c = run(fmt::format("compare {} -D k=4 --topology graph:{} --sizes 1M", sched, mine));
    CHECK(c.code == 0);
    CHECK(c.out.find("mine.json") != std::string::npos);
    // a machine the schedule does not fit: the schedule's own errors, at its lines
    auto small = run(fmt::format("verify {} -D k=4 --topology torus:4x4", sched));
    CHECK(small.code == 2);
    CHECK(small.err.find("error[E040]: processor 17 does not exist (torus:4x4 has processors 0..15)") != std::string::npos);
    // a machine that cannot be read: E031 at the topology statement, naming the option
    auto missing = run(fmt::format("compile {} --topology graph:{}", sched, dir.file("none.json")));
    CHECK(missing.code == 2);
    CHECK(missing.out.empty());
    CHECK(missing.err.find("ring_allgather_channels.sched:17:1: error[E031]: --topology graph:") != std::string::npos);
    // tables name their machine: --topology is refused there
    auto table = run("verify " + source("tests/data/ebft4_alltoall.json") + " --topology ring:4");
    CHECK(table.code == 2);
    CHECK(table.err == "collsched: error: --topology applies to MSCCL-IR files and schedules only (tables name theirs)\n");
}

TEST_CASE("machine: every file `machine` writes is read back by `topo` (each family x option), refusals are one line and write nothing") {
    collsched::test::Scratch dir("machine_roundtrip");
    std::vector<std::string> families;
    std::istringstream list(run("machine --list").out);
    for (std::string line; std::getline(list, line);)
        if (line.starts_with("  ") && line.find("source:") == std::string::npos) families.push_back(line.substr(2, line.find(' ', 2) - 2));
    REQUIRE(families.size() >= 14);
    const char* options[] = {"", "--switches routers", "--units gpu", "--units 4", "--nvls", "--slow-link 0-1:0.5",
                             "--boxes 2 --network switch", "--boxes 2 --network rail", "--boxes 2 --network fat-tree",
                             "--boxes 2 --network fat-tree3", "--boxes 2 --network torus:2", "--boxes 2 --network rail --switches routers",
                             "--boxes 2 --network switch --sharp", "--boxes 2 --network rail --nvls --sharp",
                             "--boxes 2 --network switch --nic-down 0", "--boxes 2 --network rail --slow-link 0-1:0.5"};
    const std::string out = dir.file("m.json");
    int written = 0, refused = 0;
    auto round_trip = [&](const std::string& args) {
        std::filesystem::remove(out);
        auto w = run(fmt::format("machine {} -o {}", args, out));
        INFO("machine ", args, "\n", w.err);
        if (w.code == 2) {  // a refusal: one line, nothing written
            CHECK(std::count(w.err.begin(), w.err.end(), '\n') == 1);
            CHECK(!std::filesystem::exists(out));
            ++refused;
            return;
        }
        REQUIRE(w.code == 0);
        auto t = run("topo graph:" + out);
        INFO(t.err);
        CHECK(t.code == 0);
        ++written;
    };
    for (const std::string& family : families)
        for (const char* option : options) round_trip(family + " " + option);
    CHECK(written > 150);
    // boxes of one GPU, from NCCL's XML and from nvidia-smi
    round_trip("--nccl-topo " + dir.file("one.xml", nvlink_xml(1, [](int) { return std::string(); })));
    round_trip("--gpu h100 --nvidia-smi " + dir.file("one.txt", "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-23\t0\n"));
    const std::string one_nic = nvlink_xml(1, [](int) { return std::string(); })
                                    .insert(std::string_view("<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"x86_64\">\n").size(),
                                            "    <nic><net name=\"mlx5_0\" dev=\"0\" speed=\"400000\"/></nic>\n");
    round_trip("--boxes 2 --network switch --nccl-topo " + dir.file("one_nic.xml", one_nic));
    // --nic-gbps: a finite number from 1 to 100000 (nan, inf, 0 and negatives were taken)
    for (const char* bad : {"nan", "inf", "0", "-5", "1e9"}) {
        auto r = run(fmt::format("machine dgx-h100 --boxes 2 --network rail --nic-gbps {}", bad));
        INFO(bad, r.err);
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK(r.err.find(fmt::format("expected a number from 1 to 100000, not '{}'", bad)) != std::string::npos);
    }
}

TEST_CASE("messages: a usage error is one line, and a long path keeps its file:line:col") {
    for (const char* args : {"machine dgx1 --switches foo", "machine dgx1 --boxes x", "verify --timeout abc x.json", "machine dgx1 --nosuch"}) {
        auto r = run(args);
        INFO(args, "\n", r.err);
        CHECK(r.code == 2);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(r.err.find("Run with --help") == std::string::npos);
    }
    collsched::test::Scratch dir("machine_long_path");
    const std::filesystem::path deep = dir.dir / std::string(150, 'd');
    std::filesystem::create_directories(deep);
    const std::string file = (deep / "count.xml").string();
    std::ofstream(file) << "<system version=\"1\">\n<cpu>\n<pci busid=\"0000:01:00.0\" class=\"0x030200\">\n<gpu dev=\"0\" sm=\"90\">\n"
                           "  <nvlink target=\"0000:05:00.0\" tclass=\"0x068000\"/>\n</gpu></pci></cpu></system>\n";
    auto r = run("machine --nccl-topo " + file);
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find("/count.xml:5:3: <nvlink> has no count attribute") != std::string::npos);
}

TEST_CASE("machine: NCCL XML that NCCL's reader would take without a word is refused with its place (docs/errors.md)") {
    collsched::test::Scratch dir("machine_nccl_rules");
    const std::string out = dir.file("out.json");
    auto check = [&](const std::string& name, const std::string& text, const std::string& message) {
        auto r = run(fmt::format("machine --nccl-topo {} -o {}", dir.file(name, text), out));
        INFO(name, "\n", text, "\n", r.err);
        CHECK(r.code == 2);
        CHECK(r.err.find(message) != std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(!std::filesystem::exists(out));
    };
    auto two = [](int g) { return nvlink_to(1 - g, 2); };
    const std::string good = nvlink_xml(2, two);
    REQUIRE(run("machine --nccl-topo " + dir.file("good.xml", good)).code == 0);
    auto edit = [&](const std::string& from, const std::string& to) {
        std::string s = good;
        s.replace(s.find(from), from.size(), to);
        return s;
    };
    check("dup.xml", edit("sm=\"70\"", "sm=\"70\" sm=\"90\""), "dup.xml:4:31: malformed NCCL topology XML: attribute 'sm' of <gpu> given twice");
    check("sm.xml", edit("sm=\"70\"", "sm=\"-1\""), "sm.xml:4:7: <gpu> sm=\"-1\": expected the CUDA compute capability x 10");
    check("devs.xml", edit("dev=\"1\"", "dev=\"0\""), "devs.xml:9:7: <gpu> dev=\"0\" is also the GPU's at line 4");
    check("neg.xml", edit("dev=\"1\"", "dev=\"-1\""), "neg.xml:9:7: <gpu> dev=\"-1\": expected a CUDA device number, 0 to 2147483647");
    check("big.xml", edit("dev=\"1\"", "dev=\"1099511627776\""), "<gpu> dev=\"1099511627776\": expected a CUDA device number");
    check("target.xml", edit("target=\"0000:11:00.0\" ", ""), "target.xml:5:9: <nvlink> has no target attribute");
    check("nul.xml", edit("rank=\"0\"", "rank=\"0&#0;\""), "nul.xml:4:35: malformed NCCL topology XML: character reference &#0; is no XML character");
}

TEST_CASE("machine: a refusal after the reader's notes is one line on stderr (the notes wait for the machine)") {
    // Azure's NC A100 v4 file lists each GPU's NVLink to itself (left out, and said); a NIC that is
    // not there is refused when the machine is built: the notes used to come first, three lines
    auto r = run("machine --nccl-topo " + nccl("ncv4-topo.xml") + " --nic-down 7");
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.rfind("collsched: error: ", 0) == 0);
    // written, the notes are still said
    auto ok = run("machine --nccl-topo " + nccl("ncv4-topo.xml"));
    CHECK(ok.code == 0);
    CHECK(ok.err.find("ncv4-topo.xml") != std::string::npos);
}

TEST_CASE("machine: one box, one set of speeds: the DGX H100 family and its NCCL XML dump agree, and so do their answers") {
    // peak rates in the machine whichever way it is described; the executor model holds the achievable share
    const auto fam = machine_json("dgx-h100 --boxes 2 --network rail");
    const auto xml = machine_json("--nccl-topo " + nccl("dgx-h100-dump.xml") + " --boxes 2 --network rail");
    auto speeds = [](const nlohmann::json& m) {
        std::vector<std::string> v;
        for (const auto& [name, t] : m["link_types"].items()) v.push_back(t["bandwidth"].get<std::string>() + " " + t["alpha"].get<std::string>());
        std::sort(v.begin(), v.end());
        return v;
    };
    CHECK(speeds(fam) == speeds(xml));
    collsched::test::Scratch dir("machine_same_box");
    const std::string a = dir.file("fam.json", fam.dump()), b = dir.file("xml.json", xml.dump());
    auto answer = [](const std::string& f) {
        const auto r = collsched::test::run("optimize --topology graph:" + f + " --collective allreduce --size 1M,1G --executor nccl --json --timeout 60");
        const auto j = nlohmann::json::parse(r.out);
        return std::vector<double>{j["sizes"][0]["predicted_time_s"].get<double>(), j["sizes"][1]["predicted_time_s"].get<double>()};
    };
    const auto x = answer(a), y = answer(b);
    CHECK(x[0] == doctest::Approx(y[0]).epsilon(1e-9));
    CHECK(x[1] == doctest::Approx(y[1]).epsilon(1e-9));
}
