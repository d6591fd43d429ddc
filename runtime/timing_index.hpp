/** \file
 * The timing plan's containers (runtime/timing.cpp): the multimap from (node, message) keys
 * to transfers that the plan is built on, the event queue of the asynchronous run, and when each
 * resource is busy. Internal
 * to runtime/timing.cpp; a header of its own so that file stays within the house's sizes.
 */
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
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

/// A monotone priority queue of events {double time; uint64_t key} ordered by (time, key) (a radix
/// heap): every element pushed is above the last one popped, as the asynchronous run's arrivals are
/// (an arrival comes after the event that started its transfer, with a larger key at an equal time).
/// Bucket b > 0 holds the elements whose (time bits, key) first differ from the last popped at bit
/// b - 1 from below (times are never negative, and such doubles are ordered as their bits are);
/// pushing appends to a bucket, popping scans the lowest bucket for its least element and spreads
/// the rest below. The same order as QuadHeap's, without a deep heap's cache misses (on 128 GPUs
/// about 100,000 arrivals wait at once).
template <class T>
class RadixQueue {
public:
    bool empty() const { return size_ == 0; }
    /// The least element (`empty()` false); found once, then kept until a smaller one is pushed or it is popped.
    const T& top() {
        if (!least_) find_least();
        return buckets_[lb_][li_];
    }
    void push(const T& x) {
        const std::size_t b = bucket(x);
        buckets_[b].push_back(x);
        ++size_;
        if (least_ && less(x, buckets_[lb_][li_])) lb_ = b, li_ = buckets_[b].size() - 1;
    }
    /// Removes top().
    void pop() {
        if (!least_) find_least();
        std::vector<T>& from = buckets_[lb_];
        last_time_ = std::bit_cast<std::uint64_t>(from[li_].time), last_key_ = from[li_].key;
        from[li_] = from.back();
        from.pop_back();
        --size_;
        least_ = false;
        if (lb_ == 0) return;
        // the rest of its bucket now differ from the last popped below bit lb_ - 1 (the buckets above keep theirs)
        std::vector<T> moving;
        moving.swap(from);
        for (const T& x : moving) buckets_[bucket(x)].push_back(x);
        moving.clear();
        moving.swap(from);  // keep its capacity
    }

private:
    static bool less(const T& a, const T& b) {
        const std::uint64_t x = std::bit_cast<std::uint64_t>(a.time), y = std::bit_cast<std::uint64_t>(b.time);
        return x < y || (x == y && a.key < b.key);
    }
    std::size_t bucket(const T& x) const {
        const std::uint64_t t = std::bit_cast<std::uint64_t>(x.time) ^ last_time_, k = x.key ^ last_key_;
        if (t) return 128 - static_cast<std::size_t>(std::countl_zero(t));
        if (k) return 64 - static_cast<std::size_t>(std::countl_zero(k));
        return 0;
    }
    void find_least() {
        std::size_t b = 0;
        while (buckets_[b].empty()) ++b;
        std::size_t best = 0;
        for (std::size_t i = 1; i < buckets_[b].size(); ++i)
            if (less(buckets_[b][i], buckets_[b][best])) best = i;
        lb_ = b, li_ = best, least_ = true;
    }

    std::vector<T> buckets_[129];
    std::size_t size_ = 0;
    std::uint64_t last_time_ = 0, last_key_ = 0;  // the last element popped (all zero: none yet; times are >= 0)
    bool least_ = false;  // lb_, li_: where the least element is
    std::size_t lb_ = 0, li_ = 0;
};

