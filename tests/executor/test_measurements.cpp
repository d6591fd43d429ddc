// The readers of measured times (runtime/executor/measurements.hpp): the committed calibration
// table read whole and checked for consistency (algbw = size / time, busbw = algbw x nccl-tests'
// bus factor, within the printed digits), the committed nccl-tests logs, and bad input reported
// at its line and column.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/executor/measurements.hpp"
#include "support/error.hpp"

using namespace collsched;
using namespace collsched::executor;

namespace {

const std::string calibration = std::string(COLLSCHED_SOURCE_DIR) + "/runtime/executor/calibration/";

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in, path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

const std::string header =
    "id,machine,gpu,boxes,gpus_per_box,intra,inter,library,version,collective,algorithm,protocol,channels,size_bytes,time_us,"
    "algbw_gbps,busbw_gbps,in_place,source_kind,source,locator,notes\n";
const std::string good_row =
    "1,DGX H100,H100,1,8,nvswitch,none,nccl,2.21.5,allreduce,ring,default,,1048576,20.5,51.15,89.51,out,issue,NVIDIA/nccl,#1,\"a, "
    "\"\"quoted\"\" note\"\n";

/// The message of the InputError `read` throws, or "" when it throws none.
template <class F>
std::string error_of(F read) {
    try {
        read();
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

/// Whether `printed` is `exact` within the rounding of the printed digits: 1 % or 0.02 GB/s.
bool close(double printed, double exact) { return std::abs(printed - exact) <= std::max(0.01 * std::abs(exact), 0.02); }

}  // namespace

TEST_CASE("measurements.csv: every row reads, ids unique, sources named") {
    const std::vector<Measurement> rows = read_measurements_csv(slurp(calibration + "measurements.csv"), "measurements.csv");
    CHECK(rows.size() == 353);
    std::set<std::uint32_t> ids;
    std::set<std::string> sources;
    for (const Measurement& m : rows) {
        CHECK_MESSAGE(ids.insert(m.id).second, "id ", m.id, " twice");
        CHECK_MESSAGE(!m.source.empty(), "id ", m.id);
        CHECK_MESSAGE(!m.locator.empty(), "id ", m.id);
        CHECK_MESSAGE((m.time_us || m.algbw_gbps || m.busbw_gbps), "id ", m.id);
        const double t = time_seconds(m);
        CHECK_MESSAGE((t > 0 && std::isfinite(t)), "id ", m.id);
        sources.insert(m.source);
    }
    CHECK(sources.size() >= 5);  // issue 55: at least 5 sources
    // the first row as the file writes it
    const Measurement& first = rows.front();
    CHECK(first.id == 1);
    CHECK(first.machine == "ND A100 v4");
    CHECK(first.operation == Operation::allgather);
    CHECK(operation_row(first.operation).kind == CollectiveKind::allgather);
    CHECK(first.ranks() == 8u);
    CHECK(first.size_bytes == 1073741824.0);
    CHECK(first.time_us == doctest::Approx(3683.13));
    CHECK(first.placement == Placement::in_place);
    CHECK(first.source == "microsoft/mscclpp");
}

TEST_CASE("measurements.csv: times, algbw and busbw agree within the printed digits") {
    const std::vector<Measurement> rows = read_measurements_csv(slurp(calibration + "measurements.csv"), "measurements.csv");
    int checked_alg = 0, checked_bus = 0;
    for (const Measurement& m : rows) {
        if (m.time_us && m.algbw_gbps) {
            // nccl-tests: algbw = size / time, GB = 1e9 B
            const double exact = m.size_bytes / (*m.time_us * 1e-6) / 1e9;
            CHECK_MESSAGE(close(*m.algbw_gbps, exact), fmt::format("id {}: algbw {} but size/time {:.4f}", m.id, *m.algbw_gbps, exact));
            ++checked_alg;
        }
        if (m.algbw_gbps && m.busbw_gbps && m.ranks()) {
            const double exact = *m.algbw_gbps * bus_factor(m.operation, *m.ranks());
            CHECK_MESSAGE(close(*m.busbw_gbps, exact),
                          fmt::format("id {}: busbw {} but algbw x factor {:.4f} on {} ranks", m.id, *m.busbw_gbps, exact, *m.ranks()));
            ++checked_bus;
        }
        if (m.algbw_gbps && m.busbw_gbps && !m.ranks() && *m.algbw_gbps > 0) {
            // the rank count is unknown: the factor is still nccl-tests' for some n >= 2
            const double ratio = *m.busbw_gbps / *m.algbw_gbps;
            CHECK_MESSAGE((ratio > 0.45 && ratio < 2.05), fmt::format("id {}: busbw/algbw {:.3f}", m.id, ratio));
        }
        if (m.time_us && !m.algbw_gbps && m.busbw_gbps && m.ranks()) {
            const double exact = m.size_bytes / (*m.time_us * 1e-6) / 1e9 * bus_factor(m.operation, *m.ranks());
            CHECK_MESSAGE(close(*m.busbw_gbps, exact), fmt::format("id {}: busbw {} but size/time x factor {:.4f}", m.id, *m.busbw_gbps, exact));
            ++checked_bus;
        }
    }
    CHECK(checked_alg >= 100);
    CHECK(checked_bus >= 80);
}

TEST_CASE("time_seconds: the time, else the bandwidths with nccl-tests' bus factors") {
    CHECK(bus_factor(Operation::allreduce, 8) == doctest::Approx(1.75));
    CHECK(bus_factor(Operation::allgather, 8) == doctest::Approx(0.875));
    CHECK(bus_factor(Operation::reduce_scatter, 4) == doctest::Approx(0.75));
    CHECK(bus_factor(Operation::alltoall, 2) == doctest::Approx(0.5));
    CHECK(bus_factor(Operation::broadcast, 8) == 1);
    CHECK(bus_factor(Operation::reduce, 8) == 1);
    CHECK(bus_factor(Operation::sendrecv, 2) == 1);
    Measurement m;
    m.operation = Operation::allreduce;
    m.boxes = 2;
    m.gpus_per_box = 8;
    m.size_bytes = 1e9;
    m.busbw_gbps = 187.5;  // algbw 100 GB/s on 16 ranks: 10 ms
    CHECK(time_seconds(m) == doctest::Approx(0.01));
    m.algbw_gbps = 50;
    CHECK(time_seconds(m) == doctest::Approx(0.02));
    m.time_us = 123;
    CHECK(time_seconds(m) == doctest::Approx(123e-6));
}

TEST_CASE("measurements.csv: bad input names its line and column") {
    CHECK(read_measurements_csv(header + good_row, "m.csv").size() == 1);
    CHECK(read_measurements_csv(header + good_row, "m.csv")[0].notes == "a, \"quoted\" note");
    std::string crlf = header + good_row;
    for (std::size_t p = 0; (p = crlf.find('\n', p)) != std::string::npos; p += 2) crlf.insert(p, "\r");
    CHECK(read_measurements_csv(crlf, "m.csv") == read_measurements_csv(header + good_row, "m.csv"));

    // a missing column in the header
    std::string no_notes = header;
    no_notes.replace(no_notes.find(",notes"), 6, "");
    CHECK(error_of([&] { read_measurements_csv(no_notes + good_row, "m.csv"); }) ==
          fmt::format("m.csv:1:{}: missing column 'notes' (the header is '{}')", no_notes.size(), header.substr(0, header.size() - 1)));
    // a misspelled column
    std::string renamed = header;
    renamed.replace(renamed.find("time_us"), 7, "time");
    CHECK(error_of([&] { read_measurements_csv(renamed + good_row, "m.csv"); })
              .starts_with(fmt::format("m.csv:1:{}: expected column 'time_us', found 'time'", header.find("time_us") + 1)));
    // a row one cell short
    std::string short_row = good_row.substr(0, good_row.find(",\"a, "));
    CHECK(error_of([&] { read_measurements_csv(header + short_row + "\n", "m.csv"); }) ==
          fmt::format("m.csv:2:{}: expected 22 cells, found 21 (the row ends before 'notes')", short_row.size() + 1));
    // a bad number: the time, at its column
    std::string bad_time = good_row;
    bad_time.replace(bad_time.find("20.5"), 4, "20.5us");
    CHECK(error_of([&] { read_measurements_csv(header + good_row + bad_time, "m.csv"); }) ==
          fmt::format("m.csv:3:{}: time_us: expected a decimal number > 0, found '20.5us'", good_row.find("20.5") + 1));
    std::string bad_boxes = good_row;
    bad_boxes.replace(bad_boxes.find(",1,8,"), 5, ",-1,8,");
    CHECK(error_of([&] { read_measurements_csv(header + bad_boxes, "m.csv"); }) ==
          "m.csv:2:17: boxes: expected a whole number of at least 1, found '-1'");
    // an unterminated quote, reported where it opened
    std::string open_quote = good_row.substr(0, good_row.size() - 2);
    CHECK(error_of([&] { read_measurements_csv(header + open_quote, "m.csv"); }) ==
          fmt::format("m.csv:2:{}: unterminated quoted cell: the quote opened here never closes", good_row.find('"') + 1));
    // an unknown collective
    std::string gather = good_row;
    gather.replace(gather.find("allreduce"), 9, "gather");
    CHECK(error_of([&] { read_measurements_csv(header + gather, "m.csv"); })
              .starts_with(fmt::format("m.csv:2:{}: collective: expected one of allreduce, allgather, reduce_scatter, alltoall, "
                                       "broadcast, reduce, sendrecv, found 'gather'",
                                       good_row.find("allreduce") + 1)));
    // no time at all
    std::string timeless = good_row;
    timeless.replace(timeless.find("20.5,51.15,89.51"), 16, ",,");
    CHECK(error_of([&] { read_measurements_csv(header + timeless, "m.csv"); }).starts_with("m.csv:2:"));
    // an id twice
    CHECK(error_of([&] { read_measurements_csv(header + good_row + good_row, "m.csv"); }) == "m.csv:3:1: id 1 again (first on line 2)");
}

TEST_CASE("nccl-tests: the committed GCP A3 Mega log (2 x 8 H100)") {
    const NcclTestsRun run = read_nccl_tests(slurp(calibration + "logs/gcp_a3mega_2x8_h100_all_reduce.txt"), "a3mega.txt");
    CHECK(run.operation == Operation::allreduce);  // from the command line in the header
    CHECK(run.ranks == 16);
    CHECK(run.nodes == 2);
    CHECK(run.gpu == "NVIDIA H100 80GB HBM3");
    CHECK(run.nccl_version == "");
    REQUIRE(run.rows.size() == 31);
    const NcclTestsRow& first = run.rows.front();
    CHECK(first.size_bytes == 8);
    CHECK(first.count == 2);
    CHECK(first.type == "float");
    CHECK(first.redop == "sum");
    CHECK(first.root == -1);
    CHECK(first.out_of_place == NcclTestsHalf{135.8, 0.00, 0.00, 0.0});
    CHECK(first.in_place == NcclTestsHalf{123.5, 0.00, 0.00, 0.0});
    const NcclTestsRow& last = run.rows.back();
    CHECK(last.size_bytes == 8589934592ull);
    CHECK(last.count == 2147483648ull);
    CHECK(last.out_of_place == NcclTestsHalf{47535, 180.71, 338.82, 0.0});
    CHECK(last.in_place == NcclTestsHalf{47743, 179.92, 337.35, 0.0});
    for (std::size_t k = 1; k < run.rows.size(); ++k) CHECK(run.rows[k].size_bytes == 2 * run.rows[k - 1].size_bytes);
    CHECK(run.avg_busbw_gbps == doctest::Approx(70.742));
}

TEST_CASE("nccl-tests: the committed GB200 NVL72 log (a quoted tail: one device line)") {
    const std::string text = slurp(calibration + "logs/coreweave_gb200_nvl72_72gpu_all_reduce.txt");
    // the tail names neither the program nor all ranks: the caller says them
    CHECK(error_of([&] { read_nccl_tests(text, "nvl72.txt"); }).starts_with("nvl72.txt: which collective?"));
    CHECK(error_of([&] { read_nccl_tests(text, "nvl72.txt", {Operation::allreduce, {}, {}}); }) ==
          "nvl72.txt:4:1: the device list is partial (1 of ranks 0..71): give the rank and node counts with the file");
    CHECK(error_of([&] { read_nccl_tests(text, "nvl72.txt", {Operation::allreduce, 64, 16}); }).starts_with("nvl72.txt:4:1: the device list shows rank 71"));
    const NcclTestsRun run = read_nccl_tests(text, "nvl72.txt", {Operation::allreduce, 72, 18});
    CHECK(run.ranks == 72);
    CHECK(run.nodes == 18);
    CHECK(run.gpu == "NVIDIA Graphics Device");
    REQUIRE(run.rows.size() == 5);
    CHECK(run.rows.front().size_bytes == 536870912);
    CHECK(run.rows.front().out_of_place == NcclTestsHalf{1806.7, 297.16, 586.06, 0.0});
    CHECK(run.rows.front().in_place == NcclTestsHalf{1835.9, 292.43, 576.74, 0.0});
    CHECK(run.rows.back().size_bytes == 8589934592ull);
    CHECK(run.rows.back().out_of_place == NcclTestsHalf{20299, 423.16, 834.57, 0.0});
    CHECK(run.rows.back().in_place == NcclTestsHalf{20006, 429.37, 846.82, 0.0});
    CHECK(run.avg_busbw_gbps == doctest::Approx(745.53));
}

namespace {

// nccl-tests 2.17 (src/util.cu) as alltoall_perf prints it on one box, with NCCL's INFO lines
// and an mpirun warning mixed in; validation off (-c 0) prints N/A.
const std::string alltoall_log = R"(# nccl-tests version 2.17.6 nccl-headers=22803 nccl-library=22803
# Collective test starting: alltoall_perf
# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 0 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1001 on      node1 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   1002 on      node1 device  1 [0000:2a:00] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid   1003 on      node2 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid   1004 on      node2 device  1 [0000:2a:00] NVIDIA H100 80GB HBM3
node1:1001:1001 [0] NCCL INFO NCCL version 2.28.3+cuda12.9
[node2:01003] mca_base_component_repository_open: unable to open mca_btl_openib
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong 
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)        
        1024            64     float    none      -1    30.12    0.03    0.03    N/A    29.87    0.03    0.03    N/A
        2048           128     float    none      -1    30.55    0.07    0.05    N/A    30.01    0.07    0.05    N/A
        4096           256     float    none      -1    31.02    0.13    0.10    N/A    30.70    0.13    0.10    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.06 
#
# Collective test concluded: alltoall_perf
)";

// The older layout (nccl-tests before 2.13, as in NVIDIA/nccl#1244): no root column, the largest
// error instead of #wrong; broadcast prints its root where allreduce prints its redop.
const std::string old_broadcast_log = R"(# nThread 1 nGpus 8 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid  41000 on     box-a device  0 [0x07] NVIDIA A100-SXM4-80GB
#   Rank  1 Pid  41000 on     box-a device  1 [0x0b] NVIDIA A100-SXM4-80GB
#
#                                                     out-of-place                       in-place          
#       size         count      type    root     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
           8             2     float       0    12.31    0.00    0.00  0e+00    12.02    0.00    0.00  0e+00
          16             4     float       0    12.40    0.00    0.00  0e+00    12.11    0.00    0.00  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.001 
)";

}  // namespace

