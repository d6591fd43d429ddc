#include "compiler/lower.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <tuple>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/flat_map.hpp"
#include "compiler/input_file.hpp"
#include "compiler/stream.hpp"
#include "compiler/table_printer.hpp"
#include "dsl/parser.hpp"
#include "dsl/printer.hpp"

namespace collsched {

std::string_view to_string(LoweringPolicy p) {
    switch (p) {
        case LoweringPolicy::cut_through: return "cut-through";
        case LoweringPolicy::fifo: return "fifo";
        case LoweringPolicy::flood: return "flood";
        case LoweringPolicy::adaptive: return "adaptive";
    }
    return "?";
}

namespace {

namespace ast = dsl::ast;

constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
/// The largest step a table may use (docs/semantics.md: steps are at most 2^31).
constexpr std::int64_t max_step = std::int64_t{1} << 31;
/// Distinct evaluation errors reported before the compiler stops.
constexpr std::size_t max_eval_errors = 20;

// ---------------------------------------------------------------------------------------------
// The resolved program: flat arrays of expressions and statements, variables as slots.

enum class Type : std::uint8_t { integer, boolean, node, message, bad };

std::string_view type_name(Type t) {
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
constexpr ClaimKind claim_kinds[] = {
    {"steps", false, "claim"},           // the completion time T
    {"queue", true, "claim_queue"},      // per router level: the most copies waiting for one outgoing channel
    {"buffer", false, "claim_buffer"},   // the most messages a processor holds that it still has to send
};

bool is_family(std::string_view f) {
    static constexpr std::string_view families[] = {"ebft", "cbft",   "bft",       "fattree",  "ideal",   "ring", "linear",
                                                    "mesh", "torus", "hypercube", "complete", "product", "graph"};
    return std::find(std::begin(families), std::end(families), f) != std::end(families);
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

// ---------------------------------------------------------------------------------------------
// Stage 1: resolve names, types and placement.

class Resolver {
public:
    Resolver(IR& ir, Diagnostics& diags) : ir_(ir), diags_(diags) {}

    void program(const ast::Program& p, const std::vector<Define>& defines) {
        auto [b, n] = block(p.statements);
        ir_.top = b;
        ir_.top_n = n;
        if (!topology_)
            diags_.error("E015", {}, "the schedule declares no topology (add one, for example `topology ebft(8)`)");
        for (const Define& d : defines) {
            bool found = std::any_of(ir_.params.begin(), ir_.params.end(), [&](const auto& pr) { return pr.first == d.name; });
            if (found) continue;
            std::string names;
            for (const auto& [name, slot] : ir_.params) names += (names.empty() ? "" : ", ") + name;
            diags_.error("E007", {},
                         fmt::format("-D {}={}: the schedule has no param '{}' ({})", d.name, d.value, d.name,
                                     names.empty() ? "it declares no params" : "its params: " + names));
        }
    }

private:
    struct Var {
        std::string name;
        std::uint32_t slot;
        Type type;
        SourceLoc loc;
    };

    // -- scopes --------------------------------------------------------------------------------

    const Var* lookup(std::string_view name) const {
        for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
            if (it->name == name) return &*it;
        return nullptr;
    }

    /// Declares a variable; a name already visible is E011 (no shadowing: two loops over `i`
    /// nested in each other are almost always a mistake).
    std::uint32_t declare(const ast::Ident& id, Type type) {
        if (const Var* prev = lookup(id.name)) {
            diags_.error("E011", id.loc, fmt::format("'{}' is already defined", id.name));
            diags_.note(prev->loc, fmt::format("'{}' is defined here", id.name));
        }
        std::uint32_t slot = ir_.slots++;
        ir_.slot_names.push_back(id.name);
        vars_.push_back({id.name, slot, type, id.loc});
        return slot;
    }

    void unknown_name(const ast::Ident& id) {
        std::string hint;
        std::size_t best = 3;
        for (const Var& v : vars_) {
            std::size_t d = edit_distance(v.name, id.name);
            if (d < best && d < std::max<std::size_t>(v.name.size(), 2)) {
                best = d;
                hint = fmt::format(" (did you mean '{}'?)", v.name);
            }
        }
        diags_.error("E010", id.loc, fmt::format("unknown name '{}'{}", id.name, hint));
    }

    // -- expressions ---------------------------------------------------------------------------

    std::uint32_t add(XExpr x) {
        ir_.exprs.push_back(x);
        return static_cast<std::uint32_t>(ir_.exprs.size() - 1);
    }
    std::uint32_t bad(SourceLoc loc) { return add({Op::constant, Type::bad, 0, 0, 0, loc}); }
    Type type(std::uint32_t e) const { return ir_.exprs[e].type; }

    bool need_topology(SourceLoc loc, std::string_view what) {
        if (topology_) return true;
        if (!reported_no_topology_)
            diags_.error("E015", loc, fmt::format("{} needs the topology, which is not declared yet (declare `topology` first)", what));
        reported_no_topology_ = true;
        return false;
    }

    /// An expression that must have type `want`; `what` names it in the message.
    std::uint32_t want(const ast::Expr& e, Type want_type, std::string_view what) { return checked(expr(e), e, want_type, what); }

    /// The compiled expression x of e, checked to have type `want_type`.
    std::uint32_t checked(std::uint32_t x, const ast::Expr& e, Type want_type, std::string_view what) {
        Type t = type(x);
        if (t == Type::bad || t == want_type) return x;
        std::string msg = fmt::format("{} must be {}, found {}", what, type_name(want_type), type_name(t));
        if (want_type == Type::boolean && t == Type::integer) msg += " (write a comparison, for example `k % 2 == 1`)";
        diags_.error("E012", ast::start_loc(e), std::move(msg));
        return bad(e.loc());
    }

    /// A node: an integer is a processor number, checked when evaluated.
    std::uint32_t node(const ast::Expr& e, std::string_view what) {
        std::uint32_t x = expr(e);
        Type t = type(x);
        if (t == Type::node || t == Type::bad) return x;
        if (t == Type::integer) {
            if (!need_topology(ast::start_loc(e), "a node")) return bad(e.loc());
            return add({Op::node_of, Type::node, x, 0, 0, ast::start_loc(e)});
        }
        diags_.error("E012", ast::start_loc(e), fmt::format("{} must be a node, found {}", what, type_name(t)));
        return bad(e.loc());
    }

    /// A processor number (message arguments, collective roots): an integer or a processor node.
    std::uint32_t proc(const ast::Expr& e, std::string_view what) {
        std::uint32_t x = expr(e);
        Type t = type(x);
        if (t == Type::bad) return x;
        if (t == Type::integer || t == Type::node) {
            if (!need_topology(ast::start_loc(e), "a processor")) return bad(e.loc());
            return add({Op::proc_of, Type::integer, x, 0, 0, ast::start_loc(e)});
        }
        diags_.error("E012", ast::start_loc(e), fmt::format("{} must be a processor, found {}", what, type_name(t)));
        return bad(e.loc());
    }

    std::uint32_t expr(const ast::Expr& e) {
        return std::visit([&](const auto& n) { return expr_node(n); }, e.node);
    }

    std::uint32_t expr_node(const ast::IntLit& n) { return add({Op::constant, Type::integer, 0, 0, n.value, n.loc}); }

    std::uint32_t expr_node(const ast::Ident& n) {
        const Var* v = lookup(n.name);
        if (!v) {
            unknown_name(n);
            return bad(n.loc);
        }
        if (v->type == Type::bad) return bad(n.loc);
        return add({Op::load, v->type, v->slot, 0, 0, n.loc});
    }

    std::uint32_t expr_node(const ast::Tuple& n) {
        std::vector<std::uint32_t> items;
        bool ok = true;
        for (std::size_t i = 0; i < n.items.size(); ++i) {
            items.push_back(want(n.items[i], Type::integer, fmt::format("coordinate {}", i + 1)));
            ok = ok && type(items.back()) != Type::bad;
        }
        if (!need_topology(n.loc, "a node") || !ok) return bad(n.loc);
        auto first = static_cast<std::uint32_t>(ir_.lists.size());
        ir_.lists.insert(ir_.lists.end(), items.begin(), items.end());
        return add({Op::coord, Type::node, first, static_cast<std::uint32_t>(items.size()), 0, n.loc});
    }

    std::uint32_t expr_node(const ast::Unary& n) {
        if (n.op == ast::UnOp::lnot) {
            std::uint32_t x = want(*n.operand, Type::boolean, "the operand of '!'");
            if (type(x) == Type::bad) return x;
            return add({Op::lnot, Type::boolean, x, 0, 0, n.loc});
        }
        std::string what = fmt::format("the operand of '{}'", dsl::spelling(n.op));
        std::uint32_t x = want(*n.operand, Type::integer, what);
        if (type(x) == Type::bad) return x;
        return add({n.op == ast::UnOp::neg ? Op::neg : Op::bnot, Type::integer, x, 0, 0, n.loc});
    }

    std::uint32_t expr_node(const ast::Binary& n) {
        using B = ast::BinOp;
        std::string_view sp = dsl::spelling(n.op);
        auto operands = [&](Type t) {
            std::uint32_t l = want(*n.lhs, t, fmt::format("the left operand of '{}'", sp));
            std::uint32_t r = want(*n.rhs, t, fmt::format("the right operand of '{}'", sp));
            return std::pair(l, r);
        };
        Op op;
        switch (n.op) {
            case B::lor: op = Op::lor; break;
            case B::land: op = Op::land; break;
            case B::eq: op = Op::eq; break;
            case B::ne: op = Op::ne; break;
            case B::lt: op = Op::lt; break;
            case B::le: op = Op::le; break;
            case B::gt: op = Op::gt; break;
            case B::ge: op = Op::ge; break;
            case B::bor: op = Op::bor; break;
            case B::bxor: op = Op::bxor; break;
            case B::band: op = Op::band; break;
            case B::shl: op = Op::shl; break;
            case B::shr: op = Op::shr; break;
            case B::add: op = Op::add; break;
            case B::sub: op = Op::sub; break;
            case B::mul: op = Op::mul; break;
            case B::div: op = Op::div; break;
            case B::mod: op = Op::mod; break;
            case B::pow: op = Op::pow; break;
            default: op = Op::add; break;
        }
        if (n.op == B::add) {
            // `+` adds integers, or joins messages into a bundle (docs/dsl.md, "Bundles").
            std::uint32_t l = expr(*n.lhs), r = expr(*n.rhs);
            if (type(l) == Type::message || type(r) == Type::message) {
                l = checked(l, *n.lhs, Type::message, "the left operand of '+' (a bundle joins messages)");
                r = checked(r, *n.rhs, Type::message, "the right operand of '+' (a bundle joins messages)");
                if (type(l) == Type::bad || type(r) == Type::bad) return bad(n.loc);
                return add({Op::msg_join, Type::message, l, r, 0, n.loc});
            }
            l = checked(l, *n.lhs, Type::integer, "the left operand of '+'");
            r = checked(r, *n.rhs, Type::integer, "the right operand of '+'");
            if (type(l) == Type::bad || type(r) == Type::bad) return bad(n.loc);
            return add({Op::add, Type::integer, l, r, 0, n.loc});
        }
        if (n.op == B::lor || n.op == B::land) {
            auto [l, r] = operands(Type::boolean);
            if (type(l) == Type::bad || type(r) == Type::bad) return bad(n.loc);
            return add({op, Type::boolean, l, r, 0, n.loc});
        }
        if (n.op == B::eq || n.op == B::ne) {
            std::uint32_t l = expr(*n.lhs), r = expr(*n.rhs);
            Type tl = type(l), tr = type(r);
            if (tl == Type::bad || tr == Type::bad) return bad(n.loc);
            // A node compared with an integer: the integer names a processor.
            if (tl == Type::node && tr == Type::integer) r = add({Op::node_of, Type::node, r, 0, 0, ast::start_loc(*n.rhs)});
            else if (tl == Type::integer && tr == Type::node) l = add({Op::node_of, Type::node, l, 0, 0, ast::start_loc(*n.lhs)});
            else if (tl != tr) {
                diags_.error("E012", n.loc, fmt::format("'{}' compares {} with {}", sp, type_name(tl), type_name(tr)));
                return bad(n.loc);
            }
            return add({op, Type::boolean, l, r, 0, n.loc});
        }
        auto [l, r] = operands(Type::integer);
        if (type(l) == Type::bad || type(r) == Type::bad) return bad(n.loc);
        bool cmp = n.op == B::lt || n.op == B::le || n.op == B::gt || n.op == B::ge;
        return add({op, cmp ? Type::boolean : Type::integer, l, r, 0, n.loc});
    }

    std::uint32_t expr_node(const ast::Call& n) {
        auto arity = [&](std::size_t lo, std::size_t hi, std::string_view shape) {
            if (n.args.size() >= lo && n.args.size() <= hi) return true;
            diags_.error("E014", n.loc,
                         fmt::format("{}() takes {}, found {} argument{}", n.name, shape, n.args.size(), n.args.size() == 1 ? "" : "s"));
            return false;
        };
        const std::string& f = n.name;
        if (n.range) {
            if (f != "a") {
                for (const auto& a : n.args) expr(a);
                diags_.error("E014", n.loc, fmt::format("{}() takes no range (only a combined value a(i .. j) does)", f));
                return bad(n.loc);
            }
            std::uint32_t lo = proc(n.args[0], "the first source of a(i .. j)");
            std::uint32_t hi = proc(n.args[1], "the last source of a(i .. j)");
            if (type(lo) == Type::bad || type(hi) == Type::bad) return bad(n.loc);
            return add({Op::msg_range, Type::message, lo, hi, 0, n.loc});
        }
        if (!n.over.empty()) return comprehension(n);
        if (f == "bundle") {
            if (!arity(2, std::numeric_limits<std::size_t>::max(), "at least 2 messages, or `e for i in a .. b [if c]`")) return bad(n.loc);
            std::uint32_t acc = want(n.args[0], Type::message, "argument 1 of bundle()");
            for (std::size_t i = 1; i < n.args.size(); ++i) {
                std::uint32_t x = want(n.args[i], Type::message, fmt::format("argument {} of bundle()", i + 1));
                acc = type(acc) == Type::bad || type(x) == Type::bad ? bad(n.loc) : add({Op::msg_join, Type::message, acc, x, 0, n.loc});
            }
            return acc;
        }
        if (f == "sum") {
            if (!arity(1, std::numeric_limits<std::size_t>::max(), "at least 1 argument, or `e for i in a .. b`")) return bad(n.loc);
            std::vector<std::uint32_t> xs;
            for (std::size_t i = 0; i < n.args.size(); ++i) xs.push_back(want(n.args[i], Type::integer, fmt::format("argument {} of sum()", i + 1)));
            if (std::any_of(xs.begin(), xs.end(), [&](std::uint32_t x) { return type(x) == Type::bad; })) return bad(n.loc);
            std::uint32_t acc = xs[0];
            for (std::size_t i = 1; i < xs.size(); ++i) acc = add({Op::add, Type::integer, acc, xs[i], 0, n.loc});
            return acc;
        }
        if (f == "cap") {
            if (!arity(1, 1, "1 argument (the branch level)")) return bad(n.loc);
            std::uint32_t l = want(n.args[0], Type::integer, "the level of cap()");
            if (!need_topology(n.loc, "cap()") || type(l) == Type::bad) return bad(n.loc);
            return add({Op::cap, Type::integer, l, 0, 0, n.loc});
        }
        if (f == "log2" || f == "abs") {
            if (!arity(1, 1, "1 argument")) return bad(n.loc);
            std::uint32_t x = want(n.args[0], Type::integer, fmt::format("the argument of {}()", f));
            if (type(x) == Type::bad) return x;
            return add({f == "log2" ? Op::log2 : Op::abs, Type::integer, x, 0, 0, n.loc});
        }
        if (f == "min" || f == "max") {
            if (!arity(2, std::numeric_limits<std::size_t>::max(), "at least 2 arguments")) return bad(n.loc);
            std::vector<std::uint32_t> xs;
            for (std::size_t i = 0; i < n.args.size(); ++i) xs.push_back(want(n.args[i], Type::integer, fmt::format("argument {} of {}()", i + 1, f)));
            if (std::any_of(xs.begin(), xs.end(), [&](std::uint32_t x) { return type(x) == Type::bad; })) return bad(n.loc);
            std::uint32_t acc = xs[0];
            for (std::size_t i = 1; i < xs.size(); ++i) acc = add({f == "min" ? Op::min : Op::max, Type::integer, acc, xs[i], 0, n.loc});
            return acc;
        }
        if (f == "r") {
            if (!arity(2, 2, "2 arguments (level, index)")) return bad(n.loc);
            std::uint32_t l = want(n.args[0], Type::integer, "the level of r()");
            std::uint32_t i = want(n.args[1], Type::integer, "the index of r()");
            if (!need_topology(n.loc, "a router") || type(l) == Type::bad || type(i) == Type::bad) return bad(n.loc);
            return add({Op::router, Type::node, l, i, 0, n.loc});
        }
        if (f == "m") {
            if (!arity(2, 2, "2 arguments (source, destination)")) return bad(n.loc);
            std::uint32_t s = proc(n.args[0], "the source of m()");
            std::uint32_t d = proc(n.args[1], "the destination of m()");
            if (type(s) == Type::bad || type(d) == Type::bad) return bad(n.loc);
            return add({Op::msg_m, Type::message, s, d, 0, n.loc});
        }
        if (f == "b" || f == "a") {
            if (!arity(1, 1, "1 argument (the source)")) return bad(n.loc);
            std::uint32_t s = proc(n.args[0], fmt::format("the source of {}()", f));
            if (type(s) == Type::bad) return s;
            return add({f == "b" ? Op::msg_b : Op::msg_a, Type::message, s, 0, 0, n.loc});
        }
        for (const auto& a : n.args) expr(a);  // report errors inside the arguments too
        if (is_family(f))
            diags_.error("E013", n.loc, fmt::format("'{}' is a topology family; families are written only in `topology` declarations", f));
        else
            diags_.error("E013", n.loc,
                         fmt::format("unknown function '{}' (functions: log2, min, max, abs, sum, cap; nodes: r(level, index); "
                                     "messages: m(s, d), b(s), a(s), a(i .. j), bundle(...))",
                                     f));
        return bad(n.loc);
    }

    /// `sum(e for i in a .. b)`, `min(...)`, `max(...)`: the range is resolved outside the
    /// variable's scope, the body inside it.
    std::uint32_t comprehension(const ast::Call& n) {
        const std::string& f = n.name;
        if (f != "sum" && f != "min" && f != "max" && f != "bundle") {
            diags_.error("E014", n.loc, fmt::format("{}() takes no comprehension (`for i in a .. b` works in sum, min, max, bundle and lists)", f));
            return bad(n.loc);
        }
        if (n.args.size() != 1) {
            diags_.error("E014", n.loc, fmt::format("{}(e for i in a .. b) takes one expression before `for`, found {}", f, n.args.size()));
            return bad(n.loc);
        }
        Type body_type = f == "bundle" ? Type::message : Type::integer;
        std::uint32_t cond = none;
        auto [first, last, body, slot] = comprehension_parts(n.over.front(), n.args[0], fmt::format("the body of {}()", f), body_type, &cond);
        if (type(first) == Type::bad || type(last) == Type::bad || type(body) == Type::bad || (cond != none && type(cond) == Type::bad))
            return bad(n.loc);
        auto at = static_cast<std::uint32_t>(ir_.lists.size());
        ir_.lists.insert(ir_.lists.end(), {first, last, body, cond});
        Op op = f == "sum" ? Op::fold_sum : f == "min" ? Op::fold_min : f == "max" ? Op::fold_max : Op::fold_bundle;
        return add({op, body_type, at, slot, 0, n.loc});
    }

    /// Resolves `body for var in first .. last [if c]`: (first, last, body, slot of var); the
    /// condition goes to *cond (none without one; an `if` is refused where cond is null).
    std::array<std::uint32_t, 4> comprehension_parts(const ast::Comprehension& c, const ast::Expr& body, std::string_view what,
                                                     Type body_type = Type::integer, std::uint32_t* cond = nullptr) {
        std::uint32_t first = want(c.first, Type::integer, "the start of a range");
        std::uint32_t last = want(c.last, Type::integer, "the end of a range");
        std::size_t mark = vars_.size();
        std::uint32_t slot = declare(c.var, Type::integer);
        std::uint32_t b = want(body, body_type, what);
        if (c.cond) {
            if (cond) *cond = want(*c.cond, Type::boolean, "the condition of a comprehension");
            else diags_.error("E014", c.cond->loc(), "`if` in a comprehension works in sum, min, max and bundle, not in lists");
        }
        vars_.resize(mark);
        return {first, last, b, slot};
    }

    // -- statements ----------------------------------------------------------------------------

    std::pair<std::uint32_t, std::uint32_t> block(const ast::Block& b) {
        std::size_t mark = vars_.size();
        std::vector<std::uint32_t> ids;
        ids.reserve(b.size());
        for (const ast::Stmt& s : b) ids.push_back(std::visit([&](const auto& n) { return stmt(n); }, s.node));
        vars_.resize(mark);
        auto first = static_cast<std::uint32_t>(ir_.children.size());
        ir_.children.insert(ir_.children.end(), ids.begin(), ids.end());
        return {first, static_cast<std::uint32_t>(ids.size())};
    }

    std::pair<std::uint32_t, std::uint32_t> nested(const ast::Block& b) {
        ++depth_;
        auto r = block(b);
        --depth_;
        return r;
    }

    static XStmt make(SKind kind, SourceLoc loc) {
        XStmt x;
        x.kind = kind;
        x.loc = loc;
        return x;
    }

    std::uint32_t add(XStmt s) {
        ir_.stmts.push_back(std::move(s));
        return static_cast<std::uint32_t>(ir_.stmts.size() - 1);
    }

    void schedule_statement() {
        if (depth_ == 0) started_ = true;
    }

    /// Placement of topology, model and collective: at the top level, once, before the schedule.
    /// `seen` is the first declaration of the kind (null before it).
    void declaration(const void* decl, SourceLoc loc, std::string_view what, const void*& seen, SourceLoc& seen_loc) {
        if (depth_ > 0)
            diags_.error("E017", loc, fmt::format("'{}' must be at the top level of the schedule, not inside a block", what));
        else if (started_)
            diags_.error("E019", loc, fmt::format("'{}' must come before the schedule's first step, for, if or require", what));
        if (seen) {
            diags_.error("E018", loc, fmt::format("the schedule declares '{}' twice", what));
            diags_.note(seen_loc, fmt::format("the first '{}' is here", what));
            return;
        }
        seen = decl;
        seen_loc = loc;
    }

    std::uint32_t stmt(const ast::Param& s) {
        if (depth_ > 0) diags_.error("E017", s.loc, "'param' must be at the top level of the schedule, not inside a block");
        std::uint32_t v = want(s.value, Type::integer, "the value of a param");
        std::uint32_t slot = declare(s.name, Type::integer);
        ir_.params.emplace_back(s.name.name, slot);
        XStmt x = make(SKind::param, s.loc);
        x.slot = slot;
        x.e0 = v;
        x.name = s.name.name;
        return add(std::move(x));
    }

    std::uint32_t stmt(const ast::Let& s) {
        std::uint32_t v = expr(s.value);
        XStmt x = make(SKind::let, s.loc);
        x.slot = declare(s.name, type(v));
        x.e0 = v;
        x.name = s.name.name;
        return add(std::move(x));
    }

    std::uint32_t stmt(const ast::For& s) {
        schedule_statement();
        XStmt x = make(SKind::for_, s.loc);
        x.e0 = want(s.first, Type::integer, "the start of a range");
        x.e1 = want(s.last, Type::integer, "the end of a range");
        std::size_t mark = vars_.size();
        x.slot = declare(s.var, Type::integer);
        x.name = s.var.name;
        std::tie(x.body, x.body_n) = nested(s.body);
        vars_.resize(mark);
        return add(std::move(x));
    }

    std::uint32_t stmt(const ast::If& s) {
        schedule_statement();
        XStmt x = make(SKind::if_, s.loc);
        x.e0 = want(s.cond, Type::boolean, "the condition of 'if'");
        std::tie(x.body, x.body_n) = nested(s.then_body);
        std::tie(x.orelse, x.orelse_n) = nested(s.else_body);
        return add(std::move(x));
    }

    std::uint32_t stmt(const ast::StepBlock& s) {
        schedule_statement();
        if (in_step_) diags_.error("E016", s.loc, "a step cannot contain another step");
        XStmt x = make(SKind::step, s.loc);
        x.e0 = want(s.step, Type::integer, "the step number");
        x.at = ast::start_loc(s.step);
        bool outer = in_step_;
        in_step_ = true;
        std::tie(x.body, x.body_n) = nested(s.body);
        in_step_ = outer;
        return add(std::move(x));
    }

    std::uint32_t stmt(const ast::Send& s) {
        schedule_statement();
        if (!in_step_) diags_.error("E016", s.loc, "'send' must be inside a step: step s { send a -> b }");
        XStmt x = make(SKind::send, s.loc);
        x.e0 = node(s.src, "the source of a send");
        x.e1 = node(s.dst, "the destination of a send");
        if (s.msg) x.e2 = want(*s.msg, Type::message, "the message of a send");
        return add(std::move(x));
    }

    std::uint32_t stmt(const ast::Hop& s) {
        schedule_statement();
        if (!in_step_) diags_.error("E016", s.loc, "'hop' must be inside a step: step s { hop u -> v msg m }");
        XStmt x = make(SKind::hop, s.loc);
        x.e0 = node(s.from, "the start of a hop");
        x.e1 = node(s.to, "the end of a hop");
        x.e2 = want(s.msg, Type::message, "the message of a hop");
        return add(std::move(x));
    }

    std::uint32_t stmt(const ast::Require& s) {
        schedule_statement();
        XStmt x = make(SKind::require, s.loc);
        x.e0 = want(s.msg, Type::message, "the message of a require");
        x.e1 = node(s.at, "the place of a require");
        return add(std::move(x));
    }

    /// `assert c, "message"`: evaluated where it stands, like a let. The variables c names
    /// (visible here, not bound inside c) go to `lists` as their load expressions, once per
    /// variable, so a failure can show their values.
    std::uint32_t stmt(const ast::Assert& s) {
        auto mark = static_cast<std::uint32_t>(ir_.exprs.size());
        XStmt x = make(SKind::assert_, s.loc);
        x.e0 = want(s.cond, Type::boolean, "the condition of 'assert'");
        x.name = s.message.value;
        x.body = static_cast<std::uint32_t>(ir_.lists.size());
        std::vector<std::uint32_t> seen;
        for (auto e = mark; e < ir_.exprs.size(); ++e) {
            const XExpr& load = ir_.exprs[e];
            if (load.op != Op::load || std::find(seen.begin(), seen.end(), load.a) != seen.end()) continue;
            bool visible = std::any_of(vars_.begin(), vars_.end(), [&](const Var& v) { return v.slot == load.a; });
            if (!visible) continue;  // a comprehension's variable
            seen.push_back(load.a);
            ir_.lists.push_back(e);
        }
        x.body_n = static_cast<std::uint32_t>(seen.size());
        return add(std::move(x));
    }

    // Claims, bounds and citations: metadata at the top level, once per key, carried into the
    // table as extra fields (docs/dsl.md, "Claims").

    /// Placement of metadata: top level; a key at most once (`what` names it in messages).
    void metadata(const std::string& key, SourceLoc loc, std::string_view what) {
        if (depth_ > 0) diags_.error("E017", loc, fmt::format("'{}' must be at the top level of the schedule, not inside a block", what));
        auto [it, fresh] = metadata_.emplace(key, loc);
        if (!fresh) {
            diags_.error("E018", loc, fmt::format("the schedule states '{}' twice", what));
            diags_.note(it->second, fmt::format("the first '{}' is here", what));
        }
    }

    std::uint32_t stmt(const ast::Claim& s) {
        const ClaimKind* kind = nullptr;
        for (const ClaimKind& k : claim_kinds)
            if (k.name == s.name.name) kind = &k;
        XStmt x = make(SKind::claim, s.loc);
        if (!kind) {
            diags_.error("E034", s.name.loc, fmt::format("unknown claim '{}': expected steps, queue or buffer", s.name.name));
            return add(std::move(x));
        }
        std::string what = fmt::format("claim {}", kind->name);
        x.name = std::string(kind->key) + (s.at_most ? "_at_most" : "");
        metadata(x.name, s.loc, what);
        const auto* list = std::get_if<ast::ListLit>(&s.value);
        if (kind->list != (list != nullptr)) {
            SourceLoc at = list ? list->loc : ast::start_loc(std::get<ast::Expr>(s.value));
            diags_.error("E034", at,
                         kind->list ? fmt::format("claim {} takes a list, one value per level: [e1, e2, ...] or [e for i in 1 .. L]", kind->name)
                                    : fmt::format("claim {} takes one integer, not a list", kind->name));
            return add(std::move(x));
        }
        if (!list) {
            x.e0 = want(std::get<ast::Expr>(s.value), Type::integer, fmt::format("the value of {}", what));
        } else if (!list->over.empty()) {
            if (list->items.size() != 1) {
                diags_.error("E014", list->loc, "a list comprehension [e for i in a .. b] takes one expression before `for`");
                return add(std::move(x));
            }
            x.form = Form::comprehension;
            auto [first, last, body, slot] = comprehension_parts(list->over.front(), list->items[0], "an item of the list");
            x.e0 = first;
            x.e1 = last;
            x.e2 = body;
            x.slot = slot;
        } else {
            x.form = Form::list;
            std::vector<std::uint32_t> items;
            for (const ast::Expr& e : list->items) items.push_back(want(e, Type::integer, "an item of the list"));
            x.body = static_cast<std::uint32_t>(ir_.lists.size());
            x.body_n = static_cast<std::uint32_t>(items.size());
            ir_.lists.insert(ir_.lists.end(), items.begin(), items.end());
        }
        return add(std::move(x));
    }

    std::uint32_t stmt(const ast::Bound& s) {
        XStmt x = make(SKind::claim, s.loc);
        if (s.kind.name != "lower") {
            diags_.error("E034", s.kind.loc,
                         fmt::format("unknown bound '{}': expected lower (an upper bound is a claim: claim steps <= e)", s.kind.name));
            return add(std::move(x));
        }
        x.name = "lower_bound";
        metadata(x.name, s.loc, "bound lower");
        x.e0 = want(s.value, Type::integer, "the value of a bound");
        return add(std::move(x));
    }

    std::uint32_t stmt(const ast::Cite& s) {
        XStmt x = make(SKind::claim, s.loc);
        x.name = "cite";
        x.decl = &s;  // the text
        metadata(x.name, s.loc, "cite");
        return add(std::move(x));
    }

    // Declarations: their expressions are resolved here and evaluated once by the machine.

    void header_int(const ast::Expr& e, std::string_view what) { ir_.header_exprs[&e] = want(e, Type::integer, what); }

    void topo_args(std::string_view family, const std::vector<ast::TopoArg>& args) {
        for (const ast::TopoArg& a : args) {
            if (const auto* str = std::get_if<ast::StringLit>(&a.value)) topo_string(*str);
            if (const auto* e = std::get_if<ast::Expr>(&a.value)) {
                const auto* call = std::get_if<ast::Call>(&e->node);
                if (family == "product" && a.key.empty() && call) {
                    product_factor(*call);
                } else if (family == "ideal" && a.key == "w") {
                    w_expr(*e);
                } else {
                    header_int(*e, fmt::format("the argument of {}()", family));
                }
            } else if (const auto* l = std::get_if<ast::ListLit>(&a.value)) {
                if (l->over.empty()) {
                    for (const ast::Expr& item : l->items) header_int(item, "a list item");
                } else if (l->items.size() != 1) {
                    diags_.error("E014", l->loc, "a list comprehension [e for i in a .. b] takes one expression before `for`");
                } else {
                    ir_.list_comps[l] = comprehension_parts(l->over.front(), l->items[0], "an item of the list");
                }
            }
        }
    }

    void product_factor(const ast::Call& c) {
        for (const ast::Expr& e : c.args) {
            const auto* call = std::get_if<ast::Call>(&e.node);
            if (c.name == "product" && call) product_factor(*call);
            else header_int(e, fmt::format("the argument of {}()", c.name));
        }
    }

    /// `w = EXPR` of an ideal fat tree: `n` is the subtree size; other names are variables,
    /// printed as their values into the spec string.
    void w_expr(const ast::Expr& e) {
        std::visit(
            [&](const auto& n) {
                using T = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<T, ast::Ident>) {
                    if (n.name == "n") return;
                    const Var* v = lookup(n.name);
                    if (!v) return unknown_name(n);
                    if (v->type != Type::integer && v->type != Type::bad)
                        diags_.error("E012", n.loc, fmt::format("'{}' in w must be an integer, found {}", n.name, type_name(v->type)));
                    ir_.w_vars[&n] = v->slot;
                } else if constexpr (std::is_same_v<T, ast::Call>) {
                    for (const auto& a : n.args) w_expr(a);
                } else if constexpr (std::is_same_v<T, ast::Tuple>) {
                    for (const auto& a : n.items) w_expr(a);
                } else if constexpr (std::is_same_v<T, ast::Unary>) {
                    w_expr(*n.operand);
                } else if constexpr (std::is_same_v<T, ast::Binary>) {
                    w_expr(*n.lhs);
                    w_expr(*n.rhs);
                }
            },
            e.node);
    }

    /// `{name}` in a topology string (a spec string or a graph file's path) stands for the value
    /// of a param or let: `graph("omega-{n}.json")`.
    void topo_string(const ast::StringLit& str) {
        std::vector<std::pair<std::string, std::uint32_t>> names;
        const std::string& v = str.value;
        for (std::size_t open = v.find('{'); open != std::string::npos; open = v.find('{', open + 1)) {
            std::size_t close = v.find('}', open);
            if (close == std::string::npos) break;
            std::string name = v.substr(open + 1, close - open - 1);
            const Var* var = lookup(name);
            if (!var) {
                unknown_name(ast::Ident{str.loc, name});
                continue;
            }
            if (var->type != Type::integer && var->type != Type::bad)
                diags_.error("E012", str.loc, fmt::format("'{{{}}}' in a topology string must be an integer, found {}", name, type_name(var->type)));
            names.emplace_back(name, var->slot);
        }
        if (!names.empty()) ir_.string_vars[&str] = std::move(names);
    }

    std::uint32_t stmt(const ast::TopologyDecl& s) {
        declaration(&s, s.loc, "topology", topology_, topology_loc_);
        if (const auto* call = std::get_if<ast::TopoCall>(&s.spec)) topo_args(call->family, call->args);
        if (const auto* str = std::get_if<ast::StringLit>(&s.spec)) topo_string(*str);
        XStmt x = make(SKind::topology, s.loc);
        x.decl = &s;
        return add(std::move(x));
    }

    std::uint32_t stmt(const ast::ModelDecl& s) {
        declaration(&s, s.loc, "model", model_, model_loc_);
        for (const ast::ModelArg& a : s.args) {
            if (a.value.expr) {
                header_int(*a.value.expr, fmt::format("the value of '{}'", a.key.name));
            } else if (const Var* v = lookup(a.value.word)) {
                if (v->type != Type::integer && v->type != Type::bad)
                    diags_.error("E012", a.value.loc,
                                 fmt::format("the value of '{}' must be an integer, found {}", a.key.name, type_name(v->type)));
                ir_.model_vars[&a.value] = v->slot;
            }
        }
        XStmt x = make(SKind::model, s.loc);
        x.decl = &s;
        return add(std::move(x));
    }

    std::uint32_t stmt(const ast::CollectiveDecl& s) {
        declaration(&s, s.loc, "collective", collective_, collective_loc_);
        for (const auto& a : s.args) {
            if (const auto* e = std::get_if<ast::Expr>(&a)) {
                ir_.header_exprs[e] = proc(*e, "a collective's argument");
            } else {
                for (const ast::SetItem& item : std::get<ast::SetLit>(a).items) {
                    ir_.header_exprs[&item.first] = proc(item.first, "a member");
                    if (item.last) ir_.header_exprs[&*item.last] = proc(*item.last, "a member");
                }
            }
        }
        XStmt x = make(SKind::collective, s.loc);
        x.decl = &s;
        return add(std::move(x));
    }

    IR& ir_;
    Diagnostics& diags_;
    std::vector<Var> vars_;
    int depth_ = 0;
    bool in_step_ = false;
    bool started_ = false;
    bool reported_no_topology_ = false;
    const void* topology_ = nullptr;
    const void* model_ = nullptr;
    const void* collective_ = nullptr;
    SourceLoc topology_loc_, model_loc_, collective_loc_;
    std::unordered_map<std::string, SourceLoc> metadata_;  // claim/bound/cite keys stated so far
};

// ---------------------------------------------------------------------------------------------
// Transfers in chunks, sorted once at the end.

/// Collects transfers in fixed-size chunks (no reallocation copies of a huge vector), then
/// sorts them: a counting sort on the step into the final vector, then StepSorter on each step
/// (send_table.hpp). Linear in the table; the peak memory is two copies of it.
///
/// Streaming (compiler/stream.hpp): transfers go to per-step buckets instead, and every step
/// below the step the lowering is issuing sends in is final, so it is sorted and handed to the
/// consumer and its bucket reused. A transfer for a step already handed over means the schedule
/// goes back in time: NotStreamable.
class TransferSink {
public:
    static constexpr std::size_t chunk = std::size_t{1} << 20;

    void stream_to(StepConsumer* consumer, std::size_t channels) {
        consumer_ = consumer;
        channels_ = channels;
    }
    bool streaming() const { return consumer_ != nullptr; }

    void push(const Transfer& t) {
        ++size_;
        max_step_ = std::max(max_step_, t.step);
        if (consumer_) {
            if (t.step <= flushed_)
                throw NotStreamable(fmt::format("a transfer in step {} comes after step {} was handed over (the step blocks "
                                                "go back in time)",
                                                t.step, flushed_));
            const std::size_t k = t.step - flushed_ - 1;
            if (k >= window_.size()) window_.resize(k + 1);
            window_[k].push_back(t);
            ++buffered_;
            return;
        }
        if (chunks_.empty() || chunks_.back().size() == chunk) {
            chunks_.emplace_back();
            chunks_.back().reserve(chunk);
        }
        chunks_.back().push_back(t);
    }
    std::uint64_t size() const { return size_; }

    /// Recording origins (CompileOptions::record_locations, never while streaming): `origin(n,
    /// loc)` tags the last n transfers pushed with a location index. Called once per statement,
    /// so the transfer path itself does no extra work; a run that does not record pays one test.
    void record_origins() { record_ = true; }
    void origin(std::uint64_t n, std::uint32_t loc) {
        if (record_) origins_.insert(origins_.end(), n, loc);
    }

    /// Streaming: hands over every step below `step` (all of them when step is 0).
    void flush_below(Step step) {
        while (buffered_ > 0 && (step == 0 || flushed_ + 1 < step)) {
            std::vector<Transfer>& first = window_.front();
            ++flushed_;
            if (!first.empty()) {
                sorter_.sort(first, channels_);
                consumer_->step(flushed_, first);
                buffered_ -= first.size();
                first.clear();
            }
            std::rotate(window_.begin(), window_.begin() + 1, window_.end());  // keeps the bucket's capacity
        }
        if (buffered_ == 0 && step > flushed_ + 1) flushed_ = step - 1;  // nothing buffered: skip ahead
    }

    std::vector<Transfer> take_sorted(std::size_t channels) {
        std::vector<Transfer> out;
        if (size_ == 0) return out;
        if (max_step_ > 4 * size_ + 1024) {  // sparse steps: one comparison sort
            out.reserve(size_);
            for (auto& c : chunks_) out.insert(out.end(), c.begin(), c.end());
            chunks_.clear();
            std::sort(out.begin(), out.end());
            return out;
        }
        std::vector<std::uint64_t> start(std::size_t{max_step_} + 2, 0);
        for (const auto& c : chunks_)
            for (const Transfer& t : c) ++start[t.step + 1];
        for (std::size_t s = 1; s < start.size(); ++s) start[s] += start[s - 1];
        out.resize(size_);
        {
            std::vector<std::uint64_t> pos(start.begin(), start.end() - 1);
            for (auto& c : chunks_) {
                for (const Transfer& t : c) out[pos[t.step]++] = t;
                std::vector<Transfer>().swap(c);
            }
            chunks_.clear();
        }
        StepSorter sorter;
        for (std::size_t s = 0; s + 1 < start.size(); ++s)
            sorter.sort(std::span<Transfer>(out.data() + start[s], out.data() + start[s + 1]), channels);
        return out;
    }

    /// take_sorted() for a recording run: the location indices follow their transfers into
    /// `origins`. The counting sort on the step (one range when the steps are sparse), then per
    /// step StepSorter's sort on (transfer, origin) pairs: a counting sort on the channel when
    /// the step is large next to the number of channels, else a stable comparison sort.
    std::vector<Transfer> take_sorted_with_origins(std::vector<std::uint32_t>& origins, std::size_t channels) {
        std::vector<Transfer> out;
        origins.clear();
        if (size_ == 0) return out;
        COLLSCHED_ASSERT(origins_.size() == size_);
        const bool sparse = max_step_ > 4 * size_ + 1024;
        std::vector<std::uint64_t> start(sparse ? 2 : std::size_t{max_step_} + 2, 0);
        if (sparse) start[1] = size_;
        else {
            for (const auto& c : chunks_)
                for (const Transfer& t : c) ++start[t.step + 1];
            for (std::size_t s = 1; s < start.size(); ++s) start[s] += start[s - 1];
        }
        out.resize(size_);
        origins.resize(size_);
        {
            std::vector<std::uint64_t> pos(start.begin(), start.end() - 1);
            std::uint64_t k = 0;
            for (auto& c : chunks_) {
                for (const Transfer& t : c) {
                    std::uint64_t p = pos[sparse ? 0 : t.step]++;
                    out[p] = t;
                    origins[p] = origins_[k++];
                }
                std::vector<Transfer>().swap(c);
            }
            chunks_.clear();
            std::vector<std::uint32_t>().swap(origins_);
        }
        std::vector<std::pair<Transfer, std::uint32_t>> buf;
        std::vector<std::uint64_t> at;
        auto by_transfer = [](const auto& x, const auto& y) { return x.first < y.first; };
        for (std::size_t s = 0; s + 1 < start.size(); ++s) {
            const std::uint64_t a = start[s], n = start[s + 1] - a;
            if (n < 2) continue;
            buf.resize(n);
            if (sparse || n * 8 < channels) {
                for (std::uint64_t i = 0; i < n; ++i) buf[i] = {out[a + i], origins[a + i]};
                std::stable_sort(buf.begin(), buf.end(), by_transfer);
            } else {
                at.assign(channels + 1, 0);
                for (std::uint64_t i = 0; i < n; ++i) ++at[idx(out[a + i].channel) + 1];
                for (std::size_t c = 1; c <= channels; ++c) at[c] += at[c - 1];
                for (std::uint64_t i = 0; i < n; ++i) buf[at[idx(out[a + i].channel)]++] = {out[a + i], origins[a + i]};
                for (auto run = buf.begin(); run != buf.end();) {
                    auto end = run + 1;
                    while (end != buf.end() && end->first.channel == run->first.channel) ++end;
                    if (end - run > 1) std::stable_sort(run, end, by_transfer);
                    run = end;
                }
            }
            for (std::uint64_t i = 0; i < n; ++i) std::tie(out[a + i], origins[a + i]) = buf[i];
        }
        return out;
    }

private:
    std::vector<std::vector<Transfer>> chunks_;
    std::uint64_t size_ = 0;
    bool record_ = false;
    std::vector<std::uint32_t> origins_;  ///< recording: the location index of each transfer, in push order
    Step max_step_ = 0;
    // streaming
    StepConsumer* consumer_ = nullptr;
    std::size_t channels_ = 0;
    Step flushed_ = 0;                            ///< steps 1..flushed_ are handed over
    std::uint64_t buffered_ = 0;                  ///< transfers in the window
    std::vector<std::vector<Transfer>> window_;   ///< window_[k]: step flushed_ + 1 + k
    StepSorter sorter_;
};

// ---------------------------------------------------------------------------------------------
// Stage 2 and 3: evaluate, lower, check.

struct EvalError {
    const char* code;
    SourceLoc loc;
    std::string message;
};

struct Stop {};

class Machine {
public:
    Machine(const IR& ir, const CompileOptions& options, Diagnostics& diags)
        : ir_(ir), options_(options), diags_(diags), slots_(ir.slots, 0) {
        for (const Define& d : options.defines)
            for (const auto& [name, slot] : ir.params)
                if (name == d.name) overrides_[slot] = d.value;
    }

    std::optional<SendTable> run() {
        if (options_.record_locations) sink_.record_origins();
        try {
            if (!evaluate()) return std::nullopt;
            if (policy_ == LoweringPolicy::fifo || policy_ == LoweringPolicy::flood) lower_fifo();
            if (policy_ == LoweringPolicy::adaptive) lower_adaptive();
            if (diags_.has_errors()) return std::nullopt;
            std::vector<std::uint32_t> origins;
            std::vector<Transfer> transfers = options_.record_locations ? sink_.take_sorted_with_origins(origins, topo_->channels().size())
                                                                        : sink_.take_sorted(topo_->channels().size());
            check_holds(transfers);
            if (diags_.has_errors()) return std::nullopt;
            SendTable t = header(true);
            t.transfers = std::move(transfers);
            t.transfer_origins = std::move(origins);
            t.origins = std::move(origin_names_);
            t.composites = std::move(composites_);  // canonicalize_composites sorts; the origins follow
            t.canonicalize_composites();
            return t;
        } catch (const Stop&) {
            return std::nullopt;
        }
    }

    /// Streaming (compiler/stream.hpp): the same evaluation, with steps handed to `consumer` as
    /// soon as no later send can reach them.
    bool stream(StepConsumer& consumer) {
        consumer_ = &consumer;
        try {
            if (!evaluate()) return false;
            begin_stream();
            sink_.flush_below(0);
            consumer.finish(header(true));
            return true;
        } catch (const Stop&) {
            return false;
        }
    }

private:
    /// Runs the program (stage 2): every send and hop into the sink. False after errors.
    bool evaluate() {
        for (std::uint32_t k = 0; k < ir_.top_n; ++k) {
            const XStmt& s = ir_.stmts[ir_.children[ir_.top + k]];
            top_ = &s;
            bool schedule = s.kind == SKind::for_ || s.kind == SKind::if_ || s.kind == SKind::step || s.kind == SKind::require;
            if (schedule) finish_header();
            if (!exec(ir_.children[ir_.top + k])) break;
        }
        finish_header();
        return !diags_.has_errors();
    }

    /// The table without transfers; `take` moves the requirements and extra fields out (at the end).
    SendTable header(bool take = false) {
        SendTable t;
        t.topology = topo_;
        t.model = model_;
        t.collective = collective_;
        t.requirements = take ? std::move(requirements_) : requirements_;
        t.extra_fields = take ? std::move(extra_) : extra_;
        return t;
    }

    /// Streaming: once the header is known, checks that the schedule can stream and tells the consumer.
    void begin_stream() {
        if (sink_.streaming() || !consumer_) return;
        if (!topo_) throw Stop{};
        if (policy_ != LoweringPolicy::cut_through) throw NotStreamable(fmt::format("the {} policy arbitrates over all sends at the end", to_string(policy_)));
        if (timing_wormhole_) throw NotStreamable("wormhole timing is not streamed");
        sink_.stream_to(consumer_, topo_->channels().size());
        consumer_->begin(header());
    }

    // -- errors --------------------------------------------------------------------------------

    [[noreturn]] void fail(const char* code, SourceLoc loc, std::string message) const {
        throw EvalError{code, loc, std::move(message)};
    }

    /// The values of the loops around the error, so a failure in one iteration can be found.
    std::string context() const {
        if (loops_.empty()) return {};
        std::string s = " (when ";
        for (std::size_t i = 0; i < loops_.size(); ++i)
            s += fmt::format("{}{} = {}", i ? ", " : "", loops_[i]->name, slots_[loops_[i]->slot]);
        return s + ")";
    }

    /// The values of the variables an assert's condition names, but the loop variables that
    /// context() shows: ` (wk = 5, n = 16)`, or nothing.
    std::string assert_values(const XStmt& s) {
        std::string out;
        for (std::uint32_t k = 0; k < s.body_n; ++k) {
            const XExpr& load = ir_.exprs[ir_.lists[s.body + k]];
            if (std::any_of(loops_.begin(), loops_.end(), [&](const XStmt* l) { return l->slot == load.a; })) continue;
            std::int64_t v = slots_[load.a];
            std::string text = std::to_string(v);
            if (load.type == Type::boolean) text = v ? "true" : "false";
            if (load.type == Type::node) text = node_text(v);
            if (load.type == Type::message)
                text = v == empty_bundle ? "a bundle of no message" : messages_.name(MessageId{static_cast<std::uint32_t>(v)});
            out += fmt::format("{}{} = {}", out.empty() ? " (" : ", ", ir_.slot_names[load.a], text);
        }
        return out.empty() ? out : out + ")";
    }

    /// Reports an evaluation error once per location (a loop repeats it), up to max_eval_errors.
    void report(const char* code, SourceLoc loc, std::string message) {
        if (!reported_.insert(fmt::format("{}:{}:{}", code, loc.line, loc.column)).second) return;
        if (reported_.size() > max_eval_errors) {
            diags_.note(loc, fmt::format("stopping after {} errors", max_eval_errors));
            throw Stop{};
        }
        diags_.error(code, loc, std::move(message));
    }

    // -- expressions ---------------------------------------------------------------------------

    [[noreturn]] void overflow(const XExpr& x, std::int64_t a, std::string_view op, std::int64_t b) const {
        fail("E020", x.loc, fmt::format("integer overflow: {} {} {} does not fit in 64 bits", a, op, b));
    }

    std::string node_text(std::int64_t v) const {
        if (v < topo_->processors()) return std::to_string(v);
        std::string name = topo_->node_name(Node{static_cast<std::uint32_t>(v)});  // r<l>.<i>
        std::size_t dot = name.find('.');
        return fmt::format("r({}, {})", name.substr(1, dot - 1), name.substr(dot + 1));
    }

    std::string processors_text() const { return fmt::format("{} has processors 0..{}", topo_->spec(), topo_->processors() - 1); }

    std::int64_t eval(std::uint32_t i) {
        const XExpr& x = ir_.exprs[i];
        switch (x.op) {
            case Op::constant: return x.imm;
            case Op::load: return slots_[x.a];
            case Op::neg: {
                std::int64_t v = eval(x.a);
                if (v == std::numeric_limits<std::int64_t>::min()) fail("E020", x.loc, fmt::format("integer overflow: -({}) does not fit in 64 bits", v));
                return -v;
            }
            case Op::bnot: return ~eval(x.a);
            case Op::lnot: return eval(x.a) == 0;
            case Op::add: {
                std::int64_t a = eval(x.a), b = eval(x.b), r;
                if (__builtin_add_overflow(a, b, &r)) overflow(x, a, "+", b);
                return r;
            }
            case Op::sub: {
                std::int64_t a = eval(x.a), b = eval(x.b), r;
                if (__builtin_sub_overflow(a, b, &r)) overflow(x, a, "-", b);
                return r;
            }
            case Op::mul: {
                std::int64_t a = eval(x.a), b = eval(x.b), r;
                if (__builtin_mul_overflow(a, b, &r)) overflow(x, a, "*", b);
                return r;
            }
            case Op::div:
            case Op::mod: {
                std::int64_t a = eval(x.a), b = eval(x.b);
                bool div = x.op == Op::div;
                if (b == 0) fail("E021", x.loc, fmt::format("{} by zero: {} {} 0", div ? "division" : "modulo", a, div ? "/" : "%"));
                if (b == -1) {
                    if (!div) return 0;
                    if (a == std::numeric_limits<std::int64_t>::min()) overflow(x, a, "/", b);
                    return -a;
                }
                // Floor division; the remainder takes the divisor's sign, so (k - 1) % n is in 0..n-1.
                std::int64_t q = a / b, r = a % b;
                if (r != 0 && ((r < 0) != (b < 0))) {
                    --q;
                    r += b;
                }
                return div ? q : r;
            }
            case Op::pow: {
                std::int64_t a = eval(x.a), b = eval(x.b);
                if (b < 0) fail("E024", x.loc, fmt::format("negative exponent: {} ** {} is not an integer", a, b));
                std::int64_t r = 1, base = a;
                for (std::int64_t e = b; e > 0; e >>= 1) {
                    if (e & 1)
                        if (__builtin_mul_overflow(r, base, &r)) overflow(x, a, "**", b);
                    if (e > 1 && __builtin_mul_overflow(base, base, &base)) {
                        if (a == 0 || a == 1) break;
                        if (a == -1) return (b & 1) ? -1 : 1;
                        overflow(x, a, "**", b);
                    }
                }
                return r;
            }
            case Op::band: return eval(x.a) & eval(x.b);
            case Op::bor: return eval(x.a) | eval(x.b);
            case Op::bxor: return eval(x.a) ^ eval(x.b);
            case Op::shl: {
                std::int64_t a = eval(x.a), b = eval(x.b);
                if (b < 0 || b > 62) fail("E023", x.loc, fmt::format("shift by {}: the amount must be between 0 and 62", b));
                std::int64_t r = static_cast<std::int64_t>(static_cast<std::uint64_t>(a) << b);
                if ((r >> b) != a) overflow(x, a, "<<", b);
                return r;
            }
            case Op::shr: {
                std::int64_t a = eval(x.a), b = eval(x.b);
                if (b < 0 || b > 62) fail("E023", x.loc, fmt::format("shift by {}: the amount must be between 0 and 62", b));
                return a >> b;
            }
            case Op::eq: return eval(x.a) == eval(x.b);
            case Op::ne: return eval(x.a) != eval(x.b);
            case Op::lt: return eval(x.a) < eval(x.b);
            case Op::le: return eval(x.a) <= eval(x.b);
            case Op::gt: return eval(x.a) > eval(x.b);
            case Op::ge: return eval(x.a) >= eval(x.b);
            case Op::land: return eval(x.a) && eval(x.b);
            case Op::lor: return eval(x.a) || eval(x.b);
            case Op::log2: {
                std::int64_t v = eval(x.a);
                if (v <= 0 || (v & (v - 1)) != 0)
                    fail("E022", x.loc, fmt::format("log2({}): the argument must be a power of two", v));
                return std::countr_zero(static_cast<std::uint64_t>(v));
            }
            case Op::min: return std::min(eval(x.a), eval(x.b));
            case Op::max: return std::max(eval(x.a), eval(x.b));
            case Op::cap: {
                std::int64_t l = eval(x.a);
                if (!topo_->is_tree())
                    fail("E041", x.loc, fmt::format("cap({}): {} is not a fat tree (cap gives the capacity of a tree's branch level)", l, topo_->spec()));
                if (l < 1 || l > std::int64_t{topo_->tree_levels()})
                    fail("E041", x.loc, fmt::format("cap({}): {} has branch levels 1..{}", l, topo_->spec(), topo_->tree_levels()));
                return topo_->level_caps()[static_cast<std::size_t>(l - 1)];
            }
            case Op::fold_sum:
            case Op::fold_min:
            case Op::fold_max: return fold(x);
            case Op::abs: {
                std::int64_t v = eval(x.a);
                if (v == std::numeric_limits<std::int64_t>::min()) fail("E020", x.loc, fmt::format("integer overflow: abs({}) does not fit in 64 bits", v));
                return v < 0 ? -v : v;
            }
            case Op::node_of: {
                std::int64_t v = eval(x.a);
                if (v < 0 || v >= processors_) fail("E040", x.loc, fmt::format("processor {} does not exist ({})", v, processors_text()));
                return v;
            }
            case Op::proc_of: {
                std::int64_t v = eval(x.a);
                if (ir_.exprs[x.a].type == Type::node) {
                    if (v >= processors_)
                        fail("E043", x.loc, fmt::format("{} is a router; messages and collectives name processors", node_text(v)));
                } else if (v < 0 || v >= processors_) {
                    fail("E040", x.loc, fmt::format("processor {} does not exist ({})", v, processors_text()));
                }
                return v;
            }
            case Op::router: return router(x, eval(x.a), eval(x.b));
            case Op::coord: return coord(x);
            case Op::msg_m: {
                std::int64_t s = eval(x.a), d = eval(x.b);
                return idx(messages_.personal(static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(d)));
            }
            case Op::msg_b: return idx(messages_.broadcast(static_cast<std::uint32_t>(eval(x.a))));
            case Op::msg_a: return idx(messages_.value(static_cast<std::uint32_t>(eval(x.a))));
            case Op::msg_range: {
                std::int64_t lo = eval(x.a), hi = eval(x.b);
                if (lo > hi) fail("E048", x.loc, fmt::format("a({} .. {}): a combined value a(i .. j) needs i <= j", lo, hi));
                if (lo == hi) return idx(messages_.value(static_cast<std::uint32_t>(lo)));
                return idx(composites().intern({MessageKind::combined, static_cast<std::uint32_t>(lo), static_cast<std::uint32_t>(hi), {}}));
            }
            case Op::msg_join: {
                std::vector<MessageId> parts;
                add_parts(parts, MessageId{static_cast<std::uint32_t>(eval(x.a))}, x);
                add_parts(parts, MessageId{static_cast<std::uint32_t>(eval(x.b))}, x);
                return make_bundle(std::move(parts));
            }
            case Op::fold_bundle: return fold_bundle(x);
        }
        return 0;
    }

    Composites& composites() { return *composites_; }

    /// The value of a bundle with no part (a comprehension whose condition holds nowhere): no
    /// message id. It joins as nothing, a send or hop of it moves nothing, and a require of it
    /// requires nothing (docs/dsl.md, "Bundles").
    static constexpr std::int64_t empty_bundle = std::numeric_limits<std::uint32_t>::max();

    /// Bundles move only under wormhole timing (docs/semantics.md): E047 otherwise.
    void check_bundle(MessageId m, const XStmt& s) {
        if (timing_wormhole_ || !messages_.is_composite(m) || messages_.composite(m).kind != MessageKind::bundle) return;
        fail("E047", ir_.exprs[s.e2].loc,
             fmt::format("{} is a bundle, and bundles need timing=wormhole: under hop timing a step moves one message per unit of "
                         "capacity (send the parts one by one)",
                         messages_.name(m)));
    }

    /// Appends the base messages m stands for (a bundle's parts) to a bundle under construction.
    void add_parts(std::vector<MessageId>& parts, MessageId m, const XExpr& x) {
        if (idx(m) == empty_bundle) return;
        if (messages_.is_composite(m) && messages_.composite(m).kind == MessageKind::combined)
            fail("E048", x.loc, fmt::format("a bundle joins base messages; {} is a combined value", messages_.name(m)));
        messages_.for_each_part(m, [&](MessageId p) {
            if (std::find(parts.begin(), parts.end(), p) != parts.end())
                fail("E048", x.loc, fmt::format("{} is twice in the bundle", messages_.name(p)));
            parts.push_back(p);
        });
    }

    std::int64_t make_bundle(std::vector<MessageId> parts) {
        if (parts.empty()) return empty_bundle;
        if (parts.size() == 1) return idx(parts[0]);  // a bundle of one message is that message
        std::sort(parts.begin(), parts.end(), [](MessageId a, MessageId b) { return idx(a) < idx(b); });
        return idx(composites().intern({MessageKind::bundle, 0, 0, std::move(parts)}));
    }

    /// `bundle(e for i in a .. b if c)`: the parts of every e where c holds.
    std::int64_t fold_bundle(const XExpr& x) {
        std::int64_t lo = eval(ir_.lists[x.a]), hi = eval(ir_.lists[x.a + 1]);
        std::uint32_t body = ir_.lists[x.a + 2], cond = ir_.lists[x.a + 3];
        std::vector<MessageId> parts;
        std::int64_t saved = slots_[x.b];
        for (std::int64_t v = lo; v <= hi; ++v) {
            if (++iterations_ > options_.max_iterations) iteration_limit();
            slots_[x.b] = v;
            if (cond != none && !eval(cond)) continue;
            add_parts(parts, MessageId{static_cast<std::uint32_t>(eval(body))}, x);
        }
        slots_[x.b] = saved;
        return make_bundle(std::move(parts));
    }

    /// `sum(e for i in a .. b)`, `min(...)`, `max(...)`: runs the body for each i, counting the
    /// iterations against the limit like a loop. min and max of an empty range are E026.
    std::int64_t fold(const XExpr& x) {
        std::int64_t lo = eval(ir_.lists[x.a]), hi = eval(ir_.lists[x.a + 1]);
        std::uint32_t body = ir_.lists[x.a + 2], cond = ir_.lists[x.a + 3];
        if (hi < lo) {
            if (x.op == Op::fold_sum) return 0;
            fail("E026", x.loc, fmt::format("{}() over the empty range {} .. {}", x.op == Op::fold_min ? "min" : "max", lo, hi));
        }
        std::int64_t saved = slots_[x.b], acc = 0;
        bool any = false;
        for (std::int64_t v = lo;; ++v) {
            if (++iterations_ > options_.max_iterations) iteration_limit();
            slots_[x.b] = v;
            if (cond != none && !eval(cond)) {
                if (v == hi) break;
                continue;
            }
            std::int64_t y = eval(body);
            if (!any) acc = y, any = true;
            else if (x.op == Op::fold_min) acc = std::min(acc, y);
            else if (x.op == Op::fold_max) acc = std::max(acc, y);
            else if (__builtin_add_overflow(acc, y, &acc)) fail("E020", x.loc, fmt::format("integer overflow: the sum does not fit in 64 bits"));
            if (v == hi) break;
        }
        slots_[x.b] = saved;
        if (!any && x.op != Op::fold_sum)
            fail("E026", x.loc, fmt::format("{}() over {} .. {}: the condition holds for no value", x.op == Op::fold_min ? "min" : "max", lo, hi));
        return acc;
    }

    std::int64_t router(const XExpr& x, std::int64_t level, std::int64_t index) {
        const Topology& t = *topo_;
        if (level_first_.empty())
            fail("E041", x.loc, fmt::format("r({}, {}): {} has no routers (only processors 0..{})", level, index, t.spec(), t.processors() - 1));
        std::int64_t levels = static_cast<std::int64_t>(level_first_.size());
        if (level < 1 || level > levels)
            fail("E041", x.loc, fmt::format("r({}, {}): {} has router levels 1..{}", level, index, t.spec(), levels));
        std::int64_t count = level_count_[static_cast<std::size_t>(level - 1)];
        if (index < 0 || index >= count)
            fail("E041", x.loc, fmt::format("r({}, {}): level {} of {} has routers r({}, 0)..r({}, {})", level, index, level, t.spec(),
                                            level, level, count - 1));
        return level_first_[static_cast<std::size_t>(level - 1)] + index;
    }

    std::int64_t coord(const XExpr& x) {
        const auto& dims = topo_->dims();
        if (dims.empty() || topo_->family() == Family::hypercube)
            fail("E042", x.loc, fmt::format("{} has no coordinates; (x, y, ...) names nodes of meshes, tori and products", topo_->spec()));
        if (x.b != dims.size())
            fail("E042", x.loc, fmt::format("{} has {} dimensions, the node has {} coordinates", topo_->spec(), dims.size(), x.b));
        std::int64_t v = 0;
        for (std::uint32_t i = 0; i < x.b; ++i) {
            std::int64_t c = eval(ir_.lists[x.a + i]);
            if (c < 0 || c >= dims[i])
                fail("E042", ir_.exprs[ir_.lists[x.a + i]].loc,
                     fmt::format("coordinate {} is {}; dimension {} of {} has coordinates 0..{}", i + 1, c, i + 1, topo_->spec(), dims[i] - 1));
            v = v * dims[i] + c;
        }
        return v;
    }

    // -- statements ----------------------------------------------------------------------------

    bool exec_block(std::uint32_t first, std::uint32_t n) {
        for (std::uint32_t k = 0; k < n; ++k)
            if (!exec(ir_.children[first + k])) return false;
        return true;
    }

    /// Runs one statement. An evaluation error is reported; after an error in a statement that
    /// defines values or controls flow (let, for, if, step), the rest of the enclosing block is
    /// skipped (returns false), since what follows would compute with a wrong value.
    bool exec(std::uint32_t si) {
        const XStmt& s = ir_.stmts[si];
        try {
            switch (s.kind) {
                case SKind::param: {
                    auto it = overrides_.find(s.slot);
                    slots_[s.slot] = it != overrides_.end() ? it->second : eval(s.e0);
                    return true;
                }
                case SKind::let: slots_[s.slot] = eval(s.e0); return true;
                case SKind::for_: {
                    std::int64_t a = eval(s.e0), b = eval(s.e1);
                    loops_.push_back(&s);
                    for (std::int64_t v = a; v <= b; ++v) {
                        if (++iterations_ > options_.max_iterations) iteration_limit();
                        slots_[s.slot] = v;
                        exec_block(s.body, s.body_n);
                        if (v == std::numeric_limits<std::int64_t>::max()) break;
                    }
                    loops_.pop_back();
                    return true;
                }
                case SKind::if_:
                    if (eval(s.e0)) exec_block(s.body, s.body_n);
                    else exec_block(s.orelse, s.orelse_n);
                    return true;
                case SKind::step: {
                    std::int64_t v = eval(s.e0);
                    if (v < 1) fail("E025", s.at, fmt::format("step {} is before the first step (steps are numbered from 1)", v));
                    if (v >= max_step) fail("E025", s.at, fmt::format("step {} is too large (steps are below 2^31)", v));
                    Step outer = step_;
                    step_ = static_cast<Step>(v);
                    if (consumer_) {
                        begin_stream();
                        sink_.flush_below(step_);
                    }
                    exec_block(s.body, s.body_n);
                    step_ = outer;
                    return true;
                }
                case SKind::send: send(s); return true;
                case SKind::hop: hop(s); return true;
                case SKind::require: require(s); return true;
                case SKind::assert_:
                    if (!eval(s.e0)) fail("E027", s.loc, fmt::format("assertion failed: {}{}", s.name, assert_values(s)));
                    return true;
                case SKind::claim: claim(s); return true;
                case SKind::topology: topology(s); return true;
                case SKind::model:
                case SKind::collective: return true;  // built by finish_header()
            }
        } catch (const EvalError& e) {
            report(e.code, e.loc, e.message + context());
            if (s.kind == SKind::topology) throw Stop{};
            return s.kind == SKind::send || s.kind == SKind::hop || s.kind == SKind::require || s.kind == SKind::claim;
        }
        return true;
    }

    [[noreturn]] void iteration_limit() {
        const XStmt& at = *loops_.front();
        report("E051", at.loc,
               fmt::format("this loop runs more than {} iterations, the limit (a runaway loop?)", options_.max_iterations));
        throw Stop{};
    }

    void check_limit(const XStmt& s) {
        if (count_ <= options_.max_transfers) return;
        const XStmt& at = loops_.empty() ? *top_ : *loops_.front();
        std::string_view what = at.kind == SKind::for_ ? "loop" : at.kind == SKind::step ? "step" : "statement";
        report("E050", at.loc,
               fmt::format("this {} makes more than {} transfers, the limit (raise it with --max-transfers)", what,
                           options_.max_transfers));
        diags_.note(s.loc, s.kind == SKind::require ? "requirements count toward the limit too; they come from here"
                                                    : "the transfers come from here");
        throw Stop{};
    }

    bool held_initially(MessageId m, std::uint32_t at) const {
        return messages_.key(m).src == at && collective_.initial(messages_, m);
    }

    void send(const XStmt& s) {
        std::int64_t a = eval(s.e0), b = eval(s.e1);
        if (a >= processors_)
            fail("E043", ir_.exprs[s.e0].loc,
                 fmt::format("a send starts at a processor; {} is a router (write `hop` statements to move data through routers)", node_text(a)));
        if (b >= processors_)
            fail("E043", ir_.exprs[s.e1].loc,
                 fmt::format("a send ends at a processor; {} is a router (write `hop` statements to move data through routers)", node_text(b)));
        if (a == b) fail("E045", s.loc, fmt::format("send from {} to itself", a));
        auto src = static_cast<std::uint32_t>(a), dst = static_cast<std::uint32_t>(b);
        MessageId m = s.e2 != none     ? MessageId{static_cast<std::uint32_t>(eval(s.e2))}
                      : personalized_ ? messages_.personal(src, dst)
                      : rooted_       ? messages_.broadcast(idx(collective_.root))
                      : collective_.combines() ? messages_.value(src)
                                      : messages_.broadcast(src);
        if (idx(m) == empty_bundle) return;  // a bundle of no message: nothing moves
        if (s.e2 != none) check_bundle(m, s);
        if (policy_ != LoweringPolicy::cut_through) {
            std::uint32_t d = topo_->distance(Node{src}, Node{dst});
            if (step_ + std::int64_t{d} - 1 >= max_step)
                fail("E025", s.loc, fmt::format("a send in step {} would arrive after step 2^31", step_));
            fifo_.push_back({step_, Node{src}, Node{dst}, m});
            if (options_.record_locations) fifo_origins_.push_back(origin_of(s));
            count_ += d;
        } else {
            route_.clear();
            topo_->route(Node{src}, Node{dst}, route_);
            if (timing_wormhole_) {
                for (ChannelId c : route_) sink_.push({step_, c, m});
            } else {
                if (step_ + static_cast<std::int64_t>(route_.size()) - 1 >= max_step)
                    fail("E025", s.loc, fmt::format("a send in step {} would arrive after step 2^31", step_));
                Step t = step_;
                for (ChannelId c : route_) sink_.push({t++, c, m});
            }
            if (options_.record_locations) sink_.origin(route_.size(), origin_of(s));
            count_ += route_.size();
        }
        // Combined values are left to the verifier (holding one depends on what combines);
        // a bundle needs each of its parts. A streamed run checks holding in the consumer.
        if (consumer_ && messages_.is_composite(m)) throw NotStreamable("combined values and bundles are not streamed");
        if (!messages_.is_composite(m)) {
            if (!consumer_ && !held_initially(m, src)) pending_.push_back({m, src, step_, s.loc});
        } else if (messages_.composite(m).kind == MessageKind::bundle) {
            for (MessageId p : messages_.composite(m).parts)
                if (!held_initially(p, src)) pending_.push_back({p, src, step_, s.loc});
        }
        check_limit(s);
    }

    /// Recording: the index of the statement's location in origin_names_ (SendTable::origins).
    std::uint32_t origin_of(const XStmt& s) {
        auto [it, fresh] = origin_index_.emplace(&s, static_cast<std::uint32_t>(origin_names_.size()));
        if (fresh) origin_names_.push_back(fmt::format("{}:{}:{}", diags_.file(), s.loc.line, s.loc.column));
        return it->second;
    }

    void hop(const XStmt& s) {
        std::int64_t a = eval(s.e0), b = eval(s.e1);
        auto c = topo_->find_channel(Node{static_cast<std::uint32_t>(a)}, Node{static_cast<std::uint32_t>(b)});
        if (!c)
            fail("E044", s.loc,
                 fmt::format("there is no channel {} -> {} in {} (a hop crosses one channel; `send` follows a whole route)", node_text(a),
                             node_text(b), topo_->spec()));
        MessageId m{static_cast<std::uint32_t>(eval(s.e2))};
        if (idx(m) == empty_bundle) return;  // a bundle of no message: nothing moves
        check_bundle(m, s);
        sink_.push({step_, *c, m});
        if (options_.record_locations) sink_.origin(1, origin_of(s));
        if (policy_ != LoweringPolicy::cut_through) ++explicit_[(std::uint64_t{step_} << 32) | idx(*c)];
        ++count_;
        check_limit(s);
    }

    /// A claim, bound or citation: its value as JSON text, appended to the table's extra fields
    /// in the order written.
    void claim(const XStmt& s) {
        std::string text;
        if (s.name == "cite") {
            text = nlohmann::json(static_cast<const ast::Cite*>(s.decl)->text.value).dump();
        } else if (s.form == Form::scalar) {
            text = std::to_string(eval(s.e0));
        } else {
            std::vector<std::int64_t> items;
            if (s.form == Form::list) {
                for (std::uint32_t k = 0; k < s.body_n; ++k) items.push_back(eval(ir_.lists[s.body + k]));
            } else {
                std::int64_t lo = eval(s.e0), hi = eval(s.e1);
                for (std::int64_t v = lo; v <= hi; ++v) {
                    if (++iterations_ > options_.max_iterations) iteration_limit();
                    slots_[s.slot] = v;
                    items.push_back(eval(s.e2));
                    if (v == hi) break;
                }
            }
            text = nlohmann::json(items).dump();
        }
        extra_.emplace_back(s.name, std::move(text));
    }

    void require(const XStmt& s) {
        MessageId m{static_cast<std::uint32_t>(eval(s.e0))};
        std::int64_t at = eval(s.e1);
        if (at >= processors_)
            fail("E043", ir_.exprs[s.e1].loc, fmt::format("require names a processor; {} is a router", node_text(at)));
        if (idx(m) == empty_bundle) return;  // a bundle of no message requires nothing
        // `require b(0) + b(1) at p` requires each part.
        messages_.for_each_part(m, [&](MessageId p) { requirements_.push_back({p, Node{static_cast<std::uint32_t>(at)}}); });
        ++count_;  // requirements take memory like transfers and count toward the same limit
        check_limit(s);
    }

    // -- declarations --------------------------------------------------------------------------

    std::int64_t header(const ast::Expr& e) {
        auto it = ir_.header_exprs.find(&e);
        COLLSCHED_ASSERT(it != ir_.header_exprs.end());
        return eval(it->second);
    }

    /// A positional or keyword argument of a topology family, from a declaration or a factor.
    struct Arg {
        SourceLoc loc;
        std::string_view key;
        const ast::Expr* expr = nullptr;
        const ast::ListLit* list = nullptr;
        const ast::StringLit* str = nullptr;
    };

    /// The spec string (compiler/topology.hpp) of `family(args)`.
    std::string spec_of(std::string_view family, SourceLoc loc, const std::vector<Arg>& args) {
        std::vector<const Arg*> pos;
        const Arg* caps = nullptr;
        const Arg* w = nullptr;
        for (const Arg& a : args) {
            if (a.key.empty()) {
                pos.push_back(&a);
            } else if (a.key == "caps" && (family == "bft" || family == "fattree")) {
                caps = &a;
            } else if (a.key == "w" && family == "ideal") {
                w = &a;
            } else {
                std::string_view accepted = family == "bft" || family == "fattree" ? " (it takes caps = [...])"
                                            : family == "ideal"                   ? " (it takes w = EXPR)"
                                                                                  : "";
                fail("E031", a.loc, fmt::format("{}() has no argument '{}'{}", family, a.key, accepted));
            }
        }
        if (!is_family(family))
            fail("E030", loc,
                 fmt::format("unknown topology family '{}': expected ebft, cbft, bft, fattree, ideal, ring, linear, mesh, torus, "
                             "hypercube, complete, product or graph",
                             family));
        auto count = [&](std::size_t lo, std::size_t hi, std::string_view shape) {
            if (pos.size() < lo || pos.size() > hi)
                fail("E031", loc, fmt::format("{}() takes {}, found {} positional argument{}", family, shape, pos.size(), pos.size() == 1 ? "" : "s"));
        };
        auto integer = [&](const Arg& a) {
            if (!a.expr) fail("E031", a.loc, fmt::format("expected an integer argument of {}()", family));
            return header(*a.expr);
        };
        auto cap_list = [&](const Arg* a) {
            if (!a || !a->list)
                fail("E031", a ? a->loc : loc, fmt::format("{}() needs the capacities per level: caps = [c1, ..., cL]", family));
            std::string s;
            if (auto it = ir_.list_comps.find(a->list); it != ir_.list_comps.end()) {
                auto [first, last, body, slot] = it->second;
                std::int64_t lo = eval(first), hi = eval(last);
                for (std::int64_t v = lo; v <= hi && v - lo < 64; ++v) {
                    slots_[slot] = v;
                    s += fmt::format("{}{}", s.empty() ? "" : ",", eval(body));
                }
                return s;
            }
            for (const ast::Expr& e : a->list->items) s += fmt::format("{}{}", s.empty() ? "" : ",", header(e));
            return s;
        };
        if (family == "ebft" || family == "cbft" || family == "ring" || family == "linear" || family == "complete" ||
            family == "hypercube") {
            count(1, 1, "1 argument");
            return fmt::format("{}:{}", family, integer(*pos[0]));
        }
        if (family == "bft") {
            if (!caps && pos.size() == 2 && pos[1]->list) {
                caps = pos[1];
                pos.pop_back();
            }
            count(1, 1, "the number of leaves and caps = [...]");
            std::int64_t n = integer(*pos[0]);
            return fmt::format("bft:{}:{}", n, cap_list(caps));
        }
        if (family == "fattree") {
            if (!caps && pos.size() == 3 && pos[2]->list) {
                caps = pos[2];
                pos.pop_back();
            }
            count(2, 2, "the arity, the number of leaves and caps = [...]");
            std::int64_t b = integer(*pos[0]), n = integer(*pos[1]);
            return fmt::format("fattree:{}:{}:{}", b, n, cap_list(caps));
        }
        if (family == "ideal") {
            count(1, 1, "the number of leaves (and w = EXPR)");
            std::string s = fmt::format("ideal:{}", integer(*pos[0]));
            if (w) {
                if (!w->expr) fail("E031", w->loc, "w must be an expression of the subtree size n, for example w = n");
                dsl::NameSubst subst = [&](const ast::Ident& id) -> std::optional<std::string> {
                    auto it = ir_.w_vars.find(&id);
                    if (it == ir_.w_vars.end()) return std::nullopt;
                    return std::to_string(slots_[it->second]);
                };
                std::string text = dsl::print(*w->expr, subst);
                text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
                s += ":w=" + text;
            }
            return s;
        }
        if (family == "mesh" || family == "torus") {
            count(1, 16, "the size of each dimension");
            std::string s = fmt::format("{}:", family);
            for (std::size_t i = 0; i < pos.size(); ++i) s += fmt::format("{}{}", i ? "x" : "", integer(*pos[i]));
            return s;
        }
        if (family == "product") {
            count(2, 16, "at least 2 factors");
            std::string s = "product:";
            for (std::size_t i = 0; i < pos.size(); ++i) {
                const Arg& a = *pos[i];
                std::string factor;
                const ast::Call* call = a.expr ? std::get_if<ast::Call>(&a.expr->node) : nullptr;
                if (a.str) factor = substitute(*a.str);
                else if (call) factor = factor_spec(*call);
                else fail("E031", a.loc, "a factor of product() is a topology such as ring(3) or \"ring:3\"");
                s += (i ? "*" : "") + factor;
            }
            return s;
        }
        // graph
        count(1, 1, "the path of a JSON edge list");
        if (!pos[0]->str) fail("E031", pos[0]->loc, "graph() takes the path of a JSON edge list as a string, for example graph(\"net.json\")");
        std::filesystem::path path(substitute(*pos[0]->str));
        if (path.is_relative() && !options_.base_dir.empty()) path = std::filesystem::path(options_.base_dir) / path;
        return "graph:" + path.string();
    }

    /// A topology string with every `{name}` replaced by the value of the param or let.
    std::string substitute(const ast::StringLit& str) const {
        auto it = ir_.string_vars.find(&str);
        if (it == ir_.string_vars.end()) return str.value;
        std::string out = str.value;
        for (const auto& [name, slot] : it->second) {
            std::string key = "{" + name + "}";
            for (std::size_t at = out.find(key); at != std::string::npos; at = out.find(key, at))
                out.replace(at, key.size(), std::to_string(slots_[slot]));
        }
        return out;
    }

    std::string factor_spec(const ast::Call& c) {
        std::vector<Arg> args;
        for (const ast::Expr& e : c.args) args.push_back({ast::start_loc(e), {}, &e, nullptr, nullptr});
        return spec_of(c.name, c.loc, args);
    }

    void topology(const XStmt& s) {
        const auto& d = *static_cast<const ast::TopologyDecl*>(s.decl);
        std::string spec;
        SourceLoc loc = s.loc;
        if (const auto* lit = std::get_if<ast::StringLit>(&d.spec)) {
            spec = substitute(*lit);
            loc = lit->loc;
        } else {
            const auto& call = std::get<ast::TopoCall>(d.spec);
            std::vector<Arg> args;
            for (const ast::TopoArg& a : call.args)
                args.push_back({a.loc, a.key, std::get_if<ast::Expr>(&a.value), std::get_if<ast::ListLit>(&a.value),
                                std::get_if<ast::StringLit>(&a.value)});
            spec = spec_of(call.family, call.loc, args);
            loc = call.loc;
        }
        try {
            topo_ = Topology::parse(spec);
        } catch (const InputError& e) {
            fail("E031", loc, e.what());
        }
        processors_ = topo_->processors();
        composites_ = std::make_shared<Composites>(Messages(topo_->processors()).base_size());
        messages_ = Messages(topo_->processors(), composites_.get());
        // Router numbering per level, for r(level, index).
        if (topo_->is_tree()) {
            std::uint64_t count = topo_->processors();
            for (std::uint32_t l = 1; l <= topo_->tree_levels(); ++l) {
                count /= topo_->arity();
                auto first = topo_->find_node(fmt::format("r{}.0", l));
                COLLSCHED_ASSERT(first.has_value());
                level_first_.push_back(idx(*first));
                level_count_.push_back(static_cast<std::int64_t>(count));
            }
        } else if (topo_->routers() > 0) {
            level_first_.push_back(topo_->processors());
            level_count_.push_back(topo_->routers());
        }
    }

    /// Model and collective, once the topology is known and before the first schedule statement.
    void finish_header() {
        if (header_done_) return;
        header_done_ = true;
        if (!topo_) throw Stop{};
        std::size_t errors = diags_.error_count();
        model_ = topo_->default_model();
        for (std::uint32_t k = 0; k < ir_.top_n; ++k) {
            const XStmt& s = ir_.stmts[ir_.children[ir_.top + k]];
            try {
                if (s.kind == SKind::model) build_model(*static_cast<const ast::ModelDecl*>(s.decl));
                if (s.kind == SKind::collective) build_collective(*static_cast<const ast::CollectiveDecl*>(s.decl));
            } catch (const EvalError& e) {
                report(e.code, e.loc, e.message);
            }
        }
        if (diags_.error_count() != errors) throw Stop{};
        timing_wormhole_ = model_.timing == Timing::wormhole;
        CollectiveKind k = collective_.kind;
        personalized_ = k == CollectiveKind::alltoall || k == CollectiveKind::scatter || k == CollectiveKind::gather;
        rooted_ = k == CollectiveKind::broadcast || k == CollectiveKind::multicast;
    }

    void build_model(const ast::ModelDecl& d) {
        Model m = model_;
        if (d.timing.name == "hop") m.timing = Timing::hop;
        else if (d.timing.name == "wormhole") m.timing = Timing::wormhole;
        else fail("E032", d.timing.loc, fmt::format("unknown timing '{}': expected hop or wormhole", d.timing.name));
        std::set<std::string> seen;
        bool bad = false;
        for (const ast::ModelArg& a : d.args) {
            try {
                const std::string& key = a.key.name;
                if (!seen.insert(key).second) fail("E032", a.key.loc, fmt::format("'{}' is given twice", key));
                std::string value;
                if (a.value.expr) {
                    value = std::to_string(header(*a.value.expr));
                } else if (auto it = ir_.model_vars.find(&a.value); it != ir_.model_vars.end()) {
                    value = std::to_string(slots_[it->second]);
                } else {
                    value = a.value.word;
                }
                if (key == "policy") {
                    if (value == "cut-through") policy_ = LoweringPolicy::cut_through;
                    else if (value == "fifo") policy_ = LoweringPolicy::fifo;
                    else if (value == "flood") policy_ = LoweringPolicy::flood;
                    else if (value == "adaptive") policy_ = LoweringPolicy::adaptive;
                    else fail("E032", a.value.loc, fmt::format("unknown policy '{}': expected cut-through, fifo, flood or adaptive", value));
                    continue;
                }
                if (key == "timing")
                    fail("E032", a.key.loc, fmt::format("the timing is the model's name: model hop(...) or model wormhole(ts = .., tc = ..)"));
                try {
                    m = apply_model_options(m, key + "=" + value);
                } catch (const InputError& e) {
                    std::string_view msg = e.what();
                    if (msg.starts_with("model: ")) msg.remove_prefix(7);
                    bool key_error = msg.starts_with("unknown key");
                    fail("E032", key_error ? a.key.loc : a.value.loc,
                         key_error ? fmt::format("unknown model key '{}': expected ports, queues, replicate, policy, ts or tc", key)
                                   : std::string(msg));
                }
            } catch (const EvalError& e) {
                report(e.code, e.loc, e.message);
                bad = true;
            }
        }
        if (!bad && policy_ != LoweringPolicy::cut_through && m.timing == Timing::wormhole)
            fail("E032", d.loc, fmt::format("policy {} needs hop timing (under wormhole a send crosses its whole route in one round)", to_string(policy_)));
        model_ = m;
    }

    void build_collective(const ast::CollectiveDecl& d) {
        static constexpr std::pair<std::string_view, CollectiveKind> kinds[] = {
            {"alltoall", CollectiveKind::alltoall},   {"allgather", CollectiveKind::allgather}, {"broadcast", CollectiveKind::broadcast},
            {"scatter", CollectiveKind::scatter},     {"gather", CollectiveKind::gather},       {"multicast", CollectiveKind::multicast},
            {"custom", CollectiveKind::custom},       {"reduce", CollectiveKind::reduce},       {"prefix", CollectiveKind::prefix}};
        const std::string& name = d.name.name;
        auto it = std::find_if(std::begin(kinds), std::end(kinds), [&](const auto& k) { return k.first == name; });
        if (it == std::end(kinds))
            fail("E033", d.name.loc,
                 fmt::format("unknown collective '{}': expected alltoall, allgather, broadcast(r), scatter(r), gather(r), "
                             "multicast(r, {{members}}), reduce(r), prefix or custom",
                             name));
        Collective c;
        c.kind = it->second;
        auto expr_arg = [&](std::size_t i) -> const ast::Expr& {
            const auto* e = std::get_if<ast::Expr>(&d.args[i]);
            if (!e) fail("E033", std::get<ast::SetLit>(d.args[i]).loc, fmt::format("argument {} of {} is a processor, not a set", i + 1, name));
            return *e;
        };
        switch (c.kind) {
            case CollectiveKind::alltoall:
            case CollectiveKind::allgather:
            case CollectiveKind::custom:
            case CollectiveKind::prefix:
                if (!d.args.empty()) fail("E033", d.loc, fmt::format("{} takes no arguments", name));
                break;
            case CollectiveKind::broadcast:
            case CollectiveKind::scatter:
            case CollectiveKind::reduce:
            case CollectiveKind::gather:
                if (d.args.size() != 1) fail("E033", d.loc, fmt::format("{} takes the root processor: {}(r)", name, name));
                c.root = Node{static_cast<std::uint32_t>(header(expr_arg(0)))};
                break;
            case CollectiveKind::multicast: {
                if (d.args.size() != 2 || !std::holds_alternative<ast::SetLit>(d.args[1]))
                    fail("E033", d.loc, "multicast takes the root and the set of members: multicast(r, {a, b, c})");
                c.root = Node{static_cast<std::uint32_t>(header(expr_arg(0)))};
                for (const ast::SetItem& item : std::get<ast::SetLit>(d.args[1]).items) {
                    std::int64_t lo = header(item.first), hi = item.last ? header(*item.last) : lo;
                    for (std::int64_t v = lo; v <= hi; ++v) {
                        Node n{static_cast<std::uint32_t>(v)};
                        if (std::find(c.members.begin(), c.members.end(), n) != c.members.end())
                            fail("E033", item.loc, fmt::format("processor {} is listed twice in the multicast set", v));
                        c.members.push_back(n);
                    }
                }
                std::sort(c.members.begin(), c.members.end());
                break;
            }
        }
        try {
            c.check_goal_count(*topo_);
        } catch (const InputError& e) {
            fail("E053", d.loc, e.what());
        }
        collective_ = std::move(c);
    }

    // -- fifo ----------------------------------------------------------------------------------

    struct FifoSend {
        Step issue;
        Node src, dst;
        MessageId message;
    };

    /// The fifo and flood policies. Every outgoing channel has a queue; a message joins the queue
    /// of the first channel of its route in the step its send is issued, and the queue of the
    /// next channel in the step after it crossed one (a message that arrives at the end of step t
    /// may leave at t+1). In each step a channel forwards up to its capacity (less the explicit
    /// hops on it in that step) from the head of its queue. Queue order: earlier arrival first
    /// (FIFO); at equal arrival, the larger remaining distance first, then the lower message id,
    /// then the send written first.
    ///
    /// Under flood, the sends of one message by one processor in one step are one multicast: the
    /// union of their routes is a tree, a copy crosses each of its channels once, and a copy that
    /// crosses a channel joins the queues of all the tree's channels after it (the router
    /// replicates). Its remaining distance is the longest route still ahead of it. Both policies
    /// walk a forest of route trees: under fifo every send is a chain of its own.
    void lower_fifo() {
        struct TreeNode {
            ChannelId channel;
            std::uint32_t remaining;         // the longest route ahead, this channel included
            std::uint32_t kids = 0, kids_n = 0;  // range of `kids`
        };
        struct Unit {
            Step issue;
            MessageId message;
            std::uint32_t roots = 0, roots_n = 0;  // range of `kids`
        };
        std::vector<TreeNode> tree;
        std::vector<std::uint32_t> kids;
        std::vector<Unit> units;
        std::vector<ChannelId> route;
        std::vector<std::uint32_t> tree_origin;  // recording: per tree node, the send whose route added it
        const bool flood = policy_ == LoweringPolicy::flood;
        // Group sends into units: one per send (fifo), one per (step, source, message) (flood).
        std::vector<std::uint32_t> order(fifo_.size());
        for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
        auto key = [&](std::uint32_t i) { return std::tuple(fifo_[i].issue, idx(fifo_[i].src), idx(fifo_[i].message)); };
        if (flood) std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return key(a) < key(b); });
        std::vector<std::pair<std::uint32_t, std::uint32_t>> unit_of_first;  // (first send index, unit) to number units in program order
        for (std::size_t g = 0; g < order.size();) {
            std::size_t h = g + 1;
            if (flood)
                while (h < order.size() && key(order[h]) == key(order[g])) ++h;
            // The union of the group's routes: per channel, the channels after it.
            std::vector<ChannelId> chans;                          // tree nodes of this unit, in discovery order
            std::unordered_map<std::uint32_t, std::uint32_t> at;   // channel -> position in chans
            std::vector<std::vector<std::uint32_t>> next;          // position -> positions after it
            std::vector<std::uint32_t> remaining, roots, origin;
            for (std::size_t k = g; k < h; ++k) {
                const FifoSend& f = fifo_[order[k]];
                route.clear();
                topo_->route(f.src, f.dst, route);
                std::uint32_t prev = none;
                for (std::size_t j = 0; j < route.size(); ++j) {
                    auto [it, fresh] = at.emplace(idx(route[j]), static_cast<std::uint32_t>(chans.size()));
                    if (fresh) {
                        chans.push_back(route[j]);
                        next.emplace_back();
                        remaining.push_back(0);
                        if (options_.record_locations) origin.push_back(fifo_origins_[order[k]]);
                    }
                    std::uint32_t pos = it->second;
                    remaining[pos] = std::max(remaining[pos], static_cast<std::uint32_t>(route.size() - j));
                    auto& list = prev == none ? roots : next[prev];
                    if (std::find(list.begin(), list.end(), pos) == list.end()) list.push_back(pos);
                    prev = pos;
                }
            }
            auto base = static_cast<std::uint32_t>(tree.size());
            for (std::size_t p = 0; p < chans.size(); ++p) {
                TreeNode node{chans[p], remaining[p]};
                node.kids = static_cast<std::uint32_t>(kids.size());
                node.kids_n = static_cast<std::uint32_t>(next[p].size());
                for (std::uint32_t q : next[p]) kids.push_back(base + q);
                tree.push_back(node);
                if (options_.record_locations) tree_origin.push_back(origin[p]);
            }
            Unit u{fifo_[order[g]].issue, fifo_[order[g]].message};
            u.roots = static_cast<std::uint32_t>(kids.size());
            u.roots_n = static_cast<std::uint32_t>(roots.size());
            for (std::uint32_t q : roots) kids.push_back(base + q);
            unit_of_first.emplace_back(*std::min_element(order.begin() + static_cast<std::ptrdiff_t>(g), order.begin() + static_cast<std::ptrdiff_t>(h)),
                                       static_cast<std::uint32_t>(units.size()));
            units.push_back(u);
            g = h;
        }
        // Units rank by the send written first (the last tie-break of the queue order).
        std::sort(unit_of_first.begin(), unit_of_first.end());
        std::vector<std::uint32_t> rank(units.size());
        for (std::uint32_t r = 0; r < unit_of_first.size(); ++r) rank[unit_of_first[r].second] = r;

        struct Entry {
            Step ready;
            std::uint32_t remaining;
            MessageId message;
            std::uint32_t rank;
            std::uint32_t node;
        };
        auto later = [](const Entry& a, const Entry& b) {  // heap order: the top is the first to go
            if (a.ready != b.ready) return a.ready > b.ready;
            if (a.remaining != b.remaining) return a.remaining < b.remaining;
            if (a.message != b.message) return idx(a.message) > idx(b.message);
            return a.rank > b.rank;
        };
        std::vector<std::vector<Entry>> queue(topo_->channels().size());
        std::vector<std::uint32_t> active;
        std::vector<char> is_active(queue.size(), 0);
        auto enqueue = [&](Entry e) {
            std::uint32_t c = idx(tree[e.node].channel);
            auto& q = queue[c];
            q.push_back(e);
            std::push_heap(q.begin(), q.end(), later);
            if (!is_active[c]) {
                is_active[c] = 1;
                active.push_back(c);
            }
        };
        Step t = std::numeric_limits<Step>::max();
        for (std::uint32_t u = 0; u < units.size(); ++u) {
            for (std::uint32_t k = 0; k < units[u].roots_n; ++k) {
                std::uint32_t node = kids[units[u].roots + k];
                enqueue({units[u].issue, tree[node].remaining, units[u].message, rank[u], node});
            }
            t = std::min(t, units[u].issue);
        }
        while (!active.empty()) {
            std::sort(active.begin(), active.end());
            std::vector<std::uint32_t> now;
            now.swap(active);
            for (std::uint32_t c : now) is_active[c] = 0;
            for (std::uint32_t c : now) {
                auto& q = queue[c];
                std::int64_t room = topo_->channel(ChannelId{c}).cap;
                if (auto it = explicit_.find((std::uint64_t{t} << 32) | c); it != explicit_.end()) room -= it->second;
                while (!q.empty() && q.front().ready <= t && room > 0) {
                    std::pop_heap(q.begin(), q.end(), later);
                    Entry e = q.back();
                    q.pop_back();
                    --room;
                    sink_.push({t, ChannelId{c}, e.message});
                    if (options_.record_locations) sink_.origin(1, tree_origin[e.node]);
                    const TreeNode& node = tree[e.node];
                    if (node.kids_n > 0 && t + 1 >= max_step) {
                        report("E025", {}, "the fifo lowering runs past step 2^31");
                        throw Stop{};
                    }
                    for (std::uint32_t k = 0; k < node.kids_n; ++k) {
                        std::uint32_t child = kids[node.kids + k];
                        enqueue({t + 1, tree[child].remaining, e.message, e.rank, child});
                    }
                }
                if (!q.empty() && !is_active[c]) {
                    is_active[c] = 1;
                    active.push_back(c);
                }
            }
            Step next = std::numeric_limits<Step>::max();
            for (std::uint32_t c : active) next = std::min(next, queue[c].front().ready);
            t = std::max(t + 1, next);
        }
    }

