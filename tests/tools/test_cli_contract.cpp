// The command line's contract, end to end: every command has --help with an "Exit code:" line,
// and every exit code that line promises (README, "Commands": 0 holds, 1 a property does not
// hold, 2 bad input, 3 time limit or unknown) is produced by a real run here, with the output
// that says why. A code a command cannot be made to give on purpose (a disagreement between two
// engines is a bug) or that needs MPI is listed with the reason and the test that covers it.
// Mutations this file catches: "optimize exits 0 on a time limit", "pareto exits 0 when the
// frontier is open", "verify ignores --routes fixed".
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/tools/cli_run.hpp"

using collsched::test::run;
using collsched::test::Scratch;
using collsched::test::slurp;
using collsched::test::source;

namespace {

struct Case {
    std::string args;  ///< after `collsched COMMAND`
    int code;
    std::string says;  ///< a fragment of stdout or stderr that names the reason
};

/// A code the command's help promises that no run here can produce, and why.
struct Elsewhere {
    int code;
    std::string why;
};

struct Contract {
    std::vector<Case> cases;
    std::vector<Elsewhere> elsewhere = {};
};

const std::string cli = source("tests/data/cli/");
const std::string multibox2 = "graph:" + source("schedules/machines/multibox2x8.json");

/// One row per command (tools/commands.hpp). `@` in args is the scratch directory.
std::map<std::string, Contract> contracts() {
    return {
        {"demo",
         {{{"-n 4", 0, "the paper's schedule holds in 6 steps as claimed, and 6 steps is optimal"}, {"-n 6", 2, "6 leaves is not a power of 2"}},
          {{1, "the library's demo schedules hold as claimed; a failing claim is the reproduce row below"}}}},
        {"topo", {{{"ring:4", 0, "\"topology\": \"ring:4\""}, {"ring:x", 2, "'x' is not a valid size"}}}},
        {"compile",
         {{{cli + "offroute.sched -o @/t.json", 0, ""},
           {cli + "offroute.sched -D n=3 -o @/t.json", 2, "the schedule has no param 'n'"},
           {cli + "missing.sched", 2, "missing.sched"}}}},
        {"verify",
         {{{cli + "offroute.sched", 0, "verdict: holds (3 steps, 6 transfers"},
           {cli + "offroute.sched --routes fixed", 1,
            "routes: step 1, channel 0->3: m(0,1) crosses 0->3, which is not on its route 0 -> 1 (at " + cli + "offroute.sched:5:10)"},
           {cli + "over_capacity.sched", 1, "capacity: step 1, channel 0->3: 2 messages (m(0,1), m(0,2)) but capacity 1"},
           {cli + "offroute.sched --routes sometimes", 2, "sometimes"},
           // Z3 cannot prove 8,256 transfers in 10 ms: the answer is unknown, not a verdict.
           {source("schedules/bft/ebft_alltoall.sched") + " -D n=32 --engine z3 --timeout 0.01", 3, "verdict: unknown"}},
          {{1, "'the engines disagree' under --engine both is a bug, never produced on purpose (tests/verifier: agreement)"}}}},
        {"simulate",
         {{{cli + "offroute.sched", 0, "status: completed in 3 steps"},
           {cli + "over_capacity.sched", 1, "status: halted on rule 'capacity' after 0 of 3 steps"},
           {cli + "missing.json", 2, "missing.json"}}}},
        {"convert",
         {{{cli + "offroute.sched -o @/t.csv", 0, ""}, {cli + "offroute.sched --format png", 2, "png"}},
          {{3, "--timeout on a plan too large to write and check in time: tests/tools/test_mscclpp.cpp, \"mscclpp export: convert --timeout\""}}}},
        {"mpirun",
         {{{cli + "missing.json", 2, "missing.json"}},
          {{0, "needs Open MPI ranks: tests/runtime, label mpi"}, {1, "a corrupted byte is injected in the mpi-labelled tests"}}}},
        {"optimize",
         {{{"--topology ring:6 --collective alltoall --timeout 60", 0, "optimum: 5 steps (proved over every schedule"},
           {"--topology ring:4 --collective allgather --chunks 2 --rounds 2", 1,
            "no schedule exists: 2 rounds are fewer than the bandwidth bound allows for 2 chunks"},
           {"--topology ring:4 --collective allgathr", 2, "allgathr"},
           {"--topology graph:" + source("schedules/machines/dgx1x2.json") + " --collective alltoall --timeout 1", 3, "not proved optimal"}}}},
        {"probe",
         {{{"ebft-alltoall --n 4", 0, "settled by collsched"},
           {"nosuch", 2, "nosuch"},
           // "found bounds L..43": L is 17 when the counting ends within the 0.2 s, 0 when a
           // loaded sanitizer run stops it first (honest either way); the contract is exit 3.
           {"cbft-allgather --n 16 --timeout 0.2", 3, "found bounds "}},
          {{1, "the two solvers disagreeing is a bug, never produced on purpose"}}}},
        {"pareto",
         {{{"--topology ring:4 --collective allgather --timeout 60", 0, "end: the bandwidth bound 3/2 is met; every point proved"},
           {"--topology torus:3x3 --collective scan --timeout 60", 1, "end: no schedule exists with any steps, chunks or rounds"},
           {"--topology ring:4 --collective allgathr", 2, "allgathr"},
           {"--topology " + multibox2 + " --collective allgather --timeout 1", 3, "NOT complete"}}}},
        {"bandwidth",
         {{{"--topology ring:4 --collective allgather", 0, "R/C >= 3/2"},
           {"--topology ring:4 --collective allgathr", 2, "allgathr"},
           {"--topology graph:" + source("schedules/machines/h100rail2x8.json") + " --collective allgather", 3, "bound: R/C >="}}}},
        {"reproduce",
         {{{"--catalog " + source("schedules/catalog.json") + " --filter bft/broadcast.sched --max-n 8", 0, "2 rows: 2 hold, 0 explained by a note, 0 fail"},
           {"--catalog " + cli + "wrong_claim_catalog.json", 1, "claim-mismatch"},
           {"--catalog " + cli + "missing.json", 2, "missing.json"}}}},
        {"bench",
         {{{"--quick --schedules ring_allgather", 0, "ring_allgather"}, {"--sizes 1", 2, "1"}},
          {{1, "the library's schedules hold; a verdict that does not is the verify and simulate rows above"}}}},
        {"completion", {{{"bash", 0, "_collsched()"}, {"fish", 2, "fish"}}}},
        {"compare",
         {{{cli + "offroute.sched", 0, "offroute"},
           {cli + "offroute.sched " + cli + "over_capacity.sched", 1, "over_capacity.sched: violated"},
           {cli + "missing.json", 2, "missing.json"}},
          {{3, "--timeout on NCCL's tables of 128 GPUs: tests/tools/test_time.cpp, 'time: compare --timeout ...'"}}}},
        {"deploy",
         {{{"--topology graph:" + source("schedules/machines/h100rail2x8.json") + " --sizes 1M -o @/d", 0, "README.md"},
           {"--topology graph:" + source("schedules/machines/h100rail2x8.json") + " --collectives allreduc -o @/d2", 2, "allreduc"},
           {"--topology graph:" + source("schedules/machines/h100rail4x8.json") + " --timeout 0.001 -o @/d3", 3, "time limit"}}}},
        {"compose",
         {{{"--topology " + multibox2 + " --size 1M -o @/best.json", 0, "every table verified by the direct checker"},
           {"--topology " + multibox2 + " --size 1M --timeout -1", 2, "--timeout: expected 0 (no limit)"},
           {"--topology linear:2 --model inject=once --size 1M", 3, "no construction applies"}}}},
    };
}

/// The codes an "Exit code: 0 ..., 1 ..., 2 ..." line promises.
std::set<int> promised_codes(const std::string& help) {
    std::set<int> codes;
    const std::size_t at = help.find("Exit code:");
    if (at == std::string::npos) return codes;
    const std::string line = help.substr(at, help.find('\n', at) - at);
    static const std::regex code(R"((?:Exit code:|,) ([0-3]) )");
    for (std::sregex_iterator it(line.begin(), line.end(), code), end; it != end; ++it) codes.insert(std::stoi((*it)[1]));
    return codes;
}

std::string with_scratch(std::string args, const std::string& dir) {
    for (std::size_t at; (at = args.find('@')) != std::string::npos;) args.replace(at, 1, dir);
    return args;
}

}  // namespace

