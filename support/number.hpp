/** \file
 * The one reader of unsigned decimal numbers in names and specs (issue 30: there were three,
 * and they disagreed on "03"). The rule, in docs/topologies.md ("Numbers"): a number is one or
 * more decimal digits, no sign, no spaces, no exponent; leading zeros are allowed and do not
 * change the value ("03" is 3); a value that does not fit is not a number. Topology specs
 * (`ring:08`), collective roots and members (`broadcast:03`) and message names (`m(03,5)`) read
 * numbers by it. A node's name is a name, not a number: node 3 is written `3` only
 * (Topology::find_node), so that every node has one spelling in tables and messages.
 */
#pragma once

#include <charconv>
#include <cmath>
#include <concepts>
#include <optional>
#include <string_view>

namespace collsched::support {

/// `text` as an unsigned decimal number of type T, or nullopt (not digits only, or too large).
template <std::unsigned_integral T = std::uint64_t>
std::optional<T> parse_decimal(std::string_view text) {
    if (text.empty() || text.front() < '0' || text.front() > '9') return std::nullopt;
    T v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || p != text.data() + text.size()) return std::nullopt;
    return v;
}

/// `text` as a non-negative decimal real: digits with an optional fraction and exponent ("12",
/// "0.5", ".5", "1.2e+05"), the whole text, finite; nullopt for anything else (a sign, spaces,
/// a unit, "inf", "nan", hexadecimal). The reader of measured times and bandwidths in tables
/// (runtime/executor/measurements.hpp); quantities with units go through support/units.hpp.
inline std::optional<double> parse_real(std::string_view text) {
    if (text.empty() || !((text.front() >= '0' && text.front() <= '9') || text.front() == '.')) return std::nullopt;
    double v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::general);
    if (ec != std::errc{} || p != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
    return v;
}

}  // namespace collsched::support
