// The thread pool of support/parallel.hpp.
#include "support/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

namespace collsched {

void run_indexed(std::size_t n, unsigned threads, const std::function<bool(std::size_t)>& job) { run_indexed(n, threads, job, nullptr); }

bool Cores::take(const std::function<bool()>& keep_waiting, bool first) {
    std::unique_lock<std::mutex> hold(lock_);
    first_waiting_ += first;
    while (free_ == 0 || (!first && first_waiting_ > 0)) {
        if (!keep_waiting()) return false;  // only borrowers give up
        freed_.wait_for(hold, std::chrono::milliseconds(20));  // polled: a borrower's work may run out meanwhile
    }
    first_waiting_ -= first;
    --free_;
    return true;
}

void Cores::give() {
    {
        std::lock_guard<std::mutex> hold(lock_);
        ++free_;
    }
    freed_.notify_all();  // a job waiting to start, or any borrower
}

void run_indexed(std::size_t n, unsigned threads, const std::function<bool(std::size_t)>& job, Cores* cores) {
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
    // a helper with `cores` runs each index on a core it took for it (and gives up waiting once no index is left)
    auto work = [&](bool borrow) {
        for (;;) {
            if (borrow && !cores->take([&] { return next.load() < n && !stopped; })) return;
            const std::size_t i = next++;
            if (i < n && !stopped) {
                try {
                    if (!job(i)) stopped = true;
                } catch (...) {  // the first failure stops the others and is thrown on the calling thread
                    std::lock_guard<std::mutex> hold(failure_lock);
                    if (!failure) failure = std::current_exception();
                    stopped = true;
                }
            }
            if (borrow) cores->give();
            if (i >= n || stopped) return;
        }
    };
    auto helper = [&] { work(cores != nullptr); };
    std::vector<std::thread> helpers;
    for (std::size_t w = 1; w < t; ++w) helpers.emplace_back(helper);
    work(false);
    for (std::thread& h : helpers) h.join();
    if (failure) std::rethrow_exception(failure);
}

}  // namespace collsched
