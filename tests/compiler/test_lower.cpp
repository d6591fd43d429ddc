// The schedule compiler: lowering policies, evaluation, errors, and the EBFT total exchange
// against the built-in generator.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/table/builder.hpp"
#include "compiler/lower/formula.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/io/table_printer.hpp"

using namespace collsched;

namespace {

struct Result {
    std::optional<SendTable> table;
    Diagnostics diags;
    std::vector<std::string> codes() const {
        std::vector<std::string> c;
        for (const auto& d : diags.all())
            if (d.severity == Severity::error) c.push_back(d.code);
        return c;
    }
};

Result run(const std::string& text, CompileOptions options = {}) {
    Result r;
    r.table = compile_text(text, "t.sched", options, r.diags);
    return r;
}

/// "step from->to msg" per transfer, in table order.
std::vector<std::string> rows(const SendTable& t) {
    std::vector<std::string> out;
    Messages ms = t.messages();
    for (const Transfer& x : t.transfers) {
        const Channel& c = t.topology->channel(x.channel);
        out.push_back(fmt::format("{} {}->{} {}", x.step, t.topology->node_name(c.from), t.topology->node_name(c.to), ms.name(x.message)));
    }
    return out;
}

const std::string ring4 = "topology ring(4)\ncollective allgather\n";

}  // namespace

TEST_CASE("ebft_alltoall.sched equals the built-in phase total exchange for n = 4 .. 64") {
    const std::string path = std::string(COLLSCHED_SOURCE_DIR) + "/schedules/bft/ebft_alltoall.sched";
    for (std::uint32_t n : {4u, 8u, 16u, 32u, 64u}) {
        CAPTURE(n);
        Diagnostics diags;
        auto table = compile_file(path, {fmt::format("n={}", n)}, {}, diags);
        INFO(diags.render());
        REQUIRE(table);
        SendTable expected = bft_phase_alltoall(Topology::parse(fmt::format("ebft:{}", n)));
        std::uint32_t log_n = 0;
        while ((1u << log_n) < n) ++log_n;
        CHECK(table->steps() == n + 2 * log_n - 2);
        CHECK(table->transfers.size() == expected.transfers.size());
        CHECK(table->transfers == expected.transfers);
        CHECK(table->model == expected.model);
        CHECK(table->collective == expected.collective);
        CHECK(table->topology->spec() == fmt::format("ebft:{}", n));
    }
}

TEST_CASE("cut-through: hop k of a send in step s is in step s+k-1") {
    auto r = run(ring4 + "step 3 { send 0 -> 2 }\n");
    REQUIRE(r.table);
    CHECK(rows(*r.table) == std::vector<std::string>{"3 0->1 b(0)", "4 1->2 b(0)"});
}

TEST_CASE("default messages follow the collective, msg overrides") {
    SUBCASE("personalized collectives send m(src, dst)") {
        auto r = run("topology ring(4)\ncollective scatter(1)\nstep 1 { send 1 -> 2 }\n");
        REQUIRE(r.table);
        CHECK(rows(*r.table) == std::vector<std::string>{"1 1->2 m(1,2)"});
    }
    SUBCASE("others send b(src)") {
        auto r = run("topology ring(4)\ncollective broadcast(1)\nstep 1 { send 1 -> 2 }\n");
        REQUIRE(r.table);
        CHECK(rows(*r.table) == std::vector<std::string>{"1 1->2 b(1)"});
    }
    SUBCASE("no collective is custom: b(src)") {
        auto r = run("topology ring(4)\nstep 1 { send 1 -> 2 msg a(1) }\nstep 2 { send 3 -> 2 }\n");
        REQUIRE(r.table);
        CHECK(rows(*r.table) == std::vector<std::string>{"1 1->2 a(1)", "2 3->2 b(3)"});
        CHECK(r.table->collective.kind == CollectiveKind::custom);
    }
}

