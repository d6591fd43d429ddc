#include "cli/options.hpp"

#include <charconv>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "compiler/interop/export_msccl.hpp"
#include "dsl/excerpt.hpp"

namespace collsched::tools {

CLI::Validator seconds_option(bool zero_is_none) {
    std::string range = zero_is_none ? fmt::format("0 (no limit) or a number of seconds up to {:.0f}", max_timeout_seconds)
                                     : fmt::format("a number of seconds above 0 and up to {:.0f}", max_timeout_seconds);
    return CLI::Validator(
        [zero_is_none, range](std::string& s) -> std::string {
            double v = 0;
            // Plain decimal numbers only: from_chars also reads "nan" and "inf", refused below.
            auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
            bool ok = !s.empty() && ec == std::errc{} && end == s.data() + s.size() && std::isfinite(v) &&
                      v <= max_timeout_seconds && (v > 0 || (zero_is_none && v == 0));
            return ok ? std::string() : fmt::format("expected {}, not '{}'", range, excerpt(s));
        },
        "", "seconds");  // no description: --help keeps the type and the default (FLOAT=60)
}

CLI::Validator count_option(std::uint64_t min, std::uint64_t max) {
    return CLI::Validator(
        [min, max](std::string& s) -> std::string {
            std::uint64_t v = 0;
            auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
            bool digits = !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
            if (digits && ec == std::errc{} && end == s.data() + s.size() && v >= min && v <= max) return {};
            return fmt::format("expected a whole number from {} to {}, not '{}'", min, max, excerpt(s));
        },
        "", "count");  // no description: --help keeps the type and the default (UINT=20)
}

CLI::Validator number_option(double min, double max) {
    return CLI::Validator(
        [min, max](std::string& s) -> std::string {
            double v = 0;
            auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);  // also reads "nan" and "inf", refused below
            if (!s.empty() && ec == std::errc{} && end == s.data() + s.size() && std::isfinite(v) && v >= min && v <= max) return {};
            return fmt::format("expected a number from {:g} to {:g}, not '{}'", min, max, excerpt(s));
        },
        "", "number");
}

CLI::Validator file_option() {
    return CLI::Validator([](std::string& s) -> std::string { return s.empty() ? "expected a file name, not an empty one" : ""; }, "",
                          "file");
}

void add_msccl_max_steps(CLI::App* cmd, int& max_steps) {
    cmd->add_option("--max-steps", max_steps,
                    fmt::format("MSCCL-IR: steps per thread block the executor allows (its MSCCL_MAX_NUM_STEPS, 1 to {}; default {})",
                                MscclLimits::max_dependency_step + 1, MscclLimits::default_max_steps))
        ->check(count_option(1, MscclLimits::max_dependency_step + 1));
}

}  // namespace collsched::tools
