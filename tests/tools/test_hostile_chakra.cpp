// Hostile Chakra trace sets (tests/tools/hostile_case.hpp; the campaign's runner and the other
// categories are in test_hostile_surfaces.cpp).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "compiler/formats/export_chakra.hpp"
#include "tests/compiler/export_fixtures.hpp"
#include "tests/tools/chakra_trace.hpp"
#include "tests/tools/cli_run.hpp"
#include "tests/tools/hostile_case.hpp"

using namespace collsched;
using namespace collsched::test::hostile;
using collsched::test::parse_trace;
using collsched::test::source;
using collsched::test::Trace;

namespace {

// ------------------------------------------------------------------------------------------------
// Chakra trace sets: the set is checked before it is read (every rank's file there, regular,
// nothing beyond the last rank), files are never read as schedules, limits hold.

/// The rank traces of a table (PREFIX.<r>.et, in the scratch directory as t.<r>.et).
std::vector<std::string> traces_of(const SendTable& t) {
    std::vector<std::string> out;
    for (const ChakraFile& f : table_to_chakra(t, {"/scratch/t", 1024 * std::uint64_t{t.collective.chunks}}))
        if (f.path.find(".workload.") == std::string::npos && f.path.ends_with(".et")) out.push_back(f.content);
    return out;
}

std::vector<std::pair<std::string, std::string>> as_files(const std::vector<std::string>& traces, const std::string& prefix = "t") {
    std::vector<std::pair<std::string, std::string>> files;
    for (std::size_t r = 0; r < traces.size(); ++r) files.emplace_back(fmt::format("{}.{}.et", prefix, r), traces[r]);
    return files;
}

/// The whole set read from any rank's file; a rank's file missing, of another kind, or cut short.
void rank_file_cases(std::vector<Case>& out, const std::string& set_name, const SendTable&, const std::vector<std::string>& traces) {
    const std::uint32_t P = static_cast<std::uint32_t>(traces.size());
    const auto files = as_files(traces);
    // The whole set holds, read from any rank's file.
    for (std::uint32_t r = 0; r < P; ++r)
        out.push_back(make(set_name + ": read from rank " + std::to_string(r) + "'s file", fmt::format("verify t.{}.et", r), files, "", 0, "", "",
                       {}, "verdict: holds"));
    for (std::uint32_t r = 0; r < P; ++r) {
        // A rank's file missing.
        auto fewer = files;
        fewer.erase(fewer.begin() + r);
        for (std::uint32_t given : {0u, (r + 1) % P}) {
            if (given == r) continue;
            Case c;
            c.name = fmt::format("{}: rank {} missing, reading t.{}.et", set_name, r, given);
            c.args = fmt::format("verify t.{}.et", given);
            c.files = fewer;
            c.message = r == 0 ? "t.0.et: rank 0's trace is missing; it names the topology and the number of ranks"
                               : fmt::format("t.*.et: the trace set is incomplete: rank 0's trace names {} ranks, and the trace of rank {} is "
                                             "missing (first: t.{}.et)",
                                             P, r, r);
            out.push_back(c);
        }
        // A FIFO, a directory or a device in its place: refused by its kind, never opened for reading.
        for (auto [what, make] : std::vector<std::pair<std::string, std::string>>{
                 {"a FIFO", "mkfifo t.{}.et"}, {"a directory", "mkdir t.{}.et"}, {"a character device", "ln -s /dev/zero t.{}.et"}}) {
            Case c;
            c.name = fmt::format("{}: rank {} is {}", set_name, r, what);
            c.args = r == 0 ? "verify t.0.et" : "simulate t.0.et";
            c.files = fewer;
            c.setup = fmt::format(fmt::runtime(make), r) + " &&";
            c.message = r == 0 && what == "a directory" ? "t.0.et: is a directory, not a Chakra trace"
                        : r == 0 ? fmt::format("t.0.et: is {}, not a Chakra trace (only regular files are read)", what)
                                 : fmt::format("t.{}.et: rank {}'s trace is {}, not a Chakra trace (only regular files are read)", r, r, what);
            out.push_back(c);
        }
        // Cut short at several places: refused, naming a trace.
        const std::string& f = traces[r];
        for (std::size_t cut : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5}, f.size() / 4, f.size() / 3,
                                f.size() / 2, 2 * f.size() / 3, 3 * f.size() / 4, f.size() - 7, f.size() - 2, f.size() - 1}) {
            if (cut >= f.size()) continue;
            auto cut_files = files;
            cut_files[r].second = f.substr(0, cut);
            Case c;
            c.name = fmt::format("{}: rank {} cut at byte {} of {}", set_name, r, cut, f.size());
            c.args = "verify t.0.et";
            c.files = cut_files;
            c.message = "t.";
            out.push_back(c);
        }
    }
}

