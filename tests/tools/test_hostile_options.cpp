// Options and small files under hostile input (issue 41, section 4): --expect keys, buffer sizes,
// empty file names, graph-file places, a link group over its capacity under simulate.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "tests/tools/cli_run.hpp"

using namespace collsched;
using collsched::test::run;
using collsched::test::source;

TEST_CASE("hostile options: an --expect file with an unknown key is refused at it, with the closest key") {
    test::Scratch dir("hostile_expect_keys");
    const std::string plan = source("tests/data/mscclpp/ring_allgather_8.json");
    auto r = run("verify " + plan + " --expect " + dir.file("e.json", "{\"outputs\": [\n {\"rank\": 1, \"chunk\": 0, \"hold\": [[0, 0]]}]}"));
    CHECK(r.code == 2);
    CHECK(r.err.find("e.json:2:34: outputs[0]: unknown key \"hold\" (did you mean \"holds\"?)") != std::string::npos);
    r = run("verify " + plan + " --expect " +
            dir.file("f.json", "{\"outputs\": [{\"rank\": 1, \"chunk\": 0, \"holds\": [[0, 0]], \"bufer\": \"o\"}]}"));
    CHECK(r.code == 2);
    CHECK(r.err.find("unknown key \"bufer\" (did you mean \"buffer\"?)") != std::string::npos);
    r = run("verify " + plan + " --expect " + dir.file("g.json", "{\"output\": [], \"outputs\": []}"));
    CHECK(r.code == 2);
    CHECK(r.err.find("g.json:1:12: unknown key \"output\" (did you mean \"outputs\"?)") != std::string::npos);
    // the same reader serves MSCCL-IR
    r = run("verify " + source("tests/data/msccl/allgather_ring.xml") + " --expect " + dir.file("e.json"));
    CHECK(r.code == 2);
    CHECK(r.err.find("unknown key \"hold\"") != std::string::npos);
}

TEST_CASE("hostile options: a buffer size below 1 byte or above 2^53 bytes is refused, and an empty output name is refused") {
    const std::string table = source("tests/data/ring8_allgather.json");
    // 9007199254740993 (2^53 + 1) reads as the double 2^53 and was accepted
    for (const char* size : {"1e-5", "0.5", "18446744073709551616", "1e30", "1K..1e20", "9007199254740993", "9007199254740993B"}) {
        CAPTURE(size);
        auto r = run(fmt::format("verify {} --size {}", table, size));
        CHECK(r.code == 2);
        CHECK(r.err.find("bad size") != std::string::npos);
        CHECK(r.out.empty());
    }
    CHECK(run(fmt::format("verify {} --size 1", table)).code == 0);
    CHECK(run(fmt::format("verify {} --size 8192TiB", table)).code == 0);
    CHECK(run(fmt::format("verify {} --size 9007199254740992", table)).code == 0);
    auto r = run("compare --svg '' " + table);
    CHECK(r.code == 2);
    // CLI11's own refusals carry the prefix every other error has.
    CHECK(r.err.starts_with("collsched: error: --svg: expected a file name, not an empty one\n"));
    r = run("compile " + source("schedules/ideal/broadcast.sched") + " -o ''");
    CHECK(r.code == 2);
    CHECK(r.out.empty());
}