    /// The adaptive policy (the Connection Machine router, Stanfill 1987): every node keeps one
    /// queue of the messages it holds for forwarding. In each step each node, in queue order
    /// (earlier arrival first; then the larger remaining distance, the lower message id, the send
    /// written first), sends every message it can over a channel that brings it one step closer
    /// to its destination and still has room in that step: the channel of the topology's route
    /// first, else the other such channels in the order of their far end. A message that finds
    /// no room waits (it is buffered) and tries again in the next step. A message that reaches
    /// a node at the end of step t joins its queue for step t+1; at its destination it leaves.
    void lower_adaptive() {
        struct Entry {
            Step ready;
            std::uint32_t remaining;
            MessageId message;
            std::uint32_t send;
        };
        auto before = [](const Entry& a, const Entry& b) {
            if (a.ready != b.ready) return a.ready < b.ready;
            if (a.remaining != b.remaining) return a.remaining > b.remaining;
            if (a.message != b.message) return idx(a.message) < idx(b.message);
            return a.send < b.send;
        };
        const Topology& topo = *topo_;
        std::vector<std::vector<Entry>> queue(topo.nodes());
        std::vector<std::uint32_t> active;
        std::vector<char> is_active(topo.nodes(), 0);
        auto enqueue = [&](std::uint32_t v, Entry e) {
            queue[v].push_back(e);
            if (!is_active[v]) {
                is_active[v] = 1;
                active.push_back(v);
            }
        };
        Step t = std::numeric_limits<Step>::max();
        for (std::uint32_t i = 0; i < fifo_.size(); ++i) {
            const FifoSend& f = fifo_[i];
            enqueue(idx(f.src), {f.issue, topo.distance(f.src, f.dst), f.message, i});
            t = std::min(t, f.issue);
        }
        std::vector<std::int64_t> room(topo.channels().size());
        std::vector<Step> stamp(topo.channels().size(), 0);  // the step room[c] is for
        std::vector<ChannelId> route;
        while (!active.empty()) {
            std::sort(active.begin(), active.end());
            std::vector<std::uint32_t> now;
            now.swap(active);
            for (std::uint32_t v : now) is_active[v] = 0;
            auto room_of = [&](ChannelId c) -> std::int64_t& {
                std::uint32_t k = idx(c);
                if (stamp[k] != t) {
                    stamp[k] = t;
                    room[k] = topo.channel(c).cap;
                    if (auto it = explicit_.find((std::uint64_t{t} << 32) | k); it != explicit_.end()) room[k] -= it->second;
                }
                return room[k];
            };
            std::vector<std::pair<std::uint32_t, Entry>> arrivals;
            for (std::uint32_t v : now) {
                auto& q = queue[v];
                std::sort(q.begin(), q.end(), before);
                std::vector<Entry> stay;
                for (const Entry& e : q) {
                    if (e.ready > t) {
                        stay.push_back(e);
                        continue;
                    }
                    Node dst = fifo_[e.send].dst;
                    route.clear();
                    topo.route(Node{v}, dst, route);
                    std::optional<ChannelId> pick;
                    if (room_of(route.front()) > 0) pick = route.front();
                    for (ChannelId c : topo.out_channels(Node{v})) {
                        if (pick) break;
                        Node w = topo.channel(c).to;
                        if (topo.distance(w, dst) + 1 == e.remaining && room_of(c) > 0) pick = c;
                    }
                    if (!pick) {
                        stay.push_back(e);
                        continue;
                    }
                    --room_of(*pick);
                    sink_.push({t, *pick, e.message});
                    if (options_.record_locations) sink_.origin(1, fifo_origins_[e.send]);
                    Node w = topo.channel(*pick).to;
                    if (w != dst) {
                        if (t + 1 >= max_step) {
                            report("E025", {}, "the adaptive lowering runs past step 2^31");
                            throw Stop{};
                        }
                        arrivals.emplace_back(idx(w), Entry{t + 1, e.remaining - 1, e.message, e.send});
                    }
                }
                q.swap(stay);
                if (!q.empty() && !is_active[v]) {
                    is_active[v] = 1;
                    active.push_back(v);
                }
            }
            for (auto& [v, e] : arrivals) enqueue(v, e);
            Step next = std::numeric_limits<Step>::max();
            for (std::uint32_t v : active)
                for (const Entry& e : queue[v]) next = std::min(next, e.ready);
            t = std::max(t + 1, next);
        }
    }

