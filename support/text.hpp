/** \file
 * Small text helpers every part's messages use.
 */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace collsched::support {

/// "1 step", "2 steps": a count and its noun, plural unless the count is one (`plural` for
/// nouns whose plural is not noun + "s").
inline std::string count_of(std::uint64_t n, std::string_view noun, std::string_view plural = {}) {
    if (n == 1) return fmt::format("1 {}", noun);
    return plural.empty() ? fmt::format("{} {}s", n, noun) : fmt::format("{} {}", n, plural);
}

/// Text for XML and SVG content and attribute values: & < > " escaped.
inline std::string xml_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}

}  // namespace collsched::support
