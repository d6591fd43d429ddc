/** \file
 * Reading NCCL graph files (the `<graphs>` XML of NCCL_GRAPH_FILE; docs/exports.md, "Reading an
 * NCCL graph file") as NCCL's reader takes them: src/graph/xml.cc ncclTopoGetXmlGraphFromFile
 * loads `<graphs version="1">`, its `<graph>` elements, their `<channel>` elements and those
 * channels' `<net>` and `<gpu>` elements (any other element is skipped, a note here); search.cc
 * ncclTopoGetGraphFromXmlSub and ncclTopoGetChannelFromXml read the attributes. The text is
 * parsed by the project's XML reader (compiler/interop/msccl_xml.hpp).
 *
 * What NCCL cannot load, judged from one value alone, is an InputError (exit 2) with
 * file:line:col: malformed XML, a root other than `<graphs>`, a version other than 1, a missing
 * attribute NCCL requires, a value that is not a number where NCCL reads one (NCCL's strtol would
 * silently read 0), a type name outside kvDictLinkType, a pattern outside NCCL_TOPO_PATTERN_*,
 * nchannels outside 1..32, more than xml.h's MAX_SUBS children or MAX_STR_LEN characters. How the
 * values fit together and with a machine is judged by verifier/constructions/nccl/nccl_graph_check.hpp.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collsched {

/// Where an element starts in the file.
struct XmlPlace {
    int line = 0, col = 0;
};

/// A `<net dev>` or `<gpu dev [rank]>` of a channel, in file order.
struct NcclGraphDevice {
    bool net = false;
    std::int64_t dev = 0;               ///< hexadecimal in the file (strtol base 16)
    std::optional<std::int64_t> rank;   ///< `<gpu rank>`: NCCL takes the rank as given
    XmlPlace at;
};

struct NcclGraphChannelXml {
    std::vector<NcclGraphDevice> devices;
    XmlPlace at;
};

/// One `<graph>`: NCCL's ncclTopoGraph fields as the file states them.
struct NcclGraphXml {
    int id = 0, pattern = 0, crossnic = 0, nchannels = 0, samechannels = 0;
    double speedintra = 0, speedinter = 0, latencyinter = 0;
    std::string typeintra, typeinter;
    std::vector<NcclGraphChannelXml> channels;
    XmlPlace at;
};

struct NcclGraphFile {
    std::vector<NcclGraphXml> graphs;  ///< in file order
    std::vector<std::string> notes;    ///< file:line:col: what NCCL skips
};

/// NCCL_TOPO_PATTERN_* (src/include/graph.h:160-169).
inline constexpr int nccl_pattern_balanced_tree = 1, nccl_pattern_split_tree = 2, nccl_pattern_tree = 3, nccl_pattern_ring = 4,
                     nccl_pattern_nvls = 5, nccl_pattern_collnet_direct = 6;
/// What NCCL's graphs hold: MAXCHANNELS / 2 channels (the other half are their duplicates).
inline constexpr int nccl_max_graph_channels = 32;

/// Whether a text's first element is `<graphs` (after an XML declaration and comments).
bool looks_like_nccl_graph(std::string_view text);

/// Reads a graph file; `name` is used in messages. Throws InputError with file:line:col.
NcclGraphFile read_nccl_graph(std::string_view text, std::string_view name);

}  // namespace collsched