    // -- causality of sends ----------------------------------------------------------------------

    struct Pending {
        MessageId message;
        std::uint32_t at;
        Step step;
        SourceLoc loc;
    };

    /// Every send of data that is not the sender's initial data needs that data to have arrived
    /// at the sender by the end of the previous step. One pass over the sorted transfers finds
    /// the first arrival of each (message, processor) pair asked about.
    void check_holds(const std::vector<Transfer>& transfers) {
        if (pending_.empty()) return;
        auto key = [](MessageId m, std::uint32_t at) { return (std::uint64_t{idx(m)} << 32) | at; };
        constexpr Step never = std::numeric_limits<Step>::max();
        FlatMap first;  // (message, processor) -> first arrival step, 0 while none
        first.reserve(pending_.size());
        // A bitmap of the messages asked about skips most transfers cheaply (when it is small).
        const bool filter = messages_.size() <= (std::uint64_t{1} << 28);
        std::vector<bool> wanted(filter ? messages_.size() : 0, false);
        // Each loop prefetches the map entry it needs a few iterations ahead, so the cache
        // misses of these random lookups overlap (they are most of the cost of this check).
        constexpr std::size_t ahead = 16;
        const std::size_t P = pending_.size(), N = transfers.size();
        for (std::size_t i = 0; i < P; ++i) {
            if (i + ahead < P) first.prefetch(key(pending_[i + ahead].message, pending_[i + ahead].at));
            const Pending& p = pending_[i];
            first.find_or_insert(key(p.message, p.at), [] { return 0u; });
            if (filter) wanted[idx(p.message)] = true;
        }
        auto arrival = [&](MessageId m, const Transfer& t) -> std::uint64_t {  // the key of an arrival at a processor, or FlatMap::empty
            if (filter && !wanted[idx(m)]) return FlatMap::empty;
            std::uint32_t to = idx(topo_->channel(t.channel).to);
            return to >= processors_ ? FlatMap::empty : key(m, to);
        };
        auto record = [&](std::uint64_t k, Step step) {
            if (k != FlatMap::empty && first.find(k) == 0) first.at(k) = step;
        };
        if (!composites_->empty()) {  // a bundle brings its parts
            for (const Transfer& t : transfers) {
                if (messages_.is_composite(t.message))
                    messages_.for_each_part(t.message, [&](MessageId m) { record(arrival(m, t), t.step); });
                else
                    record(arrival(t.message, t), t.step);
            }
        } else {
            for (std::size_t i = 0; i < N; ++i) {
                if (i + ahead < N)
                    if (std::uint64_t k = arrival(transfers[i + ahead].message, transfers[i + ahead]); k != FlatMap::empty)
                        first.prefetch(k);
                record(arrival(transfers[i].message, transfers[i]), transfers[i].step);
            }
        }
        for (std::size_t i = 0; i < P; ++i) {
            if (i + ahead < P) first.prefetch(key(pending_[i + ahead].message, pending_[i + ahead].at));
            const Pending& p = pending_[i];
            Step arrive = first.find(key(p.message, p.at));
            if (arrive == 0) arrive = never;
            if (arrive < p.step) continue;
            std::string name = messages_.name(p.message);
            std::string why;
            if (!collective_.initial(messages_, p.message))
                why = fmt::format("{} is not initial data of collective {}", name, dsl_collective(collective_));
            else
                why = fmt::format("it starts at processor {}", messages_.key(p.message).src);
            std::string when = arrive == never ? fmt::format("no transfer brings it to {}", p.at)
                                               : fmt::format("it first reaches {} at the end of step {}", p.at, arrive);
            report("E046", p.loc, fmt::format("processor {} does not hold {} in step {}: {}, and {}", p.at, name, p.step, why, when));
        }
    }

