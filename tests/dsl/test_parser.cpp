// The parser and the AST printer: precedence, associativity, locations, syntax errors and
// recovery.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "dsl/parser.hpp"
#include "dsl/printer.hpp"

using namespace collsched;
using namespace collsched::dsl;

namespace {

/// Fully parenthesized, to make the tree shape visible.
std::string shape(const ast::Expr& e) {
    return std::visit(
        [](const auto& n) -> std::string {
            using T = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<T, ast::IntLit>) return std::to_string(n.value);
            else if constexpr (std::is_same_v<T, ast::Ident>) return n.name;
            else if constexpr (std::is_same_v<T, ast::Unary>) return fmt::format("({}{})", spelling(n.op), shape(*n.operand));
            else if constexpr (std::is_same_v<T, ast::Binary>)
                return fmt::format("({} {} {})", shape(*n.lhs), spelling(n.op), shape(*n.rhs));
            else {
                std::string s;
                const std::vector<ast::Expr>* items;
                if constexpr (std::is_same_v<T, ast::Call>) {
                    s = n.name;
                    items = &n.args;
                } else {
                    items = &n.items;
                }
                s += "(";
                for (std::size_t i = 0; i < items->size(); ++i) s += (i ? ", " : "") + shape((*items)[i]);
                return s + ")";
            }
        },
        e.node);
}

std::optional<ast::Program> parse_text(const std::string& text, Diagnostics& d) {
    d = Diagnostics("t.sched", text);
    return parse(text, "t.sched", d);
}

/// The value expression of `let x = EXPR`, shaped.
std::string expr_shape(const std::string& expr) {
    Diagnostics d;
    auto p = parse_text("let x = " + expr + "\n", d);
    REQUIRE_MESSAGE(p, d.render());
    return shape(std::get<ast::Let>(p->statements.at(0).node).value);
}

std::string errors(const std::string& text) {
    Diagnostics d;
    auto p = parse_text(text, d);
    CHECK_FALSE(p);
    return d.render();
}

}  // namespace

TEST_CASE("precedence and associativity") {
    CHECK(expr_shape("1 + 2 * 3") == "(1 + (2 * 3))");
    CHECK(expr_shape("1 - 2 - 3") == "((1 - 2) - 3)");
    CHECK(expr_shape("2 ** 3 ** 2") == "(2 ** (3 ** 2))");
    CHECK(expr_shape("-2 ** 2") == "(-(2 ** 2))");
    CHECK(expr_shape("2 ** -1") == "(2 ** (-1))");
    CHECK(expr_shape("k ^ 2 ** (h - 1) ^ l") == "((k ^ (2 ** (h - 1))) ^ l)");
    CHECK(expr_shape("a | b ^ c & d") == "(a | (b ^ (c & d)))");
    CHECK(expr_shape("a & 1 == 0") == "((a & 1) == 0)");
    CHECK(expr_shape("1 << 2 + 3") == "(1 << (2 + 3))");
    CHECK(expr_shape("a < b && c != d || !e") == "(((a < b) && (c != d)) || (!e))");
    CHECK(expr_shape("x % n * 2 / 3") == "(((x % n) * 2) / 3)");
    CHECK(expr_shape("m(k, k ^ 1)") == "m(k, (k ^ 1))");
    CHECK(expr_shape("(x + 1, y)") == "((x + 1), y)");
    CHECK(expr_shape("((x))") == "x");
    CHECK(expr_shape("~-x") == "(~(-x))");
    CHECK(expr_shape("0x1f + 10") == "(31 + 10)");
}

TEST_CASE("the printer adds only the parentheses the grammar needs, and reparses to the same tree") {
    for (const char* e : {"(1 + 2) * 3", "1 - (2 - 3)", "(2 ** 3) ** 2", "(-2) ** 2", "-(2 ** 2)", "(a < b) == (c < d)",
                          "!(a == b) && (c || d)", "(a | b) & c", "min(a, b, c) + r(1, 0 + 1)", "(1, 2 * x)", "a ^ (b | c)"}) {
        CAPTURE(e);
        Diagnostics d;
        auto p = parse_text(std::string("let x = ") + e + "\n", d);
        REQUIRE(p);
        const ast::Expr& v = std::get<ast::Let>(p->statements[0].node).value;
        std::string printed = print(v);
        CHECK(expr_shape(printed) == shape(v));
    }
    CHECK(expr_shape("(a < b) == (c < d)") == "((a < b) == (c < d))");
    Diagnostics d;
    auto p = parse_text("let x = (1 + 2) * 3 - (4 - 5)\n", d);
    REQUIRE(p);
    CHECK(print(*p) == "let x = (1 + 2) * 3 - (4 - 5)\n");
}

