/** \file
 * The timing plan's two containers (runtime/timing.cpp): the multimap from (node, message) keys
 * to transfers that the plan is built on, and the event queue of the asynchronous run. Internal
 * to runtime/timing.cpp; a header of its own so that file stays within the house's sizes.
 */
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "support/hash.hpp"

namespace collsched {

namespace timing_internal {

/// A multimap from 64-bit keys to transfer indices, filled once, then sorted (by key, then
/// value) with each key's range hashed: hash maps of vectors took twice the time and the
/// memory on tables of a million transfers. In a named namespace: TimingPlan::Impl holds one,
/// and a field of a type local to this file is a warning under unity builds
/// (-Wsubobject-linkage).
class Index {
public:
    using Entry = std::pair<std::uint64_t, std::uint32_t>;
    void add(std::uint64_t k, std::uint32_t v) { kv_.emplace_back(k, v); }
    /// Sorts the entries and hashes each distinct key to its range: a lookup is one probe where
    /// two binary searches over the entries were 38 % of building the plan of NCCL's ring
    /// allgather on 1,024 GPUs (9.4 million transfers, a cache miss per halving).
    void build() {
        std::sort(kv_.begin(), kv_.end());
        std::size_t distinct = 0;
        for (std::size_t i = 0; i < kv_.size(); ++i) distinct += i == 0 || kv_[i].first != kv_[i - 1].first;
        slots_.assign(std::bit_ceil(std::max<std::size_t>(16, 2 * distinct)), Slot{});
        for (std::size_t i = 0; i < kv_.size();) {
            std::size_t end = i + 1;
            while (end < kv_.size() && kv_[end].first == kv_[i].first) ++end;
            Slot& s = slots_[probe(kv_[i].first)];
            s = {kv_[i].first, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(end)};
            i = end;
        }
    }
    /// The positions [first, last) of key k's entries, values increasing.
    std::pair<std::size_t, std::size_t> find(std::uint64_t k) const {
        if (slots_.empty()) return {0, 0};
        const Slot& s = slots_[probe(k)];
        return s.key == k ? std::pair<std::size_t, std::size_t>{s.first, s.last} : std::pair<std::size_t, std::size_t>{0, 0};
    }
    std::uint32_t value(std::size_t pos) const { return kv_[pos].second; }
    std::uint64_t key(std::size_t pos) const { return kv_[pos].first; }
    std::size_t size() const { return kv_.size(); }

private:
    static constexpr std::uint64_t empty = ~std::uint64_t{0};  // no key: (node, part) < 2^64 - 1
    struct Slot {
        std::uint64_t key = empty;
        std::uint32_t first = 0, last = 0;
    };
    /// The slot holding k, or the empty one where it would go (open addressing, at most half full).
    std::size_t probe(std::uint64_t k) const {
        const std::size_t mask = slots_.size() - 1;
        std::size_t i = murmur3_fmix64(k) & mask;
        while (slots_[i].key != empty && slots_[i].key != k) i = (i + 1) & mask;
        return i;
    }
    std::vector<Entry> kv_;
    std::vector<Slot> slots_;
};

/// A min-heap of four children a node (by `>`): fewer levels than std::priority_queue's two, each
/// level's children side by side in memory. Elements strictly ordered by `>` (as the events are)
/// come out in the same order from either.
template <class T>
class QuadHeap {
public:
    bool empty() const { return v_.empty(); }
    const T& top() const { return v_.front(); }
    void push(const T& x) {
        std::size_t i = v_.size();
        v_.push_back(x);
        while (i > 0) {
            const std::size_t up = (i - 1) / 4;
            if (!(v_[up] > x)) break;
            v_[i] = v_[up];
            i = up;
        }
        v_[i] = x;
    }
    /// Bottom-up (Floyd): the hole at the top goes down to a leaf along the least children, then
    /// the last element goes up from there (it mostly belongs near the leaves): a comparison of
    /// four children a level instead of five.
    void pop() {
        const T x = v_.back();
        v_.pop_back();
        const std::size_t n = v_.size();
        if (n == 0) return;
        std::size_t i = 0;
        for (;;) {
            const std::size_t first = 4 * i + 1;
            if (first >= n) break;
            std::size_t least = first;
            const std::size_t end = std::min(first + 4, n);
            for (std::size_t c = first + 1; c < end; ++c) least = v_[least] > v_[c] ? c : least;
            v_[i] = v_[least];
            i = least;
        }
        while (i > 0) {
            const std::size_t up = (i - 1) / 4;
            if (!(v_[up] > x)) break;
            v_[i] = v_[up];
            i = up;
        }
        v_[i] = x;
    }

private:
    std::vector<T> v_;
};

}  // namespace timing_internal

}  // namespace collsched
