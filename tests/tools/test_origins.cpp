// Counterexamples of a schedule name the `send` or `hop` statement behind them: verify and
// simulate on a .sched, `compile --locations` and the "at" field, and the lowering's side table
// of origins (CompileOptions::record_locations), which must follow the transfers through sorting.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/lower/lower.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/check/report.hpp"

using collsched::test::run;
using collsched::test::source;

namespace {

const std::string broken = "tests/tools/data/origins_broken.sched";

std::string line_with(const std::string& text, const std::string& start) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.starts_with(start)) return line;
    return {};
}

}  // namespace

TEST_CASE("origins: verify of a schedule names the statement of the capacity and causality counterexamples") {
    const std::string file = source(broken);
    auto r = run("verify " + file);
    CHECK(r.code == 1);
    CHECK(line_with(r.out, "  capacity: ") ==
          "  capacity: step 2, channel r1.0->r2.0: 2 messages (b(0), b(1)) but capacity 1 (at " + file + ":13:3)");
    CHECK(line_with(r.out, "  causality: ") ==
          "  causality: step 2, channel r1.1->2, router r1.1: r1.1 forwards b(3) in step 2 but has not received it (at " + file +
              ":15:5)");
    // completeness is not tied to a transfer: no origin
    CHECK(line_with(r.out, "  completeness: ") == "  completeness: processor 1: b(0) never reaches processor 1");

    auto z = run("verify --engine z3 " + file);
    CHECK(z.code == 1);
    CHECK(line_with(z.out, "  capacity: ").ends_with("(at " + file + ":13:3)"));

    auto js = run("verify --json " + file);
    CHECK(js.code == 1);
    auto j = nlohmann::json::parse(js.out);
    REQUIRE(j["violations"].size() >= 2);
    CHECK(j["violations"][0]["origin"] == file + ":13:3");
    CHECK(j["violations"][1]["origin"] == file + ":15:5");
}

// Issue 14: 20 capacity violations made in one loop used to point at one (at file:line:col) with
// nothing to tell them apart; each now carries the loop values of the run that made its transfer.
TEST_CASE("origins: counterexamples from a loop carry the loop values of the transfer they name") {
    const std::string file = "/tmp/collsched_test_when." + std::to_string(::getpid()) + ".sched";
    std::ofstream(file) << "topology ring(4)\ncollective alltoall\nfor s in 0 .. 3 {\n  step 1 {\n"
                           "    for d in 1 .. 2 { send s -> (s + 1) % 4 msg m(s, (s + d) % 4) }\n  }\n}\n";
    auto r = run("verify " + file);
    CHECK(r.code == 1);
    // Each channel s -> s+1 carries m(s, (s + 1) % 4) and m(s, (s + 2) % 4) in step 1; the
    // counterexample names the message with the lower id, so the run it names is d = 1 except
    // on 2 -> 3, where m(2,0) comes first and was sent by d = 2.
    CHECK(r.out.find("  capacity: step 1, channel 0->1: 2 messages (m(0,1), m(0,2)) but capacity 1 (at " + file +
                     ":5:23, when s = 0, d = 1)\n") != std::string::npos);
    CHECK(r.out.find("  capacity: step 1, channel 2->3: 2 messages (m(2,0), m(2,3)) but capacity 1 (at " + file +
                     ":5:23, when s = 2, d = 2)\n") != std::string::npos);
    auto z = run("verify --engine z3 " + file);
    CHECK(line_with(z.out, "  capacity: step 1, channel 3->0").ends_with("(at " + file + ":5:23, when s = 3, d = 1)"));
    auto js = run("verify --json " + file);
    auto j = nlohmann::json::parse(js.out);
    std::vector<std::string> when;
    for (const auto& v : j["violations"])
        if (v["property"] == "capacity") {
            CHECK(v["origin"] == file + ":5:23");
            when.push_back(v["when"].get<std::string>());
        }
    std::sort(when.begin(), when.end());
    CHECK(when == std::vector<std::string>{"s = 0, d = 1", "s = 1, d = 1", "s = 2, d = 2", "s = 3, d = 1"});
    // The table compiled with --locations has the statement but no loop values.
    const std::string table = file + ".json";
    REQUIRE(run("compile --locations -o " + table + " " + file).code == 0);
    CHECK(run("verify " + table).out.find("(at " + file + ":5:23)\n") != std::string::npos);
    std::remove(table.c_str());
    std::remove(file.c_str());
}

