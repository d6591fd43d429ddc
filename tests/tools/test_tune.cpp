// `collsched tune` (docs/exports.md, "NCCL tuner configuration"): the CSV NCCL's example tuner
// plugin reads. The default suite reads every line as plugin.c's loadConfig does and checks the
// choice logic on the JSON report; with an NCCL source tree configured (label nccl_tuner_plugin)
// NCCL's own plugin.c, built unmodified, loads the files of every catalog machine family and must
// pick what collsched wrote at every range.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_run.hpp"

using collsched::test::run;
using collsched::test::run_shell;
using collsched::test::source;
using nlohmann::json;

namespace {

// plugin.c's names, in the order of NCCL_ALGO_* and NCCL_PROTO_* (the example's nccl/tuner.h)
const char* const tune_algorithms[] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
const char* const tune_protocols[] = {"ll", "ll128", "simple"};
const char* const tune_collectives[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};

int index_of(const char* const* names, std::size_t n, const std::string& s) {
    for (std::size_t i = 0; i < n; ++i)
        if (s == names[i]) return static_cast<int>(i);
    return -1;
}

/// One line of the file as plugin.c's loadConfig reads it (strtok on ',', blanks trimmed, 8 to 10
/// fields, strtoull and atoi), with what plugin.c would silently take for something else refused:
/// an unknown collective (read as allreduce), algorithm or protocol (ring, simple), a number with
/// other characters.
struct TuneLine {
    std::string collective, algorithm, protocol;
    unsigned long long min = 0, max = 0;
    int channels = 0, nodes = 0, ranks = 0;
};

bool whole_number(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

std::optional<TuneLine> parse_like_plugin(const std::string& line) {
    if (line.size() + 1 >= 256) return std::nullopt;  // MAX_LINE_LENGTH: fgets would split it
    std::vector<std::string> tokens;
    std::vector<char> copy(line.begin(), line.end());
    copy.push_back('\0');
    for (char* t = std::strtok(copy.data(), ","); t && tokens.size() < 10; t = std::strtok(nullptr, ",")) {
        while (*t == ' ' || *t == '\t') ++t;
        std::string s(t);
        while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
        tokens.push_back(s);
    }
    if (tokens.size() < 8 || tokens.size() > 10) return std::nullopt;
    for (std::size_t i : {1, 2, 5, 6, 7})
        if (!whole_number(tokens[i])) return std::nullopt;
    if (index_of(tune_collectives, 5, tokens[0]) < 0 || index_of(tune_algorithms, 7, tokens[3]) < 0 || index_of(tune_protocols, 3, tokens[4]) < 0)
        return std::nullopt;
    TuneLine l{tokens[0], tokens[3], tokens[4]};
    l.min = std::strtoull(tokens[1].c_str(), nullptr, 10);
    l.max = std::strtoull(tokens[2].c_str(), nullptr, 10);
    l.channels = std::atoi(tokens[5].c_str());
    l.nodes = std::atoi(tokens[6].c_str());
    l.ranks = std::atoi(tokens[7].c_str());
    return l;
}

/// The configuration lines (not comments, not empty, as plugin.c's countConfigLines skips them).
std::vector<std::string> config_lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        if (!l.empty() && l[0] != '#') out.push_back(l);
    return out;
}

struct Tuned {
    json report;
    std::string file;
};

/// `collsched tune --json` on a machine file (a path), the file it wrote beside the report.
Tuned tune_file(const std::string& path, const std::string& more, collsched::test::Scratch& dir) {
    const std::string conf = dir.file("nccl_tuner.conf");
    auto r = run(fmt::format("tune --topology graph:{} {} --json -o {}", path, more, conf));
    INFO(path, ": ", r.err);
    REQUIRE(r.code == 0);
    std::ifstream in(conf);
    std::stringstream text;
    text << in.rdbuf();
    return {json::parse(r.out), text.str()};
}

/// The same on a machine of schedules/machines.
Tuned tune(const std::string& machine, const std::string& more, collsched::test::Scratch& dir) {
    return tune_file(source("schedules/machines/" + machine + ".json"), more, dir);
}

/// The checks of a file against its report: every line reads as plugin.c reads it and is one of
/// the report's line ranges; the ranges are disjoint, cover the grid and hold its points; a point
/// has a line exactly where the gain is outside the model's error.
void check_file(const Tuned& t) {
    const std::vector<std::string> lines = config_lines(t.file);
    std::size_t next = 0;
    const double error = t.report["error"];
    for (const json& c : t.report["collectives"]) {
        const json& pts = c["points"];
        const json& rs = c["ranges"];
        REQUIRE(!rs.empty());
        CHECK(rs.front()["min_bytes"] == pts.front()["bytes"]);
        CHECK(rs.back()["max_bytes"] == pts.back()["bytes"]);
        for (std::size_t i = 0; i < rs.size(); ++i) {
            const json& r = rs[i];
            const std::uint64_t lo = r["min_bytes"], hi = r["max_bytes"];
            const std::size_t first = r["first"], last = r["last"];
            CHECK(lo <= pts[first]["bytes"].get<std::uint64_t>());
            CHECK(hi >= pts[last]["bytes"].get<std::uint64_t>());
            if (i + 1 < rs.size()) {
                CHECK(rs[i + 1]["min_bytes"].get<std::uint64_t>() == hi + 1);  // disjoint and contiguous
                CHECK(rs[i + 1]["first"].get<std::size_t>() == last + 1);
                CHECK(hi < pts[last + 1]["bytes"].get<std::uint64_t>());
                CHECK(rs[i + 1]["line"] != r["line"]);  // neighbours with the same choice are merged
            }
            for (std::size_t k = first; k <= last; ++k) {
                const json& p = pts[k];
                CHECK(p["line"] == !r["line"].is_null());
                if (p["line"]) {
                    CHECK(p["best"] == r["line"]);
                    CHECK(p["gain"].get<double>() > 1 + error);
                } else {
                    CHECK((p["nccl_seconds"].is_null() || p["gain"].get<double>() <= 1 + error + 1e-9));
                }
            }
            if (r["line"].is_null()) continue;
            REQUIRE(next < lines.size());
            const std::optional<TuneLine> l = parse_like_plugin(lines[next++]);
            INFO(lines[next - 1]);
            REQUIRE(l);
            CHECK(l->collective == c["collective"].get<std::string>());
            CHECK(l->min == lo);
            CHECK(l->max == hi);
            CHECK(l->algorithm == r["line"]["algorithm"].get<std::string>());
            CHECK(l->protocol == r["line"]["protocol"].get<std::string>());
            CHECK(l->channels == r["line"]["channels"].get<int>());
            CHECK(l->channels >= 1);
            CHECK(l->nodes == t.report["nodes"].get<int>());
            CHECK(l->ranks == t.report["ranks"].get<int>());
        }
    }
    CHECK(next == lines.size());
}

}  // namespace

