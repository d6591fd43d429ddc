// Pictures: the SVG timeline is well-formed XML with one cell per (row, step), coloured by load
// against capacity (checked against an independent count), renders with rsvg-convert when it is
// installed, stays a readable size for n = 64; the HTML wraps it with hover titles; DOT draws the
// topology with capacities and traffic.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <fmt/format.h>

#include "compiler/interop/export_svg.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/topology/machine_view.hpp"
#include "tests/compiler/export_fixtures.hpp"

using namespace collsched;
using namespace collsched::test;
namespace pt = boost::property_tree;

namespace {

pt::ptree parse_xml(const std::string& text) {
    std::istringstream in(text);
    pt::ptree tree;
    pt::read_xml(in, tree);
    return tree;
}

/// The <g id="..."> child of the svg element.
const pt::ptree& group(const pt::ptree& svg, const std::string& id) {
    for (const auto& [name, child] : svg)
        if (name == "g" && child.get<std::string>("<xmlattr>.id", "") == id) return child;
    throw std::runtime_error("no group " + id);
}

/// A copy of the cells group of an SVG text.
pt::ptree cells_of(const std::string& svg) {
    pt::ptree tree = parse_xml(svg);
    return group(tree.get_child("svg"), "cells");
}

std::size_t count(const pt::ptree& node, const std::string& name) { return node.count(name); }

std::map<std::string, int> fills(const pt::ptree& cells) {
    std::map<std::string, int> out;
    for (const auto& [name, child] : cells)
        if (name == "rect") ++out[child.get<std::string>("<xmlattr>.fill")];
    return out;
}

/// The colour each (channel, step) cell must have, counted straight from the transfers.
std::map<std::string, int> expected_fills(const SendTable& t) {
    std::map<std::pair<Step, std::uint32_t>, std::uint32_t> load;
    for (const Transfer& x : t.transfers) ++load[{x.step, idx(x.channel)}];
    std::map<std::string, int> out;
    for (Step s = 1; s <= t.steps(); ++s)
        for (std::uint32_t c = 0; c < t.topology->channels().size(); ++c) {
            std::uint32_t l = load.count({s, c}) ? load[{s, c}] : 0, cap = t.topology->channel(ChannelId{c}).cap;
            const char* f = l == 0 ? "#eeeeee" : l > cap ? "#d62728" : 4 * l <= cap ? "#c6dbef" : 2 * l <= cap ? "#6baed6" : 4 * l <= 3 * cap ? "#2171b5" : "#08306b";
            ++out[f];
        }
    return out;
}

bool have(const char* tool) { return std::system(fmt::format("command -v {} >/dev/null 2>&1", tool).c_str()) == 0; }

/// Width and height from a PNG header.
std::pair<std::uint32_t, std::uint32_t> png_size(const std::string& data) {
    auto be = [&](std::size_t at) {
        return (std::uint32_t(std::uint8_t(data[at])) << 24) | (std::uint32_t(std::uint8_t(data[at + 1])) << 16) |
               (std::uint32_t(std::uint8_t(data[at + 2])) << 8) | std::uint32_t(std::uint8_t(data[at + 3]));
    };
    if (data.size() < 24 || data.compare(1, 3, "PNG") != 0) return {0, 0};
    return {be(16), be(20)};
}

}  // namespace

TEST_CASE("svg: the EBFT timeline has one cell per channel and step, coloured by load against capacity") {
    SendTable t = ebft_alltoall(4);
    std::string svg = table_to_svg(t);
    check_golden("tests/golden/export/ebft4_alltoall.svg", svg);
    pt::ptree tree = parse_xml(svg);
    const pt::ptree& root = tree.get_child("svg");
    CHECK(root.get<std::string>("<xmlattr>.xmlns") == "http://www.w3.org/2000/svg");
    const pt::ptree& cells = group(root, "cells");
    CHECK(count(cells, "rect") == 12 * 6);
    CHECK(fills(cells) == expected_fills(t));
    CHECK(count(group(root, "rows"), "text") == 12);
    CHECK(group(root, "groups").count("text") == 4);  // up 1, up 2, down 2, down 1
    CHECK(group(root, "legend").count("rect") == 6);

    SendTable ebft16 = ebft_alltoall(16);
    pt::ptree cells16 = cells_of(table_to_svg(ebft16));
    CHECK(count(cells16, "rect") == 60 * 22);
    CHECK(fills(cells16) == expected_fills(ebft16));
}

