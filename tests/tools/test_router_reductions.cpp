// Reductions under the steps objective on machines with routers (docs/synthesis.md, "Routers that
// forward"): allgather and broadcast searched with routers forwarding each copy once (replicate=no),
// reduce_scatter and allreduce by duality with them, every witness checked by the direct checker,
// Z3 and the simulator; a table that needs a router to add is refused by all three.
#include <doctest/doctest.h>

#include <string>

#include <fmt/format.h>

#include "cli_run.hpp"

using collsched::test::run;
using collsched::test::Scratch;

namespace {

/// `machine ARGS -o FILE` in `dir`; the file's path (REQUIREs exit 0).
std::string router_machine(const Scratch& dir, const std::string& name, const std::string& args) {
    const std::string file = dir.file(name + ".json");
    auto r = run("machine " + args + " -o " + file);
    INFO("machine ", args, "\n", r.err);
    REQUIRE(r.code == 0);
    return file;
}

/// verify (direct, z3 and both) and simulate agree that `table` holds (`holds`) or not.
void witnesses_agree(const std::string& table, bool holds) {
    for (const char* engine : {"direct", "z3", "both"}) {
        auto v = run(fmt::format("verify {} --engine {}", table, engine));
        INFO(table, " --engine ", engine, "\n", v.out, v.err);
        CHECK(v.code == (holds ? 0 : 1));
    }
    auto s = run("simulate " + table);
    INFO(table, ": simulate\n", s.out, s.err);
    CHECK(s.code == (holds ? 0 : 1));
}

const std::string model_line = "model: replicate=no kept for this machine (it has routers; a reduction needs routers that forward its partials";

/// A table file `name` in `dir` of `collective` on graph file `topo` under replicate=no and `queues`, its transfers `moves`
/// (JSON objects, one a line).
std::string router_table(const Scratch& dir, const std::string& name, const std::string& topo, const std::string& collective,
                         const std::string& queues, const std::string& moves) {
    return dir.file(name, fmt::format("{{\"format\": \"collsched.table/1\", \"topology\": \"graph:{}\",\n"
                                      " \"model\": {{\"ports\":\"multi\",\"queues\":\"{}\",\"replicate\":false,\"timing\":\"hop\"}},\n"
                                      " \"collective\": \"{}\",\n \"transfers\": [\n{}]}}\n",
                                      topo, queues, collective, moves));
}

}  // namespace

TEST_CASE("routers: optimize reduce_scatter and allreduce on rail 2 x 8 with rail switches as routers: proved, witnesses verify") {
    Scratch dir("router_reductions_2x8");
    const std::string f = router_machine(dir, "r2", "dgx-h100 --boxes 2 --network rail --switches routers");
    for (const auto& [coll, says] : {std::pair<std::string, std::string>{"reduce_scatter", "reduce_scatter: 4 steps (proved; lower bound 4)"},
                                     {"allreduce", "allreduce: 8 steps (proved; lower bound 8)"}}) {
        const std::string w = dir.file(coll + ".json");
        auto r = run(fmt::format("optimize --topology graph:{} --collective {} --timeout 60 -o {}", f, coll, w));
        INFO(coll, "\n", r.out, r.err);
        CHECK(r.code == 0);
        CHECK(r.out.rfind(model_line, 0) == 0);
        CHECK(r.out.find("replicate=no) by duality with allgather") != std::string::npos);
        CHECK(r.out.find(says) != std::string::npos);
        witnesses_agree(w, true);
        // routers that copy would have to add where they are reversed: refused with the reason
        auto y = run(fmt::format("optimize --topology graph:{} --collective {} --timeout 60 --model replicate=yes", f, coll));
        CHECK(y.code == 2);
        CHECK(y.err.find("the duality takes routers that forward (replicate=no)") != std::string::npos);
    }
}

TEST_CASE("routers: pareto reduce_scatter and allreduce on rail 2 x 8 with rail switches as routers: every point verifies") {
    Scratch dir("router_reductions_pareto");
    const std::string f = router_machine(dir, "r2", "dgx-h100 --boxes 2 --network rail --switches routers");
    for (const std::string coll : {"reduce_scatter", "allreduce"}) {
        auto r = run(fmt::format("pareto --topology graph:{} --collective {} --timeout 20 --max-chunks 2", f, coll));
        INFO(coll, "\n", r.out, r.err);
        CHECK((r.code == 0 || r.code == 3));
        CHECK(r.out.rfind(model_line, 0) == 0);
        CHECK(r.out.find("by duality with allgather") != std::string::npos);
    }
}

