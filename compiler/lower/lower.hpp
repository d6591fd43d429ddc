/** \file
 * The schedule compiler: an ast::Program (dsl/ast.hpp) to a sorted SendTable. `compile()`
 * (compiler/lower/lower.cpp) is the whole pipeline, one pass per file, each reporting all of its errors
 * before the pipeline stops:
 *
 *  1. resolve (compiler/lower/resolve.hpp): names to slots, static types, placement rules, -D overrides
 *     checked against params; the AST becomes the IR (compiler/lower/ir.hpp);
 *  2. evaluate (compiler/lower/evaluate.hpp, with compiler/lower/env.hpp for expressions and
 *     compiler/lower/declarations.hpp for topology, model and collective): runs the program with
 *     checked int64 arithmetic, lowers every cut-through `send` and every `hop` into a
 *     TransferSink (compiler/lower/transfer_sink.hpp); claims, bounds and citations become the table's
 *     extra fields (`"claim"`, `"lower_bound"`, `"cite"`, ...);
 *  3. arbitrate (compiler/lower/arbitrate.hpp): the fifo, flood or adaptive policy, if chosen;
 *  4. sort the transfers (TransferSink::take_sorted);
 *  5. check_holds (compiler/lower/check_holds.hpp): every send moves data its source holds.
 *
 * docs/architecture.md draws the pipeline. The error codes (E001..E053) are listed with examples
 * in docs/errors.md; the language in docs/dsl.md.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/table/send_table.hpp"
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
    /// A machine that replaces the schedule's `topology` statement (`--topology`): a family spec
    /// (`torus:4x4`) or `graph:FILE` (FILE relative to the working directory, not to the
    /// schedule). Empty: the schedule's own. The schedule's params still take their values from
    /// the file and -D, so a schedule written for k boxes is given `-D k=...` to match.
    std::string topology;
    /// Report warnings (W001, a send whose destination already holds its data) as errors.
    bool warnings_are_errors = false;
    /// Asked once the header is known (the machine, the model and the collective): false stops the
    /// compilation there with no error (compile returns nullopt, `diags` has none), before a step
    /// runs. The time objective's library provider skips the schedules of other machines this way:
    /// on 1,024 GPUs it compiled four catalog schedules of a million transfers each to find that
    /// none was for the machine asked about (6 s of a 60 s --timeout).
    std::function<bool(const Topology&, const Model&, const Collective&)> accept;
};

/// Compiles a parsed program. Returns nullopt after reporting errors to `diags`.
std::optional<SendTable> compile(const dsl::ast::Program&, const CompileOptions&, Diagnostics& diags);

/// Parses and compiles `text`; `diags` is reset to report against (name, text).
std::optional<SendTable> compile_text(std::string_view text, const std::string& name, const CompileOptions&,
                                      Diagnostics& diags);

/// The loop values ("s = 2, k = 0") of the statement runs that made `wanted` (sorted transfers of
/// the table compile_source(text, name, defines, options) made), found by running the program
/// again (compiler/lower/evaluate.hpp, transfer_contexts): "" for a transfer made outside loops, by a
/// send left to arbitration, or by no run. For counterexamples; the rerun reports nothing.
std::vector<std::string> transfer_contexts(std::string_view text, const std::string& name, const std::vector<std::string>& defines,
                                           const CompileOptions& options, std::span<const Transfer> wanted);

/// Reads, parses and compiles a schedule file; `defines` are `name=value` strings as given to -D
/// (malformed ones are E006). `diags` is reset to report against the file. A file that cannot be
/// read is E005.
std::optional<SendTable> compile_file(const std::string& path, const std::vector<std::string>& defines,
                                      CompileOptions options, Diagnostics& diags);

/// compile_file() of a text already read (standard input, a file of another extension); `name`
/// is the file name diagnostics report against.
std::optional<SendTable> compile_source(std::string_view text, const std::string& name, const std::vector<std::string>& defines,
                                        CompileOptions options, Diagnostics& diags);

/// Parses `name=value` strings into `out`; reports E006 for malformed ones. Returns false if any was.
bool parse_defines(const std::vector<std::string>& defines, std::vector<Define>& out, Diagnostics& diags);

}  // namespace collsched
