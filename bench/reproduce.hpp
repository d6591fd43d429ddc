/** \file
 * `collsched reproduce`: the algorithm library (schedules/catalog.json) checked against the
 * papers' claims. The catalog lists each schedule file with the parameter values to run it at;
 * every (schedule, values) row is compiled, proved by the direct checker, replayed by the
 * simulator, and compared with the claims the schedule states (`claim steps = ...`,
 * `bound lower = ...`, docs/dsl.md). Rows are independent, so they run on several threads.
 *
 * Besides the step count, two claims are measured from the table here: `queue` (per router
 * level, the most copies waiting for one outgoing channel at a step boundary: the per-link queue
 * of the flooding algorithms) and `buffer` (the most messages a processor holds that it still has
 * to send, and whether it sends them first in, first out: the forwarding buffers of the ring
 * algorithms). Under wormhole timing a row also reports its cost, T ts + W tc (W the sum of the
 * rounds' largest payloads), beside the catalog's cost formulas for it (the paper's bounds,
 * evaluated by the schedule language). The catalog format and the verdicts are described in
 * docs/reproduction.md.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "compiler/lower/catalog.hpp"
#include "verifier/check/measure.hpp"

namespace collsched::bench {

using verifier::BufferUse;
using verifier::link_queue_high_water;
using verifier::processor_buffers;
using verifier::wormhole_payload;
// The catalog (compiler/lower/catalog.hpp), as the tools and their tests name it.
using collsched::Catalog;
using collsched::CatalogEntry;
using collsched::read_catalog;
using collsched::row_size;

/// One row of the reproduction: what was claimed, measured and concluded.
struct ReproRow {
    const CatalogEntry* entry = nullptr;
    std::vector<std::pair<std::string, std::int64_t>> params;
    std::uint64_t size = 0;

    std::string verdict;  ///< holds, violated, simulator-disagrees, below-lower-bound, claim-mismatch, queue-mismatch, buffer-mismatch, error
    std::string error;    ///< the compiler's first diagnostic for `error`, the first violation for `violated`
    const CatalogNote* note = nullptr;  ///< set when a catalog note explains the verdict

    std::string topology, model;
    std::optional<std::int64_t> claim;  ///< claimed steps
    bool claim_at_most = false;         ///< `claim steps <= ...`
    std::optional<std::int64_t> lower_bound;
    std::uint64_t steps = 0, transfers = 0;
    /// The bandwidth model (docs/semantics.md): R rounds and C chunks, when the table has them
    /// (bandwidth set); `claim rounds = e` is compared with R.
    std::optional<BandwidthCost> bandwidth;
    std::optional<std::int64_t> claim_rounds;
    std::string simulator;  ///< agrees, or what it said instead

    std::optional<std::vector<std::int64_t>> claim_queue;
    std::vector<std::uint32_t> queue_high_water;   ///< per router level, when a queue claim is made (per outgoing link)
    std::vector<std::uint32_t> router_high_water;  ///< the simulator's per-level high-water (all copies in a router)
    std::optional<std::int64_t> claim_buffer;
    std::uint32_t buffer_high_water = 0;  ///< when a buffer claim is made
    bool fifo = true;

    // Wormhole timing: rounds T, payload W = sum over rounds of the largest packet (1 for an empty
    // round), cost = T ts + W tc (the verifier's cost); and the catalog's formulas at this row.
    bool wormhole = false;
    std::uint64_t payload = 0;
    double cost = 0;
    struct Compared {
        std::string name;
        std::optional<std::int64_t> rounds, payload;
        std::string error;
    };
    std::vector<Compared> compared;
    double seconds = 0;

    bool ok() const { return verdict == "holds" || note != nullptr; }
};

/// Compiles, verifies and simulates one row and fills in its verdict.
ReproRow run_row(const CatalogEntry& entry, const std::vector<std::pair<std::string, std::int64_t>>& params);

/// An integer expression of the schedule language with the given params and `name = expr`
/// definitions. Throws InputError with the compiler's first diagnostic when it does not evaluate.
std::int64_t evaluate_formula(const std::string& expr, const std::vector<std::pair<std::string, std::int64_t>>& params,
                              const std::vector<std::string>& let = {});

/// The text table (one line per row, then the notes), and the JSON list of rows.
std::string format_rows(const Catalog&, const std::vector<ReproRow>&);
std::string rows_to_json(const std::vector<ReproRow>&);

}  // namespace collsched::bench
