/** \file
 * The Z3 engine: the second, independent proof of a send table. Each property family of
 * DESIGN.md section 7 is one query to Z3's fixedpoint engine (muZ, relational Datalog backend):
 * the table, the topology and the collective are facts, the *negation* of the property is a set
 * of Horn rules deriving `bad_<property>` tuples, and the query asks whether any such tuple
 * exists. `unsat` (nothing derivable) is the proof that the property holds; `sat` comes with the
 * derived tuples, which are the counterexamples (step, channel or node, messages); `unknown`
 * (time or resource limit) is reported as such. Counting properties use rank certificates
 * produced here and checked by Z3 in a separate query before any property is trusted. The
 * encodings, their soundness arguments and measurements are in docs/z3-engine.md.
 *
 * Semantics are those of the direct checker (verifier/check/direct.hpp), so `--engine both` can
 * compare the two property by property.
 */
#pragma once

#include <cstdint>

#include "verifier/check/report.hpp"

namespace collsched {

struct Z3Options {
    bool fixed_routes = false;          ///< as VerifyOptions::fixed_routes
    std::size_t max_violations = 20;    ///< counterexamples kept per property (all are counted)
    std::uint64_t timeout_ms = 60000;   ///< for the whole run; a query cut off by it is "unknown"

    VerifyOptions verify_options() const { return {fixed_routes, max_violations, 0, {}}; }
};

/// Proves or refutes every property of `table` (which must be sorted) with Z3. Throws InputError
/// for a transfer in step 0 (steps are numbered from 1), as the simulator does.
VerifyReport verify_z3(const SendTable& table, const Z3Options& options = {});

}  // namespace collsched
