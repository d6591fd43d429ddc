/** \file
 * The lexical layer of the X3 grammar (dsl/parser_def.hpp): the parse state (positions to
 * locations, error recording, resynchronization) and the lexical parsers written by hand
 * (keywords, names, integers, strings, operator tokens, model words), which need the parse
 * state to record locations and errors. Included only by dsl/parser_def.hpp.
 */
#pragma once

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/fusion/include/at_c.hpp>
#include <boost/spirit/home/x3.hpp>
#include <fmt/format.h>

#include "dsl/ast.hpp"
#include "dsl/ast_adapted.hpp"
#include "dsl/diagnostics.hpp"
#include "dsl/parser.hpp"
#include "support/edit_distance.hpp"

// std::optional as an X3 optional attribute (X3 in Boost 1.74 knows only boost::optional).
namespace boost::spirit::x3::traits {
template <typename T>
struct is_optional<std::optional<T>> : mpl::true_ {};
template <typename T>
struct build_optional<std::optional<T>> {
    using type = std::optional<T>;
};
template <typename T>
struct optional_value<std::optional<T>> : mpl::identity<T> {};
}  // namespace boost::spirit::x3::traits

namespace collsched::dsl::parser {

namespace x3 = boost::spirit::x3;
namespace fusion = boost::fusion;
using It = const char*;

inline constexpr std::string_view keywords[] = {"param", "topology", "model", "collective", "let",   "for",
                                                "in",    "if",       "else",  "step",       "send",  "hop",
                                                "require", "msg",    "at",    "claim",      "bound", "cite",
                                                "assert"};
// `chunks` (after a collective) and `rounds` (after a step number) are matched where they may
// appear but are not reserved: schedules may still name a variable `rounds`.

inline bool reserved(std::string_view word) {
    return std::find(std::begin(keywords), std::end(keywords), word) != std::end(keywords);
}

using support::edit_distance;

inline bool word_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
inline bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// ---------------------------------------------------------------------------------------------
// Parse state: positions to locations, error recording, resynchronization.

struct state_tag;

class ParseState {
public:
    ParseState(std::string_view text, Diagnostics& diags) : begin_(text.data()), end_(text.data() + text.size()), diags_(diags) {
        line_starts_.push_back(0);
        for (std::size_t i = 0; i < text.size(); ++i)
            if (text[i] == '\n') line_starts_.push_back(static_cast<std::uint32_t>(i + 1));
    }

    It begin() const { return begin_; }
    It end() const { return end_; }
    bool gave_up() const { return gave_up_; }
    std::size_t errors() const { return errors_; }

