// The streamed replay (StreamSimulator, compiler/lower/stream.hpp): the table arrives step by step.
//
// There is no table to assign slots from. Processors: a slot is made when a (processor,
// message) pair is first touched (dense per-message slots, else a hash map) and kept to the
// end for the completeness check. Routers (only replicate=no streams, so router state is the
// copies in flight): a step-to-step merge. The copies a router still holds after step s-1 are
// kept sorted by (router, message) in `carry_`; step s's router endpoints are radix-sorted by
// the same key and merged with them, and the merged list numbers the step's router slots, so
// router state is read in sequence instead of probed at random; after the step the slots that
// still hold a copy become the next `carry_`. The rule checks are the same code as a
// whole-table run (sim_hop.cpp).
#include "runtime/sim_replay.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/error.hpp"
#include <bit>

namespace collsched::sim {

void Simulator::stream_begin() {
    streamed_ = true;
    COLLSCHED_ASSERT(!wormhole_ && !replicate_);
    allocate_state();
    // Processor slots: when the message space is dense enough, slots 2m and 2m+1 belong to
    // the first two processors that touch message m (the holders of a message with one
    // origin are few: EBFT all-to-all has exactly two), found by comparing `proc_node_`
    // instead of hashing; a third processor goes to the hash map, whose slots follow from
    // `pool_base_` = 2M on. Router slots come after all processor slots, renumbered each step.
    const std::uint64_t M = msgs_.size();
    if (M <= dense_processor_limit) {
        pool_base_ = static_cast<std::uint32_t>(2 * M);
        proc_node_.assign(2 * M, never);
        held_.assign(2 * M, never);
        stock_.assign(2 * M, 0);
    }
    proc_end_ = held_.size();
    message_bits_ = std::max(1, static_cast<int>(std::bit_width(M)));
    const int bits = message_bits_ + std::max(1, static_cast<int>(std::bit_width(std::max<std::uint32_t>(R_, 1))));
    radix_passes_ = (bits + 12) / 13;  // digits of at most 13 bits: 8192 buckets (64 KiB of counts) stay in L2
    radix_digit_ = (bits + radix_passes_ - 1) / radix_passes_;
    if (options_.trace) {
        names_.reserve(topo_.nodes());
        for (std::uint32_t v = 0; v < topo_.nodes(); ++v) names_.push_back(topo_.node_name(Node{v}));
    }
}

/// One step (sorted by channel, message). False once the run has halted.
bool Simulator::stream_step(Step s, std::span<const Transfer> step) {
    rep_.transfers += step.size();
    rep_.steps = s;
    if (halted_) return false;
    tr_ = step;
    const std::size_t n = step.size();
    slots_.resize(n);
    held_.resize(proc_end_);  // the last step's router slots: their state is in carry_
    stock_.resize(proc_end_);
    // Processor endpoints get their slots now (the dense slots are prefetched a few transfers
    // ahead so the cache misses overlap); router endpoints become merge requests.
    constexpr std::size_t ahead = 16;
    auto prefetch = [&](std::size_t i) {
        if (pool_base_ == 0) return;
        const Channel& ch = topo_.channel(step[i].channel);
        for (std::uint32_t v : {idx(ch.from), idx(ch.to)})
            if (processor(v)) {
                const std::size_t d = 2 * std::size_t{idx(step[i].message)};
                __builtin_prefetch(&proc_node_[d]);
                __builtin_prefetch(&held_[d]);
            }
    };
    for (std::size_t i = 0; i < std::min(n, ahead); ++i) prefetch(i);
    requests_.clear();
    for (std::size_t i = 0; i < n; ++i) {
        if (i + ahead < n) prefetch(i + ahead);
        const Channel& ch = topo_.channel(step[i].channel);
        const MessageId m = step[i].message;
        const auto at = static_cast<std::uint32_t>(2 * i);
        if (processor(idx(ch.from))) slots_[i].src = stream_slot(idx(ch.from), m);
        else requests_.push_back({router_key(idx(ch.from), m), at});
        if (processor(idx(ch.to))) slots_[i].dst = stream_slot(idx(ch.to), m);
        else requests_.push_back({router_key(idx(ch.to), m), at + 1});
    }
    proc_end_ = held_.size();
    sort_requests();
    merge_routers();
    if (!hop_step(0, n, s)) {
        halted_ = true;
        return false;
    }
    // The router slots that still hold a copy are the copies in flight (replicate=no).
    carry_.clear();
    for (std::size_t j = 0; j < router_keys_.size(); ++j) {
        const std::size_t slot = proc_end_ + j;
        if (stock_[slot] > 0) carry_.push_back({router_keys_[j], held_[slot], stock_[slot]});
    }
    return true;
}

SimReport Simulator::stream_finish() {
    rep_.cost = static_cast<double>(rep_.steps);
    const bool ran_through = !halted_ && hop_end();
    finish(ran_through);
    return std::move(rep_);
}

/// requests_ sorted by key: an LSD radix sort (a few passes of at most 13 bits over the bits
/// router and message take), stable, through one buffer the size of the step.
void Simulator::sort_requests() {
    if (requests_.size() < 64) {
        std::sort(requests_.begin(), requests_.end(), [](const RouterRequest& a, const RouterRequest& b) { return a.key < b.key; });
        return;
    }
    const std::size_t buckets = std::size_t{1} << radix_digit_;
    const std::uint64_t mask = buckets - 1;
    request_buf_.resize(requests_.size());
    count_.resize(buckets);
    for (int pass = 0; pass < radix_passes_; ++pass) {
        const int shift = pass * radix_digit_;
        std::fill(count_.begin(), count_.end(), 0);
        for (const RouterRequest& r : requests_) ++count_[(r.key >> shift) & mask];
        std::size_t sum = 0;
        for (std::size_t& c : count_) sum += std::exchange(c, sum);
        for (const RouterRequest& r : requests_) request_buf_[count_[(r.key >> shift) & mask]++] = r;
        requests_.swap(request_buf_);
    }
}

/// Numbers the step's router slots (from proc_end_ on) by merging the sorted requests with
/// the copies carried from the step before: every key of either gets one slot, in key order,
/// with the carried state or (never, 0); each request's transfer gets its slot.
void Simulator::merge_routers() {
    router_keys_.clear();
    std::size_t c = 0;
    auto open = [&](std::uint64_t key, std::uint32_t held, std::uint32_t stock) {
        router_keys_.push_back(key);
        held_.push_back(held);
        stock_.push_back(stock);
    };
    if (proc_end_ + requests_.size() + carry_.size() >= never)
        throw InputError("the streamed table touches more than 2^32 (node, message) pairs in one step; too large to simulate");
    for (std::size_t r = 0; r < requests_.size();) {
        const std::uint64_t key = requests_[r].key;
        for (; c < carry_.size() && carry_[c].key < key; ++c) open(carry_[c].key, carry_[c].held, carry_[c].stock);
        if (c < carry_.size() && carry_[c].key == key) {
            open(key, carry_[c].held, carry_[c].stock);
            ++c;
        } else {
            open(key, never, 0);
        }
        const auto slot = static_cast<std::uint32_t>(held_.size() - 1);
        for (; r < requests_.size() && requests_[r].key == key; ++r) {
            const std::uint32_t at = requests_[r].at;
            (at & 1 ? slots_[at >> 1].dst : slots_[at >> 1].src) = slot;
        }
    }
    for (; c < carry_.size(); ++c) open(carry_[c].key, carry_[c].held, carry_[c].stock);
}

/// The slot of processor v for message m, made on first touch.
std::uint32_t Simulator::stream_slot(std::uint32_t v, MessageId m) {
    // Whether v starts with m: only asked for a new slot (it divides, through Messages::key).
    auto initial = [&]() -> Step { return table_.collective.initial(msgs_, m) && idx(msgs_.origin(m)) == v ? 0 : never; };
    if (pool_base_ > 0) {
        const std::uint32_t d = 2 * idx(m);
        for (std::uint32_t j = d; j < d + 2; ++j) {
            if (proc_node_[j] == v) return j;
            if (proc_node_[j] == never) {
                proc_node_[j] = v;
                held_[j] = initial();
                return j;
            }
        }
    }
    return proc_map_
        .find_or_insert(stream_key(v, m),
                        [&] {
                            const auto slot = static_cast<std::uint32_t>(held_.size());
                            if (slot == never)
                                throw InputError("the streamed table touches more than 2^32 (node, message) pairs; too large to simulate");
                            held_.push_back(initial());
                            stock_.push_back(0);
                            return slot;
                        })
        .first;
}

/// The slot of (v, m) if it has one, else `never`: a processor's, or a router's among the
/// last step's router slots (the copies it holds after the last step).
std::uint32_t Simulator::stream_find(std::uint32_t v, MessageId m) const {
    if (!processor(v)) {
        const std::uint64_t key = router_key(v, m);
        auto it = std::lower_bound(router_keys_.begin(), router_keys_.end(), key);
        if (it == router_keys_.end() || *it != key) return never;
        return static_cast<std::uint32_t>(proc_end_ + static_cast<std::size_t>(it - router_keys_.begin()));
    }
    if (pool_base_ > 0) {
        const std::uint32_t d = 2 * idx(m);
        if (proc_node_[d] == v) return d;
        if (proc_node_[d + 1] == v) return d + 1;
        if (proc_node_[d + 1] == never) return never;
    }
    return proc_map_.find(stream_key(v, m));
}

}  // namespace collsched::sim
