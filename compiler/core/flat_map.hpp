/** \file
 * A flat hash map from 64-bit keys to 32-bit values, for the hot paths that look up (message,
 * node) pairs by the tens of millions: the streamed simulator's state and the lowering's check
 * that a send moves data its source holds (E046). std::unordered_map allocates a node per entry
 * (about 60 bytes and a cache miss more per lookup); this keeps key and value together in one
 * 16-byte entry of one array, with linear probing at load <= 1/2 and backward-shift deletion,
 * so a map that is filled and emptied step after step keeps no tombstones.
 */
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace collsched {

class FlatMap {
public:
    /// The one key that cannot be stored (it marks free entries).
    static constexpr std::uint64_t empty = std::numeric_limits<std::uint64_t>::max();
    static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

    explicit FlatMap(std::size_t capacity = 1024) { rehash(std::bit_ceil(std::max<std::size_t>(capacity, 16))); }

    std::size_t size() const { return size_; }
    /// Makes room for `n` entries without rehashing.
    void reserve(std::size_t n) {
        if (2 * n > table_.size()) rehash(std::bit_ceil(2 * n));
    }
    void prefetch(std::uint64_t key) const { __builtin_prefetch(&table_[home(key)]); }

    /// The value stored for `key`, or `none`.
    std::uint32_t find(std::uint64_t key) const {
        for (std::size_t i = home(key);; i = (i + 1) & mask_) {
            if (table_[i].key == key) return table_[i].value;
            if (table_[i].key == empty) return none;
        }
    }
    /// The value of `key`, which must be present, for update.
    std::uint32_t& at(std::uint64_t key) {
        std::size_t i = home(key);
        while (table_[i].key != key) i = (i + 1) & mask_;
        return table_[i].value;
    }
    /// The value of `key`; when absent, stores make() first. Returns (value, inserted).
    template <class Make>
    std::pair<std::uint32_t, bool> find_or_insert(std::uint64_t key, Make&& make) {
        if (2 * (size_ + 1) > table_.size()) rehash(2 * table_.size());
        std::size_t i = home(key);
        for (; table_[i].key != empty; i = (i + 1) & mask_)
            if (table_[i].key == key) return {table_[i].value, false};
        table_[i] = {key, make()};
        ++size_;
        return {table_[i].value, true};
    }
    void erase(std::uint64_t key) {
        std::size_t i = home(key);
        while (table_[i].key != key) {
            if (table_[i].key == empty) return;
            i = (i + 1) & mask_;
        }
        // Backward shift: later entries of the probe run move into the hole unless their home
        // position lies cyclically in (hole, here].
        for (std::size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
            if (table_[j].key == empty) break;
            const std::size_t h = home(table_[j].key);
            if (((j - h) & mask_) >= ((j - i) & mask_)) {
                table_[i] = table_[j];
                i = j;
            }
        }
        table_[i].key = empty;
        --size_;
    }

private:
    struct Entry {
        std::uint64_t key;
        std::uint32_t value;
    };
    std::size_t home(std::uint64_t key) const { return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }
    void rehash(std::size_t capacity) {
        std::vector<Entry> old = std::move(table_);
        table_.assign(capacity, {empty, 0});
        mask_ = capacity - 1;
        shift_ = 64 - std::countr_zero(capacity);
        size_ = 0;
        for (const Entry& e : old)
            if (e.key != empty) find_or_insert(e.key, [&] { return e.value; });
    }

    std::vector<Entry> table_;
    std::size_t mask_ = 0, size_ = 0;
    int shift_ = 64;
};

}  // namespace collsched
