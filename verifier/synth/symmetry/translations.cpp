// Translation groups Z_B x Z_K of a topology, checked generator by generator
// (symmetry/translations.hpp).
#include "verifier/synth/symmetry/translations.hpp"

#include <fmt/format.h>

#include "support/assert.hpp"
#include "verifier/synth/symmetry/processor_orbits.hpp"

namespace collsched {

namespace {

/// The map x -> x + g (g a generator) as a permutation of the processors.
std::vector<std::uint32_t> translation(const Translations& tr, std::uint32_t g, std::uint32_t P) {
    std::vector<std::uint32_t> image(P);
    for (std::uint32_t x = 0; x < P; ++x) image[x] = tr.add(x, g);
    return image;
}

}  // namespace

std::optional<std::uint32_t> translation_box(const Topology& t, const RunLimits& limits) {
    const std::uint32_t P = t.processors();
    if (t.routers() != 0 || P < 2) return std::nullopt;
    // Each generator must keep every attribute the models and bounds read (AutomorphismCheck).
    const AutomorphismCheck keeps(t, limits);
    // B = P is the cyclic group; then the other divisors, largest first.
    for (std::uint32_t B = P; B >= 1; --B) {
        if (P % B != 0) continue;
        const Translations tr{B, P / B};
        if (B > 1 && !keeps(translation(tr, 1, P))) continue;
        if (B < P && !keeps(translation(tr, B, P))) continue;
        return B;
    }
    return std::nullopt;
}

std::optional<Translations> translation_group(const Topology& t, const RunLimits& limits) {
    const std::optional<std::uint32_t> B = translation_box(t, limits);
    if (!B) return std::nullopt;
    return Translations{*B, t.processors() / *B};
}

std::string translation_group_name(const Topology& t, const RunLimits& limits) {
    const std::optional<std::uint32_t> B = translation_box(t, limits);
    COLLSCHED_ASSERT(B.has_value());
    return *B == t.processors() ? fmt::format("Z_{}", *B) : fmt::format("Z_{} x Z_{}", *B, t.processors() / *B);
}

}  // namespace collsched
