#include "support/memory_budget.hpp"

#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

#include "support/error.hpp"

namespace collsched::support {

std::uint64_t memory_budget() {
    const char* env = std::getenv("COLLSCHED_MAX_MEMORY_MB");
    if (env == nullptr) return default_memory_budget;
    std::string_view s(env);
    std::uint64_t mb = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), mb);
    if (s.empty() || ec != std::errc{} || end != s.data() + s.size() || mb == 0 || mb > (std::uint64_t{1} << 40))
        throw InputError(fmt::format("COLLSCHED_MAX_MEMORY_MB must be a whole number of MiB from 1 to 2^40, not '{}'", s.substr(0, 40)));
    return mb << 20;
}

std::string bytes_text(std::uint64_t bytes) {
    if (bytes == UINT64_MAX) return "more than 16 EiB";
    constexpr std::uint64_t KiB = 1024, MiB = KiB << 10, GiB = MiB << 10, TiB = GiB << 10;
    auto unit = [&](std::uint64_t u, const char* name) {
        if (bytes % u == 0) return fmt::format("{} {}", bytes / u, name);
        return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(u), name);
    };
    if (bytes >= TiB) return unit(TiB, "TiB");
    if (bytes >= GiB) return unit(GiB, "GiB");
    if (bytes >= MiB) return unit(MiB, "MiB");
    if (bytes >= KiB) return unit(KiB, "KiB");
    return fmt::format("{} bytes", bytes);
}

std::string memory_problem(std::uint64_t bytes, std::string_view what) {
    const std::uint64_t budget = memory_budget();
    if (bytes <= budget) return "";
    return fmt::format("{} needs about {}, more than the memory budget of {}; set COLLSCHED_MAX_MEMORY_MB to allow more", what,
                       bytes_text(bytes), bytes_text(budget));
}

void check_memory(std::uint64_t bytes, std::string_view what) {
    if (std::string why = memory_problem(bytes, what); !why.empty()) throw InputError(why);
}

}  // namespace collsched::support
