/** \file
 * The direct checker's pass for tables with composite messages (combined values a(i..j) and
 * bundles) or a combining collective (reduce, prefix): causality, replication, queue timing,
 * routes and completeness, step by step, because what a processor holds then depends on several
 * messages at once (docs/semantics.md, "Combined values and bundles"). verify_direct runs it
 * instead of its by-message pass when needs_composite_check() says so.
 */
#pragma once

#include "verifier/check/report.hpp"

namespace collsched::detail {

bool needs_composite_check(const SendTable&);
void check_composites(const SendTable&, const VerifyOptions&, VerifyReport&);

}  // namespace collsched::detail
