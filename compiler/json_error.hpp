/** \file
 * One wording for malformed JSON everywhere: `file:line:col: malformed JSON: what`, with the
 * position nlohmann reports (the end of the offending token) and its message without the
 * library's own prefix.
 */
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

#include "dsl/diagnostics.hpp"

namespace collsched {

inline std::string malformed_json(std::string_view file, std::string_view text, std::size_t byte, std::string_view what,
                                  std::string_view kind = "JSON") {
    SourceLoc loc = location_of(text, byte == 0 ? 0 : byte - 1);
    if (auto p = what.find("column "); p != std::string_view::npos)
        if (auto q = what.find(": ", p); q != std::string_view::npos) what = what.substr(q + 2);
    return fmt::format("{}:{}:{}: malformed {}: {}", file, loc.line, loc.column, kind, what);
}

}  // namespace collsched
