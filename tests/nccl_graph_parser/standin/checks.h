// Stand-in (collsched) for NCCL's src/include/checks.h: what src/graph/xml.cc uses of it, host-only.
#pragma once
#include "debug.h"
#define NCCLCHECK(call) do { ncclResult_t RES = (call); if (RES != ncclSuccess) { WARN("%s:%d -> %d", __FILE__, __LINE__, RES); return RES; } } while (0)
#define NCCLCHECKGOTO(call, RES, label) do { RES = (call); if (RES != ncclSuccess) goto label; } while (0)
#define NCCLCHECKGOTONOWARN(call, RES, label, FLAGS) do { RES = (call); if (RES != ncclSuccess) goto label; } while (0)
#define NOWARN(EXPR, FLAGS) (EXPR)
#define CUDACHECK(cmd) do { if ((cmd) != 0) return ncclUnhandledCudaError; } while (0)
