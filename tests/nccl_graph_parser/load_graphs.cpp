// Loads NCCL graph files (NCCL_GRAPH_FILE) with NCCL's own reader: src/graph/xml.cc
// ncclTopoGetXmlGraphFromFile, compiled unmodified against the stand-ins of
// tests/nccl_graph_parser/standin, then reads every attribute as src/graph/search.cc
// ncclTopoGetGraphFromXmlSub and ncclTopoGetChannelFromXml do (:891-956) and prints it.
// Usage: load_graphs FILE.xml...  Exit 0 when every file loads, 1 otherwise.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core.h"  // before xml.h, as xml.cc includes them
#include "xml.h"

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

}  // namespace

int main(int argc, char** argv) {
    int bad = 0;
    for (int a = 1; a < argc; ++a) {
        ncclXml* xml = nullptr;
        bool ok = xmlAlloc(&xml, max_nodes) == ncclSuccess && ncclTopoGetXmlGraphFromFile(argv[a], xml) == ncclSuccess &&
                  xml->maxIndex >= 1 && std::strcmp(xml->nodes[0].name, "graphs") == 0;
        for (int g = 0; ok && g < xml->nodes[0].nSubs; ++g) ok = print_graph(xml->nodes[0].subs[g]) == ncclSuccess;
        if (!ok) std::fprintf(stderr, "%s: NCCL's graph reader refuses it\n", argv[a]), ++bad;
        std::free(xml);
    }
    return bad ? 1 : 0;
}
