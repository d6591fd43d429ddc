/** \file
 * What a command runs with: where its report goes and the exit code it leaves (0 holds/done,
 * 1 property violated, 2 bad input or usage, 3 timeout or unknown; tools/commands.hpp), and the
 * processes it shares its solver calls with.
 */
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string_view>

#include "support/parallel.hpp"

namespace collsched::tools {

struct Context {
    int exit_code = 0;
    /// Where the command's report goes: standard output, unless `out` is set (the Python module
    /// runs commands in memory and takes their --json report from here, python/module.cpp).
    std::function<void(std::string_view)> out;
    void print(std::string_view text) const {
        if (out) out(text);
        else std::fwrite(text.data(), 1, text.size(), stdout);
    }
    /// The processes this run shares its solver calls with (MPI ranks under mpirun:
    /// cli/mpi_share.hpp, set by main); null: this process alone.
    std::shared_ptr<JobSharing> sharing;
};

}  // namespace collsched::tools