TEST_CASE("svg: a channel over capacity is red, and the processor view splits each cell into sends and receives") {
    SendTable t = ebft_alltoall(4);
    t.transfers.push_back(t.transfers.front());
    t.sort();
    auto f = fills(cells_of(table_to_svg(t)));
    CHECK(f["#d62728"] == 1);
    TimelineOptions o;
    o.rows = TimelineRows::processors;
    pt::ptree cells = cells_of(table_to_svg(ebft_alltoall(8), o));
    CHECK(count(cells, "rect") == 2 * 8 * 12);
}

TEST_CASE("svg: n = 64 stays readable: channels up to 128, router links up to 128, processors beyond, every row labelled") {
    for (std::uint32_t n : {32u, 64u, 128u}) {
        INFO("n = " << n);
        SendTable t = ebft_alltoall(n);
        pt::ptree tree = parse_xml(table_to_svg(t));
        const pt::ptree& svg = tree.get_child("svg");
        int w = svg.get<int>("<xmlattr>.width"), h = svg.get<int>("<xmlattr>.height");
        // ebft:32 has 124 channels; ebft:64 has 252, of which 124 join routers (the view shows
        // the bottleneck links, issue 14); ebft:128 has 252 router links: one row per processor.
        std::size_t rows = n == 32 ? 124 : n == 64 ? 124 : 128;
        CHECK(count(group(svg, "rows"), "text") == rows);
        CHECK(w <= 1400);
        CHECK(h <= 1600);
        CHECK(svg.get<int>("<xmlattr>.font-size") >= 7);
    }
}

TEST_CASE("svg: renders to a PNG of its declared size (rsvg-convert)") {
    REQUIRE_MESSAGE(have("rsvg-convert"), "rsvg-convert is not installed (Debian: librsvg2-bin; scripts/setup.sh installs it)");
    for (std::string spec : {"ebft16", "flood"}) {
        SendTable t = spec == "ebft16" ? ebft_alltoall(16) : flood_allgather("cbft:8");
        std::string base = fmt::format("/tmp/collsched_svg_{}_{}", ::getpid(), spec);
        std::string svg = table_to_svg(t);
        std::FILE* f = std::fopen((base + ".svg").c_str(), "wb");
        std::fwrite(svg.data(), 1, svg.size(), f);
        std::fclose(f);
        REQUIRE(std::system(fmt::format("rsvg-convert {0}.svg -o {0}.png", base).c_str()) == 0);
        auto [w, h] = png_size(read_file(base + ".png"));
        pt::ptree tree = parse_xml(svg);
        CHECK(w == tree.get<std::uint32_t>("svg.<xmlattr>.width"));
        CHECK(h == tree.get<std::uint32_t>("svg.<xmlattr>.height"));
        std::remove((base + ".svg").c_str());
        std::remove((base + ".png").c_str());
    }
}

TEST_CASE("html: the timeline with a title on every cell and a hover script") {
    SendTable t = ebft_alltoall(4);
    std::string html = table_to_html(t);
    check_golden("tests/golden/export/ebft4_alltoall.html", html);
    CHECK(html.starts_with("<!DOCTYPE html>"));
    auto a = html.find("<svg"), b = html.find("</svg>");
    REQUIRE(a != std::string::npos);
    REQUIRE(b != std::string::npos);
    pt::ptree cells = cells_of(html.substr(a, b + 6 - a));
    REQUIRE(count(cells, "rect") == 72);
    int titled = 0;
    for (const auto& [name, cell] : cells) titled += static_cast<int>(cell.count("title"));
    CHECK(titled == 72);
    CHECK(html.find("step 1 \u00b7 0\u2192r1.0 \u00b7 1/1: m(0,2)") != std::string::npos);
    CHECK(html.find("step 3 \u00b7 0\u2192r1.0 \u00b7 idle") != std::string::npos);
    CHECK(html.find("addEventListener('mouseover'") != std::string::npos);
    CHECK(html.find("id=\"info\"") != std::string::npos);
}

