// NCCL's own algorithms as NCCL graph files (docs/exports.md, "NCCL's own rings and trees as graph
// files"): `convert nccl:ring|nccl:tree|nccl:* --topology M --format nccl-graph` on the catalog's
// multi-box machines, read back by collsched's checker (verify GRAPH.xml), broken tree graphs
// refused, the command's exit codes, and (label nccl_graph_parser, where an NCCL source tree is
// configured) NCCL's own xml.cc and search.cc reader on every one of them.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>

#include <fmt/format.h>

#include "cli_run.hpp"

using collsched::test::run;
using collsched::test::run_shell;
using collsched::test::Scratch;
using collsched::test::source;

namespace {

std::string own_machine(const std::string& name) { return "graph:" + source("schedules/machines/" + name + ".json"); }

/// NCCL's channels for `algorithm` on the machine, written to `file`; the file's text.
std::string own_graph(const std::string& algorithm, const std::string& machine, const std::string& file) {
    auto r = run(fmt::format("convert 'nccl:{}' --topology {} --format nccl-graph -o {}", algorithm, own_machine(machine), file));
    INFO(machine, " nccl:", algorithm, ": ", r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.empty());
    std::string text;
    std::getline(std::ifstream(file), text, '\0');
    return text;
}

int occurrences(const std::string& text, const std::string& what) {
    int n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

std::string replaced_once(std::string s, const std::string& from, const std::string& to) {
    const auto at = s.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    return s.replace(at, from.size(), to);
}

/// The catalog's machines of several boxes (schedules/machines/; dgx1x2 has no graph file, below).
const char* const own_multibox[] = {"boxfattree8x8", "h100nvls2x8",  "h100nvls4x8", "h100nvls8x8",  "h100nvls16x8", "h100rail2x8",
                                    "h100rail4x8",   "h100rail8x8",  "h100rail16x8", "h100sharp2x8", "h100sharp4x8", "h100sharp8x8",
                                    "h100sharp16x8", "multibox2x8",  "multibox4x8",  "multibox8x8",  "multibox16x8", "ndv2x2",
                                    "ndv2x4",        "rail2x8",      "rail4x8",      "rail8x8",      "rail16x8"};

/// What NCCL's search.cc reader holds after reading `xml` (tests/nccl_graph_parser/load_graphs.cpp
/// --gpus): per graph its header, per channel its nets and GPUs, as the file states them.
std::string expected_reading(const std::string& xml) {
    std::string out;
    const std::regex graph(R"#(<graph id="(\d)" pattern="(\d)" crossnic="(\d)" nchannels="(\d+)"[^>]*samechannels="(\d)">)#");
    const std::regex channel(R"#(<channel>((?:\s*<(?:net|gpu) dev="[0-9a-f]+"/>)*)\s*</channel>)#");
    const std::regex device(R"#(<(net|gpu) dev="([0-9a-f]+)"/>)#");
    for (std::sregex_iterator g(xml.begin(), xml.end(), graph), end; g != end; ++g) {
        const std::smatch& m = *g;
        out += fmt::format("search.cc graph id={} pattern={} crossnic={} nchannels={} samechannels={} channels read={}\n", m.str(1), m.str(2),
                           m.str(3), m.str(4), m.str(5), m.str(4));
        const std::size_t from = std::size_t(m.position(0)), to = xml.find("</graph>", from);
        const std::string body = xml.substr(from, to - from);
        int c = 0;
        for (std::sregex_iterator ch(body.begin(), body.end(), channel); ch != end; ++ch, ++c) {
            const std::string devs = (*ch).str(1);
            std::vector<std::string> nets, gpus;
            for (std::sregex_iterator d(devs.begin(), devs.end(), device); d != end; ++d)
                ((*d).str(1) == "net" ? nets : gpus).push_back(std::to_string(std::stol((*d).str(2), nullptr, 16)));
            REQUIRE(nets.size() == 2);
            out += fmt::format("  channel {}: net {} | gpus", c, nets[0]);
            for (const std::string& gpu : gpus) out += " " + gpu;
            out += fmt::format(" | net {}\n", nets[1]);
        }
    }
    return out;
}

}  // namespace

TEST_CASE("convert nccl:ring and nccl:tree: NCCL's channels on a rail machine, each entering and leaving a box by one NIC") {
    Scratch dir("nccl_own");
    const std::string ring = own_graph("ring", "h100rail2x8", dir.file("ring.xml"));
    CHECK(occurrences(ring, "<graph ") == 1);
    CHECK(ring.find("<graph id=\"0\" pattern=\"4\" crossnic=\"0\" nchannels=\"8\"") != std::string::npos);
    // channel 3 starts at GPU 3 (NIC 3), visits the box in NVSwitch order, and leaves by NIC 3
    std::string ch3 = "    <channel>\n      <net dev=\"3\"/>\n";
    for (int g : {3, 4, 5, 6, 7, 0, 1, 2}) ch3 += fmt::format("      <gpu dev=\"{}\"/>\n", g);
    ch3 += "      <net dev=\"3\"/>\n    </channel>\n";
    CHECK(ring.find(ch3) != std::string::npos);
    const std::string tree = own_graph("tree", "h100rail2x8", dir.file("tree.xml"));
    CHECK(occurrences(tree, "<graph ") == 1);
    CHECK(tree.find("<graph id=\"1\" pattern=\"3\" crossnic=\"0\" nchannels=\"8\"") != std::string::npos);
    CHECK(tree.find(ch3) != std::string::npos);
    const std::string both = own_graph("*", "h100rail2x8", dir.file("both.xml"));
    CHECK(both.find("<graph id=\"0\" pattern=\"4\"") < both.find("<graph id=\"1\" pattern=\"3\""));
    // NDv2: one NIC per box (net 0), NCCL's one ring of its search over the cube mesh
    const std::string ndv2 = own_graph("tree", "ndv2x2", dir.file("ndv2.xml"));
    CHECK(occurrences(ndv2, "<channel>") == 1);
    CHECK(occurrences(ndv2, "<net dev=\"0\"/>") == 2);
}

TEST_CASE("convert nccl:ring and nccl:tree: the files of the catalog's multi-box machines hold in verify GRAPH.xml") {
    Scratch dir("nccl_own_verify");
    // one machine of each family (all of them: the nccl_graph_parser test)
    for (const char* m : {"boxfattree8x8", "h100nvls4x8", "h100sharp2x8", "multibox16x8", "ndv2x4", "rail8x8"})
        for (const char* a : {"ring", "tree"}) {
            const std::string f = dir.file(fmt::format("{}.{}.xml", m, a));
            own_graph(a, m, f);
            auto v = run(fmt::format("verify {} --topology {}", f, own_machine(m)));
            INFO(m, " ", a, "\n", v.out, v.err);
            CHECK(v.code == 0);
            CHECK(v.out.starts_with("verdict: holds"));
            CHECK(v.out.find(std::string(a) == "ring" ? "  rings  holds\n  trees  not given" : "  rings  not given\n  trees  holds") !=
                  std::string::npos);
        }
}

TEST_CASE("verify GRAPH.xml: a broken tree graph is refused, the tree graph NCCL's trees run holds") {
    Scratch dir("nccl_own_broken");
    const std::string tree = own_graph("tree", "h100rail2x8", dir.file("tree.xml"));
    own_graph("tree", "ndv2x2", dir.file("ndv2.xml"));
    auto refused = [&](const std::string& name, const std::string& text, const std::string& machine, const std::string& want) {
        auto r = run(fmt::format("verify {} --topology {}", dir.file(name, text), own_machine(machine)));
        INFO(name, "\n", r.out, r.err);
        CHECK(r.code == 1);
        CHECK(r.out.find("  trees  violated") != std::string::npos);
        CHECK(r.out.find(want) != std::string::npos);
    };
    refused("twice.xml", replaced_once(tree, "<gpu dev=\"5\"/>", "<gpu dev=\"3\"/>"), "h100rail2x8",
            "graph 1 (trees) channel 0: GPU 3 twice (positions 3 and 5), GPU 5 never: the chain is not a cycle through every rank");
    refused("net.xml", replaced_once(tree, "<net dev=\"0\"/>", "<net dev=\"8\"/>"), "h100rail2x8",
            "<net dev=\"8\">: box 0 has 8 NICs (net 0 to 7): NCCL finds no such net");
    refused("nonet.xml", replaced_once(tree, "      <net dev=\"0\"/>\n", ""), "h100rail2x8", "graph 1 (trees) channel 0: 1 <net> element");
    // on the DGX-1's cube mesh GPU 3 has no NVLink to GPU 4: a chain 0, 1, ..., 7 has a hop without a link
    const std::string dgx1 = own_graph("tree", "dgx1", dir.file("dgx1.xml"));
    std::string chain = "<channel>\n";
    for (int g = 0; g < 8; ++g) chain += fmt::format("      <gpu dev=\"{}\"/>\n", g);
    const std::size_t first = dgx1.find("<channel>"), end = dgx1.find("    </channel>", first);
    const std::string straight = dgx1.substr(0, first) + chain + dgx1.substr(end);
    auto s = run(fmt::format("verify {} --topology {}", dir.file("straight.xml", straight), own_machine("dgx1")));
    INFO(straight, s.out);
    CHECK(s.code == 1);
    CHECK(s.out.find("graph 1 (trees) channel 0: processor 3 (box 0, GPU 3) -> processor 4 (box 0, GPU 4) (down the chain): the machine "
                     "has no link between them (nor a path through switches alone) [link]") != std::string::npos);
    // the written ones hold
    CHECK(run(fmt::format("verify {} --topology {}", dir.file("tree.xml"), own_machine("h100rail2x8"))).code == 0);
    CHECK(run(fmt::format("verify {} --topology {}", dir.file("ndv2.xml"), own_machine("ndv2x2"))).code == 0);
    CHECK(run(fmt::format("verify {} --topology {}", dir.file("dgx1.xml"), own_machine("dgx1"))).code == 0);
}

TEST_CASE("convert nccl:NAME: exit 2 and nothing written for a name without a graph, no machine, another format, and on dgx1x2 "
          "NCCL's tree enters every box at the GPU of its net c and holds") {
    Scratch dir("nccl_own_bad");
    const std::string out = dir.file("x.xml");
    struct Case {
        std::string args, want;
    };
    const Case cases[] = {
        {fmt::format("convert nccl:pat --topology {} -o {}", own_machine("h100rail2x8"), out),
         "nccl:pat: NCCL's graph files hold its rings (graph 0) and trees (graph 1): nccl:ring, nccl:tree, or nccl:* for both"},
        {fmt::format("convert nccl:ring -o {}", out), "nccl:ring: NCCL's algorithms are generated for a machine; give it with --topology"},
        {fmt::format("convert nccl:ring --topology {} --format json -o {}", own_machine("h100rail2x8"), out),
         "nccl:ring: NCCL's algorithms convert to --format nccl-graph"},
    };
    for (const Case& c : cases) {
        auto r = run(c.args);
        INFO(c.args, "\n", r.err);
        CHECK(r.code == 2);
        CHECK(r.err.find(c.want) != std::string::npos);
        CHECK(!std::ifstream(out).good());
    }
    // the two DGX-1 are joined GPU to GPU: GPUs 0, 3, 4 and 7 have a link out of their box, nets 0 to 3 in PCI order, and
    // NCCL's search starts channel c at net c (search.cc:736), so every chain's first GPU has a NIC (it started at GPU c,
    // which for c = 1, 2 has none, and no file was written)
    auto r = run(fmt::format("convert nccl:tree --topology {} -o {}", own_machine("dgx1x2"), out));
    INFO(r.err);
    REQUIRE(r.code == 0);
    std::ifstream in(out);
    const std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const char* first : {"<net dev=\"0\"/>\n      <gpu dev=\"0\"/>", "<net dev=\"1\"/>\n      <gpu dev=\"3\"/>", "<net dev=\"2\"/>\n      <gpu dev=\"4\"/>",
                              "<net dev=\"3\"/>\n      <gpu dev=\"7\"/>"})
        CHECK(xml.find(first) != std::string::npos);
    auto v = run(fmt::format("verify {} --topology {}", out, own_machine("dgx1x2")));
    INFO(v.out);
    CHECK(v.code == 0);
    CHECK(v.out.find("trees  holds") != std::string::npos);
}