TEST_CASE("nccl-tests: alltoall_perf with N/A, NCCL INFO and mpirun lines") {
    const NcclTestsRun run = read_nccl_tests(alltoall_log, "a2a.txt");
    CHECK(run.operation == Operation::alltoall);
    CHECK(run.ranks == 4);
    CHECK(run.nodes == 2);
    CHECK(run.nccl_version == "2.28.3");
    REQUIRE(run.rows.size() == 3);
    CHECK(run.rows[0].redop == "none");
    CHECK(run.rows[0].out_of_place == NcclTestsHalf{30.12, 0.03, 0.03, std::nullopt});
    CHECK(run.rows[2].in_place == NcclTestsHalf{30.70, 0.13, 0.10, std::nullopt});
    // after the trailer, a line that starts with digits is not a row
    CHECK(read_nccl_tests(alltoall_log + "0 errors reported by the job script\n", "a2a.txt").rows.size() == 3);
    CHECK(error_of([&] { read_nccl_tests(alltoall_log, "a2a.txt", {{}, 0, {}}); }).starts_with("a2a.txt: 0 ranks"));
    // the caller may say the same, not otherwise
    CHECK(read_nccl_tests(alltoall_log, "a2a.txt", {Operation::alltoall, 4, 2}).rows.size() == 3);
    CHECK(error_of([&] { read_nccl_tests(alltoall_log, "a2a.txt", {Operation::allreduce, {}, {}}); }) ==
          "a2a.txt:2:29: the text runs alltoall_perf, but it was given as allreduce");
    CHECK(error_of([&] { read_nccl_tests(alltoall_log, "a2a.txt", {{}, 8, {}}); }) ==
          "a2a.txt:6:1: the device list shows 4 ranks, but 8 were given");
}

