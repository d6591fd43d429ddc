/** \file
 * The Z3 engine's encoding of the buffer rule of partials (docs/semantics.md, "Reductions";
 * docs/z3-engine.md, "Partials"): every buffer (processor, chunk) is a sequence of bit-vector
 * constants, one per arrival, tied by the rule as equations; a processor's send of a partial
 * is held when the buffer's constant before its step equals the partial's set; a goal holds
 * when the last constant equals the goal set. The negation of all of these is asserted; unsat
 * is the proof, and a model names every violation (the constants are functions of the table).
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "verifier/check/report.hpp"

namespace collsched::detail {

struct PartialAnswer {
    bool unknown = false;
    std::string reason;                     ///< when unknown
    std::vector<Violation> causality;       ///< sends of partials not held, arrivals that count twice
    std::vector<Violation> completeness;    ///< buffers that end without their goal
    std::vector<std::uint64_t> checked;     ///< transfers whose sender's holding this encoding decides
};

/// Decides the buffer rule of a table that uses partials (uses_partials()).
PartialAnswer z3_partials(const SendTable&, unsigned timeout_ms);

}  // namespace collsched::detail
