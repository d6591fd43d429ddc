// Stand-in declarations (collsched's own, not mscclpp's) for the part of <mscclpp/core.hpp> that
// mscclpp's execution_plan.cc and its internal headers name, so that the unmodified parser compiles
// on a host without CUDA (tests/mscclpp_parser/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace mscclpp {

enum class ErrorCode { SystemError, InternalError, RemoteError, InvalidUsage, Timeout, Aborted, ExecutorError };

class Error : public std::runtime_error {
public:
    Error(const std::string& message, ErrorCode code) : std::runtime_error(message), code_(code) {}
    ErrorCode getErrorCode() const { return code_; }

private:
    ErrorCode code_;
};

using MemoryId = std::uint32_t;

template <class T>
using DeviceHandle = typename T::DeviceHandle;

/// Channel types are only stored in arrays of device handles by the parser's headers: empty stand-ins.
struct BaseMemoryChannel {
    struct DeviceHandle {};
};
struct BasePortChannel {
    struct DeviceHandle {};
};
struct SwitchChannel {
    struct DeviceHandle {};
};

namespace detail {
template <class T>
inline void hashCombine(std::size_t& seed, const T& value) {
    seed ^= std::hash<T>{}(value) + 0x9e3779b9 + (seed << 6) + (seed >> 2);
}
}  // namespace detail

}  // namespace mscclpp
