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

#include "compiler/builder.hpp"
#include "compiler/table_io.hpp"
#include "verifier/direct.hpp"

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

}  // namespace collsched::test
