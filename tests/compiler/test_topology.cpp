// Topologies: node and channel counts, capacities per level, names and routes of every family.
#include <doctest/doctest.h>

#include "tests/approx.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/topology/topology.hpp"
#include "dsl/diagnostics.hpp"
#include "support/units.hpp"

using namespace collsched;

namespace {

/// The route as "a->b->c" node names.
std::string path(const Topology& t, std::string_view from, std::string_view to) {
    auto r = t.route(*t.find_node(from), *t.find_node(to));
    std::string s(from);
    for (ChannelId c : r) s += "->" + t.node_name(t.channel(c).to);
    return s;
}

std::vector<std::uint32_t> caps_by_level(const Topology& t) {
    std::vector<std::uint32_t> caps(t.tree_levels() + 1, 0);
    for (const Channel& c : t.channels()) {
        if (caps[c.level] == 0) caps[c.level] = c.cap;
        CHECK(caps[c.level] == c.cap);
    }
    return caps;
}

struct GraphFile {
    std::string path;
    explicit GraphFile(const std::string& text) {
        static int n = 0;
        path = (std::filesystem::temp_directory_path() / ("collsched_speeds." + std::to_string(::getpid()) + "." + std::to_string(n++) + ".json"))
                   .string();
        std::ofstream(path) << text;
    }
    ~GraphFile() { std::filesystem::remove(path); }
};

std::string spec_error(std::string_view spec) {
    try {
        Topology::parse(spec);
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("topology: ebft:8 has 8 processors, 7 routers, 28 channels with capacities 1, 2, 4") {
    auto t = Topology::parse("ebft:8");
    CHECK(t->processors() == 8);
    CHECK(t->routers() == 7);
    CHECK(t->channels().size() == 28);
    CHECK(t->tree_levels() == 3);
    CHECK(caps_by_level(*t) == std::vector<std::uint32_t>{0, 1, 2, 4});
    CHECK(t->node_name(Node{8}) == "r1.0");
    CHECK(t->node_name(Node{14}) == "r3.0");
    CHECK(t->find_node("r2.1") == Node{13});
    CHECK(t->find_node("r4.0") == std::nullopt);
    CHECK(t->find_node("8") == std::nullopt);
    CHECK(path(*t, "0", "1") == "0->r1.0->1");
    CHECK(path(*t, "0", "7") == "0->r1.0->r2.0->r3.0->r2.1->r1.3->7");
    CHECK(path(*t, "5", "6") == "5->r1.2->r2.1->r1.3->6");
    CHECK(t->distance(Node{0}, Node{7}) == 6);
    CHECK(t->distance(Node{2}, Node{3}) == 2);
    CHECK(t->diameter() == 6);
}

TEST_CASE("topology: cbft, bft and b-ary fat trees") {
    auto c = Topology::parse("cbft:16");
    CHECK(c->processors() == 16);
    CHECK(c->routers() == 15);
    CHECK(c->channels().size() == 60);
    CHECK(caps_by_level(*c) == std::vector<std::uint32_t>{0, 1, 1, 1, 1});

    auto b = Topology::parse("bft:8:1,2,2");
    CHECK(caps_by_level(*b) == std::vector<std::uint32_t>{0, 1, 2, 2});

    auto f = Topology::parse("fattree:4:16:1,4");
    CHECK(f->processors() == 16);
    CHECK(f->routers() == 5);
    CHECK(f->channels().size() == 40);
    CHECK(f->arity() == 4);
    CHECK(caps_by_level(*f) == std::vector<std::uint32_t>{0, 1, 4});
    CHECK(path(*f, "0", "3") == "0->r1.0->3");
    CHECK(path(*f, "0", "15") == "0->r1.0->r2.0->r1.3->15");
}

TEST_CASE("topology: ideal fat tree capacities come from w of the subtree size") {
    auto t = Topology::parse("ideal:16:w=n");
    CHECK(caps_by_level(*t) == std::vector<std::uint32_t>{0, 1, 2, 4, 8});
    CHECK(t->default_model().ports == Ports::single);
    CHECK(t->default_model().queues == QueueKind::none);
    CHECK(caps_by_level(*Topology::parse("ideal:16:w=log2(n)+1")) == std::vector<std::uint32_t>{0, 1, 2, 3, 4});
    CHECK(caps_by_level(*Topology::parse("ideal:16:w=sqrt(n)")) == std::vector<std::uint32_t>{0, 1, 1, 2, 2});
    CHECK(caps_by_level(*Topology::parse("ideal:8")) == std::vector<std::uint32_t>{0, 1, 1, 1});
    CHECK(spec_error("ideal:16:w=log2(n)") ==
          "topology 'ideal:16:w=log2(n)': w(1) = 0; capacities must be between 1 and 2^30");
}

TEST_CASE("topology: ring and linear array") {
    auto r = Topology::parse("ring:5");
    CHECK(r->processors() == 5);
    CHECK(r->routers() == 0);
    CHECK(r->channels().size() == 10);
    CHECK(path(*r, "0", "2") == "0->1->2");
    CHECK(path(*r, "0", "3") == "0->4->3");
    CHECK(path(*r, "4", "1") == "4->0->1");
    CHECK(path(*Topology::parse("ring:4"), "0", "2") == "0->1->2");  // a tie goes the increasing way
    CHECK(path(*Topology::parse("ring:4"), "3", "1") == "3->0->1");
    auto l = Topology::parse("linear:6");
    CHECK(l->channels().size() == 10);
    CHECK(path(*l, "4", "1") == "4->3->2->1");
    CHECK(l->diameter() == 5);
}

TEST_CASE("topology: mesh and torus route dimension by dimension, the shorter way round") {
    auto m = Topology::parse("mesh:4x4");
    CHECK(m->processors() == 16);
    CHECK(m->channels().size() == 48);
    CHECK(m->find_node("(2,3)") == Node{11});
    CHECK(path(*m, "0", "11") == "0->4->8->9->10->11");
    auto t = Topology::parse("torus:3x5");
    CHECK(t->processors() == 15);
    CHECK(t->channels().size() == 60);
    CHECK(t->find_node("(1, 2)") == Node{7});
    CHECK(path(*t, "0", "14") == "0->10->14");
    CHECK(path(*t, "(0,0)", "(1,2)") == "(0,0)->5->6->7");
    CHECK(t->diameter() == 3);
    auto t3 = Topology::parse("torus:4x4x4");
    CHECK(t3->channels().size() == 64 * 6);
}

TEST_CASE("topology: hypercube uses e-cube routing, lowest differing bit first") {
    auto h = Topology::parse("hypercube:3");
    CHECK(h->processors() == 8);
    CHECK(h->channels().size() == 24);
    CHECK(path(*h, "0", "7") == "0->1->3->7");
    CHECK(path(*h, "5", "2") == "5->4->6->2");
    CHECK(h->diameter() == 3);
}

TEST_CASE("topology: complete graph and products") {
    auto c = Topology::parse("complete:8");
    CHECK(c->channels().size() == 56);
    CHECK(path(*c, "3", "6") == "3->6");
    auto p = Topology::parse("product:ring:3*ring:5");
    auto t = Topology::parse("torus:3x5");
    REQUIRE(p->channels().size() == t->channels().size());
    for (std::size_t i = 0; i < p->channels().size(); ++i) CHECK(p->channels()[i] == t->channels()[i]);
    CHECK(path(*p, "0", "14") == "0->10->14");
    auto q = Topology::parse("product:linear:2*complete:3");
    CHECK(q->processors() == 6);
    CHECK(q->channels().size() == 2 * 3 + 2 * 6);
    CHECK(path(*q, "0", "5") == "0->3->5");  // first factor first: (0,0)->(1,0)->(1,2)
    CHECK(spec_error("product:ebft:4*ring:3").find("has routers") != std::string::npos);
}

TEST_CASE("topology: the wrapped butterfly: (l, x) is l 2^d + x, straight and cross links to level l + 1, BFS routes") {
    auto b = Topology::parse("butterfly:3");
    CHECK(b->processors() == 24);
    CHECK(b->routers() == 0);
    CHECK(b->channels().size() == 4 * 24);
    std::vector<std::string> out;
    for (ChannelId c : b->out_channels(*b->find_node("0"))) out.push_back(b->node_name(b->channel(c).to));
    CHECK(out == std::vector<std::string>{"8", "9", "16", "20"});  // (1, 0), (1, 1); (2, 0), (2, 4) link back to level 0
    for (ChannelId c : b->out_channels(*b->find_node("13"))) out.push_back(b->node_name(b->channel(c).to));  // (1, 5)
    CHECK(out == std::vector<std::string>{"8", "9", "16", "20", "4", "5", "21", "23"});  // (0, 4), (0, 5), (2, 5), (2, 7)
    CHECK(path(*b, "0", "9") == "0->9");
    CHECK(path(*b, "9", "0") == "9->0");
    CHECK(path(*b, "0", "7") == "0->9->19->7");  // a cross link on each level: bits 0, 1, 2
    CHECK(b->diameter() == 4);  // floor(3d/2) for the wrapped butterfly
    CHECK(spec_error("butterfly:2") == "topology 'butterfly:2': the dimension must be between 3 and 8 (d 2^d processors; below 3 links coincide)");
    CHECK(spec_error("butterfly:9").find("between 3 and 8") != std::string::npos);
    CHECK(spec_error("butterfly") == "topology 'butterfly': missing size: expected butterfly:D");
}

TEST_CASE("topology: graph files route by BFS with ties to the lower id") {
    std::string file = "/tmp/collsched_test_graph.json";
    {
        std::ofstream out(file);
        out << R"J({"processors": 4, "routers": 1, "edges": [[0, 1], [1, 2, 2], [2, 3], [3, 0], {"from": 0, "to": "r1.0"}, ["r1.0", 2]]})J";
    }
    auto g = Topology::parse("graph:" + file);
    CHECK(g->processors() == 4);
    CHECK(g->routers() == 1);
    CHECK(g->channels().size() == 12);
    CHECK(g->channel(*g->find_channel(Node{1}, Node{2})).cap == 2);
    CHECK(path(*g, "0", "2") == "0->1->2");  // 0->1->2, 0->3->2 and 0->r1.0->2 tie: lowest next hop
    CHECK(path(*g, "1", "3") == "1->0->3");
    std::ofstream(file) << R"J({"processors": 3, "edges": [[0, 1]]})J";
    CHECK(spec_error("graph:" + file).find("not connected") != std::string::npos);
    std::ofstream(file) << R"J({"processors": 3, "edges": [[0, 1], [1, 7]]})J";
    CHECK(spec_error("graph:" + file).find("edges[1]: node 7 does not exist") != std::string::npos);
    std::ofstream(file) << "{\"processors\": 3,\n \"edges\": [[0, 1] [1, 2]]}";
    CHECK(spec_error("graph:" + file).find(":2:19: malformed JSON graph: syntax error while parsing array - unexpected '['; expected ']'") != std::string::npos);
    std::remove(file.c_str());
}

TEST_CASE("topology: bad specs get one clear line") {
    CHECK(spec_error("ebft:6") == "topology 'ebft:6': 6 leaves is not a power of 2 (at least 2)");
    CHECK(spec_error("bft:8:2,1,2") ==
          "topology 'bft:8:2,1,2': capacity pattern decreases at level 2 (1 after 2); it must be non-decreasing toward the root");
    CHECK(spec_error("bft:8:1,2") ==
          "topology 'bft:8:1,2': 2 capacities given, the tree has 3 levels (one capacity per level, leaves first)");
    CHECK(spec_error("foo:3").starts_with("topology 'foo:3': unknown family 'foo'"));
    CHECK(spec_error("ebft:1048576") == "topology 'ebft:1048576': 1048576 processors is more than collsched supports (65534)");
    CHECK(spec_error("ring:x") == "topology 'ring:x': 'x' is not a valid size (expected a positive integer)");
    CHECK(spec_error("ring") == "topology 'ring': missing size: expected ring:N");
    CHECK(spec_error("torus:3x1") == "topology 'torus:3x1': dimension 1 must be at least 2");
    CHECK(spec_error("complete:60000").find("channels is more than collsched supports") != std::string::npos);
    CHECK(spec_error("").find("empty spec") != std::string::npos);
}

TEST_CASE("topology: JSON and DOT output") {
    auto t = Topology::parse("ebft:4");
    std::string j = t->to_json();
    CHECK(j.find("\"processors\": [\"0\", \"1\", \"2\", \"3\"]") != std::string::npos);
    CHECK(j.find("\"routers\": [\"r1.0\", \"r1.1\", \"r2.0\"]") != std::string::npos);
    CHECK(j.find("{\"from\": \"r2.0\", \"to\": \"r1.1\", \"cap\": 2, \"level\": 2}") != std::string::npos);
    std::string d = t->to_dot();
    CHECK(d.find("\"0\" -> \"r1.0\" [dir=both, label=\"1\"];") != std::string::npos);
    CHECK(d.find("\"r1.1\" -> \"r2.0\" [dir=both, label=\"2\"];") != std::string::npos);
}

// Link speeds (docs/time.md, docs/formats.md "Link speeds"): the unit grammar, graph files'
// speeds per edge, link type, file default and group, the built-in defaults, and bad units
// refused with the line and column of the value.
TEST_CASE("units: times, bandwidths and sizes with their units") {
    using namespace collsched::support;
    CHECK(*parse_seconds("1.5 us") == collsched::test::rel(1.5e-6));
    CHECK(*parse_seconds("1.5us") == collsched::test::rel(1.5e-6));
    CHECK(*parse_seconds("2 ms") == collsched::test::rel(2e-3));
    CHECK(*parse_seconds("500 ns") == collsched::test::rel(5e-7));
    CHECK(*parse_seconds("0 s") == 0);
    CHECK(*parse_seconds("3\xc2\xb5s") == collsched::test::rel(3e-6));
    CHECK(*parse_bandwidth("25 GB/s") == collsched::test::rel(25e9));
    CHECK(*parse_bandwidth("200 Gbit/s") == collsched::test::rel(25e9));
    CHECK(*parse_bandwidth("200 Gb/s") == collsched::test::rel(25e9));
    CHECK(*parse_bandwidth("1 GiB/s") == collsched::test::rel(1073741824.0));
    CHECK(*parse_bandwidth("1.5e3 MB/s") == collsched::test::rel(1.5e9));
    CHECK(*support::parse_bytes("1K") == 1024);
    CHECK(*support::parse_bytes("1M") == 1048576);
    CHECK(*support::parse_bytes("4 KiB") == 4096);
    CHECK(*support::parse_bytes("1 MB") == 1e6);
    CHECK(*support::parse_bytes("4096") == 4096);
    std::string why;
    CHECK_FALSE(parse_seconds("1.5", &why));
    CHECK(why == "a time needs a unit, e.g. '1.5 us' (units: s, ms, us, ns, ps)");
    CHECK_FALSE(parse_bandwidth("25 GB", &why));
    CHECK(why.starts_with("unknown unit 'GB' for a bandwidth (units: B/s, kB/s,"));
    CHECK_FALSE(parse_bandwidth("0 GB/s", &why));
    CHECK(why == "a bandwidth must be positive");
    CHECK_FALSE(parse_seconds("-1 us", &why));
    CHECK_FALSE(parse_seconds("fast", &why));
    CHECK_FALSE(parse_bandwidth("inf GB/s", &why));
    CHECK(format_seconds(1.5e-6) == "1.5 us");
    CHECK(format_seconds(0.0123) == "12.3 ms");
    CHECK(format_bandwidth(25e9) == "25 GB/s");
    CHECK(support::format_bytes(1 << 20) == "1 MiB");
}

TEST_CASE("speeds: a graph file's defaults, link types, edges and groups") {
    GraphFile g(R"({"processors": 3, "alpha": "2 us", "bandwidth": "10 GB/s",
 "link_types": {"nv": {"alpha": "0.5 us", "bandwidth": "25 GB/s"}},
 "edges": [[0, 1, 2, "nv"], [1, 2], {"from": 0, "to": 2, "cap": 3, "bandwidth": "1 GB/s"}],
 "groups": [{"name": "g", "cap": 2, "out_of": 0, "bandwidth": "4 GB/s"}, {"name": "h", "cap": 1, "into": 0}]})");
    auto t = Topology::parse("graph:" + g.path);
    CHECK(t->has_speeds());
    auto sp = [&](int a, int b) { return t->speed(*t->find_channel(Node(a), Node(b))); };
    CHECK(sp(0, 1) == LinkSpeed{0.5e-6, 50e9});  // per unit of capacity, 2 links
    CHECK(sp(1, 0) == LinkSpeed{0.5e-6, 50e9});
    CHECK(sp(1, 2) == LinkSpeed{2e-6, 10e9});  // the file's defaults
    CHECK(sp(2, 0) == LinkSpeed{2e-6, 3e9});
    CHECK(t->group_bandwidth(0) == collsched::test::rel(8e9));
    CHECK(t->group_bandwidth(1) == collsched::test::rel(10e9));  // no bandwidth: the file's default per unit
    CHECK(t->to_json().find("\"alpha_s\": 5e-07, \"bandwidth_Bps\": 50000000000") != std::string::npos);
}

TEST_CASE("speeds: the built-in families and files without speeds take 1 us and 10 GB/s per unit of capacity") {
    auto ring = Topology::parse("ring:4");
    CHECK_FALSE(ring->has_speeds());
    CHECK(ring->speed(ChannelId{0}) == LinkSpeed{1e-6, 10e9});
    auto tree = Topology::parse("ebft:4");
    for (const Channel& c : tree->channels())
        CHECK(tree->speed(*tree->find_channel(c.from, c.to)).bandwidth == collsched::test::rel(c.cap * 10e9));
    CHECK(ring->to_json().find("alpha_s") == std::string::npos);
}

TEST_CASE("speeds: bad units are refused with the line and column of the value") {
    GraphFile a("{\"processors\": 2,\n \"edges\": [{\"from\": 0, \"to\": 1, \"bandwidth\": \"25 GB\"}]}");
    CHECK(spec_error("graph:" + a.path) == a.path + ":2:46: edges[0].bandwidth: bad bandwidth \"25 GB\": unknown unit 'GB' for a bandwidth "
                                                  "(units: B/s, kB/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s, bit/s, kbit/s, "
                                                  "Mbit/s, Gbit/s, Tbit/s, b/s, kb/s, Kb/s, Mb/s, Gb/s, Tb/s)");
    GraphFile b("{\"processors\": 2,\n  \"alpha\": 3,\n \"edges\": [[0, 1]]}");
    CHECK(spec_error("graph:" + b.path) == b.path + ":2:12: alpha: bad latency 3: expected a time such as \"1.5 us\"");
    GraphFile c("{\"processors\": 2, \"link_types\": {\"nv\": {\"alpha\": \"1 us\"}},\n \"edges\": [[0, 1, 1, \"nvv\"]]}");
    CHECK(spec_error("graph:" + c.path) == c.path + ":2:22: edges[0]: unknown link type \"nvv\" (\"link_types\" names nv)");
    GraphFile d("{\"processors\": 2, \"link_types\": {\"nv\": {\"latency\": \"1 us\"}}, \"edges\": [[0, 1]]}");
    CHECK(spec_error("graph:" + d.path) == d.path + ":1:52: link_types.nv: unknown field \"latency\" (a link type has alpha, bandwidth, note)");
    GraphFile e("{\"processors\": 2, \"edges\": [[0, 1]],\n \"groups\": [{\"name\": \"g\", \"cap\": 1, \"out_of\": 0, \"bandwidth\": \"fast\"}]}");
    CHECK(spec_error("graph:" + e.path).starts_with(e.path + ":2:63: groups[0].bandwidth: bad bandwidth \"fast\": expected a bandwidth"));
}

TEST_CASE("graph routes on a dense graph (the bitset path): shortest, next hop the lowest-numbered neighbour one step closer") {
    // rail 8x8: 64 nodes, 896 channels (at least N^2/16), so the next-hop table is built by bitset rows; the
    // same rule checked here against a plain BFS per destination.
    auto t = Topology::parse(fmt::format("graph:{}/schedules/machines/rail8x8.json", COLLSCHED_SOURCE_DIR));
    const std::uint32_t N = t->nodes();
    for (std::uint32_t d = 0; d < N; ++d) {
        std::vector<std::uint32_t> dist(N, ~0u), queue{d};
        dist[d] = 0;
        for (std::size_t h = 0; h < queue.size(); ++h)
            for (ChannelId c : t->in_channels(Node{queue[h]}))
                if (std::uint32_t y = idx(t->channel(c).from); dist[y] == ~0u) {
                    dist[y] = dist[queue[h]] + 1;
                    queue.push_back(y);
                }
        for (std::uint32_t s = 0; s < N; ++s) {
            const std::vector<ChannelId> r = t->route(Node{s}, Node{d});
            REQUIRE(r.size() == dist[s]);
            if (s == d) continue;
            std::uint32_t best = ~0u;
            for (ChannelId c : t->out_channels(Node{s}))
                if (std::uint32_t y = idx(t->channel(c).to); dist[y] + 1 == dist[s]) best = std::min(best, y);
            CHECK(idx(t->channel(r.front()).to) == best);
        }
    }
}