TEST_CASE("routers: reductions on rail 4 x 8 with rail switches as routers end with bounds within --timeout, never refused") {
    Scratch dir("router_reductions_4x8");
    const std::string f = router_machine(dir, "r4", "dgx-h100 --boxes 4 --network rail --switches routers");
    for (const std::string cmd : {"optimize --collective allreduce --timeout 3", "pareto --collective reduce_scatter --timeout 3 --max-chunks 1"}) {
        auto r = run(fmt::format("{} --topology graph:{}", cmd, f));
        INFO(cmd, "\n", r.out, r.err);
        CHECK((r.code == 0 || r.code == 3));
        CHECK(r.out.rfind(model_line, 0) == 0);
        CHECK(r.out.find("lower bound") != std::string::npos);
    }
}

TEST_CASE("routers: a reduction whose router would have to add is refused by every witness, one forwarding the partials holds") {
    Scratch dir("router_reductions_adding");
    const std::string star = dir.file("star3.json", "{\"processors\": 3, \"routers\": 1, \"edges\": [[0, \"r1.0\"], [1, \"r1.0\"], [2, \"r1.0\"]]}\n");
    auto table = [&](const std::string& name, const std::string& moves) {
        return router_table(dir, name, star, "reduce:0", "unbounded",
                            "  {\"step\": 1, \"from\": \"1\", \"to\": \"r1.0\", \"msg\": \"a(1)\"},\n"
                            "  {\"step\": 1, \"from\": \"2\", \"to\": \"r1.0\", \"msg\": \"a(2)\"},\n" + moves);
    };
    // r1.0 sends the sum of what it received: a rail switch without SHARP cannot
    const std::string adds = table("adds.json", "  {\"step\": 2, \"from\": \"r1.0\", \"to\": \"0\", \"msg\": \"a({1,2})\"}\n");
    witnesses_agree(adds, false);
    auto v = run("verify " + adds);
    CHECK(v.out.find("r1.0 forwards a({1,2}) in step 2 but has not received it") != std::string::npos);
    const std::string forwards = table("forwards.json",
                                       "  {\"step\": 2, \"from\": \"r1.0\", \"to\": \"0\", \"msg\": \"a(1)\"},\n"
                                       "  {\"step\": 3, \"from\": \"r1.0\", \"to\": \"0\", \"msg\": \"a(2)\"}\n");
    witnesses_agree(forwards, true);
    // optimize finds the forwarding reduce (3 steps: the channel into 0 carries one partial a step)
    auto o = run("optimize --collective reduce:0 --timeout 20 --topology graph:" + star);
    INFO(o.out, o.err);
    CHECK(o.code == 0);
    CHECK(o.out.find("reduce:0: 3 steps (proved; lower bound 3)") != std::string::npos);
}

TEST_CASE("routers: copies counted through forwarding routers give the end-to-end encoding's optima on the ideal fat tree") {
    // ideal:8 written as a graph file is searched by the dissemination encoding with counted copies;
    // ideal:8 itself by the end-to-end sends, exact there (queues=none): the optima must agree.
    Scratch dir("router_reductions_ideal");
    const std::string g = dir.file("ideal8.json", "{\"processors\": 8, \"routers\": 7, \"edges\": [[0, \"r1.0\"], [1, \"r1.0\"], [2, \"r1.1\"], "
                                                  "[3, \"r1.1\"], [4, \"r1.2\"], [5, \"r1.2\"], [6, \"r1.3\"], [7, \"r1.3\"], [\"r1.0\", \"r1.4\"], "
                                                  "[\"r1.1\", \"r1.4\"], [\"r1.2\", \"r1.5\"], [\"r1.3\", \"r1.5\"], [\"r1.4\", \"r1.6\"], "
                                                  "[\"r1.5\", \"r1.6\"]]}\n");
    for (const auto& [coll, steps] : {std::pair<std::string, int>{"allgather", 12}, {"broadcast:3", 8}})
        for (const std::string& topo : {std::string("ideal:8"), "graph:" + g}) {
            auto r = run(fmt::format("optimize --topology {} --collective {} --timeout 60 --model timing=hop,ports=single,queues=none,replicate=no",
                                     topo, coll));
            INFO(topo, " ", coll, "\n", r.out, r.err);
            CHECK(r.code == 0);
            CHECK(r.out.find(fmt::format("optimum: {} steps (proved", steps)) != std::string::npos);
        }
}