TEST_CASE("dot: the topology with capacities per link and the table's traffic each way") {
    SendTable t = ebft_alltoall(4);
    std::string dot = table_to_dot(t);
    check_golden("tests/golden/export/ebft4_alltoall.dot", dot);
    CHECK(dot.starts_with("digraph \"ebft:4\" {"));
    CHECK(std::count(dot.begin(), dot.end(), '{') == std::count(dot.begin(), dot.end(), '}'));
    int edges = 0;
    std::istringstream in(dot);
    for (std::string line; std::getline(in, line);) edges += line.find(" -> ") != std::string::npos ? 1 : 0;
    CHECK(edges == 6);  // 6 links, both directions on one edge
    CHECK(dot.find("\"r2.0\" -> \"r1.0\" [dir=both, label=\"cap 2\\nr2.0\u2192r1.0 4, r1.0\u2192r2.0 4\"") != std::string::npos);
}

// Graphviz is installed by scripts/setup.sh; without it this case fails (never a silent pass).
TEST_CASE("dot: Graphviz renders the DOT output, with every node and link") {
    REQUIRE_MESSAGE(have("dot"), "Graphviz's dot is not installed (Debian: graphviz; scripts/setup.sh installs it)");
    std::string base = fmt::format("/tmp/collsched_dot_{}", ::getpid());
    {
        std::ofstream(base + ".dot") << table_to_dot(ebft_alltoall(4));
    }
    int rc = std::system(fmt::format("dot -Tsvg {0}.dot -o {0}.svg", base).c_str());
    std::ifstream in(base + ".svg");
    std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::remove((base + ".dot").c_str());
    std::remove((base + ".svg").c_str());
    CHECK(rc == 0);
    std::size_t nodes = 0, edges = 0;
    for (std::size_t at = svg.find("class=\"node\""); at != std::string::npos; at = svg.find("class=\"node\"", at + 1)) ++nodes;
    for (std::size_t at = svg.find("class=\"edge\""); at != std::string::npos; at = svg.find("class=\"edge\"", at + 1)) ++edges;
    CHECK(nodes == 7);  // ebft:4: processors 0..3, routers r1.0, r1.1, r2.0
    CHECK(edges == 6);
}

TEST_CASE("svg and dot: link groups are drawn with their channels, shared capacity and peak load") {
    // allgather on a 3-GPU switch: step 1 every GPU sends to the next, step 2 to the one after;
    // GPU 0 also sends b(0) to 2 in step 1, which puts 2 transfers on group gpu0.out (cap 1)
    auto topo = Topology::parse("graph:" COLLSCHED_SOURCE_DIR "/tests/data/nvswitch3.json");
    TableBuilder b(topo, topo->default_model(), Collective{CollectiveKind::allgather, Node{0}, {}});
    const Messages ms = b.messages();
    for (std::uint32_t p = 0; p < 3; ++p) {
        b.hop(1, *topo->find_channel(Node{p}, Node{(p + 1) % 3}), ms.broadcast(p));
        if (p != 0) b.hop(2, *topo->find_channel(Node{p}, Node{(p + 2) % 3}), ms.broadcast(p));
    }
    b.hop(1, *topo->find_channel(Node{0}, Node{2}), ms.broadcast(0));
    SendTable t = std::move(b).finish();
    // the goldens name the graph file relative to the source tree, wherever it is checked out
    auto relative = [](std::string text) {
        const std::string dir = COLLSCHED_SOURCE_DIR "/";
        for (auto at = text.find(dir); at != std::string::npos; at = text.find(dir)) text.erase(at, dir.size());
        return text;
    };
    std::string svg = relative(table_to_svg(t));
    check_golden("tests/golden/export/nvswitch3_groups.svg", svg);
    CHECK(svg.find("<text x=\"8\" y=\"") != std::string::npos);
    CHECK(svg.find(">group gpu0.out: cap 1 per step over 2 channels (0\u21921, 0\u21922) \u00b7 peak 2 in step 1, over capacity</text>") !=
          std::string::npos);
    CHECK(svg.find(">group gpu1.out: cap 1 per step over 2 channels (1\u21920, 1\u21922) \u00b7 peak 1 in step 1</text>") != std::string::npos);
    std::string dot = relative(table_to_dot(t));
    check_golden("tests/golden/export/nvswitch3_groups.dot", dot);
    CHECK(dot.find("\"group gpu0.out\" [label=\"group gpu0.out: cap 1 per step, 2 channels\\npeak 2 in step 1, over capacity\", "
                   "color=\"#d62728\"]") != std::string::npos);
    CHECK(dot.find("0\u21921 in gpu0.out, gpu1.in") != std::string::npos);
    // no groups, no group drawing (the EBFT goldens above are unchanged)
    CHECK(table_to_dot(ebft_alltoall(4)).find("cluster_groups") == std::string::npos);
}

