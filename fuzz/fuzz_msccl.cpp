// libFuzzer entry point of the msccl harness; the body is collsched::fuzz::run_msccl (fuzz/targets.hpp).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    collsched::fuzz::run_msccl(std::string_view(reinterpret_cast<const char*>(data), size));
    return 0;
}