namespace {

/// The steps of `optimum: N steps (proved` in an optimize report, 0 when there is none.
int proved_steps(const std::string& out) {
    const std::string key = "optimum: ";
    const std::size_t at = out.find(key);
    if (at == std::string::npos || out.find("steps (proved", at) == std::string::npos) return 0;
    return std::stoi(out.substr(at + key.size()));
}

/// Every lower bound an optimize report lists ("      4  distance: ...") is at most `steps`.
void bounds_at_most(const std::string& out, int steps) {
    const std::size_t head = out.find("lower bounds (proved by counting):\n");
    REQUIRE(head != std::string::npos);
    std::size_t at = out.find('\n', head) + 1;
    int rows = 0;
    while (at < out.size() && out.compare(at, 6, "      ") == 0) {
        const int b = std::stoi(out.substr(at));
        CHECK(b <= steps);
        ++rows;
        at = out.find('\n', at) + 1;
    }
    CHECK(rows > 0);
}

}  // namespace

TEST_CASE("routers: scan and allreduce by the direct encoding through forwarding routers: proved, bounds below, witnesses agree") {
    Scratch dir("router_reductions_direct");
    // three processors on one router (two units each way) and a link 0 - 1; two boxes of two on a
    // box switch each, joined by two rail switches
    const std::string one = dir.file("one.json", "{\"processors\": 3, \"routers\": 1, \"edges\": [[0, \"r1.0\", 2], [1, \"r1.0\", 2], "
                                                 "[2, \"r1.0\", 2], [0, 1, 1]]}\n");
    const std::string rail = dir.file("rail.json", "{\"processors\": 4, \"routers\": 4, \"edges\": [[0, \"r1.0\", 2], [1, \"r1.0\", 2], "
                                                   "[2, \"r1.1\", 2], [3, \"r1.1\", 2], [0, \"r1.2\", 1], [2, \"r1.2\", 1], "
                                                   "[1, \"r1.3\", 1], [3, \"r1.3\", 1]]}\n");
    struct Case {
        std::string file, coll;
        int steps;
    };
    for (const std::string queues : {"unbounded", "none"})
        for (const Case& c : {Case{one, "scan", 2}, Case{one, "allreduce", 3}, Case{rail, "allreduce", 5}, Case{rail, "reduce_scatter", 4}}) {
            const std::string w = dir.file(c.coll + queues + ".json");
            auto r = run(fmt::format("optimize --topology graph:{} --collective {} --method direct --model queues={} --timeout 60 -o {}", c.file,
                                     c.coll, queues, w));
            INFO(c.file, " ", c.coll, " queues=", queues, "\n", r.out, r.err);
            CHECK(r.code == 0);
            CHECK(r.out.find("encoding combining") != std::string::npos);
            CHECK(proved_steps(r.out) == c.steps);
            bounds_at_most(r.out, c.steps);
            witnesses_agree(w, true);
        }
    // where the duality applies too: the same reduce_scatter; its allreduce (a reduce-scatter then an
    // allgather of P chunks) is one of the direct encoding's allreduces, never fewer steps
    auto rs = run(fmt::format("optimize --topology graph:{} --collective reduce_scatter --method duality --timeout 60", rail));
    CHECK(rs.out.find("reduce_scatter: 4 steps (proved; lower bound 4)") != std::string::npos);
    auto ar = run(fmt::format("optimize --topology graph:{} --collective allreduce --timeout 60", rail));
    INFO(ar.out);
    CHECK(ar.out.find("by duality with allgather") != std::string::npos);
    CHECK(ar.out.find("allreduce: 8 steps (proved; lower bound 8)") != std::string::npos);
}

TEST_CASE("routers: scan with the defaults on rail 2 x 8 with rail switches as routers: no schedule exists, at once") {
    // a(1) reaches processor 8 only from 0 (whose buffer may hold only a(0)) or from 9..15 (which 8 may not hold)
    Scratch dir("router_reductions_scan");
    const std::string f = router_machine(dir, "r2", "dgx-h100 --boxes 2 --network rail --switches routers");
    auto r = run(fmt::format("optimize --topology graph:{} --collective scan --timeout 30", f));
    INFO(r.out, r.err);
    CHECK(r.code == 1);
    CHECK(r.out.rfind(model_line, 0) == 0);
    CHECK(r.out.find("no schedule exists: the buffer rule (docs/semantics.md, \"Reductions\") forbids it: processor 8 must end with "
                     "a(1)") != std::string::npos);
}