TEST_CASE("nccl-tests: the older layout without a root column (broadcast_perf, error column)") {
    const NcclTestsRun run = read_nccl_tests("$ ./build/broadcast_perf -b 8 -e 16 -g 8\n" + old_broadcast_log, "bcast.txt");
    CHECK(run.operation == Operation::broadcast);
    CHECK(run.ranks == 2);
    CHECK(run.nodes == 1);
    CHECK(run.gpu == "NVIDIA A100-SXM4-80GB");
    REQUIRE(run.rows.size() == 2);
    CHECK(run.rows[0].root == 0);
    CHECK(run.rows[0].redop == "");
    CHECK(run.rows[1].out_of_place == NcclTestsHalf{12.40, 0.00, 0.00, 0.0});
}

TEST_CASE("nccl-tests: the layout of NVIDIA/nccl#1244 (redop, no root, error, numbers invented)") {
    // as that thread quotes it: the out-of-place line without its '#', no device list
    const std::string text = R"(                                                      out-of-place                       in-place          
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
           4             1     float     sum    40.10    0.00    0.00  0e+00    41.20    0.00    0.00  4e-07
           8             2     float     sum    40.30    0.00    0.00  2e-07    40.40    0.00    0.00  2e-07
)";
    const NcclTestsRun run = read_nccl_tests(text, "1244.txt", {Operation::allreduce, 16, 2});
    REQUIRE(run.rows.size() == 2);
    CHECK(run.rows[0].redop == "sum");
    CHECK_FALSE(run.rows[0].root);
    CHECK(run.rows[0].out_of_place == NcclTestsHalf{40.10, 0.00, 0.00, 0.0});
    CHECK(run.rows[0].in_place == NcclTestsHalf{41.20, 0.00, 0.00, 4e-07});
    CHECK(run.rows[1].size_bytes == 8);
    CHECK(error_of([&] { read_nccl_tests(text, "1244.txt", {Operation::allreduce, {}, {}}); }) ==
          "1244.txt: no 'Using devices' list: give the rank and node counts with the file");
}

