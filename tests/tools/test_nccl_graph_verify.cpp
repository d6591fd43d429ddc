// NCCL graph files in (issue 45, item 3; docs/exports.md, "Reading an NCCL graph file"): `verify
// GRAPH.xml --topology M` on the writer's own files (the round trip), on hand-broken ones, on
// malformed ones, and the time of NCCL's rings on the file's rings against the schedule's own.
#include <doctest/doctest.h>

#include "tests/approx.hpp"

#include <fstream>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_run.hpp"

using collsched::test::run;
using collsched::test::Scratch;
using collsched::test::source;

namespace {

std::string machine_file(const std::string& name) { return "graph:" + source("schedules/machines/" + name); }

/// The line of the time table at 256 MiB (the asynchronous and synchronous figures).
std::string time_row(const std::string& out) {
    std::smatch m;
    REQUIRE_MESSAGE(std::regex_search(out, m, std::regex(R"(\n  256 MiB[^\n]*)")), out);
    return m[0];
}

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
    const auto at = s.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    return s.replace(at, from.size(), to);
}

struct Shipped {
    const char* schedule;
    const char* machine;
    const char* collective;
};
/// NCCL's rings as schedules and the machines they are written for.
const Shipped shipped[] = {{"ring_allgather_channels", "multibox2x8.json", "allgather"},
                           {"ring_allreduce_channels", "multibox2x8.json", "allreduce"},
                           {"ring_allgather", "multibox2x8.json", "allgather"},
                           {"ring_allreduce", "multibox2x8.json", "allreduce"},
                           {"ring_allgather_dgx1", "dgx1.json", "allgather"},
                           {"ring_allgather_dgx2", "dgx2.json", "allgather"},
                           {"ring_allgather_dgx_a100", "dgx_a100.json", "allgather"}};

}  // namespace

TEST_CASE("verify GRAPH.xml: every shipped NCCL ring exports, verifies on its machine, and predicts the schedule's own time") {
    Scratch dir("nccl_graph_in");
    for (const Shipped& s : shipped) {
        const std::string sched = source(fmt::format("schedules/nccl/{}.sched", s.schedule)), xml = dir.file(std::string(s.schedule) + ".xml");
        REQUIRE(run(fmt::format("convert {} --format nccl-graph -o {}", sched, xml)).code == 0);
        auto v = run(fmt::format("verify {} --topology {} --collective {} --size 256M", xml, machine_file(s.machine), s.collective));
        INFO(s.schedule, "\n", v.out, v.err);
        CHECK(v.code == 0);
        CHECK(v.out.starts_with("verdict: holds"));
        CHECK(v.out.find("  rings  holds\n  trees  holds\n") != std::string::npos);
        auto own = run(fmt::format("verify {} --size 256M", sched));
        REQUIRE(own.code == 0);
        CHECK(time_row(v.out) == time_row(own.out));
    }
}

TEST_CASE("verify GRAPH.xml: optimize's 12 rings on a DGX A100 round-trip, 4 rings on the busiest channel") {
    Scratch dir("nccl_graph_in_opt");
    const std::string table = dir.file("rings.json"), xml = dir.file("rings.xml");
    auto o = run(fmt::format("optimize --topology {} --collective allgather --chunks 12 --timeout 5 -o {}", machine_file("dgx_a100.json"), table));
    REQUIRE(o.code == 0);
    REQUIRE(run(fmt::format("convert {} --format nccl-graph -o {}", table, xml)).code == 0);
    auto v = run(fmt::format("verify {} --topology {} --collective allgather --size 256M", xml, machine_file("dgx_a100.json")));
    INFO(v.out, v.err);
    CHECK(v.code == 0);
    CHECK(v.out.find("12 ring channels run") != std::string::npos);
    CHECK(v.out.find("a ring gets 25 GB/s inside a box (the file says speedintra 25 GB/s)") != std::string::npos);
    CHECK(time_row(v.out) == time_row(run(fmt::format("verify {} --size 256M", table)).out));
    // --json: the same verdict, the load, and the time
    auto j = run(fmt::format("verify {} --topology {} --collective allgather --size 256M --json", xml, machine_file("dgx_a100.json")));
    REQUIRE(j.code == 0);
    const auto doc = nlohmann::json::parse(j.out);
    CHECK(doc["verdict"] == "holds");
    CHECK(doc["format"] == "nccl-graph");
    CHECK(doc["channels_run"] == 12);
    CHECK(doc["properties"]["rings"] == "holds");
    CHECK(doc["load"]["ring_intra_Bps"].get<double>() == collsched::test::rel(25e9));
    CHECK(doc["time"]["sizes"][0]["asynchronous_s"].get<double>() > 0);
}