TEST_CASE("hostile options: graph-file errors in link_types and edges name line and column") {
    test::Scratch dir("hostile_graph_places");
    auto topo = [&](const std::string& text) { return run("topo graph:" + dir.file("g.json", text)); };
    struct Case {
        std::string text, where;
    };
    const Case cases[] = {
        {"{\"processors\": 3,\n \"link_types\": {\"fast\": {\"bandwidth\": \"300 GB/s\", \"speed\": 1}},\n \"edges\": [[0,1],[1,2]]}",
         "g.json:2:60: link_types.fast: unknown field \"speed\""},
        {"{\"processors\": 3,\n \"link_types\": [1],\n \"edges\": [[0,1],[1,2]]}", "g.json:2:16: \"link_types\" must be an object"},
        {"{\"processors\": 3,\n \"link_types\": {\"fast\": 5},\n \"edges\": [[0,1],[1,2]]}", "g.json:2:25: link_types.fast: expected"},
        {"{\"processors\": 3,\n \"link_types\": {\"fast\": {\"bandwidth\": \"1 GB/s\"}},\n \"edges\": [[0,1,1,7],[1,2]]}",
         "g.json:3:19: edges[0]: link type 7 must be a name"},
        {"{\"processors\": 3,\n \"edges\": [[0,1],\n   [1,2,1,\"x\",5]]}", "g.json:3:4: edges[1]: expected [u, v]"},
        {"{\"processors\": 3,\n \"edges\": [[0,1],\n   [1,9]]}", "g.json:3:4: edges[1]: node 9 does not exist"},
        // the header, an edge listed twice, groups and switches likewise (they named the file alone; "routers": "x" ended in
        // an uncaught JSON type error, exit 134)
        {"{\"processors\": 3,\n \"routers\": \"x\", \"edges\": [[0,1]]}", "g.json:2:13: \"routers\" is \"x\", not a whole number"},
        {"{\"processors\": 3.5, \"edges\": [[0,1]]}", "g.json:1:16: \"processors\" is 3.5, not a whole number"},
        {"{\"processors\": 3, \"edges\": {}}", "g.json:1:28: \"edges\" must be a list"},
        {"{\"processors\": 3,\n \"edges\": [[0,1], [1,2],\n   [1,0]]}", "g.json:3:4: edges[2]: the edge 0 -- 1 is listed twice (first as edges[0];"},
        {"{\"processors\": 3, \"edges\": [[0,1],[1,2]],\n \"groups\": [{\"name\": \"g\", \"cap\": 1, \"channels\": [[0,1], [0,2]]}]}",
         "g.json:2:57: groups[0]: there is no channel 0 -> 2"},
        {"{\"processors\": 3, \"edges\": [[0,1],[1,2]],\n \"groups\": [{\"name\": \"g\", \"cap\": 1, \"channels\": [[0,1]], \"x\": 1}]}",
         "g.json:2:63: groups[0]: unknown field \"x\""},
        {"{\"processors\": 3, \"edges\": [[0,1],[1,2]],\n \"groups\": [{\"name\": \"g\", \"cap\": 0, \"channels\": [[0,1]]}]}",
         "g.json:2:34: groups[0]: capacity 0 must be a positive integer"},
        {"{\"processors\": 3, \"edges\": [[0,1],[1,2]],\n \"groups\": [{\"name\": \"g\", \"cap\": 1, \"channels\": []}]}",
         "g.json:2:13: groups[0]: group 'g' has no channel"},
        {"{\"processors\": 3, \"routers\": 1, \"edges\": [[0,\"r1.0\"],[1,2]],\n \"switches\": [{\"router\": \"r1.0\", \"reduce\": \"yes\"}]}",
         "g.json:2:15: switches[0]: \"reduce\" must be true or false"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.text);
        auto r = topo(c.text);
        CHECK(r.code == 2);
        CHECK(r.err.find(c.where) != std::string::npos);
    }
}

TEST_CASE("hostile options: simulate names the statement of a link group over its capacity") {
    test::Scratch dir("hostile_group_statement");
    const std::string machine = source("schedules/machines/nvswitch8.json");
    const std::string text = fmt::format("topology graph(\"{}\")\ncollective allgather chunks 2\n\nstep 1 {{\n  send 0 -> 1 msg b(0, 0)\n  send 0 -> 2 msg "
                                         "b(0, 1)\n}}\n",
                                         machine);
    auto r = run("simulate " + dir.file("x.sched", text));
    CHECK(r.code == 1);
    CHECK(r.out.find("group gpu0.out carries 2 messages (b(0,0), b(0,1)) on its 7 channels but its capacity is 1 (at " + dir.file("x.sched") + ":5:3)") !=
          std::string::npos);
}

TEST_CASE("hostile options: a size of 1.5 bytes, an empty --memory, and --size-range up to 2^64 - 1 exactly") {
    const std::string table = source("tests/data/ring8_allgather.json");
    for (const char* size : {"1.5", "2.5B", "1K..1.5M,3.5"}) {
        CAPTURE(size);
        auto r = run(fmt::format("verify {} --size {}", table, size));
        CHECK(r.code == 2);
        CHECK(r.err.find("a size is a whole number of bytes") != std::string::npos);
    }
    CHECK(run(fmt::format("verify {} --size 1.5K", table)).code == 0);  // 1536 bytes
    auto m = run("optimize --topology ring:4 --collective allgather --memory ''");
    CHECK(m.code == 2);
    CHECK(m.err == "collsched: error: --memory: expected a size such as 4G, 512MiB or 25%, not an empty one\n");
    // 2^64 - 1, the documented default maximum, written out: it read as the double 2^64 and was refused
    test::Scratch dir("size_range_max");
    const std::string plan = dir.file("p.json");
    auto r = run(fmt::format("convert {} --format mscclpp --size-range ..18446744073709551615 -o {}", table, plan));
    INFO(r.err);
    CHECK(r.code == 0);
    r = run(fmt::format("convert {} --format mscclpp --size-range 1K..18446744073709551615 -o {}", table, plan));
    CHECK(r.code == 0);
    r = run(fmt::format("convert {} --format mscclpp --size-range 18446744073709551616.. -o {}", table, plan));
    CHECK(r.code == 2);
    CHECK(r.err.find("18446744073709551616 is above 2^64 - 1 bytes") != std::string::npos);
}
