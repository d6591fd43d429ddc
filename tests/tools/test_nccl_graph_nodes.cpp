// One NCCL graph file per node (issue 56; docs/exports.md, "One file per node"): NCCL numbers a node's nets in
// PCI order, so with NIC 0 down box 0 calls rails 1..7 nets 0..6 and the other boxes rails 0..7 nets 0..7; the
// weighted rings then keep channel c on one rail only with a file per node. Written by the exporter, read back
// as a set by `verify FILE.xml` (NCCL's reductions over the nodes), refused when the set is bad, and kept by
// optimize on executor nccl, where it beats NCCL's own ring.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_run.hpp"
#include "compiler/formats/export_formats.hpp"
#include "compiler/formats/export_nccl_graph.hpp"
#include "compiler/formats/nccl_graph_read.hpp"
#include "compiler/topology/topology.hpp"
#include "support/error.hpp"
#include "verifier/constructions/nccl/nccl_graph_check.hpp"

using namespace collsched;
using collsched::test::run;
using collsched::test::Scratch;

namespace {

/// The ring graph's (id 0) channels that enter by `<net dev="d">`.
int ring_channels_on_net(const std::string& xml, int d) {
    const std::string ring = xml.substr(0, xml.find("</graph>"));
    const std::string in = fmt::format("<channel>\n      <net dev=\"{:x}\"/>", d);
    int n = 0;
    for (std::size_t at = ring.find(in); at != std::string::npos; at = ring.find(in, at + 1)) ++n;
    return n;
}

std::string node_file_text(const std::string& path) {
    std::string s;
    std::getline(std::ifstream(path), s, '\0');
    return s;
}

/// NIC 0 down on 4 x 8 H100 rails, its machine file in `dir`.
std::string nic_down_machine(const Scratch& dir) {
    const std::string file = dir.file("nic_down.json");
    REQUIRE(run("machine dgx-h100 --boxes 4 --network rail --nic-down 0 -o " + file).code == 0);
    return file;
}

/// The weighted rings of allgather on `topo`, one graph file per node (4 of them).
nccl::WeightedRings weighted_allgather(const std::shared_ptr<const Topology>& topo) {
    std::string why;
    auto w = nccl::nccl_weighted_rings(topo, topo->default_model(), CollectiveKind::allgather, Deadline{}, why);
    REQUIRE_MESSAGE(w, why);
    REQUIRE(w->xmls.size() == 4);
    return *w;
}

}  // namespace

