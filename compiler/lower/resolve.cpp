#include "compiler/lower/resolve.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "compiler/topology/names.hpp"
#include "dsl/printer.hpp"
#include "support/edit_distance.hpp"

namespace collsched::compiler {

bool is_family(std::string_view f) { return find_family(f) != nullptr; }

namespace {

// ---------------------------------------------------------------------------------------------
// Stage 1: resolve names, types and placement.

class Resolver {
public:
    Resolver(IR& ir, Diagnostics& diags) : ir_(ir), diags_(diags) {}

    void program(const ast::Program& p, std::span<const Define> defines, bool topology_required) {
        auto [b, n] = block(p.statements);
        ir_.top = b;
        ir_.top_n = n;
        if (!topology_ && topology_required)
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

    /// " (did you mean 'partial'?)" for a misspelled function of the language, or nothing. Names
    /// of one or two letters (m, a, b, r) get no hint: any short typo would be near them.
    static std::string function_hint(std::string_view f) {
        std::string hint;
        std::size_t best = 3;
        for (std::string_view k : {"log2", "min", "max", "abs", "sum", "cap", "partial", "bundle"}) {
            const std::size_t d = support::edit_distance(f, k);
            if (f.size() > 2 && d < best && d <= (k.size() >= 4 ? 2u : 1u)) {
                best = d;
                hint = fmt::format(" (did you mean '{}'?)", k);
            }
        }
        return hint;
    }

    void unknown_name(const ast::Ident& id) {
        std::string hint;
        std::size_t best = 3;
        for (const Var& v : vars_) {
            std::size_t d = support::edit_distance(v.name, id.name);
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
        if (!n.set.empty()) {  // a partial a({0 .. 3, 6}[, c])
            if (f != "a" || n.args.size() > 1) {
                diags_.error("E014", n.loc, fmt::format("{}({{...}}): only a partial a({{sources}}) or a({{sources}}, chunk) takes a set", f));
                return bad(n.loc);
            }
            std::vector<std::uint32_t> items;
            bool ok = true;
            for (const ast::SetItem& it : n.set[0].items) {
                items.push_back(proc(it.first, "a source of a partial"));
                items.push_back(it.last ? proc(*it.last, "the last source of a range") : none);
                ok = ok && type(items[items.size() - 2]) != Type::bad && (items.back() == none || type(items.back()) != Type::bad);
            }
            std::int64_t chunk = -1;
            if (!n.args.empty()) {
                std::uint32_t c = want(n.args[0], Type::integer, "the chunk of a partial");
                ok = ok && type(c) != Type::bad;
                chunk = c;
            }
            if (!ok) return bad(n.loc);
            auto first = static_cast<std::uint32_t>(ir_.lists.size());
            ir_.lists.insert(ir_.lists.end(), items.begin(), items.end());
            return add({Op::msg_set, Type::message, first, static_cast<std::uint32_t>(items.size() / 2), chunk, n.loc});
        }
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
            if (!arity(2, 3, "2 arguments (source, destination), or 3 with a chunk (m(s, d, c))")) return bad(n.loc);
            std::uint32_t s = proc(n.args[0], "the source of m()");
            std::uint32_t d = proc(n.args[1], "the destination of m()");
            std::uint32_t c = n.args.size() == 3 ? want(n.args[2], Type::integer, "the chunk of m()") : none;
            if (type(s) == Type::bad || type(d) == Type::bad || (c != none && type(c) == Type::bad)) return bad(n.loc);
            return add({Op::msg_m, Type::message, s, d, c == none ? -1 : std::int64_t{c}, n.loc});  // imm: the chunk, -1 for none
        }
        if (f == "partial") {
            if (!arity(1, 2, "the processor and optionally the chunk: partial(p) or partial(p, c)")) return bad(n.loc);
            std::uint32_t p = proc(n.args[0], "the processor of partial()");
            std::uint32_t c = n.args.size() == 2 ? want(n.args[1], Type::integer, "the chunk of partial()") : none;
            if (type(p) == Type::bad || (c != none && type(c) == Type::bad)) return bad(n.loc);
            return add({Op::msg_partial, Type::message, p, c, 0, n.loc});
        }
        if (f == "b" || f == "a") {
            if (!arity(1, 2, fmt::format("1 argument (the source), or 2 with a chunk ({}(s, c))", f))) return bad(n.loc);
            std::uint32_t s = proc(n.args[0], fmt::format("the source of {}()", f));
            std::uint32_t c = n.args.size() == 2 ? want(n.args[1], Type::integer, fmt::format("the chunk of {}()", f)) : none;
            if (type(s) == Type::bad || (c != none && type(c) == Type::bad)) return bad(n.loc);
            return add({f == "b" ? Op::msg_b : Op::msg_a, Type::message, s, 0, c == none ? -1 : std::int64_t{c}, n.loc});
        }
        for (const auto& a : n.args) expr(a);  // report errors inside the arguments too
        if (is_family(f))
            diags_.error("E013", n.loc, fmt::format("'{}' is a topology family; families are written only in `topology` declarations", f));
        else
            diags_.error("E013", n.loc,
                         fmt::format("unknown function '{}'{} (functions: log2, min, max, abs, sum, cap; nodes: r(level, index); "
                                     "messages: m(s, d), b(s), a(s), a(i .. j), partial(p, c), bundle(...))",
                                     f, function_hint(f)));
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
        if (s.rounds) x.e1 = want(*s.rounds, Type::integer, "the rounds of a step");
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
            diags_.error("E034", s.name.loc, fmt::format("unknown claim '{}': expected steps, queue, buffer or rounds", s.name.name));
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
        if (s.chunks) header_int(*s.chunks, "the chunks of a collective");
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

}  // namespace

IR resolve(const ast::Program& program, std::span<const Define> defines, Diagnostics& diags, bool topology_required) {
    IR ir;
    Resolver(ir, diags).program(program, defines, topology_required);
    return ir;
}

}  // namespace collsched::compiler
