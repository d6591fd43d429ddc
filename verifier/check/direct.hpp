/** \file
 * The direct checker: exact counting over the send table, linear in its size (one pass by
 * step for capacities, ports and queue bounds; one pass by message for causality, replication,
 * routes and completeness). Tables with combined values or bundles, and reduce and prefix, take
 * a step-ordered pass instead of the by-message one (verifier/check/composite.hpp).
 */
#pragma once

#include "verifier/check/report.hpp"

namespace collsched {

VerifyReport verify_direct(const SendTable&, const VerifyOptions& = {});

}  // namespace collsched
