// Stand-in (collsched) for what NCCL's src/graph/search.cc graph-file reader (ncclTopoGetChannelFromXml,
// ncclTopoGetGraphFromXmlSub, ncclTopoGetGraphFromXml, :887-964) uses of src/include/graph.h and
// src/graph/topo.h, host-only: the same names and fields (graph.h:110-154, :170-189; topo.h:42-93,
// :103-165), without the CUDA, NVML and network members the reader never touches. The reader's
// own text is compiled unmodified, extracted from search.cc at configure time (tests/CMakeLists.txt).
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include "core.h"
#include "xml.h"

#define MAXCHANNELS 64
#define NCCL_TOPO_MAX_NODES 640
#define GPU 0
#define NCCL_TOPO_NODE_TYPES 10
#define NCCL_TOPO_ID_LOCAL_ID_MASK 0x00ffffffffffffff
#define NCCL_TOPO_ID_SYSTEM_ID(id) (id >> 56)
#define NCCL_TOPO_ID(systemid, localid) (((int64_t)systemid << 56) + (localid & NCCL_TOPO_ID_LOCAL_ID_MASK))
#define PATH_LOC 0
#define PATH_NVL 1
#define PATH_NVB 2
#define PATH_PIX 4
#define PATH_PXB 5
#define PATH_P2C 6
#define PATH_PXN 7
#define PATH_PHB 8
#define PATH_SYS 9

struct ncclTopoNode {
  int type;
  int64_t id;
  struct {
    int dev;
    int rank;
    struct ncclTopoNode* parent;
  } gpu;
};
struct ncclTopoNodeSet {
  int count;
  struct ncclTopoNode nodes[NCCL_TOPO_MAX_NODES];
};
struct ncclTopoSystem {
  struct ncclTopoNodeSet nodes[1];  // GPU only
};
struct ncclTopoGraph {
  int id;
  int pattern;
  int crossNic;
  int collNet;
  int minChannels;
  int maxChannels;
  int nChannels;
  float bwIntra;
  float bwInter;
  float latencyInter;
  int typeIntra;
  int typeInter;
  int sameChannels;
  int nHops;
  int intra[MAXCHANNELS * NCCL_TOPO_MAX_NODES];
  int64_t inter[MAXCHANNELS * 2];
};

// search.cc:16 NCCL_PARAM(CrossNic, "CROSS_NIC", 2): the default, NCCL_CROSS_NIC unset.
inline int64_t ncclParamCrossNic() { return 2; }
