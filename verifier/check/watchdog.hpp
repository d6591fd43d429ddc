/** \file
 * A watchdog for solver calls that do not check their own time limit everywhere (Z3's
 * preprocessing ran 30 s past a 10 s limit): it calls `on_timeout` (for Z3, `context::interrupt`)
 * from its own thread when the limit passes, and stops when destroyed. Used by the Z3 engine's
 * bit-vector queries (verifier/check/z3_partial.cpp, z3_switch.cpp); it knows nothing of Z3, so
 * the header brings no solver.
 */
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace collsched::detail {

class Watchdog {
public:
    Watchdog(std::function<void()> on_timeout, unsigned timeout_ms)
        : thread_([this, fire = std::move(on_timeout), timeout_ms] {
              std::unique_lock lock(mutex_);
              if (!done_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return done_; })) fire();
          }) {}
    ~Watchdog() {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        done_cv_.notify_all();
        thread_.join();
    }
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

private:
    std::mutex mutex_;
    std::condition_variable done_cv_;
    bool done_ = false;
    std::thread thread_;  ///< last: started once the members it waits on exist
};

}  // namespace collsched::detail
