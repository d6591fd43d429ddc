// The command line: outputs, exit codes (0 holds, 1 violated, 2 bad input) and clear messages.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_run.hpp"

using collsched::test::run;
using collsched::test::source;

TEST_CASE("cli: topo ebft:8 lists 8 processors, 7 routers and 28 channels with capacities 1, 2, 4 by level") {
    auto r = run("topo ebft:8 --format json");
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["processors"].size() == 8);
    CHECK(j["routers"].size() == 7);
    REQUIRE(j["channels"].size() == 28);
    std::map<int, std::set<int>> caps;
    for (auto& c : j["channels"]) caps[c["level"].get<int>()].insert(c["cap"].get<int>());
    CHECK(caps == std::map<int, std::set<int>>{{1, {1}}, {2, {2}}, {3, {4}}});
    auto d = run("topo torus:3x5 --format dot");
    CHECK(d.code == 0);
    CHECK(d.out.starts_with("digraph \"torus:3x5\" {"));
}

TEST_CASE("cli: verify exit codes") {
    auto ok = run("verify " + source("tests/data/ebft4_alltoall.json"));
    CHECK(ok.code == 0);
    CHECK(ok.out.starts_with("verdict: holds (6 steps, 40 transfers; engine direct"));
    auto js = run("verify --json " + source("tests/data/ebft4_alltoall.json"));
    CHECK(js.code == 0);
    auto j = nlohmann::json::parse(js.out);
    CHECK(j["verdict"] == "holds");
    CHECK(j["steps"] == 6);
    CHECK(j["properties"]["capacity"] == "holds");

    std::string broken = "/tmp/collsched_cli_broken.json";
    {
        std::ifstream in(source("tests/data/ebft4_alltoall.json"));
        std::stringstream ss;
        ss << in.rdbuf();
        std::string text = ss.str();
        // move m(0,3)'s first hop from step 2 onto step 1, where m(0,2) already uses 0->r1.0
        std::string from = R"J({"step": 2, "from": "0", "to": "r1.0", "msg": "m(0,3)"})J";
        auto at = text.find(from);
        REQUIRE(at != std::string::npos);
        text.replace(at, from.size(), R"J({"step": 1, "from": "0", "to": "r1.0", "msg": "m(0,3)"})J");
        std::ofstream(broken) << text;
    }
    auto bad = run("verify " + broken);
    CHECK(bad.code == 1);
    CHECK(bad.out.find("capacity: step 1, channel 0->r1.0: 2 messages (m(0,2), m(0,3)) but capacity 1") != std::string::npos);
    std::remove(broken.c_str());
}

TEST_CASE("cli: bad input is one clear line and exit code 2") {
    auto missing = run("verify /nonexistent/table.json");
    CHECK(missing.code == 2);
    CHECK(missing.err == "collsched: error: /nonexistent/table.json: cannot open file (No such file or directory)\n");
    auto spec = run("topo ebft:6");
    CHECK(spec.code == 2);
    CHECK(spec.out.empty());
    CHECK(spec.err == "collsched: error: topology 'ebft:6': 6 leaves is not a power of 2 (at least 2)\n");
    auto bad_format = run("topo ebft:4 --format png");
    CHECK(bad_format.code == 2);
    auto unknown = run("frobnicate");
    CHECK(unknown.code == 2);
    std::string file = "/tmp/collsched_cli_bad.json";
    std::ofstream(file) << "{\"format\": \"collsched.table/1\", \"topology\": \"ebft:4\",\n \"collective\": \"alltoall\", \"transfers\": [\n"
                           "  {\"step\": 1, \"from\": \"0\", \"to\": \"r1.0\", \"msg\": \"m(0,1)\"},\n  {\"step\": 2, \"from\": \"r1.0\"";
    auto trunc = run("verify " + file);
    CHECK(trunc.code == 2);
    CHECK(trunc.err.find("collsched: error: " + file + ":4:29: malformed JSON:") == 0);
    std::remove(file.c_str());
}

TEST_CASE("cli: every command has --help") {
    for (const char* cmd : {"", "demo", "topo", "verify", "simulate"}) {
        CAPTURE(cmd);
        auto r = run(std::string(cmd) + " --help");
        CHECK(r.code == 0);
        CHECK(r.out.find("Usage:") != std::string::npos);
    }
}

TEST_CASE("cli: demo builds, verifies and simulates the EBFT total exchange") {
    auto r = run("demo -n 8");
    CHECK(r.code == 0);
    CHECK(r.out.find("result: the paper's schedule holds in 12 steps as claimed, and 11 steps is optimal; the checker and the "
                     "simulator agree") != std::string::npos);
}
