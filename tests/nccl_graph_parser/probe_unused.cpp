// Stand-in (collsched) for what the rest of NCCL's src/graph/xml.cc calls to probe a live machine
// (NVML, sysfs, CUDA): the graph-file reader does not call them, so each refuses.
#include "core.h"
#include "os.h"

ncclResult_t ncclNvmlDeviceGetHandleByPciBusId(const char*, nvmlDevice_t*) { return ncclInternalError; }
ncclResult_t ncclNvmlDeviceGetIndex(nvmlDevice_t, unsigned*) { return ncclInternalError; }
ncclResult_t ncclNvmlDeviceGetNvLinkState(nvmlDevice_t, unsigned int, nvmlEnableState_t*) { return ncclInternalError; }
ncclResult_t ncclNvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t, unsigned int, nvmlPciInfo_t*) { return ncclInternalError; }
ncclResult_t ncclNvmlDeviceGetNvLinkCapability(nvmlDevice_t, unsigned int, nvmlNvLinkCapability_t, unsigned int*) { return ncclInternalError; }
ncclResult_t ncclNvmlDeviceGetCudaComputeCapability(nvmlDevice_t, int*, int*) { return ncclInternalError; }
ncclResult_t ncclNvmlDeviceGetPciInfo(nvmlDevice_t, nvmlPciInfo_t*) { return ncclInternalError; }
ncclResult_t ncclNvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t, unsigned int*) { return ncclInternalError; }
ncclResult_t ncclNvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t, unsigned int*) { return ncclInternalError; }
ncclResult_t ncclOsGetNumaNodeAffinity(unsigned int, char*, size_t) { return ncclInternalError; }
ncclResult_t ncclOsGetPciDeviceClassByBusId(const char*, char*, size_t) { return ncclInternalError; }
char* ncclOsRealpath(const char*, char*) { return nullptr; }
ncclResult_t ncclOsGetPciPath(const char*, char**) { return ncclInternalError; }
ncclResult_t ncclOsTopoGetStrFromSys(const char*, const char*, char*, int) { return ncclInternalError; }
ncclResult_t ncclOsGetBcmLinks(const char*, int*, char**) { return ncclInternalError; }
int cudaGetDeviceProperties(cudaDeviceProp*, int) { return 1; }
uint64_t getHostHash() { return 0; }
