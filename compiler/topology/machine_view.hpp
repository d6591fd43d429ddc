/** \file
 * The machine view (`collsched topo SPEC --format svg`, docs/topologies.md, "The machine view"):
 * a cluster of boxes drawn as boxes, not as one node per GPU. A *box* is a set of processors
 * joined by channels of at least a quarter of the fastest channel's bandwidth (NVLink against a
 * NIC: 300 GB/s against 25 GB/s); the channels between boxes are the *fabric*. Each box shows its
 * processors (up to 16 drawn, then a count); under the grid of boxes the fabric is one band with
 * what every processor has in it (channels, speed, which processors of other boxes they reach:
 * rails or all), and the link groups are summarized by name pattern (gpu#.out, nic#.in). It stays
 * readable from 16 to 1,024 GPUs: at most 16 boxes a row, compact boxes above 32; past 256 boxes
 * the first 255 and one tile for the rest (the page stays under 16 rows).
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/topology/topology.hpp"

namespace collsched {

/// Boxes drawn one tile each, at most: a machine of more boxes shows the first max_tiles - 1 and
/// one tile for the rest, so the page stays within 16 rows.
inline constexpr std::uint32_t max_tiles = 256;

/// The machine view as an SVG document (plain shapes and text, DejaVu Sans).
std::string machine_svg(const Topology& topo);

/// The largest bandwidth of a channel between two processors (0 when there is none).
double fastest_processor_channel(const Topology& topo);

/// The largest and least bandwidth of a channel with a processor at an end, into or out of a
/// router included (0 and 0 when there is none): the two link classes, when the least is below a
/// quarter of the largest (NVLink against a NIC), of the executor model and NCCL's machine.
struct ProcessorChannelSpeeds {
    double fastest = 0, slowest = 0;
};
ProcessorChannelSpeeds processor_channel_speeds(const Topology& topo);

/// The connected sets of processors joined by channels between processors of at least
/// `min_bandwidth` bytes per second: per processor its set's number, the sets numbered 0, 1, ...
/// in the order of their least processors. The machine view's boxes (a quarter of the fastest)
/// and hierarchical synthesis's (verifier/synth/search/hierarchical.hpp: the fastest only) are these.
std::vector<std::uint32_t> processor_components(const Topology& topo, double min_bandwidth);

}  // namespace collsched
