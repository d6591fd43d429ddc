/** \file
 * The limits of one run, shared by every stage that can take long or grow large: a wall-clock
 * `Deadline` and a `MemoryBudget` in bytes. Both are plain values handed down by the driver; a
 * stage asks `passed()` / `left()` between loops and gives every solver call at most
 * `Deadline::for_call(cap)` seconds. Memory is one budget for the whole program (docs/fuzzing.md,
 * "Resource policy"; docs/synthesis.md, "Limits"): 4 GiB (half of physical memory on a machine
 * with less than 8 GiB), or `COLLSCHED_MAX_MEMORY_MB`, or a command's `--memory`. It is asked in
 * two ways. An allocation whose size follows a number in the input rather than the input's length
 * (the rounds of a step numbered 2^31, MPI buffers of `--bytes` on every rank, the Z3 engine's
 * encoding of a large topology, the synthesizer's formulas) is estimated first and refused with
 * the estimate in the message (`refusal`, `check`, `fits`) instead of letting the machine kill the
 * process; work that grows while it runs (encoders, solvers) polls `exceeded()`. Reading the
 * resident size costs one small read of /proc/self/statm (a few microseconds): poll it every few
 * thousand items, not per item.
 */
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace collsched {

/// Asks the run in progress to stop (`true`) or clears the request (`false`): while it is set,
/// every Deadline reads as passed, so each stage stops as it does at its time limit, with what
/// it has, and CaDiCaL's solves answer unknown ("interrupted"). The Python module sets it on
/// Ctrl-C (python/module.cpp); the command line never does.
void request_stop(bool on);
bool stop_requested();

/// The clock of every limit and every measured duration.
using Clock = std::chrono::steady_clock;

/// Seconds from t0 to now.
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// A point in wall-clock time after which work must stop; default: none.
class Deadline {
public:
    using Clock = collsched::Clock;

    Deadline() = default;
    /// `seconds` from now; 0 or less means no deadline.
    static Deadline after(double seconds);
    static Deadline at(Clock::time_point when) { return Deadline(when); }

    bool none() const { return when_ == Clock::time_point::max(); }
    bool passed() const { return stop_requested() || (!none() && Clock::now() >= when_); }
    /// Seconds left (0 once passed); +infinity without a deadline.
    double left() const;
    /// The seconds one call may run: the least of `cap` (0 or less: no cap) and what is left, but
    /// at least `floor` seconds when a deadline exists (solvers read 0 as "no limit"). 0 means no
    /// limit at all (neither a cap nor a deadline).
    double for_call(double cap = 0, double floor = 0.001) const;
    Clock::time_point when() const { return when_; }
    /// The earlier of the two.
    Deadline min(Deadline other) const { return other.when_ < when_ ? other : *this; }
    /// The point at `fraction` (0..1) of the time left from now: what one stage of several may
    /// take. None without a deadline; itself once passed.
    Deadline share(double fraction) const;

private:
    explicit Deadline(Clock::time_point when) : when_(when) {}
    Clock::time_point when_ = Clock::time_point::max();
};

/// Physical memory of the machine in bytes (sysconf); 0 if unknown.
std::uint64_t physical_memory();
/// The process's resident set now, in bytes (/proc/self/statm); 0 if unknown.
std::uint64_t resident_memory();
/// The largest resident set the process has had, in bytes (getrusage).
std::uint64_t peak_resident_memory();
/// resident_memory() read at most once per millisecond per thread (the last reading otherwise):
/// cheap enough to poll in loops.
std::uint64_t resident_memory_recent();
/// Seconds the kernel takes to take back `bytes` of resident memory when the process ends (or
/// frees them): a run must stop that much before its deadline to end by it. Measured on the 2-core
/// development machine at load 15: 0.5 s for 1.2 GB, about 3 s for 6.4 GB; 0.5 s per GB is used.
double release_seconds(std::uint64_t bytes);
/// Whether `d` has passed once the time to release the resident memory is reserved.
bool passed_reserving_release(Deadline d);

/// The memory budget in bytes; 0 means none.
class MemoryBudget {
public:
    /// The budget when none is given: 4 GiB (capped at half of physical memory).
    static constexpr std::uint64_t default_limit = std::uint64_t{4} << 30;
    /// The environment variable that sets the budget in MiB when no option does.
    static constexpr const char* environment_variable = "COLLSCHED_MAX_MEMORY_MB";

    MemoryBudget() = default;
    explicit MemoryBudget(std::uint64_t limit_bytes) : limit_(limit_bytes) {}
    /// The run's budget when no option gives one: COLLSCHED_MAX_MEMORY_MB MiB when it is set,
    /// else default_limit or half of physical memory, whichever is less. Throws InputError when
    /// the variable holds anything but a whole number of MiB from 1 to 2^40.
    static MemoryBudget standard();

    bool none() const { return limit_ == 0; }
    std::uint64_t limit() const { return limit_; }
    /// Bytes that may still be allocated: limit - resident now (0 when over); max without a limit.
    std::uint64_t left() const;
    /// Whether `bytes` more fit (the estimate of something about to be built).
    bool fits(std::uint64_t bytes) const { return none() || bytes <= left(); }
    /// Whether the resident set has reached `share` of the limit (resident_memory_recent: cheap
    /// enough to poll in loops).
    bool exceeded(double share = 1.0) const;
    /// "" when an estimate of `bytes` for one thing is within the limit, else the refusal:
    /// "WHAT needs about 7.5 GiB, more than the memory budget of 4 GiB; set
    /// COLLSCHED_MAX_MEMORY_MB to allow more". `what` says what would be built, with the numbers
    /// that make it large. (For callers that report through diagnostics or an "unknown" answer.)
    std::string refusal(std::uint64_t bytes, std::string_view what) const;
    /// The same, thrown as an InputError.
    void check(std::uint64_t bytes, std::string_view what) const;

private:
    std::uint64_t limit_ = 0;
};

/// Thrown by a stage that a limit stopped before it had anything to hand back ("time limit
/// (the flow bound)", "memory limit: ..."): the caller goes on with what it has, and says which
/// limit ended the stage. Work that has a partial answer returns it instead (marked as partial).
struct LimitReached : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Both limits of a run, polled together in the loops of a stage: `reached()` reads the clock
/// and, every call, the resident set (resident_memory_recent: at most one read per millisecond),
/// so it is cheap enough for a loop whose iterations take microseconds; `check(where)` throws
/// LimitReached naming the stage. Memory stops at `share` of the budget (the 90% every solver
/// stops at), so the process stays below the limit while it unwinds.
struct RunLimits {
    Deadline deadline;
    MemoryBudget memory;
    double share = 0.9;

    /// The deadline less the time the kernel takes to take back the resident memory (release_seconds).
    bool time_up() const { return deadline.passed() || passed_reserving_release(deadline); }
    bool memory_up() const { return memory.exceeded(share); }
    bool reached() const { return time_up() || memory_up(); }
    /// "" while within both limits, else "time limit" or "memory limit (1.2 GiB resident, limit 1 GiB)".
    std::string why() const;
    /// Throws LimitReached("time limit (WHERE)" or "memory limit (WHERE): ...") once reached().
    void check(std::string_view where) const;
    /// Throws LimitReached when `bytes` more do not fit in what is left of the budget
    /// ("memory limit: WHAT needs about 2.8 GiB, 1.1 GiB of the limit 4 GiB is left").
    void reserve(std::uint64_t bytes, std::string_view what) const;
};

/// a * b, saturating at 2^64 - 1 (estimates must not wrap to a small number).
constexpr std::uint64_t mul_sat(std::uint64_t a, std::uint64_t b) {
    return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}
/// a + b, saturating at 2^64 - 1.
constexpr std::uint64_t add_sat(std::uint64_t a, std::uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

/// Frees `what` on a background thread: a solver with gigabytes of clauses takes seconds to free
/// (millions of small blocks; 6.6 s for multibox4x8 allgather at T = 30), which would overrun a
/// time limit that has just ended its search. The memory is still resident until it is freed,
/// so a stage that builds something large next calls wait_for_background_frees first.
void free_in_background(std::function<void()> release);
template <class T>
void free_in_background(std::unique_ptr<T> p) {
    if (!p) return;
    free_in_background(std::function<void()>([q = std::shared_ptr<T>(std::move(p))]() mutable { q.reset(); }));
}
/// Waits until every free_in_background call has finished or `until` passes; true when none is
/// left. A process may exit with frees still running (the kernel takes the pages back at once).
bool wait_for_background_frees(Deadline until = {});

/// "1.5 GiB", "300 MiB", "12 KiB", "999 bytes": a size for messages (powers of 1024, one
/// decimal unless whole), as the budget's messages and the `--memory` option's units read.
std::string format_bytes(std::uint64_t bytes);
/// Parses a size as `--memory` takes it: a number with an optional unit, the units of
/// support::parse_bytes (K, M, G, T and KiB, MiB, GiB, TiB: powers of 1024; kB, KB, MB, GB, TB:
/// powers of 1000; B or nothing: bytes), or a percentage of physical memory ("50%"). Throws
/// InputError naming what was expected.
std::uint64_t parse_bytes(const std::string& text);

}  // namespace collsched
