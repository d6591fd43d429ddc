// support/budget.hpp: deadlines, memory budgets, sizes, freeing in the background.
#include <doctest/doctest.h>

#include "tests/approx.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
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

TEST_CASE("budget: a stop request makes every deadline pass until it is cleared") {
    const Deadline none, later = Deadline::after(3600);
    request_stop(true);
    CHECK(stop_requested());
    CHECK(none.passed());
    CHECK(later.passed());
    CHECK(none.left() == 0);
    CHECK(later.left() == 0);
    CHECK(later.for_call(10) == collsched::test::rel(0.001));  // the floor: solvers read 0 as "no limit"
    request_stop(false);
    CHECK_FALSE(stop_requested());
    CHECK_FALSE(none.passed());
    CHECK_FALSE(later.passed());
    CHECK(later.left() > 3500);
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
    CHECK(MemoryBudget::standard().limit() == std::min(MemoryBudget::default_limit, physical_memory() / 2));
}

TEST_CASE("budget: one budget for estimates, from COLLSCHED_MAX_MEMORY_MB or 4 GiB") {
    CHECK(MemoryBudget(std::uint64_t{4} << 30).refusal(std::uint64_t{4} << 30, "x") == "");
    CHECK(MemoryBudget(std::uint64_t{4} << 30).refusal((std::uint64_t{15} << 29), "the rounds of steps 1 .. 2000000000") ==
          "the rounds of steps 1 .. 2000000000 needs about 7.5 GiB, more than the memory budget of 4 GiB; set "
          "COLLSCHED_MAX_MEMORY_MB to allow more");
    CHECK(MemoryBudget().refusal(UINT64_MAX, "x") == "");  // no budget
    CHECK(MemoryBudget(1 << 20).refusal(UINT64_MAX, "x") ==
          "x needs about more than 16 EiB, more than the memory budget of 1 MiB; set COLLSCHED_MAX_MEMORY_MB to allow more");
    CHECK_THROWS_WITH_AS(MemoryBudget(1 << 20).check(2 << 20, "y"),
                         "y needs about 2 MiB, more than the memory budget of 1 MiB; set COLLSCHED_MAX_MEMORY_MB to allow more", InputError);
    CHECK(mul_sat(UINT64_MAX / 2, 3) == UINT64_MAX);
    CHECK(add_sat(UINT64_MAX, 1) == UINT64_MAX);
    CHECK(mul_sat(0, UINT64_MAX) == 0);
    ::setenv("COLLSCHED_MAX_MEMORY_MB", "12", 1);
    CHECK(MemoryBudget::standard().limit() == std::uint64_t{12} << 20);
    for (const char* bad : {"0", "abc", "-4", "", "1099511627777", "12M"}) {
        ::setenv("COLLSCHED_MAX_MEMORY_MB", bad, 1);
        CHECK_THROWS_WITH_AS(MemoryBudget::standard(),
                             ("COLLSCHED_MAX_MEMORY_MB must be a whole number of MiB from 1 to 2^40, not '" + std::string(bad) + "'").c_str(),
                             InputError);
    }
    ::unsetenv("COLLSCHED_MAX_MEMORY_MB");
}

TEST_CASE("budget: sizes are read with the units of --size and as a share of memory") {
    CHECK(parse_bytes("0") == 0);
    CHECK(parse_bytes("123") == 123);
    CHECK(parse_bytes("4G") == 4ull << 30);  // as --size and nccl-tests read it
    CHECK(parse_bytes("4GB") == 4'000'000'000ull);
    CHECK(parse_bytes("1.5M") == 3ull << 19);
    CHECK(parse_bytes("512MiB") == 512ull << 20);
    CHECK(parse_bytes("2TiB") == 2ull << 40);
    CHECK(parse_bytes("4 G") == 4ull << 30);
    CHECK(parse_bytes("50%") == physical_memory() / 2);
    for (const char* bad : {"", "G", "4X", "-1G", "1..5G", "101%", "4gb", "%", "-5%", "1e30", "nan"})
        CHECK_THROWS_WITH_AS(parse_bytes(bad), doctest::Contains("is not a size"), InputError);
    CHECK(format_bytes(std::uint64_t{5} << 29) == "2.5 GiB");
    CHECK(format_bytes(std::uint64_t{300} << 20) == "300 MiB");
    CHECK(format_bytes(999) == "999 bytes");
    CHECK(format_bytes(150'000'000) == "143.1 MiB");
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
