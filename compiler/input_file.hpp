/** \file
 * Reading an input file under the resource policy (docs/fuzzing.md, "Resource limits"): every
 * file collsched reads as a whole (tables, per-rank files, schedules, graph files, catalogs) goes
 * through read_input_file, which refuses directories and devices with one line naming the file,
 * and stops at a size limit instead of reading `/dev/zero` until the memory runs out. Pipes are
 * read (so `verify <(gen)` works) under the same limit.
 */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace collsched {

/// Default size limit of tables, per-rank files and schedules: 4 GiB (a 100-million-transfer
/// JSON table is about 5 GB; `compile` streams such tables to files without reading them back).
inline constexpr std::uint64_t default_max_input_bytes = std::uint64_t{4} << 30;

/// The limit for tables, per-rank files and schedules: default_max_input_bytes, or the
/// environment variable COLLSCHED_MAX_INPUT_MB (a positive number of MiB) when it is set.
/// Throws InputError when the variable is set to anything else.
std::uint64_t max_input_bytes();

/// The whole content of `path`, or an error message without the path (empty on success), for
/// callers that report through Diagnostics. `what` names the kind of file ("table", "schedule",
/// "graph file") and `override_hint` says how to raise the limit (empty: it cannot be raised).
std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t limit,
                            std::string_view override_hint, std::string& text);

/// The whole content of `path`; throws InputError("PATH: reason") on failure.
std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t limit,
                            std::string_view override_hint);

/// How to raise max_input_bytes, for the messages of its callers.
inline constexpr std::string_view max_input_hint = "set COLLSCHED_MAX_INPUT_MB to read larger files";

}  // namespace collsched