    /// The exact location of p.
    SourceLoc loc_of(It p) const {
        auto off = static_cast<std::uint32_t>(p - begin_);
        auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), off);
        auto line = static_cast<std::uint32_t>(it - line_starts_.begin());
        return {line, off - line_starts_[line - 1] + 1};
    }

    /// Skips white space and comments (what the skipper skips).
    It skip(It p) const {
        while (p != end_) {
            if (std::isspace(static_cast<unsigned char>(*p))) {
                ++p;
            } else if (*p == '#') {
                while (p != end_ && *p != '\n') ++p;
            } else {
                break;
            }
        }
        return p;
    }

    /// The location of the first token at or after p.
    SourceLoc token_loc(It p) const { return loc_of(skip(p)); }

    /// The token at p for "found ..." messages.
    std::string describe(It p) const {
        p = skip(p);
        if (p == end_) return "end of file";
        if (word_start(*p) || std::isdigit(static_cast<unsigned char>(*p))) {
            It q = p;
            while (q != end_ && word_char(*q)) ++q;
            return fmt::format("'{}'", std::string_view(p, static_cast<std::size_t>(q - p)));
        }
        if (*p == '"') return "a string";
        static constexpr std::string_view two[] = {"->", "..", "==", "!=", "<=", ">=", "<<", ">>", "&&", "||", "**"};
        for (std::string_view t : two)
            if (static_cast<std::size_t>(end_ - p) >= 2 && std::string_view(p, 2) == t) return fmt::format("'{}'", t);
        if (static_cast<unsigned char>(*p) < 0x20 || static_cast<unsigned char>(*p) >= 0x7f)
            return fmt::format("byte 0x{:02x}", static_cast<unsigned char>(*p));
        return fmt::format("'{}'", *p);
    }

    void error(std::string_view code, It at, std::string message) {
        if (gave_up_) return;
        if (errors_ == max_syntax_errors) {
            diags_.note(token_loc(at), fmt::format("stopping after {} syntax errors", max_syntax_errors));
            gave_up_ = true;
            return;
        }
        ++errors_;
        diags_.error(std::string(code), token_loc(at), std::move(message));
    }

    /// An expectation failure: `which` is X3's description of what was expected.
    void expected(It where, std::string which) {
        if (which.size() >= 2 && which.front() == '"' && which.back() == '"')
            which = fmt::format("'{}'", std::string_view(which).substr(1, which.size() - 2));
        const std::string found = describe(where);
        // Python's spelling of the logical operators gets the DSL's.
        std::string hint;
        for (auto [py, dsl] : {std::pair{"'and'", "&&"}, std::pair{"'or'", "||"}, std::pair{"'not'", "!"}})
            if (found == py) hint = fmt::format(" (the DSL writes {} as '{}')", py, dsl);
        error("E001", where, fmt::format("expected {}, found {}{}", which, found, hint));
    }

    /// Where a statement that started at `start` and failed at `where` resumes. When the token
    /// found is the first of a later line, the statement was cut short at the end of a line and
    /// that token likely starts the next statement: resume there. Otherwise resume at sync().
    It resume_after(It start, It where) const {
        It t = skip(where);
        if (t != end_ && loc_of(t).line > loc_of(skip(start)).line) {
            It b = t;
            while (b != begin_ && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r')) --b;
            if (b == begin_ || b[-1] == '\n') return t;
        }
        return sync(where);
    }

    /// Where parsing resumes after an error at p: the start of the next line, skipping a block
    /// opened on the way as a whole (and an `else` that follows it); never past a '}' that
    /// closes a block opened before p.
    It sync(It p) const {
        int depth = 0;
        while (p != end_) {
            char c = *p;
            if (c == '#') {
                while (p != end_ && *p != '\n') ++p;
                continue;
            }
            if (c == '"') {
                ++p;
                while (p != end_ && *p != '"' && *p != '\n') ++p;
                if (p != end_ && *p == '"') ++p;
                continue;
            }
            if (c == '{') {
                ++depth;
            } else if (c == '}') {
                if (depth == 0) return p;
                if (--depth == 0) {
                    It q = skip(p + 1);
                    if (static_cast<std::size_t>(end_ - q) >= 4 && std::string_view(q, 4) == "else" &&
                        (q + 4 == end_ || !word_char(q[4]))) {
                        p = q + 4;
                        continue;
                    }
                    return p + 1;
                }
            } else if (c == '\n' && depth == 0) {
                return p + 1;
            }
            ++p;
        }
        return p;
    }

private:
    It begin_;
    It end_;
    Diagnostics& diags_;
    std::vector<std::uint32_t> line_starts_;
    std::size_t errors_ = 0;
    bool gave_up_ = false;
};

template <class Ctx>
ParseState& state(const Ctx& ctx) {
    return x3::get<state_tag>(ctx);
}

template <class Attr, class Value>
void assign(Attr& attr, Value&& v) {
    if constexpr (!std::is_same_v<Attr, const x3::unused_type> && !std::is_same_v<Attr, x3::unused_type>)
        x3::traits::move_to(std::forward<Value>(v), attr);
}

// ---------------------------------------------------------------------------------------------
// Lexical parsers

/// A reserved word, not followed by a letter, digit or '_'.
struct Keyword : x3::parser<Keyword> {
    using attribute_type = x3::unused_type;
    static const bool has_attribute = false;
    const char* word;
    constexpr explicit Keyword(const char* w) : word(w) {}

    template <class Ctx, class RCtx, class Attr>
    bool parse(It& first, const It& last, const Ctx& ctx, RCtx&, Attr&) const {
        x3::skip_over(first, last, ctx);
        It i = first;
        for (const char* w = word; *w; ++w, ++i)
            if (i == last || *i != *w) return false;
        if (i != last && word_char(*i)) return false;
        first = i;
        return true;
    }
};

/// A name that is not a keyword (unless `any_word`); the attribute is an ast::Ident (with its
/// location) or a string.
template <class Out, bool any_word = false>
struct NameParser : x3::parser<NameParser<Out, any_word>> {
    using attribute_type = Out;
    static const bool has_attribute = true;

