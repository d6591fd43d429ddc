#include "dsl/printer.hpp"

#include <fmt/format.h>

namespace collsched::dsl {

namespace {

using namespace ast;

// Binding strength, loosest first; matches the rule levels of dsl/parser_def.hpp.
enum Prec : int { p_lor = 1, p_land, p_cmp, p_bor, p_bxor, p_band, p_shift, p_add, p_mul, p_unary, p_pow, p_atom };

int prec(BinOp op) {
    switch (op) {
        case BinOp::lor: return p_lor;
        case BinOp::land: return p_land;
        case BinOp::eq:
        case BinOp::ne:
        case BinOp::lt:
        case BinOp::le:
        case BinOp::gt:
        case BinOp::ge: return p_cmp;
        case BinOp::bor: return p_bor;
        case BinOp::bxor: return p_bxor;
        case BinOp::band: return p_band;
        case BinOp::shl:
        case BinOp::shr: return p_shift;
        case BinOp::add:
        case BinOp::sub: return p_add;
        case BinOp::mul:
        case BinOp::div:
        case BinOp::mod: return p_mul;
        case BinOp::pow: return p_pow;
    }
    return p_atom;
}

class ExprPrinter {
public:
    explicit ExprPrinter(const NameSubst& subst) : subst_(subst) {}

    void print(const Expr& e, int min_prec) {
        int p = precedence(e);
        bool parens = p < min_prec;
        if (parens) out += '(';
        std::visit([&](const auto& n) { node(n); }, e.node);
        if (parens) out += ')';
    }

    std::string out;

private:
    int precedence(const Expr& e) const {
        if (auto* b = std::get_if<Binary>(&e.node)) return prec(b->op);
        if (std::holds_alternative<Unary>(e.node)) return p_unary;
        if (auto* i = std::get_if<IntLit>(&e.node)) return i->value < 0 ? p_unary : p_atom;
        if (auto* id = std::get_if<Ident>(&e.node); id && subst_) {
            auto s = subst_(*id);
            if (s && !s->empty() && s->front() == '-') return p_unary;
        }
        return p_atom;
    }

    void node(const IntLit& n) {
        if (n.value == INT64_MIN) out += "(-9223372036854775807 - 1)";
        else out += std::to_string(n.value);
    }
    void node(const Ident& n) {
        if (subst_)
            if (auto s = subst_(n)) {
                out += *s;
                return;
            }
        out += n.name;
    }
    void node(const Call& n) {
        out += n.name;
        if (n.range && n.args.size() == 2) {
            out += '(';
            print(n.args[0], 0);
            out += " .. ";
            print(n.args[1], 0);
            out += ')';
            return;
        }
        if (n.over.empty()) return list(n.args);
        out += '(';
        for (std::size_t i = 0; i < n.args.size(); ++i) {
            if (i) out += ", ";
            print(n.args[i], 0);
        }
        comprehension(n.over.front());
        out += ')';
    }
    void comprehension(const Comprehension& c) {
        out += fmt::format(" for {} in ", c.var.name);
        print(c.first, 0);
        out += " .. ";
        print(c.last, 0);
        if (c.cond) {
            out += " if ";
            print(*c.cond, 0);
        }
    }
    void node(const Tuple& n) { list(n.items); }
    void node(const Unary& n) {
        out += spelling(n.op);
        print(*n.operand, p_unary);
    }
    void node(const Binary& n) {
        int p = prec(n.op);
        int lhs = p, rhs = p + 1;
        if (p == p_cmp) lhs = p + 1;
        if (n.op == BinOp::pow) {
            lhs = p_atom;
            rhs = p_unary;
        }
        print(*n.lhs, lhs);
        out += ' ';
        out += spelling(n.op);
        out += ' ';
        print(*n.rhs, rhs);
    }
    void list(const std::vector<Expr>& items) {
        out += '(';
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (i) out += ", ";
            print(items[i], 0);
        }
        out += ')';
    }

    const NameSubst& subst_;
};

/// `[a, b, c]` or `[e for i in a .. b]`.
std::string print_list(const ListLit& l) {
    std::string out = "[";
    for (std::size_t j = 0; j < l.items.size(); ++j) out += (j ? ", " : "") + dsl::print(l.items[j]);
    for (const Comprehension& c : l.over) {
        out += fmt::format(" for {} in {} .. {}", c.var.name, dsl::print(c.first), dsl::print(c.last));
        if (c.cond) out += " if " + dsl::print(*c.cond);
    }
    return out + "]";
}

class ProgramPrinter {
public:
    std::string out;

    void block(const Block& b, int depth) {
        for (const Stmt& s : b) std::visit([&](const auto& n) { stmt(n, depth); }, s.node);
    }

private:
    void indent(int depth) { out.append(static_cast<std::size_t>(depth) * 2, ' '); }
    std::string expr(const Expr& e) { return dsl::print(e); }

    void braces(const Block& b, int depth) {
        out += " {\n";
        block(b, depth + 1);
        indent(depth);
        out += "}";
    }