TEST_CASE("tune: every line reads as plugin.c reads it, the ranges cover the grid, lines only outside the model's error") {
    collsched::test::Scratch dir("tune_format");
    const Tuned t = tune("h100rail2x8", "--sizes 64K..64M:4", dir);
    CHECK(t.report["nodes"] == 2);
    CHECK(t.report["ranks"] == 16);
    CHECK(t.report["collectives"].size() == 5);
    CHECK(t.file.find("reduce_scatter") == std::string::npos);  // plugin.c reads "reduce_scatter" as allreduce
    check_file(t);
    CHECK(!config_lines(t.file).empty());
    // one box that reduces in its switch: NCCL picks NVLS, timed beside the rings
    const Tuned nv = tune("dgx_h100_nvls", "--collectives allreduce --sizes 1K..1G:4", dir);
    check_file(nv);
    bool nvls = false;
    for (const json& p : nv.report["collectives"][0]["points"]) nvls = nvls || (p["nccl"]["algorithm"] == "nvls");
    CHECK(nvls);
}

TEST_CASE("tune: NVLS is timed at the fastest of its piece counts, so one H100 box keeps NCCL's NVLS from 16 MiB up") {
    // Azure's ND H100 v5 page measures NVLS allreduce at 125 us for 16 MiB and 325 us for 64 MiB, faster than any ring on
    // the box; timed at one piece count per size (64 KiB pieces: 584 us at 64 MiB) the rings looked 1.8 to 2.8x faster and
    // the file told NCCL to run them
    collsched::test::Scratch dir("tune_nvls");
    const Tuned nv = tune("dgx_h100_nvls", "--collectives allreduce --sizes 16M..1G:4", dir);
    check_file(nv);
    for (const json& p : nv.report["collectives"][0]["points"]) {
        CAPTURE(p.dump());
        CHECK(p["nccl"]["algorithm"] == "nvls");
        CHECK_FALSE(p["line"].get<bool>());
    }
    CHECK(config_lines(nv.file).empty());
}

