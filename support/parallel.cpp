// The thread pool of support/parallel.hpp.
#include "support/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace collsched {

void run_indexed(std::size_t n, unsigned threads, const std::function<bool(std::size_t)>& job) {
    const std::size_t t = std::min<std::size_t>(std::max(threads, 1u), n);
    if (t <= 1) {
        for (std::size_t i = 0; i < n; ++i)
            if (!job(i)) break;
        return;
    }
    std::atomic<std::size_t> next{0};
    std::atomic<bool> stopped{false};
    std::mutex failure_lock;
    std::exception_ptr failure;
    auto work = [&] {
        for (std::size_t i = next++; i < n && !stopped; i = next++) {
            try {
                if (!job(i)) stopped = true;
            } catch (...) {  // the first failure stops the others and is thrown on the calling thread
                std::lock_guard<std::mutex> hold(failure_lock);
                if (!failure) failure = std::current_exception();
                stopped = true;
            }
        }
    };
    std::vector<std::thread> helpers;
    for (std::size_t w = 1; w < t; ++w) helpers.emplace_back(work);
    work();
    for (std::thread& h : helpers) h.join();
    if (failure) std::rethrow_exception(failure);
}

}  // namespace collsched