    void stmt(const Param& s, int depth) {
        indent(depth);
        out += fmt::format("param {} = {}\n", s.name.name, expr(s.value));
    }
    void stmt(const Let& s, int depth) {
        indent(depth);
        out += fmt::format("let {} = {}\n", s.name.name, expr(s.value));
    }
    void stmt(const TopologyDecl& s, int depth) {
        indent(depth);
        out += "topology ";
        if (auto* lit = std::get_if<StringLit>(&s.spec)) {
            out += quote(lit->value);
        } else {
            const TopoCall& c = std::get<TopoCall>(s.spec);
            out += c.family + "(";
            for (std::size_t i = 0; i < c.args.size(); ++i) {
                const TopoArg& a = c.args[i];
                if (i) out += ", ";
                if (!a.key.empty()) out += a.key + " = ";
                if (auto* e = std::get_if<Expr>(&a.value)) {
                    out += expr(*e);
                } else if (auto* l = std::get_if<ListLit>(&a.value)) {
                    out += print_list(*l);
                } else {
                    out += quote(std::get<StringLit>(a.value).value);
                }
            }
            out += ")";
        }
        out += "\n";
    }
    void stmt(const ModelDecl& s, int depth) {
        indent(depth);
        out += "model " + s.timing.name;
        if (!s.args.empty()) {
            out += "(";
            for (std::size_t i = 0; i < s.args.size(); ++i) {
                const ModelArg& a = s.args[i];
                if (i) out += ", ";
                out += a.key.name + " = ";
                if (a.value.expr) out += fmt::format("({})", expr(*a.value.expr));
                else out += a.value.word;
            }
            out += ")";
        }
        out += "\n";
    }
    void stmt(const CollectiveDecl& s, int depth) {
        indent(depth);
        out += "collective " + s.name.name;
        if (!s.args.empty()) {
            out += "(";
            for (std::size_t i = 0; i < s.args.size(); ++i) {
                if (i) out += ", ";
                if (auto* e = std::get_if<Expr>(&s.args[i])) {
                    out += expr(*e);
                } else {
                    const SetLit& set = std::get<SetLit>(s.args[i]);
                    out += "{";
                    for (std::size_t j = 0; j < set.items.size(); ++j) {
                        if (j) out += ", ";
                        out += expr(set.items[j].first);
                        if (set.items[j].last) out += " .. " + expr(*set.items[j].last);
                    }
                    out += "}";
                }
            }
            out += ")";
        }
        if (s.chunks) out += " chunks " + expr(*s.chunks);
        out += "\n";
    }
    void stmt(const For& s, int depth) {
        indent(depth);
        out += fmt::format("for {} in {} .. {}", s.var.name, expr(s.first), expr(s.last));
        braces(s.body, depth);
        out += "\n";
    }
    void stmt(const If& s, int depth) {
        indent(depth);
        if_chain(s, depth);
        out += "\n";
    }
    void if_chain(const If& s, int depth) {
        out += "if " + expr(s.cond);
        braces(s.then_body, depth);
        if (s.else_body.empty()) return;
        out += " else ";
        if (s.else_body.size() == 1)
            if (auto* elif = std::get_if<If>(&s.else_body.front().node)) {
                if_chain(*elif, depth);
                return;
            }
        out.pop_back();
        braces(s.else_body, depth);
    }
    void stmt(const StepBlock& s, int depth) {
        indent(depth);
        out += "step " + expr(s.step);
        if (s.rounds) out += " rounds " + expr(*s.rounds);
        braces(s.body, depth);
        out += "\n";
    }
    void stmt(const Send& s, int depth) {
        indent(depth);
        out += fmt::format("send {} -> {}", expr(s.src), expr(s.dst));
        if (s.msg) out += " msg " + expr(*s.msg);
        out += "\n";
    }
    void stmt(const Hop& s, int depth) {
        indent(depth);
        out += fmt::format("hop {} -> {} msg {}\n", expr(s.from), expr(s.to), expr(s.msg));
    }
    void stmt(const Require& s, int depth) {
        indent(depth);
        out += fmt::format("require {} at {}\n", expr(s.msg), expr(s.at));
    }
    void stmt(const Assert& s, int depth) {
        indent(depth);
        out += fmt::format("assert {}, {}\n", expr(s.cond), quote(s.message.value));
    }
    void stmt(const Claim& s, int depth) {
        indent(depth);
        const auto* l = std::get_if<ListLit>(&s.value);
        out += fmt::format("claim {} {} {}\n", s.name.name, s.at_most ? "<=" : "=", l ? print_list(*l) : expr(std::get<Expr>(s.value)));
    }
    void stmt(const Bound& s, int depth) {
        indent(depth);
        out += fmt::format("bound {} = {}\n", s.kind.name, expr(s.value));
    }
    void stmt(const Cite& s, int depth) {
        indent(depth);
        out += fmt::format("cite {}\n", quote(s.text.value));
    }
};

}  // namespace

std::string_view spelling(BinOp op) {
    switch (op) {
        case BinOp::lor: return "||";
        case BinOp::land: return "&&";
        case BinOp::eq: return "==";
        case BinOp::ne: return "!=";
        case BinOp::lt: return "<";
        case BinOp::le: return "<=";
        case BinOp::gt: return ">";
        case BinOp::ge: return ">=";
        case BinOp::bor: return "|";
        case BinOp::bxor: return "^";
        case BinOp::band: return "&";
        case BinOp::shl: return "<<";
        case BinOp::shr: return ">>";
        case BinOp::add: return "+";
        case BinOp::sub: return "-";
        case BinOp::mul: return "*";
        case BinOp::div: return "/";
        case BinOp::mod: return "%";
        case BinOp::pow: return "**";
    }
    return "?";
}

std::string_view spelling(UnOp op) {
    switch (op) {
        case UnOp::neg: return "-";
        case UnOp::bnot: return "~";
        case UnOp::lnot: return "!";
    }
    return "?";
}

std::string quote(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    out += '"';
    return out;
}

std::string print(const Expr& e, const NameSubst& subst) {
    ExprPrinter p(subst);
    p.print(e, 0);
    return std::move(p.out);
}

std::string print(const Program& prog) {
    ProgramPrinter p;
    p.block(prog.statements, 0);
    return std::move(p.out);
}

}  // namespace collsched::dsl
