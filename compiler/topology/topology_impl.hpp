/** \file
 * The builders of compiler/topology/topology.cpp and compiler/topology/topology_graph.cpp (graph files): the
 * private `Topology::Impl`, which fills a Topology's members. Included by those two files only.
 */
#pragma once

#include <algorithm>
#include <bit>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/topology/topology.hpp"
#include "compiler/topology/topology_checks.hpp"

namespace collsched {

using topology_checks::bad_spec;
using topology_checks::check_channels;
using topology_checks::check_processors;
using topology_checks::is_power_of;
using topology_checks::log_base;
using topology_checks::split;

struct Topology::Impl {
    static std::shared_ptr<Topology> tree(std::string_view spec, Family fam, std::uint64_t b, std::uint64_t n,
                                          std::vector<std::uint32_t> caps) {
        if (b < 2) bad_spec(spec, "the arity must be at least 2");
        if (n < b || !is_power_of(n, b))
            bad_spec(spec, fmt::format("{} leaves is not a power of {} (at least {})", n, b, b));
        check_processors(spec, n);
        std::uint32_t L = log_base(n, b);
        if (caps.size() != L)
            bad_spec(spec, fmt::format("{} capacities given, the tree has {} levels (one capacity per level, leaves first)",
                                       caps.size(), L));
        for (std::uint32_t i = 0; i < L; ++i) {
            if (caps[i] < 1) bad_spec(spec, fmt::format("capacity of level {} is {}; capacities must be at least 1", i + 1, caps[i]));
            if (fam != Family::ideal && i > 0 && caps[i] < caps[i - 1])
                bad_spec(spec, fmt::format("capacity pattern decreases at level {} ({} after {}); it must be non-decreasing toward the root",
                                           i + 1, caps[i], caps[i - 1]));
        }
        auto t = std::shared_ptr<Topology>(new Topology());
        t->spec_ = std::string(spec);
        t->family_ = fam;
        t->arity_ = static_cast<std::uint32_t>(b);
        t->tree_levels_ = L;
        t->level_caps_ = std::move(caps);
        t->processors_ = static_cast<std::uint32_t>(n);
        std::uint64_t per_level = n, first = 0, routers = 0;
        for (std::uint32_t l = 0; l <= L; ++l) {
            t->level_first_.push_back(static_cast<std::uint32_t>(first));
            first += per_level;
            if (l > 0) routers += per_level;
            per_level /= b;
        }
        t->level_first_.push_back(static_cast<std::uint32_t>(first));
        t->routers_ = static_cast<std::uint32_t>(routers);
        std::uint32_t N = t->nodes();
        t->level_.resize(N);
        t->parent_.assign(N, Node{std::numeric_limits<std::uint32_t>::max()});
        t->channels_.reserve(2 * (N - 1));
        for (std::uint32_t l = 0; l <= L; ++l) {
            for (std::uint32_t v = t->level_first_[l]; v < t->level_first_[l + 1]; ++v) {
                t->level_[v] = l;
                if (l == L) continue;
                std::uint32_t j = v - t->level_first_[l];
                Node p{t->level_first_[l + 1] + j / static_cast<std::uint32_t>(b)};
                t->parent_[v] = p;
                std::uint32_t cap = t->level_caps_[l];
                t->channels_.push_back({Node{v}, p, cap, l + 1});
                t->channels_.push_back({p, Node{v}, cap, l + 1});
            }
        }
        t->finish();
        return t;
    }

    static std::shared_ptr<Topology> base(std::string_view spec, Family fam, std::uint64_t n) {
        if (n < 1) bad_spec(spec, "the size must be at least 1");
        check_processors(spec, n);
        if (fam == Family::complete) check_channels(spec, n * (n - 1));
        auto t = std::shared_ptr<Topology>(new Topology());
        t->spec_ = std::string(spec);
        t->family_ = fam;
        t->processors_ = static_cast<std::uint32_t>(n);
        std::uint32_t N = t->processors_;
        auto add = [&](std::uint32_t u, std::uint32_t v) {
            if (u != v) t->channels_.push_back({Node{u}, Node{v}, 1, 0});
        };
        if (fam == Family::complete) {
            for (std::uint32_t u = 0; u < N; ++u)
                for (std::uint32_t v = 0; v < N; ++v) add(u, v);
        } else {
            for (std::uint32_t u = 0; u + 1 < N; ++u) {
                add(u, u + 1);
                add(u + 1, u);
            }
            if (fam == Family::ring && N > 2) {
                add(N - 1, 0);
                add(0, N - 1);
            }
        }
        t->finish();
        return t;
    }