TEST_CASE("forwarding needs the data to have arrived by the end of the previous step") {
    SUBCASE("arrived in time") {
        auto r = run(ring4 + "step 1 { send 0 -> 1 }\nstep 2 { send 1 -> 2 msg b(0) }\n");
        CHECK(r.table);
    }
    SUBCASE("arrives in the same step") {
        auto r = run(ring4 + "step 1 { send 0 -> 1 }\nstep 1 { send 1 -> 2 msg b(0) }\n");
        CHECK_FALSE(r.table);
        CHECK(r.codes() == std::vector<std::string>{"E046"});
        CHECK(r.diags.render().find("it first reaches 1 at the end of step 1") != std::string::npos);
    }
    SUBCASE("never arrives") {
        auto r = run(ring4 + "step 2 { send 1 -> 2 msg b(0) }\n");
        CHECK(r.codes() == std::vector<std::string>{"E046"});
    }
}

TEST_CASE("wormhole timing: a send crosses its whole route in its round") {
    auto r = run("topology linear(4)\nmodel wormhole(ts = 2, tc = 0.5)\ncollective broadcast(0)\nstep 1 { send 0 -> 3 }\n");
    REQUIRE(r.table);
    CHECK(rows(*r.table) == std::vector<std::string>{"1 0->1 b(0)", "1 1->2 b(0)", "1 2->3 b(0)"});
    CHECK(r.table->model.timing == Timing::wormhole);
    CHECK(r.table->model.ts == 2.0);
    CHECK(r.table->model.tc == 0.5);
}

TEST_CASE("hops, routers and requirements") {
    auto r = run("topology cbft(4)\ncollective custom\nrequire b(0) at 3\n"
                 "step 1 { hop 0 -> r(1, 0) msg b(0) }\nstep 2 { hop r(1, 0) -> r(2, 0) msg b(0) }\n"
                 "step 3 { hop r(2, 0) -> r(1, 1) msg b(0) }\nstep 4 { hop r(1, 1) -> 3 msg b(0) }\n");
    REQUIRE(r.table);
    CHECK(rows(*r.table) == std::vector<std::string>{"1 0->r1.0 b(0)", "2 r1.0->r2.0 b(0)", "3 r2.0->r1.1 b(0)", "4 r1.1->3 b(0)"});
    REQUIRE(r.table->requirements.size() == 1);
    CHECK(r.table->requirements[0].at == Node{3});
}

TEST_CASE("coordinates on tori") {
    auto r = run("topology torus(3, 5)\ncollective allgather\nstep 1 { send (1, 4) -> (1, 0) }\n");
    REQUIRE(r.table);
    CHECK(rows(*r.table) == std::vector<std::string>{"1 9->5 b(9)"});
}

TEST_CASE("topology families map to spec strings") {
    auto spec = [](const std::string& decl) {
        Diagnostics d;
        auto t = compile_text("param n = 8\n" + decl + "\n", "t.sched", {}, d);
        INFO(d.render());
        return t ? t->topology->spec() : std::string("error");
    };
    CHECK(spec("topology ebft(n)") == "ebft:8");
    CHECK(spec("topology cbft(2 * n)") == "cbft:16");
    CHECK(spec("topology bft(n, caps = [1, 2, 2])") == "bft:8:1,2,2");
    CHECK(spec("topology fattree(4, 16, caps = [1, 2])") == "fattree:4:16:1,2");
    CHECK(spec("topology ideal(16, w = n)") == "ideal:16:w=n");
    CHECK(spec("let k = 3\ntopology ideal(16, w = log2(n) + k)") == "ideal:16:w=log2(n)+3");
    CHECK(spec("topology ring(n)") == "ring:8");
    CHECK(spec("topology linear(5)") == "linear:5");
    CHECK(spec("topology mesh(2, 3, 4)") == "mesh:2x3x4");
    CHECK(spec("topology torus(3, 5)") == "torus:3x5");
    // A list gives the dimensions: the number of dimensions may be a value of the schedule.
    CHECK(spec("let d = 4\ntopology torus([3 for i in 1 .. d])") == "torus:3x3x3x3");
    CHECK(spec("topology mesh([2, n - 4])") == "mesh:2x4");
    CHECK(spec("topology torus([2 for i in 1 .. 17])") == "error");
    CHECK(spec("topology torus([2 for i in 1 .. 0])") == "error");
    CHECK(spec("topology hypercube(3)") == "hypercube:3");
    CHECK(spec("topology complete(n)") == "complete:8");
    CHECK(spec("topology product(ring(3), ring(5))") == "product:ring:3*ring:5");
    CHECK(spec("topology product(linear(2), \"ring:3\")") == "product:linear:2*ring:3");
    CHECK(spec("topology \"ideal:16:w=n\"") == "ideal:16:w=n");
}