    const IR& ir_;
    const CompileOptions& options_;
    Diagnostics& diags_;
    std::vector<std::int64_t> slots_;
    std::unordered_map<std::uint32_t, std::int64_t> overrides_;

    std::shared_ptr<const Topology> topo_;
    std::int64_t processors_ = 0;
    Messages messages_{0};
    std::shared_ptr<Composites> composites_;  ///< a(i..j) and bundles, interned as they are met
    std::vector<std::int64_t> level_first_, level_count_;
    Model model_;
    Collective collective_;
    LoweringPolicy policy_ = LoweringPolicy::cut_through;
    bool header_done_ = false;
    bool timing_wormhole_ = false;
    bool personalized_ = false;  // default message m(src, dst)
    bool rooted_ = false;        // default message b(root); otherwise b(src)

    Step step_ = 0;
    std::vector<const XStmt*> loops_;
    const XStmt* top_ = nullptr;
    std::uint64_t iterations_ = 0;
    std::uint64_t count_ = 0;  // transfers made so far (fifo: route lengths of the sends)

    TransferSink sink_;
    StepConsumer* consumer_ = nullptr;  // streaming
    std::vector<ChannelId> route_;
    std::vector<FifoSend> fifo_;
    std::vector<std::uint32_t> fifo_origins_;  // recording: the location index of each fifo_ send
    std::unordered_map<const XStmt*, std::uint32_t> origin_index_;  // recording: statement -> index into origin_names_
    std::vector<std::string> origin_names_;    // recording: "file:line:col" of each send or hop that moved data
    std::unordered_map<std::uint64_t, std::uint32_t> explicit_;  // (step, channel) -> hops written
    std::vector<Requirement> requirements_;
    std::vector<std::pair<std::string, std::string>> extra_;  // claims, bounds, citations
    std::vector<Pending> pending_;
    std::unordered_set<std::string> reported_;
};

}  // namespace