    static std::shared_ptr<Topology> product(std::string_view spec, Family fam,
                                             std::vector<std::shared_ptr<const Topology>> factors,
                                             bool lowest_first) {
        std::uint64_t n = 1, chans = 0;
        for (const auto& f : factors) {
            if (f->routers() != 0) bad_spec(spec, fmt::format("factor '{}' has routers; products take graphs of processors only", f->spec()));
            n *= f->processors();
            check_processors(spec, n);
        }
        for (const auto& f : factors) chans += n / f->processors() * f->channels().size();
        check_channels(spec, chans);
        auto t = std::shared_ptr<Topology>(new Topology());
        t->spec_ = std::string(spec);
        t->family_ = fam;
        t->processors_ = static_cast<std::uint32_t>(n);
        std::size_t k = factors.size();
        t->strides_.assign(k, 1);
        for (std::size_t i = k; i-- > 1;) t->strides_[i - 1] = t->strides_[i] * factors[i]->processors();
        for (const auto& f : factors) t->dims_.push_back(f->processors());
        for (std::size_t i = 0; i < k; ++i) t->route_order_.push_back(static_cast<std::uint32_t>(lowest_first ? k - 1 - i : i));
        t->channels_.reserve(chans);
        for (std::uint32_t v = 0; v < n; ++v) {
            for (std::size_t i = 0; i < k; ++i) {
                std::uint32_t c = v / t->strides_[i] % t->dims_[i];
                for (ChannelId fc : factors[i]->out_channels(Node{c})) {
                    const Channel& ch = factors[i]->channel(fc);
                    std::uint32_t w = v + (idx(ch.to) - c) * t->strides_[i];  // unsigned wrap is intended
                    t->channels_.push_back({Node{v}, Node{w}, ch.cap, 0});
                }
            }
        }
        t->factors_ = std::move(factors);
        t->finish();
        return t;
    }

    class GraphFile;  ///< the reader of a graph file (topology_graph.cpp)
    static std::shared_ptr<Topology> graph(std::string_view spec, std::string_view file, const RunLimits& limits);

    /// The wrapped butterfly of dimension d: processor (l, x), level l in 0 .. d-1 and row x in
    /// 0 .. 2^d - 1, is l 2^d + x; it is linked to (l + 1 mod d, x) (straight) and to
    /// (l + 1 mod d, x XOR 2^l) (cross). Routes: next-hop tables as for graphs.
    static std::shared_ptr<Topology> butterfly(std::string_view spec, std::uint64_t d) {
        if (d < 3 || d > 8) bad_spec(spec, "the dimension must be between 3 and 8 (d 2^d processors; below 3 links coincide)");
        auto t = std::shared_ptr<Topology>(new Topology());
        t->spec_ = std::string(spec);
        t->family_ = Family::butterfly;
        const std::uint32_t rows = 1u << d, D = static_cast<std::uint32_t>(d);
        t->processors_ = D * rows;
        t->channels_.reserve(4 * std::size_t{t->processors_});
        for (std::uint32_t l = 0; l < D; ++l)
            for (std::uint32_t x = 0; x < rows; ++x) {
                std::uint32_t u = l * rows + x, up = (l + 1) % D * rows;
                for (std::uint32_t v : {up + x, up + (x ^ (1u << l))}) {
                    t->channels_.push_back({Node{u}, Node{v}, 1, 0});
                    t->channels_.push_back({Node{v}, Node{u}, 1, 0});
                }
            }
        t->finish();
        next_hops(*t, spec);
        return t;
    }

    /// Next hops by BFS from every destination, ties to the lowest-numbered neighbour (graphs and
    /// butterflies). Throws InputError naming two nodes when the graph is not connected.
    /// `limits` polled per destination (LimitReached naming `where`).
    static void next_hops(Topology& t, std::string_view where, const RunLimits& limits = {});
};

}  // namespace collsched
