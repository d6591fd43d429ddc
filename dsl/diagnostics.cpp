#include "dsl/diagnostics.hpp"

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "dsl/excerpt.hpp"

namespace collsched {

void Diagnostics::error(std::string code, SourceLoc loc, std::string message) {
    list_.push_back({Severity::error, std::move(code), loc, std::move(message)});
    ++errors_;
}

void Diagnostics::note(SourceLoc loc, std::string message) {
    list_.push_back({Severity::note, {}, loc, std::move(message)});
}

void Diagnostics::warning(std::string code, SourceLoc loc, std::string message) {
    list_.push_back({Severity::warning, std::move(code), loc, std::move(message)});
    ++warnings_;
}

namespace {

std::string_view line_of(std::string_view text, std::uint32_t line) {
    std::size_t begin = 0;
    for (std::uint32_t l = 1; l < line; ++l) {
        std::size_t nl = text.find('\n', begin);
        if (nl == std::string_view::npos) return {};
        begin = nl + 1;
    }
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view s = text.substr(begin, end - begin);
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    return s;
}

/// Length of the valid UTF-8 character starting at s[i] (0 when the byte starts none).
std::size_t utf8_length(std::string_view s, std::size_t i) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = b < 0x80 ? 1 : (b & 0xe0) == 0xc0 && b >= 0xc2 ? 2 : (b & 0xf0) == 0xe0 ? 3 : (b & 0xf8) == 0xf0 && b <= 0xf4 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return 0;
    for (std::size_t k = 1; k < n; ++k)
        if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
    return n;
}

/// A source line as it can be shown on a terminal: control bytes (but tab) and bytes that are
/// no UTF-8 written as \xNN, so that a binary file given as a schedule prints no raw bytes;
/// `caret` (an offset into `src`) is moved along.
std::string printable_source(std::string_view src, std::size_t& caret) {
    std::string out;
    std::size_t new_caret = caret;
    for (std::size_t i = 0; i < src.size();) {
        if (i == caret) new_caret = out.size();
        const auto b = static_cast<unsigned char>(src[i]);
        const std::size_t n = utf8_length(src, i);
        if ((b < 0x20 && b != '\t') || b == 0x7f || n == 0) {
            out += fmt::format("\\x{:02x}", b);
            ++i;
        } else {
            out.append(src.substr(i, n));
            i += n;
        }
    }
    if (caret >= src.size()) new_caret = out.size() + (caret - src.size());
    caret = new_caret;
    return out;
}

}  // namespace

std::string Diagnostics::render() const {
    std::string out;
    for (const Diagnostic& d : list_) {
        std::string head = d.severity == Severity::error     ? fmt::format("error[{}]", d.code)
                           : d.severity == Severity::warning ? fmt::format("warning[{}]", d.code)
                                                             : std::string("note");
        std::string message = shorten_quotes(d.message);  // long inputs quoted in part (dsl/excerpt.hpp)
        if (d.loc.known())
            out += fmt::format("{}:{}:{}: {}: {}\n", file_, d.loc.line, d.loc.column, head, message);
        else
            out += fmt::format("{}: {}: {}\n", file_, head, message);
        if (!d.loc.known()) continue;
        std::size_t caret = 0;
        std::string src = source_window(line_of(text_, d.loc.line), d.loc.column, caret);
        src = printable_source(src, caret);
        out += fmt::format("  {}\n  ", src);
        for (std::size_t c = 0; c < caret && c < src.size(); ++c) out += src[c] == '\t' ? '\t' : ' ';
        out += "^\n";
    }
    return out;
}

SourceLoc location_of(std::string_view text, std::size_t offset) {
    SourceLoc loc{1, 1};
    for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++loc.line;
            loc.column = 1;
        } else {
            ++loc.column;
        }
    }
    return loc;
}

}  // namespace collsched
