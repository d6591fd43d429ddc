/** \file
 * Streaming compilation (docs/performance.md): the lowering hands over the send table one step at
 * a time, in increasing step order and sorted within the step exactly as SendTable sorts, instead
 * of materializing it. A table of 370 million transfers (4.4 GB) then never exists in memory;
 * only the steps that sends issued so far still reach (a cut-through send issued in step s
 * crosses its last channel in step s + k - 1) are buffered.
 *
 * A schedule streams when it uses the cut-through policy under `hop` timing (fifo, flood and
 * adaptive arbitrate over all sends at the end) and its `step` blocks never go back to a step
 * already handed over (nor state the rounds of one). Otherwise compile_stream throws NotStreamable and the caller compiles the
 * table as usual. The E046 check (a send of data its source does not hold) is left to the
 * consumer, which replays causality anyway.
 */
#pragma once

#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "compiler/lower/lower.hpp"
#include "compiler/table/send_table.hpp"

namespace collsched {

/// Receives a streamed table.
class StepConsumer {
public:
    virtual ~StepConsumer() = default;
    /// Called once, before the first step: the table without transfers (topology, model,
    /// collective; requirements and extra fields come with finish()).
    virtual void begin(const SendTable& header) = 0;
    /// One step's transfers, sorted by (channel, message); steps come in increasing order and
    /// only steps that have transfers are handed over.
    virtual void step(Step s, std::span<const Transfer> transfers) = 0;
    /// Step s lasts r rounds (`step s rounds r`, r >= 2): told before step s is handed over, for
    /// the rounds the schedule states after begin() (those stated before are in its header).
    virtual void rounds(Step s, std::uint32_t r) = 0;
    /// After the last step: the whole header, now with requirements and extra fields.
    virtual void finish(const SendTable& header) = 0;
};

/// Why a schedule cannot be streamed (the caller falls back to compile()).
class NotStreamable : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Parses and compiles `text`, streaming its steps to `consumer`. Returns false after reporting
/// errors to `diags` (reset to report against (name, text)); the consumer may then have seen
/// some steps. Throws NotStreamable (see above) and whatever the consumer throws.
bool compile_stream(std::string_view text, const std::string& name, const CompileOptions&, Diagnostics& diags,
                    StepConsumer& consumer);

}  // namespace collsched
