/** \file
 * The time objective's candidates on machines whose network switches reduce (InfiniBand SHARP,
 * `collsched machine ... --sharp`; issue 44): collsched's SHARP allreduce (verifier/constructions/compose/nvls.hpp,
 * sharp_allreduce: NVLS or direct in the box, the fabric's switches add across the boxes), and
 * NCCL's algorithms through SHARP generated for the machine: CollNet Direct, CollNet Chain and,
 * with NVLS in the boxes, NCCL's NVLS across boxes (NVLS + CollNet). One provider (candidates.hpp).
 */
#pragma once

#include <string>
#include <vector>

#include "verifier/time/candidates.hpp"

namespace collsched {

void sharp_candidates(const CandidateQuery&, std::vector<TimeCandidate>& out, std::vector<std::string>& notes);

}  // namespace collsched
