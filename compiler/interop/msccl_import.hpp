/** \file
 * Checking MSCCL-IR programs (the XML msccl-tools' `ir_to_xml` and `collsched convert --format
 * msccl` write) exactly as the MSCCL executor runs them, and reading them into send tables.
 * docs/exports.md ("Reading MSCCL-IR") states the semantics with the executor's source lines.
 *
 * A program is asynchronous: each thread block runs its steps in order; a step with
 * `depid`/`deps` waits until thread block `depid` has published a step at or after `deps` (the
 * executor publishes only steps marked `hasdep="1"`, counting steps as its kernel does: a `nop`
 * folds into the next step); sends and receives are matched first in first out per connection
 * (sender, receiver, channel). The check (compiler/interop/async_program.hpp) decides, over every
 * execution this permits: deadlock (a cycle of waits, a wait never published, a receive no send
 * matches), unmatched sends, data races, and, for a program free of both, the unique result
 * against the collective's postcondition (or `--expect`), with the buffers the executor gives
 * the call: in place and out of place as its lifecycle defines them (`inplace`, `outofplace`;
 * both aliasing directions), `nchunksperloop`.
 *
 * Exit codes (docs/errors.md, "Executor formats: one rule"): bad input, judged from one value
 * alone (malformed XML, a missing attribute, a value outside its attribute's range, a limit of
 * collsched's) throws InputError (exit 2) with file:line:col; what the executor's reader refuses in
 * a well-formed file (an offset outside the buffers, buffers that disagree with `nchunksperloop`,
 * ...) and a loadable program that deadlocks, races, leaves a transfer unmatched or computes the
 * wrong output are violations (MscclReport::holds false; exit 1); with a topology, a send between
 * two ranks the topology does not connect is a violation too.
 */
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched {

struct MscclImportOptions {
    /// The topology the program runs on; empty: `complete:P` for the file's P ranks.
    std::string topology;
    /// The executor's MSCCL_MAX_NUM_STEPS, checked as the exporter checks it.
    int max_steps = 64;
    /// A postcondition replacing the collective's (required for what `custom` must compute to
    /// be checked): the text of a JSON file, docs/exports.md ("--expect").
    std::string expect = {};
    std::string expect_name = "expect.json";
};

/// The verdict on a program and what was found.
struct MscclReport {
    bool holds = false;
    bool checked_goals = true;          ///< false: a custom collective without --expect
    std::string summary;                ///< one line: the collective, ranks, chunks, modes, thread blocks, steps
    std::vector<std::string> findings;  ///< file:line:col: ... [kind], at most 20 per kind
    std::size_t violations = 0;         ///< exact count
    bool unknown = false;               ///< a property was not decided (the race check past the engine's limit): exit 3
    std::vector<std::string> notes;     ///< what the executor would do differently, what was assumed
    std::string timing;                 ///< the as-soon-as-possible step view (information)
    std::string proto;                  ///< the program's protocol: Simple, LL or LL128
    std::string chunk_map;              ///< custom collectives: where every input chunk ends up
    /// The data movement of a program that finishes without a race: every chunk a send puts on
    /// a connection, as (sender, receiver, what it carries: `b(3)`, `m(0,2,1)`, `a({0..3},2)`).
    struct Move {
        int from, to;
        std::string value;
        auto operator<=>(const Move&) const = default;
    };
    std::vector<Move> moves;
    /// The text `verify` prints.
    std::string text() const;
};

/// A program that does not do what it must: `convert` and `simulate` stop with exit 1.
class ProgramViolation : public InputError {
public:
    using InputError::InputError;
};

/// Whether a text looks like XML (its first non-blank character is '<').
bool looks_like_xml(std::string_view text);

/// Checks an MSCCL-IR program; `name` is used in messages. Throws InputError (only) for a file
/// the executor would not load.
MscclReport check_msccl_ir(std::string_view text, std::string_view name, const MscclImportOptions& = {});

/// A program's levelled table (parse_msccl_ir's), or why it has none.
struct MscclTable {
    std::optional<SendTable> table;
    std::string why;
};
/// check_msccl_ir, and the table when the program holds and has one (one check for both).
MscclReport check_msccl_ir(std::string_view text, std::string_view name, const MscclImportOptions&, MscclTable& table);

/// Checks the program and levels it into a send table: its as-soon-as-possible run, every chunk
/// on the wire one transfer of the message it carries. Throws InputError for a file the executor
/// would not load and ProgramViolation (the report's text) for a program that does not hold.
SendTable parse_msccl_ir(std::string_view text, std::string_view name, const MscclImportOptions& = {});

}  // namespace collsched