TEST_CASE("svg: the processor view colours a cell by the fullest channel, link group or port, times the step's rounds") {
    // multibox 2x8, the hierarchical allgather: in each of its two steps of 7 rounds a GPU sends 7
    // chunks through its NVSwitch port (group gpuP.out, cap 1 per round): full, whatever its 15
    // channels could carry together (the view once showed these steps as "up to 1/2")
    Diagnostics diags;
    auto t = compile_file(COLLSCHED_SOURCE_DIR "/schedules/multibox/allgather_hierarchical.sched", {}, {}, diags);
    REQUIRE(t);
    TimelineOptions o;
    o.rows = TimelineRows::processors;
    const std::string svg = table_to_svg(*t, o);
    auto f = fills(cells_of(svg));
    CHECK(f["#08306b"] == 2 * 16 * 2);  // every send and receive half of 16 processors x 2 steps: full
    CHECK(f.size() == 1);
    CHECK(svg.find("<title>step 2 \u00b7 P0 \u00b7 sends 7 \u00b7 fullest: group gpu0.out 7/7: b(8), b(8)") != std::string::npos);
    CHECK(svg.find("<title>step 1 \u00b7 P0 \u00b7 receives 8 \u00b7 fullest: group gpu0.in 7/7: b(1), b(2)") != std::string::npos);
    // ports=single: one send per round, so 2 sends in a step of 1 round are over the port
    auto ring = Topology::parse("complete:3");
    Model single = ring->default_model();
    single.ports = Ports::single;
    TableBuilder b(ring, single, Collective{CollectiveKind::allgather, Node{0}, {}});
    const Messages ms = b.messages();
    b.hop(1, *ring->find_channel(Node{0}, Node{1}), ms.broadcast(0));
    b.hop(1, *ring->find_channel(Node{0}, Node{2}), ms.broadcast(0));
    const std::string over = table_to_svg(std::move(b).finish(), o);
    CHECK(over.find("<title>step 1 \u00b7 P0 \u00b7 sends 2 \u00b7 fullest: port 2/1 OVER CAPACITY") != std::string::npos);
    // the channel view multiplies a channel's capacity by the step's rounds: one chunk on a
    // channel in a step of 7 rounds is 1/7, "up to 1/4"
    TimelineOptions by_channel;
    by_channel.rows = TimelineRows::channels;
    const std::string channels = table_to_svg(*t, by_channel);
    CHECK(channels.find("<title>step 1 \u00b7 0\u21928 \u00b7 1/7: b(0)</title>") != std::string::npos);
}

