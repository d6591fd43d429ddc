// Stand-in (collsched) for msccl-executor-nccl's src/include/debug.h: WARN prints its message on
// stderr (the loader shows the executor's own words when it refuses a file); INFO is silent.
#pragma once
#include <cstdio>

#define NCCL_GRAPH 0
#define NCCL_ALL 0
#define WARN(...)                                \
    do {                                         \
        std::fprintf(stderr, "  executor: ");    \
        std::fprintf(stderr, __VA_ARGS__);       \
        std::fprintf(stderr, "\n");              \
    } while (0)
#define INFO(...) \
    do {          \
    } while (0)
