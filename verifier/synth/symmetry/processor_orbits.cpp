// Orbits of processors under cheaply found, checked automorphisms.
#include "verifier/synth/symmetry/processor_orbits.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>
#include <optional>

namespace collsched {

namespace {

/// Extends a permutation of the processors to the routers: a router goes to the router whose
/// neighbours are the images of its own (processors first, then routers already placed).
/// False when some router finds no unique image.
bool extend_to_routers(const Topology& t, std::vector<std::uint32_t>& image) {
    const std::uint32_t P = t.processors(), N = t.nodes();
    if (N == P) return true;
    constexpr std::uint32_t none = 0xffffffffu;
    for (std::uint32_t r = P; r < N; ++r) image[r] = none;
    std::vector<char> is_image(N, 0);  // routers already chosen as some router's image
    for (int pass = 0; pass < 8; ++pass) {
        // Routers keyed by their neighbours among the processors and the chosen images.
        std::map<std::vector<std::uint32_t>, std::vector<std::uint32_t>> by_set;
        for (std::uint32_t r = P; r < N; ++r) {
            std::vector<std::uint32_t> ns;
            for (ChannelId c : t.out_channels(Node{r})) {
                std::uint32_t v = idx(t.channel(c).to);
                if (v < P || is_image[v]) ns.push_back(v);
            }
            std::sort(ns.begin(), ns.end());
            by_set[ns].push_back(r);
        }
        bool progress = false, open = false;
        std::vector<std::pair<std::uint32_t, std::uint32_t>> placed;
        for (std::uint32_t r = P; r < N; ++r) {
            if (image[r] != none) continue;
            std::vector<std::uint32_t> ns;
            for (ChannelId c : t.out_channels(Node{r})) {
                std::uint32_t v = idx(t.channel(c).to);
                if (v < P || image[v] != none) ns.push_back(image[v]);
            }
            std::sort(ns.begin(), ns.end());
            auto it = by_set.find(ns);
            if (ns.empty() || it == by_set.end() || it->second.size() != 1) {
                open = true;
                continue;
            }
            placed.push_back({r, it->second.front()});
        }
        for (auto [r, img] : placed) {
            image[r] = img;
            is_image[img] = 1;
            progress = true;
        }
        if (!open) break;
        if (!progress) return false;
    }
    std::vector<char> hit(N, 0);
    for (std::uint32_t v = 0; v < N; ++v) {
        if (image[v] == none || hit[image[v]]) return false;
        hit[image[v]] = 1;
    }
    return true;
}

struct UnionFind {
    std::vector<std::uint32_t> up;
    explicit UnionFind(std::uint32_t n) : up(n) { std::iota(up.begin(), up.end(), 0u); }
    std::uint32_t find(std::uint32_t x) {
        while (up[x] != x) x = up[x] = up[up[x]];
        return x;
    }
    bool unite(std::uint32_t a, std::uint32_t b) {
        a = find(a), b = find(b);
        if (a == b) return false;
        if (b < a) std::swap(a, b);
        up[b] = a;
        return true;
    }
};

}  // namespace

AutomorphismCheck::AutomorphismCheck(const Topology& t) : t_(t) {
    for (std::uint32_t g = 0; g < t.groups().size(); ++g) {
        std::vector<std::uint32_t> cs;
        for (ChannelId c : t.groups()[g].channels) cs.push_back(idx(c));  // sorted in a group
        groups_[std::move(cs)].push_back({t.groups()[g].cap, t.group_bandwidth(g)});
    }
    for (auto& [cs, attrs] : groups_) std::sort(attrs.begin(), attrs.end());
}

bool AutomorphismCheck::operator()(std::span<const std::uint32_t> image) const {
    const Topology& t = t_;
    // The image of channel c, when it is a channel with every attribute of c.
    auto image_of = [&](std::uint32_t c) -> std::optional<std::uint32_t> {
        const Channel& ch = t.channels()[c];
        const auto m = t.find_channel(Node{image[idx(ch.from)]}, Node{image[idx(ch.to)]});
        if (!m) return std::nullopt;
        const Channel& mc = t.channel(*m);
        if (mc.cap != ch.cap || mc.level != ch.level || !(t.speed(*m) == t.speed(ChannelId{c}))) return std::nullopt;
        return idx(*m);
    };
    std::vector<std::uint32_t> img;
    for (const auto& [members, attrs] : groups_) {
        img.clear();
        for (std::uint32_t c : members) {
            const auto m = image_of(c);
            if (!m) return false;
            img.push_back(*m);
        }
        std::sort(img.begin(), img.end());
        const auto it = groups_.find(img);
        if (it == groups_.end() || it->second != attrs) return false;
    }
    for (std::uint32_t c = 0; c < t.channels().size(); ++c)
        if (!image_of(c)) return false;
    return true;
}

bool is_automorphism(const Topology& t, std::span<const std::uint32_t> image) { return AutomorphismCheck(t)(image); }

ProcessorOrbits processor_orbits(const Topology& t) {
    const std::uint32_t P = t.processors();
    UnionFind uf(P);
    ProcessorOrbits out;
    std::vector<std::vector<std::uint32_t>> candidates;
    auto perm = [&](auto f) {
        std::vector<std::uint32_t> img(t.nodes());
        for (std::uint32_t u = 0; u < P; ++u) img[u] = f(u);
        return img;
    };
    for (std::uint32_t B = 2; B <= P; ++B) {
        if (P % B) continue;
        candidates.push_back(perm([&](std::uint32_t u) { return u / B * B + (u % B + 1) % B; }));
        if (B < P) candidates.push_back(perm([&](std::uint32_t u) { return (u + B) % P; }));
    }
    if (std::has_single_bit(P))
        for (std::uint32_t b = 1; b < P; b <<= 1) candidates.push_back(perm([&](std::uint32_t u) { return u ^ b; }));
    std::uint32_t orbits = P;
    const AutomorphismCheck keeps(t);
    for (auto& img : candidates) {
        if (orbits == 1) break;
        // Only a candidate that would merge something is worth its check.
        bool merges = false;
        for (std::uint32_t u = 0; u < P && !merges; ++u) merges = uf.find(u) != uf.find(img[u]);
        if (!merges || !extend_to_routers(t, img) || !keeps(img)) continue;
        ++out.automorphisms;
        for (std::uint32_t u = 0; u < P; ++u) orbits -= uf.unite(u, img[u]) ? 1 : 0;
    }
    out.orbit.resize(P);
    for (std::uint32_t u = 0; u < P; ++u) {
        out.orbit[u] = uf.find(u);
        if (out.orbit[u] == u) out.representatives.push_back(u);
    }
    return out;
}

}  // namespace collsched
