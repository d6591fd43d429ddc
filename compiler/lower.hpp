/** \file
 * The schedule compiler: an ast::Program (dsl/ast.hpp) to a sorted SendTable. Three stages, each
 * reporting all of its errors before the pipeline stops:
 *
 *  1. resolve: names to slots, static types (integer, condition, node, message), placement rules
 *     (sends inside steps, declarations at the top level), -D overrides checked against params;
 *  2. evaluate: runs the program with checked int64 arithmetic, builds the topology, model and
 *     collective, and lowers every `send` by the policy (cut-through: hop k of a send issued in
 *     step s crosses its channel in step s+k-1; under wormhole timing the whole route is one
 *     round) and every `hop` as written; claims, bounds and citations become the table's extra
 *     fields (`"claim"`, `"lower_bound"`, `"cite"`, ...);
 *  3. finish: the arbitration of the fifo, flood or adaptive policy (if chosen), sorting, and the
 *     check that every send moves data its source holds at that step.
 *
 * The error codes (E001..E053) are listed with examples in docs/errors.md; the language in
 * docs/dsl.md.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/send_table.hpp"
#include "dsl/ast.hpp"
#include "dsl/diagnostics.hpp"

namespace collsched {

/// How endpoint sends become hops (the `policy` key of `model`).
enum class LoweringPolicy : std::uint8_t {
    cut_through,  ///< hop k of a send issued in step s happens in step s+k-1
    fifo,         ///< as soon as possible, FIFO per channel, farthest remaining distance first
    flood,        ///< fifo, but the sends of one message by one processor in one step travel as one multicast
    adaptive      ///< as soon as possible over any channel one step closer (the route's first), FIFO per node
};

std::string_view to_string(LoweringPolicy);

/// A `-D name=value` override of a param.
struct Define {
    std::string name;
    std::int64_t value = 0;
};

struct CompileOptions {
    std::vector<Define> defines;
    /// The most transfers a schedule may produce (E050 names the loop that goes over).
    std::uint64_t max_transfers = 500'000'000;
    /// The most loop iterations a schedule may run, so a runaway loop stops (E051) after about
    /// ten seconds instead of running for hours.
    std::uint64_t max_iterations = std::uint64_t{1} << 30;
    /// Also record which `send` or `hop` statement made each transfer (SendTable::transfer_origins
    /// and origins, 4 bytes per transfer), so counterexamples can name the source line. Off by
    /// default; streaming ignores it.
    bool record_locations = false;
    /// Directory that relative `graph("FILE.json")` paths are taken from ("" = working directory).
    std::string base_dir;
};

/// Compiles a parsed program. Returns nullopt after reporting errors to `diags`.
std::optional<SendTable> compile(const dsl::ast::Program&, const CompileOptions&, Diagnostics& diags);

/// Parses and compiles `text`; `diags` is reset to report against (name, text).
std::optional<SendTable> compile_text(std::string_view text, const std::string& name, const CompileOptions&,
                                      Diagnostics& diags);

/// Reads, parses and compiles a schedule file; `defines` are `name=value` strings as given to -D
/// (malformed ones are E006). `diags` is reset to report against the file. A file that cannot be
/// read is E005.
std::optional<SendTable> compile_file(const std::string& path, const std::vector<std::string>& defines,
                                      CompileOptions options, Diagnostics& diags);

/// Parses `name=value` strings into `out`; reports E006 for malformed ones. Returns false if any was.
bool parse_defines(const std::vector<std::string>& defines, std::vector<Define>& out, Diagnostics& diags);

}  // namespace collsched
