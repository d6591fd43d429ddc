// FlatMap (compiler/core/flat_map.hpp): against std::unordered_map on a seeded random mix of
// inserts, finds and erases, with growth and the wrap-around of probe runs.
#include <doctest/doctest.h>

#include <random>
#include <unordered_map>

#include "compiler/core/flat_map.hpp"

using namespace collsched;

TEST_CASE("FlatMap: the same answers as std::unordered_map under inserts and erases") {
    for (std::uint64_t keys : {8u, 100u, 5000u}) {  // few keys: long probe runs that wrap around
        CAPTURE(keys);
        std::mt19937_64 g(keys);
        FlatMap map(16);
        std::unordered_map<std::uint64_t, std::uint32_t> ref;
        for (int op = 0; op < 200000; ++op) {
            const std::uint64_t k = g() % keys * 0x100000001ull;  // (message, node)-like keys
            switch (g() % 3) {
                case 0: {
                    auto v = static_cast<std::uint32_t>(g() % 1000);
                    auto [got, inserted] = map.find_or_insert(k, [&] { return v; });
                    auto [it, ref_inserted] = ref.try_emplace(k, v);
                    CHECK(inserted == ref_inserted);
                    CHECK(got == it->second);
                    break;
                }
                case 1:
                    map.erase(k);
                    ref.erase(k);
                    break;
                default: {
                    auto it = ref.find(k);
                    CHECK(map.find(k) == (it == ref.end() ? FlatMap::none : it->second));
                    if (it != ref.end()) {
                        map.at(k) = it->second = 7;
                        CHECK(map.find(k) == 7);
                    }
                }
            }
            CHECK(map.size() == ref.size());
        }
        for (const auto& [k, v] : ref) CHECK(map.find(k) == v);
    }
}
