/** \file
 * The X3 grammar of the schedule language (the rexpr_full / calc9 file set: rules are
 * `<name>` / `<name>_def` / `<name>_class`). Included only by dsl/parser.cpp, so X3 is
 * instantiated once.
 *
 * Layout: the lexical parsers written by hand (dsl/parser_lexer.hpp: keywords, names, integers,
 * strings, operator tokens, model words, and the parse state they record locations and errors
 * in); here the rule bases, the semantic actions, then the expression rules, one per precedence level, folding left-associative chains with semantic
 * actions; then statements, which use `>` after their keyword so a failure says what was
 * expected. `statement_class::on_error` records the error and resynchronizes at the next line
 * (braces balanced), which is how one run reports several syntax errors.
 */
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <boost/fusion/include/at_c.hpp>
#include <boost/spirit/home/x3.hpp>
#include <fmt/format.h>

#include "dsl/ast.hpp"
#include "dsl/diagnostics.hpp"
#include "dsl/parser_lexer.hpp"

namespace collsched::dsl::parser {

// ---------------------------------------------------------------------------------------------
// Rule bases: location annotation and error recovery

/// Sets `loc` of every attribute that has one to the first token the rule matched (X3's
/// annotate_on_success, without X3 types in the AST). A rule whose right side has semantic
/// actions gets no attribute here (X3 passes `unused`); those actions take their location
/// from the `here` parser instead.
struct annotate {
    template <class Attr, class Ctx>
    void on_success(const It& first, const It&, Attr& attr, const Ctx& ctx) const {
        if constexpr (requires { attr.loc = SourceLoc{}; }) attr.loc = state(ctx).loc_of(first);
    }
};

/// Statements: record the expectation failure, resume at the next line (see ParseState::sync).
struct recover : annotate {
    template <class Exception, class Ctx>
    x3::error_handler_result on_error(It& first, const It& last, const Exception& x, const Ctx& ctx) const {
        ParseState& st = state(ctx);
        st.expected(x.where(), x.which());
        if (st.gave_up()) {
            first = last;
            return x3::error_handler_result::fail;
        }
        It next = st.resume_after(first, x.where());
        first = next > first ? next : first + (first != last);
        return x3::error_handler_result::retry;
    }
};

// ---------------------------------------------------------------------------------------------
// Tokens

inline constexpr Keyword kw_param{"param"}, kw_topology{"topology"}, kw_model{"model"}, kw_collective{"collective"},
    kw_let{"let"}, kw_for{"for"}, kw_in{"in"}, kw_if{"if"}, kw_else{"else"}, kw_step{"step"}, kw_send{"send"},
    kw_hop{"hop"}, kw_require{"require"}, kw_msg{"msg"}, kw_at{"at"}, kw_claim{"claim"}, kw_bound{"bound"}, kw_cite{"cite"},
    kw_assert{"assert"}, kw_chunks{"chunks"}, kw_rounds{"rounds"};

inline const NameParser<ast::Ident> name{};
inline const NameParser<std::string> name_str{};
inline const NameParser<ast::Ident, true> timing_word{};
inline const IntParser int_lit{};
inline const StringParser string_lit{};
inline const ModelWordParser model_word{};
inline const UnOpParser op_unary{};
inline const JunkParser junk{};
inline const HereParser here{};

using ast::BinOp;
inline const OpParser<1> op_lor{std::array<OpSpelling, 1>{{{"||", BinOp::lor, ""}}}};
inline const OpParser<1> op_land{std::array<OpSpelling, 1>{{{"&&", BinOp::land, ""}}}};
inline const OpParser<6> op_cmp{std::array<OpSpelling, 6>{{{"==", BinOp::eq, ""},
                                 {"!=", BinOp::ne, ""},
                                 {"<=", BinOp::le, ""},
                                 {">=", BinOp::ge, ""},
                                 {"<", BinOp::lt, "<"},
                                 {">", BinOp::gt, ">"}}}};
inline const OpParser<1> op_bor{std::array<OpSpelling, 1>{{{"|", BinOp::bor, "|"}}}};
inline const OpParser<1> op_bxor{std::array<OpSpelling, 1>{{{"^", BinOp::bxor, ""}}}};
inline const OpParser<1> op_band{std::array<OpSpelling, 1>{{{"&", BinOp::band, "&"}}}};
inline const OpParser<2> op_shift{std::array<OpSpelling, 2>{{{"<<", BinOp::shl, ""}, {">>", BinOp::shr, ""}}}};
inline const OpParser<2> op_add{std::array<OpSpelling, 2>{{{"+", BinOp::add, ""}, {"-", BinOp::sub, ">"}}}};
inline const OpParser<3> op_mul{std::array<OpSpelling, 3>{{{"*", BinOp::mul, "*"}, {"/", BinOp::div, ""}, {"%", BinOp::mod, ""}}}};
inline const OpParser<1> op_pow{std::array<OpSpelling, 1>{{{"**", BinOp::pow, ""}}}};

// ---------------------------------------------------------------------------------------------
// Semantic actions

inline const auto set_val = [](auto& ctx) { x3::_val(ctx) = std::move(x3::_attr(ctx)); };

/// `lhs op rhs`, left-associative: the value so far becomes the left operand.
inline const auto fold = [](auto& ctx) {
    auto& a = x3::_attr(ctx);
    ast::OpTok& op = fusion::at_c<0>(a);
    ast::Binary b{op.loc, op.op, ast::Box<ast::Expr>(std::move(x3::_val(ctx))), ast::Box<ast::Expr>(std::move(fusion::at_c<1>(a)))};
    x3::_val(ctx) = ast::Expr(std::move(b));
};

inline const auto make_unary = [](auto& ctx) {
    auto& a = x3::_attr(ctx);
    UnOpTok& op = fusion::at_c<0>(a);
    x3::_val(ctx) = ast::Expr(ast::Unary{op.loc, op.op, ast::Box<ast::Expr>(std::move(fusion::at_c<1>(a)))});
};

/// `(e)` is e; `(a, b, ...)` is a Tuple located at its '('.
inline const auto make_paren = [](auto& ctx) {
    SourceLoc loc = fusion::at_c<0>(x3::_attr(ctx));
    std::vector<ast::Expr>& items = fusion::at_c<1>(x3::_attr(ctx));
    if (items.size() == 1) x3::_val(ctx) = std::move(items.front());
    else x3::_val(ctx) = ast::Expr(ast::Tuple{loc, std::move(items)});
};

/// The items of `-(item % ',')`: X3 gives an optional vector.
template <class T>
std::vector<T> take_items(boost::optional<std::vector<T>>& items) {
    return items ? std::move(*items) : std::vector<T>{};
}
template <class T>
std::vector<T> take_items(std::vector<T>& items) {
    return std::move(items);
}

/// The comprehension of a call or list: X3 gives an optional.
inline std::vector<ast::Comprehension> take_over(boost::optional<ast::Comprehension>& c) {
    std::vector<ast::Comprehension> v;
    if (c) v.push_back(std::move(*c));
    return v;
}
inline std::vector<ast::Comprehension> take_over(std::optional<ast::Comprehension>& c) {
    std::vector<ast::Comprehension> v;
    if (c) v.push_back(std::move(*c));
    return v;
}

/// `for i in a .. b [if c]` (X3 gives the condition as a boost::optional).
inline const auto make_comprehension = [](auto& ctx) {
    auto& a = x3::_attr(ctx);
    ast::Comprehension& c = x3::_val(ctx);
    c.var = std::move(fusion::at_c<0>(a));
    c.first = std::move(fusion::at_c<1>(a));
    c.last = std::move(fusion::at_c<2>(a));
    if (auto& cond = fusion::at_c<3>(a)) c.cond = std::move(*cond);
    else c.cond.reset();
};

inline const auto make_list = [](auto& ctx) {
    auto& a = x3::_attr(ctx);
    x3::_val(ctx) = ast::ListLit{fusion::at_c<0>(a), take_items(fusion::at_c<1>(a)), take_over(fusion::at_c<2>(a))};
};

inline const auto make_call = [](auto& ctx) {
    auto& a = x3::_attr(ctx);
    ast::Call c{fusion::at_c<0>(a), std::move(fusion::at_c<1>(a)), take_items(fusion::at_c<2>(a)), take_over(fusion::at_c<4>(a)), false, {}};
    if (auto& last = fusion::at_c<3>(a)) {  // `f(x .. y)`
        c.args.push_back(std::move(*last));
        c.range = true;
    }
    x3::_val(ctx) = std::move(c);
};

inline const auto make_set_call = [](auto& ctx) {
    auto& a = x3::_attr(ctx);
    ast::Call c{fusion::at_c<0>(a), std::move(fusion::at_c<1>(a)), {}, {}, false, {}};
    c.set.push_back(std::move(fusion::at_c<2>(a)));
    if (auto& chunk = fusion::at_c<3>(a)) c.args.push_back(std::move(*chunk));
    x3::_val(ctx) = std::move(c);
};

inline const auto set_cite = [](auto& ctx) { x3::_val(ctx).text = std::move(x3::_attr(ctx)); };

inline const auto make_set = [](auto& ctx) {
    x3::_val(ctx) = ast::SetLit{fusion::at_c<0>(x3::_attr(ctx)), take_items(fusion::at_c<1>(x3::_attr(ctx)))};
};

inline const auto push_stmt = [](auto& ctx) { x3::_val(ctx).push_back(ast::Stmt(std::move(x3::_attr(ctx)))); };

inline const auto set_spec = [](auto& ctx) { x3::_val(ctx).spec = std::move(x3::_attr(ctx)); };

inline const auto set_positional = [](auto& ctx) {
    x3::_val(ctx).key.clear();
    x3::_val(ctx).value = std::move(x3::_attr(ctx));
};

inline const auto model_expr = [](auto& ctx) {
    x3::_val(ctx).loc = fusion::at_c<0>(x3::_attr(ctx));
    x3::_val(ctx).word.clear();
    x3::_val(ctx).expr = std::move(fusion::at_c<1>(x3::_attr(ctx)));
};
inline const auto model_text = [](auto& ctx) {
    x3::_val(ctx).loc = fusion::at_c<0>(x3::_attr(ctx));
    x3::_val(ctx).word = std::move(fusion::at_c<1>(x3::_attr(ctx)));
    x3::_val(ctx).expr.reset();
};

// ---------------------------------------------------------------------------------------------
// Rules

using TopoValue = std::variant<ast::Expr, ast::ListLit, ast::StringLit>;
using CollArg = std::variant<ast::Expr, ast::SetLit>;

struct expr_class : annotate {};
struct lor_class : annotate {};
struct land_class : annotate {};
struct cmp_class : annotate {};
struct bor_class : annotate {};
struct bxor_class : annotate {};
struct band_class : annotate {};
struct shift_class : annotate {};
struct additive_class : annotate {};
struct mult_class : annotate {};
struct unary_class : annotate {};
struct power_class : annotate {};
struct primary_class : annotate {};
struct call_class : annotate {};
struct set_call_class : annotate {};
struct paren_class : annotate {};
struct statement_class : recover {};
struct stmts_class : annotate {};
struct block_class : annotate {};
struct close_class : annotate {};
struct param_class : annotate {};
struct let_class : annotate {};
struct for_class : annotate {};
struct if_class : annotate {};
struct else_class : annotate {};
struct else_if_class : annotate {};
struct step_class : annotate {};
struct send_class : annotate {};
struct hop_class : annotate {};
struct require_class : annotate {};
struct assert_class : annotate {};
struct assert_text_class : annotate {};
struct topology_class : annotate {};
struct topo_spec_class : annotate {};
struct topo_call_class : annotate {};
struct topo_arg_class : annotate {};
struct keyword_arg_class : annotate {};
struct positional_arg_class : annotate {};
struct topo_value_class : annotate {};
struct list_class : annotate {};
struct model_class : annotate {};
struct model_arg_class : annotate {};
struct model_value_class : annotate {};
struct collective_class : annotate {};
struct coll_arg_class : annotate {};
struct set_class : annotate {};
struct set_item_class : annotate {};
struct comprehension_class : annotate {};
struct claim_class : annotate {};
struct claim_rel_class : annotate {};
struct claim_value_class : annotate {};
struct bound_class : annotate {};
struct cite_class : annotate {};
struct cite_text_class : annotate {};

const x3::rule<expr_class, ast::Expr> expr = "an expression";
const x3::rule<lor_class, ast::Expr> lor = "an expression";
const x3::rule<land_class, ast::Expr> land = "an expression";
const x3::rule<cmp_class, ast::Expr> cmp = "an expression";
const x3::rule<bor_class, ast::Expr> bor = "an expression";
const x3::rule<bxor_class, ast::Expr> bxor = "an expression";
const x3::rule<band_class, ast::Expr> band = "an expression";
const x3::rule<shift_class, ast::Expr> shift = "an expression";
const x3::rule<additive_class, ast::Expr> additive = "an expression";
const x3::rule<mult_class, ast::Expr> mult = "an expression";
const x3::rule<unary_class, ast::Expr> unary = "an expression";
const x3::rule<power_class, ast::Expr> power = "an expression";
const x3::rule<primary_class, ast::Expr> primary = "an expression";
const x3::rule<call_class, ast::Call> call = "a call";
const x3::rule<set_call_class, ast::Call> set_call = "a partial";
const x3::rule<paren_class, ast::Expr> paren = "an expression";
const x3::rule<comprehension_class, ast::Comprehension> comprehension = "a comprehension";

const x3::rule<statement_class, ast::Stmt> statement = "a statement";
const x3::rule<stmts_class, ast::Block> stmts = "statements";
const x3::rule<block_class, ast::Block> block = "'{'";
const x3::rule<close_class> close_brace = "a statement or '}'";
const x3::rule<param_class, ast::Param> param = "a param";
const x3::rule<let_class, ast::Let> let = "a let";
const x3::rule<for_class, ast::For> for_ = "a for loop";
const x3::rule<if_class, ast::If> if_ = "an if";
const x3::rule<else_class, ast::Block> else_body = "'{' or 'if'";
const x3::rule<else_if_class, ast::Block> else_if = "'if'";
const x3::rule<step_class, ast::StepBlock> step = "a step";
const x3::rule<send_class, ast::Send> send = "a send";
const x3::rule<hop_class, ast::Hop> hop = "a hop";
const x3::rule<require_class, ast::Require> require = "a require";
const x3::rule<assert_class, ast::Assert> assert_ = "an assert";
const x3::rule<assert_text_class, ast::StringLit> assert_text = "a string (the message)";
const x3::rule<claim_class, ast::Claim> claim = "a claim";
const x3::rule<claim_rel_class, bool> claim_rel = "'=' or '<='";
const x3::rule<claim_value_class, std::variant<ast::Expr, ast::ListLit>> claim_value = "a value or a list";
const x3::rule<bound_class, ast::Bound> bound = "a bound";
const x3::rule<cite_class, ast::Cite> cite = "a cite";
const x3::rule<cite_text_class, ast::Cite> cite_text = "a string";
const x3::rule<topology_class, ast::TopologyDecl> topology = "a topology";
const x3::rule<topo_spec_class, ast::TopologyDecl> topo_spec = "a topology (a family such as ebft(8), or a spec string such as \"ebft:8\")";
const x3::rule<topo_call_class, ast::TopoCall> topo_call = "a topology family";
const x3::rule<topo_arg_class, ast::TopoArg> topo_arg = "an argument";
const x3::rule<keyword_arg_class, ast::TopoArg> keyword_arg = "an argument";
const x3::rule<positional_arg_class, ast::TopoArg> positional_arg = "an argument";
const x3::rule<topo_value_class, TopoValue> topo_value = "a value";
const x3::rule<list_class, ast::ListLit> list = "a list";
const x3::rule<model_class, ast::ModelDecl> model = "a model";
const x3::rule<model_arg_class, ast::ModelArg> model_arg = "key = value";
const x3::rule<model_value_class, ast::ModelValue> model_value = "a value";
const x3::rule<collective_class, ast::CollectiveDecl> collective = "a collective";
const x3::rule<coll_arg_class, CollArg> coll_arg = "an argument";
const x3::rule<set_class, ast::SetLit> set = "a set";
const x3::rule<set_item_class, ast::SetItem> set_item = "a member";

// Expressions, loosest binding first. Comparisons do not chain; `**` is right-associative and
// binds tighter than unary minus on its left (-2 ** 2 is -4).
const auto expr_def = lor;
const auto lor_def = land[set_val] >> *((op_lor > land)[fold]);
const auto land_def = cmp[set_val] >> *((op_land > cmp)[fold]);
const auto cmp_def = bor[set_val] >> -((op_cmp > bor)[fold]);
const auto bor_def = bxor[set_val] >> *((op_bor > bxor)[fold]);
const auto bxor_def = band[set_val] >> *((op_bxor > band)[fold]);
const auto band_def = shift[set_val] >> *((op_band > shift)[fold]);
const auto shift_def = additive[set_val] >> *((op_shift > additive)[fold]);
const auto additive_def = mult[set_val] >> *((op_add > mult)[fold]);
const auto mult_def = unary[set_val] >> *((op_mul > unary)[fold]);
const auto unary_def = (op_unary > unary)[make_unary] | power[set_val];
const auto power_def = primary[set_val] >> -((op_pow > unary)[fold]);
const auto primary_def = int_lit[set_val] | set_call[set_val] | call[set_val] | name[set_val] | paren[set_val];
const auto set_call_def = (here >> name_str >> '(' >> set >> -(',' > expr) > ')')[make_set_call];
const auto call_def = (here >> name_str >> '(' > -(expr % ',') > -(".." > expr) > -comprehension > ')')[make_call];
const auto paren_def = (here >> '(' > (expr % ',') > ')')[make_paren];
const auto comprehension_def = (kw_for > name > kw_in > expr > ".." > expr > -(kw_if > expr))[make_comprehension];

BOOST_SPIRIT_DEFINE(expr, lor, land, cmp, bor, bxor, band, shift, additive, mult, unary, power, primary, call, set_call, paren, comprehension)

// Statements.
const auto statement_def = param | topology | model | collective | let | for_ | if_ | step | send | hop | require | assert_ | claim | bound
                            | cite;
const auto stmts_def = *(statement[push_stmt] | x3::lit(';') | junk);
const auto block_def = '{' > stmts > close_brace;
const auto close_brace_def = x3::lit('}');
const auto param_def = kw_param > name > '=' > expr;
const auto let_def = kw_let > name > '=' > expr;
const auto for__def = kw_for > name > kw_in > expr > ".." > expr > block;
const auto if__def = kw_if > expr > block > -(kw_else > else_body);
const auto else_body_def = block | else_if;
const auto else_if_def = if_[push_stmt];
const auto step_def = kw_step > expr > -(kw_rounds > expr) > block;
const auto send_def = kw_send > expr > "->" > expr > -(kw_msg > expr);
const auto hop_def = kw_hop > expr > "->" > expr > kw_msg > expr;
const auto require_def = kw_require > expr > kw_at > expr;
const auto assert__def = kw_assert > expr > ',' > assert_text;
const auto assert_text_def = string_lit;
const auto claim_def = kw_claim > name > claim_rel > claim_value;
const auto claim_rel_def = (x3::lit("<=") >> x3::attr(true)) | (('=' >> !x3::lit('=')) >> x3::attr(false));
const auto claim_value_def = list | expr;
const auto bound_def = kw_bound > name > '=' > expr;
const auto cite_def = kw_cite > cite_text;
const auto cite_text_def = string_lit[set_cite];

BOOST_SPIRIT_DEFINE(statement, stmts, block, close_brace, param, let, for_, if_, else_body, else_if, step, send, hop, require, assert_,
                    assert_text, claim, claim_rel, claim_value, bound, cite, cite_text)

// Declarations.
const auto topology_def = kw_topology > topo_spec;
const auto topo_spec_def = string_lit[set_spec] | topo_call[set_spec];
const auto topo_call_def = name_str > '(' > -(topo_arg % ',') > ')';
const auto topo_arg_def = keyword_arg | positional_arg;
const auto keyword_arg_def = name_str >> ('=' >> !x3::lit('=')) > topo_value;
const auto positional_arg_def = topo_value[set_positional];
const auto topo_value_def = string_lit | list | expr;
const auto list_def = (here >> '[' > -(expr % ',') > -comprehension > ']')[make_list];
const auto model_def = kw_model > timing_word > -('(' > -(model_arg % ',') > ')');
const auto model_arg_def = name > '=' > model_value;
const auto model_value_def = (here >> '(' > expr > ')')[model_expr] | (here >> model_word)[model_text];
const auto collective_def = kw_collective > name > -('(' > -(coll_arg % ',') > ')') > -(kw_chunks > expr);
const auto coll_arg_def = set | expr;
const auto set_def = (here >> '{' > -(set_item % ',') > '}')[make_set];
const auto set_item_def = expr > -(".." > expr);

BOOST_SPIRIT_DEFINE(topology, topo_spec, topo_call, topo_arg, keyword_arg, positional_arg, topo_value, list, model, model_arg,
                    model_value, collective, coll_arg, set, set_item)

/// What the skipper skips: white space and `#` comments.
const auto skipper = x3::space | x3::lexeme['#' >> *(x3::char_ - x3::eol)];

}  // namespace collsched::dsl::parser
