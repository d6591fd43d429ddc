#include "support/teardown.hpp"

#include <atomic>
#include <mutex>
#include <vector>

namespace collsched {

namespace {

std::atomic<bool> skipping{false};

/// Never destroyed: reachable from a global until exit, so neither a destructor at exit nor a
/// leak checker (LeakSanitizer scans globals) sees it as garbage.
struct Graveyard {
    std::mutex mutex;
    std::vector<std::shared_ptr<const void>> objects;
};
Graveyard* const graveyard = new Graveyard;

}  // namespace

void skip_teardown() { skipping.store(true, std::memory_order_relaxed); }

void bury(std::shared_ptr<const void> object) {
    if (!object || !skipping.load(std::memory_order_relaxed)) return;
    const std::lock_guard lock(graveyard->mutex);
    graveyard->objects.push_back(std::move(object));
}

}  // namespace collsched
