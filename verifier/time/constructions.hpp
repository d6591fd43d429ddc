/** \file
 * The registry of collsched's constructions (docs/architecture.md, "The constructions' registry"):
 * every schedule that is built rather than searched, one row each, with its name, the file it is
 * built in, the use it serves and its builder. The lists the objectives read are views of it:
 * optimize's upper bound (least steps) tries the rows of step_constructions
 * (verifier/synth/constructions/known.hpp, below the time model, so that the steps objective reads
 * them without the runtime), the time objective's providers are the rows of use `time`
 * (construction_providers), the library's schedules and NCCL's algorithms the rows after them
 * (time_providers). A new construction is its file and one row: a row of step_constructions for
 * optimize, a row of time_rows (constructions.cpp) for optimize --size.
 */
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/budget.hpp"
#include "verifier/synth/problem/instance.hpp"
#include "verifier/time/candidates.hpp"

namespace collsched {

/// What a row serves: optimize's upper bound on steps (step_constructions), a source of candidates for the time
/// objective, the library's schedules (the catalog's, schedules/catalog.json) or NCCL's algorithms, the baseline.
enum class Use : std::uint8_t { steps, time, library, baseline };
std::string_view to_string(Use);

struct Construction {
    std::string name;  ///< unique over every row: the provider's name in optimize --size's notes
    std::string file;  ///< the file its tables are built in (from the source tree's root)
    Use use = Use::time;
    std::string what;  ///< one line: what it builds (steps rows: the source optimize prints)
    CandidateProvider provide = nullptr;  ///< time and baseline rows: its candidates (the library's: library_provider)
    bool first = false;  ///< run before the others (NamedProvider::first)
};

/// Every row: step_constructions' rows (use `steps`) in their order, then the time objective's in theirs.
const std::vector<Construction>& constructions();

/// The time objective's providers of collsched's constructions: the rows of use `time`, in order (rings, tree packing,
/// the least steps, the hierarchical synthesis, the constructions for time, NVLS, SHARP, the pipelined rings).
std::vector<NamedProvider> construction_providers();

/// NCCL's algorithms generated for the machine (verifier/baselines/nccl.hpp): rings, trees, PAT,
/// p2p, each marked as NCCL's, so that the speed-up is printed over the best of them.
NamedProvider nccl_provider();

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
