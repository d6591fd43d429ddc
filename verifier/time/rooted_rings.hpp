/** \file
 * collsched's pipelined rings for broadcast and reduce (docs/time.md, "Broadcast and reduce"):
 * the rings NCCL's search builds for the machine (verifier/constructions/nccl, nccl_ring_routes), each
 * channel's share cut into k pieces that follow one another along the ring, with k chosen per size
 * from the pipeline's time (P - 2 + k) (alpha + M / (channels k B)) on the rings' slowest hop, its
 * optimum k* = sqrt((P - 2) M / (channels B alpha)) and the powers of two beside it, and NCCL's
 * chunk counts (1, 4, 16, 64, 256 a channel) so that the best of them is never slower than NCCL's
 * ring. One provider (candidates.hpp).
 */
#pragma once

#include <string>
#include <vector>

#include "verifier/time/candidates.hpp"

namespace collsched {

void rooted_ring_candidates(const CandidateQuery&, std::vector<TimeCandidate>& out, std::vector<std::string>& notes);

}  // namespace collsched