TEST_CASE("fifo policy: FIFO per channel, farthest remaining first, then lower message id") {
    const std::string head = "topology linear(4)\nmodel hop(policy = fifo)\ncollective custom\n";
    SUBCASE("arbitration") {
        auto r = run(head +
                     "step 1 { send 0 -> 3 msg b(0) }\n"
                     "step 2 {\n  send 1 -> 2 msg a(1)\n  send 1 -> 3 msg b(1)\n}\n"
                     "step 3 { send 0 -> 3 msg a(0) }\n");
        INFO(r.diags.render());
        REQUIRE(r.table);
        // Step 2 on 1->2: b(0) and b(1) (2 hops left) beat a(1) (1 hop left); b(0) < b(1).
        // Step 4 on 1->2: a(1) (waiting since step 2) goes before a(0) (arrived for step 4).
        CHECK(rows(*r.table) == std::vector<std::string>{"1 0->1 b(0)", "2 1->2 b(0)", "3 0->1 a(0)", "3 1->2 b(1)", "3 2->3 b(0)",
                                                         "4 1->2 a(1)", "4 2->3 b(1)", "5 1->2 a(0)", "6 2->3 a(0)"});
    }
    SUBCASE("explicit hops take their capacity first") {
        auto r = run(head + "step 1 {\n  send 0 -> 2 msg b(0)\n  hop 0 -> 1 msg a(0)\n}\n");
        REQUIRE(r.table);
        CHECK(rows(*r.table) == std::vector<std::string>{"1 0->1 a(0)", "2 0->1 b(0)", "3 1->2 b(0)"});
    }
    SUBCASE("capacity 2 carries two per step, capacity 1 one") {
        auto r = run("topology ebft(4)\nmodel hop(policy = fifo)\ncollective alltoall\n"
                     "step 1 {\n  send 0 -> 2\n  send 1 -> 3\n  send 0 -> 3\n}\n");
        REQUIRE(r.table);
        // 0 -> r1.0 (capacity 1) takes m(0,2) first (lower id), m(0,3) a step later; the
        // level-2 channels (capacity 2) then carry two at a time.
        CHECK(rows(*r.table) == std::vector<std::string>{"1 0->r1.0 m(0,2)", "1 1->r1.0 m(1,3)", "2 0->r1.0 m(0,3)",
                                                         "2 r1.0->r2.0 m(0,2)", "2 r1.0->r2.0 m(1,3)", "3 r1.0->r2.0 m(0,3)",
                                                         "3 r2.0->r1.1 m(0,2)", "3 r2.0->r1.1 m(1,3)", "4 r1.1->2 m(0,2)",
                                                         "4 r1.1->3 m(1,3)", "4 r2.0->r1.1 m(0,3)", "5 r1.1->3 m(0,3)"});
    }
}

TEST_CASE("integer semantics") {
    auto value = [](const std::string& expr) -> std::optional<std::int64_t> {
        Diagnostics d;
        // The value becomes the step of a send, so it can be read back from the table.
        auto t = compile_text("topology ring(2)\nstep " + expr + " { send 0 -> 1 }\n", "t.sched", {}, d);
        if (!t) return std::nullopt;
        return t->transfers.at(0).step;
    };
    CHECK(value("7 / 2") == 3);
    CHECK(value("-7 / 2 + 10") == 6);   // floor division
    CHECK(value("-7 % 3") == 2);        // modulo takes the divisor's sign
    CHECK(value("2 ** 3 ** 2") == 512); // right-associative
    CHECK(value("-2 ** 2 + 10") == 6);  // -(2 ** 2)
    CHECK(value("1 + 2 * 3") == 7);
    CHECK(value("6 ^ 3") == 5);
    CHECK(value("1 | 2 ^ 3 & 5") == 3); // & binds tighter than ^, ^ tighter than |
    CHECK(value("1 << 3 + 1") == 16);   // + binds tighter than <<
    CHECK(value("log2(1024)") == 10);
    CHECK(value("min(5, 3, 9)") == 3);
    CHECK(value("max(5, 3, 9)") == 9);
    CHECK(value("abs(-4)") == 4);
    CHECK(value("0x10") == 16);
    CHECK(value("(3 > 2 && !(1 == 2) || 1 / 0 == 0) == (1 < 2)") == std::nullopt);  // a condition is not a step number (E012)
}

