/** \file
 * What a reduction's value is made of (runtime/timing.cpp, runtime/timing_chain.cpp): the contributors
 * and chunk of a value-like message, and whether one value may be part of another. Internal to the
 * time model; a header of its own so that both files read the same rule.
 */
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/table/collective.hpp"

namespace collsched::timing_internal {

/// The contributors and chunk of a value-like message (a(s), a(i..j), a partial): the data a
/// reduction combines, as a view (no copy: the plan asks it for every pair of a sender's value and
/// an earlier arrival of the same chunk). Contributors: the sorted `list` of a partial, else the
/// range lo..hi. nullopt for other messages.
struct ValueSet {
    const std::vector<std::uint32_t>* list = nullptr;  // a partial's sources (sorted); null: the range
    std::uint32_t lo = 0, hi = 0;
    std::uint32_t chunk = 0;
};

inline std::optional<ValueSet> value_set(const Messages& ms, MessageId m) {
    if (ms.is_composite(m)) {
        const Composite& c = ms.composite(m);
        if (c.kind == MessageKind::partial) return ValueSet{&c.sources, 0, 0, c.lo};
        if (c.kind == MessageKind::combined) return ValueSet{nullptr, c.lo, c.hi, 0};
        return std::nullopt;
    }
    const MessageKey k = ms.key(m);
    if (k.kind == MessageKind::value) return ValueSet{nullptr, k.src, k.src, k.chunk};
    return std::nullopt;
}

/// a's contributors a subset of b's.
inline bool subset(const ValueSet& a, const ValueSet& b) {
    if (!a.list && !b.list) return b.lo <= a.lo && a.hi <= b.hi;
    if (a.list && !b.list) return a.list->empty() || (b.lo <= a.list->front() && a.list->back() <= b.hi);
    if (a.list) return std::includes(b.list->begin(), b.list->end(), a.list->begin(), a.list->end());
    // the range a.lo..a.hi within b's sorted list: every value of it, in order from a.lo
    auto it = std::lower_bound(b.list->begin(), b.list->end(), a.lo);
    std::uint64_t want = a.lo;
    for (; it != b.list->end() && want <= a.hi; ++it)
        if (*it == want) ++want;
        else if (*it > want) return false;
    return want > a.hi;
}

}  // namespace collsched::timing_internal
