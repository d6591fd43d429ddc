#pragma once
// The regroup of a sorted table by message, shared by the direct checker's per-message passes
// (verifier/check/direct.cpp) and tested against a plain sort (tests/verifier/test_direct.cpp).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "compiler/table/send_table.hpp"

namespace collsched::detail {

/// One transfer of a message, as its per-message pass reads it.
struct Hop {
    Step step;
    ChannelId channel;
    friend bool operator==(const Hop&, const Hop&) = default;
};

/// The plan and the buffers of for_each_message, kept by the caller. The message ids are cut into
/// `buckets` buckets of `width` = 2^shift consecutive ids; at[b + 1] counts bucket b's transfers,
/// counted by the caller with add() during a pass over the table it makes anyway (the direct
/// checker's by-step pass), so the regroup needs no counting pass of its own.
struct MessageGroups {
    bool sort = false;  ///< regroup by a stable sort of indices instead (see plan)
    int shift = 0;
    int step_bits = 0;
    std::uint64_t buckets = 0, width = 0;
    std::vector<std::uint64_t> at;
    std::vector<std::uint64_t> packed;  ///< the table by bucket: (offset in the bucket, step, channel) in 8 bytes
    std::vector<Hop> hops;              ///< the sort path: the table by message

    /// `space` message ids, N transfers, steps up to `max_step`, channel ids below `channels`.
    /// A sparse message space (few transfers of many possible ids), a record that does not fit
    /// in 8 bytes, or `force_sort` (for the test) take the sort.
    void plan(std::uint64_t space, std::uint64_t N, Step max_step, std::uint64_t channels, bool force_sort = false) {
        space = std::max<std::uint64_t>(space, 1);
        const int bits = std::bit_width(space - 1);
        shift = bits > 11 ? bits - 11 : 0;
        buckets = ((space - 1) >> shift) + 1;
        width = std::uint64_t{1} << shift;
        step_bits = std::bit_width(max_step);
        const int channel_bits = std::bit_width(std::max<std::uint64_t>(channels, 1) - 1);
        sort = force_sort || space > std::max<std::uint64_t>(1u << 24, 2 * N) || shift + step_bits + channel_bits > 64;
        if (!sort) at.assign(buckets + 1, 0);
    }
    void add(MessageId m) { ++at[(idx(m) >> shift) + 1]; }
};

/// The per-bucket buffers of a visit of the buckets: one per thread.
struct BucketScratch {
    std::vector<Hop> hops;  ///< one bucket by message
    std::vector<std::uint64_t> count;
};

/// The first pass of the regroup (see for_each_message): the bucket offsets from the counts, and
/// the table distributed into the buckets. Not for the sort path. `poll` is called every 2^20
/// transfers (the checker's deadline: on 1,024 GPUs the pass writes 18.8 million at random).
template <class Poll = void (*)()>
inline void regroup(const std::vector<Transfer>& xs, MessageGroups& g, Poll&& poll = [] {}) {
    const int shift = g.shift, cs = shift + g.step_bits;
    const std::uint64_t low = g.width - 1;
    std::vector<std::uint64_t>& at = g.at;
    for (std::uint64_t b = 0; b < g.buckets; ++b) at[b + 1] += at[b];
    g.packed.resize(xs.size());
    std::vector<std::uint64_t> next(at.begin(), at.end() - 1);
    for (std::size_t i = 0; i < xs.size(); ++i) {
        if ((i & ((std::size_t{1} << 20) - 1)) == 0) poll();
        const Transfer& x = xs[i];
        g.packed[next[idx(x.message) >> shift]++] =
            (idx(x.message) & low) | (std::uint64_t{x.step} << shift) | (cs < 64 ? std::uint64_t{idx(x.channel)} << cs : 0);
    }
}

/// The bucket that splits the regrouped table into two halves of about equal transfers (buckets
/// [0, split) and [split, buckets)): where two threads divide the per-message work.
inline std::uint64_t half_split(const MessageGroups& g) {
    const std::uint64_t half = g.at[g.buckets] / 2;
    return static_cast<std::uint64_t>(std::lower_bound(g.at.begin(), g.at.begin() + static_cast<std::ptrdiff_t>(g.buckets), half) - g.at.begin());
}

/// The second pass for buckets [b0, b1) of a regrouped table: each bucket, small enough for L2,
/// counting-sorted by message and handed to f while it is in cache. Reads g only, so two threads
/// with their own scratch may visit disjoint ranges.
template <class F>
void for_each_message_in(const MessageGroups& g, std::uint64_t b0, std::uint64_t b1, BucketScratch& scratch, F&& f) {
    const int shift = g.shift, cs = shift + g.step_bits;
    const std::uint64_t width = g.width, low = width - 1;
    const std::uint64_t step_mask = (std::uint64_t{1} << g.step_bits) - 1;
    std::uint64_t largest = 0;
    for (std::uint64_t b = b0; b < b1; ++b) largest = std::max(largest, g.at[b + 1] - g.at[b]);
    scratch.hops.resize(largest);
    scratch.count.resize(width + 1);
    for (std::uint64_t b = b0; b < b1; ++b) {
        const std::uint64_t* first = g.packed.data() + g.at[b];
        const std::uint64_t* last = g.packed.data() + g.at[b + 1];
        if (first == last) continue;
        const auto base = static_cast<std::uint32_t>(b << shift);
        std::vector<std::uint64_t>& count = scratch.count;
        std::fill(count.begin(), count.end(), 0);
        for (const std::uint64_t* p = first; p != last; ++p) ++count[(*p & low) + 1];
        for (std::uint64_t k = 0; k < width; ++k) count[k + 1] += count[k];
        for (const std::uint64_t* p = first; p != last; ++p)
            scratch.hops[count[*p & low]++] = {static_cast<Step>((*p >> shift) & step_mask),
                                               ChannelId{static_cast<std::uint32_t>(cs < 64 ? *p >> cs : 0)}};
        // count[k] is now the end of message base + k's group, and the start of the next one's
        std::uint64_t begin = 0;
        for (std::uint64_t k = 0; k < width; ++k) {
            const std::uint64_t end = count[k];
            if (end != begin) f(MessageId{base + static_cast<std::uint32_t>(k)}, scratch.hops.data() + begin, scratch.hops.data() + end);
            begin = end;
        }
    }
}

/// Calls f(m, first, last) for every message m that has transfers, in increasing id order, with
/// its transfers as (step, channel) pairs in table order; g was planned and counted.
///
/// The regroup by message is the pass of the checker that writes at random: done as one counting
/// sort it writes each transfer into one of up to `space` places, a cache miss per transfer once
/// the table outgrows the cache (EBFT n = 1024: a million places, 150 MB). Done here in two
/// stable passes instead: the transfers are distributed into at most 2048 buckets of consecutive
/// message ids (2048 write positions, all in cache), packed in 8 bytes (the id's offset in its
/// bucket, the step, the channel); then each bucket, small enough for L2, is counting-sorted by
/// message and handed out while it is in cache. The table is read once, the packed copy written
/// and read once, each in sequence, and the random writes stay within a bucket.
template <class F>
void for_each_message(const std::vector<Transfer>& xs, MessageGroups& g, F&& f) {
    const std::uint64_t N = xs.size();
    if (N == 0) return;
    if (g.sort) {
        std::vector<std::uint64_t> order(N);
        for (std::uint64_t i = 0; i < N; ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return idx(xs[a].message) < idx(xs[b].message); });
        g.hops.resize(N);
        for (std::uint64_t i = 0; i < N; ++i) g.hops[i] = {xs[order[i]].step, xs[order[i]].channel};
        for (std::uint64_t i = 0; i < N;) {
            std::uint64_t j = i + 1;
            while (j < N && xs[order[j]].message == xs[order[i]].message) ++j;
            f(xs[order[i]].message, g.hops.data() + i, g.hops.data() + j);
            i = j;
        }
        return;
    }
    regroup(xs, g);
    BucketScratch scratch;
    for_each_message_in(g, 0, g.buckets, scratch, f);
}

}  // namespace collsched::detail
