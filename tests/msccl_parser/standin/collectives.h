// Stand-in (collsched) for msccl-executor-nccl's src/include/collectives.h:17-25 at c6f6b36 (the
// chunk and slice steps the parser copies into the algorithm; they do not change what it accepts).
#pragma once
#include "device.h"

#define ALLREDUCE_SLICESTEPS (NCCL_STEPS / 4)
#define ALLREDUCE_CHUNKSTEPS (NCCL_STEPS / 2)
#define ALLGATHER_SLICESTEPS (NCCL_STEPS / 4)
#define ALLGATHER_CHUNKSTEPS (NCCL_STEPS / 2)
#define REDUCESCATTER_SLICESTEPS (NCCL_STEPS / 4)
#define REDUCESCATTER_CHUNKSTEPS (NCCL_STEPS / 2)
#define BROADCAST_SLICESTEPS 1
#define BROADCAST_CHUNKSTEPS 1
#define REDUCE_SLICESTEPS 1
#define REDUCE_CHUNKSTEPS 1
