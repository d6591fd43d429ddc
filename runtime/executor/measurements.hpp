/** \file
 * The readers of measured collective times, the executor model's calibration input (issue 55):
 * the calibration table runtime/executor/calibration/measurements.csv (one published measurement
 * a row, its columns in calibration/README.md) and nccl-tests output as all_reduce_perf and its
 * siblings print it (a user's own measurements). Both are strict: a cell or a table row that does
 * not read is an InputError with `file:line:col` and what was expected, never a skipped row or a
 * silent zero. What nccl-tests measures is one row of `operations` below: a collective of
 * compiler/table, or sendrecv (a point-to-point exchange that has no CollectiveKind), with its
 * program name and the bus factor nccl-tests prints busbw with.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/table/collective_kinds.hpp"

namespace collsched::executor {

/// What a measurement ran: the operations nccl-tests has a program for.
enum class Operation : std::uint8_t { allreduce, allgather, reduce_scatter, alltoall, broadcast, reduce, sendrecv };

/// nccl-tests' busbw = algbw x factor, with n ranks (src/*.cu, `getBw`).
enum class BusFactor : std::uint8_t {
    two_n_minus_1_over_n,  ///< 2(n-1)/n: allreduce
    n_minus_1_over_n,      ///< (n-1)/n: allgather, reduce_scatter, alltoall
    one,                   ///< 1: broadcast, reduce, sendrecv
};

/// One row per operation: its name in the CSV (a collective's is its compiler/table name), the
/// collective it is (none for sendrecv), its nccl-tests program and its bus factor.
struct OperationRow {
    Operation operation;
    std::string_view name;
    std::optional<CollectiveKind> kind;
    std::string_view program;  ///< "all_reduce_perf"
    BusFactor factor;
};

inline constexpr OperationRow operations[] = {
    {Operation::allreduce, collective_row(CollectiveKind::allreduce).name, CollectiveKind::allreduce, "all_reduce_perf",
     BusFactor::two_n_minus_1_over_n},
    {Operation::allgather, collective_row(CollectiveKind::allgather).name, CollectiveKind::allgather, "all_gather_perf",
     BusFactor::n_minus_1_over_n},
    {Operation::reduce_scatter, collective_row(CollectiveKind::reduce_scatter).name, CollectiveKind::reduce_scatter,
     "reduce_scatter_perf", BusFactor::n_minus_1_over_n},
    {Operation::alltoall, collective_row(CollectiveKind::alltoall).name, CollectiveKind::alltoall, "alltoall_perf",
     BusFactor::n_minus_1_over_n},
    {Operation::broadcast, collective_row(CollectiveKind::broadcast).name, CollectiveKind::broadcast, "broadcast_perf",
     BusFactor::one},
    {Operation::reduce, collective_row(CollectiveKind::reduce).name, CollectiveKind::reduce, "reduce_perf", BusFactor::one},
    {Operation::sendrecv, "sendrecv", std::nullopt, "sendrecv_perf", BusFactor::one},
};

constexpr const OperationRow& operation_row(Operation op) { return operations[static_cast<std::size_t>(op)]; }
/// The operation named `name` as the CSV writes it ("allreduce", "sendrecv"), or nullopt.
std::optional<Operation> find_operation(std::string_view name);
/// nccl-tests' bus factor of `op` on `ranks` ranks: busbw = algbw x factor.
double bus_factor(Operation op, std::uint32_t ranks);

/// Which half of an nccl-tests row a time was taken from.
enum class Placement : std::uint8_t { unstated, out_of_place, in_place };

/// One row of measurements.csv, its columns typed (calibration/README.md says what each means).
struct Measurement {
    std::uint32_t id = 0;
    std::string machine, gpu;
    std::uint32_t boxes = 0;
    std::optional<std::uint32_t> gpus_per_box;  ///< empty: the source does not say
    std::string intra, inter, library, version;
    Operation operation = Operation::allreduce;
    std::string algorithm, protocol;
    std::optional<std::uint32_t> channels;
    double size_bytes = 0;
    std::optional<double> time_us, algbw_gbps, busbw_gbps;  ///< at least one is present
    Placement placement = Placement::unstated;
    std::string source_kind;  ///< file, doc, issue or pr
    std::string source, locator, notes;

    /// boxes x gpus_per_box, or nullopt when the GPUs per box are not known.
    std::optional<std::uint32_t> ranks() const;
    bool operator==(const Measurement&) const = default;
};

/// The rows of a measurements.csv text: RFC 4180 (quoted fields with "" escapes, CRLF or LF), the
/// exact header of calibration/README.md, every cell typed. Throws InputError
/// `file:line:col: ...` at the first cell that does not read.
std::vector<Measurement> read_measurements_csv(std::string_view text, std::string_view file);

/// The measured time in seconds: time_us, else size / algbw, else size x bus factor / busbw
/// (nccl-tests' definitions, GB = 1e9 B). Throws InputError when only busbw is given and the
/// rank count is unknown.
double time_seconds(const Measurement& m);

/// One half of an nccl-tests row: out-of-place or in-place.
struct NcclTestsHalf {
    double time_us = 0, algbw_gbps = 0, busbw_gbps = 0;
    /// `#wrong` (elements that did not check), or in the older layout `error` (the largest
    /// difference); nullopt when printed N/A (validation off, alltoall in place).
    std::optional<double> wrong;
    bool operator==(const NcclTestsHalf&) const = default;
};

/// One table row of an nccl-tests run.
struct NcclTestsRow {
    std::uint64_t size_bytes = 0, count = 0;
    std::string type;                ///< "float"
    std::string redop;               ///< "sum"; "none" for alltoall and sendrecv; "" in layouts without the column
    std::optional<std::int64_t> root;  ///< -1 when the test has no root; nullopt without the column
    NcclTestsHalf out_of_place, in_place;
    bool operator==(const NcclTestsRow&) const = default;
};

/// A whole nccl-tests output.
struct NcclTestsRun {
    std::string file;
    Operation operation = Operation::allreduce;
    std::uint32_t ranks = 0, nodes = 0;  ///< ranks, and the distinct host names they ran on
    std::string gpu;                     ///< rank 0's device name, "NVIDIA H100 80GB HBM3"
    std::string nccl_version;            ///< "2.21.5", from nccl-library= or NCCL INFO; "" if not printed
    std::optional<double> avg_busbw_gbps;  ///< the "# Avg bus bandwidth" trailer
    std::vector<NcclTestsRow> rows;
};

/// What the caller knows that the text may not say. The text wins where it says; where it says
/// otherwise than a hint, that is an error.
struct NcclTestsHints {
    std::optional<Operation> operation;
    /// For outputs whose "Using devices" list is missing or partial (a quoted tail).
    std::optional<std::uint32_t> ranks, nodes;
};

/// Reads nccl-tests output (any of its programs; the columns as the table's header line names
/// them: `size count type redop root` and `#wrong` since nccl-tests resynced with NCCL 2.13, the
/// older per-program headers without root (or without redop) and with `error`, and the
/// per-iteration and timestamp columns of newer versions). The
/// operation comes from the program's name (a `# Collective test starting:` line or a command
/// line naming `all_reduce_perf` ...) or from `hints`; ranks and nodes from the "Using devices"
/// lines or from `hints`. Other lines (NCCL INFO, mpirun) are skipped; a table row that does not
/// read is an InputError with `file:line:col`.
NcclTestsRun read_nccl_tests(std::string_view text, std::string_view file, const NcclTestsHints& hints = {});

}  // namespace collsched::executor
