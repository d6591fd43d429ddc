/** \file
 * What `optimize` and `probe` share: the solver options on the command line, progress lines on
 * stderr (only when stderr is a terminal), and writing a witness schedule. The reports of a
 * result are verifier/synth/search/report.hpp's.
 */
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "support/error.hpp"
#include "verifier/synth/problem/instance.hpp"
#include "verifier/synth/search/report.hpp"

namespace collsched::tools {

struct SolverArgs {
    std::string solver = "cadical";
    double timeout = 300;
    double solve_timeout = 0;  ///< seconds per solver call; 0: no limit but the whole run's
    std::string memory;        ///< --memory as given; empty: MemoryBudget::standard()
    bool incremental = false;
    bool no_symmetry = false;
    bool no_implied = false;
    std::string cardinality = "totalizer";
    bool no_constructions = false;
    bool solver_proof = false;
    std::string routes = "any";

    /// Adds --solver, --timeout, --solve-timeout, --memory, --incremental, --no-symmetry, --no-implied, --cardinality,
    /// --no-constructions, --solver-proof, and (with `routes`) --routes.
    void add_to(CLI::App&, bool allow_both = false, bool with_routes = true);
    /// Throws InputError for a malformed --memory.
    OptimizeOptions options(SatBackend = SatBackend::cadical) const;
    /// The memory limit: --memory, or MemoryBudget::standard() (COLLSCHED_MAX_MEMORY_MB, else 4 GiB).
    MemoryBudget memory_budget() const;
    RouteSpace route_space() const { return routes == "fixed" ? RouteSpace::fixed : RouteSpace::any; }
    std::string backend_name() const { return solver; }
    /// The solver and the limits as the reports name them (verifier/synth/search/report.hpp).
    SearchLimits limits() const { return {solver, timeout, solve_timeout, memory_budget()}; }
};

/// --topology, --collective and --model: the instance of the synthesizing commands (optimize,
/// pareto, bandwidth), read the same way by each.
struct InstanceArgs {
    std::string topology, collective, model;
    /// What the report says before its own lines: the machine's faults (instance() reads them;
    /// cli/machine_note.hpp), and the model a command chose for a machine with routers.
    mutable std::string said;

    /// Adds the three options (--topology and --collective required) with the command's own
    /// examples and its list of collectives.
    void add_to(CLI::App& cmd, std::string_view topology_example, const std::string& collectives,
                std::string_view model_example = "ports=single");
    /// The instance they name: the topology, the model on top of its family's default, the
    /// collective (`check_size`: refuse one whose goals cannot be listed; Collective::parse).
    /// `limits`: polled while a graph file is read (Topology::parse; LimitReached).
    SynthInstance instance(RouteSpace routes, bool check_size = true, const RunLimits& limits = {}) const;
    /// Refusals that follow from the processor count alone, made before a graph file is read
    /// (issue 41: 17 s of reading 4,096 GPUs before "refused"): when the file states its count
    /// first (Topology::declared_processors), `refuse` gets the collective parsed on a stand-in
    /// of that many processors (linear:P) and may throw InputError in the words it has after
    /// reading. Nothing when no count is stated or the collective does not parse there.
    void refuse_before_reading(const std::function<void(Collective&, const Topology& stand_in)>& refuse) const;
};

/// Prints "T = 11, cadical, 3.2 s" lines on stderr while a search runs, if stderr is a terminal.
class Progress {
public:
    Progress(std::string prefix = "optimize");
    std::function<void(const OptimizeProgress&)> callback();
    /// Ends the current progress line.
    void finish();
    /// Runs `search()` (which reports through callback()) and ends the progress line; a failed
    /// internal check (std::logic_error) becomes the "internal error (a bug, ...)" input error.
    template <class Search>
    auto run(Search&& search) -> decltype(search()) {
        try {
            auto r = search();
            finish();
            return r;
        } catch (const std::logic_error& e) {
            finish();
            throw internal_error(e);
        }
    }
    static InputError internal_error(const std::logic_error&);

private:
    std::string prefix_;
    bool tty_;
    bool open_ = false;
};

/// The schedule text of a witness: `send` statements when every copy travels cut-through from
/// processor to processor (checked by compiling the text back to the same table), else one
/// `hop` per transfer. `comment` (lines) goes on top.
std::string witness_dsl(const SendTable&, const std::string& comment, const std::string& file = {});
/// FILE.sched: the schedule as DSL; anything else: the JSON table. Atomic (write_output).
void write_witness(const std::string& path, const SendTable&, const std::string& comment = {});

}  // namespace collsched::tools