    template <class Ctx, class RCtx, class Attr>
    bool parse(It& first, const It& last, const Ctx& ctx, RCtx&, Attr& attr) const {
        x3::skip_over(first, last, ctx);
        if (first == last || !word_start(*first)) return false;
        It i = first;
        while (i != last && word_char(*i)) ++i;
        std::string_view word(first, static_cast<std::size_t>(i - first));
        if (!any_word && reserved(word)) return false;
        if constexpr (std::is_same_v<Out, ast::Ident>)
            assign(attr, ast::Ident{state(ctx).loc_of(first), std::string(word)});
        else
            assign(attr, std::string(word));
        first = i;
        return true;
    }
};

/// A decimal or 0x hexadecimal integer literal. A literal that does not fit in 64 bits is
/// reported (E003) and parses as 0, so the rest of the file is still checked.
struct IntParser : x3::parser<IntParser> {
    using attribute_type = ast::IntLit;
    static const bool has_attribute = true;

    template <class Ctx, class RCtx, class Attr>
    bool parse(It& first, const It& last, const Ctx& ctx, RCtx&, Attr& attr) const {
        x3::skip_over(first, last, ctx);
        if (first == last || !std::isdigit(static_cast<unsigned char>(*first))) return false;
        It i = first;
        int base = 10;
        if (last - first > 2 && first[0] == '0' && (first[1] == 'x' || first[1] == 'X') &&
            std::isxdigit(static_cast<unsigned char>(first[2]))) {
            base = 16;
            i += 2;
        }
        It digits = i;
        while (i != last && (base == 16 ? std::isxdigit(static_cast<unsigned char>(*i)) : std::isdigit(static_cast<unsigned char>(*i))))
            ++i;
        std::int64_t v = 0;
        auto [p, ec] = std::from_chars(digits, i, v, base);
        if (ec != std::errc{} || p != i) {
            state(ctx).error("E003", first,
                             fmt::format("integer literal {} is too large (the largest is 9223372036854775807)",
                                         std::string_view(first, static_cast<std::size_t>(i - first))));
            v = 0;
        }
        assign(attr, ast::IntLit{state(ctx).loc_of(first), v});
        first = i;
        return true;
    }
};

/// `"..."` on one line; `\"` and `\\` are the only escapes. An unterminated string is E004.
struct StringParser : x3::parser<StringParser> {
    using attribute_type = ast::StringLit;
    static const bool has_attribute = true;

    template <class Ctx, class RCtx, class Attr>
    bool parse(It& first, const It& last, const Ctx& ctx, RCtx&, Attr& attr) const {
        x3::skip_over(first, last, ctx);
        if (first == last || *first != '"') return false;
        std::string value;
        It i = first + 1;
        while (i != last && *i != '"' && *i != '\n') {
            if (*i == '\\' && i + 1 != last && (i[1] == '"' || i[1] == '\\')) ++i;
            value += *i++;
        }
        if (i == last || *i != '"') {
            state(ctx).error("E004", first, "unterminated string: expected '\"' before the end of the line");
        } else {
            ++i;
        }
        assign(attr, ast::StringLit{state(ctx).loc_of(first), std::move(value)});
        first = i;
        return true;
    }
};

/// A model value word: letters, digits, '_', '-', '.', '+' (`cut-through`, `none`, `4`, `0.01`, `1e-05`).
struct ModelWordParser : x3::parser<ModelWordParser> {
    using attribute_type = std::string;
    static const bool has_attribute = true;

    template <class Ctx, class RCtx, class Attr>
    bool parse(It& first, const It& last, const Ctx& ctx, RCtx&, Attr& attr) const {
        x3::skip_over(first, last, ctx);
        auto ok = [](char c) { return word_char(c) || c == '-' || c == '.' || c == '+'; };
        if (first == last || !(word_char(*first) || *first == '.')) return false;
        It i = first;
        while (i != last && ok(*i)) ++i;
        assign(attr, std::string(first, i));
        first = i;
        return true;
    }
};

/// One binary operator of a precedence level. Each spelling may forbid a following character,
/// so `-` does not eat the `->` of a send, `*` the `**` of a power, `&` the `&&`, and so on.
struct OpSpelling {
    const char* text;
    ast::BinOp op;
    const char* not_followed_by;
};

template <std::size_t N>
struct OpParser : x3::parser<OpParser<N>> {
    using attribute_type = ast::OpTok;
    static const bool has_attribute = true;
    std::array<OpSpelling, N> ops;
    constexpr explicit OpParser(std::array<OpSpelling, N> o) : ops(o) {}

