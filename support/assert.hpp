/** \file
 * Invariant checks. COLLSCHED_ASSERT(cond) aborts with the condition and file:line;
 * COLLSCHED_ASSERT_MSG(cond, message) adds a message saying what broke, for invariants whose
 * failure needs its numbers to be debugged (a decoded schedule that does not verify, a solver
 * answer below a proven bound). A failure is a bug in collsched, never bad input (that is
 * InputError, support/error.hpp): it is not caught.
 */
#pragma once

#include <string>

namespace collsched::support {

[[noreturn]] void assertion_failed(const char* expr, const char* file, int line);
[[noreturn]] void assertion_failed(const char* expr, const char* file, int line, const std::string& message);

}  // namespace collsched::support

#define COLLSCHED_ASSERT(cond) \
    ((cond) ? static_cast<void>(0) : ::collsched::support::assertion_failed(#cond, __FILE__, __LINE__))

/// Evaluates `message` (a std::string expression) only when `cond` is false.
#define COLLSCHED_ASSERT_MSG(cond, message) \
    ((cond) ? static_cast<void>(0) : ::collsched::support::assertion_failed(#cond, __FILE__, __LINE__, (message)))
