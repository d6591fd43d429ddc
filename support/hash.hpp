/** \file
 * The 64-bit mixing function the code shares: MurmurHash3's finalizer (Appleby, fmix64), a
 * bijection whose every output bit depends on every input bit. Used for hash-table slots
 * (compiler/table: the composites' index) and for seeded orders (the translates' packing).
 */
#pragma once

#include <cstdint>

namespace collsched {

inline std::uint64_t murmur3_fmix64(std::uint64_t a) {
    a ^= a >> 33;
    a *= 0xff51afd7ed558ccdULL;
    a ^= a >> 33;
    a *= 0xc4ceb9fe1a85ec53ULL;
    return a ^ (a >> 33);
}

}  // namespace collsched