/// When one resource (a channel, a group, a port) is busy: disjoint intervals sorted by start,
/// touching ones merged. A transfer takes the first gap from its ready time on that is long
/// enough on all its resources at once; on one resource, served in order of ready time, that is
/// first come first served (a gap can only lie before the ready time of the latest transfer).
/// The run takes transfers in order of ready time, and no transfer looks before its own: an
/// interval that ended before the ready time of a transfer that takes this resource can neither
/// hold a later transfer up nor touch one, so it is forgotten (`head_`: the first not forgotten;
/// the vector is compacted when most of it is). The inserts then move only the intervals still
/// ahead (1 GiB allreduce on 128 GPUs: up to 480 intervals per resource, one insert per transfer).
class BusyList {
public:
    /// The earliest t >= from with [t, t + d) free here.
    double first_free(double from, double d) const {
        if (from >= end_) return from;  // after the last (the common case: no search, nor a load from the intervals)
        // the first interval that ends after `from`: `from` is at or after the ready time being served, so it is most
        // often among the first not forgotten; galloping from there, then a binary search in the last stride
        const std::size_t n = iv_.size();
        std::size_t lo = head_, hi = head_;
        for (std::size_t stride = 1; hi < n && !(from < iv_[hi].end); stride *= 2) lo = hi + 1, hi += stride;
        auto it = std::upper_bound(iv_.begin() + static_cast<std::ptrdiff_t>(lo), iv_.begin() + static_cast<std::ptrdiff_t>(std::min(hi + 1, n)), from,
                                   [](double x, const Interval& v) { return x < v.end; });
        double t = from;
        for (; it != iv_.end(); ++it) {
            if (t + d <= it->start) return t;
            t = std::max(t, it->end);
        }
        return t;
    }
    /// Takes [a, b); `now` (at most a) is the ready time of the transfer taking it: no later call asks before it.
    void take(double a, double b, double now) {
        if (b <= a) return;
        while (head_ < iv_.size() && iv_[head_].end < now) ++head_;
        if (head_ >= 64 && head_ * 2 >= iv_.size()) {
            iv_.erase(iv_.begin(), iv_.begin() + static_cast<std::ptrdiff_t>(head_));
            head_ = 0;
        }
        if (head_ == iv_.size() || a > iv_.back().end) {  // after the last, apart from it
            iv_.push_back(Interval{a, b});
            end_ = b;
            return;
        }
        if (a == iv_.back().end) {  // touching the last
            iv_.back().end = end_ = b;
            return;
        }
        const auto first = iv_.begin() + static_cast<std::ptrdiff_t>(head_);
        auto it = std::lower_bound(first, iv_.end(), a, [](const Interval& v, double x) { return v.start < x; });
        it = iv_.insert(it, Interval{a, b});
        // merge with the neighbours it touches (a forgotten one ended before `now`, so before a: it never does)
        if (auto next = it + 1; next != iv_.end() && next->start <= it->end) {
            it->end = std::max(it->end, next->end);
            iv_.erase(next);
        }
        if (it != iv_.begin() + static_cast<std::ptrdiff_t>(head_)) {
            auto prev = it - 1;
            if (prev->end >= it->start) {
                prev->end = std::max(prev->end, it->end);
                iv_.erase(it);
            }
        }
        end_ = iv_.back().end;
    }

private:
    struct Interval {
        double start, end;
    };
    std::vector<Interval> iv_;
    std::size_t head_ = 0;
    double end_ = -std::numeric_limits<double>::infinity();  // iv_.back().end (none: below every time)
};

/// The relay rule (docs/time.md, "Asynchronous time", rule 1; NCCL's PXN u -> d -> w forwards what came from u): of a
/// processor's copies of a base part, positions 0 .. n-1 in step order (`step_of(i)`), the first arrived as its own and
/// each later one, in a later step than the first's, is passed on once, by the processor's departures of the part in a
/// later step, in table order. `next` is the part's state (0 before its first departure). The position of the copy the
/// departure of step `step` waits for, or n when none is left for it (it waits for the first copy). One rule for the run
/// (AsyncRun) and the chain that bounds it (chain_latency).
template <class StepOf>
std::size_t relayed_copy(std::size_t n, std::size_t& next, std::uint64_t step, StepOf step_of) {
    if (n < 2) return n;
    if (next == 0)
        for (next = 1; next < n && step_of(next) == step_of(0);) ++next;
    if (next >= n || step_of(next) >= step) return n;
    return next++;
}

/// The copy rule at a router that forwards copies (docs/time.md, "Routers and copies"): of a router's copies of a key,
/// positions 0 .. n-1 in step order (`step_of(i)`), a departure of step `step` takes the next not yet taken (`taken` of
/// them so far, the last by a departure of step `last`) that arrived in an earlier step; where departures of one step
/// share a copy (`shares`: multicast=routers at a switch that multicasts) a later one of that step takes the one its first
/// took. The position of the copy, or n when none is left (it waits for the first copy). One rule for the run
/// (AsyncRun::takes_copy) and the chain that bounds it (chain_latency).
template <class Count, class Step, class StepOf>
std::size_t matched_copy(std::size_t n, Count& taken, Step& last, Step step, bool shares, StepOf step_of) {
    if (taken > 0 && last == step && shares) return taken - 1;
    if (taken >= n || step_of(std::size_t(taken)) >= step) return n;
    last = step;
    return taken++;
}

}  // namespace timing_internal

}  // namespace collsched
