// Stand-in (collsched) for NCCL's src/include/debug.h: what src/graph/xml.cc uses of it, host-only.
#pragma once
#include <cstdio>
#include "nccl.h"
#define NCCL_INIT 1
#define NCCL_GRAPH 2
#define NCCL_ENV 4
#define NCCL_NET 8
#define WARN(...) (std::fprintf(stderr, "NCCL WARN "), std::fprintf(stderr, __VA_ARGS__), std::fprintf(stderr, "\n"))
#define INFO(flags, ...) ((void)(flags))
#define TRACE(...) ((void)0)