TEST_CASE("evaluation errors carry a location and the loop values") {
    auto codes = [](const std::string& body) { return run("param n = 6\ntopology ring(4)\n" + body).codes(); };
    CHECK(codes("let x = 9223372036854775807 + 1\n") == std::vector<std::string>{"E020"});
    CHECK(codes("let x = 3 * 2 ** 62\n") == std::vector<std::string>{"E020"});
    CHECK(codes("let x = 5 / (n - 6)\n") == std::vector<std::string>{"E021"});
    CHECK(codes("let x = 5 % 0\n") == std::vector<std::string>{"E021"});
    CHECK(codes("let x = log2(n)\n") == std::vector<std::string>{"E022"});
    CHECK(codes("let x = log2(0)\n") == std::vector<std::string>{"E022"});
    CHECK(codes("let x = 1 << 63\n") == std::vector<std::string>{"E023"});
    CHECK(codes("let x = 1 >> -1\n") == std::vector<std::string>{"E023"});
    CHECK(codes("let x = 2 ** -1\n") == std::vector<std::string>{"E024"});
    CHECK(codes("let x = 1 << 62 << 1\n") == std::vector<std::string>{"E020"});
    auto r = run("topology ring(4)\nfor i in 0 .. 3 {\n  step 1 { send i -> 4 + i }\n}\n");
    CHECK(r.codes() == std::vector<std::string>{"E040"});
    CHECK(r.diags.render().find("processor 4 does not exist (ring:4 has processors 0..3) (when i = 0)") != std::string::npos);
}

TEST_CASE("-D overrides params, undeclared or malformed ones are errors") {
    Diagnostics d;
    const std::string path = std::string(COLLSCHED_SOURCE_DIR) + "/schedules/bft/ebft_alltoall.sched";
    auto t = compile_file(path, {"n=4"}, {}, d);
    REQUIRE(t);
    CHECK(t->topology->processors() == 4);
    CHECK_FALSE(compile_file(path, {"m=4"}, {}, d));
    REQUIRE(d.all().size() == 1);
    CHECK(d.all()[0].code == "E007");
    CHECK(d.all()[0].message == "-D m=4: the schedule has no param 'm' (its params: n)");
    CHECK_FALSE(compile_file(path, {"n=four"}, {}, d));
    CHECK(d.all()[0].code == "E006");
    CHECK_FALSE(compile_file(path + ".missing", {}, {}, d));
    CHECK(d.all()[0].code == "E005");
}

TEST_CASE("transfer and iteration limits name the loop") {
    CompileOptions o;
    o.max_transfers = 100;
    auto r = run("topology ring(16)\ncollective allgather\nfor s in 1 .. 20 {\n  step s {\n    for k in 0 .. 15 { send k -> (k + 1) % 16 }\n  }\n}\n", o);
    CHECK(r.codes() == std::vector<std::string>{"E050"});
    CHECK(r.diags.all()[0].loc == SourceLoc{3, 1});
    CompileOptions it;
    it.max_iterations = 1000;
    auto r2 = run("topology ring(4)\nfor i in 0 .. 1000000 { let x = i }\n", it);
    CHECK(r2.codes() == std::vector<std::string>{"E051"});
}

TEST_CASE("the EBFT total exchange at n = 256 compiles, sorted, with n + 2 log n - 2 steps") {
    Diagnostics d;
    const std::string path = std::string(COLLSCHED_SOURCE_DIR) + "/schedules/bft/ebft_alltoall.sched";
    auto t = compile_file(path, {"n=256"}, {}, d);
    REQUIRE(t);
    CHECK(t->steps() == 256 + 16 - 2);
    CHECK(t->is_sorted());
}