TEST_CASE("tune: a calibration whose error exceeds every gain leaves every range a tie and the file without lines") {
    // the same grid with a calibration whose held-out error is 10 (1000 %): nothing is claimed
    collsched::test::Scratch dir("tune_ties");
    const std::string cal = dir.file("cal.json");
    std::ofstream(cal) << R"({"format": "collsched.calibration/1", "executor": "nccl", "machine": "test", "fitted_on": "none",
                              "heldout_median": 10})";
    const Tuned t = tune("h100rail2x8", fmt::format("--collectives allreduce,allgather --sizes 1K..16G:16 --calibration {}", cal), dir);
    CHECK(config_lines(t.file).empty());
    check_file(t);
    for (const json& c : t.report["collectives"]) CHECK(c["ranges"].size() == 1);
}

TEST_CASE("tune: bad input is one line on stderr, exit 2, and no file") {
    collsched::test::Scratch dir("tune_bad");
    const std::string conf = dir.file("t.conf");
    const std::string machine = "--topology graph:" + source("schedules/machines/h100rail2x8.json");
    struct Bad {
        std::string args, says;
    };
    const Bad bad[] = {
        {machine + " --collectives allreduce,alltoall", "not a collective NCCL's tuner covers"},
        {machine + " --collectives alreduce", "did you mean \"allreduce\""},
        {machine + " --sizes 1K..x", "bad size"},
        {machine + " --sizes 1.5", "whole number"},
        {machine + " --executor mscclpp", "--executor nccl"},
        {machine + " --executor ncl", "did you mean \"nccl\""},
        {"--topology graph:" + source("schedules/machines/h100rai2x8.json"), "did you mean graph:"},
    };
    for (const Bad& b : bad) {
        auto r = run(fmt::format("tune {} -o {}", b.args, conf));
        INFO(b.args, ": ", r.err);
        CHECK(r.code == 2);
        CHECK(r.err.find(b.says) != std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(!std::ifstream(conf).good());
    }
}

TEST_CASE("tune: --timeout holds, exit 3 and no file") {
    collsched::test::Scratch dir("tune_timeout");
    const std::string conf = dir.file("t.conf");
    auto r = run(fmt::format("tune --topology graph:{} --timeout 0.001 -o {}", source("schedules/machines/h100rail4x8.json"), conf));
    INFO(r.err);
    CHECK(r.code == 3);
    CHECK((r.out + r.err).find("time limit") != std::string::npos);
    CHECK(!std::ifstream(conf).good());
}

/// `collsched deploy` into dir/name on a catalog machine; the run's result.
collsched::test::Run deploy(const std::string& machine, const std::string& more, const std::string& out) {
    return run(fmt::format("deploy --topology graph:{} {} -o {}", source("schedules/machines/" + machine + ".json"), more, out));
}

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

TEST_CASE("deploy: the folder holds tune's file, NCCL's rings and trees as a graph file that verifies, and a README naming the variables") {
    collsched::test::Scratch dir("deploy_folder");
    const std::string out = dir.file("h100rail2x8");
    auto r = deploy("h100rail2x8", "--sizes 64K..64M:4", out);
    INFO(r.err);
    REQUIRE(r.code == 0);
    // the tuner file is tune's, byte for byte, and reads as plugin.c reads it
    const Tuned t = tune("h100rail2x8", "--sizes 64K..64M:4", dir);
    CHECK(slurp(out + "/nccl_tuner.conf") == t.file);
    check_file(t);
    // the graph file is convert nccl:*'s and holds on the machine
    const std::string machine = "graph:" + source("schedules/machines/h100rail2x8.json");
    REQUIRE(run(fmt::format("convert nccl:* --topology {} --format nccl-graph -o {}", machine, dir.file("own.xml"))).code == 0);
    CHECK(slurp(out + "/nccl_graphs.xml") == slurp(dir.file("own.xml")));
    auto v = run(fmt::format("verify {}/nccl_graphs.xml --topology {}", out, machine));
    INFO(v.out);
    CHECK(v.code == 0);
    const std::string readme = slurp(out + "/README.md");
    for (const char* want : {"NCCL_TUNER_PLUGIN=", "NCCL_TUNER_CONFIG_FILE=" , "NCCL_GRAPH_FILE=", "MSCCLPP_EXECUTION_PLAN_DIR",
                             "NCCL_DEBUG=INFO", "Loaded N tuning configurations from", "channels loaded from XML graph", "NCCL 2.30.7",
                             "collsched verify", "| allreduce | 64 KiB |", "nvidia-smi topo -m"}) {
        CAPTURE(want);
        CHECK(readme.find(want) != std::string::npos);
    }
    // nothing else in the folder, and nothing left beside it
    std::size_t files = 0;
    for (const auto& f : std::filesystem::directory_iterator(out)) files += f.is_regular_file();
    CHECK(files == 3);
    std::size_t beside = 0;
    for ([[maybe_unused]] const auto& f : std::filesystem::directory_iterator(dir.dir)) ++beside;
    CHECK(beside == 3);  // the folder, tune's file, own.xml
}

TEST_CASE("deploy: an existing folder is exit 2 and untouched unless --force, and --timeout is exit 3 with no folder") {
    collsched::test::Scratch dir("deploy_refusals");
    const std::string out = dir.file("there");
    std::filesystem::create_directories(out);
    std::ofstream(out + "/mine.txt") << "keep";
    auto r = deploy("h100rail2x8", "--sizes 1M", out);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("exists and is not empty; --force replaces it") != std::string::npos);
    CHECK(slurp(out + "/mine.txt") == "keep");
    CHECK(!std::filesystem::exists(out + "/nccl_tuner.conf"));
    r = deploy("h100rail2x8", "--sizes 1M --force", out);
    CHECK(r.code == 0);
    CHECK(!std::filesystem::exists(out + "/mine.txt"));
    CHECK(std::filesystem::exists(out + "/README.md"));
    const std::string late = dir.file("late");
    r = deploy("h100rail4x8", "--timeout 0.001", late);
    INFO(r.err);
    CHECK(r.code == 3);
    CHECK((r.out + r.err).find("time limit") != std::string::npos);
    CHECK((r.out + r.err).find("nothing written") != std::string::npos);
    CHECK(!std::filesystem::exists(late));
    std::size_t beside = 0;
    for ([[maybe_unused]] const auto& f : std::filesystem::directory_iterator(dir.dir)) ++beside;
    CHECK(beside == 1);  // no temporary folder left
}

