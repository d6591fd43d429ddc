/** \file
 * Teardown a process about to exit can skip, as clang does with -disable-free (LLVM's
 * BuryPointer). Freeing the input of a run at scale costs real time after the answer is known:
 * a 4,096-GPU machine (85 MB of JSON) is millions of small allocations, and its destructor alone
 * took about half a second of a run whose `--timeout` had already passed (docs/performance.md,
 * "Limits at scale"). The command line calls `skip_teardown()` once at start; a command then
 * `bury()`s the objects that live until its end (its machine), and the operating system reclaims
 * them at exit. Elsewhere (the Python module, the test binaries) `bury()` does nothing and every
 * object is freed as usual, so a long-lived process never accumulates buried objects.
 */
#pragma once

#include <memory>

namespace collsched {

/// From now on `bury` keeps what it is given until the process exits. For `main` of a program
/// that ends when its one command ends; never for a library or a long-lived process.
void skip_teardown();

/// Keeps `object` alive until the process exits, without running its destructor, when
/// `skip_teardown()` was called; otherwise does nothing (the caller's reference frees it).
/// Only for objects that would otherwise live until the end of the command anyway: burying
/// something mid-run would hold its memory against the run's budget.
void bury(std::shared_ptr<const void> object);

}  // namespace collsched
