/** \file
 * A row of the constructions' registry (docs/architecture.md, "The constructions' registry"): one
 * schedule collsched builds rather than searches, with every builder it has. The one table of rows is
 * `constructions()` (verifier/time/constructions.cpp, where every builder is visible); the steps
 * objective, below the time model, is handed the rows by its callers (ConstructionRows,
 * instance.hpp: OptimizeOptions::registry, ParetoOptions::registry, known_schedule's parameter) and
 * reads their steps builders; the time objective reads their providers; `compare nccl:NAME` their
 * NCCL names. The time provider's types are the time model's (verifier/time/candidates.hpp): this
 * room names them without reading them.
 */
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "support/budget.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched {

struct CandidateQuery;  // verifier/time/candidates.hpp
struct TimeCandidate;   // verifier/time/candidates.hpp

/// A provider of the time objective: appends candidates (not yet verified) and notes on what it could not build.
using CandidateProvider = std::function<void(const CandidateQuery&, std::vector<TimeCandidate>&, std::vector<std::string>& notes)>;

/// When the steps objective (optimize's first schedules) tries a row's steps builder.
enum class StepStage : std::uint8_t {
    none,        ///< no steps builder
    translates,  ///< before the greedy, with the lower bound: settles the search when it meets it (translation_schedule)
    known,       ///< the known schedule of least steps: every row that applies, the fewest steps kept (constructed_schedule)
    chunks,      ///< after it, of the instance's chunks: kept where it has fewer steps (the rings)
};

/// What a steps builder builds from: the instance, the deadline, the schedules the rows of its stage before it found
/// (verified; the XOR-invariant total exchange asks for fewer steps than the first), the proven lower bound (0: none)
/// and the memory budget.
struct StepBuild {
    const SynthInstance& in;
    std::chrono::steady_clock::time_point deadline;
    const std::vector<KnownSchedule>& found;
    Step lower_bound = 0;
    MemoryBudget memory = {};
};

/// A steps builder: its schedule (an empty source: the row's `what`), nullopt where it finds none within the deadline.
/// Rows of stage `known` are verified by constructed_schedule; the others verify their own.
using StepBuilder = std::function<std::optional<KnownSchedule>(const StepBuild&)>;

/// One construction and every builder it has (a row without a builder for a use is not read by it).
struct Construction {
    std::string name;  ///< unique over every row: the provider's name in optimize --size's notes
    std::string file;  ///< the file it is built in (from the source tree's root)
    std::string what;  ///< one line: what it builds (rows of stage `known`: the source optimize prints)
    // the steps objective
    StepStage stage = StepStage::none;
    /// Why it does not apply to the instance (of this encoding); empty when it does (null: it always applies).
    std::function<std::string(const SynthInstance&, EncodingKind)> why_not = nullptr;
    StepBuilder build = nullptr;
    bool own = false;                 ///< collsched's own construction: left out under --no-constructions
    bool fixed_routes = false;        ///< verified with every message on the topology's route
    bool stops_when_late = true;      ///< not started past the deadline or the memory budget (else: no deadline of its own)
    // the time objective
    CandidateProvider provide = nullptr;  ///< its candidates at a size
    bool first = false;                   ///< run before the others (the time objective's baseline, NCCL's)
    bool library = false;                 ///< the library's schedules: its provider is library_provider(catalog) (objective.hpp)
    // compare and the baseline
    std::string nccl = {};  ///< one of NCCL's algorithms: its name in `compare nccl:NAME` (built by verifier/constructions/nccl)
};

/// The first schedule of the rows of `stage` (translates, chunks) that apply, collsched's own only with
/// `constructions`; each verified by its builder.
std::optional<KnownSchedule> stage_schedule(StepStage, const StepBuild&, const ConstructionRows&, bool constructions = true);

/// The shortest verified schedule of the rows of stage `known` that apply, collsched's own only with `constructions`;
/// nullopt for combining instances (their schedule comes from the duality, known_schedule) and when none applies
/// within the limits (constructions/known.cpp).
std::optional<KnownSchedule> constructed_schedule(const SynthInstance&, const ConstructionRows&, bool constructions = true,
                                                  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
                                                  const MemoryBudget& memory = {});

}  // namespace collsched
