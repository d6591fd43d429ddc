/** \file
 * The bodies of the libFuzzer harnesses (fuzz_dsl, fuzz_table, fuzz_topology; docs/fuzzing.md),
 * as plain functions so that the doctest suite can replay saved inputs through exactly the same
 * code (tests/tools/test_fuzz_regressions.cpp replays tests/data/fuzz/). Each takes the input's
 * bytes. InputError and diagnostics are the expected answers to bad input; anything else (a
 * sanitizer report, an abort, an uncaught exception, a timeout, too much memory) is a finding,
 * and so is a broken invariant, which the functions report through invariant_failed (abort).
 * Whatever a reader or the compiler accepts goes on through check_table. Tables on large
 * topologies are only parsed, not checked further, so one input stays fast; large inputs have
 * their own limits and tests (tests/tools/test_limits.cpp).
 */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/table/send_table.hpp"

namespace collsched::fuzz {

/// Largest tables the harnesses check further after parsing them.
inline constexpr std::uint32_t check_max_processors = 256;
inline constexpr std::uint64_t check_max_transfers = 20'000;
inline constexpr std::uint64_t check_max_channels = 100'000;

/// Whether a table is within the sizes above, so that checking it further takes milliseconds.
bool small(const SendTable&);

/// A broken invariant that is not a crash by itself: printed, then abort() so libFuzzer saves the input.
[[noreturn]] void invariant_failed(std::string_view what);

/// Verifies (direct checker, with and without fixed routes), simulates and writes back (JSON,
/// CSV, per-rank JSON and the other exports) a table that a reader or the compiler produced;
/// the JSON, CSV and per-rank round trips must give the same transfers back.
void check_table(const SendTable&);

/// The schedule language: compile_text with small limits (20,000 transfers, 200,000 loop
/// iterations), the diagnostics rendered; a compiled table goes through check_table, is printed
/// as DSL and compiled again, which must give the same table.
void run_dsl(std::string_view input);

/// The table readers, chosen by the first bytes as read_table and load_input do: MSCCL-IR XML
/// (`<`), per-rank JSON, table JSON or CSV.
void run_table(std::string_view input);

/// Topology specs: the first line is a spec, the optional second a collective, the rest node
/// names and messages, one per line. A topology that parses is checked: node names round-trip,
/// channels are sorted and unique, routes are paths of the length distance() reports.
void run_topology(std::string_view input);

/// The command line (fuzz/target_cli.cpp): the input's lines are the arguments after
/// `collsched` (at most 64, each cut at 4096 bytes). They are parsed by the real app
/// (tools/app.hpp) with every subcommand's work switched off, so only option parsing, the
/// validators of cli/options.hpp and the unknown-subcommand check run. A parse error is the
/// expected answer; its printed message must stay short (at most dsl/excerpt.hpp's max_message
/// plus the ellipsis marker, no run of more than 120 non-blank bytes). Any other exception is a finding.
void run_cli(std::string_view input);

/// The Chakra trace reader (fuzz/target_readers.cpp, compiler/formats/export_chakra.hpp parse_chakra): the
/// input is a whole trace set, the files of ranks 0, 1, ... separated by chakra_rank_separator.
/// An accepted set goes through check_table, and is written as traces again (when the writer
/// takes the table), which must read back as the same table.
void run_chakra(std::string_view input);
/// The byte string between two ranks' files in run_chakra's input.
inline constexpr std::string_view chakra_rank_separator = "\n--collsched-next-rank--\n";
/// run_chakra's input split into rank files.
std::vector<std::string> split_trace_set(std::string_view input);

/// The MSCCL-IR reader alone (parse_msccl_ir on complete:P); what it accepts goes through check_table.
void run_msccl(std::string_view input);

}  // namespace collsched::fuzz
