// support/budget.hpp: deadlines, memory budgets, sizes, freeing in the background.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "support/budget.hpp"
#include "support/error.hpp"

using namespace collsched;

TEST_CASE("budget: a deadline gives every call at most what is left") {
    CHECK(Deadline().none());
    CHECK(Deadline::after(0).none());
    CHECK(Deadline::after(-1).none());
    CHECK_FALSE(Deadline().passed());
    CHECK(Deadline().for_call() == 0);     // no limit at all
    CHECK(Deadline().for_call(5) == 5);    // only the per-call cap
    Deadline d = Deadline::after(100);
    CHECK_FALSE(d.none());
    CHECK_FALSE(d.passed());
    CHECK(d.left() <= 100);
    CHECK(d.left() > 90);
    CHECK(d.for_call(5) == 5);
    CHECK(d.for_call() <= 100);
    CHECK(d.for_call() > 90);
    CHECK(d.min(Deadline()).when() == d.when());
    CHECK(Deadline().min(d).when() == d.when());
    Deadline soon = Deadline::after(0.001);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(soon.passed());
    CHECK(soon.left() == 0);
    CHECK(soon.for_call(5, 0.01) == 0.01);  // never 0, which solvers read as "no limit"
}

TEST_CASE("budget: memory limits and the resident size") {
    CHECK(resident_memory() > 0);
    CHECK(peak_resident_memory() >= resident_memory() / 2);
    CHECK(physical_memory() > resident_memory());
    MemoryBudget none;
    CHECK(none.none());
    CHECK_FALSE(none.exceeded());
    CHECK(none.fits(std::uint64_t{1} << 60));
    MemoryBudget tiny(1);
    CHECK(tiny.exceeded());
    CHECK(tiny.left() == 0);
    CHECK_FALSE(tiny.fits(1));
    MemoryBudget big(resident_memory() + (std::uint64_t{1} << 40));
    CHECK_FALSE(big.exceeded());
    CHECK(big.fits(std::uint64_t{1} << 30));
    CHECK_FALSE(big.fits(std::uint64_t{1} << 41));
    CHECK(MemoryBudget::machine_default().limit() == static_cast<std::uint64_t>(static_cast<double>(physical_memory()) * 0.5));
}

TEST_CASE("budget: sizes are read with decimal and binary units and as a share of memory") {
    CHECK(parse_bytes("0") == 0);
    CHECK(parse_bytes("123") == 123);
    CHECK(parse_bytes("4G") == 4'000'000'000ull);
    CHECK(parse_bytes("4gb") == 4'000'000'000ull);
    CHECK(parse_bytes("1.5M") == 1'500'000ull);
    CHECK(parse_bytes("512MiB") == 512ull << 20);
    CHECK(parse_bytes("2TiB") == 2ull << 40);
    CHECK(parse_bytes("50%") == physical_memory() / 2);
    for (const char* bad : {"", "G", "4X", "-1G", "1..5G", "101%", "1e3", "4 G"})
        CHECK_THROWS_WITH_AS(parse_bytes(bad), doctest::Contains("is not a size"), InputError);
    CHECK(format_bytes(2'500'000'000ull) == "2.5 GB");
    CHECK(format_bytes(300'000'000ull) == "300 MB");
    CHECK(format_bytes(999) == "999 bytes");
}

TEST_CASE("budget: what is freed in the background is freed, and waiting for it ends") {
    std::atomic<int> freed = 0;
    struct Big {
        explicit Big(std::atomic<int>* c) : count(c) {}
        ~Big() { ++*count; }
        std::atomic<int>* count;
    };
    for (int i = 0; i < 4; ++i) free_in_background(std::make_unique<Big>(&freed));
    free_in_background(std::unique_ptr<Big>());  // nothing to free
    CHECK(wait_for_background_frees());
    CHECK(freed == 4);
    CHECK(wait_for_background_frees(Deadline::after(1)));
}
