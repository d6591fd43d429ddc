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
 * capacities under multi ports, 1 under single or half ports). `automatic` draws channels when
 * there are at most 128 of them, else processors, so n = 64 stays readable either way.
 */
#pragma once

#include <cstdint>
#include <string>

#include "compiler/send_table.hpp"
#include "compiler/table_io.hpp"

namespace collsched {

enum class TimelineRows : std::uint8_t { automatic, channels, processors };

struct TimelineOptions {
    TimelineRows rows = TimelineRows::automatic;
    bool titles = false;  ///< a <title> per cell (hover text); always on in HTML
};

/// Parses `auto`, `channels`, `processors`. Throws InputError.
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