TEST_CASE("per-node graph files: with NIC 0 down on 4 x 8 H100 the weighted rings are 7 channels, one a rail, written as a file per "
          "node, read back as a set, and NCCL's ring allgather on them takes at most 0.6 of NCCL's own ring's time (compare nccl:ring)") {
    Scratch dir("graph_nodes");
    const std::string file = nic_down_machine(dir), machine = "graph:" + file;
    auto topo = Topology::parse(machine);
    const nccl::WeightedRings w = weighted_allgather(topo);
    CHECK(w.channels == 7);
    // channel c on rail c + 1: box 0 calls it net c, boxes 1 to 3 net c + 1
    for (int c = 0; c < 7; ++c) {
        CHECK(ring_channels_on_net(w.xmls[0], c) == 1);
        for (int k = 1; k < 4; ++k) CHECK(ring_channels_on_net(w.xmls[k], c + 1) == 1);
    }
    CHECK(ring_channels_on_net(w.xmls[1], 0) == 0);
    CHECK(w.xmls[2] == w.xmls[1]);
    // the table converts to the same files, one per node, and a single stream is refused (exit 2, nothing written)
    const std::string table = dir.file("weighted.json"), out = dir.file("rings.xml");
    {
        fmt::memory_buffer b;
        write_table_as(w.table, "json", {}, b, [](fmt::memory_buffer&) {});
        dir.file("weighted.json", fmt::to_string(b));
    }
    auto c = run(fmt::format("convert {} --format nccl-graph -o {}", table, out));
    INFO(c.err);
    REQUIRE(c.code == 0);
    CHECK_FALSE(std::filesystem::exists(out));
    for (std::uint32_t k = 0; k < 4; ++k) CHECK(node_file_text(nccl_graph_node_path(out, k)) == w.xmls[k]);
    auto s = run(fmt::format("convert {} --format nccl-graph", table));
    CHECK(s.code == 2);
    CHECK(s.err.find("one graph file each") != std::string::npos);
    CHECK(s.out.empty());
    // verify reads the set (the stem names it) by NCCL's semantics: it holds, 7 channels run
    auto v = run(fmt::format("verify {} --topology {}", out, machine));
    INFO(v.out, v.err);
    CHECK(v.code == 0);
    CHECK(v.out.find("rings.node0.xml to " + dir.file("rings.node3.xml") + ", one per node") != std::string::npos);
    CHECK(v.out.find("7 ring channels run") != std::string::npos);
    // one of the files read as every node's: box 0's nets name other rails in boxes 1 to 3, which the rails do not join
    auto one = run(fmt::format("verify {} --topology {}", nccl_graph_node_path(out, 0), machine));
    CHECK(one.code == 1);
    CHECK(one.out.find("no path between them through switches alone [link]") != std::string::npos);
    // timed on executor nccl: the per-node rings against NCCL's own (6.43 ms at 1 GiB, 3.23 ms for the weighted rings)
    auto time_of = [&](const std::string& f) {
        auto r = run(fmt::format("verify {} --topology {} --collective allgather --size 1G --executor nccl --json", f, machine));
        INFO(r.err);
        REQUIRE(r.code == 0);
        return nlohmann::json::parse(r.out)["time"]["sizes"][0]["asynchronous_s"].get<double>();
    };
    // NCCL's own ring (no graph file: it enters box 0 at GPU 0, which has no NIC) as compare times it
    auto own = run(fmt::format("compare nccl:ring --topology {} --collective allgather --size 1G --executor nccl --json", machine));
    INFO(own.err);
    REQUIRE(own.code == 0);
    const double weighted = time_of(out), nccl = nlohmann::json::parse(own.out)["schedules"][0]["asynchronous_s"][0].get<double>();
    INFO("per-node weighted rings ", weighted, " s, NCCL's ring ", nccl, " s");
    CHECK(weighted < 0.6 * nccl);
}

