// What a stock executor can run (verifier/time/executor_check.hpp).
#include "verifier/time/executor_check.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/formats/export_formats.hpp"
#include "support/error.hpp"

namespace collsched {

namespace {

/// Tables above this many transfers are not offered to an exporter for the check (docs/time.md, "Optimizing on
/// an executor"): the MSCCL++ writer tries one thread-block count after another, each a whole plan (a table of
/// 15,360 transfers on 16 GPUs: 72 plans, 31 s); MSCCL-IR and graph files are written in one pass.
std::size_t export_check_limit(std::string_view format) { return format == "mscclpp" ? std::size_t{1} << 12 : std::size_t{1} << 16; }

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
/// executor, a shape its format cannot say), or "" when it can.
std::string refusal(const TimeCandidate& c, std::string_view format, Protocol p) {
    if (format == "nccl-graph" && c.nccl) return "";
    if (c.table->transfers.size() > export_check_limit(format))
        return fmt::format("{} transfers, above the {} the export is checked for", c.table->transfers.size(), export_check_limit(format));
    ExportOptions o;
    if (p != Protocol::none) o.msccl.proto = o.mscclpp.proto = std::string(to_string(p));
    fmt::memory_buffer out;
    try {
        write_table_as(*c.table, format, o, out, [](fmt::memory_buffer& b) { b.clear(); });
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

/// On an executor, a table it cannot run is not a candidate: false, with a note of its exporter's reason (a limit of
/// the stock executor, a shape its format cannot say).
bool runs_on_executor(const TimeCandidate& c, const CandidateQuery& q, std::vector<std::string>& notes) {
    const std::string_view format = executor_format(q.basis());
    if (format.empty() || c.nccl) return true;  // NCCL's own algorithms: what stock NCCL runs, the baseline
    // every protocol it runs in at some size, each written as `--format` writes it there (a table checked in LL, its
    // protocol at 1 KiB, won 1 MiB in Simple, where its MSCCL++ plan needs 67 ops a thread block: optimize --format
    // mscclpp then refused the run)
    std::vector<Protocol> ps;
    for (Protocol p : c.protocols)
        if (std::find(ps.begin(), ps.end(), p) == ps.end()) ps.push_back(p);
    if (ps.empty()) ps.push_back(Protocol::none);
    for (Protocol p : ps) {
        const std::string why = refusal(c, format, p);
        if (why.empty()) continue;
        const bool any = c.table->transfers.size() > export_check_limit(format);  // not offered to the writer: in no protocol
        const std::string in = any || p == Protocol::none || ps.size() == 1 ? std::string() : fmt::format(" in {}", to_string(p));
        notes.push_back(fmt::format("{} ({}): not run by executor {} ({}){}: {}", c.name, c.provider, q.basis().executor_name(), format, in, why));
        return false;
    }
    return true;
}

}  // namespace collsched