TEST_CASE("cli contract: every command has --help with the exit codes it promises, and each promised code is produced") {
    const auto all = contracts();
    // Every command the executable has is in the table (its own --help lists them).
    const auto top = run("--help");
    REQUIRE(top.code == 0);
    for (const char* cmd : {"demo", "topo", "verify", "simulate", "convert", "mpirun", "compile", "optimize", "probe", "pareto",
                            "bandwidth", "reproduce", "bench", "completion", "compare", "compose", "deploy"}) {
        CAPTURE(cmd);
        CHECK(top.out.find(cmd) != std::string::npos);
        CHECK(all.count(cmd) == 1);
    }
    for (const auto& [cmd, contract] : all) {
        CAPTURE(cmd);
        const auto help = run(cmd + " --help");
        CHECK(help.code == 0);
        CHECK(std::regex_search(help.out, std::regex("Usage: \\S*collsched " + cmd + " ")));
        const std::set<int> promised = promised_codes(help.out);
        CHECK(promised.count(0) == 1);
        CHECK(promised.count(2) == 1);
        std::set<int> shown;
        Scratch scratch("contract_" + cmd);
        for (const Case& c : contract.cases) {
            const auto r = run(cmd + " " + with_scratch(c.args, scratch.dir.string()));
            INFO(c.args);
            INFO(r.out.substr(0, 2000));
            INFO(r.err.substr(0, 2000));
            CHECK(r.code == c.code);
            CHECK((r.out + r.err).find(c.says) != std::string::npos);
            CHECK(promised.count(c.code) == 1);  // a code the help does not promise is a broken contract
            if (c.code == 2) {  // README: one clear message on stderr, nothing on stdout
                CHECK(r.out.empty());
                CHECK(!r.err.empty());
            }
            shown.insert(c.code);
        }
        for (const Elsewhere& e : contract.elsewhere) {
            CAPTURE(e.why);
            CHECK(promised.count(e.code) == 1);
            shown.insert(e.code);
        }
        for (int code : promised) {
            CAPTURE(code);
            CHECK(shown.count(code) == 1);  // every promised code is produced here or said where
        }
    }
}