TEST_CASE("routers: a scan whose router would have to add is refused by every witness, one forwarding the partials holds") {
    Scratch dir("router_reductions_scan_adding");
    const std::string star = dir.file("star3.json", "{\"processors\": 3, \"routers\": 1, \"edges\": [[0, \"r1.0\", 2], [1, \"r1.0\", 2], "
                                                    "[2, \"r1.0\", 2]]}\n");
    auto table = [&](const std::string& name, const std::string& moves) {
        return router_table(dir, name, star, "scan", "none",
                            "  {\"step\": 1, \"from\": \"0\", \"to\": \"r1.0\", \"msg\": \"a(0)\"},\n"
                            "  {\"step\": 1, \"from\": \"0\", \"to\": \"r1.0\", \"msg\": \"a(0)\"},\n"
                            "  {\"step\": 1, \"from\": \"1\", \"to\": \"r1.0\", \"msg\": \"a(1)\"},\n"
                            "  {\"step\": 2, \"from\": \"r1.0\", \"to\": \"1\", \"msg\": \"a(0)\"},\n" + moves);
    };
    // r1.0 sends 2 the sum a({0,1}) of what it received (and keeps a copy of a(0)): it cannot
    const std::string adds = table("adds.json", "  {\"step\": 2, \"from\": \"r1.0\", \"to\": \"2\", \"msg\": \"a({0,1})\"}\n");
    witnesses_agree(adds, false);
    // forwarded, the two partials arrive at 2 in one step on one channel and combine there
    const std::string forwards = table("forwards.json",
                                       "  {\"step\": 2, \"from\": \"r1.0\", \"to\": \"2\", \"msg\": \"a(0)\"},\n"
                                       "  {\"step\": 2, \"from\": \"r1.0\", \"to\": \"2\", \"msg\": \"a(1)\"}\n");
    witnesses_agree(forwards, true);
    auto o = run("optimize --collective scan --timeout 20 --model queues=none --topology graph:" + star);
    INFO(o.out, o.err);
    CHECK(o.code == 0);
    CHECK(proved_steps(o.out) == 2);
}

TEST_CASE("routers: partials arriving on one router channel in one step apply in message order, the rule the direct encoding writes") {
    // At 4 in step 4, a cover of its buffer a(4) and a partial disjoint from it: the cover first (a smaller least source)
    // holds; after a partial of a smaller least source the cover counts a(4) twice (sat/combining.cpp, routed_arrival).
    Scratch dir("router_reductions_order");
    std::string edges;
    for (int p = 0; p < 5; ++p) edges += fmt::format("{}[{}, \"r1.0\", 3]", p == 0 ? "" : ", ", p);
    const std::string star = dir.file("star5.json", fmt::format("{{\"processors\": 5, \"routers\": 1, \"edges\": [{}]}}\n", edges));
    auto table = [&](const std::string& name, int via0, int via1, const std::string& cover, const std::string& other) {
        std::string moves;
        auto move = [&](int step, const std::string& from, const std::string& to, const std::string& msg) {
            moves += fmt::format("{}  {{\"step\": {}, \"from\": \"{}\", \"to\": \"{}\", \"msg\": \"{}\"}}", moves.empty() ? "" : ",\n", step, from, to, msg);
        };
        move(1, "4", "r1.0", "a(4)");
        move(1, "2", "r1.0", "a(2)");
        move(2, "r1.0", std::to_string(via0), "a(4)");  // via0 holds {via0, 4}
        move(2, "r1.0", std::to_string(via1), "a(2)");  // via1 holds {via1, 2}
        move(3, std::to_string(via0), "r1.0", cover);
        move(3, std::to_string(via1), "r1.0", other);
        move(3, "3", "r1.0", "a(3)");
        move(4, "r1.0", "4", cover);
        move(4, "r1.0", "4", other);
        move(5, "r1.0", "4", "a(3)");
        return router_table(dir, name, star, "reduce:4", "unbounded", moves + "\n");
    };
    witnesses_agree(table("cover_first.json", 0, 1, "a({0,4})", "a({1,2})"), true);
    const std::string late = table("cover_late.json", 1, 0, "a({1,4})", "a({0,2})");
    witnesses_agree(late, false);
    auto v = run("verify " + late);
    CHECK(v.out.find("processor 4 receives a({1,4}) in step 4 while its buffer holds a({0,2,4}): combining them counts a(4) twice") !=
          std::string::npos);
}
