/** \file
 * One wording for malformed JSON everywhere: `file:line:col: malformed JSON: what`, with the
 * position nlohmann reports (the end of the offending token) and its message without the
 * library's own prefix. Also the one bound on how deeply JSON input may nest, checked before any
 * reader parses it.
 */
#pragma once

#include <optional>
#include <set>
#include <vector>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dsl/diagnostics.hpp"
#include "support/budget.hpp"

namespace collsched {

inline std::string malformed_json(std::string_view file, std::string_view text, std::size_t byte, std::string_view what,
                                  std::string_view kind = "JSON") {
    SourceLoc loc = location_of(text, byte == 0 ? 0 : byte - 1);
    if (auto p = what.find("column "); p != std::string_view::npos)
        if (auto q = what.find(": ", p); q != std::string_view::npos) what = what.substr(q + 2);
    return fmt::format("{}:{}:{}: malformed {}: {}", file, loc.line, loc.column, kind, what);
}

/// Deepest nesting of arrays and objects a JSON input may have. collsched's formats need at most
/// 7 levels; unknown fields are kept and written back (nlohmann's writer recurses once per level),
/// so without a bound `[[[[...]]]]` nested a million deep would overflow the stack.
inline constexpr int max_json_depth = 100;

/// The byte offset of the first '[' or '{' of `text` that opens level max_json_depth + 1 (outside
/// strings), if any. A scan without parsing: cheap next to the parse that follows it.
inline std::optional<std::size_t> json_too_deep(std::string_view text) {
    int depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_json_depth) return i;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return std::nullopt;
}

/// Throws InputError (`file:line:col: JSON nested more than 100 levels deep`) when json_too_deep finds a place.
inline void check_json_depth(std::string_view file, std::string_view text, std::string_view kind = "JSON") {
    if (auto at = json_too_deep(text)) {
        SourceLoc loc = location_of(text, *at);
        throw InputError(fmt::format("{}:{}:{}: {} nested more than {} levels deep", file, loc.line, loc.column, kind, max_json_depth));
    }
}

/// NUL bytes in a whole JSON document. nlohmann's lexer takes a NUL for the end of the input, so
/// a valid document followed by a NUL and anything at all would read as valid. The readers parse
/// the text before the first NUL (`before_nul`) and, when the parse gets that far (it succeeds, or
/// fails at the end of that text), refuse the NUL itself (`nul_byte`); an error earlier in the
/// text keeps nlohmann's own message. No JSON text has a raw NUL: outside strings it is no
/// token, inside one it must be written \u0000.
inline std::string_view before_nul(std::string_view text) { return text.substr(0, text.find('\0')); }

inline std::string nul_byte(std::string_view file, std::string_view text, std::string_view kind = "JSON") {
    SourceLoc loc = location_of(text, text.find('\0'));
    return fmt::format("{}:{}:{}: malformed {}: a NUL byte (JSON has none; inside a string write \\u0000)", file, loc.line, loc.column,
                       kind);
}

/// The byte offset of the opening quote of the `n`-th object key (0-based, in document order) of a
/// JSON text, found by a scan without parsing: a string followed by blanks and ':' is a key.
inline std::size_t nth_json_key(std::string_view text, std::uint64_t n) {
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '"') continue;
        const std::size_t start = i;
        for (++i; i < text.size() && text[i] != '"'; ++i)
            if (text[i] == '\\') ++i;
        std::size_t j = i + 1;
        while (j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r')) ++j;
        if (j < text.size() && text[j] == ':' && seen++ == n) return start;
    }
    return text.size();
}

/// nlohmann's own document builder, keeping the position and message of the first error instead
/// of throwing: a syntax error (parse_error) and a number too large for a double (out_of_range 406,
/// which carries no position of its own). A key given twice in one object stops the parse too
/// (nlohmann keeps the last value silently; a graph group with two "cap" keys would be read as
/// if the first were not there): `duplicate` names it and `duplicate_index` counts the keys before it.
class JsonDocumentSax : public nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
    using Base = nlohmann::detail::json_sax_dom_parser<nlohmann::json>;

public:
    /// `limits` (may be null) are polled every 65,536 values: reached, the parse stops with `stopped`.
    explicit JsonDocumentSax(nlohmann::json& out, const RunLimits* limits = nullptr) : Base(out, false), limits_(limits) {}
    bool start_array(std::size_t n) { return tick() && Base::start_array(n); }
    bool number_unsigned(nlohmann::json::number_unsigned_t v) { return tick() && Base::number_unsigned(v); }
    bool string(std::string& v) { return tick() && Base::string(v); }
    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
        error_position = position;
        error_text = e.what();
        return false;
    }
    bool start_object(std::size_t n) {
        keys_.emplace_back();
        return tick() && Base::start_object(n);
    }
    bool end_object() {
        keys_.pop_back();
        return Base::end_object();
    }
    bool key(std::string& k) {
        if (!keys_.back().insert(k).second) {
            duplicate = k;
            duplicate_index = key_count_;
            return false;
        }
        ++key_count_;
        return Base::key(k);
    }
    std::size_t error_position = 0;
    std::string error_text;
    std::optional<std::string> duplicate;
    std::uint64_t duplicate_index = 0;
    std::string stopped;  ///< the limit that stopped the parse ("time limit", "memory limit (...)")

private:
    bool tick() {
        if (!limits_ || (++ticks_ & 0xffff) != 0 || !limits_->reached()) return true;
        stopped = limits_->why();
        return false;
    }
    std::vector<std::set<std::string>> keys_;  ///< the keys of each open object
    std::uint64_t key_count_ = 0;
    const RunLimits* limits_ = nullptr;
    std::uint64_t ticks_ = 0;
};

/// Parses a whole JSON document read from `file`: refuses nesting deeper than max_json_depth,
/// and turns a syntax error or a number overflow into an InputError at file:line:col. `kind` names
/// the document in messages ("JSON", "JSON graph"). `limits` (may be null) are polled while it
/// parses: reached, LimitReached ("time limit (reading FILE)"), the part read freed in the background.
inline nlohmann::json parse_json_document(std::string_view file, std::string_view text, std::string_view kind = "JSON",
                                          const RunLimits* limits = nullptr) {
    check_json_depth(file, text, kind);
    const std::string_view body = before_nul(text);
    nlohmann::json out;
    JsonDocumentSax sax(out, limits);
    if (!nlohmann::json::sax_parse(body.begin(), body.end(), &sax)) {
        if (!sax.stopped.empty()) {
            free_in_background(std::make_unique<nlohmann::json>(std::move(out)));
            const std::string where = fmt::format("reading {}", file);
            limits->check(where);  // the wording of every stage ("time limit (reading FILE)")
            throw LimitReached(fmt::format("{} ({})", sax.stopped, where));
        }
        if (sax.duplicate) {
            SourceLoc loc = location_of(text, nth_json_key(body, sax.duplicate_index));
            throw InputError(fmt::format("{}:{}:{}: malformed {}: the key \"{}\" is given twice in one object (a second value would "
                                         "silently replace the first)",
                                         file, loc.line, loc.column, kind, *sax.duplicate));
        }
        if (body.size() < text.size() && sax.error_position >= body.size()) throw InputError(nul_byte(file, text, kind));
        throw InputError(malformed_json(file, text, sax.error_position, sax.error_text, kind));
    }
    if (body.size() < text.size()) throw InputError(nul_byte(file, text, kind));
    return out;
}

}  // namespace collsched