TEST_CASE("verify GRAPH.xml: a GPU twice, a hop without a link, a net the box lacks, a crossing off the rails, channels not given") {
    Scratch dir("nccl_graph_in_bad");
    const std::string one = dir.file("one.xml"), dgx1 = dir.file("dgx1.xml");
    REQUIRE(run(fmt::format("convert {} --format nccl-graph -o {}", source("schedules/nccl/ring_allgather.sched"), one)).code == 0);
    REQUIRE(run(fmt::format("convert {} --format nccl-graph -o {}", source("schedules/nccl/ring_allgather_dgx1.sched"), dgx1)).code == 0);
    std::string ring, cube;
    std::getline(std::ifstream(one), ring, '\0');
    std::getline(std::ifstream(dgx1), cube, '\0');
    auto check = [&](const std::string& name, const std::string& text, const std::string& topo, const std::string& want) {
        const std::string f = dir.file(name, text);
        auto r = run(fmt::format("verify {} --topology {} --size 1M", f, topo));
        INFO(name, "\n", r.out, r.err);
        CHECK(r.code == 1);
        CHECK(r.out.starts_with("verdict: violated"));
        CHECK(r.out.find(want) != std::string::npos);
        CHECK(r.out.find("predicted time: not computed (the file does not hold)") != std::string::npos);
    };
    // GPU 5 replaced by a second GPU 3, on the <gpu> element's line and column
    check("twice.xml", replace_once(ring, "<gpu dev=\"5\"/>", "<gpu dev=\"3\"/>"), machine_file("multibox2x8.json"),
          "twice.xml:10:7: graph 0 (rings) channel 0: GPU 3 twice (positions 3 and 5), GPU 5 never: the ring is not a cycle through "
          "every rank [ring]");
    // on the DGX-1's cube mesh GPU 2 has no NVLink to GPU 7
    check("nolink.xml", replace_once(cube, "<gpu dev=\"3\"/>\n      <gpu dev=\"7\"/>", "<gpu dev=\"7\"/>\n      <gpu dev=\"3\"/>"),
          machine_file("dgx1.json"), "processor 2 (box 0, GPU 2) -> processor 7 (box 0, GPU 7): the machine has no link between them (nor a path through "
          "switches alone) [link]");
    check("net.xml", replace_once(ring, "<net dev=\"7\"/>", "<net dev=\"9\"/>"), machine_file("multibox2x8.json"),
          "<net dev=\"9\">: box 0 has 8 NICs (net 0 to 7): NCCL finds no such net");
    // the ring leaves box 0 by GPU 7's NIC into box 1 by GPU 0's: no rail joins them
    check("rails.xml", ring, machine_file("h100rail2x8.json"),
          "net 7 of box 0 (beside processor 7) -> net 0 of box 1 (beside processor 8): the machine has no path between them through "
          "switches alone [link]");
    // both graphs (NCCL runs as many rings as the tree graph has channels, when fewer)
    check("nchannels.xml", replace_once(replace_once(ring, "nchannels=\"1\"", "nchannels=\"2\""), "nchannels=\"1\"", "nchannels=\"2\""),
          machine_file("multibox2x8.json"),
          "graph 0 (rings): nchannels=\"2\" and 1 <channel> element: NCCL runs channels 1 to 1 with GPU lists it never read");
    check("short.xml", replace_once(ring, "      <gpu dev=\"5\"/>\n", ""), machine_file("multibox2x8.json"),
          "7 <gpu> elements, and a box has 8 GPUs");
    check("nonet.xml", replace_once(ring, "      <net dev=\"7\"/>\n", ""), machine_file("multibox2x8.json"), "1 <net> element: NCCL takes");
    check("dev.xml", replace_once(ring, "<gpu dev=\"5\"/>", "<gpu dev=\"a\"/>"), machine_file("multibox2x8.json"),
          "<gpu dev=\"a\">: a box of this machine has GPUs 0 to 7; NCCL stops with \"XML Import Channel : dev 10 not found\"");
    // the shipped file itself holds there (the checks above fail for what was changed)
    CHECK(run(fmt::format("verify {} --topology {}", one, machine_file("multibox2x8.json"))).code == 0);
}

