// support/parallel.hpp's run_indexed: every index once, by index; a false stops new ones; an
// exception reaches the caller.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
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

TEST_CASE("run_indexed with cores: a helper runs only on a core no one holds, and waits for one") {
    // two cores: the calling thread holds one (a provider), another provider holds the other for a while
    Cores cores(2);
    Cores::Held mine(&cores);
    std::atomic<bool> other_holds{true}, release{false};
    std::thread other([&] {
        Cores::Held held(&cores);
        while (!release) std::this_thread::yield();
        other_holds = false;  // set before the core is given back (the Held ends after this)
    });
    // wait until the other thread holds its core (no core is free then)
    while (cores.take([] { return false; })) cores.give(), std::this_thread::yield();
    const std::thread::id caller = std::this_thread::get_id();
    std::atomic<int> by_helper_while_held{0}, by_helper{0};
    run_indexed(40, 2, [&](std::size_t i) {
        if (std::this_thread::get_id() != caller) {
            ++by_helper;
            if (other_holds) ++by_helper_while_held;
        }
        if (i == 20) release = true;  // halfway the other provider ends and its core is free
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        return true;
    }, &cores);
    other.join();
    CHECK(by_helper_while_held.load() == 0);
    CHECK(by_helper.load() > 0);  // after the release the helper borrowed the free core
    // a job waiting to start (Held) comes before a borrower: once the core is free, a borrower's take gives up until
    // the job has it (a plain semaphore would hand it to whoever asks first: here the borrower, the job still asleep)
    Cores one(1);
    auto never = [] { return false; };
    CHECK(one.take(never));
    std::atomic<bool> started{false}, done{false};
    std::thread job([&] {
        Cores::Held held(&one);
        started = true;
        while (!done) std::this_thread::yield();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHECK_FALSE(started.load());  // it waits for the core
    one.give();
    const bool borrowed = one.take(never);
    CHECK_FALSE(borrowed);
    if (borrowed) one.give();  // (so that a failure does not hang the job)
    done = true;
    job.join();
    CHECK(started.load());
    CHECK(one.take(never));
    one.give();
}
