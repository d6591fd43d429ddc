// Stand-in (collsched) for msccl-executor-nccl's src/include/core.h: the C library the parser
// uses and ncclCalloc (src/include/alloc.h:131-147: malloc, then zero).
#pragma once
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "checks.h"
#include "debug.h"
#include "nccl.h"

template <typename T>
ncclResult_t ncclCalloc(T** ptr, size_t nelem) {
    T* p = static_cast<T*>(std::calloc(nelem, sizeof(T)));
    if (!p) return ncclSystemError;
    *ptr = p;
    return ncclSuccess;
}
