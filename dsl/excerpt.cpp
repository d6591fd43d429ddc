#include "dsl/excerpt.hpp"

#include <algorithm>

namespace collsched {

namespace {

/// The largest cut <= at that does not split a UTF-8 character of `s`.
std::size_t char_boundary(std::string_view s, std::size_t at) {
    at = std::min(at, s.size());
    while (at > 0 && at < s.size() && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) --at;
    return at;
}

bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::string excerpt(std::string_view s, std::size_t max) {
    if (s.size() <= max) return std::string(s);
    std::size_t keep = char_boundary(s, max > 3 ? max - 3 : 0);
    return std::string(s.substr(0, keep)) + "...";
}

std::string excerpt_middle(std::string_view s, std::size_t max) {
    if (s.size() <= max) return std::string(s);
    const std::size_t keep = max > 3 ? max - 3 : 0;
    const std::size_t head = char_boundary(s, keep / 2);
    std::size_t tail = s.size() - (keep - keep / 2);
    while (tail < s.size() && (static_cast<unsigned char>(s[tail]) & 0xC0) == 0x80) ++tail;
    return std::string(s.substr(0, head)) + "..." + std::string(s.substr(tail));
}

// Three passes. (1) A quotation (from a ' to the next ') longer than max_quote is shortened; a
// quote with no closing partner is an ordinary character. (2) A run of non-blank bytes (quotes
// included) longer than max_quote + 40 is shortened in its middle, so that a long path keeps its
// `:line:col:` at the end and `a'b'c'd'...` cannot echo itself in
// short quotations. (3) A message still longer than max_message keeps its beginning and its end.
std::string shorten_quotes(std::string_view m) {
    std::string quoted;
    quoted.reserve(std::min<std::size_t>(m.size(), 4096));
    for (std::size_t i = 0; i < m.size();) {
        std::size_t close = m[i] == '\'' ? m.find('\'', i + 1) : std::string_view::npos;
        if (close == std::string_view::npos) {
            quoted += m[i++];
            continue;
        }
        quoted += '\'';
        quoted += excerpt(m.substr(i + 1, close - i - 1));
        quoted += '\'';
        i = close + 1;
    }
    std::string out;
    out.reserve(quoted.size());
    for (std::size_t i = 0; i < quoted.size();) {
        if (blank(quoted[i])) {
            out += quoted[i++];
            continue;
        }
        std::size_t end = i;
        while (end < quoted.size() && !blank(quoted[end])) ++end;
        std::string_view run = std::string_view(quoted).substr(i, end - i);
        out += run.size() > max_quote + 40 ? excerpt_middle(run) : std::string(run);
        i = end;
    }
    if (out.size() <= max_message) return out;
    std::size_t head = char_boundary(out, max_message * 6 / 10);
    std::size_t tail = out.size() - max_message * 3 / 10;
    while (tail < out.size() && (static_cast<unsigned char>(out[tail]) & 0xC0) == 0x80) ++tail;
    return out.substr(0, head) + " [... " + std::to_string(tail - head) + " bytes left out ...] " + out.substr(tail);
}

std::string source_window(std::string_view line, std::size_t column, std::size_t& caret) {
    std::size_t at = column == 0 ? 0 : std::min(column - 1, line.size());
    if (line.size() <= 2 * max_quote) {
        caret = at;
        return std::string(line);
    }
    std::size_t begin = char_boundary(line, at > max_quote / 2 ? at - max_quote / 2 : 0);
    std::size_t end = char_boundary(line, begin + max_quote);
    if (end < at + 1) {  // the column itself is always shown, with the rest of its character
        end = at + 1;
        while (end < line.size() && (static_cast<unsigned char>(line[end]) & 0xC0) == 0x80) ++end;
    }
    std::string out = begin > 0 ? "..." : "";
    caret = out.size() + (at - begin);
    out += line.substr(begin, end - begin);
    if (end < line.size()) out += "...";
    return out;
}

}  // namespace collsched
