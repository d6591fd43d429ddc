/** \file
 * What the verifier tests share (test_direct.cpp and test_z3.cpp check the same hand-made tables
 * with the two engines): loading a table from tests/data, building one from "step from to msg"
 * lines, moving a transfer to break it, and reading a report (a property's status and first
 * violation, the violation's channel, node and messages by name).
 */
#pragma once

#include <doctest/doctest.h>

#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "compiler/table/builder.hpp"
#include "compiler/io/table_io.hpp"
#include "verifier/check/direct.hpp"

namespace collsched::test {

/// A table of tests/data/, read by the JSON reader.
inline SendTable load(const std::string& name) {
    std::ifstream in(std::string(COLLSCHED_SOURCE_DIR) + "/tests/data/" + name);
    std::ostringstream ss;
    ss << in.rdbuf();
    return parse_table_json(ss.str(), name);
}

/// A table built from "step from to msg" lines, for small hand-made cases.
inline SendTable table(std::string_view spec, std::string_view model, std::string_view collective,
                       std::initializer_list<std::tuple<Step, const char*, const char*, const char*>> hops) {
    auto topo = Topology::parse(spec);
    TableBuilder b(topo, apply_model_options(topo->default_model(), model), Collective::parse(collective, *topo));
    for (auto [s, from, to, m] : hops) {
        auto c = topo->find_channel(*topo->find_node(from), *topo->find_node(to));
        REQUIRE(c.has_value());
        b.hop(s, *c, *b.messages().parse(m));
    }
    return std::move(b).finish();
}

inline Status status(const VerifyReport& r, Property p) { return r.status[static_cast<std::size_t>(p)]; }
inline std::uint64_t count(const VerifyReport& r, Property p) { return r.violation_count[static_cast<std::size_t>(p)]; }

inline const Violation& first(const VerifyReport& r, Property p) {
    for (const Violation& v : r.violations)
        if (v.property == p) return v;
    FAIL("no violation of ", to_string(p));
    throw 0;
}

/// The violation's channel as "from->to".
inline std::string channel(const SendTable& t, const Violation& v) {
    REQUIRE(v.channel.has_value());
    const Channel& c = t.topology->channel(*v.channel);
    return t.topology->node_name(c.from) + "->" + t.topology->node_name(c.to);
}

inline std::string node(const SendTable& t, const Violation& v) {
    REQUIRE(v.node.has_value());
    return t.topology->node_name(*v.node);
}

inline std::vector<std::string> names(const SendTable& t, const Violation& v) {
    std::vector<std::string> out;
    for (MessageId m : v.messages) out.push_back(t.messages().name(m));
    return out;
}

/// Moves the transfer of message `m` on channel from -> to from `old_step` to `new_step`.
inline void move_transfer(SendTable& t, const char* from, const char* to, const char* m, Step old_step, Step new_step) {
    auto c = *t.topology->find_channel(*t.topology->find_node(from), *t.topology->find_node(to));
    auto msg = *t.messages().parse(m);
    for (Transfer& x : t.transfers)
        if (x.step == old_step && x.channel == c && x.message == msg) x.step = new_step;
    t.sort();
}

/// The hand-made tables both engines check (test_direct.cpp with the direct checker, test_z3.cpp
/// with Z3): one list, each table named by what it shows, the model given by the test.
namespace scenario {

/// Processor 0 sends b(0) both ways round ring:4 in step 1, then 1 passes it on.
inline SendTable both_ways(std::string_view model) {
    return table("ring:4", model, "broadcast:0", {{1, "0", "1", "b(0)"}, {1, "0", "3", "b(0)"}, {2, "1", "2", "b(0)"}});
}
/// Half duplex kept: processor 1 receives in step 1 and sends in step 2.
inline SendTable half_duplex_ok() {
    return table("ring:4", "ports=half", "broadcast:0", {{1, "0", "1", "b(0)"}, {2, "1", "2", "b(0)"}, {2, "0", "3", "b(0)"}});
}
/// Half duplex broken: processor 1 receives and sends in step 1.
inline SendTable half_duplex_both() { return table("ring:4", "ports=half", "allgather", {{1, "0", "1", "b(0)"}, {1, "1", "2", "b(1)"}}); }
/// ebft:4 scatter from 0 in which m(0,1) waits one step in r1.0.
inline SendTable one_waits(std::string_view model) {
    return table("ebft:4", model, "scatter:0",
                 {{1, "0", "r1.0", "m(0,1)"}, {3, "r1.0", "1", "m(0,1)"},
                  {2, "0", "r1.0", "m(0,2)"}, {3, "r1.0", "r2.0", "m(0,2)"}, {4, "r2.0", "r1.1", "m(0,2)"}, {5, "r1.1", "2", "m(0,2)"},
                  {3, "0", "r1.0", "m(0,3)"}, {4, "r1.0", "r2.0", "m(0,3)"}, {5, "r2.0", "r1.1", "m(0,3)"}, {6, "r1.1", "3", "m(0,3)"}});
}
/// Two copies wait in r1.0 after step 2: m(0,1) (arrived 1, leaves 4) and m(0,2) (arrived 2, leaves 4).
inline SendTable two_wait(std::string_view model) {
    return table("ebft:4", model, "scatter:0",
                 {{1, "0", "r1.0", "m(0,1)"}, {4, "r1.0", "1", "m(0,1)"},
                  {2, "0", "r1.0", "m(0,2)"}, {4, "r1.0", "r2.0", "m(0,2)"}, {5, "r2.0", "r1.1", "m(0,2)"}, {6, "r1.1", "2", "m(0,2)"},
                  {3, "0", "r1.0", "m(0,3)"}, {5, "r1.0", "r2.0", "m(0,3)"}, {6, "r2.0", "r1.1", "m(0,3)"}, {7, "r1.1", "3", "m(0,3)"}});
}
/// r1.0 sends its one copy of b(0) both to 1 and up in step 2, r1.1 to 2 and 3: needs replicate=yes.
inline SendTable copies_in_routers(std::string_view model) {
    return table("ebft:4", model, "broadcast:0",
                 {{1, "0", "r1.0", "b(0)"}, {2, "r1.0", "1", "b(0)"}, {2, "r1.0", "r2.0", "b(0)"}, {3, "r2.0", "r1.1", "b(0)"},
                  {4, "r1.1", "2", "b(0)"}, {4, "r1.1", "3", "b(0)"}});
}
/// Processor 1 forwards m(0,2) in the step it receives it.
inline SendTable forwards_on_arrival() { return table("ring:4", "", "scatter:0", {{1, "0", "1", "m(0,2)"}, {1, "1", "2", "m(0,2)"}}); }
/// Sending data no one has: m(1,2) is not part of a scatter from 0.
inline SendTable sends_what_no_one_has() { return table("ring:4", "", "scatter:0", {{1, "1", "2", "m(1,2)"}}); }
/// A router forwarding before anything arrived.
inline SendTable router_forwards_first() { return table("ebft:4", "", "scatter:0", {{1, "r1.0", "1", "m(0,1)"}}); }

}  // namespace scenario

}  // namespace collsched::test
