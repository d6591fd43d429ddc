// Loads NCCL graph files (NCCL_GRAPH_FILE) with NCCL's own reader: src/graph/xml.cc
// ncclTopoGetXmlGraphFromFile, compiled unmodified against the stand-ins of
// tests/nccl_graph_parser/standin, then reads every attribute as src/graph/search.cc
// ncclTopoGetGraphFromXmlSub and ncclTopoGetChannelFromXml do (:891-956) and prints it.
// With --gpus G, search.cc's own ncclTopoGetGraphFromXml (graph_from_xml.cpp, its text unmodified)
// then reads each graph id NCCL computes (init.cc: 0 rings, 1 trees, 2 CollNet chains, 3 NVLS,
// 4 CollNet direct) into an ncclTopoGraph as a node of G GPUs (CUDA device g is rank g) does, and
// prints what it holds: per graph its pattern and channels, per channel inter[0], the ranks of
// intra, inter[1].
// Usage: load_graphs [--gpus G] FILE.xml...  Exit 0 when every file loads, 1 otherwise.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core.h"  // before xml.h, as xml.cc includes them
#include "xml.h"
#include "search_graph.h"

ncclResult_t ncclTopoGetGraphFromXml(struct ncclXmlNode* xmlGraphs, struct ncclTopoSystem* system, struct ncclTopoGraph* graph,
                                     int* nChannels);

namespace {

// NCCL allocates NCCL_GRAPH_XML_MAX_NODES = 65536 (src/graph/topo.h:212); the exports need far fewer.
constexpr int max_nodes = 4096;

// search.cc kvDictLinkType: the values typeintra and typeinter may take.
const char* const link_types[] = {"LOC", "NVL", "NVB", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"};

bool known_type(const char* s) {
    if (!s) return false;
    for (const char* t : link_types)
        if (std::strcmp(s, t) == 0) return true;
    return false;
}

ncclResult_t print_graph(ncclXmlNode* g) {
    int id, crossnic, pattern, nchannels, same;
    float intra, inter;
    const char *typeintra, *typeinter;
    NCCLCHECK(xmlGetAttrInt(g, "id", &id));
    NCCLCHECK(xmlGetAttrInt(g, "crossnic", &crossnic));
    NCCLCHECK(xmlGetAttrInt(g, "pattern", &pattern));
    NCCLCHECK(xmlGetAttrInt(g, "nchannels", &nchannels));
    NCCLCHECK(xmlGetAttrFloat(g, "speedintra", &intra));
    NCCLCHECK(xmlGetAttrFloat(g, "speedinter", &inter));
    NCCLCHECK(xmlGetAttr(g, "typeintra", &typeintra));
    NCCLCHECK(xmlGetAttr(g, "typeinter", &typeinter));
    NCCLCHECK(xmlGetAttrInt(g, "samechannels", &same));
    if (!known_type(typeintra) || !known_type(typeinter)) {
        WARN("typeintra/typeinter not in kvDictLinkType");
        return ncclInvalidUsage;
    }
    if (nchannels != g->nSubs || nchannels < 1 || nchannels > 32) {
        WARN("nchannels %d but %d channels", nchannels, g->nSubs);
        return ncclInvalidUsage;
    }
    std::printf("graph id=%d pattern=%d crossnic=%d nchannels=%d speedintra=%g speedinter=%g %s %s\n", id, pattern, crossnic, nchannels,
                intra, inter, typeintra, typeinter);
    for (int c = 0; c < g->nSubs; ++c) {
        ncclXmlNode* ch = g->subs[c];
        std::printf(" ");
        for (int s = 0; s < ch->nSubs; ++s) {
            const char* dev;
            NCCLCHECK(xmlGetAttrStr(ch->subs[s], "dev", &dev));
            std::printf(" %s%ld", std::strcmp(ch->subs[s]->name, "net") == 0 ? "net" : "gpu", std::strtol(dev, nullptr, 16));
        }
        std::printf("\n");
    }
    return ncclSuccess;
}

/// search.cc's reader on the loaded file, for every graph id, on a node of `gpus` GPUs.
ncclResult_t read_graphs(ncclXml* xml, int gpus) {
    static ncclTopoSystem system;  // large: 640 nodes
    static ncclTopoNode dev_parent;
    system.nodes[GPU].count = gpus;
    for (int g = 0; g < gpus; ++g) {
        system.nodes[GPU].nodes[g].type = GPU;
        system.nodes[GPU].nodes[g].gpu.dev = g;
        system.nodes[GPU].nodes[g].gpu.rank = g;
        system.nodes[GPU].nodes[g].gpu.parent = &dev_parent;
    }
    for (int id = 0; id <= 4; ++id) {
        static ncclTopoGraph graph;
        std::memset(&graph, 0, sizeof graph);
        graph.id = id;
        int nChannels = 0;
        NCCLCHECK(ncclTopoGetGraphFromXml(xml->nodes, &system, &graph, &nChannels));
        if (graph.nChannels == 0) continue;  // ncclTopoCompute searches its own (search.cc:1120)
        std::printf("search.cc graph id=%d pattern=%d crossnic=%d nchannels=%d samechannels=%d channels read=%d\n", id, graph.pattern,
                    graph.crossNic, graph.nChannels, graph.sameChannels, nChannels);
        for (int c = 0; c < nChannels; ++c) {
            std::printf("  channel %d: net %lx | gpus", c, (long)graph.inter[2 * c]);
            for (int g = 0; g < gpus; ++g) std::printf(" %d", graph.intra[c * gpus + g]);
            std::printf(" | net %lx\n", (long)graph.inter[2 * c + 1]);
        }
    }
    return ncclSuccess;
}

}  // namespace

int main(int argc, char** argv) {
    int bad = 0, gpus = 0;
    for (int a = 1; a < argc; ++a) {
        if (std::strcmp(argv[a], "--gpus") == 0 && a + 1 < argc) {
            gpus = std::atoi(argv[++a]);
            continue;
        }
        ncclXml* xml = nullptr;
        bool ok = xmlAlloc(&xml, max_nodes) == ncclSuccess && ncclTopoGetXmlGraphFromFile(argv[a], xml) == ncclSuccess &&
                  xml->maxIndex >= 1 && std::strcmp(xml->nodes[0].name, "graphs") == 0;
        for (int g = 0; ok && g < xml->nodes[0].nSubs; ++g) ok = print_graph(xml->nodes[0].subs[g]) == ncclSuccess;
        if (ok && gpus > 0) ok = read_graphs(xml, gpus) == ncclSuccess;
        if (!ok) std::fprintf(stderr, "%s: NCCL's graph reader refuses it\n", argv[a]), ++bad;
        std::free(xml);
    }
    return bad ? 1 : 0;
}
