// Stand-in (collsched) for NCCL's src/include/core.h: what src/graph/xml.cc uses of it, host-only.
#pragma once
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include "nccl.h"
#include "debug.h"
#include "checks.h"
#include "alloc.h"
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include "nvmlwrap.h"
struct cudaDeviceProp { int major, minor; char name[256]; };
int cudaGetDeviceProperties(cudaDeviceProp*, int);
uint64_t getHostHash();