TEST_CASE("machine view: boxes from the fast channels, the fabric summarized, readable from 16 to 1,024 GPUs") {
    auto multibox = Topology::parse("graph:" COLLSCHED_SOURCE_DIR "/schedules/machines/multibox2x8.json");
    const std::string svg = machine_svg(*multibox);
    pt::ptree tree = parse_xml(svg);  // well-formed
    const pt::ptree& boxes = group(tree.get_child("svg"), "boxes");
    std::size_t rects = 0, titled = 0;
    for (const auto& [name, child] : boxes)
        if (name == "rect") ++rects, titled += child.get_child_optional("title") ? 1 : 0;
    CHECK(rects == 2 + 16);  // two boxes, 16 GPUs drawn
    CHECK(svg.find("16 processors in 2 boxes of 8") != std::string::npos);
    CHECK(svg.find("<title>box 1: processors 8 .. 15 (8)</title>") != std::string::npos);
    CHECK(svg.find("inside a box: 7 channels per processor, 300 GB/s per channel, latency 600 ns") != std::string::npos);
    CHECK(svg.find("between boxes: 8 channels per processor, 25 GB/s per channel, latency 2.7 us; each processor reaches processors of "
                   "other boxes at any index") != std::string::npos);
    CHECK(svg.find("link groups gpu#.out: 16 of them, 1 chunk per step each, 300 GB/s") != std::string::npos);
    CHECK(svg.find("link groups nic#.in: 16 of them") != std::string::npos);
    // a rail machine: GPU i of every box reaches GPU i of the others only
    auto rail = Topology::parse("graph:" COLLSCHED_SOURCE_DIR "/schedules/machines/rail4x8.json");
    const std::string r = machine_svg(*rail);
    CHECK(r.find("32 processors in 4 boxes of 8") != std::string::npos);
    CHECK(r.find("rails: each processor reaches the processors of the same index in other boxes") != std::string::npos);
    // 128 GPUs: 16 detailed boxes, 8 a row
    const std::string m16 = machine_svg(*Topology::parse("graph:" COLLSCHED_SOURCE_DIR "/schedules/machines/multibox16x8.json"));
    CHECK(m16.find("128 processors in 16 boxes of 8") != std::string::npos);
    CHECK(parse_xml(m16).get_child("svg").get<int>("<xmlattr>.width") < 1500);
    // 1,024 GPUs: 128 boxes of 8 (NVLink inside, a ring of rails between boxes) as compact boxes,
    // 16 a row; the picture stays about a thousand pixels wide
    std::string edges;
    for (int b = 0; b < 128; ++b)
        for (int i = 0; i < 8; ++i) {
            for (int j = 0; j < 8; ++j)
                if (i < j) edges += fmt::format("{}[{}, {}, 1, \"nv\"]", edges.empty() ? "" : ", ", 8 * b + i, 8 * b + j);
            edges += fmt::format(", [{}, {}, 1, \"ib\"]", 8 * b + i, 8 * ((b + 1) % 128) + i);
        }
    const std::string path = (std::filesystem::temp_directory_path() / fmt::format("collsched_machine_{}.json", ::getpid())).string();
    {
        std::ofstream f(path);
        f << "{\"processors\": 1024, \"link_types\": {\"nv\": {\"alpha\": \"0.6 us\", \"bandwidth\": \"300 GB/s\"}, "
             "\"ib\": {\"alpha\": \"2.7 us\", \"bandwidth\": \"25 GB/s\"}}, \"edges\": ["
          << edges << "]}";
    }
    const std::string b = machine_svg(*Topology::parse("graph:" + path));
    std::remove(path.c_str());
    pt::ptree bt = parse_xml(b);
    CHECK(b.find("1024 processors in 128 boxes of 8") != std::string::npos);
    CHECK(b.find("between boxes: 2 channels per processor, 25 GB/s per channel, latency 2.7 us; rails") != std::string::npos);
    CHECK(bt.get_child("svg").get<int>("<xmlattr>.width") < 1200);
    CHECK(bt.get_child("svg").get<int>("<xmlattr>.height") < 600);
    // one speed everywhere: one box
    const std::string ring = machine_svg(*Topology::parse("ring:8"));
    CHECK(ring.find("8 processors in 1 box of 8") != std::string::npos);
}

TEST_CASE("machine view: 16,384 boxes of one processor are 255 tiles and one for the rest (it was 51,410 px and 4.9 MB)") {
    for (const char* spec : {"ebft:16384", "ideal:16384", "ring:16384"}) {
        CAPTURE(spec);
        const std::string svg = machine_svg(*Topology::parse(spec));
        pt::ptree tree = parse_xml(svg);
        CHECK(tree.get_child("svg").get<int>("<xmlattr>.height") < 1200);
        CHECK(svg.size() < 200000);
        if (std::string_view(spec) == "ring:16384") continue;  // one speed everywhere: one box
        CHECK(svg.find("16384 processors in 16384 boxes of 1 (boxes 0 .. 254 drawn, the other 16129 in the last tile)") != std::string::npos);
        CHECK(svg.find("<title>boxes 255 .. 16383 (processors 255 .. 16383): not drawn</title>") != std::string::npos);
    }
}
