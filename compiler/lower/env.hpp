/** \file
 * The state of a running schedule program and its expression evaluator: variable slots, the
 * loops around the statement being run, the iteration count, and (once the topology is built)
 * the topology, its messages and the router numbering that `r(level, index)` reads. Evaluation
 * uses checked int64 arithmetic; every error (E020..E027, E040..E042, E048, E051) is an
 * EvalError thrown to the statement that evaluates, which reports it through the Reporter (once
 * per location, and stops after max_eval_errors).
 *
 * Used by the passes that run the program: compiler/lower/evaluate.cpp (statements) and
 * compiler/lower/declarations.cpp (topology, model, collective).
 */
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "compiler/table/collective.hpp"
#include "compiler/topology/coordinates.hpp"
#include "compiler/lower/ir.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/topology/topology.hpp"

namespace collsched::compiler {

/// Distinct evaluation errors reported before the compiler stops.
constexpr std::size_t max_eval_errors = 20;

/// An error found while evaluating: reported by the statement that was running.
struct EvalError {
    const char* code;
    SourceLoc loc;
    std::string message;
};

/// Thrown to stop the whole evaluation (after too many errors, a limit, or a bad declaration);
/// the errors are already reported.
struct Stop {};

[[noreturn]] inline void fail(const char* code, SourceLoc loc, std::string message) { throw EvalError{code, loc, std::move(message)}; }

/// Reports evaluation errors to `diags`: once per (code, location), since a loop repeats them, and
/// throws Stop after max_eval_errors distinct ones.
class Reporter {
public:
    explicit Reporter(Diagnostics& diags) : diags_(diags) {}
    void report(const char* code, SourceLoc loc, std::string message);
    /// A warning, once per (code, location); an error (counted like report's) when `strict`.
    /// Warnings are held until flush_warnings(), which the pipeline calls when the schedule
    /// compiled: a schedule with errors shows only its errors.
    void warn(const char* code, SourceLoc loc, std::string message, bool strict);
    void flush_warnings();
    Diagnostics& diags() { return diags_; }

private:
    Diagnostics& diags_;
    std::unordered_set<std::string> reported_;
    std::unordered_set<std::string> warned_;
    std::vector<Diagnostic> warnings_;
};

/// The value of a bundle with no part (a comprehension whose condition holds nowhere): no
/// message id. It joins as nothing, a send or hop of it moves nothing, and a require of it
/// requires nothing (docs/dsl.md, "Bundles").
constexpr std::int64_t empty_bundle = std::numeric_limits<std::uint32_t>::max();

/// The values of a running program and the evaluation of its expressions.
class Env {
public:
    Env(const IR& ir, const CompileOptions& options, Reporter& reporter) : ir(ir), options(options), reporter(reporter), slots(ir.slots, 0) {}

    const IR& ir;
    const CompileOptions& options;
    Reporter& reporter;
    std::vector<std::int64_t> slots;
    std::vector<const XStmt*> loops;  ///< the `for` statements around the one running, outermost first
    std::uint64_t iterations = 0;     ///< loop and comprehension iterations so far

    // Known once the topology is built (compiler/lower/declarations.hpp).
    std::shared_ptr<const Topology> topo;
    std::int64_t processors = 0;
    std::shared_ptr<Composites> composites;  ///< a(i..j) and bundles, interned as they are met
    std::int64_t current_step = 0;           ///< the step being evaluated (0 outside steps): partial(p) refers to it
    std::int64_t chunks = 1;                 ///< the collective's C: partial(p, c) needs c < C
    Messages messages{0};
    std::vector<std::int64_t> level_first, level_count;  ///< per router level: first node, count

    /// The value of expression `i` (an integer, a condition as 0/1, a node or a message id).
    std::int64_t eval(std::uint32_t i);
    /// The value of a declaration's argument expression (resolved into IR::header_exprs).
    std::int64_t header(const ast::Expr& e);
    /// The chunk of a base message expression, checked against the collective's chunks (E054).
    std::uint32_t chunk_of(const XExpr& x, std::int64_t s, std::int64_t d);
    /// Whether a base message was named yet (a `let` before the header): the chunks must be known first.
    bool named_message = false;
    /// Whether the collective states `chunks C` (then chunk arguments are allowed, also with C = 1).
    bool chunks_stated = false;
    /// The collective's rule for combining (docs/semantics.md, "Reductions"): a commutative
    /// reduction (allreduce, reduce_scatter, scan) takes partials only, prefix combined values
    /// a(i..j) only, and no table mixes the two; set by build_collective.
    bool reduces = false, prefix = false;
    /// Where the first combined value a(i..j) and the first partial were named (line 0: none yet).
    SourceLoc first_combined, first_partial;
    /// E048 when naming a message of `kind` (combined or partial) at `loc` mixes the two rules.
    void check_rule(MessageKind kind, SourceLoc loc);

    /// Counts `n` iterations of the loop or comprehension at `where` against the limit; E051 (at
    /// the outermost loop, or at `where` outside loops) and Stop when they go over it. Checked
    /// before a range runs, so a range that cannot fit stops at once.
    void count_iterations(std::uint64_t n, SourceLoc where);
    /// The number of values in first .. last (0 when last < first), saturated.
    static std::uint64_t range_size(std::int64_t first, std::int64_t last);

    /// " (when i = 3, j = 5)": the values of the loops around the error, or nothing.
    std::string context() const;
    /// The values of the variables an assert's condition names, but the loop variables that
    /// context() shows: ` (wk = 5, n = 16)`, or nothing.
    std::string assert_values(const XStmt& s) const;
    /// A node as the DSL writes it: a processor number or r(level, index).
    std::string node_text(std::int64_t v) const;
    std::string processors_text() const;

private:
    [[noreturn]] void overflow(const XExpr& x, std::int64_t a, std::string_view op, std::int64_t b) const;
    std::int64_t arithmetic(const XExpr& x);
    std::int64_t node(const XExpr& x);
    std::int64_t message(const XExpr& x);
    std::int64_t partial_ref(const XExpr& x);
    std::int64_t partial_set(const XExpr& x);
    std::int64_t fold(const XExpr& x);
    std::int64_t fold_bundle(const XExpr& x);
    std::int64_t router(const XExpr& x, std::int64_t level, std::int64_t index);
    std::int64_t coord(const XExpr& x);
    void add_parts(std::vector<MessageId>& parts, MessageId m, const XExpr& x);
    std::int64_t make_bundle(std::vector<MessageId> parts);
};

}  // namespace collsched::compiler
