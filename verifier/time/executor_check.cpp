// What a stock executor can run (verifier/time/executor_check.hpp).
#include "verifier/time/executor_check.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/formats/export_formats.hpp"
#include "support/budget.hpp"
#include "support/error.hpp"
#include "verifier/constructions/nccl/nccl_graph_check.hpp"

namespace collsched {

namespace {

/// Tables above this many transfers are not offered to an exporter for the check (docs/time.md, "Optimizing on
/// an executor"): memory. An MSCCL++ plan and its check take about 13 KiB a transfer (29,760 transfers: 395 MB
/// peak, `convert --format mscclpp`); what the stock executor runs (64 ops a thread block, 108 blocks a GPU) the
/// writer decides itself, a table beyond it refused at once by its floor, and the check stops at the deadline.
constexpr std::size_t export_check_limit = std::size_t{1} << 16;
/// An NCCL graph file's check reads the table's rings back (verifier/constructions/nccl/nccl_graph_check.hpp), a few
/// hundred bytes a transfer: the crossnic rings on 32 channels on 4 x 8 H100 with rail switches as routers (126,976
/// transfers, every hop through a switch two) are checked in about 1 s.
constexpr std::size_t nccl_graph_check_limit = std::size_t{1} << 18;
constexpr std::uint64_t mscclpp_check_bytes_per_transfer = 16 << 10;

/// Why table c is not offered to its exporter for the check, or "".
std::string not_offered(const TimeCandidate& c, std::string_view format) {
    const std::size_t n = c.table->transfers.size();
    const std::size_t limit = format == "nccl-graph" ? nccl_graph_check_limit : export_check_limit;
    if (n > limit) return fmt::format("{} transfers, above the {} the export is checked for", n, limit);
    if (format == "mscclpp")
        if (const MemoryBudget m = MemoryBudget::standard(); !m.fits(n * mscclpp_check_bytes_per_transfer))
            return m.refusal(n * mscclpp_check_bytes_per_transfer, fmt::format("the check of its MSCCL++ plan ({} transfers)", n));
    return "";
}

}  // namespace

/// The file a stock executor loads (docs/time.md, "Executors"): NCCL a graph file of rings (its own
/// algorithms run as they are), the MSCCL executor MSCCL-IR, MSCCL++ an execution plan; none for ideal.
std::string_view executor_format(const TimeBasis& b) {
    if (b.ideal()) return {};
    switch (b.executor->kind) {
        case ExecutorKind::nccl: return "nccl-graph";
        case ExecutorKind::msccl: return "msccl";
        case ExecutorKind::mscclpp: return "mscclpp";
        case ExecutorKind::ideal: break;
    }
    return {};
}

/// Why the executor cannot run candidate c in protocol p (its exporter's refusal: a limit of the stock
/// executor, a shape its format cannot say), or "" when it can. Past `deadline` the MSCCL++ writer and its check
/// stop: LimitReached.
std::string refusal(const TimeCandidate& c, std::string_view format, Protocol p, Deadline deadline, std::optional<SendTable>* read_back) {
    if (format == "nccl-graph" && c.nccl) return "";
    if (std::string why = not_offered(c, format); !why.empty()) return why;
    ExportOptions o;
    if (p != Protocol::none) o.msccl.proto = o.mscclpp.proto = std::string(to_string(p));
    o.mscclpp.deadline = deadline;
    o.mscclpp.read_back = read_back;
    o.mscclpp.chains_a_block = c.mscclpp_chains_a_block;
    fmt::memory_buffer out;
    try {
        // NCCL graph files (one every node reads, or one per node) are read back: NCCL must run the table's data, not more
        if (format == "nccl-graph") return nccl::nccl_runs_more(*c.table, nccl_graph_files_xml(*c.table), deadline);
        write_table_as(*c.table, format, o, out, [&](fmt::memory_buffer& b) { b.clear(); });
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

/// On an executor, a table it cannot run is not a candidate: false, with a note of its exporter's reason (a limit of the
/// stock executor, a shape its format cannot say), or that the check did not end before the query's time limit.
bool runs_on_executor(const TimeCandidate& c, const CandidateQuery& q, std::vector<std::string>& notes, WrittenPlans* plans) {
    const std::string_view format = executor_format(q.basis());
    if (format.empty() || c.nccl) return true;  // NCCL's own algorithms: what stock NCCL runs, the baseline
    // every protocol it runs in at some size, each written as `--format` writes it there (a table checked in LL, its
    // protocol at 1 KiB, won 1 MiB in Simple, where its MSCCL++ plan needs 67 ops a thread block: optimize --format
    // mscclpp then refused the run)
    std::vector<Protocol> ps;
    for (Protocol p : c.protocols)
        if (std::find(ps.begin(), ps.end(), p) == ps.end()) ps.push_back(p);
    if (ps.empty()) ps.push_back(Protocol::none);
    const std::string executor = fmt::format("executor {} ({})", q.basis().executor_name(), format);
    if (std::string why = not_offered(c, format); !why.empty()) {  // not offered to the writer: in no protocol
        notes.push_back(fmt::format("{} ({}): not run by {}: {}", c.name, c.provider, executor, why));
        return false;
    }
    for (Protocol p : ps) {
        std::string why;
        std::optional<SendTable> read_back;
        try {
            why = refusal(c, format, p, Deadline::at(q.deadline), plans && format == "mscclpp" ? &read_back : nullptr);
        } catch (const LimitReached& e) {
            notes.push_back(fmt::format("{} ({}): not checked for {} within the time limit ({}), left out", c.name, c.provider, executor, e.what()));
            return false;
        }
        if (why.empty()) {
            if (plans && format == "mscclpp") plans->emplace_back(p, std::move(read_back));
            continue;
        }
        const std::string in = p == Protocol::none || ps.size() == 1 ? std::string() : fmt::format(" in {}", to_string(p));
        notes.push_back(fmt::format("{} ({}): not run by {}{}: {}", c.name, c.provider, executor, in, why));
        return false;
    }
    return true;
}

/// On executor nccl, the tables its graph exporter refuses are left out before they are planned and timed (a graph file
/// has no protocol: the refusal holds in all of them). The constructions and link trees of 4 x 8 H100 with NIC 0 at
/// half (allgather, 16 MiB and 1 GiB) took 11 s to time in NCCL's three protocols before each was refused in
/// milliseconds; under load NCCL's own ring was then not checked by --timeout 60. A table on another topology object
/// than the query's (the library's) is left to the check after its timing, which re-stamps it first.
void leave_out_unrun(std::vector<TimeCandidate>& raw, const CandidateQuery& q, std::vector<std::string>& notes) {
    if (executor_format(q.basis()) != "nccl-graph") return;
    for (TimeCandidate& c : raw)
        if (!c.nccl && c.table->topology == q.instance.topology && !runs_on_executor(c, q, notes)) c.unrun = true, c.plan.reset();
}

}  // namespace collsched
