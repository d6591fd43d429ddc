// Loads MSCCL-IR programs with the MSCCL executor's own parser (msccl-executor-nccl's
// src/misc/msccl/msccl_parser.cc, compiled unmodified against the stand-ins of
// tests/msccl_parser/standin) as the executor loads them: mscclGetAlgoMetaFromXmlFile once
// (msccl_lifecycle.cc reads the <algo> attributes to select an algorithm), then
// mscclGetAlgoFromXmlFile for every rank, and the connection check it makes before running
// (msccl_setup.cc:93-96: nchannels at most MAXCHANNELS, the channels NCCL can give).
// Usage: load_algos FILE.xml...  Exit 0 when every file loads for every rank, 1 otherwise (the
// executor's WARN lines and the file are printed for the first rank that fails).
#include <cstdio>
#include <cstdlib>

#include "msccl/msccl_parser.h"

int main(int argc, char** argv) {
    int bad = 0, loads = 0;
    auto* algo = static_cast<mscclAlgo*>(std::calloc(1, sizeof(mscclAlgo)));
    for (int a = 1; a < argc; ++a) {
        const char* path = argv[a];
        mscclAlgoMeta meta;
        if (mscclGetAlgoMetaFromXmlFile(path, &meta) != ncclSuccess) {
            std::fprintf(stderr, "%s: the executor's meta reader refuses it\n", path);
            ++bad;
            continue;
        }
        bool ok = meta.nChannels >= 1 && meta.nChannels <= MAXCHANNELS;
        if (!ok) std::fprintf(stderr, "%s: nchannels %d is outside 1..%d\n", path, meta.nChannels, MAXCHANNELS);
        for (int rank = 0; ok && rank < meta.nRanks; ++rank) {
            if (mscclGetAlgoFromXmlFile(path, algo, rank) != ncclSuccess) {
                std::fprintf(stderr, "%s: rank %d: the executor's parser refuses it\n", path, rank);
                ok = false;
            } else if (algo->nBlocks < 1) {
                std::fprintf(stderr, "%s: rank %d has no thread block\n", path, rank);
                ok = false;
            } else {
                ++loads;
            }
        }
        if (!ok) ++bad;
    }
    std::free(algo);
    std::printf("%d programs, %d rank loads by the executor's parser, %d refused\n", argc - 1, loads, bad);
    return bad ? 1 : 0;
}
