// The winners of the time objective in an executor's format, one file per run of sizes a table
// wins (an MSCCL++ plan's min_message_size and max_message_size the sizes it wins at): what
// `optimize --size ... --format F -o FILE` and `deploy --mscclpp` write.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "verifier/time/objective.hpp"

namespace collsched::tools {

/// The sizes (NCCL's) where size i's winner is the fastest: from the crossover below its run of
/// grid points to the crossover above (a crossover not searched: the grid point); 0 and 2^64 - 1
/// at the ends.
std::pair<std::uint64_t, std::uint64_t> winning_range(const TimeObjective& r, std::size_t i);

/// Each distinct winner of `r` rendered in `format` (time_witness_files with `per_range`: none for
/// a size stock NCCL wins), in the protocol its executor runs it in: (path, text) pairs, every one
/// rendered (its writer checks it before its first byte) before any is written. NCCL graph files the boxes need one
/// each of are FILE.nodeK.xml, their paths also added to `per_node`.
std::vector<std::pair<std::string, std::string>> render_winners(const TimeObjective& r, const std::string& path, const std::string& format,
                                                                std::vector<std::string>* per_node = nullptr);

}  // namespace collsched::tools
