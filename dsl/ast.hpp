/** \file
 * The abstract syntax tree of the schedule language (docs/dsl.md). It mirrors the syntax: one
 * struct per construct, each with the SourceLoc a diagnostic points at, and nothing resolved
 * (names are strings, numbers are what was written). The parser (dsl/parser.hpp) builds it, the
 * printer (dsl/printer.hpp) writes it back, and the compiler (compiler/lower/lower.hpp) gives it a
 * meaning. Plain standard types only: Spirit stays in the parser's .cpp.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "dsl/diagnostics.hpp"

namespace collsched::dsl::ast {

/// A heap-allocated value with value semantics (copy = deep copy): how a recursive node holds
/// its children. A moved-from Box is empty; only assignment and destruction are allowed on it.
template <class T>
class Box {
public:
    Box() : p_(std::make_unique<T>()) {}
    Box(T value) : p_(std::make_unique<T>(std::move(value))) {}  // NOLINT: implicit by design
    Box(const Box& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
    Box(Box&&) noexcept = default;
    Box& operator=(const Box& o) {
        if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
        return *this;
    }
    Box& operator=(Box&&) noexcept = default;
    ~Box() = default;

    T& operator*() { return *p_; }
    const T& operator*() const { return *p_; }
    T* operator->() { return p_.get(); }
    const T* operator->() const { return p_.get(); }
    friend bool operator==(const Box& a, const Box& b) { return *a.p_ == *b.p_; }

private:
    std::unique_ptr<T> p_;
};

// ---------------------------------------------------------------------------------------------
// Expressions

/// Binary operators from the loosest to the tightest binding (docs/dsl.md has the table).
enum class BinOp : std::uint8_t {
    lor, land,                   // || &&
    eq, ne, lt, le, gt, ge,      // comparisons (non-associative)
    bor, bxor, band,             // | ^ &
    shl, shr,                    // << >>
    add, sub,                    // + -
    mul, div, mod,               // * / %  (floor division, modulo with the divisor's sign)
    pow                          // **     (right-associative)
};
enum class UnOp : std::uint8_t { neg, bnot, lnot };  // - ~ !

/// An operator token with its position (the parser annotates it; a Binary takes its loc).
struct OpTok {
    SourceLoc loc;
    BinOp op = BinOp::add;
};

struct Expr;
struct Comprehension;

struct IntLit {
    SourceLoc loc;
    std::int64_t value = 0;
    bool operator==(const IntLit&) const = default;
};

/// A name: a variable in an expression, or the name of a declaration.
struct Ident {
    SourceLoc loc;
    std::string name;
    bool operator==(const Ident&) const = default;
};

/// `f(args)`: built-in functions (log2, min, max, abs, sum, cap), routers `r(level, index)`,
/// messages `m(s, d)`, `b(s)`, `a(s)`, and topology families inside `product(...)`.
/// `sum(e for i in a .. b)` (also min, max) has one argument and one comprehension in `over`.
/// `a(i .. j)` (a combined value) has the two ends in `args` and `range` set;
/// `bundle(e for i in a .. b if c)` is a comprehension of messages.
/// `a({0 .. 3, 6})` and `a({0 .. 3, 6}, c)` (a partial) have the set in `set` and the chunk, if
/// any, in `args`.
struct SetLit;
struct Call {
    SourceLoc loc;
    std::string name;
    std::vector<Expr> args;
    std::vector<Comprehension> over;  ///< empty, or the one `for i in a .. b` of a comprehension
    bool range = false;               ///< `f(x .. y)`: args are x and y
    std::vector<SetLit> set;         ///< a partial a({...}): one set
    bool operator==(const Call&) const = default;
};

/// `(x, y, ...)`: coordinates of a mesh, torus or product node (at least two items).
struct Tuple {
    SourceLoc loc;
    std::vector<Expr> items;
    bool operator==(const Tuple&) const = default;
};

struct Unary {
    SourceLoc loc;
    UnOp op = UnOp::neg;
    Box<Expr> operand;
    bool operator==(const Unary&) const = default;
};

struct Binary {
    SourceLoc loc;  ///< the operator
    BinOp op = BinOp::add;
    Box<Expr> lhs;
    Box<Expr> rhs;
    bool operator==(const Binary&) const = default;
};

struct Expr {
    using Node = std::variant<IntLit, Ident, Call, Tuple, Unary, Binary>;
    Node node;

    Expr() = default;
    template <class T>
        requires(!std::is_same_v<std::remove_cvref_t<T>, Expr> && std::is_constructible_v<Node, T &&>)
    Expr(T&& v) : node(std::forward<T>(v)) {}  // NOLINT: implicit by design

    SourceLoc loc() const {
        return std::visit([](const auto& n) { return n.loc; }, node);
    }
    bool operator==(const Expr&) const = default;
};

/// `for i in a .. b [if c]` inside `sum(...)`, `min(...)`, `max(...)`, `bundle(...)` or `[...]`:
/// the expression before it is evaluated for i = a, a+1, ..., b (both included) where c holds.
struct Comprehension {
    SourceLoc loc;
    Ident var;
    Expr first;
    Expr last;
    std::optional<Expr> cond;  ///< `if c`: only the values of i where c holds
    bool operator==(const Comprehension&) const = default;
};

/// Where an expression starts (its leftmost token); `Expr::loc()` of a binary expression is its
/// operator. Errors about a whole value point here, errors of one operation at the operator.
inline SourceLoc start_loc(const Expr& e) {
    if (const auto* b = std::get_if<Binary>(&e.node)) return start_loc(*b->lhs);
    return e.loc();
}

// ---------------------------------------------------------------------------------------------
// Declarations

struct StringLit {
    SourceLoc loc;
    std::string value;
    bool operator==(const StringLit&) const = default;
};

/// `[e, e, ...]`, as in `caps=[1, 2, 2]`, or `[e for i in a .. b]` (one item and `over`).
struct ListLit {
    SourceLoc loc;
    std::vector<Expr> items;
    std::vector<Comprehension> over;  ///< empty, or the one comprehension
    bool operator==(const ListLit&) const = default;
};

/// One argument of a topology family: positional (`key` empty) or `key = value`.
struct TopoArg {
    SourceLoc loc;
    std::string key;
    std::variant<Expr, ListLit, StringLit> value;
    bool operator==(const TopoArg&) const = default;
};

/// `ebft(n)`, `bft(8, caps=[1,2,2])`, `torus(3, 5)`, `product(ring(3), ring(5))`, ...
struct TopoCall {
    SourceLoc loc;
    std::string family;
    std::vector<TopoArg> args;
    bool operator==(const TopoCall&) const = default;
};

/// `topology ebft(n)` or `topology "ideal:16:w=n"`.
struct TopologyDecl {
    SourceLoc loc;
    std::variant<TopoCall, StringLit> spec;
    bool operator==(const TopologyDecl&) const = default;
};

/// A model value: a word (`none`, `cut-through`, `4`, `0.01`; a word that names a param or
/// let stands for its value) or a parenthesized integer expression.
struct ModelValue {
    SourceLoc loc;
    std::string word;           ///< empty when `expr` is set
    std::optional<Expr> expr;
    bool operator==(const ModelValue&) const = default;
};

struct ModelArg {
    SourceLoc loc;
    Ident key;
    ModelValue value;
    bool operator==(const ModelArg&) const = default;
};

/// `model hop(queues = none, ports = multi, policy = cut-through)`.
struct ModelDecl {
    SourceLoc loc;
    Ident timing;  ///< hop or wormhole
    std::vector<ModelArg> args;
    bool operator==(const ModelDecl&) const = default;
};

/// An item of a set `{1, 2, 4 .. 7}`: one value or an inclusive range.
struct SetItem {
    SourceLoc loc;
    Expr first;
    std::optional<Expr> last;
    bool operator==(const SetItem&) const = default;
};

struct SetLit {
    SourceLoc loc;
    std::vector<SetItem> items;
    bool operator==(const SetLit&) const = default;
};

/// `collective alltoall`, `collective broadcast(0)`, `collective multicast(0, {1, 2, 3})`,
/// `collective allgather chunks 4`.
struct CollectiveDecl {
    SourceLoc loc;
    Ident name;
    std::vector<std::variant<Expr, SetLit>> args;
    std::optional<Expr> chunks;
    bool operator==(const CollectiveDecl&) const = default;
};

// ---------------------------------------------------------------------------------------------
// Statements

struct Stmt;
using Block = std::vector<Stmt>;

/// `param n = 8` (top level; `-D n=16` overrides the default).
struct Param {
    SourceLoc loc;
    Ident name;
    Expr value;
    bool operator==(const Param&) const = default;
};

struct Let {
    SourceLoc loc;
    Ident name;
    Expr value;
    bool operator==(const Let&) const = default;
};

/// `for i in a .. b { ... }`, both ends inclusive; no iterations when b < a.
struct For {
    SourceLoc loc;
    Ident var;
    Expr first;
    Expr last;
    Block body;
    bool operator==(const For&) const = default;
};

/// `if c { ... } else { ... }`; `else if` is an If alone in `else_body`.
struct If {
    SourceLoc loc;
    Expr cond;
    Block then_body;
    Block else_body;
    bool operator==(const If&) const = default;
};

/// `step s { ... }`: the sends and hops inside are issued in step s; `step s rounds r { ... }`
/// also says that step s lasts r rounds.
struct StepBlock {
    SourceLoc loc;
    Expr step;
    std::optional<Expr> rounds;
    Block body;
    bool operator==(const StepBlock&) const = default;
};

/// `send src -> dst [msg m]`: an endpoint send, lowered to hops by the policy.
struct Send {
    SourceLoc loc;
    Expr src;
    Expr dst;
    std::optional<Expr> msg;
    bool operator==(const Send&) const = default;
};

/// `hop u -> v msg m`: one transfer over the channel u -> v, exactly as written.
struct Hop {
    SourceLoc loc;
    Expr from;
    Expr to;
    Expr msg;
    bool operator==(const Hop&) const = default;
};

/// `require m at p`: a goal on top of the collective's postcondition.
struct Require {
    SourceLoc loc;
    Expr msg;
    Expr at;
    bool operator==(const Require&) const = default;
};

/// `assert c, "message"`: the compile stops with E027 and the message where c does not hold.
struct Assert {
    SourceLoc loc;
    Expr cond;
    StringLit message;
    bool operator==(const Assert&) const = default;
};

/// `claim steps = e`, `claim steps <= e`, `claim queue = [...]`: what the schedule's source
/// (a paper) claims about it, evaluated with the params and carried in the table.
struct Claim {
    SourceLoc loc;
    Ident name;
    bool at_most = false;  ///< `<=` instead of `=`
    std::variant<Expr, ListLit> value;
    bool operator==(const Claim&) const = default;
};

/// `bound lower = e`: a lower bound on the steps of any schedule for the same problem.
struct Bound {
    SourceLoc loc;
    Ident kind;
    Expr value;
    bool operator==(const Bound&) const = default;
};

/// `cite "..."`: where the algorithm and its claims come from.
struct Cite {
    SourceLoc loc;
    StringLit text;
    bool operator==(const Cite&) const = default;
};

struct Stmt {
    using Node = std::variant<Param, TopologyDecl, ModelDecl, CollectiveDecl, Let, For, If, StepBlock, Send, Hop, Require, Assert,
                              Claim, Bound, Cite>;
    Node node;

    Stmt() = default;
    template <class T>
        requires(!std::is_same_v<std::remove_cvref_t<T>, Stmt> && std::is_constructible_v<Node, T &&>)
    Stmt(T&& v) : node(std::forward<T>(v)) {}  // NOLINT: implicit by design

    SourceLoc loc() const {
        return std::visit([](const auto& n) { return n.loc; }, node);
    }
    bool operator==(const Stmt&) const = default;
};

struct Program {
    Block statements;
    bool operator==(const Program&) const = default;
};

}  // namespace collsched::dsl::ast
