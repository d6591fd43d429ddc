#include "support/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace collsched::support {

void assertion_failed(const char* expr, const char* file, int line) {
    std::fflush(stdout);
    std::fprintf(stderr, "collsched: internal error (a bug, please report it): assertion `%s` failed at %s:%d\n", expr, file, line);
    std::abort();
}

void assertion_failed(const char* expr, const char* file, int line, const std::string& message) {
    std::fflush(stdout);
    std::fprintf(stderr, "collsched: internal error (a bug, please report it): assertion `%s` failed at %s:%d: %s\n", expr, file,
                 line, message.c_str());
    std::abort();
}

}  // namespace collsched::support