/// A file of a rank beyond the last; rank files swapped or duplicated.
void set_shape_cases(std::vector<Case>& out, const std::string& set_name, const SendTable&, const std::vector<std::string>& traces) {
    const std::uint32_t P = static_cast<std::uint32_t>(traces.size());
    const auto files = as_files(traces);
    // A file of a rank beyond the last: two sets under one prefix.
    for (std::uint32_t extra : {P, P + 3}) {
        auto more = files;
        more.emplace_back(fmt::format("t.{}.et", extra), traces[0]);
        Case c;
        c.name = fmt::format("{}: an extra t.{}.et", set_name, extra);
        c.args = "verify t.0.et";
        c.files = more;
        c.message = fmt::format("the trace set has {} ranks (rank 0's trace names them), but the directory also holds the trace of rank {}",
                                P, extra);
        out.push_back(c);
    }
    // Rank files swapped or duplicated: refused, naming a rank and node.
    if (P > 2) {
        auto swapped = files;
        std::swap(swapped[1].second, swapped[2].second);
        out.push_back(make(set_name + ": ranks 1 and 2 swapped", "verify t.0.et", swapped, "", 2, "rank "));
        auto twice = files;
        twice[2].second = twice[1].second;
        out.push_back(make(set_name + ": rank 1's file also as rank 2's", "verify t.0.et", twice, "", 2, "rank "));
    }
}

/// Rank 0's GlobalMetadata edited.
void metadata_cases(std::vector<Case>& out, const std::string& set_name, const SendTable& table, const std::vector<std::string>& traces) {
    const auto files = as_files(traces);
    // GlobalMetadata of rank 0 edited.
    Trace t0 = parse_trace(traces[0]);
    auto with_meta = [&](const std::string& key, const std::string& value) {
        Trace t = t0;
        bool found = false;
        for (auto& a : *t.meta.mutable_attr())
            if (a.name() == key) a.set_string_val(value), found = true;
        if (!found) {
            auto* a = t.meta.add_attr();
            a->set_name(key);
            a->set_string_val(value);
        }
        auto f = files;
        f[0].second = test::serialize_trace(t);
        return f;
    };
    const std::string steps = fmt::format("{} step{}", table.steps(), table.steps() == 1 ? "" : "s");
    std::string million;
    for (int i = 0; i < 1000000; ++i) million += i ? ",1" : "1";
    for (auto [key, value, message] : std::vector<std::tuple<std::string, std::string, std::string>>{
             {"collsched_rounds", "0", "collsched_rounds \"0\": step 1 lasts '0' rounds; a step lasts 1 to 1048576 rounds"},
             {"collsched_rounds", "1048577", "step 1 lasts '1048577' rounds; a step lasts 1 to 1048576 rounds"},
             {"collsched_rounds", "10000000", "step 1 lasts '10000000' rounds"},
             {"collsched_rounds", "2,x", "step 2 lasts 'x' rounds"},
             {"collsched_rounds", "2,,2", "step 2 lasts '' rounds"},
             {"collsched_rounds", "-1", "step 1 lasts '-1' rounds"},
             {"collsched_rounds", million, "collsched_rounds lists the rounds of 1000000 steps, but the traces have " + steps},
             {"collsched_rounds", "2,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1",
              "collsched_rounds lists the rounds of 22 steps, but the traces have " + steps},
             {"collsched_chunks", "abc", "collsched_chunks \"abc\" is not a number"},
             {"collsched_chunks", "0", "t.0.et: "},
             {"collsched_chunks", "99999999999", "t.0.et: "},
             {"collsched_topology", "ring:x", "t.0.et: topology 'ring:x'"},
             {"collsched_topology", "torus:1000000x1000000", "is more than collsched supports"},
             {"collsched_model", "timing=wormhole,combine=routers", "t.0.et: model: combine=routers"},
             {"collsched_model", "queues=foo", "t.0.et: model: bad value 'foo'"},
             {"collsched_collective", "bogus", "t.0.et: collective 'bogus'"},
         }) {
        Case c;
        c.name = fmt::format("{}: {} = '{}'", set_name, key, value.substr(0, 40));
        c.args = "verify t.0.et";
        c.files = with_meta(key, value);
        c.message = message;
        out.push_back(c);
    }
}

