// NCCL's tree where the boxes number their nets differently (issue 56; verifier/constructions/nccl/NCCL.md, "The
// tables"): with NIC 0 down box 0 calls rails 1..7 nets 0..6, so NCCL's tree on box 0's order (channel 0 entering
// at its NIC-less GPU 0) does not hold; on one graph file per node each channel's chains stay on one rail. The tree
// holds, its per-node files read back give the same table, and NCCL's set is then whole on executor nccl.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/formats/export_nccl_graph.hpp"
#include "compiler/formats/nccl_graph_read.hpp"
#include "compiler/topology/topology.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/constructions/nccl/nccl_graph_check.hpp"
#include "verifier/time/candidates.hpp"
#include "verifier/time/constructions.hpp"

using namespace collsched;
using collsched::test::run;
using collsched::test::Scratch;

namespace {

std::shared_ptr<const Topology> nic_down(const Scratch& dir, int boxes) {
    const std::string file = dir.file(fmt::format("nic_down{}.json", boxes));
    REQUIRE(run(fmt::format("machine dgx-h100 --boxes {} --network rail --nic-down 0 -o {}", boxes, file)).code == 0);
    return Topology::parse("graph:" + file);
}

}  // namespace

TEST_CASE("nccl tree: with NIC 0 down NCCL's tree keeps each channel on a rail, holds, and its per-node graph files read back give "
          "the same table") {
    Scratch dir("nccl_tree_nodes");
    for (int boxes : {2, 4}) {
        CAPTURE(boxes);
        const auto topo = nic_down(dir, boxes);
        const nccl::Baseline tree = nccl::nccl_baseline(topo, Collective::parse("allreduce", *topo), topo->default_model(), "tree");
        const VerifyReport r = verify_direct(tree.table);
        const std::string why = r.violations.empty() ? std::string() : r.violations.front().detail;
        INFO(why);
        CHECK(r.holds());
        // channel c on rail c+1 (GPU c+1): on 4 boxes one file per node, box 0 naming it net c and the others net c+1;
        // on 2 boxes rail 0 is down in both, which name rail c+1 net c alike: one file
        const auto nodes = nccl::nccl_algorithm_node_graphs(*topo, "tree");
        REQUIRE(nodes.size() == (boxes == 4 ? 4u : 1u));
        std::vector<std::string> xmls;
        std::vector<NcclGraphFile> files;
        std::vector<nccl::NcclGraphSource> set;
        for (const auto& n : nodes) xmls.push_back(nccl_graphs_xml(n));
        for (std::size_t k = 0; k < xmls.size(); ++k) files.push_back(read_nccl_graph(xmls[k], fmt::format("tree.node{}.xml", k)));
        for (std::size_t k = 0; k < xmls.size(); ++k) set.push_back({&files[k], fmt::format("tree.node{}.xml", k)});
        CHECK(xmls[0].find("<net dev=\"0\"/>\n      <gpu dev=\"1\"/>") != std::string::npos);
        if (boxes == 4) CHECK(xmls[1].find("<net dev=\"1\"/>\n      <gpu dev=\"1\"/>") != std::string::npos);
        const nccl::GraphCheck g = nccl::check_nccl_graphs(set, *topo);
        REQUIRE(g.holds());
        REQUIRE(g.trees.size() == tree.channels);
        const SendTable back = nccl::nccl_graph_tree_table(topo, topo->default_model(), g, tree.pieces);
        CHECK(back.transfers == tree.table.transfers);
        CHECK(back.step_rounds == tree.table.step_rounds);
    }
    // NCCL's own rings cross rails there: no file
    CHECK_THROWS_AS(nccl::nccl_algorithm_node_graphs(*nic_down(dir, 4), "ring"), InputError);
}

TEST_CASE("nccl tree: with NIC 0 down on 4 x 8 H100 NCCL's tables are a whole set on executor nccl (gather_candidates' nccl_whole), "
          "and convert nccl:tree writes a file per node that verify reads back and times") {
    Scratch dir("nccl_tree_whole");
    const auto topo = nic_down(dir, 4);
    const SynthInstance in{topo, topo->default_model(), Collective::parse("allreduce", *topo)};
    CandidateQuery q{in, {16.0 * 1048576, 1073741824.0}, std::chrono::steady_clock::now() + std::chrono::seconds(60)};
    q.executor = builtin_executor(ExecutorKind::nccl);
    std::vector<std::string> notes;
    std::vector<TimeCandidate> unchecked;
    bool whole = false;
    const std::vector<TimeCandidate> kept = gather_candidates(q, {nccl_provider()}, notes, &unchecked, &whole);
    INFO(fmt::format("{}", fmt::join(notes, "\n")));
    CHECK(whole);
    bool tree = false;
    for (const TimeCandidate& c : kept) tree = tree || c.name == "nccl tree";
    for (const TimeCandidate& c : unchecked) tree = tree || c.name == "nccl tree";
    CHECK(tree);
    const std::string out = dir.file("tree.xml"), machine = "graph:" + dir.file("nic_down4.json");
    REQUIRE(run(fmt::format("convert nccl:tree --topology {} -o {}", machine, out)).code == 0);
    for (std::uint32_t k = 0; k < 4; ++k) CHECK(std::filesystem::exists(nccl_graph_node_path(out, k)));
    const auto v = run(fmt::format("verify {} --topology {} --size 1G --executor nccl", out, machine));
    INFO(v.out, v.err);
    CHECK(v.code == 0);
    CHECK(v.out.find("trees  holds") != std::string::npos);
    CHECK(v.out.find("NCCL's tree allreduce on the file's 7 tree channels") != std::string::npos);
    CHECK(run(fmt::format("convert nccl:tree --topology {}", machine)).code == 2);  // a file per node: -o needed
}