TEST_CASE("real parsers: NCCL's graph reader loads NCCL's rings and trees of every catalog multi-box machine" *
          doctest::test_suite("real_parsers") * doctest::skip()) {
    const char* loader = std::getenv("COLLSCHED_NCCL_GRAPH_LOADER");
    REQUIRE_MESSAGE(loader != nullptr, "COLLSCHED_NCCL_GRAPH_LOADER must name the loader (ctest sets it where NCCL's source is present)");
    Scratch dir("nccl_own_parser");
    for (const char* m : own_multibox)
        for (const char* a : {"ring", "tree", "*"}) {
            const std::string f = dir.file(fmt::format("{}.{}.xml", m, a[0] == '*' ? "all" : a));
            const std::string xml = own_graph(a, m, f);
            std::smatch gpus;
            REQUIRE(std::regex_search(xml, gpus, std::regex(R"#(<channel>\n((?:.*\n)*?)\s*</channel>)#")));
            const int per_box = occurrences(gpus.str(1), "<gpu ");
            auto r = run_shell(fmt::format("'{}' --gpus {} '{}'", loader, per_box, f));
            INFO(m, " nccl:", a, "\n", r.out, r.err);
            CHECK(r.code == 0);
            // search.cc's ncclTopoGetGraphFromXml read the graphs, channels, GPUs and nets written
            const std::string want = expected_reading(xml);
            CHECK(occurrences(want, "search.cc graph") == (a[0] == '*' ? 2 : 1));
            CHECK(r.out.find(want) != std::string::npos);
            CHECK(occurrences(r.out, "search.cc graph") == occurrences(want, "search.cc graph"));
            CHECK(run(fmt::format("verify {} --topology {}", f, own_machine(m))).code == 0);
        }
    // the graph file of a `collsched deploy` folder, as search.cc reads it
    const std::string folder = dir.file("deploy");
    auto d = run(fmt::format("deploy --topology {} -o {}", own_machine("h100rail4x8"), folder));
    REQUIRE_MESSAGE(d.code == 0, d.err);
    const std::string deployed = folder + "/nccl_graphs.xml";
    std::ifstream in(deployed);
    const std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto dr = run_shell(fmt::format("'{}' --gpus 8 '{}'", loader, deployed));
    INFO(dr.out, dr.err);
    CHECK(dr.code == 0);
    CHECK(occurrences(dr.out, "search.cc graph") == occurrences(xml, "<graph "));
    CHECK(dr.out.find(expected_reading(xml)) != std::string::npos);
    // search.cc refuses a GPU the node does not have ("XML Import Channel : dev 8 not found")
    const std::string tree = own_graph("tree", "h100rail2x8", dir.file("tree.xml"));
    const std::string bad = dir.file("bad.xml", replaced_once(tree, "<gpu dev=\"5\"/>", "<gpu dev=\"8\"/>"));
    auto r = run_shell(fmt::format("'{}' --gpus 8 '{}'", loader, bad));
    CHECK(r.code == 1);
    CHECK(r.err.find("XML Import Channel : dev 8 not found") != std::string::npos);
}
