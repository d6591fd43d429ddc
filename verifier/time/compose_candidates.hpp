/** \file
 * The time objective's providers over verifier/compose/ (rows of the registry, constructions.hpp):
 * the constructions for time (allreduce.hpp: hierarchical and flat allreduce, reduce-scatter and
 * allgather pipelined in pieces, compose::every_shape's shapes) and NVLS on machines whose switches
 * reduce and multicast (nvls.hpp: collsched's forms and NCCL's).
 */
#pragma once

#include <string>
#include <vector>

#include "verifier/time/candidates.hpp"

namespace collsched {

void composed_candidates(const CandidateQuery&, std::vector<TimeCandidate>& out, std::vector<std::string>& notes);
void nvls_candidates(const CandidateQuery&, std::vector<TimeCandidate>& out, std::vector<std::string>& notes);

}  // namespace collsched