/// Node names: 1 MB, control bytes, words out of place.
void node_name_cases(std::vector<Case>& out, const std::string& set_name, const SendTable&, const std::vector<std::string>& traces) {
    const std::uint32_t P = static_cast<std::uint32_t>(traces.size());
    const auto files = as_files(traces);
    // Node names: 1 MB, control bytes, words out of place.
    auto with_name = [&](std::uint32_t r, const std::string& name) {
        Trace t = parse_trace(traces[r]);
        t.nodes[0].set_name(name);
        auto f = files;
        f[r].second = test::serialize_trace(t);
        return f;
    };
    for (std::uint32_t r : {0u, P - 1}) {
        out.push_back(make(fmt::format("{}: rank {} node name of 1 MB", set_name, r), "verify t.0.et", with_name(r, std::string(1 << 20, 'x')),
                           "", 2, fmt::format("t.{}.et: rank {}, node 0: a name of 1048576 bytes; collsched names its nodes", r, r)));
        out.push_back(make(fmt::format("{}: rank {} node name of 1025 bytes", set_name, r), "verify t.0.et",
                           with_name(r, std::string(1025, 'y')), "", 2, "a name of 1025 bytes"));
        out.push_back(make(fmt::format("{}: rank {} node name with control bytes", set_name, r), "verify t.0.et",
                           with_name(r, std::string("send \x1b[2J\r\x00 to 1 step 1", 23)), "", 2, "\\x1b[2J\\x0d\\x00"));
        for (std::string name : {"send b(0) to 1", "recv b(0) from 1 step x", "send b(99) to 1 step 1", "send b(0) to 999 step 1",
                                 "send b(0) to 1 step 99999999999", ""}) {
            out.push_back(make(fmt::format("{}: rank {} node named '{}'", set_name, r, name), "verify t.0.et", with_name(r, name), "", 2,
                               fmt::format("t.{}.et: rank {}, node 0", r, r)));
        }
    }
}

/// The Chakra category: four families of cases on each of three trace sets, then files that are
/// no trace set, traces of other names, and convert's -o and --bytes.
std::vector<Case> chakra_cases() {
    std::vector<Case> out;
    struct Set {
        std::string name;
        SendTable table;
    };
    std::vector<Set> sets = {{"ring:4 allgather", test::ring_allgather(4)},
                             {"ring:8 allgather", test::ring_allgather(8)},
                             {"complete:5 alltoall", test::complete_alltoall(5)}};
    for (const Set& set : sets) {
        const std::vector<std::string> traces = traces_of(set.table);
        for (auto* cases : {rank_file_cases, set_shape_cases, metadata_cases, node_name_cases}) cases(out, set.name, set.table, traces);
    }
    // Files that are no trace set at all.
    const std::vector<std::string> ring = traces_of(test::ring_allgather(4));
    auto files = as_files(ring);
    for (std::string junk : {std::string("\x00\x01\x02\x03" "binary\x1b[2J", 14), std::string(64, '\xff'), std::string("topology ring(4)\n"),
                             std::string("{\"format\": \"collsched.table/1\"}")}) {
        auto f = files;
        f[0].second = junk;
        out.push_back(make("junk as rank 0: " + std::to_string(junk.size()) + " bytes", "verify t.0.et", f, "", 2, "t.0.et: "));
        f = files;
        f[2].second = junk;
        out.push_back(make("junk as rank 2: " + std::to_string(junk.size()) + " bytes", "verify t.2.et", f, "", 2, "t.2.et: "));
    }
    // A trace of a name that is no PREFIX.<rank>.et: read as a schedule, whose messages show no raw byte.
    for (std::string name : {"x.et", "t.et", "t.01.et", "t.-1.et"}) {
        Case c;
        c.name = "a trace named " + name;
        c.args = "verify " + name;
        c.files = {{name, ring[1]}};
        c.message = ": binary data (byte 0x";
        c.where = name + ":1:";
        out.push_back(c);
    }
    // convert --format chakra -o: a directory is no prefix.
    const std::string table = source("tests/data/ring8_allgather.json");
    for (std::string o : {"{D}/", "{D}", "{D}/.", "{D}/sub/", ".", "./", "..", "sub"}) {
        Case c;
        c.name = "convert --format chakra -o " + o;
        c.setup = "mkdir -p sub &&";
        c.args = "convert " + table + " --format chakra -o " + o;
        c.message = "--format chakra writes PREFIX.0.et, PREFIX.1.et, ...: give -o DIR/PREFIX, not a directory; nothing written";
        c.absent = {".0.et", ".system.json", "sub/.0.et"};
        out.push_back(c);
    }
    for (std::string bytes : {"0", "3", "1099511627777"}) {
        Case c;
        c.name = "convert --format chakra --bytes " + bytes;
        c.args = "convert " + table + " --format chakra --bytes " + bytes + " -o {D}/p";
        c.message = "--bytes";
        c.absent = {"p.0.et", "p.system.json"};
        if (bytes == "3") c.code = 0, c.message = "", c.absent = {};
        out.push_back(c);
    }
    return out;
}

}  // namespace

TEST_CASE("hostile surfaces: Chakra trace sets are checked before they are read") { run_category("chakra", chakra_cases()); }