TEST_CASE("deploy --mscclpp: allreduce plans where collsched's tables win on MSCCL++, each verifying, the sizes stock NCCL wins named") {
    // h100rail2x8 on the grid 1M,1G: a hierarchical table wins at 1 MiB, NCCL's tree as stock NCCL runs it at 1 GiB
    collsched::test::Scratch dir("deploy_mscclpp");
    const std::string out = dir.file("h100rail2x8");
    auto r = deploy("h100rail2x8", "--sizes 1M --mscclpp --mscclpp-sizes 1M,1G", out);
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("1 MSCCL++ plan in mscclpp/") != std::string::npos);
    std::vector<std::string> plans;
    for (const auto& f : std::filesystem::directory_iterator(out + "/mscclpp")) plans.push_back(f.path().string());
    REQUIRE(plans.size() == 1);
    const auto v = run("verify " + plans.front());
    INFO(v.out);
    CHECK(v.code == 0);
    CHECK(v.out.starts_with("verdict: holds (MSCCL++ plan"));
    const auto plan = nlohmann::json::parse(slurp(plans.front()));
    CHECK(plan["min_message_size"].get<std::uint64_t>() == 0);  // the lowest size of the grid serves everything below it
    CHECK(plan["max_message_size"].get<std::uint64_t>() < (std::uint64_t{1} << 30));  // 1 GiB is NCCL's
    const std::string readme = slurp(out + "/README.md");
    for (const char* want : {"MSCCLPP_EXECUTION_PLAN_DIR=", "| 1 MiB | hierarchical", "| 1 GiB | nccl tree as stock NCCL runs it", "none: run NCCL as it is"}) {
        CAPTURE(want);
        CHECK(readme.find(want) != std::string::npos);
    }
    // without --mscclpp the folder holds no plans and the README says how to get them
    const std::string plain = dir.file("plain");
    REQUIRE(deploy("h100rail2x8", "--sizes 1M", plain).code == 0);
    CHECK(!std::filesystem::exists(plain + "/mscclpp"));
    CHECK(slurp(plain + "/README.md").find("`collsched deploy --mscclpp` adds allreduce plans") != std::string::npos);
}

