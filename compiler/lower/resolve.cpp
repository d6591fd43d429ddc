#include "compiler/lower/resolve.hpp"
#include "compiler/lower/resolve_impl.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "compiler/topology/names.hpp"
#include "dsl/printer.hpp"
#include "support/edit_distance.hpp"

namespace collsched::compiler {

bool is_family(std::string_view f) { return find_family(f) != nullptr; }

void Resolver::program(const ast::Program& p, std::span<const Define> defines, bool topology_required) {
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

const Resolver::Var* Resolver::lookup(std::string_view name) const {
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
        if (it->name == name) return &*it;
    return nullptr;
}

std::uint32_t Resolver::declare(const ast::Ident& id, Type type) {
    if (const Var* prev = lookup(id.name)) {
        diags_.error("E011", id.loc, fmt::format("'{}' is already defined", id.name));
        diags_.note(prev->loc, fmt::format("'{}' is defined here", id.name));
    }
    std::uint32_t slot = ir_.slots++;
    ir_.slot_names.push_back(id.name);
    vars_.push_back({id.name, slot, type, id.loc});
    return slot;
}

std::string Resolver::function_hint(std::string_view f) {
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

void Resolver::unknown_name(const ast::Ident& id) {
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

std::uint32_t Resolver::add(XExpr x) {
    ir_.exprs.push_back(x);
    return static_cast<std::uint32_t>(ir_.exprs.size() - 1);
}

bool Resolver::need_topology(SourceLoc loc, std::string_view what) {
    if (topology_) return true;
    if (!reported_no_topology_)
        diags_.error("E015", loc, fmt::format("{} needs the topology, which is not declared yet (declare `topology` first)", what));
    reported_no_topology_ = true;
    return false;
}

std::uint32_t Resolver::checked(std::uint32_t x, const ast::Expr& e, Type want_type, std::string_view what) {
    Type t = type(x);
    if (t == Type::bad || t == want_type) return x;
    std::string msg = fmt::format("{} must be {}, found {}", what, type_name(want_type), type_name(t));
    if (want_type == Type::boolean && t == Type::integer) msg += " (write a comparison, for example `k % 2 == 1`)";
    diags_.error("E012", ast::start_loc(e), std::move(msg));
    return bad(e.loc());
}

std::uint32_t Resolver::node(const ast::Expr& e, std::string_view what) {
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

std::uint32_t Resolver::proc(const ast::Expr& e, std::string_view what) {
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

std::uint32_t Resolver::expr(const ast::Expr& e) {
    return std::visit([&](const auto& n) { return expr_node(n); }, e.node);
}

std::uint32_t Resolver::expr_node(const ast::Ident& n) {
    const Var* v = lookup(n.name);
    if (!v) {
        unknown_name(n);
        return bad(n.loc);
    }
    if (v->type == Type::bad) return bad(n.loc);
    return add({Op::load, v->type, v->slot, 0, 0, n.loc});
}

std::uint32_t Resolver::expr_node(const ast::Tuple& n) {
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

std::uint32_t Resolver::expr_node(const ast::Unary& n) {
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

std::uint32_t Resolver::expr_node(const ast::Binary& n) {
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

std::uint32_t Resolver::expr_node(const ast::Call& n) {
    if (!n.set.empty()) return partial_set(n);
    if (n.range) return value_range(n);
    if (!n.over.empty()) return comprehension(n);
    return function_call(n);
}

bool Resolver::arity(const ast::Call& n, std::size_t lo, std::size_t hi, std::string_view shape) {
    if (n.args.size() >= lo && n.args.size() <= hi) return true;
    diags_.error("E014", n.loc, fmt::format("{}() takes {}, found {} argument{}", n.name, shape, n.args.size(), n.args.size() == 1 ? "" : "s"));
    return false;
}

std::uint32_t Resolver::partial_set(const ast::Call& n) {
    const std::string& f = n.name;
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

std::uint32_t Resolver::value_range(const ast::Call& n) {
    const std::string& f = n.name;
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

std::uint32_t Resolver::function_call(const ast::Call& n) {
    const std::string& f = n.name;
    if (f == "bundle") {
        if (!arity(n, 2, std::numeric_limits<std::size_t>::max(), "at least 2 messages, or `e for i in a .. b [if c]`")) return bad(n.loc);
        std::uint32_t acc = want(n.args[0], Type::message, "argument 1 of bundle()");
        for (std::size_t i = 1; i < n.args.size(); ++i) {
            std::uint32_t x = want(n.args[i], Type::message, fmt::format("argument {} of bundle()", i + 1));
            acc = type(acc) == Type::bad || type(x) == Type::bad ? bad(n.loc) : add({Op::msg_join, Type::message, acc, x, 0, n.loc});
        }
        return acc;
    }
    if (f == "sum") {
        if (!arity(n, 1, std::numeric_limits<std::size_t>::max(), "at least 1 argument, or `e for i in a .. b`")) return bad(n.loc);
        std::vector<std::uint32_t> xs;
        for (std::size_t i = 0; i < n.args.size(); ++i) xs.push_back(want(n.args[i], Type::integer, fmt::format("argument {} of sum()", i + 1)));
        if (std::any_of(xs.begin(), xs.end(), [&](std::uint32_t x) { return type(x) == Type::bad; })) return bad(n.loc);
        std::uint32_t acc = xs[0];
        for (std::size_t i = 1; i < xs.size(); ++i) acc = add({Op::add, Type::integer, acc, xs[i], 0, n.loc});
        return acc;
    }
    if (f == "cap") {
        if (!arity(n, 1, 1, "1 argument (the branch level)")) return bad(n.loc);
        std::uint32_t l = want(n.args[0], Type::integer, "the level of cap()");
        if (!need_topology(n.loc, "cap()") || type(l) == Type::bad) return bad(n.loc);
        return add({Op::cap, Type::integer, l, 0, 0, n.loc});
    }
    if (f == "log2" || f == "abs") {
        if (!arity(n, 1, 1, "1 argument")) return bad(n.loc);
        std::uint32_t x = want(n.args[0], Type::integer, fmt::format("the argument of {}()", f));
        if (type(x) == Type::bad) return x;
        return add({f == "log2" ? Op::log2 : Op::abs, Type::integer, x, 0, 0, n.loc});
    }
    if (f == "min" || f == "max") {
        if (!arity(n, 2, std::numeric_limits<std::size_t>::max(), "at least 2 arguments")) return bad(n.loc);
        std::vector<std::uint32_t> xs;
        for (std::size_t i = 0; i < n.args.size(); ++i) xs.push_back(want(n.args[i], Type::integer, fmt::format("argument {} of {}()", i + 1, f)));
        if (std::any_of(xs.begin(), xs.end(), [&](std::uint32_t x) { return type(x) == Type::bad; })) return bad(n.loc);
        std::uint32_t acc = xs[0];
        for (std::size_t i = 1; i < xs.size(); ++i) acc = add({f == "min" ? Op::min : Op::max, Type::integer, acc, xs[i], 0, n.loc});
        return acc;
    }
    return constructor_call(n);
}

std::uint32_t Resolver::constructor_call(const ast::Call& n) {
    const std::string& f = n.name;
    if (f == "r") {
        if (!arity(n, 2, 2, "2 arguments (level, index)")) return bad(n.loc);
        std::uint32_t l = want(n.args[0], Type::integer, "the level of r()");
        std::uint32_t i = want(n.args[1], Type::integer, "the index of r()");
        if (!need_topology(n.loc, "a router") || type(l) == Type::bad || type(i) == Type::bad) return bad(n.loc);
        return add({Op::router, Type::node, l, i, 0, n.loc});
    }
    if (f == "m") {
        if (!arity(n, 2, 3, "2 arguments (source, destination), or 3 with a chunk (m(s, d, c))")) return bad(n.loc);
        std::uint32_t s = proc(n.args[0], "the source of m()");
        std::uint32_t d = proc(n.args[1], "the destination of m()");
        std::uint32_t c = n.args.size() == 3 ? want(n.args[2], Type::integer, "the chunk of m()") : none;
        if (type(s) == Type::bad || type(d) == Type::bad || (c != none && type(c) == Type::bad)) return bad(n.loc);
        return add({Op::msg_m, Type::message, s, d, c == none ? -1 : std::int64_t{c}, n.loc});  // imm: the chunk, -1 for none
    }
    if (f == "partial") {
        if (!arity(n, 1, 2, "the processor and optionally the chunk: partial(p) or partial(p, c)")) return bad(n.loc);
        std::uint32_t p = proc(n.args[0], "the processor of partial()");
        std::uint32_t c = n.args.size() == 2 ? want(n.args[1], Type::integer, "the chunk of partial()") : none;
        if (type(p) == Type::bad || (c != none && type(c) == Type::bad)) return bad(n.loc);
        return add({Op::msg_partial, Type::message, p, c, 0, n.loc});
    }
    if (f == "b" || f == "a") {
        if (!arity(n, 1, 2, fmt::format("1 argument (the source), or 2 with a chunk ({}(s, c))", f))) return bad(n.loc);
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

std::uint32_t Resolver::comprehension(const ast::Call& n) {
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

std::array<std::uint32_t, 4> Resolver::comprehension_parts(const ast::Comprehension& c, const ast::Expr& body, std::string_view what,
                                                 Type body_type, std::uint32_t* cond) {
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

std::pair<std::uint32_t, std::uint32_t> Resolver::block(const ast::Block& b) {
    std::size_t mark = vars_.size();
    std::vector<std::uint32_t> ids;
    ids.reserve(b.size());
    for (const ast::Stmt& s : b) ids.push_back(std::visit([&](const auto& n) { return stmt(n); }, s.node));
    vars_.resize(mark);
    auto first = static_cast<std::uint32_t>(ir_.children.size());
    ir_.children.insert(ir_.children.end(), ids.begin(), ids.end());
    return {first, static_cast<std::uint32_t>(ids.size())};
}

std::pair<std::uint32_t, std::uint32_t> Resolver::nested(const ast::Block& b) {
    ++depth_;
    auto r = block(b);
    --depth_;
    return r;
}

XStmt Resolver::make(SKind kind, SourceLoc loc) {
    XStmt x;
    x.kind = kind;
    x.loc = loc;
    return x;
}

std::uint32_t Resolver::add(XStmt s) {
    ir_.stmts.push_back(std::move(s));
    return static_cast<std::uint32_t>(ir_.stmts.size() - 1);
}


IR resolve(const ast::Program& program, std::span<const Define> defines, Diagnostics& diags, bool topology_required) {
    IR ir;
    Resolver(ir, diags).program(program, defines, topology_required);
    return ir;
}

}  // namespace collsched::compiler
