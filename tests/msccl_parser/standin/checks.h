// Stand-in (collsched) for msccl-executor-nccl's src/include/checks.h:122-129 (NCCLCHECK).
#pragma once
#include "nccl.h"

#define NCCLCHECK(call)                                                          \
    do {                                                                         \
        ncclResult_t RES = call;                                                 \
        if (RES != ncclSuccess && RES != ncclInProgress) return RES;             \
    } while (0)
