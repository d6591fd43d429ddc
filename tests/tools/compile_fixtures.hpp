/** \file
 * Compiling DSL text in tests: the table of a schedule that must compile (its diagnostics shown
 * when it does not), or the rendered diagnostics of one that must not; and the three witnesses
 * (direct checker, Z3, simulator) on one table.
 */
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>
#include <utility>

#include "compiler/lower/lower.hpp"
#include "dsl/diagnostics.hpp"
#include "runtime/simulator.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/check/z3_engine.hpp"

namespace collsched::test {

/// The table of `text` (file name test.sched); fails the test with the diagnostics if it does not compile.
inline SendTable compile_ok(const std::string& text) {
    Diagnostics diags;
    auto t = compile_text(text, "test.sched", {}, diags);
    INFO(diags.render());
    REQUIRE(t.has_value());
    return std::move(*t);
}

/// The rendered diagnostics of `text`, which must not compile.
inline std::string compile_err(const std::string& text) {
    Diagnostics diags;
    auto t = compile_text(text, "test.sched", {}, diags);
    CHECK_FALSE(t.has_value());
    return diags.render();
}

/// How closely verify_all compares the two engines' counterexamples.
enum class Wording { buffer_rule, any };

/// The three witnesses agree on every property: status and count of violations from the direct
/// checker and Z3, and the simulator's verdict; with Wording::buffer_rule also the two engines'
/// counterexamples of the buffer rule, word for word (for combined values a(i..j) Z3 words its
/// causality counterexamples differently, so those tests pass Wording::any). Returns the direct report.
inline VerifyReport verify_all(const SendTable& t, Wording wording = Wording::buffer_rule) {
    VerifyReport d = verify_direct(t);
    VerifyReport z = verify_z3(t);
    for (std::size_t p = 0; p < property_count; ++p) {
        CAPTURE(to_string(static_cast<Property>(p)));
        CHECK(z.status[p] == d.status[p]);
        CHECK(z.violation_count[p] == d.violation_count[p]);
    }
    CHECK(z.notes.empty());
    // the counterexamples of the buffer rule, word for word (the engines list them in different orders)
    auto rule = [](const VerifyReport& r) {
        std::vector<std::string> v;
        for (const Violation& x : r.violations)
            if ((x.property == Property::causality || x.property == Property::completeness) && x.detail.starts_with("processor "))
                v.push_back(x.detail);
        std::sort(v.begin(), v.end());
        return v;
    };
    if (wording == Wording::buffer_rule && d.violation_count[static_cast<std::size_t>(Property::causality)] < 20)
        CHECK(rule(z) == rule(d));
    SimReport s = simulate(t);
    CHECK((s.status == SimStatus::completed) == d.holds());
    return d;
}

/// The detail of the first violation of `p` in the report ("" when there is none).
inline std::string first_violation(const VerifyReport& r, Property p) {
    for (const Violation& v : r.violations)
        if (v.property == p) return v.detail;
    return "";
}

}  // namespace collsched::test
