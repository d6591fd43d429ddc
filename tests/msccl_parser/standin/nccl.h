// Stand-in (collsched) for the generated nccl.h of msccl-executor-nccl (src/nccl.h.in): only what
// src/misc/msccl/msccl_parser.cc and the headers it includes name. Values as in nccl.h.in:41-49
// (ncclResult_t) and :440 (mscclAlgoHandle_t) at c6f6b36.
#pragma once
#include <climits>
#include <cstddef>
#include <cstring>
#include <cstdint>

typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclNumResults = 8
} ncclResult_t;
typedef enum { ncclSum = 0, ncclAvg = 4 } ncclRedOp_t;
typedef enum { ncclInt8 = 0 } ncclDataType_t;
typedef int mscclAlgoHandle_t;
// opaque handles the rest of msccl_struct.h names (never used by the parser)
typedef struct ncclComm* ncclComm_t;
typedef struct CUstream_st* cudaStream_t;
typedef struct CUgraph_st* cudaGraph_t;
