/** \file
 * The last pass of the lowering: causality of sends. A send of data that is not the sender's
 * initial data needs that data to have arrived at the sender by the end of the previous step;
 * every send the evaluate pass recorded as Pending is checked against the sorted transfers (E046
 * names the processor, the message, the step, and when the data first arrives, if ever).
 * Combined values are left to the verifier, since holding one depends on what combines.
 */
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "compiler/lower/evaluate.hpp"

namespace collsched::compiler {

/// The loop values of the pending sends at the given indices (compiler/lower/evaluate.hpp,
/// pending_contexts), asked for only when some fail.
using ContextsOf = std::function<std::vector<std::string>(std::span<const std::size_t>)>;

/// Reports E046 for every pending send of `ev` whose data has not arrived in `transfers`
/// (sorted), once per statement, with the loop values of the first failure there.
void check_holds(std::span<const Transfer> transfers, const Evaluated& ev, Reporter& reporter, const ContextsOf& contexts);

}  // namespace collsched::compiler
