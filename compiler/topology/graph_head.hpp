/** \file
 * What a graph file (docs/formats.md) declares before its lists, read from its first 64 KiB
 * without reading the file: the processor count (so that limits can refuse a machine before it
 * is built) and the faults line that `collsched machine` writes (so that every report on the
 * machine names them). Reads stop at the first array (the edges) or the end of that text.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace collsched {

struct GraphHead {
    std::optional<std::uint64_t> processors;  ///< the top level's "processors"
    std::optional<std::string> faults;        ///< the top level's "faults"
};

/// The head of the graph file `spec` names (`graph:FILE`); empty for another spec, a file that is
/// not a regular file (a pipe is read once, by the reader), or text that declares neither.
GraphHead read_graph_head(std::string_view spec);

}  // namespace collsched
