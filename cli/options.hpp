/** \file
 * Validators for the numbers given on the command line (docs/fuzzing.md, "Resource policy"):
 * a number is accepted only when it is finite and in range, so `--timeout nan` cannot switch a
 * limit off and `--max-transfers -1` cannot wrap to 2^64 - 1. The message quotes the value
 * (shortened) and says what is accepted.
 */
#pragma once

#include <cstdint>

#include <CLI/CLI.hpp>

namespace collsched::tools {

/// Largest --timeout accepted, in seconds (about 116 days).
inline constexpr double max_timeout_seconds = 1e7;

/// Largest --max-transfers and --max-iterations of `compile`: 2^62, far beyond any memory.
inline constexpr std::uint64_t max_compile_count = std::uint64_t{1} << 62;

/// A time limit in seconds: a finite decimal number, above 0 (or 0 itself when `zero_is_none`,
/// meaning no limit), at most max_timeout_seconds.
CLI::Validator seconds_option(bool zero_is_none);

/// A count: decimal digits only (no sign), from `min` to `max`.
CLI::Validator count_option(std::uint64_t min, std::uint64_t max);

/// A quantity: a finite decimal number from `min` to `max` (no nan, no inf), e.g. a speed in Gb/s.
CLI::Validator number_option(double min, double max);

/// A file to write: any name but the empty one (`--svg ''` used to be taken as no file, so the
/// command exited 0 and wrote nothing it was asked to).
CLI::Validator file_option();

/// `--max-steps N` of MSCCL-IR input and output (verify, simulate, convert): the executor's
/// MSCCL_MAX_NUM_STEPS, 1 to 32768 (it stores step numbers in an int16_t). Checked once here, as a
/// usage error, before any file is read.
void add_msccl_max_steps(CLI::App* cmd, int& max_steps);

}  // namespace collsched::tools