// Issue 13: a comprehension outside any loop that runs past the iteration limit crashed (the
// limit named the outermost loop, and there was none); list comprehensions in claims ran before
// counting; a loop that surely makes too many transfers filled gigabytes before E050.
TEST_CASE("iteration and transfer limits outside loops and before the loop runs") {
    CompileOptions it;
    it.max_iterations = 1000;
    for (std::string f : {"sum", "min", "max"}) {
        auto r = run("topology ring(4)\nlet s = " + f + "(1 for i in 0 .. 2000)\n", it);
        REQUIRE(r.codes() == std::vector<std::string>{"E051"});
        CHECK(r.diags.all()[0].loc == SourceLoc{2, 9});
        CHECK(r.diags.all()[0].message == "this comprehension runs more than 1000 iterations, the limit (a runaway loop?)");
    }
    auto b = run("topology ring(4)\nlet s = bundle(b(i % 4) for i in 0 .. 2000 if i < 4)\n", it);
    CHECK(b.codes() == std::vector<std::string>{"E051"});
    // With the default limit (2^30): stops at once instead of crashing after 2^30 iterations.
    auto big = run("topology ring(4)\nlet s = sum(1 for i in 0 .. 2000000000)\n");
    CHECK(big.codes() == std::vector<std::string>{"E051"});
    auto claim = run("topology ebft(4)\nclaim queue = [1 for i in 0 .. 9223372036854775807]\n");
    REQUIRE(claim.codes() == std::vector<std::string>{"E051"});
    CHECK(claim.diags.all()[0].loc == SourceLoc{2, 1});
    // Inside a loop the limit still names the outermost loop.
    auto nested = run("topology ring(4)\nfor j in 0 .. 1 {\n  let s = sum(1 for i in 0 .. 2000)\n}\n", it);
    REQUIRE(nested.codes() == std::vector<std::string>{"E051"});
    CHECK(nested.diags.all()[0].loc == SourceLoc{2, 1});
    CHECK(nested.diags.all()[0].message == "this loop runs more than 1000 iterations, the limit (a runaway loop?)");
    // Exactly at the limit is allowed.
    auto at = run("topology ring(4)\nlet s = sum(1 for i in 1 .. 1000)\nclaim steps = s\n", it);
    CHECK(at.codes().empty());
}

TEST_CASE("a loop that surely makes more transfers than the limit stops before it runs") {
    // 10^9 iterations of one send each: E050 at once (it took 28 s and 5.9 GB to get there).
    auto r = run("topology ring(4)\ncollective allgather\nfor i in 0 .. 1000000000 { step 1 { send 0 -> 1 } }\n");
    REQUIRE(r.codes() == std::vector<std::string>{"E050"});
    CHECK(r.diags.all()[0].loc == SourceLoc{3, 1});
    CHECK(r.diags.all()[0].message == "this loop makes more than 500000000 transfers, the limit (raise it with --max-transfers)");
    REQUIRE(r.diags.all().size() == 2);
    CHECK(r.diags.all()[1].severity == Severity::note);
    CHECK(r.diags.all()[1].loc == SourceLoc{3, 37});
    // Under the limit, and a message that may be an empty bundle, count nothing ahead.
    CompileOptions o;
    o.max_transfers = 10;
    auto ok = run("topology ring(4)\ncollective allgather\nfor i in 1 .. 3 { step i { send 0 -> 1 msg b(0)\n send 1 -> 2 msg b(1) } }\n", o);
    CHECK(ok.codes().empty());
    auto ahead = run("topology ring(4)\ncollective allgather\nfor i in 1 .. 6 { step i { send 0 -> 1 msg b(0)\n send 1 -> 2 msg b(1) } }\n", o);
    CHECK(ahead.codes() == std::vector<std::string>{"E050"});
    auto maybe = run("topology ring(4)\ncollective allgather\nfor i in 1 .. 20 { step i { send 0 -> 1 msg bundle(b(0) for k in 0 .. 0 if i < 0) } }\n", o);
    CHECK(maybe.codes().empty());
}