TEST_CASE("per-node graph files: a bad set is exit 2 with the file and the reason, a wrong net in a node's file a finding there, and "
          "NCCL runs the least nchannels over the nodes") {
    Scratch dir("graph_nodes_bad");
    const std::string file = nic_down_machine(dir), machine = "graph:" + file;
    auto topo = Topology::parse(machine);
    const nccl::WeightedRings w = weighted_allgather(topo);
    const std::string stem = dir.file("set.xml");
    auto write_set = [&](const std::vector<std::string>& xmls) {
        for (std::uint32_t k = 0; k < 4; ++k) std::filesystem::remove(nccl_graph_node_path(stem, k));
        for (std::size_t k = 0; k < xmls.size(); ++k) std::ofstream(nccl_graph_node_path(stem, std::uint32_t(k))) << xmls[k];
    };
    auto verify = [&] { return run(fmt::format("verify {} --topology {}", stem, machine)); };
    // 3 files for 4 boxes
    write_set({w.xmls[0], w.xmls[1], w.xmls[2]});
    auto r = verify();
    CHECK(r.code == 2);
    CHECK(r.err.find("3 files") != std::string::npos);
    CHECK(r.err.find("missing " + nccl_graph_node_path(stem, 3)) != std::string::npos);
    // the set and a file of the stem's own name: which the nodes load is not said
    write_set(w.xmls);
    std::ofstream(stem) << w.xmls[0];
    r = verify();
    CHECK(r.code == 2);
    CHECK(r.err.find("both it and") != std::string::npos);
    std::filesystem::remove(stem);
    REQUIRE(verify().code == 0);
    // node 0 given node 1's file: net 7 is no NIC of box 0 (7 NICs), found in that file
    write_set({w.xmls[1], w.xmls[1], w.xmls[2], w.xmls[3]});
    r = verify();
    CHECK(r.code == 1);
    CHECK(r.out.find(nccl_graph_node_path(stem, 0) + ":") != std::string::npos);
    CHECK(r.out.find("<net dev=\"7\">: box 0 has 7 NICs") != std::string::npos);
    // a node without a tree graph searches its own: not a set a file says
    std::string no_tree = w.xmls[2];
    no_tree.erase(no_tree.find("  <graph id=\"1\""), no_tree.find("</graphs>") - no_tree.find("  <graph id=\"1\""));
    write_set({w.xmls[0], w.xmls[1], no_tree, w.xmls[3]});
    r = verify();
    CHECK(r.code == 2);
    CHECK(r.err.find("a node whose file lacks a graph searches its own") != std::string::npos);
    // node 2 says 6 channels: NCCL takes the least over the nodes (init.cc:1439) and runs 6 everywhere
    std::string six = w.xmls[2];
    for (std::size_t at = six.find("nchannels=\"7\""); at != std::string::npos; at = six.find("nchannels=\"7\"")) six.replace(at, 13, "nchannels=\"6\"");
    std::vector<NcclGraphFile> files;
    for (const std::string& x : {w.xmls[0], w.xmls[1], six, w.xmls[3]}) files.push_back(read_nccl_graph(x, "node.xml"));
    std::vector<nccl::NcclGraphSource> set;
    for (std::size_t k = 0; k < 4; ++k) set.push_back({&files[k], fmt::format("node{}.xml", k)});
    const nccl::GraphCheck g = nccl::check_nccl_graphs(set, *topo);
    CHECK(g.holds());
    CHECK(g.channels_run == 6);
    CHECK(g.rings.size() == 6);
    // 2 files for 4 boxes
    CHECK_THROWS_AS(nccl::check_nccl_graphs({set[0], set[1]}, *topo), InputError);
}

