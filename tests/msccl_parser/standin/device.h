// Stand-in (collsched) for msccl-executor-nccl's src/include/device.h and nccl_common.h at c6f6b36:
// the constants the parser's limits use. MAXCHANNELS (device.h:65) sizes the channel table and
// bounds `chan`; NCCL_STEPS (device.h:27); the protocol ids (nccl_common.h:65-67).
// MSCCL_MAX_NUM_STEPS comes from the build (makefiles/common.mk:19, default 64): CMake passes it.
#pragma once
#include <cstdint>

#include "nccl.h"

#define NCCL_STEPS 8
#define MAXCHANNELS 32
#define NCCL_PROTO_LL 0
#define NCCL_PROTO_LL128 1
#define NCCL_PROTO_SIMPLE 2