TEST_CASE("real parsers: NCCL's graph reader loads each node's tree file with NIC 0 down, channel c on net c in box 0 and c + 1 "
          "elsewhere, its chain from GPU c + 1" * doctest::test_suite("real_parsers") * doctest::skip()) {
    const char* loader = std::getenv("COLLSCHED_NCCL_GRAPH_LOADER");
    REQUIRE_MESSAGE(loader != nullptr, "COLLSCHED_NCCL_GRAPH_LOADER must name the loader (ctest sets it where NCCL's source is present)");
    Scratch dir("nccl_tree_nodes_parser");
    nic_down(dir, 4);
    const std::string machine = "graph:" + dir.file("nic_down4.json"), out = dir.file("tree.xml"), folder = dir.file("deploy");
    REQUIRE(run(fmt::format("convert nccl:tree --topology {} -o {}", machine, out)).code == 0);
    const auto d = run(fmt::format("deploy --topology {} --sizes 1M,64M,1G --timeout 120 -o {}", machine, folder));
    INFO(d.out, d.err);
    REQUIRE(d.code == 0);
    for (const std::string& base : {out, folder + "/nccl_graphs.xml"}) {
        for (std::uint32_t k = 0; k < 4; ++k) {
            const std::string file = nccl_graph_node_path(base, k);
            // search.cc's own ncclTopoGetGraphFromXml on a node of 8 GPUs, as node k loads its file
            auto r = collsched::test::run_shell(fmt::format("'{}' --gpus 8 '{}'", loader, file));
            INFO(file, ": ", r.out, r.err);
            REQUIRE(r.code == 0);
            const auto at = r.out.find("search.cc graph id=1");
            REQUIRE(at != std::string::npos);
            const std::string tree = r.out.substr(at);
            CHECK(tree.find("pattern=3") != std::string::npos);  // NCCL_TOPO_PATTERN_TREE
            CHECK(tree.find("nchannels=7") != std::string::npos);
            for (int c = 0; c < 7; ++c) {
                const int net = k == 0 ? c : c + 1;  // rail c + 1 in the node's own PCI order
                CHECK(tree.find(fmt::format("  channel {}: net {:x} | gpus {} ", c, net, c + 1)) != std::string::npos);
            }
        }
    }
}

TEST_CASE("nccl ring: with NIC 0 down each node starts channel c at its own net c (box 0 at GPU c+1, the others at GPU c) and leaves "
          "by that NIC") {
    Scratch dir("nccl_ring_nets");
    const auto topo = nic_down(dir, 4);
    const NcclBoxes b = nccl_graph_boxes(*topo);
    const nccl::RingRoutes r = nccl::nccl_ring_routes(*topo, CollectiveKind::allgather);
    REQUIRE(r.rings.size() == 7);  // box 0's 7 nets
    for (std::uint32_t c = 0; c < r.rings.size(); ++c) {
        CAPTURE(c);
        const nccl::Ring& ring = r.rings[c];
        for (std::uint32_t k = 0; k < b.count; ++k) {
            CAPTURE(k);
            // search.cc:736 per node: net c, in the node's PCI order (box 0 has no NIC beside GPU 0)
            const Node first = ring.order[k * b.per_box], last = ring.order[(k + 1) * b.per_box - 1];
            CHECK(b.local[idx(first)] == (k == 0 ? c + 1 : c));
            CHECK(b.nic[idx(first)] == static_cast<int>(c));
            // PXN: the hop out of the box passes the GPU it entered at (its NIC), not another
            const std::vector<ChannelId>& out = ring.hops[(k + 1) * b.per_box - 1];
            REQUIRE(out.size() >= 2);
            CHECK(topo->channel(out.front()).from == last);
            bool through = false;
            for (ChannelId e : out) through = through || topo->channel(e).from == first;
            CHECK(through);
        }
    }
}