TEST_CASE("diagnostics name mesh and torus processors by their coordinates") {
    auto hop = run("topology torus(3, 4)\ncollective custom\nstep 1 { hop (0, 1) -> (2, 2) msg b(0) }\n");
    REQUIRE(hop.codes() == std::vector<std::string>{"E044"});
    CHECK(hop.diags.all()[0].message ==
          "there is no channel (0, 1) -> (2, 2) in torus:3x4 (a hop crosses one channel; `send` follows a whole route)");
    auto held = run("topology mesh(2, 3)\ncollective allgather\nstep 1 { send (1, 2) -> (0, 0) msg b(1) }\n");
    REQUIRE(held.codes() == std::vector<std::string>{"E046"});
    CHECK(held.diags.all()[0].message ==
          "processor (1, 2) does not hold b(1) in step 1: it starts at processor (0, 1), and no transfer brings it to (1, 2)");
}

TEST_CASE("formulas evaluate with the DSL's arithmetic, without a topology or a table") {
    using compiler::evaluate_formula;
    Diagnostics d;
    std::vector<Define> params{{"n", 16}};
    std::vector<std::string> lets{"L = log2(n)"};
    CHECK(evaluate_formula("n + 2 * L - 2", params, lets, d) == 22);
    CHECK(evaluate_formula("sum(i for i in 1 .. n)", params, {}, d) == 136);
    CHECK_FALSE(evaluate_formula("n / 0", params, {}, d));
    CHECK(d.all().at(0).code == "E021");
    CHECK_FALSE(evaluate_formula("n < 3", params, {}, d));
    CHECK(d.all().at(0).code == "E012");
    CHECK_FALSE(evaluate_formula("m + 1", params, {}, d));
    CHECK(d.all().at(0).code == "E010");
    CHECK_FALSE(evaluate_formula("cap(1)", params, {}, d));
    CHECK(d.all().at(0).code == "E015");
}