TEST_CASE("cli contract: bad input writes nothing") {
    Scratch scratch("contract_nothing");
    CHECK(run("compile " + cli + "offroute.sched -D n=3 -o " + scratch.file("t.json")).code == 2);
    CHECK(run("convert " + cli + "offroute.sched --format png -o " + scratch.file("t.png")).code == 2);
    CHECK(run("optimize --topology ring:4 --collective allgathr -o " + scratch.file("w.sched")).code == 2);
    CHECK(scratch.entries() == 0);
}

namespace {

/// Runs in `dir` for the lifetime of the object (the tests of one process run one at a time).
struct InDirectory {
    std::filesystem::path was = std::filesystem::current_path();
    explicit InDirectory(const std::filesystem::path& dir) { std::filesystem::current_path(dir); }
    ~InDirectory() { std::filesystem::current_path(was); }
};

}  // namespace

TEST_CASE("portable files: a saved table, witness or conversion names its graph relative to itself and verifies from anywhere") {
    Scratch s("portable");
    std::filesystem::create_directories(s.dir / "topo");
    std::filesystem::create_directories(s.dir / "out");
    std::filesystem::copy_file(source("tests/data/nvswitch3.json"), s.dir / "topo/g.json");
    {
        InDirectory here(s.dir);
        REQUIRE(run("optimize --topology graph:topo/g.json --collective allgather -o topo/w.json").code == 0);
        REQUIRE(run("optimize --topology graph:topo/g.json --collective allgather -o topo/w.sched").code == 0);
        REQUIRE(run("convert topo/w.json -o out/t.csv").code == 0);
        REQUIRE(run("convert topo/w.json -o out/t.ranks.json").code == 0);
        REQUIRE(run("compile topo/w.sched -o out/c.json").code == 0);
    }
    CHECK(slurp(s.dir / "topo/w.json").find("\"topology\": \"graph:g.json\"") != std::string::npos);
    CHECK(slurp(s.dir / "topo/w.sched").find("topology \"graph:g.json\"") != std::string::npos);
    CHECK(slurp(s.dir / "out/t.csv").find("# topology=graph:../topo/g.json\n") != std::string::npos);
    CHECK(slurp(s.dir / "out/t.ranks.json").find("\"topology\": \"graph:../topo/g.json\"") != std::string::npos);
    CHECK(slurp(s.dir / "out/c.json").find("\"topology\": \"graph:../topo/g.json\"") != std::string::npos);
    for (const char* dir : {"topo", "out", "."}) {
        InDirectory here(s.dir / dir);
        CAPTURE(dir);
        const std::string up = std::string(dir) == "." ? "" : "../";
        for (const char* file : {"topo/w.json", "topo/w.sched", "out/t.csv", "out/t.ranks.json", "out/c.json"}) {
            CAPTURE(file);
            const auto r = run("verify " + up + file);
            CHECK(r.code == 0);
            CHECK(r.out.find("verdict: holds (2 steps, 6 transfers") != std::string::npos);
        }
    }
    // The whole directory moves: the files still find their graph.
    std::filesystem::rename(s.dir / "topo", s.dir / "moved");
    CHECK(run("verify " + (s.dir / "moved/w.json").string()).code == 0);
    // A table written before this rule names the graph relative to the directory it was written
    // from: read from there, it still finds it (the file's own directory has no topo/g.json).
    std::filesystem::create_directories(s.dir / "topo");
    std::filesystem::copy_file(source("tests/data/nvswitch3.json"), s.dir / "topo/g.json");
    std::string legacy = slurp(s.dir / "moved/w.json");
    legacy.replace(legacy.find("graph:g.json"), 12, "graph:topo/g.json");
    std::ofstream(s.dir / "topo/legacy.json") << legacy;
    InDirectory here(s.dir);
    CHECK(run("verify topo/legacy.json").code == 0);
    // A graph that exists in neither place is bad input naming the file beside the table.
    std::filesystem::copy_file(s.dir / "moved/w.json", s.dir / "out/orphan.json");
    const auto missing = run("verify out/orphan.json");
    CHECK(missing.code == 2);
    CHECK(missing.err.find("out/g.json") != std::string::npos);
    CHECK(missing.out.empty());
}