TEST_CASE("origins: simulate of a schedule ends its halt message with the statement") {
    const std::string file = source(broken);
    auto r = run("simulate " + file);
    CHECK(r.code == 1);
    CHECK(line_with(r.out, "  step 2: ") ==
          "  step 2: channel r1.0->r2.0 carries 2 messages (b(0), b(1)) but its capacity is 1 (at " + file + ":13:3)");
}

TEST_CASE("origins: compile --locations writes \"at\" per transfer and verify of that table names the statement") {
    const std::string file = source(broken);
    const std::string out = "/tmp/collsched_test_origins." + std::to_string(::getpid()) + ".json";
    auto c = run("compile --locations -o " + out + " " + file);
    REQUIRE(c.code == 0);
    std::ifstream in(out);
    auto j = nlohmann::json::parse(in);
    REQUIRE(j["transfers"].size() == 5);
    for (const auto& t : j["transfers"]) CHECK(t["at"].get<std::string>().starts_with(file + ":"));
    CHECK(j["transfers"][0]["at"] == file + ":9:3");  // step 1, 0->r1.0

    auto from_table = run("verify " + out);
    auto from_schedule = run("verify " + file);
    CHECK(from_table.code == 1);
    CHECK(line_with(from_table.out, "  capacity: ") == line_with(from_schedule.out, "  capacity: "));
    CHECK(line_with(from_table.out, "  causality: ") == line_with(from_schedule.out, "  causality: "));
    std::remove(out.c_str());

    // the default table has no "at"; --locations is for the JSON table only
    auto plain = run("compile " + file);
    REQUIRE(plain.code == 0);
    CHECK(plain.out.find("\"at\"") == std::string::npos);
    auto csv = run("compile --locations --format csv " + file);
    CHECK(csv.code == 2);
    CHECK(csv.err.find("--locations applies to --format json, not csv") != std::string::npos);
}

TEST_CASE("origins: the lowering records them only on request, and they follow the sort under every policy") {
    using namespace collsched;
    // The step 2 statement comes first in the text, so the sort moves its transfers after step 1's.
    const std::string text = R"(topology ring(4)
model hop(policy = POLICY)
collective broadcast(0)
step 2 { send 1 -> 2 }
step 1 { send 0 -> 1
         send 0 -> 3 }
)";
    for (const char* policy : {"cut-through", "fifo", "flood", "adaptive"}) {
        CAPTURE(policy);
        std::string t = text;
        t.replace(t.find("POLICY"), 6, policy);
        Diagnostics diags;
        CompileOptions plain;
        auto a = compile_text(t, "x.sched", plain, diags);
        REQUIRE(a);
        CHECK(a->transfer_origins.empty());
        CHECK(a->origins.empty());
        CompileOptions record;
        record.record_locations = true;
        auto b = compile_text(t, "x.sched", record, diags);
        REQUIRE(b);
        CHECK(b->transfers == a->transfers);  // recording changes nothing else
        REQUIRE(b->transfer_origins.size() == b->transfers.size());
        for (std::size_t i = 0; i < b->transfers.size(); ++i) {
            const Channel& ch = b->topology->channel(b->transfers[i].channel);
            std::string at = b->origins[b->transfer_origins[i]];
            std::string want = idx(ch.from) == 1 ? "x.sched:4:10" : idx(ch.to) == 1 ? "x.sched:5:10" : "x.sched:6:10";
            CHECK(at == want);
        }
    }
}

TEST_CASE("origins: verify prints a schedule's claims with their check against the steps") {
    const std::string file = "/tmp/collsched_test_claims." + std::to_string(::getpid()) + ".sched";
    std::ofstream(file) << "topology ring(4)\ncollective broadcast(0)\ncite \"a paper\"\nclaim steps <= 1\nbound lower = 2\n"
                           "claim buffer = 0\nstep 1 { send 0 -> 1 }\nstep 2 { send 1 -> 2\n send 0 -> 3 }\n";
    auto r = run("verify " + file);
    CHECK(r.code == 0);
    CHECK(r.out.find("claims:\n  cite \"a paper\"\n  claim steps <= 1: violated (2 steps)\n  bound lower = 2: holds (2 steps)\n"
                     "  claim buffer = 0: not checked (collsched reproduce measures it)\n") != std::string::npos);
    auto js = run("verify --json " + file);
    auto j = nlohmann::json::parse(js.out);
    REQUIRE(j["claims"].size() == 4);
    CHECK(j["claims"][1] == nlohmann::json{{"statement", "claim steps <= 1"}, {"field", "claim_at_most"}, {"value", 1}, {"check", "violated"}});
    CHECK(j["claims"][0].dump() == R"({"field":"cite","statement":"cite \"a paper\"","value":"a paper"})");
    std::remove(file.c_str());
}
