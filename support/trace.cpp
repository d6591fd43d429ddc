// Phase marks on stderr under COLLSCHED_TRACE (trace.hpp).
#include "support/trace.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "support/budget.hpp"

namespace collsched {

namespace {

// the process's start, as near as a static initializer gets
const Clock::time_point process_start = Clock::now();

}  // namespace

bool tracing() {
    static const bool on = [] {
        const char* v = std::getenv("COLLSCHED_TRACE");
        return v != nullptr && *v != '\0' && std::string(v) != "0";
    }();
    return on;
}

void trace_line(std::string_view what) {
    const std::string line = fmt::format("[{:9.3f} s {:7} MB] {}\n", seconds_since(process_start), resident_memory() >> 20, what);
    std::fputs(line.c_str(), stderr);
}

}  // namespace collsched