TEST_CASE("statements print back as written, without comments") {
    const std::string text =
        "param n = 8  # leaves\n"
        "topology bft(n, caps = [1, 2, 2])\n"
        "model hop(queues = none, policy = cut-through, tc = 0.5, ts = (n / 2))\n"
        "collective multicast(0, {1, 3 .. 5})\n"
        "let L = log2(n)\n"
        "assert n >= 2 && n % 2 == 0, \"n must be even, \\\"at least\\\" 2\"\n"
        "for i in 0 .. L - 1 {\n"
        "  if i == 0 {\n"
        "    step i + 1 {\n"
        "      send 0 -> 1\n"
        "      hop 0 -> r(1, 0) msg b(0)\n"
        "    }\n"
        "  } else if i == 1 {\n"
        "    require b(0) at 3\n"
        "  } else {\n"
        "    step 9 {\n"
        "      assert i < L, \"i < L\"\n"
        "    }\n"
        "  }\n"
        "}\n";
    Diagnostics d;
    auto p = parse_text(text, d);
    REQUIRE_MESSAGE(p, d.render());
    std::string expected = text;
    expected.replace(expected.find("  # leaves"), 10, "");
    CHECK(print(*p) == expected);
}

TEST_CASE("locations point at names, operators and calls") {
    Diagnostics d;
    auto p = parse_text("topology ring(4)\n\n  let  x =\n    a + f(b)\n", d);
    REQUIRE(p);
    const auto& let = std::get<ast::Let>(p->statements[1].node);
    CHECK(let.loc == SourceLoc{3, 3});
    CHECK(let.name.loc == SourceLoc{3, 8});
    const auto& sum = std::get<ast::Binary>(let.value.node);
    CHECK(sum.loc == SourceLoc{4, 7});
    CHECK(sum.lhs->loc() == SourceLoc{4, 5});
    CHECK(sum.rhs->loc() == SourceLoc{4, 9});
    CHECK(std::get<ast::TopologyDecl>(p->statements[0].node).loc == SourceLoc{1, 1});
}

TEST_CASE("keywords are reserved, names may contain them") {
    CHECK(is_keyword("step"));
    CHECK_FALSE(is_keyword("steps"));
    Diagnostics d;
    CHECK(parse_text("let steps = 1\nlet in_ = 2\nlet msg2 = 3\nlet a = 1\nlet b = a\n", d));
    CHECK(errors("let for = 1\n").find("expected a name, found 'for'") != std::string::npos);
}

TEST_CASE("syntax errors: the column, what was expected, what was found") {
    CHECK(errors("step 1 { send 0 => 1 }\n") == "t.sched:1:17: error[E001]: expected '->', found '='\n"
                                                  "  step 1 { send 0 => 1 }\n"
                                                  "                  ^\n");
    CHECK(errors("for i in 0 .. { }\n").find("1:15: error[E001]: expected an expression, found '{'") != std::string::npos);
    CHECK(errors("topology ebft(8\n").find("2:1: error[E001]: expected ')', found end of file") != std::string::npos);
    CHECK(errors("let x = 1 +\n").find("expected an expression, found end of file") != std::string::npos);
    CHECK(errors("model hop(ports single)\n").find("expected '=', found 'single'") != std::string::npos);
    CHECK(errors("\tlet x = $\n").find("1:10: error[E001]: expected an expression, found '$'") != std::string::npos);
}

TEST_CASE("recovery: one run reports the errors of several statements") {
    std::string r = errors("step 1 {\n  send 0 ->\n  send 1 2\n}\nlet = 3\nlet ok = 1\nfoo bar\n");
    CHECK(r.find("3:3: error[E001]: expected an expression, found 'send'") != std::string::npos);
    CHECK(r.find("3:10: error[E001]: expected '->', found '2'") != std::string::npos);
    CHECK(r.find("5:5: error[E001]: expected a name, found '='") != std::string::npos);
    CHECK(r.find("7:1: error[E002]") != std::string::npos);
    std::string many;
    for (int i = 0; i < 30; ++i) many += "let = 1\n";
    std::string capped = errors(many);
    CHECK(capped.find("note: stopping after 20 syntax errors") != std::string::npos);
}

TEST_CASE("assert: a condition, a comma and a message string") {
    Diagnostics d;
    auto p = parse_text("param n = 8\n  assert n >= 2 && n % 2 == 0, \"n must be even, \\\"at least\\\" 2\"\n", d);
    REQUIRE_MESSAGE(p, d.render());
    const auto& a = std::get<ast::Assert>(p->statements.at(1).node);
    CHECK(a.loc == SourceLoc{2, 3});
    CHECK(a.message.loc == SourceLoc{2, 32});
    CHECK(a.message.value == "n must be even, \"at least\" 2");
    CHECK(shape(a.cond) == "((n >= 2) && ((n % 2) == 0))");
    CHECK(is_keyword("assert"));
    CHECK(errors("assert n > 0\n").find("2:1: error[E001]: expected ',', found end of file") != std::string::npos);
    CHECK(errors("assert n > 0 \"msg\"\n").find("1:14: error[E001]: expected ',', found a string") != std::string::npos);
    CHECK(errors("assert n > 0, n\n").find("1:15: error[E001]: expected a string (the message), found 'n'") != std::string::npos);
    CHECK(errors("let assert = 1\n").find("expected a name, found 'assert'") != std::string::npos);
    CHECK(errors("asert n > 0, \"m\"\n").find("(did you mean 'assert'?)") != std::string::npos);
}
