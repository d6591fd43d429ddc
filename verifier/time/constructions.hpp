/** \file
 * The registry of collsched's constructions (docs/architecture.md, "The constructions' registry"):
 * one table, constructions(), every schedule built rather than searched one row (a Construction,
 * verifier/synth/problem/construction.hpp) with every builder it has: a steps builder (read by the
 * steps objective, which its callers hand the rows: OptimizeOptions::registry), a time provider
 * (read by the time objective: construction_providers, time_providers), an NCCL name (`compare
 * nccl:NAME`: compare_nccl). A new construction is its file and one row of constructions.cpp.
 */
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/budget.hpp"
#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/synth/problem/construction.hpp"
#include "verifier/synth/problem/instance.hpp"
#include "verifier/time/candidates.hpp"

namespace collsched {

/// Every row, in the order the steps objective tries each stage's and the time objective runs the providers.
const std::vector<Construction>& constructions();

/// The time objective's providers of collsched's constructions: the rows with a provider but NCCL's, in order (rings,
/// tree packing, the least steps, the hierarchical synthesis, the constructions for time, NVLS, SHARP, the pipelined
/// rings, the link trees).
std::vector<NamedProvider> construction_providers();

/// NCCL's algorithms generated for the machine (the row `nccl`, `compare nccl:*`: verifier/constructions/nccl/nccl.hpp):
/// rings, trees, PAT, p2p, each marked as NCCL's, so that the speed-up is printed over the best of them.
NamedProvider nccl_provider();

/// What `compare nccl:NAME` builds: the row whose NCCL name is NAME's algorithm ("ring x16": "ring"), `*` every one
/// NCCL runs for the collective (the row `nccl`). InputError (verifier/constructions/nccl' nccl_baseline: the names NCCL has for
/// the collective on the machine) for a name it does not run there.
std::vector<nccl::Baseline> compare_nccl(const std::string& name, std::shared_ptr<const Topology>, const Collective&, const Model&,
                                         const nccl::BaselineOptions&);

/// Every provider of optimize --size, in the rows' order: the constructions, the library's schedules from `catalog`
/// (library_provider, objective.hpp), NCCL's algorithms.
std::vector<NamedProvider> time_providers(const std::string& catalog, const MemoryBudget& memory);

// What the providers share.

/// The instance with C chunks, or nullopt when C is not taken (too many messages).
std::optional<SynthInstance> with_chunks(const SynthInstance& in, std::uint32_t chunks);

/// Transfers a chunk count costs roughly (to keep tables small): a chunk of every datum to every
/// processor, or 2(P-1) per chunk for a reduction on rings.
std::uint64_t rough_transfers(CollectiveKind k, std::uint64_t P, std::uint64_t C);

/// The most transfers a construction's table has (rings, packings, collsched's NVLS forms).
inline constexpr std::uint64_t max_transfers = std::uint64_t{1} << 19;

/// When a provider's step stops: at most `cap` seconds and `share` of the time left before the
/// query's deadline. Under a short --timeout or on a large machine the providers first in line
/// took all of it and those after them (the constructions for time, NCCL's algorithms) did not
/// run: on 1,024 GPUs the hierarchical synthesis took its 20 s of a 60 s limit.
std::chrono::steady_clock::time_point share_until(const CandidateQuery& q, double cap, double share);

}  // namespace collsched
