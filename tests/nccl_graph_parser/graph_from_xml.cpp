// NCCL's own graph-file reader of src/graph/search.cc (ncclTopoGetChannelFromXml,
// ncclTopoGetGraphFromXmlSub, ncclTopoGetGraphFromXml: what ncclTopoCompute runs on NCCL_GRAPH_FILE,
// search.cc:1111-1121), its text compiled unmodified: tests/CMakeLists.txt copies it out of the
// configured NCCL source into search_graph_from_xml.inc, from `struct kvDict kvDictLinkType[]` to
// the line before `/* And the reverse : graph->xml */`.
#include "search_graph.h"

#include "search_graph_from_xml.inc"
