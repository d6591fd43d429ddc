/** \file
 * Integer formulas of the schedule language outside a schedule: the step counts, rounds and
 * payloads the algorithm catalog (schedules/catalog.json) states as `n + 2 * log2(n) - 2`, with
 * the row's params bound and its `name = expr` definitions. The formula goes through the DSL's
 * own parser, resolver and evaluator (checked int64 arithmetic, the same functions), but no
 * topology, lowering or table is made.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "compiler/lower/lower.hpp"
#include "dsl/diagnostics.hpp"

namespace collsched::compiler {

/// The value of `formula` with `params` bound and `lets` (`name = expr`, in order) defined.
/// Returns nullopt after reporting errors to `diags`, which is reset to report against the
/// formula; expressions that need a topology (nodes, messages, cap) are errors (E015).
std::optional<std::int64_t> evaluate_formula(std::string_view formula, std::span<const Define> params,
                                             std::span<const std::string> lets, Diagnostics& diags);

}  // namespace collsched::compiler
