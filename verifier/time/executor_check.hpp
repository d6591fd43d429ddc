/** \file
 * What a stock executor can run (docs/time.md, "Optimizing on an executor"): on an executor other
 * than ideal, the time objective keeps a candidate only if the file that executor loads can be
 * written for it with the stock executor's limits (its exporter's check): NCCL a graph file of its
 * rings, the MSCCL executor MSCCL-IR, MSCCL++ an execution plan. NCCL's own algorithms are what
 * stock NCCL runs and always stay.
 */
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/compare.hpp"
#include "verifier/time/candidates.hpp"

namespace collsched {

/// The format the executor loads ("nccl-graph", "msccl", "mscclpp"); empty for ideal.
std::string_view executor_format(const TimeBasis&);
/// Why the executor cannot run candidate c in protocol p (its exporter's refusal), or "" when it can; past
/// `deadline` the MSCCL++ writer and its check throw LimitReached.
std::string refusal(const TimeCandidate& c, std::string_view format, Protocol p, Deadline deadline = {});
/// False, with a note of the exporter's reason, when the query's executor cannot run c.
bool runs_on_executor(const TimeCandidate& c, const CandidateQuery& q, std::vector<std::string>& notes);
/// On executor nccl, the candidates of `raw` its graph exporter refuses are marked `unrun` (not planned, timed or
/// checked), each with its note.
void leave_out_unrun(std::vector<TimeCandidate>& raw, const CandidateQuery& q, std::vector<std::string>& notes);

}  // namespace collsched
