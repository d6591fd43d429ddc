/** \file
 * Small text helpers every part's messages and hand-written outputs use: counts with their
 * noun, runs of processor numbers, and the XML and JSON escapers.
 */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace collsched::support {

/// "1 step", "2 steps": a count and its noun, plural unless the count is one (`plural` for
/// nouns whose plural is not noun + "s").
inline std::string count_of(std::uint64_t n, std::string_view noun, std::string_view plural = {}) {
    if (n == 1) return fmt::format("1 {}", noun);
    return plural.empty() ? fmt::format("{} {}s", n, noun) : fmt::format("{} {}", n, plural);
}

/// "{0-6, 8-15}": sorted numbers as runs of consecutive ones (the first `limit` runs, then how
/// many more), as the bounds name a set of processors.
inline std::string runs_text(const std::vector<std::uint32_t>& xs, std::size_t limit = 12) {
    std::vector<std::string> runs;
    for (std::size_t i = 0; i < xs.size();) {
        std::size_t j = i;
        while (j + 1 < xs.size() && xs[j + 1] == xs[j] + 1) ++j;
        runs.push_back(i == j ? fmt::format("{}", xs[i]) : fmt::format("{}-{}", xs[i], xs[j]));
        i = j + 1;
    }
    if (runs.size() > limit) {
        const std::size_t more = runs.size() - limit;
        runs.resize(limit);
        runs.push_back(fmt::format("... ({} more runs)", more));
    }
    return fmt::format("{{{}}}", fmt::join(runs, ", "));
}

/// Whether `s` is a word, as the names in input files must be (a link group's, a link type's;
/// docs/topologies.md): not empty, without blanks, quotes, commas or control bytes (below 0x20,
/// and 0x7f), so that a message or an export can print it as it is.
inline bool is_word(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f || c == ' ' || c == '"' || c == ',') return false;
    }
    return true;
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

/// A JSON string literal of `s`, quotes included: " and \ escaped, line feed and tab as \n and
/// \t, every other control byte as \u00XX; other bytes as they are (UTF-8 passes through). The
/// one escaper of every JSON writer that writes text by hand (the simulator's report, Chakra's
/// metadata, the benchmark's results).
inline std::string json_string(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    for (char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
                else out += c;
        }
    }
    out += '"';
    return out;
}

}  // namespace collsched::support
