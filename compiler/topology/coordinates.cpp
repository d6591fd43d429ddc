#include "compiler/topology/coordinates.hpp"

#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace collsched::compiler {

std::optional<std::string> coordinates(const Topology& t, std::uint32_t p) {
    const auto& dims = t.dims();
    if (dims.size() < 2 || t.family() == Family::hypercube || p >= t.processors()) return std::nullopt;
    std::vector<std::uint32_t> c(dims.size());
    for (std::size_t i = dims.size(); i-- > 0;) {
        c[i] = p % dims[i];
        p /= dims[i];
    }
    return fmt::format("({})", fmt::join(c, ", "));
}

std::string processor_text(const Topology& t, std::uint32_t p) { return coordinates(t, p).value_or(std::to_string(p)); }

}  // namespace collsched::compiler
