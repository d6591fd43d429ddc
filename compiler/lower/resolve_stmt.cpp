// The resolver's statements and header declarations (compiler/lower/resolve_impl.hpp).
#include "compiler/lower/resolve_impl.hpp"

#include <algorithm>
#include <limits>
#include <tuple>
#include <fmt/format.h>

#include "compiler/topology/names.hpp"
#include "dsl/printer.hpp"
#include "support/edit_distance.hpp"

namespace collsched::compiler {

void Resolver::schedule_statement() {
    if (depth_ == 0) started_ = true;
}

void Resolver::declaration(const void* decl, SourceLoc loc, std::string_view what, const void*& seen, SourceLoc& seen_loc) {
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

std::uint32_t Resolver::stmt(const ast::Param& s) {
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

std::uint32_t Resolver::stmt(const ast::Let& s) {
    std::uint32_t v = expr(s.value);
    XStmt x = make(SKind::let, s.loc);
    x.slot = declare(s.name, type(v));
    x.e0 = v;
    x.name = s.name.name;
    return add(std::move(x));
}

std::uint32_t Resolver::stmt(const ast::For& s) {
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

std::uint32_t Resolver::stmt(const ast::If& s) {
    schedule_statement();
    XStmt x = make(SKind::if_, s.loc);
    x.e0 = want(s.cond, Type::boolean, "the condition of 'if'");
    std::tie(x.body, x.body_n) = nested(s.then_body);
    std::tie(x.orelse, x.orelse_n) = nested(s.else_body);
    return add(std::move(x));
}

std::uint32_t Resolver::stmt(const ast::StepBlock& s) {
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

std::uint32_t Resolver::stmt(const ast::Send& s) {
    schedule_statement();
    if (!in_step_) diags_.error("E016", s.loc, "'send' must be inside a step: step s { send a -> b }");
    XStmt x = make(SKind::send, s.loc);
    x.e0 = node(s.src, "the source of a send");
    x.e1 = node(s.dst, "the destination of a send");
    if (s.msg) x.e2 = want(*s.msg, Type::message, "the message of a send");
    return add(std::move(x));
}

std::uint32_t Resolver::stmt(const ast::Hop& s) {
    schedule_statement();
    if (!in_step_) diags_.error("E016", s.loc, "'hop' must be inside a step: step s { hop u -> v msg m }");
    XStmt x = make(SKind::hop, s.loc);
    x.e0 = node(s.from, "the start of a hop");
    x.e1 = node(s.to, "the end of a hop");
    x.e2 = want(s.msg, Type::message, "the message of a hop");
    return add(std::move(x));
}

std::uint32_t Resolver::stmt(const ast::Require& s) {
    schedule_statement();
    XStmt x = make(SKind::require, s.loc);
    x.e0 = want(s.msg, Type::message, "the message of a require");
    x.e1 = node(s.at, "the place of a require");
    return add(std::move(x));
}

std::uint32_t Resolver::stmt(const ast::Assert& s) {
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

void Resolver::metadata(const std::string& key, SourceLoc loc, std::string_view what) {
    if (depth_ > 0) diags_.error("E017", loc, fmt::format("'{}' must be at the top level of the schedule, not inside a block", what));
    auto [it, fresh] = metadata_.emplace(key, loc);
    if (!fresh) {
        diags_.error("E018", loc, fmt::format("the schedule states '{}' twice", what));
        diags_.note(it->second, fmt::format("the first '{}' is here", what));
    }
}

std::uint32_t Resolver::stmt(const ast::Claim& s) {
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

std::uint32_t Resolver::stmt(const ast::Bound& s) {
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

std::uint32_t Resolver::stmt(const ast::Cite& s) {
    XStmt x = make(SKind::claim, s.loc);
    x.name = "cite";
    x.decl = &s;  // the text
    metadata(x.name, s.loc, "cite");
    return add(std::move(x));
}

void Resolver::topo_args(std::string_view family, const std::vector<ast::TopoArg>& args) {
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

void Resolver::product_factor(const ast::Call& c) {
    for (const ast::Expr& e : c.args) {
        const auto* call = std::get_if<ast::Call>(&e.node);
        if (c.name == "product" && call) product_factor(*call);
        else header_int(e, fmt::format("the argument of {}()", c.name));
    }
}

void Resolver::w_expr(const ast::Expr& e) {
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

void Resolver::topo_string(const ast::StringLit& str) {
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

std::uint32_t Resolver::stmt(const ast::TopologyDecl& s) {
    declaration(&s, s.loc, "topology", topology_, topology_loc_);
    if (const auto* call = std::get_if<ast::TopoCall>(&s.spec)) topo_args(call->family, call->args);
    if (const auto* str = std::get_if<ast::StringLit>(&s.spec)) topo_string(*str);
    XStmt x = make(SKind::topology, s.loc);
    x.decl = &s;
    return add(std::move(x));
}

std::uint32_t Resolver::stmt(const ast::ModelDecl& s) {
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

std::uint32_t Resolver::stmt(const ast::CollectiveDecl& s) {
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

}  // namespace collsched::compiler