TEST_CASE("verify GRAPH.xml: what NCCL cannot load is exit 2 with file:line:col and nothing on standard output") {
    Scratch dir("nccl_graph_in_malformed");
    const std::string head = "<graphs version=\"1\">\n  <graph id=\"0\" pattern=\"4\" crossnic=\"0\" nchannels=\"1\" speedintra=\"20\" "
                             "speedinter=\"20\" latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"LOC\" samechannels=\"0\">\n";
    const std::string body = "    <channel>\n      <gpu dev=\"0\"/>\n      <gpu dev=\"1\"/>\n    </channel>\n  </graph>\n</graphs>\n";
    const std::string ring4 = machine_file("dgx_a100.json");
    struct Case {
        const char* name;
        std::string text, want;
    };
    const Case cases[] = {
        {"open.xml", head + "    <channel>\n      <gpu dev=\"0\">\n    </channel>\n  </graph>\n</graphs>\n",
         "open.xml:5:14: malformed NCCL graph XML: </channel> closes <gpu>"},
        {"version.xml", replace_once(head + body, "version=\"1\"", "version=\"2\""), "version.xml:1:1: version=\"2\": NCCL reads graph files of version 1 only"},
        {"type.xml", replace_once(head + body, "typeintra=\"NVL\"", "typeintra=\"NVLINK\""), "type.xml:2:3: <graph> typeintra=\"NVLINK\": NCCL knows LOC"},
        {"pattern.xml", replace_once(head + body, "pattern=\"4\"", "pattern=\"9\""), "pattern.xml:2:3: pattern=\"9\": NCCL_TOPO_PATTERN_*"},
        {"zero.xml", replace_once(head + body, "nchannels=\"1\"", "nchannels=\"0\""), "zero.xml:2:3: nchannels=\"0\": NCCL uses a graph of 1 to 32"},
        {"many.xml", replace_once(head + body, "nchannels=\"1\"", "nchannels=\"33\""), "nchannels=\"33\""},
        {"hex.xml", replace_once(head + body, "<gpu dev=\"1\"/>", "<gpu dev=\"1g\"/>"), "hex.xml:5:7: <gpu> dev=\"1g\": expected a hexadecimal number"},
        {"missing.xml", replace_once(head + body, " samechannels=\"0\"", ""), "missing.xml:2:3: <graph> has no samechannels attribute"},
        {"root.xml", "<graph id=\"0\"/>\n", "root.xml:1:1"},  // not <graphs>: read as MSCCL-IR, which refuses it
        {"empty.xml", "<graphs version=\"1\">\n</graphs>\n", "empty.xml:1:1: no <graph> element"},
    };
    for (const Case& c : cases) {
        const std::string f = dir.file(c.name, c.text);
        auto r = run(fmt::format("verify {} --topology {}", f, ring4));
        INFO(std::string(c.name), "\n", r.out, r.err);
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK(r.err.find(c.want) != std::string::npos);
    }
    // no machine, and options that are not for graph files
    const std::string ok = dir.file("ok.xml", head + body);
    auto r = run(fmt::format("verify {}", ok));
    CHECK(r.code == 2);
    CHECK(r.err.find("an NCCL graph file names no machine; give it with --topology") != std::string::npos);
    CHECK(run(fmt::format("verify {} --topology {} --collective alltoall --size 1M", ok, machine_file("dgx1.json"))).code == 2);
    CHECK(run(fmt::format("verify {} --collective allreduce", source("schedules/nccl/ring_allgather.sched"))).code == 2);
}

