/** \file
 * The time objective's providers over the synthesizer's constructions (rows of the registry,
 * constructions.hpp): NCCL's ring algorithms on k rings at several chunk counts
 * (verifier/constructions/steps/rings.cpp), tree packings at the chunk counts the cut suggests
 * (tree_packing.cpp; reduce_scatter as the allgather's reversed), the least-steps known schedule
 * and the greedy with one chunk (known.cpp, greedy.cpp), and the hierarchical composition of exact
 * phases (verifier/synth/search/hierarchical.hpp).
 */
#pragma once

#include <string>
#include <vector>

#include "verifier/time/candidates.hpp"

namespace collsched {

void ring_candidates(const CandidateQuery&, std::vector<TimeCandidate>& out, std::vector<std::string>& notes);
void packing_candidates(const CandidateQuery&, std::vector<TimeCandidate>& out, std::vector<std::string>& notes);
void least_steps_candidates(const CandidateQuery&, std::vector<TimeCandidate>& out, std::vector<std::string>& notes);
void hierarchical_candidates(const CandidateQuery&, std::vector<TimeCandidate>& out, std::vector<std::string>& notes);

}  // namespace collsched