/// The machines the plugin test tunes: catalog files (the rail machines of DGX H100 boxes with and
/// without NVLS, multibox, one DGX H100 with NVLS, one DGX-1), and every `collsched machine` family
/// as two boxes on rails (amd8: one box, it has no NICs). gb200-nvl72 is left out: two racks of 72
/// take 460 s to tune (docs/exports.md).
const char* const plugin_files[] = {"h100rail4x8", "h100nvls2x8", "multibox2x8", "dgx_h100_nvls", "dgx1"};
const char* const plugin_families[] = {"dgx1", "dgx2", "dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200",
                                       "ndv2", "ndv4", "ndv5",     "mi300x",   "pcie",     "amd8"};

TEST_CASE("real parsers: NCCL's example tuner plugin picks what collsched tune wrote at every range" * doctest::test_suite("real_parsers") *
          doctest::skip()) {
    const char* driver = std::getenv("COLLSCHED_NCCL_TUNER_DRIVER");
    REQUIRE_MESSAGE(driver != nullptr, "COLLSCHED_NCCL_TUNER_DRIVER must name the driver (ctest sets it where NCCL's source is present)");
    std::vector<std::string> machines;
    for (const char* f : plugin_files) machines.push_back(source(fmt::format("schedules/machines/{}.json", f)));
    collsched::test::Scratch families("tune_families");
    for (const char* f : plugin_families) {
        machines.push_back(families.file(fmt::format("{}.json", f)));
        auto m = run(fmt::format("machine {} {} -o {}", f, std::string_view(f) == "amd8" ? "" : "--boxes 2 --network rail", machines.back()));
        REQUIRE_MESSAGE(m.code == 0, f, ": ", m.err);
    }
    for (const std::string& machine : machines) {
        collsched::test::Scratch dir("tune_plugin");
        const Tuned t = tune_file(machine, "--sizes 1K..16G", dir);
        check_file(t);
        // per query: the collective, the bytes, NCCL's cost table (its own pick cheapest), and the answer expected
        std::string queries;
        std::vector<std::string> asked, expected;
        auto ask = [&](const std::string& coll, std::uint64_t bytes, const json& pick, const json& line) {
            const int a = index_of(tune_algorithms, 7, pick["algorithm"]), p = index_of(tune_protocols, 3, pick["protocol"]);
            REQUIRE(a >= 0);
            asked.push_back(fmt::format("{} {}", coll, bytes));
            queries += asked.back();
            for (int i = 0; i < 7; ++i)
                for (int j = 0; j < 3; ++j) queries += (i == a && j == p) ? " 1" : " 2";
            queries += "\n";
            // a line: its algorithm, protocol and channels, the entry zeroed; none: NCCL's pick, and plugin.c's
            // default of one channel (it sets *nChannels = 1 before looking: docs/exports.md)
            expected.push_back(line.is_null() ? fmt::format("{} {} 1 0", pick["algorithm"].get<std::string>(), pick["protocol"].get<std::string>())
                                              : fmt::format("{} {} {} 1", line["algorithm"].get<std::string>(),
                                                            line["protocol"].get<std::string>(), line["channels"].get<int>()));
        };
        std::size_t lines = 0;
        for (const json& c : t.report["collectives"]) {
            const std::string coll = c["collective"];
            const json& pts = c["points"];
            for (const json& r : c["ranges"]) {
                const std::size_t first = r["first"], last = r["last"];
                lines += !r["line"].is_null();
                ask(coll, r["min_bytes"], pts[first]["nccl"], r["line"]);
                for (std::size_t k = first; k <= last; ++k) ask(coll, pts[k]["bytes"], pts[k]["nccl"], r["line"]);
                ask(coll, r["max_bytes"], pts[last]["nccl"], r["line"]);
            }
            // beyond the grid no line matches
            ask(coll, pts.front()["bytes"].get<std::uint64_t>() - 1, pts.front()["nccl"], json());
            ask(coll, pts.back()["bytes"].get<std::uint64_t>() + 1, pts.back()["nccl"], json());
        }
        const std::string qfile = dir.file("queries.txt");
        std::ofstream(qfile) << queries;
        // the catalog machines: the plugin reads the file of a `collsched deploy` folder (tune's, with the same sizes)
        std::string conf = dir.file("nccl_tuner.conf");
        if (&machine - machines.data() < std::ptrdiff_t(std::size(plugin_files))) {
            const std::string folder = dir.file("deploy");
            auto d = run(fmt::format("deploy --topology graph:{} --sizes 1K..16G -o {}", machine, folder));
            REQUIRE_MESSAGE(d.code == 0, machine, ": ", d.err);
            conf = folder + "/nccl_tuner.conf";
            CHECK(slurp(conf) == t.file);
        }
        auto r = run_shell(fmt::format("NCCL_TUNER_CONFIG_FILE='{}' '{}' {} {} < '{}'", conf, driver,
                                       t.report["ranks"].get<int>(), t.report["nodes"].get<int>(), qfile));
        if (r.code != 0) FAIL(machine, ": ", r.err);
        // plugin.c's own log of what it loaded
        CHECK(r.err.find(lines > 0 ? fmt::format("Loaded {} tuning configurations", lines) : std::string("No valid configurations found")) !=
              std::string::npos);
        std::istringstream answers(r.out);
        std::size_t i = 0;
        for (std::string got; std::getline(answers, got); ++i) {
            REQUIRE(i < expected.size());
            INFO(machine, ": ", asked[i]);
            CHECK(got == expected[i]);
        }
        CHECK(i == expected.size());
    }
}