// Issue 14: the lowering hands the topology over as values (Topology::make), not as a spec string
// that Topology::parse reads again. The spec stays as the printed name, so it must build the same
// topology: for ideal trees the lowering evaluates w itself, with the spec reader's arithmetic.
TEST_CASE("lowering: a declared topology is built from values and equals the topology its spec names") {
    auto compiled = [](const std::string& decl) -> std::shared_ptr<const Topology> {
        Diagnostics d;
        auto t = compile_text("param n = 8\nlet k = 3\n" + decl + "\n", "t.sched", {}, d);
        INFO(d.render());
        REQUIRE(t);
        return t->topology;
    };
    for (const char* decl : {"topology ideal(16, w = log2(3 * n) + k)", "topology ideal(32, w = sqrt(n) * 2 - 1)",
                             "topology ideal(16, w = max(1, min(n / 3, 7 % k)) + n % 5)", "topology ideal(16, w = -(-n))",
                             "topology ideal(8)", "topology ebft(16)", "topology cbft(n)", "topology bft(8, caps = [1, k, 4])",
                             "topology bft(n, caps = [i for i in 1 .. 3])", "topology fattree(4, 16, caps = [1, 2])",
                             "topology torus(3, k + 2)", "topology mesh(2, 3, 4)", "topology hypercube(3)", "topology complete(n)",
                             "topology product(ring(3), \"linear:2\", torus(2, 3))"}) {
        CAPTURE(decl);
        auto t = compiled(decl);
        auto p = Topology::parse(t->spec());
        CHECK(t->family() == p->family());
        CHECK(t->level_caps() == p->level_caps());
        CHECK(t->dims() == p->dims());
        CHECK(t->processors() == p->processors());
        REQUIRE(t->channels().size() == p->channels().size());
        CHECK(std::equal(t->channels().begin(), t->channels().end(), p->channels().begin()));
    }
    CHECK(compiled("topology ideal(16, w = log2(3 * n) + k)")->level_caps() == std::vector<std::uint32_t>{4, 5, 6, 7});

    // Topology::make checks values as parse checks text, in the same words.
    CHECK(Topology::make(Family::torus, {.sizes = {3, 5}}, "torus:3x5")->channels().size() == 60);
    auto make_error = [](Family f, const TopologyArgs& a, std::string_view name) {
        try {
            Topology::make(f, a, name);
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(make_error(Family::ring, {.sizes = {1}}, "ring:1") == "topology 'ring:1': the size must be at least 2");
    CHECK(make_error(Family::bft, {.sizes = {6}, .caps = {1, 2}}, "bft:6:1,2") == "topology 'bft:6:1,2': 6 leaves is not a power of 2 (at least 2)");
    CHECK(make_error(Family::ideal, {.sizes = {4}, .w = [](std::int64_t k) { return k - 1; }}, "x") ==
          "topology 'x': w(1) = 0; capacities must be between 1 and 2^30");
    CHECK(make_error(Family::product, {.factors = {Topology::parse("ring:3")}}, "product:ring:3") ==
          "topology 'product:ring:3': a product needs at least two factors separated by '*'");
}

TEST_CASE("lowering: topology errors read as the spec reader's, and w names what it cannot evaluate") {
    auto errors = [](const std::string& decl) {
        Diagnostics d;
        auto t = compile_text(decl + "\ncollective alltoall\n", "t.sched", {}, d);
        CHECK_FALSE(t);
        return d.render();
    };
    CHECK(errors("topology ring(-3)").find("error[E031]: topology 'ring:-3': '-3' is not a valid size (expected a positive integer)") !=
          std::string::npos);
    CHECK(errors("topology mesh(4, 1)").find("error[E031]: topology 'mesh:4x1': dimension 1 must be at least 2") != std::string::npos);
    CHECK(errors("topology torus([2 for i in 1 .. 17])").find("t.sched:1:16: error[E031]: torus() takes 1 to 16 dimensions, found 17") !=
          std::string::npos);
    CHECK(errors("topology mesh([3, 1])").find("error[E031]: topology 'mesh:3x1': dimension 1 must be at least 2") != std::string::npos);
    CHECK(errors("topology bft(8, caps = [1, -2, 3])").find("error[E031]: topology 'bft:8:1,-2,3': '-2' is not a valid capacity") !=
          std::string::npos);
    CHECK(errors("topology ebft(6)").find("error[E031]: topology 'ebft:6': 6 leaves is not a power of 2 (at least 2)") != std::string::npos);
    CHECK(errors("topology ideal(16, w = n - 1)").find("error[E031]: topology 'ideal:16:w=n-1': w(1) = 0; capacities must be between 1 and 2^30") !=
          std::string::npos);
    CHECK(errors("topology ideal(16, w = n << 1)").find("t.sched:1:26: error[E031]: in w: operator not allowed (w may use integers, n, "
                                                       "+ - * / %, log2(), sqrt(), min(,), max(,))") != std::string::npos);
    CHECK(errors("topology ideal(16, w = n / (n - n))").find("error[E031]: in w: division by zero") != std::string::npos);
}

TEST_CASE("SendTable::is_sorted and sort agree with the order of Transfer") {
    // Small ids, so that steps, channels and messages tie often; every prefix of a shuffled
    // table, then the table sorted.
    std::uint64_t seed = 12345;
    const auto next = [&](std::uint32_t bound) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<std::uint32_t>((seed >> 33) % bound);
    };
    for (int round = 0; round < 200; ++round) {
        SendTable t;
        const std::size_t n = next(12);
        for (std::size_t i = 0; i < n; ++i) t.transfers.push_back({next(3), ChannelId{next(3)}, MessageId{next(3)}});
        if (round % 3 == 0) std::sort(t.transfers.begin(), t.transfers.end());
        CAPTURE(round);
        CHECK(t.is_sorted() == std::is_sorted(t.transfers.begin(), t.transfers.end()));
        std::vector<Transfer> expected = t.transfers;
        std::sort(expected.begin(), expected.end());
        t.sort();
        CHECK(t.transfers == expected);
        CHECK(t.is_sorted());
    }
    // Large channel ids.
    SendTable big;
    big.transfers = {{1, ChannelId{0xffffffffu}, MessageId{0}}, {2, ChannelId{0}, MessageId{0}}};
    CHECK(big.is_sorted());
    std::swap(big.transfers[0], big.transfers[1]);
    CHECK_FALSE(big.is_sorted());
}
