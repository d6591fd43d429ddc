// Stand-in (collsched) for NCCL's src/include/alloc.h: what src/graph/xml.cc uses of it, host-only.
#pragma once
#include <cstdlib>
#include "nccl.h"
template <typename T>
ncclResult_t ncclCalloc(T** ptr, size_t nelem) {
    T* p = static_cast<T*>(std::calloc(nelem, sizeof(T)));
    if (!p) return ncclSystemError;
    *ptr = p;
    return ncclSuccess;
}
