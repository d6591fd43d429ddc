// Loads MSCCL++ execution plans with mscclpp's own parser (execution_plan.cc, compiled unmodified
// against the stand-ins of tests/mscclpp_parser/standin) for every rank, and checks what the
// executor itself would refuse when it builds the device plan (executor.cc: at most MAX_OPERATION
// ops and MAX_CHANNEL channels per thread block). Usage: load_plans PLAN.json...
// Exit 0 when every plan loads for every rank, 1 otherwise (the first error per file printed).
#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "execution_plan.hpp"

int main(int argc, char** argv) {
    int bad = 0, loads = 0;
    for (int a = 1; a < argc; ++a) {
        const std::string path = argv[a];
        std::ifstream in(path);
        const nlohmann::json j = nlohmann::json::parse(in);
        const int P = int(j["gpus"].size());
        try {
            for (int rank = 0; rank < P; ++rank) {
                const auto& g = j["gpus"][rank];
                const std::size_t ic = g["input_chunks"], oc = g["output_chunks"];
                const std::size_t unit = 16 * 64;  // bytes per chunk: a multiple of buffer_alignment
                mscclpp::ExecutionPlan plan(path, rank);
                plan.impl_->loadExecutionPlan(ic * unit, oc * unit, 0, 0);
                const int T = plan.impl_->getThreadblockCount();
                if (T != int(g["threadblocks"].size())) throw std::runtime_error("thread block count differs");
                for (int t = 0; t < T; ++t) {
                    if (plan.impl_->getOperations(t).size() > mscclpp::MAX_OPERATION)
                        throw std::runtime_error("more than MAX_OPERATION ops in thread block " + std::to_string(t));
                    if (plan.impl_->threadblockMemoryChannels.at(t).size() > mscclpp::MAX_CHANNEL ||
                        plan.impl_->threadblockPortChannels.at(t).size() > mscclpp::MAX_CHANNEL ||
                        plan.impl_->threadblockNvlsChannels.at(t).size() > mscclpp::MAX_CHANNEL)
                        throw std::runtime_error("more than MAX_CHANNEL channels in thread block " + std::to_string(t));
                }
                (void)plan.impl_->calScratchBufferSize(ic * unit, oc * unit);
                ++loads;
            }
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s: %s\n", path.c_str(), e.what());
            ++bad;
        }
    }
    std::printf("%d plans, %d rank loads by mscclpp's parser, %d refused\n", argc - 1, loads, bad);
    return bad ? 1 : 0;
}
