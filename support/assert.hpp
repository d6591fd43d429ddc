/** \file
 * COLLSCHED_ASSERT_MSG: an invariant check that aborts with file:line and a message saying what
 * broke, for invariants whose failure needs its numbers to be debugged (a decoded schedule that
 * does not verify, a solver answer below a proven bound). Like COLLSCHED_ASSERT
 * (dsl/diagnostics.hpp), a failure is a bug in collsched, never bad input: it is not caught.
 */
#pragma once

#include <string>

namespace collsched::support {

[[noreturn]] void assertion_failed(const char* expr, const char* file, int line, const std::string& message);

}  // namespace collsched::support

/// Evaluates `message` (a std::string expression) only when `cond` is false.
#define COLLSCHED_ASSERT_MSG(cond, message) \
    ((cond) ? static_cast<void>(0) : ::collsched::support::assertion_failed(#cond, __FILE__, __LINE__, (message)))
