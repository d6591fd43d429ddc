// libFuzzer entry point of the chakra harness; the body is collsched::fuzz::run_chakra (fuzz/targets.hpp).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    collsched::fuzz::run_chakra(std::string_view(reinterpret_cast<const char*>(data), size));
    return 0;
}