TEST_CASE("nccl-tests: bad input names its line and column") {
    // a truncated row
    std::string truncated = alltoall_log;
    const std::size_t at = truncated.find("    30.70    0.13    0.10    N/A");
    truncated.erase(at, truncated.find('\n', at) - at);
    CHECK(error_of([&] { read_nccl_tests(truncated, "a2a.txt"); }) ==
          "a2a.txt:18:85: the row ends after 9 cells, expected 13 ('time' next): a truncated row");
    // a cell that is not a number
    std::string garbled = alltoall_log;
    garbled.replace(garbled.find("31.02"), 5, "31,02");
    CHECK(error_of([&] { read_nccl_tests(garbled, "a2a.txt"); }) == "a2a.txt:18:57: time: expected a decimal number, found '31,02'");
    // two programs named
    CHECK(error_of([&] { read_nccl_tests("mpirun ./all_gather_perf\n" + alltoall_log, "x.txt"); }) ==
          "x.txt:1:8: names all_gather_perf, but the run starting on line 3 is alltoall_perf");
    // no program and no hint
    CHECK(error_of([&] { read_nccl_tests(old_broadcast_log, "b.txt"); }).starts_with("b.txt: which collective?"));
    // no table
    CHECK(error_of([&] { read_nccl_tests("# nccl-tests version 2.17.6 nccl-headers=22803 nccl-library=22803\n", "e.txt"); })
              .starts_with("e.txt: no nccl-tests table rows"));
}

