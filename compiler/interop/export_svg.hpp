/** \file
 * Pictures of a send table: an SVG timeline of link use (steps across, channels or processors
 * down, each cell coloured by its load against its capacity, idle cells light grey so the holes
 * show), an HTML page that wraps the same SVG with hover details, and a Graphviz DOT drawing of
 * the topology with capacities and the table's traffic per link. docs/exports.md shows examples.
 *
 * Rows of the timeline: with `channels`, fat-tree channels are grouped up level 1, up level 2,
 * ..., up level L, then down level L, ..., down level 1, so a packet crossing the tree moves
 * down the picture as it moves right; other families list channels in (from, to) order. With
 * `processors`, each processor has one row split in two: the upper half is its sends against its
 * send capacity, the lower half its receives against its receive capacity (the channel
 * capacities under multi ports, 1 under single or half ports). With `routers`, only the channels
 * between routers of a fat tree (branch levels 2 and up), grouped like `channels`: the links that
 * are a fat tree's bottleneck. `automatic` draws channels when there are at most 128 of them,
 * else a fat tree's router links when there are at most 128 of those (ebft:64), else processors.
 *
 * Every cell of the SVG has a <title> (hover text) naming the row, the step, the load against
 * the capacity and the messages; the HTML page shows it on hover.
 */
#pragma once

#include <cstdint>
#include <string>

#include "compiler/table/send_table.hpp"
#include "compiler/io/table_io.hpp"

namespace collsched {

enum class TimelineRows : std::uint8_t { automatic, channels, routers, processors };

struct TimelineOptions {
    TimelineRows rows = TimelineRows::automatic;
    bool titles = true;  ///< a <title> per cell (hover text: load and messages); always on in HTML
};

/// Parses `auto`, `channels`, `routers`, `processors`. Throws InputError.
TimelineRows parse_timeline_rows(std::string_view);

void write_table_svg(const SendTable&, const TimelineOptions&, fmt::memory_buffer& out, const Flush& flush);
void write_table_html(const SendTable&, const TimelineOptions&, fmt::memory_buffer& out, const Flush& flush);
inline void write_table_svg(const SendTable& t, fmt::memory_buffer& out, const Flush& flush) { write_table_svg(t, {}, out, flush); }
inline void write_table_html(const SendTable& t, fmt::memory_buffer& out, const Flush& flush) { write_table_html(t, {}, out, flush); }

/// The topology as a Graphviz digraph: one edge per link with its capacity (per direction when
/// they differ) and, from the table, the messages it carried each way and its peak load; edges
/// are coloured like the timeline by peak load against capacity. Trees are drawn root on top.
void write_table_dot(const SendTable&, fmt::memory_buffer& out, const Flush& flush);

std::string table_to_svg(const SendTable&, const TimelineOptions& = {});
std::string table_to_html(const SendTable&, const TimelineOptions& = {});
std::string table_to_dot(const SendTable&);

}  // namespace collsched
