/** \file
 * The time objective's providers over verifier/constructions/compose/ (rows of the registry, constructions.hpp):
 * the constructions for time (allreduce.hpp: hierarchical and flat allreduce, reduce-scatter and
 * allgather pipelined in pieces, compose::every_shape's shapes) and NVLS on machines whose switches
 * reduce and multicast (nvls.hpp: collsched's forms and NCCL's), and allgather on boxes joined by links
 * between their GPUs (box_links.hpp).
 */
#pragma once

#include <string>
#include <vector>

#include "verifier/time/candidates.hpp"

namespace collsched {

void composed_candidates(const CandidateQuery&, std::vector<TimeCandidate>& out, std::vector<std::string>& notes);
void nvls_candidates(const CandidateQuery&, std::vector<TimeCandidate>& out, std::vector<std::string>& notes);
/// Allgather on boxes joined by links between their GPUs (compose::box_link_allgather), both forms at C = 1, 4, 16,
/// 64, 256 chunks while some size gains more than 0.1 % and the table keeps within max_transfers: each size's fastest
/// per form. Nothing (and no note) on machines it does not apply to.
void box_link_candidates(const CandidateQuery&, std::vector<TimeCandidate>& out, std::vector<std::string>& notes);

}  // namespace collsched