TEST_CASE("per-node graph files: optimize --executor nccl with NIC 0 down on 4 x 8 H100 keeps the weighted rings, more than 20 % "
          "faster than NCCL's ring at 1 GiB allgather, and --format nccl-graph writes a file per node") {
    Scratch dir("graph_nodes_optimize");
    const std::string file = nic_down_machine(dir), out = dir.file("w.xml");
    // the weighted rings are built in milliseconds; the run's other providers are cut by the limit
    auto r = run(fmt::format("optimize --topology graph:{} --collective allgather --sizes 1G --timeout 6 --jobs 1 --executor nccl --format "
                             "nccl-graph -o {} --json",
                             file, out));
    INFO(r.err);
    REQUIRE((r.code == 0 || r.code == 3));  // 3: the limit cut other providers (the tree packing, the constructions)
    const auto j = nlohmann::json::parse(r.out);
    const auto& size = j["sizes"][0];
    CHECK(size["winner"].get<std::string>().starts_with("weighted rings"));
    double nccl = 0;
    for (const auto& c : j["candidates"])
        if (c["name"] == "nccl ring") nccl = c["seconds"][0].get<double>();
    REQUIRE(nccl > 0);
    const double t = size["predicted_time_s"].get<double>();
    INFO("weighted rings ", t, " s, NCCL's ring ", nccl, " s");
    CHECK(t < 0.8 * nccl);  // 3.23 ms against 6.43 ms
    for (std::uint32_t k = 0; k < 4; ++k) CHECK(std::filesystem::exists(nccl_graph_node_path(out, k)));
    CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("per-node graph files: crossnic=\"2\" with an even channel count exchanges channels c and c^1's orders on odd nodes, the "
          "nets still channel c's (connect.cc:401-414)") {
    auto topo = Topology::parse("graph:" + collsched::test::source("schedules/machines/h100rail2x8.json"));
    std::string xml = nccl_graphs_xml(nccl::nccl_algorithm_graphs(*topo, "ring"));
    const nccl::GraphCheck plain = nccl::check_nccl_graph(read_nccl_graph(xml, "own.xml"), "own.xml", *topo);
    REQUIRE(plain.holds());
    REQUIRE(plain.channels_run % 2 == 0);
    xml.replace(xml.find("crossnic=\"0\""), 12, "crossnic=\"2\"");
    const nccl::GraphCheck g = nccl::check_nccl_graph(read_nccl_graph(xml, "cross.xml"), "cross.xml", *topo);
    REQUIRE(g.holds());
    REQUIRE(g.rings.size() == plain.rings.size());
    for (std::size_t c = 0; c < g.rings.size(); ++c) {
        INFO("channel ", c);
        // box 0 (node 0) runs channel c's order, box 1 (node 1, odd) channel c^1's
        CHECK(std::equal(g.rings[c].order.begin(), g.rings[c].order.begin() + 8, plain.rings[c].order.begin()));
        CHECK(std::equal(g.rings[c].order.begin() + 8, g.rings[c].order.end(), plain.rings[c ^ 1].order.begin() + 8));
    }
}

TEST_CASE("real parsers: NCCL's graph reader loads each node's file of the per-node weighted rings, channel c on net c in box 0 and "
          "c + 1 elsewhere" * doctest::test_suite("real_parsers") * doctest::skip()) {
    const char* loader = std::getenv("COLLSCHED_NCCL_GRAPH_LOADER");
    REQUIRE_MESSAGE(loader != nullptr, "COLLSCHED_NCCL_GRAPH_LOADER must name the loader (ctest sets it where NCCL's source is present)");
    Scratch dir("graph_nodes_parser");
    auto topo = Topology::parse("graph:" + nic_down_machine(dir));
    const nccl::WeightedRings w = weighted_allgather(topo);
    for (std::uint32_t k = 0; k < 4; ++k) {
        const std::string file = dir.file(fmt::format("rings.node{}.xml", k), w.xmls[k]);
        // search.cc's own ncclTopoGetGraphFromXml on a node of 8 GPUs, as node k loads its file
        auto r = collsched::test::run_shell(fmt::format("'{}' --gpus 8 '{}'", loader, file));
        INFO("node ", k, ": ", r.out, r.err);
        REQUIRE(r.code == 0);
        const std::string ring = r.out.substr(r.out.find("search.cc graph id=0"));
        CHECK(ring.find("nchannels=7") != std::string::npos);
        for (int c = 0; c < 7; ++c) {
            const int net = k == 0 ? c : c + 1;  // rail c + 1 in the node's own PCI order
            CHECK(ring.find(fmt::format("  channel {}: net {:x} | gpus {} ", c, net, c + 1)) != std::string::npos);
            CHECK(ring.find(fmt::format("| net {:x}\n", net)) != std::string::npos);
        }
    }
}

TEST_CASE("per-node graph files: deploy on a machine whose boxes number their NICs differently says how a launcher gives each node its "
          "file, and not on one whose boxes are alike") {
    Scratch dir("graph_nodes_deploy");
    const std::string down = nic_down_machine(dir), healthy = dir.file("healthy.json");
    REQUIRE(run("machine dgx-h100 --boxes 2 --network rail -o " + healthy).code == 0);
    for (const auto& [machine, per_node] : {std::pair{down, true}, std::pair{healthy, false}}) {
        const std::string out = dir.file(per_node ? "down_deploy" : "healthy_deploy");
        auto r = run(fmt::format("deploy --topology graph:{} --sizes 16M,1G --collectives allgather -o {}", machine, out));
        INFO(machine, ": ", r.err);
        REQUIRE(r.code == 0);
        const std::string readme = node_file_text(out + "/README.md");
        CHECK((readme.find("## One graph file per node") != std::string::npos) == per_node);
        CHECK((readme.find("NCCL_GRAPH_FILE=" + out + "/rings.node$((OMPI_COMM_WORLD_RANK / 8)).xml") != std::string::npos) == per_node);
    }
}

TEST_CASE("per-node graph files: deploy with its defaults on a machine with a NIC down writes NCCL's trees one file per node and leaves "
          "its rings to NCCL's own search") {
    // deploy wrote NCCL's own rings and trees in one file and stopped (exit 2: "NCCL's ring 0 enters its box at GPU 0, which has
    // no NIC"): every command must run on every machine `collsched machine` writes
    Scratch dir("graph_nodes_deploy_defaults");
    const std::string machine = nic_down_machine(dir), out = dir.file("deploy");
    auto r = run(fmt::format("deploy --topology graph:{} --sizes 1M,64M,1G -o {}", machine, out));
    INFO(r.err);
    REQUIRE(r.code == 0);
    const std::string readme = node_file_text(out + "/README.md");
    CHECK(readme.find("NCCL's rings: no graph file") != std::string::npos);
    CHECK(!std::filesystem::exists(out + "/nccl_graphs.xml"));
    // the tuner file picks NCCL's tree for allreduce at 64 MiB on this machine: its files, one a node, verify as a set
    REQUIRE(node_file_text(out + "/nccl_tuner.conf").find("allreduce,") != std::string::npos);
    CHECK(node_file_text(out + "/nccl_tuner.conf").find(",tree,") != std::string::npos);
    for (int k = 0; k < 4; ++k) CHECK(std::filesystem::exists(fmt::format("{}/nccl_graphs.node{}.xml", out, k)));
    CHECK(readme.find("NCCL_GRAPH_FILE=" + out + "/nccl_graphs.node$((OMPI_COMM_WORLD_RANK / 8)).xml") != std::string::npos);
    auto v = run(fmt::format("verify {}/nccl_graphs.xml --topology graph:{}", out, machine));
    INFO(v.out, v.err);
    CHECK(v.code == 0);
}

TEST_CASE("per-node graph files: deploy with its defaults on a machine whose NIC only sends leaves NCCL's rings to its own search, and "
          "the tuner file picks no algorithm whose table does not hold there") {
    // deploy stopped (exit 2: "the graph file of NCCL's channels does not hold on the machine": NCCL's ring of rail 0 enters box 0
    // by GPU 0's NIC, which receives nothing), and tune picked NCCL's tree for allreduce, a table the checker refutes there
    Scratch dir("graph_nodes_deploy_one_way");
    const std::string machine = dir.file("one_way.json"), out = dir.file("deploy");
    REQUIRE(run("machine dgx-h100 --boxes 4 --network rail --one-way 0-8 --one-way 0-16 --one-way 0-24 -o " + machine).code == 0);
    auto r = run(fmt::format("deploy --topology graph:{} --sizes 1M,64M,1G -o {}", machine, out));
    INFO(r.err);
    REQUIRE(r.code == 0);
    const std::string readme = node_file_text(out + "/README.md");
    CHECK(readme.find("NCCL's rings: no graph file. No graph file holds NCCL's own rings here") != std::string::npos);
    CHECK(!std::filesystem::exists(out + "/nccl_graphs.xml"));
    const std::string conf = node_file_text(out + "/nccl_tuner.conf");
    CHECK(conf.find(",tree,") == std::string::npos);
    auto t = run(fmt::format("tune --topology graph:{} --sizes 1M,64M,1G -o {}", machine, dir.file("tune.conf")));
    INFO(t.err);
    REQUIRE(t.code == 0);
    CHECK(t.out.find("note: nccl:tree allreduce: its table does not hold on the machine, not timed") != std::string::npos);
}