TEST_CASE("verify GRAPH.xml: NCCL's tolerances are notes, and the tree graph's links between boxes are checked") {
    Scratch dir("nccl_graph_in_notes");
    const std::string xml = dir.file("ch.xml");
    REQUIRE(run(fmt::format("convert {} --format nccl-graph -o {}", source("schedules/nccl/ring_allgather_channels.sched"), xml)).code == 0);
    std::string text;
    std::getline(std::ifstream(xml), text, '\0');
    // a tree graph of fewer channels: NCCL runs that many rings
    const std::string tree = text.substr(text.find("  <graph id=\"1\""));
    const std::string fewer = dir.file("fewer.xml", replace_once(text, tree.substr(0, tree.find('\n')),
                                                                 replace_once(tree.substr(0, tree.find('\n')), "nchannels=\"8\"", "nchannels=\"4\"")));
    auto r = run(fmt::format("verify {} --topology {} --size 256M --collective allgather", fewer, machine_file("multibox2x8.json")));
    INFO(r.out, r.err);
    CHECK(r.code == 0);
    CHECK(r.out.find("4 ring channels run") != std::string::npos);
    CHECK(r.out.find("NCCL runs 4 (init.cc:1280") != std::string::npos);
    CHECK(r.out.find("on the file's 4 rings") != std::string::npos);
    // speeds above what the links give are a note, not a finding
    const std::string fast = dir.file("fast.xml", replace_once(text, "speedinter=\"25\"", "speedinter=\"48\""));
    auto f = run(fmt::format("verify {} --topology {}", fast, machine_file("multibox2x8.json")));
    CHECK(f.code == 0);
    CHECK(f.out.find("speedinter=\"48\": a ring gets at most 25 GB/s on this machine's links between boxes") != std::string::npos);
    // on a rail machine the tree's edges between boxes leave by the chain's first GPU's NIC and
    // arrive at the parent's: channel c's chain starts at GPU c + 1 in every box, so they are rails
    auto rails = run(fmt::format("verify {} --topology {}", xml, machine_file("h100rail2x8.json")));
    CHECK(rails.code == 1);
    CHECK(rails.out.find("  trees  holds") != std::string::npos);
    CHECK(rails.out.find("  rings  violated (8 findings)") != std::string::npos);
}

TEST_CASE("verify GRAPH.xml: Azure's NC A100 v4 graph file holds on the machine read from Azure's topology file (boxes as the file says)") {
    // tests/data/nccl_topo/ncv4-*.xml: Azure/azhpc-images topology/, the files NCCL loads on NC A100 v4 (4 A100 on PCIe)
    Scratch dir("ncv4");
    const std::string topo = source("tests/data/nccl_topo/ncv4-topo.xml"), graph = source("tests/data/nccl_topo/ncv4-graph.xml");
    for (const char* layout : {"", "--switches routers"}) {
        INFO(layout);
        const std::string m = dir.file("ncv4.json");
        auto w = run(fmt::format("machine --nccl-topo {} {} -o {}", topo, layout, m));
        REQUIRE(w.code == 0);
        CHECK(w.err.find("GPU 0 lists 12 NVLinks to itself") != std::string::npos);
        auto r = run(fmt::format("verify {} --topology graph:{}", graph, m));
        INFO(r.out, r.err);
        CHECK(r.code == 0);
        CHECK(r.out.starts_with(fmt::format("verdict: holds (NCCL graph file {} on graph:{}: 1 box of 4 GPUs, 2 ring channels run)", graph, m)));
        CHECK(r.out.find("does not say its boxes") == std::string::npos);
    }
    // two such boxes: 2 boxes of 4 GPUs, as the file says (the speeds alone split them into 8 boxes of 1)
    const std::string two = dir.file("ncv4x2.json");
    REQUIRE(run(fmt::format("machine --nccl-topo {} --boxes 2 --network switch -o {}", topo, two)).code == 0);
    auto r2 = run(fmt::format("verify {} --topology graph:{}", graph, two));
    CHECK(r2.out.find("2 boxes of 4 GPUs") != std::string::npos);
    // a machine that does not say its boxes: inferred, and the report says so
    const std::string plain = dir.file("plain.json", "{\"processors\": 4, \"edges\": [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]}\n");
    auto old = run(fmt::format("verify {} --topology graph:{}", graph, plain));
    CHECK(old.out.starts_with("verdict: holds"));
    CHECK(old.out.find("the machine file does not say its boxes (no \"boxes\")") != std::string::npos);
    // "boxes" must divide the processors
    const std::string bad = dir.file("bad.json", "{\"processors\": 4, \"boxes\": 3, \"edges\": [[0, 1], [1, 2], [2, 3]]}\n");
    auto b = run(fmt::format("topo graph:{}", bad));
    CHECK(b.code == 2);
    CHECK(b.err.find("bad.json:1:28: \"boxes\" is 3: expected a whole number that divides the 4 processors") != std::string::npos);
}
