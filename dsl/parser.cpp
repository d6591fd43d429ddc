// The single instantiation of the X3 grammar (dsl/parser_def.hpp) and the parse() entry point.
#include "dsl/parser.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "dsl/parser_def.hpp"

namespace collsched::dsl {

bool is_keyword(std::string_view word) { return parser::reserved(word); }

namespace {

/// Why a nesting bound, and how it is measured. The parser, the resolver, the evaluator, the
/// printer and the AST's destructor all recurse once per level of the tree, so input nested a few
/// thousand levels deep (`((((...))))`, `- - - - 1`, `1 + 1 + ... + 1` with 30,000 terms, long
/// else-if chains) would overflow the stack. Before parsing, one pass over the tokens bounds the
/// depth of the tree the parser would build: per open bracket or block, the operators and
/// `else`s since the last separator (`,` `;` `=` `->` `..` and reserved words end an expression)
/// plus the deepest bracket closed inside it. A chain of k operators makes a tree at most k deep,
/// so the sum of these along the open brackets bounds the depth from above. Beyond
/// `max_nesting_depth`, or with more than `max_open_brackets` brackets open, the program is
/// refused with E052 before the parser sees it.
constexpr int max_open_brackets = 128;
constexpr int max_nesting_depth = 1000;

bool check_nesting(std::string_view text, Diagnostics& diags) {
    struct Level {
        int done = 0;   // deepest expression already finished at this level
        int ops = 0;    // operators and `else`s since the last separator
        int inner = 0;  // deepest bracket closed since the last separator
    };
    std::vector<Level> levels(1);
    int path = 0;  // sum of ops + inner over the open levels, plus one per open bracket
    bool after_else = false;
    auto refuse = [&](std::size_t at, std::string message) {
        diags.error("E052", location_of(text, at), std::move(message));
        return false;
    };
    auto deep = [&](std::size_t at) {
        return refuse(at, fmt::format("the program nests more than {} levels deep here (operators in one expression, "
                                      "brackets, blocks and else-if chains count); split the expression with let",
                                      max_nesting_depth));
    };
    auto separator = [&] {
        Level& l = levels.back();
        l.done = std::max(l.done, l.ops + l.inner);
        path -= l.ops + l.inner;
        l.ops = l.inner = 0;
    };
    auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (std::size_t i = 0; i < text.size();) {
        char c = text[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            ++i;
            continue;
        }
        if (c == '#') {
            while (i < text.size() && text[i] != '\n') ++i;
            continue;
        }
        if (c == '"') {
            for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
                if (text[i] == '\\') ++i;
            ++i;
            continue;
        }
        if (is_word(c)) {
            std::size_t start = i;
            while (i < text.size() && is_word(text[i])) ++i;
            std::string_view word = text.substr(start, i - start);
            bool was_after_else = after_else;
            after_else = false;
            if (word == "else") {
                ++levels.back().ops;
                if (++path > max_nesting_depth) return deep(start);
                after_else = true;
            } else if (parser::reserved(word) && !(word == "if" && was_after_else)) {
                separator();
            }
            continue;
        }
        after_else = false;
        std::string_view two = text.substr(i, 2);
        if (c == '(' || c == '[' || c == '{') {
            if (static_cast<int>(levels.size()) > max_open_brackets)
                return refuse(i, fmt::format("more than {} brackets and blocks are open here; nest less deeply", max_open_brackets));
            levels.emplace_back();
            if (++path > max_nesting_depth) return deep(i);
            ++i;
        } else if (c == ')' || c == ']' || c == '}') {
            if (levels.size() > 1) {
                separator();
                int closed = levels.back().done + 1;
                levels.pop_back();
                path -= 1;
                Level& l = levels.back();
                if (closed > l.inner) {
                    path += closed - l.inner;
                    l.inner = closed;
                }
                if (path > max_nesting_depth) return deep(i);
            }
            ++i;
        } else if (c == ',' || c == ';' || two == "->" || two == "..") {
            separator();
            i += c == ',' || c == ';' ? 1 : 2;
        } else if (c == '=' && two != "==") {
            separator();
            ++i;
        } else if (std::string_view("+-*/%^&|<>!~=").find(c) != std::string_view::npos) {
            ++levels.back().ops;
            if (++path > max_nesting_depth) return deep(i);
            bool pair = two == "**" || two == "<<" || two == ">>" || two == "==" || two == "!=" || two == "<=" ||
                        two == ">=" || two == "&&" || two == "||";
            i += pair ? 2 : 1;
        } else {
            ++i;
        }
    }
    return true;
}

}  // namespace

std::optional<ast::Program> parse(std::string_view text, std::string_view file, Diagnostics& diags) {
    (void)file;  // messages carry locations; the file name is diags.file()
    if (!check_nesting(text, diags)) return std::nullopt;
    namespace x3 = boost::spirit::x3;
    parser::ParseState st(text, diags);
    ast::Program program;
    const auto grammar = x3::with<parser::state_tag>(st)[parser::stmts];
    parser::It it = st.begin();
    // The statement list stops at end of input or at a '}' that closes nothing; report such a
    // brace and go on after it.
    while (true) {
        x3::phrase_parse(it, st.end(), grammar, parser::skipper, program.statements);
        it = st.skip(it);
        if (it == st.end() || st.gave_up()) break;
        st.error("E002", it, fmt::format("found {} where a statement should start (no block is open)", st.describe(it)));
        ++it;
    }
    if (st.errors() != 0) return std::nullopt;
    return program;
}

}  // namespace collsched::dsl
