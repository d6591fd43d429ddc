/** \file
 * The limits of one run, shared by every stage that can take long or grow large (the synthesizer's
 * bounds, greedy schedules, encoders, solver calls; `optimize` and `pareto`): a wall-clock
 * `Deadline` and a `MemoryBudget` in bytes of resident memory. Both are plain values handed
 * down by the driver; a stage asks `passed()` / `left()` between loops and gives every solver
 * call at most `Deadline::for_call(cap)` seconds, and asks `MemoryBudget::fits(bytes)` before it
 * builds something whose size it has estimated, and `exceeded()` while it grows. Reading the
 * resident size costs one small read of /proc/self/statm (a few microseconds): poll it every few
 * thousand items, not per item. docs/synthesis.md, "Limits", states the semantics.
 */
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>

namespace collsched {

/// A point in wall-clock time after which work must stop; default: none.
class Deadline {
public:
    using Clock = std::chrono::steady_clock;

    Deadline() = default;
    /// `seconds` from now; 0 or less means no deadline.
    static Deadline after(double seconds);
    static Deadline at(Clock::time_point when) { return Deadline(when); }

    bool none() const { return when_ == Clock::time_point::max(); }
    bool passed() const { return !none() && Clock::now() >= when_; }
    /// Seconds left (0 once passed); +infinity without a deadline.
    double left() const;
    /// The seconds one call may run: the least of `cap` (0 or less: no cap) and what is left, but
    /// at least `floor` seconds when a deadline exists (solvers read 0 as "no limit"). 0 means no
    /// limit at all (neither a cap nor a deadline).
    double for_call(double cap = 0, double floor = 0.001) const;
    Clock::time_point when() const { return when_; }
    /// The earlier of the two.
    Deadline min(Deadline other) const { return other.when_ < when_ ? other : *this; }

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

/// A limit on the process's resident memory in bytes; 0 means none.
class MemoryBudget {
public:
    /// The share of physical memory a run may use when the user gives no limit.
    static constexpr double default_fraction = 0.5;

    MemoryBudget() = default;
    explicit MemoryBudget(std::uint64_t limit_bytes) : limit_(limit_bytes) {}
    /// default_fraction of physical memory (none when physical memory is unknown).
    static MemoryBudget machine_default();

    bool none() const { return limit_ == 0; }
    std::uint64_t limit() const { return limit_; }
    /// Bytes that may still be allocated: limit - resident now (0 when over); max without a limit.
    std::uint64_t left() const;
    /// Whether `bytes` more fit (the estimate of something about to be built).
    bool fits(std::uint64_t bytes) const { return none() || bytes <= left(); }
    /// Whether the resident set has reached `share` of the limit (resident_memory_recent: cheap
    /// enough to poll in loops).
    bool exceeded(double share = 1.0) const;

private:
    std::uint64_t limit_ = 0;
};

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

/// "1.5 GB", "300 MB", "12 KB": bytes for messages (decimal units, as the size options take).
std::string format_bytes(std::uint64_t bytes);
/// Parses a size: a number with an optional unit K, M, G, T (decimal: 10^3...; KiB, MiB, GiB, TiB
/// binary; B or nothing: bytes), or a percentage of physical memory ("50%"). Throws InputError
/// naming what was expected.
std::uint64_t parse_bytes(const std::string& text);

}  // namespace collsched
