/** \file
 * The Z3 engine's encoding of routers with switch functions (docs/semantics.md, "Switches that
 * reduce and multicast"; docs/z3-engine.md, "Switches"): under hop timing with replicate=no and
 * `multicast=routers` or `combine=routers`, what a router holds depends on the order of its sends
 * (a combination consumes copies of other messages, a multicast shares the copy the first send of
 * a step took), so it is not a Datalog join. Every (router, message) gets a sequence of bit-vector
 * terms, the copies waiting there, one per send or step of arrivals, built by the rules from the
 * table's numbers; every router send has a flag that is true when it takes nothing it may take,
 * every (router, message, step) of arrivals a flag that is true when under queues=none fewer
 * copies leave in the next step than arrived. The negation of "no flag is true" is asserted;
 * unsat is the proof, and a model names every violation (the terms are functions of the table).
 */
#pragma once

#include <string>
#include <vector>

#include "verifier/check/report.hpp"

namespace collsched::detail {

struct SwitchAnswer {
    bool unknown = false;
    std::string reason;                   ///< when unknown
    std::vector<Violation> causality;     ///< router sends of a message the router never received and could not combine
    std::vector<Violation> replication;   ///< router sends with every copy received already taken
    std::vector<Violation> queues;        ///< queues=none: copies that do not leave in the step after they arrive
};

/// Whether a model's router rules are those of switch functions, decided by z3_switches: hop
/// timing, replicate=no, and multicast=routers or combine=routers.
bool uses_switch_functions(const Model&);

/// Decides every router send (causality, replication) and, under queues=none, every router's
/// queue of a table whose model uses_switch_functions().
SwitchAnswer z3_switches(const SendTable&, unsigned timeout_ms);

}  // namespace collsched::detail