std::optional<SendTable> compile(const dsl::ast::Program& program, const CompileOptions& options, Diagnostics& diags) {
    IR ir;
    Resolver(ir, diags).program(program, options.defines);
    if (diags.has_errors()) return std::nullopt;
    return Machine(ir, options, diags).run();
}

std::optional<SendTable> compile_text(std::string_view text, const std::string& name, const CompileOptions& options,
                                      Diagnostics& diags) {
    diags = Diagnostics(name, std::string(text));
    auto program = dsl::parse(text, name, diags);
    if (!program) return std::nullopt;
    return compile(*program, options, diags);
}

bool compile_stream(std::string_view text, const std::string& name, const CompileOptions& options, Diagnostics& diags,
                    StepConsumer& consumer) {
    diags = Diagnostics(name, std::string(text));
    auto program = dsl::parse(text, name, diags);
    if (!program) return false;
    IR ir;
    Resolver(ir, diags).program(*program, options.defines);
    if (diags.has_errors()) return false;
    return Machine(ir, options, diags).stream(consumer);
}

bool parse_defines(const std::vector<std::string>& defines, std::vector<Define>& out, Diagnostics& diags) {
    bool ok = true;
    for (const std::string& d : defines) {
        std::size_t eq = d.find('=');
        std::string_view name = std::string_view(d).substr(0, eq);
        bool name_ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                       std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
        std::int64_t v = 0;
        bool value_ok = false;
        if (eq != std::string::npos) {
            std::string_view text = std::string_view(d).substr(eq + 1);
            auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            value_ok = !text.empty() && ec == std::errc{} && p == text.data() + text.size();
        }
        if (!name_ok || !value_ok) {
            diags.error("E006", {}, fmt::format("-D {}: expected name=integer, for example -D n=16", d));
            ok = false;
            continue;
        }
        auto it = std::find_if(out.begin(), out.end(), [&](const Define& x) { return x.name == name; });
        if (it != out.end()) it->value = v;  // the last -D of a name wins
        else out.push_back({std::string(name), v});
    }
    return ok;
}

std::optional<SendTable> compile_file(const std::string& path, const std::vector<std::string>& defines, CompileOptions options,
                                      Diagnostics& diags) {
    std::string text;
    if (std::string error = read_input_file(path, "schedule", max_input_bytes(), max_input_hint, text); !error.empty()) {
        diags = Diagnostics(path, "");
        diags.error("E005", {}, "cannot read the schedule file: " + error);
        return std::nullopt;
    }
    diags = Diagnostics(path, text);
    if (!parse_defines(defines, options.defines, diags)) return std::nullopt;
    if (options.base_dir.empty()) options.base_dir = std::filesystem::path(path).parent_path().string();
    auto program = dsl::parse(text, path, diags);
    if (!program) return std::nullopt;
    return compile(*program, options, diags);
}

}  // namespace collsched
