/** \file
 * The checks that building a topology shares between the spec reader (topology_spec.cpp) and
 * the construction from values (topology.cpp), internal to compiler/: one wording for every
 * refusal, `topology 'SPEC': what`.
 */
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "compiler/topology/topology.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched::topology_checks {

/// The pieces of `s` between the separators (an empty piece where two separators meet).
inline std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> parts;
    while (true) {
        std::size_t p = s.find(sep);
        parts.push_back(s.substr(0, p));
        if (p == std::string_view::npos) break;
        s = s.substr(p + 1);
    }
    return parts;
}


[[noreturn]] inline void bad_spec(std::string_view spec, std::string_view what) {
    throw InputError(fmt::format("topology '{}': {}", spec, what));
}

inline bool is_power_of(std::uint64_t n, std::uint64_t b) {
    if (n < 1) return false;
    while (n % b == 0) n /= b;
    return n == 1;
}

inline std::uint32_t log_base(std::uint64_t n, std::uint64_t b) {
    std::uint32_t l = 0;
    while (n > 1) {
        n /= b;
        ++l;
    }
    return l;
}

inline void check_processors(std::string_view spec, std::uint64_t n) {
    if (n > max_processors)
        bad_spec(spec, fmt::format("{} processors is more than collsched supports ({})", n, max_processors));
}

inline void check_channels(std::string_view spec, std::uint64_t c) {
    if (c > max_channels)
        bad_spec(spec, fmt::format("{} channels is more than collsched supports ({})", c, max_channels));
}

}  // namespace collsched::topology_checks
