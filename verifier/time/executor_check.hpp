/** \file
 * What a stock executor can run (docs/time.md, "Optimizing on an executor"): on an executor other
 * than ideal, the time objective keeps a candidate only if the file that executor loads can be
 * written for it with the stock executor's limits (its exporter's check): NCCL a graph file of its
 * rings, the MSCCL executor MSCCL-IR, MSCCL++ an execution plan. NCCL's own algorithms are what
 * stock NCCL runs and always stay.
 */
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include "runtime/compare.hpp"
#include "verifier/time/candidates.hpp"

namespace collsched {

/// The format the executor loads ("nccl-graph", "msccl", "mscclpp"); empty for ideal.
std::string_view executor_format(const TimeBasis&);
/// Why the executor cannot run candidate c in protocol p (its exporter's refusal), or "" when it can; past
/// `deadline` the MSCCL++ writer and its check throw LimitReached.
/// `read_back`: an MSCCL++ plan's copies as a table (MscclppOptions::read_back).
std::string refusal(const TimeCandidate& c, std::string_view format, Protocol p, Deadline deadline = {}, std::optional<SendTable>* read_back = nullptr);
/// The MSCCL++ plans written for a candidate, per protocol, as tables (mscclpp::plan_table); nullopt where one has none.
using WrittenPlans = std::vector<std::pair<Protocol, std::optional<SendTable>>>;
/// False, with a note of the exporter's reason, when the query's executor cannot run c. With `plans`, on mscclpp: the
/// plan written in each protocol as a table.
bool runs_on_executor(const TimeCandidate& c, const CandidateQuery& q, std::vector<std::string>& notes, WrittenPlans* plans = nullptr);
/// On executor nccl, the candidates of `raw` its graph exporter refuses are marked `unrun` (not planned, timed or
/// checked), each with its note.
void leave_out_unrun(std::vector<TimeCandidate>& raw, const CandidateQuery& q, std::vector<std::string>& notes);

}  // namespace collsched
