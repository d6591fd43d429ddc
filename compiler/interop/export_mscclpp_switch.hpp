/** \file
 * MSCCL++ plans with switch channels (docs/exports.md, "Switch channels"), private to
 * export_mscclpp.cpp: tables whose switch reduces or multicasts are written as `glres` and
 * `gstore` ops on switch channels instead of puts.
 */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "compiler/interop/export_mscclpp.hpp"

namespace collsched::detail {

/// Whether some switch of the table (a router declared to reduce or multicast) sends a message
/// more often than it received it: a sum it made, or copies it multiplied.
bool uses_switch_functions(const SendTable&);

/// The plan of such a table (not yet verified; table_to_mscclpp reads it back and checks it).
/// Throws InputError naming what the table does that a switch channel cannot.
std::string switch_plan(const SendTable&, const MscclppOptions&);

/// A router that reduces or multicasts (a switch channel's switch).
bool is_switch_node(const Topology&, Node);

/// The plan of an allreduce table through the switches of several boxes, with puts between the
/// boxes (export_mscclpp_boxes.cpp; docs/exports.md, "Plans across boxes"); not yet verified.
std::string boxes_plan(const SendTable&, const MscclppOptions&, const Messages&);

/// The plan's JSON around its GPUs: name, collective, Simple, in place, the size range.
nlohmann::ordered_json plan_envelope(const SendTable&, const MscclppOptions&, std::string_view collective, nlohmann::ordered_json gpus);

/// Refuses (InputError) a `--size-range` that holds no size the executor serves with a plan of
/// `input_chunks` input chunks: multiples of 16 bytes x input_chunks (allgather: x GPUs), the
/// alignment checkMessageSize demands (execution_plan.cc:293-308).
void check_size_range(const SendTable&, const MscclppOptions&, std::uint64_t input_chunks);

/// Throws InputError: "cannot write an MSCCL++ plan for <collective> on <topology>: <why>".
[[noreturn]] void refuse_plan(const SendTable&, std::string_view why);

}  // namespace collsched::detail
