// support/parallel.hpp's run_indexed: every index once, by index; a false stops new ones; an
// exception reaches the caller.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "support/parallel.hpp"

using namespace collsched;

TEST_CASE("run_indexed runs every index once and a caller reads the results by index") {
    for (unsigned threads : {0u, 1u, 2u, 4u, 64u}) {
        CAPTURE(threads);
        std::vector<int> seen(100, 0);
        run_indexed(seen.size(), threads, [&](std::size_t i) {
            seen[i] += static_cast<int>(i) + 1;
            return true;
        });
        for (std::size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == static_cast<int>(i) + 1);
    }
    run_indexed(0, 4, [](std::size_t) -> bool { FAIL("no job"); return true; });
}

TEST_CASE("run_indexed: a job that returns false stops new ones, and an exception is thrown to the caller") {
    std::vector<int> ran(10, 0);
    run_indexed(ran.size(), 1, [&](std::size_t i) {
        ran[i] = 1;
        return i != 3;
    });
    CHECK(ran == std::vector<int>{1, 1, 1, 1, 0, 0, 0, 0, 0, 0});  // one thread: in order, none after 3
    std::atomic<int> count{0};
    run_indexed(1000, 2, [&](std::size_t) {
        ++count;
        return false;
    });
    CHECK(count.load() <= 2);  // each thread started at most one before seeing the stop
    CHECK_THROWS_WITH_AS(run_indexed(50, 2,
                                     [](std::size_t i) -> bool {
                                         if (i == 7) throw std::runtime_error("job 7");
                                         return true;
                                     }),
                         "job 7", std::runtime_error);
}
