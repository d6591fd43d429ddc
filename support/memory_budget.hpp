/** \file
 * One memory budget for every allocation whose size follows a number in the input rather than
 * the input's length (docs/fuzzing.md, "Resource policy"): the rounds of a step numbered 2^31,
 * MPI buffers of `--bytes` per message on every rank, the Z3 engine's encoding of a large
 * topology. Such a number costs nothing to write and can ask for any amount of memory, so the
 * size is estimated before the allocation and refused when it passes the budget, with the
 * estimate in the message, instead of letting the machine kill the process. The budget is
 * 4 GiB, or COLLSCHED_MAX_MEMORY_MB MiB when that is set (1 to 2^40; anything else is refused
 * with its value). Input files have their own limit (compiler/input_file.hpp).
 */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace collsched::support {

/// The default budget: 4 GiB.
inline constexpr std::uint64_t default_memory_budget = std::uint64_t{4} << 30;

/// The budget in bytes: default_memory_budget, or COLLSCHED_MAX_MEMORY_MB when it is set.
/// Throws InputError when the variable holds anything but a whole number of MiB from 1 to 2^40.
std::uint64_t memory_budget();

/// "3.2 GiB", "512 MiB", "12 KiB": a size for messages.
std::string bytes_text(std::uint64_t bytes);

/// Refuses (InputError) a need above the budget: "WHAT needs about 8.0 GiB, more than the memory
/// budget of 4 GiB; set COLLSCHED_MAX_MEMORY_MB to allow more". `what` says what would be built,
/// with the numbers that make it large.
void check_memory(std::uint64_t bytes, std::string_view what);

/// The same as a message, "" when `bytes` is within the budget (for callers that report through
/// diagnostics or as an "unknown" answer).
std::string memory_problem(std::uint64_t bytes, std::string_view what);

/// a * b, saturating at 2^64 - 1 (estimates must not wrap to a small number).
constexpr std::uint64_t mul_sat(std::uint64_t a, std::uint64_t b) {
    return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}
constexpr std::uint64_t add_sat(std::uint64_t a, std::uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

}  // namespace collsched::support