TEST_CASE("measurements.csv: the rows taken from the committed logs are the logs' out-of-place cells") {
    const std::vector<Measurement> rows = read_measurements_csv(slurp(calibration + "measurements.csv"), "measurements.csv");
    struct Log {
        std::string file, source;
        NcclTestsHints hints;
        std::size_t rows;
    };
    const Log logs[] = {{"logs/gcp_a3mega_2x8_h100_all_reduce.txt", "lessizzmore/create-a3mega-ztan-fork", {}, 31},
                        {"logs/coreweave_gb200_nvl72_72gpu_all_reduce.txt", "coreweave/nccl-tests", {Operation::allreduce, 72, 18}, 5}};
    for (const Log& log : logs) {
        CAPTURE(log.file);
        const NcclTestsRun run = read_nccl_tests(slurp(calibration + log.file), log.file, log.hints);
        std::size_t matched = 0;
        for (const Measurement& m : rows) {
            if (m.source != log.source || (log.source == "coreweave/nccl-tests" && m.locator != "#43")) continue;
            CAPTURE(m.id);
            CHECK(m.ranks() == run.ranks);
            CHECK(m.placement == Placement::out_of_place);
            auto row = std::find_if(run.rows.begin(), run.rows.end(), [&](const NcclTestsRow& r) { return double(r.size_bytes) == m.size_bytes; });
            REQUIRE(row != run.rows.end());
            CHECK(m.time_us == row->out_of_place.time_us);
            CHECK(m.algbw_gbps == row->out_of_place.algbw_gbps);
            CHECK(m.busbw_gbps == row->out_of_place.busbw_gbps);
            ++matched;
        }
        CHECK(matched == log.rows);
    }
}
