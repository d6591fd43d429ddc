// Round trips: a program printed back as DSL, and a send table printed as DSL, both compile to
// the same table; printing is a fixpoint.
#include <doctest/doctest.h>

#include "compiler/io/table_io.hpp"
#include "compiler/io/table_printer.hpp"
#include "dsl/printer.hpp"
#include "tests/dsl/golden.hpp"

using namespace collsched;
using namespace collsched::test;

namespace {

/// The program text printed from its AST, with the `#!` options line kept (it is a comment).
std::string reprint(const std::string& text) {
    Diagnostics d("in.sched", text);
    auto program = dsl::parse(text, "in.sched", d);
    REQUIRE_MESSAGE(program, d.render());
    std::string header = text.rfind("#!", 0) == 0 ? text.substr(0, text.find('\n') + 1) : "";
    return header + dsl::print(*program);
}

void check_roundtrips(const std::string& text, const std::string& name) {
    CAPTURE(name);
    Diagnostics diags;
    auto table = compile_golden(text, name, diags);
    REQUIRE_MESSAGE(table, diags.render());
    const std::string json = table_to_json(*table);

    // Program -> DSL -> program -> table.
    std::string printed = reprint(text);
    CAPTURE(printed);
    auto again = compile_golden(printed, name, diags);
    REQUIRE_MESSAGE(again, diags.render());
    CHECK(table_to_json(*again) == json);
    CHECK(reprint(printed) == printed);

    // Table -> DSL -> table.
    std::string dsl = table_to_dsl(*table);
    auto from_dsl = compile_text(dsl, name + ".dsl", {}, diags);
    REQUIRE_MESSAGE(from_dsl, diags.render());
    CHECK(table_to_json(*from_dsl) == json);
    CHECK(table_to_dsl(*from_dsl) == dsl);
}

}  // namespace

TEST_CASE("round trip: every golden program") {
    for (const auto& path : golden_programs("ok")) check_roundtrips(read_text(path), path.filename().string());
}

TEST_CASE("round trip: the EBFT total exchange at n = 16") {
    std::string text = read_text(std::filesystem::path(COLLSCHED_SOURCE_DIR) / "schedules/bft/ebft_alltoall.sched");
    check_roundtrips("#! -D n=16\n" + text, "ebft_alltoall.sched");
}

TEST_CASE("round trip: tables with routers, requirements, bounded queues and wormhole costs") {
    SUBCASE("routers and requirements") {
        check_roundtrips("topology cbft(8)\nmodel hop(queues = 2, replicate = yes)\ncollective multicast(1, {0, 4 .. 6})\n"
                         "require a(3) at 7\n"
                         "step 1 { hop 1 -> r(1, 0) msg b(1) }\nstep 2 { hop r(1, 0) -> 0 msg b(1)\n hop r(1, 0) -> r(2, 0) msg b(1) }\n",
                         "routers");
    }
    SUBCASE("wormhole with fractional costs") {
        check_roundtrips("topology mesh(2, 3)\nmodel wormhole(ts = 0.25, tc = 1e-05, ports = half)\ncollective gather(5)\n"
                         "for s in 0 .. 4 { step s + 1 { send s -> 5 } }\n",
                         "wormhole");
    }
    SUBCASE("an empty table") {
        check_roundtrips("topology ring(3)\ncollective custom\n", "empty");
    }
}
