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

// Two passes in one scan: a quotation (from a ' to the next ') longer than max_quote is
// shortened, and so is a long run of non-blank characters outside quotations. A quote with no
// closing partner is treated as an ordinary character.
std::string shorten_quotes(std::string_view m) {
    std::string out;
    out.reserve(std::min<std::size_t>(m.size(), 4096));
    std::size_t i = 0;
    while (i < m.size()) {
        if (m[i] == '\'') {
            std::size_t close = m.find('\'', i + 1);
            if (close != std::string_view::npos) {
                out += '\'';
                out += excerpt(m.substr(i + 1, close - i - 1));
                out += '\'';
                i = close + 1;
                continue;
            }
        }
        if (blank(m[i])) {
            out += m[i++];
            continue;
        }
        std::size_t end = i;
        while (end < m.size() && !blank(m[end]) && (m[end] != '\'' || m.find('\'', end + 1) == std::string_view::npos)) ++end;
        std::string_view run = m.substr(i, end - i);
        out += run.size() > max_quote + 40 ? excerpt(run) : std::string(run);
        i = end;
    }
    return out;
}

std::string source_window(std::string_view line, std::size_t column, std::size_t& caret) {
    std::size_t at = column == 0 ? 0 : std::min(column - 1, line.size());
    if (line.size() <= 2 * max_quote) {
        caret = at;
        return std::string(line);
    }
    std::size_t begin = char_boundary(line, at > max_quote / 2 ? at - max_quote / 2 : 0);
    std::size_t end = char_boundary(line, begin + max_quote);
    if (end < at + 1) end = char_boundary(line, at + 1);  // the column itself is always shown
    std::string out = begin > 0 ? "..." : "";
    caret = out.size() + (at - begin);
    out += line.substr(begin, end - begin);
    if (end < line.size()) out += "...";
    return out;
}

}  // namespace collsched
