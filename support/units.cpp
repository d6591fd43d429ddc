#include "support/units.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <span>
#include <utility>

#include <fmt/format.h>

namespace collsched::support {

namespace {

struct Unit {
    std::string_view name;
    double scale;
};

constexpr std::array time_units{Unit{"s", 1}, Unit{"ms", 1e-3}, Unit{"us", 1e-6}, Unit{"\xc2\xb5s", 1e-6}, Unit{"ns", 1e-9},
                                Unit{"ps", 1e-12}};

constexpr double Ki = 1024.0;
constexpr std::array bandwidth_units{
    Unit{"B/s", 1},          Unit{"kB/s", 1e3},          Unit{"KB/s", 1e3},          Unit{"MB/s", 1e6},
    Unit{"GB/s", 1e9},       Unit{"TB/s", 1e12},         Unit{"KiB/s", Ki},          Unit{"MiB/s", Ki * Ki},
    Unit{"GiB/s", Ki * Ki * Ki}, Unit{"TiB/s", Ki * Ki * Ki * Ki},
    Unit{"bit/s", 1 / 8.0},  Unit{"kbit/s", 1e3 / 8},    Unit{"Mbit/s", 1e6 / 8},    Unit{"Gbit/s", 1e9 / 8},
    Unit{"Tbit/s", 1e12 / 8}, Unit{"b/s", 1 / 8.0},       Unit{"kb/s", 1e3 / 8},      Unit{"Kb/s", 1e3 / 8},
    Unit{"Mb/s", 1e6 / 8},   Unit{"Gb/s", 1e9 / 8},      Unit{"Tb/s", 1e12 / 8}};

constexpr std::array size_units{Unit{"B", 1},          Unit{"K", Ki},          Unit{"M", Ki * Ki},      Unit{"G", Ki * Ki * Ki},
                                Unit{"T", Ki * Ki * Ki * Ki}, Unit{"KiB", Ki},  Unit{"MiB", Ki * Ki},    Unit{"GiB", Ki * Ki * Ki},
                                Unit{"TiB", Ki * Ki * Ki * Ki}, Unit{"kB", 1e3}, Unit{"KB", 1e3},         Unit{"MB", 1e6},
                                Unit{"GB", 1e9},       Unit{"TB", 1e12}};

std::string unit_list(std::span<const Unit> units) {
    std::string s;
    for (const Unit& u : units) {
        if (u.name == "\xc2\xb5s") continue;
        if (!s.empty()) s += ", ";
        s += u.name;
    }
    return s;
}

/// NUMBER [spaces] UNIT: the number and the unit's text, or nullopt when no number starts the text.
std::optional<std::pair<double, std::string_view>> split(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text.front())) || text.front() == '.')) return std::nullopt;
    double v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::general);
    if (ec != std::errc() || !std::isfinite(v)) return std::nullopt;
    std::string_view unit = text.substr(static_cast<std::size_t>(end - text.data()));
    while (!unit.empty() && (unit.front() == ' ' || unit.front() == '\t')) unit.remove_prefix(1);
    return std::pair{v, unit};
}

template <std::size_t N>
std::optional<double> parse(std::string_view text, const std::array<Unit, N>& units, std::string_view what, std::string_view example,
                            bool bare_ok, bool zero_ok, std::string* why) {
    auto fail = [&](std::string msg) -> std::optional<double> {
        if (why) *why = std::move(msg);
        return std::nullopt;
    };
    auto parts = split(text);
    if (!parts)
        return fail(fmt::format("expected {} as a number and a unit, e.g. '{}' (units: {})", what, example, unit_list(units)));
    auto [v, unit] = *parts;
    double scale = 0;
    if (unit.empty()) {
        if (!bare_ok) return fail(fmt::format("{} needs a unit, e.g. '{}' (units: {})", what, example, unit_list(units)));
        scale = 1;
    }
    for (const Unit& u : units)
        if (u.name == unit) scale = u.scale;
    if (scale == 0) return fail(fmt::format("unknown unit '{}' for {} (units: {})", unit, what, unit_list(units)));
    double value = v * scale;
    if (!std::isfinite(value) || value > 1e30) return fail(fmt::format("{} is out of range", what));
    if (!zero_ok && value <= 0) return fail(fmt::format("{} must be positive", what));
    return value;
}

/// The number with three significant digits, no trailing zeros: 1.5, 230, 12.3, 0.25.
std::string three_digits(double v) {
    std::string s = fmt::format("{:.3g}", v);
    if (s.find('e') != std::string::npos) s = fmt::format("{:.0f}", v);
    return s;
}

}  // namespace

std::optional<double> parse_seconds(std::string_view text, std::string* why) {
    return parse(text, time_units, "a time", "1.5 us", false, true, why);
}

std::optional<double> parse_bandwidth(std::string_view text, std::string* why) {
    return parse(text, bandwidth_units, "a bandwidth", "25 GB/s", false, false, why);
}

std::optional<double> parse_bytes(std::string_view text, std::string* why) {
    return parse(text, size_units, "a size", "1M", true, true, why);
}

std::string format_seconds(double s) {
    if (s == 0) return "0 s";
    if (s >= 1e6) return fmt::format("{:.3g} s", s);  // not a collective's time, but said in a line
    if (s >= 1) return three_digits(s) + " s";
    if (s >= 1e-3) return three_digits(s * 1e3) + " ms";
    if (s >= 1e-6) return three_digits(s * 1e6) + " us";
    return three_digits(s * 1e9) + " ns";
}

std::string format_bandwidth(double b) {
    if (b >= 1e12) return three_digits(b / 1e12) + " TB/s";
    if (b >= 1e9) return three_digits(b / 1e9) + " GB/s";
    if (b >= 1e6) return three_digits(b / 1e6) + " MB/s";
    if (b >= 1e3) return three_digits(b / 1e3) + " kB/s";
    return three_digits(b) + " B/s";
}

std::string format_bytes(double b) {
    if (b >= Ki * Ki * Ki * Ki) return three_digits(b / (Ki * Ki * Ki * Ki)) + " TiB";
    if (b >= Ki * Ki * Ki) return three_digits(b / (Ki * Ki * Ki)) + " GiB";
    if (b >= Ki * Ki) return three_digits(b / (Ki * Ki)) + " MiB";
    if (b >= Ki) return three_digits(b / Ki) + " KiB";
    return three_digits(b) + " B";
}

}  // namespace collsched::support
