/** \file
 * Reading the per-rank JSON (`collsched.ranks/1`) back into a send table, and the one place
 * that decides what kind of table file a path holds (table JSON, CSV or per-rank JSON).
 *
 * Rebuilding rule (docs/exports.md): a file with `"hops": "listed"` carries its transfers and
 * they are taken as they are; the send and receive records must then be exactly the endpoint
 * view of those transfers. Otherwise every send record `{"to": q, "msg": m, "arrive": a}` of
 * rank p in step s becomes the hops of the topology's route from p to q by the cut-through rule
 * (hop k in step s+k-1; under wormhole timing all in round s), and `a` must be the step of the
 * last hop. Every receive record must be matched by exactly one send record and vice versa.
 * Anything else is refused with an InputError that names the record.
 */
#pragma once

#include <string>
#include <string_view>

#include "compiler/table/send_table.hpp"

namespace collsched {

/// Whether a JSON text is a per-rank file: its top-level "format" starts with "collsched.ranks/".
/// Reads only up to that key.
bool looks_like_ranks(std::string_view text);

/// Parses a per-rank JSON text; `name` is used in messages. Throws InputError.
SendTable parse_ranks_json(std::string_view text, std::string_view name);

}  // namespace collsched
