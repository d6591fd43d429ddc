/** \file
 * The IR of the lowering: what `resolve` (compiler/lower/resolve.hpp) makes of a dsl::ast::Program and
 * what `evaluate` (compiler/lower/evaluate.hpp) runs. Expressions and statements are flat arrays that
 * refer to each other by index; variables are numbered slots; every expression carries its
 * static type (integer, condition, node, message), so evaluation never checks types again. The
 * declarations (topology, model, collective) keep a pointer to their AST node, whose argument
 * expressions are resolved into `header_exprs` and friends.
 *
 * The AST mirrors the syntax; this IR mirrors the meaning (shared/STYLE.md).
 */
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dsl/ast.hpp"
#include "dsl/diagnostics.hpp"

namespace collsched::compiler {

namespace ast = dsl::ast;

/// "No index": an absent expression, statement or condition.
constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
/// The largest step a table may use (docs/semantics.md: steps are at most 2^31).
constexpr std::int64_t max_step = std::int64_t{1} << 31;

/// The static type of an expression; `bad` after an error, so one error is reported once.
enum class Type : std::uint8_t { integer, boolean, node, message, bad };

inline std::string_view type_name(Type t) {
    switch (t) {
        case Type::integer: return "an integer";
        case Type::boolean: return "a condition";
        case Type::node: return "a node";
        case Type::message: return "a message";
        case Type::bad: return "an invalid value";
    }
    return "?";
}

enum class Op : std::uint8_t {
    constant, load,
    neg, bnot, lnot,
    add, sub, mul, div, mod, pow, band, bor, bxor, shl, shr,
    eq, ne, lt, le, gt, ge, land, lor,
    log2, min, max, abs,
    cap,       // capacity of a tree's branch level
    fold_sum, fold_min, fold_max,  // comprehensions: a = first of (first, last, body) in `lists`, b = slot
    node_of,   // integer -> processor node (range checked)
    proc_of,   // integer or node -> processor number (range checked; routers refused)
    router,    // r(level, index)
    coord,     // (x, y, ...): a = first item in `lists`, b = count
    msg_m, msg_b, msg_a,
    msg_range,   // a(i .. j): a and b are the ends
    msg_join,    // l + r of messages: a bundle of both operands' parts
    msg_partial, // partial(p [, c]): the partial p's buffer of chunk c holds when it sends (b: chunk or none)
    msg_set,     // a({i, j .. k}[, c]): a = first of (first, last or none) pairs in `lists`, b = pairs, imm = chunk expr or -1
    fold_bundle  // bundle(e for i in a .. b if c): a = first of (first, last, body, cond) in `lists`, b = slot
};

struct XExpr {
    Op op = Op::constant;
    Type type = Type::bad;
    std::uint32_t a = 0;
    std::uint32_t b = 0;
    std::int64_t imm = 0;
    SourceLoc loc;
};

enum class SKind : std::uint8_t { param, let, for_, if_, step, send, hop, require, assert_, topology, model, collective, claim };

/// The shape of a claim's value: one integer, a list of items, or a list comprehension.
enum class Form : std::uint8_t { scalar, list, comprehension };

struct XStmt {
    SKind kind = SKind::let;
    SourceLoc loc;
    std::uint32_t slot = none;
    std::uint32_t e0 = none, e1 = none, e2 = none;
    std::uint32_t body = 0, body_n = 0, orelse = 0, orelse_n = 0;  // ranges of `children`
    const void* decl = nullptr;                                     // topology/model/collective AST
    SourceLoc at;                                                   // step: where the step number starts
    std::string name;                                               // loop variable, for messages; claim: JSON key; cite: text
    Form form = Form::scalar;                                       // claim: the value's shape
};

struct IR {
    std::vector<XExpr> exprs;
    std::vector<std::uint32_t> lists;
    std::vector<XStmt> stmts;
    std::vector<std::uint32_t> children;
    std::uint32_t top = 0, top_n = 0;
    std::uint32_t slots = 0;
    std::vector<std::string> slot_names;                                  // per slot, the variable's name
    std::vector<std::pair<std::string, std::uint32_t>> params;            // name, slot
    std::unordered_map<const ast::Expr*, std::uint32_t> header_exprs;     // declaration arguments
    std::unordered_map<const ast::ModelValue*, std::uint32_t> model_vars;  // model words naming variables
    std::unordered_map<const ast::Ident*, std::uint32_t> w_vars;          // names in ideal(w = ...)
    /// Topology strings with `{name}` placeholders: the names and their slots, in order.
    std::unordered_map<const ast::StringLit*, std::vector<std::pair<std::string, std::uint32_t>>> string_vars;
    /// List comprehensions in topology arguments: (first, last, body, slot).
    std::unordered_map<const ast::ListLit*, std::array<std::uint32_t, 4>> list_comps;
};

/// The claims a schedule may state (docs/dsl.md): the name, whether the value is a list, and the
/// key of the table's extra field (with `_at_most` appended for `<=`).
struct ClaimKind {
    std::string_view name;
    bool list;
    std::string_view key;
};
inline constexpr ClaimKind claim_kinds[] = {
    {"steps", false, "claim"},           // the completion time T
    {"queue", true, "claim_queue"},      // per router level: the most copies waiting for one outgoing channel
    {"buffer", false, "claim_buffer"},   // the most messages a processor holds that it still has to send
    {"rounds", false, "claim_rounds"},   // R: the rounds of steps 1..T (docs/semantics.md, bandwidth)
};

}  // namespace collsched::compiler
