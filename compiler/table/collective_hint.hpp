/** \file
 * The hint of every "unknown collective" message (the command line's `--collective`, a table's
 * "collective", a schedule's `collective` declaration): the closest name, so that `all_reduce`
 * is answered with `allreduce`.
 */
#pragma once

#include <string>
#include <string_view>

namespace collsched {

/// " (did you mean 'allreduce'?)" for a name two edits or fewer from a collective's name, ""
/// otherwise (compiler/table/collective.cpp).
std::string collective_suggestion(std::string_view name);

}  // namespace collsched