    template <class Ctx, class RCtx, class Attr>
    bool parse(It& first, const It& last, const Ctx& ctx, RCtx&, Attr& attr) const {
        x3::skip_over(first, last, ctx);
        for (const OpSpelling& s : ops) {
            std::size_t len = std::char_traits<char>::length(s.text);
            if (static_cast<std::size_t>(last - first) < len || std::string_view(first, len) != s.text) continue;
            It after = first + len;
            if (after != last && std::string_view(s.not_followed_by).find(*after) != std::string_view::npos) continue;
            assign(attr, ast::OpTok{state(ctx).loc_of(first), s.op});
            first = after;
            return true;
        }
        return false;
    }
};

/// A unary operator token (not part of the public AST: a Unary node takes its location).
struct UnOpTok {
    SourceLoc loc;
    ast::UnOp op = ast::UnOp::neg;
};

struct UnOpParser : x3::parser<UnOpParser> {
    using attribute_type = UnOpTok;
    static const bool has_attribute = true;

    template <class Ctx, class RCtx, class Attr>
    bool parse(It& first, const It& last, const Ctx& ctx, RCtx&, Attr& attr) const {
        x3::skip_over(first, last, ctx);
        if (first == last) return false;
        ast::UnOp op;
        if (*first == '-' && (first + 1 == last || first[1] != '>')) op = ast::UnOp::neg;
        else if (*first == '~') op = ast::UnOp::bnot;
        else if (*first == '!' && (first + 1 == last || first[1] != '=')) op = ast::UnOp::lnot;
        else return false;
        assign(attr, UnOpTok{state(ctx).loc_of(first), op});
        ++first;
        return true;
    }
};

/// Matches nothing; its attribute is the location of the next token. Semantic actions use it
/// for the location of what they build (X3 1.74's _where ends where the match ended).
struct HereParser : x3::parser<HereParser> {
    using attribute_type = SourceLoc;
    static const bool has_attribute = true;

    template <class Ctx, class RCtx, class Attr>
    bool parse(It& first, const It& last, const Ctx& ctx, RCtx&, Attr& attr) const {
        x3::skip_over(first, last, ctx);
        assign(attr, state(ctx).loc_of(first));
        return true;
    }
};

/// Text where a statement should start (E002): reported, then skipped to the next line.
struct JunkParser : x3::parser<JunkParser> {
    using attribute_type = x3::unused_type;
    static const bool has_attribute = false;

    template <class Ctx, class RCtx, class Attr>
    bool parse(It& first, const It& last, const Ctx& ctx, RCtx&, Attr&) const {
        x3::skip_over(first, last, ctx);
        ParseState& st = state(ctx);
        if (first == last || *first == '}' || st.gave_up()) return false;
        // A misspelled statement keyword gets a hint.
        std::string hint;
        if (word_start(*first)) {
            It e = first;
            while (e != last && word_char(*e)) ++e;
            std::string_view word(first, static_cast<std::size_t>(e - first));
            std::size_t best = 3;
            for (std::string_view k : {"param", "topology", "model", "collective", "let", "for", "if", "step", "send", "hop", "require",
                                       "assert", "claim", "bound", "cite"}) {
                std::size_t d = edit_distance(word, k);
                if (word.size() > 2 && d < best && d <= (k.size() >= 4 ? 2u : 1u)) {
                    best = d;
                    hint = fmt::format(" (did you mean '{}'?)", k);
                }
            }
        }
        st.error("E002", first,
                 fmt::format("expected a statement (param, topology, model, collective, let, for, if, step, send, hop, "
                             "require, assert, claim, bound or cite), found {}{}",
                             st.describe(first), hint));
        It next = st.sync(first);
        if (next == first) return false;
        first = next;
        return true;
    }
};

}  // namespace collsched::dsl::parser

namespace boost::spirit::x3 {
template <>
struct get_info<collsched::dsl::parser::Keyword> {
    using result_type = std::string;
    std::string operator()(const collsched::dsl::parser::Keyword& k) const { return fmt::format("'{}'", k.word); }
};
template <class Out, bool any_word>
struct get_info<collsched::dsl::parser::NameParser<Out, any_word>> {
    using result_type = std::string;
    std::string operator()(const collsched::dsl::parser::NameParser<Out, any_word>&) const {
        return any_word ? "hop or wormhole" : "a name";
    }
};
template <>
struct get_info<collsched::dsl::parser::ModelWordParser> {
    using result_type = std::string;
    std::string operator()(const collsched::dsl::parser::ModelWordParser&) const { return "a value"; }
};
}  // namespace boost::spirit::x3
